"""The variables a score formula may use: one registry, listed in docs/scores.md and in the results'
``variables``.

Run-wide variables are computed from the run's eval records; per-eval variables exist for every
eval with an explicit ``name``. A variable without a value in a run (no eval reported cost, the
eval was deselected) is ``None`` together with the reason, so a formula using it says why.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Collection, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..registry import RunVariables
from ..results import EvalRecord, judges_asked
from .record_values import (
    Reasoned,
    Value,
    check_score,
    eval_score,
    mean_of,
    ran,
    rubric_mean,
    rubric_signal,
    subtask_fraction,
    subtask_pct,
    vybes,
    vybes_score,
)
from .run_values import RunValues


@dataclass(frozen=True)
class RunVariable:
    """A run-wide formula variable: ``compute(records)`` gives its value for one suite ×
    configuration (or None and the reason). ``metric``: also listed in the run's ``metrics``."""

    name: str
    unit: str
    meaning: str
    compute: Callable[[Sequence[EvalRecord]], Reasoned]
    metric: bool = False


@dataclass(frozen=True)
class EvalVariable:
    """A per-eval variable: ``suffix`` appended to the eval's name (empty for the pass flag)."""

    suffix: str
    unit: str
    meaning: str
    compute: Callable[[EvalRecord], Reasoned]


def _values(records: Sequence[EvalRecord], field: str) -> tuple[list[float], str | None]:
    counted = ran(records)
    if not counted:
        return [], "no eval ran"
    values = [getattr(r, field) for r in counted]
    missing = [r.name for r, v in zip(counted, values, strict=True) if v is None]
    if missing:
        what = field.replace("_", " ")
        if len(missing) == len(counted):
            return [], f"no eval reported {what}"
        shown = ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
        return [], f"{what} unknown for {len(missing)} of {len(counted)} evals ({shown})"
    return [float(v) for v in values], None


_REDUCERS: dict[str, Callable[[list[float]], float]] = {
    "total": sum,
    "avg": lambda v: sum(v) / len(v),
    "min": min,
    "max": max,
}


def _aggregate(field: str, how: str) -> Callable[[Sequence[EvalRecord]], Reasoned]:
    def compute(records: Sequence[EvalRecord]) -> Reasoned:
        values, reason = _values(records, field)
        if reason:
            return None, reason
        value = float(_REDUCERS[how](values))
        if not math.isfinite(value):
            return None, f"the evals' {field}s add up to more than the largest number a float holds"
        return value, None

    return compute


def _count(outcomes: Iterable[str] | None) -> Callable[[Sequence[EvalRecord]], Reasoned]:
    def compute(records: Sequence[EvalRecord]) -> Reasoned:
        counted = ran(records)
        if outcomes is None:
            return float(len(counted)), None
        return float(sum(1 for r in counted if r.outcome in outcomes)), None

    return compute


def _success_pct(records: Sequence[EvalRecord]) -> Reasoned:
    counted = ran(records)
    if not counted:
        return None, "no eval ran"
    return 100.0 * sum(1 for r in counted if r.outcome == "passed") / len(counted), None


_BUILTIN: list[RunVariable] = [
    RunVariable(
        "success_pct",
        "percent 0–100",
        "share of evals that passed (skipped evals are not counted)",
        _success_pct,
    ),
    RunVariable("passed", "count", "evals that passed", _count({"passed"})),
    RunVariable("failed", "count", "evals that failed or errored", _count({"failed", "error"})),
    RunVariable("total", "count", "evals that ran (passed + failed)", _count(None)),
]
for _how, _label in (("total", "sum"), ("avg", "mean"), ("min", "minimum"), ("max", "maximum")):
    _BUILTIN.append(
        RunVariable(
            f"{_how}_latency",
            "seconds",
            f"{_label} of the evals' latencies",
            _aggregate("latency", _how),
        )
    )
for _how, _label in (("total", "sum"), ("avg", "mean"), ("min", "minimum"), ("max", "maximum")):
    _BUILTIN.append(
        RunVariable(f"{_how}_cost", "USD", f"{_label} of the evals' costs", _aggregate("cost", _how))
    )


def judged_evals(records: Sequence[EvalRecord]) -> list[EvalRecord]:
    """The evals that ran and asked an llm_judge judge (one that failed leaves a cost but no check)."""
    return [r for r in ran(records) if r.judge_cost is not None or judges_asked(r.checks)]


def judge_cost_total(records: Sequence[EvalRecord]) -> Reasoned:
    """The judges' total, known only when every eval that asked one knows what its judges cost."""
    judged = judged_evals(records)
    if not judged:
        return None, "no eval asked an llm_judge judge"
    unknown = [r.name for r in judged if r.judge_cost is None]
    if unknown:
        shown = ", ".join(unknown[:3]) + (", …" if len(unknown) > 3 else "")
        return None, f"judge cost unknown for {len(unknown)} of {len(judged)} judged evals ({shown})"
    return float(sum(r.judge_cost or 0.0 for r in judged)), None


_BUILTIN.append(
    RunVariable(
        "total_judge_cost",
        "USD",
        "sum of what the llm_judge judges cost (not part of the evals' costs)",
        judge_cost_total,
    )
)
_BUILTIN.append(
    RunVariable(
        "total_input_tokens",
        "tokens",
        "sum of the evals' input (prompt) tokens",
        _aggregate("input_tokens", "total"),
    )
)
_BUILTIN.append(
    RunVariable(
        "total_output_tokens",
        "tokens",
        "sum of the evals' output (completion) tokens",
        _aggregate("output_tokens", "total"),
    )
)


def _eval_field(field: str, what: str) -> Callable[[EvalRecord], Reasoned]:
    def compute(record: EvalRecord) -> Reasoned:
        if record.outcome == "skipped":
            return None, f"eval {record.name!r} was skipped"
        value = getattr(record, field)
        return (None, f"eval {record.name!r} reported no {what}") if value is None else (float(value), None)

    return compute


EVAL_VARIABLES: list[EvalVariable] = [
    EvalVariable(
        "",
        "1 or 0",
        "1 if the eval passed, else 0",
        lambda r: (
            (None, f"eval {r.name!r} was skipped")
            if r.outcome == "skipped"
            else (1.0 if r.outcome == "passed" else 0.0, None)
        ),
    ),
    EvalVariable("_latency", "seconds", "the eval's latency", _eval_field("latency", "latency")),
    EvalVariable("_cost", "USD", "the eval's cost", _eval_field("cost", "cost")),
    EvalVariable(
        "_tokens", "tokens", "the eval's output tokens", _eval_field("output_tokens", "output tokens")
    ),
]


_BUILTIN.append(
    RunVariable(
        "subtask_pct",
        "percent 0–100",
        "share of the subtasks that passed, over the evals whose grade steps reported subtasks",
        subtask_pct,
    )
)
_BUILTIN.append(
    RunVariable(
        "vybes_score",
        "points",
        "mean of the evals' time-penalised scores (`<name>_vybes`)",
        vybes_score,
    )
)
EVAL_VARIABLES.append(
    EvalVariable("_subtasks", "fraction 0–1", "that eval's passed subtasks / its subtasks", subtask_fraction)
)
# The built-in run variables that are the mean over the records that ran of a per-eval variable's
# value (the id of its compute function, which lives as long as the module → that variable's
# position in EVAL_VARIABLES; an id, as a plugin's compute may not be hashable): the controller
# computes each record's value once for both (see compute_run_values).
_MEAN_OF: dict[int, int] = {id(vybes_score): len(EVAL_VARIABLES)}
EVAL_VARIABLES.append(
    EvalVariable(
        "_vybes",
        "points",
        "that eval's time-penalised score: "
        "100 × multiplier × subtask fraction × clamp(time limit / agent minutes, 0.2, 1)",
        vybes,
    )
)


EVAL_VARIABLES.append(
    EvalVariable(
        "_score",
        "fraction 0–1",
        "mean of the 0–1 scores of the checks named `<name>`: a check's `name`, else its eval's "
        "(`llm_judge` with a rubric, `python` checks returning a score)",
        eval_score,
    )
)


RUBRIC_SIGNALS: dict[str, str] = {
    "tool_success_rate": "share of the agent's tool calls that succeeded (needs a transcript)",
    "output_quality": "(completeness + accuracy) / 2 of the response, by the rubric's heuristics",
    "efficiency": "1 - time (or tool calls) / max_expected for the eval's complexity, 0–1",
    "error_rate": "min(1, errors / 10): failed tool calls, retries, error patterns (needs a transcript)",
    "structure_score": "headers 0.4 + lists 0.3 + code blocks 0.3 in the response",
}
for _signal, _meaning in RUBRIC_SIGNALS.items():
    _mean = rubric_mean(_signal)
    _MEAN_OF[id(_mean)] = len(EVAL_VARIABLES)
    _BUILTIN.append(RunVariable(_signal, "fraction 0–1", f"mean over the evals: {_meaning}", _mean))
    EVAL_VARIABLES.append(EvalVariable(f"_{_signal}", "fraction 0–1", _meaning, rubric_signal(_signal)))
_mean = rubric_mean(None)
_MEAN_OF[id(_mean)] = len(EVAL_VARIABLES)
_BUILTIN.append(
    RunVariable(
        "rubric_score",
        "points 0–100",
        "mean of the evals' automatic rubric scores (`<name>_rubric`)",
        _mean,
    )
)
EVAL_VARIABLES.append(
    EvalVariable(
        "_rubric",
        "points 0–100",
        "that eval's automatic rubric score (the weighted signals × 100)",
        rubric_signal(None),
    )
)


_METRICS = (
    "success_pct", "passed", "failed", "total",
    "total_latency", "avg_latency", "min_latency", "max_latency",
    "total_cost", "avg_cost", "min_cost", "max_cost", "total_judge_cost",
)  # fmt: skip
BUILTIN_RUN_VARIABLES: tuple[RunVariable, ...] = tuple(
    replace(v, metric=v.name in _METRICS) for v in sorted(_BUILTIN, key=lambda v: v.name not in _METRICS)
)
del _BUILTIN


# The nonempty ``x`` with suffix ``s1`` = ``x`` + suffix ``s2``: an eval named ``e + x`` beside ``e``
# would name a variable twice (see _distinct_names).
_SUFFIX_PARTS = frozenset(
    s1[: len(s1) - len(s2)]
    for s1 in (v.suffix for v in EVAL_VARIABLES)
    for s2 in (v.suffix for v in EVAL_VARIABLES)
    if s1 != s2 and s1.endswith(s2)
)


def builtin_run_variables() -> RunVariables:
    """A registry holding the built-in run variables only."""
    variables = RunVariables()
    for variable in BUILTIN_RUN_VARIABLES:
        variables.register(variable)
    return variables


def run_variable_names(variables: Iterable[RunVariable] = BUILTIN_RUN_VARIABLES) -> list[str]:
    return [v.name for v in variables]


def eval_variable_names(eval_name: str) -> list[str]:
    return [eval_name + v.suffix for v in EVAL_VARIABLES]


def compute_variables(
    records: Sequence[EvalRecord],
    variables: Iterable[RunVariable] = BUILTIN_RUN_VARIABLES,
    errors: dict[str, str] | None = None,
) -> tuple[dict[str, Value], dict[str, str]]:
    """Every variable's value for one run, and the reason for each that has none.

    An eval that ran several times (--vibe-repeat) gives each of its variables the mean over its
    runs: ``<name>`` is then its pass rate. ``errors`` (when given) collects the run variables whose
    computation failed (raised, or returned no number): their value is None with the error."""
    values, reasons = _run_wide(records, variables, errors)
    run_wide = set(values)
    for eval_name, runs in _by_eval(records).items():
        row, why = _eval_row(runs)
        for variable, value, reason in zip(EVAL_VARIABLES, row, why, strict=True):
            # Interned: each configuration's run of a suite names the same variables.
            name = sys.intern(eval_name + variable.suffix)
            if name in run_wide:
                continue  # an eval named like a run-wide variable must not replace it
            values[name] = value
            if reason:
                reasons[name] = reason
    _add_check_scores(records, values, values, reasons)
    return values, reasons


def compute_run_values(
    records: Sequence[EvalRecord],
    variables: Iterable[RunVariable],
    errors: dict[str, str] | None,
    wanted: Iterable[str] | None,
) -> tuple[RunValues, dict[str, str]]:
    """:func:`compute_variables` as the controller keeps the values (:class:`RunValues`: a tuple
    per eval, no name made per variable), with the reasons of the ``wanted`` names only (those the
    formula reads; None: every reason)."""
    suffixes = [variable.suffix for variable in EVAL_VARIABLES]
    once: dict[int, list[Reasoned]] = {}  # by id: the per-eval variables of a record of an eval that ran once
    rows = [(name, *_eval_row(runs, once)) for name, runs in _by_eval(records).items()]
    head, reasons = _run_wide(records, variables, errors, once)
    if not _distinct_names([name for name, _, _ in rows], head):  # one name, two variables
        values, reasons = compute_variables(records, variables, errors)
        return RunValues(values, suffixes, len(head)), reasons
    evals = [(name, row) for name, row, _ in rows]
    tail: dict[str, Value] = {}
    _add_check_scores(records, RunValues.from_parts(head, evals, suffixes, {}), tail, reasons)
    kept = RunValues.from_parts(head, evals, suffixes, tail)
    for name in kept.eval_names() if wanted is None else wanted:
        found = kept.locate(name)
        reason = rows[found[0]][2][found[1]] if found else None
        if reason:
            reasons[name] = reason
    return kept, reasons


def _run_wide(
    records: Sequence[EvalRecord],
    variables: Iterable[RunVariable],
    errors: dict[str, str] | None,
    once: Mapping[int, list[Reasoned]] | None = None,
) -> tuple[dict[str, Value], dict[str, str]]:
    """The run-wide variables' values and reasons (``errors``: see :func:`compute_variables`);
    ``once``: per-eval values already computed for some records (see :func:`_eval_row`), which the
    built-in means of per-eval variables take instead of computing them again."""
    values: dict[str, Value] = {}
    reasons: dict[str, str] = {}
    for variable in variables:
        position = _MEAN_OF.get(id(variable.compute))
        compute = _mean_with(once, position) if once and position is not None else None
        values[variable.name], reason, failed = _run_variable(variable, records, compute)
        if reason:
            reasons[variable.name] = reason
        if failed and errors is not None:
            errors[variable.name] = reason or ""
    return values, reasons


def _by_eval(records: Sequence[EvalRecord]) -> dict[str, list[EvalRecord]]:
    """The records of each named eval, in the order the evals first appear."""
    by_eval: dict[str, list[EvalRecord]] = {}
    for record in records:
        if record.named:
            by_eval.setdefault(record.name, []).append(record)
    return by_eval


def _mean_with(
    once: Mapping[int, list[Reasoned]], position: int
) -> Callable[[Sequence[EvalRecord]], Reasoned]:
    """The mean of the per-eval variable at ``position`` over the records that ran (as its built-in
    run variable computes it), taking the values ``once`` holds."""
    compute = EVAL_VARIABLES[position].compute

    def value_of(record: EvalRecord) -> Reasoned:
        pairs = once.get(id(record))
        return compute(record) if pairs is None else pairs[position]

    return lambda records: mean_of(records, value_of)


def _eval_row(
    runs: list[EvalRecord], once: dict[int, list[Reasoned]] | None = None
) -> tuple[tuple[Value, ...], tuple[str | None, ...]]:
    """One eval's per-eval variables over its runs, in :data:`EVAL_VARIABLES` order, and the
    reason each has none; ``once`` (when given) keeps, by the record's id, what each variable's
    function returned for the record of an eval that ran once."""
    counted = [r for r in runs if r.outcome != "skipped"] or runs[:1]  # skipped runs left out
    if len(counted) > 1:
        pairs = [_mean_over_runs(counted, variable) for variable in EVAL_VARIABLES]
        return tuple(value for value, _ in pairs), tuple(reason for _, reason in pairs)
    record = counted[0]  # most evals: _mean_over_runs's one run, without a call per variable
    pairs = [variable.compute(record) for variable in EVAL_VARIABLES]
    if once is not None and record.outcome != "skipped":  # a skipped record is never in a mean
        once[id(record)] = pairs
    values = tuple(None if value is None else value / 1 for value, _ in pairs)  # a float, as a mean is
    return values, tuple(None if value is not None else reason for value, reason in pairs)


def _add_check_scores(
    records: Sequence[EvalRecord], taken: Container[str], values: dict[str, Value], reasons: dict[str, str]
) -> None:
    """``<name>_score`` of each named check into ``values``, unless ``taken`` has that name."""
    for check_name in sorted({name for record in records for name in record.check_names}):
        name = check_name + CHECK_SCORE_SUFFIX
        if name in taken:
            continue  # a collision refused at collection; never replace another variable
        values[name], reason = check_score(records, check_name)
        if reason:
            reasons[name] = reason


def _distinct_names(eval_names: Collection[str], run_wide: Collection[str]) -> bool:
    """Whether the per-eval variables of ``eval_names`` each have a name of their own, none a
    run-wide one's: ``e + s1 == f + s2`` for evals ``e``, ``f`` means ``f`` is ``e`` plus a part
    ``x`` of suffix ``s1`` that ends in suffix ``s2`` (``x_cost`` beside ``x``, and
    ``a_structure`` beside ``a``: ``a_structure_score``)."""
    taken = set(eval_names)
    if len(taken) != len(eval_names):
        return False
    suffixes = [variable.suffix for variable in EVAL_VARIABLES]
    if any(
        name.endswith(suffix) and name[: len(name) - len(suffix)] in taken
        for name in run_wide
        for suffix in suffixes
    ):
        return False
    parts = _SUFFIX_PARTS
    ends = tuple(parts)  # one test per name: most names end in none of them
    return not any(
        name.endswith(part) and name[: -len(part)] in taken
        for name in taken
        if name.endswith(ends)
        for part in parts
    )


CHECK_SCORE_SUFFIX = "_score"


def check_variable_names(check_names: Iterable[str]) -> list[str]:
    """The formula variables of checks with these names: ``<name>_score``."""
    return [name + CHECK_SCORE_SUFFIX for name in check_names]


def _run_variable(
    variable: RunVariable,
    records: Sequence[EvalRecord],
    compute: Callable[[Sequence[EvalRecord]], Reasoned] | None = None,
) -> tuple[Value, str | None, bool]:
    """``variable`` computed over ``records`` (by ``compute``, when given: the same function that
    reuses values computed before): its value, the reason it has none, and whether that reason is
    an error of its computation (a plugin's function that raised or returned no number)."""
    where = f"{getattr(variable.compute, '__module__', '?')}.{getattr(variable.compute, '__qualname__', '?')}"
    label = f"run variable {variable.name!r} ({where})"
    try:
        result = (compute or variable.compute)(records)
    except Exception as exc:
        from ..check_api import raised_at  # the checks' module: on the xdist controller only for this

        return None, f"{label} raised {type(exc).__name__}: {exc}{raised_at(exc)}", True
    value, reason = result if isinstance(result, tuple) and len(result) == 2 else (result, None)
    if value is None:
        if isinstance(reason, str) and reason:
            return None, reason, False
        return None, f"{label} returned no value and no reason: return (value, None) or (None, reason)", True
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, f"{label} returned {result!r}; return a number, or (value, None) or (None, reason)", True
    if not math.isfinite(value):
        return None, f"{label} returned {value}, not a finite number", True
    return float(value), None, False


def _mean_over_runs(counted: Sequence[EvalRecord], variable: EvalVariable) -> Reasoned:
    """The variable over an eval's counted runs: its value, or the mean when it ran several times
    (a run without a value leaves none)."""
    if len(counted) == 1:
        value, reason = variable.compute(counted[0])
        return (None, reason) if value is None else (value / 1, None)  # a float, as the mean is
    found: list[float] = []
    for record in counted:
        value, reason = variable.compute(record)
        if value is None:
            return None, reason
        found.append(value)
    return sum(found) / len(found), None


def variable_clash(name: str, run_names: Iterable[str] | None = None) -> str | None:
    """Why ``name`` cannot be an eval name because a formula variable it defines is a run-wide one
    (``run_names``: the session's run-wide variables; the built-ins by default)."""
    if isinstance(run_names, frozenset):  # one per suite: most names clash with none of its stems
        if name not in _clash_stems(run_names):
            return None
        run: Collection[str] = run_names
    elif isinstance(run_names, set):
        run = run_names
    else:
        run = set(run_variable_names() if run_names is None else run_names)
    if name in run:
        return f"eval name {name!r} is a run-wide score formula variable"
    clashes = [v for v in eval_variable_names(name) if v in run]
    if clashes:
        return (
            f"eval name {name!r} would define the formula variable(s) {', '.join(map(repr, clashes))}, "
            "which are run-wide variables"
        )
    return None


@functools.lru_cache(maxsize=8)
def _clash_stems(run: frozenset[str]) -> frozenset[str]:
    """The eval names that would define one of the run-wide variables ``run``: ``name + suffix``
    for the suffix of one of :data:`EVAL_VARIABLES` (complete once this module is imported)."""
    suffixes = [variable.suffix for variable in EVAL_VARIABLES]
    return frozenset(r.removesuffix(suffix) for r in run for suffix in suffixes if r.endswith(suffix))


def eval_name_clashes(names: Iterable[str]) -> list[tuple[str, str, EvalVariable]]:
    """Each eval name that another eval's per-eval variable spells too, as (that name, the other
    eval, the variable): with evals ``x`` and ``x_cost`` a formula's ``x_cost`` would be both."""
    taken = dict.fromkeys(names)
    suffixes = tuple(variable.suffix for variable in EVAL_VARIABLES if variable.suffix)
    return [
        (name, name.removesuffix(variable.suffix), variable)
        for name in taken
        if name.endswith(suffixes)  # most names end in none: the per-variable test below is for those that do
        for variable in EVAL_VARIABLES
        if variable.suffix and name.endswith(variable.suffix) and name.removesuffix(variable.suffix) in taken
    ]


def eval_name_clash(
    name: str, owner: str, variable: EvalVariable, *, noun: str = "eval", label: str = "name", where: str = ""
) -> str:
    """The message for one of :func:`eval_name_clashes`: ``noun`` and ``label`` are what the file
    calls an eval and its name (``evaluation`` ``id``), ``where`` says where ``owner`` is."""
    return (
        f"{noun} {label} {name!r} clashes with {noun} {owner!r}{where}: in a score formula {name!r} "
        f"would be both this {noun}'s pass flag and that {noun}'s `<name>{variable.suffix}` variable; "
        f"rename one of the two {noun}s"
    )
