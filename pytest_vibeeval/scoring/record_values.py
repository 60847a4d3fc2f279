"""What the score variables read from eval records: which records ran, the subtask fraction, the
time-penalised ``vybes`` score and the automatic rubric's signals, per eval and as a run's mean.

Each function returns the value, or None and the reason it has none (see :mod:`.variables`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..results import CheckRecord, EvalRecord
from ..text_input import first_line
from .vybes import vybes_points

Value = float | None
Reasoned = tuple[Value, str | None]


def ran(records: Sequence[EvalRecord]) -> list[EvalRecord]:
    """The records that count: everything but skipped evals."""
    return [r for r in records if r.outcome != "skipped"]


def subtask_fraction(record: EvalRecord) -> Reasoned:
    if record.outcome == "skipped":
        return None, f"eval {record.name!r} was skipped"
    if record.subtasks_total is None or record.subtasks_passed is None:
        return None, f"eval {record.name!r} reported no subtasks (no results file from its grade steps)"
    if record.subtasks_total == 0:
        return None, f"eval {record.name!r} reported 0 subtasks"
    return record.subtasks_passed / record.subtasks_total, None


def subtask_pct(records: Sequence[EvalRecord]) -> Reasoned:
    counted = ran(records)
    if not counted:
        return None, "no eval ran"
    reported = [r for r in counted if r.subtasks_total is not None and r.subtasks_passed is not None]
    total = sum(r.subtasks_total or 0 for r in reported)
    if not reported:
        return None, "no eval reported subtasks"
    if total == 0:
        return None, "the evals that reported subtasks reported 0 subtasks"
    return 100.0 * sum(r.subtasks_passed or 0 for r in reported) / total, None


def vybes(record: EvalRecord) -> Reasoned:
    """The eval's time-penalised score (see :mod:`.vybes` for the rules)."""
    if record.outcome == "skipped":
        return None, f"eval {record.name!r} was skipped"
    return vybes_points(record), None


def mean_of(records: Sequence[EvalRecord], value_of: Callable[[EvalRecord], Reasoned]) -> Reasoned:
    """The mean of ``value_of`` over the records that ran; None with the reason of the first that
    has no value."""
    counted = ran(records)
    if not counted:
        return None, "no eval ran"
    values: list[float] = []
    for record in counted:
        value, reason = value_of(record)
        if value is None:
            return None, reason
        values.append(value)
    return sum(values) / len(values), None


def vybes_score(records: Sequence[EvalRecord]) -> Reasoned:
    return mean_of(records, vybes)


def rubric_value(record: EvalRecord, signal: str | None) -> Reasoned:
    """One rubric signal of ``record`` (``signal`` None: its rubric score, 0–100)."""
    if record.outcome == "skipped":
        return None, f"eval {record.name!r} was skipped"
    rubric = record.rubric
    if rubric is None:
        return None, f"eval {record.name!r} has no rubric"
    if signal is None:
        if rubric.score is None:
            return None, f"eval {record.name!r}: rubric signals missing ({', '.join(rubric.missing)})"
        return rubric.score, None
    value = rubric.signals.get(signal)
    if value is None:
        return None, f"eval {record.name!r}: {rubric.missing.get(signal, f'no {signal}')}"
    return value, None


def rubric_signal(signal: str | None) -> Callable[[EvalRecord], Reasoned]:
    return lambda record: rubric_value(record, signal)


def rubric_mean(signal: str | None) -> Callable[[Sequence[EvalRecord]], Reasoned]:
    value_of = rubric_signal(signal)
    return lambda records: mean_of(records, value_of)


def _scores(checks: Sequence[CheckRecord], name: str | None) -> list[float]:
    """The scores of the checks named ``name`` (None: without a name of their own), ``or`` too."""
    found: list[float] = []
    for check in checks:
        if check.name == name and check.score is not None:
            found.append(check.score)
        found.extend(_scores(check.children, name))
    return found


def _any_error(checks: Sequence[CheckRecord]) -> bool:
    return any(check.error or _any_error(check.children) for check in checks)


def _errored(record: EvalRecord) -> str | None:
    """Why an eval that errored before or in its checks has no scores (never those of some checks)."""
    if record.outcome == "error" and (not record.checks or _any_error(record.checks)):
        first = first_line(record.message or "")
        return f"eval {record.name!r} errored before its checks gave scores: {first}"
    return None


def _no_score(record: EvalRecord, why: str) -> str:
    return _errored(record) or why


def eval_score(record: EvalRecord) -> Reasoned:
    """The mean score of the eval's checks that have no name of their own."""
    if record.outcome == "skipped":
        return None, f"eval {record.name!r} was skipped"
    found = _scores(record.checks, None)
    if not found or _errored(record):
        why = f"no check of eval {record.name!r} without a `name` of its own gave a score"
        return None, _no_score(record, why)
    return sum(found) / len(found), None


def check_score(records: Sequence[EvalRecord], name: str) -> Reasoned:
    """``<name>_score`` of a named check: per eval the mean over its runs (skipped runs left out),
    then the mean over the evals that have the check."""
    by_eval: dict[str, list[EvalRecord]] = {}
    for record in records:
        if name in record.check_names:
            by_eval.setdefault(record.name, []).append(record)
    per_eval: list[float] = []
    for runs in by_eval.values():
        counted = ran(runs)
        if not counted:
            continue
        values: list[float] = []
        for record in counted:
            found = _scores(record.checks, name)
            if not found or _errored(record):
                return None, _no_score(record, f"the check {name!r} of eval {record.name!r} gave no score")
            values.append(sum(found) / len(found))
        per_eval.append(sum(values) / len(values))
    if not per_eval:
        return None, f"no eval with the check {name!r} ran"
    return sum(per_eval) / len(per_eval), None
