"""What the score variables read from eval records: which records ran, the subtask fraction, the
time-penalised ``vybes`` score and the automatic rubric's signals, per eval and as a run's mean.

Each function returns the value, or None and the reason it has none (see :mod:`.variables`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..results import EvalRecord

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


VYBES_MIN_TIME_FACTOR = 0.2


def agent_seconds(record: EvalRecord) -> float | None:
    """The agent step's duration (None when the eval has no agent step)."""
    durations = [step.duration for step in record.steps if step.phase == "agent"]
    return sum(durations) if durations else None


def vybes(record: EvalRecord) -> Reasoned:
    """The document's project's time-penalised score of one eval:
    ``100 × multiplier × fraction × clamp(time_limit / agent_minutes, 0.2, 1)``.

    ``fraction`` is the subtask fraction, or 1/0 from the outcome when no subtasks were reported.
    Without a ``vybes`` block the multiplier is 1 and there is no time penalty; with no
    ``timeLimitMinutes`` there is none either."""
    if record.outcome == "skipped":
        return None, f"eval {record.name!r} was skipped"
    fraction, _ = subtask_fraction(record)
    if fraction is None:
        fraction = 1.0 if record.outcome == "passed" else 0.0
    multiplier = 1.0 if record.vybes_multiplier is None else record.vybes_multiplier
    factor = 1.0
    limit = record.vybes_time_limit_minutes
    if limit is not None:
        seconds = agent_seconds(record)
        if seconds is None:
            return None, f"eval {record.name!r} has a time limit but no agent step"
        if seconds > 0:
            factor = min(1.0, max(VYBES_MIN_TIME_FACTOR, limit / (seconds / 60)))
    return 100.0 * multiplier * fraction * factor, None


def vybes_score(records: Sequence[EvalRecord]) -> Reasoned:
    counted = ran(records)
    if not counted:
        return None, "no eval ran"
    values: list[float] = []
    for record in counted:
        value, reason = vybes(record)
        if value is None:
            return None, reason
        values.append(value)
    return sum(values) / len(values), None


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
    def compute(records: Sequence[EvalRecord]) -> Reasoned:
        counted = ran(records)
        if not counted:
            return None, "no eval ran"
        values: list[float] = []
        for record in counted:
            value, reason = rubric_value(record, signal)
            if value is None:
                return None, reason
            values.append(value)
        return sum(values) / len(values), None

    return compute
