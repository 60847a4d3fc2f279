"""The Run Summary printed after pytest's own summary: one block per run, and a table per suite
when several configurations ran."""

from __future__ import annotations

from collections.abc import Sequence

from ..atomic_files import written_order
from ..budget import NOT_STARTED
from ..results import NOT_FINISHED, CheckRecord, EvalRecord, RunRecord
from ..scoring.formula import show_formula
from ..scoring.grades import grade
from ..scoring.variables import (
    BUILTIN_RUN_VARIABLES,
    check_variable_names,
    judge_cost_total,
    judged_evals,
)
from ..text_input import first_line
from .format import MISSING, decimal, failed_check, money, run_title, score, seconds, signed

# The metrics the run block shows on lines of their own.
BUILTIN_METRICS = frozenset({v.name for v in BUILTIN_RUN_VARIABLES if v.metric} | {"errors", "skipped"})


def _graded(run: RunRecord) -> str:
    """The score with its rubric grade beside it, where it has one."""
    return score(run.score) + (f" ({run.grade})" if run.grade else "")


def formula_shown(run: RunRecord) -> str:
    return show_formula(run.score_formula, run.score_canonical, run.score_preset)


def run_block(
    run: RunRecord, breakdown: bool = False, sandboxed: list[EvalRecord] | None = None
) -> list[str]:
    """One run's lines; ``breakdown`` adds the formula with the run's values substituted;
    ``sandboxed`` (when given) collects the run's records that have a ``sandbox``."""
    # Each read once: on the controller they are made anew each time they are asked for.
    run = run.model_copy(update={"evals": list(run.evals), "eval_stats": list(run.eval_stats)})
    if sandboxed is not None:
        sandboxed.extend(record for record in run.evals if record.sandbox is not None)
    m = run.metrics
    config = run.configuration + (f" ({run.configuration_name})" if run.configuration_name else "")
    lines = [f"{run.suite} × {config}  [{run.source}]"]
    lines.append(f"Score: {_graded(run)} (formula: {formula_shown(run)})")
    lines.extend(_repeat_lines(run))
    if breakdown and run.score_breakdown is not None:
        lines.append(f"  {run.score_breakdown} = {score(run.score)}")
    if run.score_error:
        lines.append(f"  score error: {run.score_error}")
    if run.gate is not None:
        verdict = "passed" if run.gate.passed else "FAILED"
        lines.append(f"Gate: {verdict}: {run.gate.message}")
    if m["success_pct"] is None:
        lines.append(f"Success Rate: n/a (0/0; {m['skipped']} skipped)")
    else:
        extra = f", {m['skipped']} skipped" if m["skipped"] else ""
        lines.append(f"Success Rate: {m['success_pct']:.1f}% ({m['passed']:.0f}/{m['total']:.0f}{extra})")
    lines.append(f"Total Cost: {money(m['total_cost'])}{_cost_gap(run)}{_reruns(run)}")
    lines.extend(_judge_cost_lines(run))
    lines.append(
        f"Latency: avg {seconds(m['avg_latency'])} · min {seconds(m['min_latency'])}"
        f" · max {seconds(m['max_latency'])}"
    )
    lines.extend(_metric_lines(run))
    subtasks = _subtasks_line(run)
    if subtasks:
        lines.append(subtasks)
    rubric = _rubric_line(run)
    if rubric:
        lines.append(rubric)
    if run.baseline is not None:
        lines.append(baseline_line(run))
    lines.extend(f"note: {note}" for note in run.notes)
    # An xfail eval that passed is a strict XPASS: pytest fails the session for it, so say which.
    failed = [r for r in run.evals if r.outcome in ("failed", "error") or (r.xfail and r.outcome == "passed")]
    for record in failed[:10]:
        which = f"{record.name} (r{record.repeat})" if record.repeat else record.name
        if record.outcome == "passed":
            lines.append(
                f"  XPASS  {which}: passed, but its `xfail:` says it fails (strict: the session fails)"
            )
            continue
        error = record.outcome == "error" and bool(record.message)
        why = first_line(record.message or "") if error else _first_failed_check(record)
        if record.subtasks_total is not None:
            why += f" (subtasks {record.subtasks_passed}/{record.subtasks_total})"
        lines.append(f"  {record.outcome.upper():6} {which}: {why}")
    if len(failed) > 10:
        lines.append(f"  … and {len(failed) - 10} more")
    return lines


def _check_names(checks: Sequence[CheckRecord]) -> list[str]:
    return [n for c in checks for n in ([c.name] if c.name else []) + _check_names(c.children)]


def _metric_lines(run: RunRecord) -> list[str]:
    """Plugins' metrics (run variables with ``metric=True``), the named checks' mean scores, and
    the run variables whose computation failed."""
    lines = []
    own = [(name, value) for name, value in run.metrics.items() if name not in BUILTIN_METRICS]
    shown = [f"{name} {decimal(value)}" for name, value in own if isinstance(value, int | float)]
    if shown:
        lines.append("Metrics: " + " · ".join(shown))
    names = dict.fromkeys(
        n for record in run.evals for n in [*record.check_names, *_check_names(record.checks)]
    )
    scores = [f"{name} {decimal(run.variables.get(check_variable_names([name])[0]))}" for name in names]
    if scores:
        lines.append("Check scores: " + " · ".join(scores) + " (mean 0–1, `<name>_score`)")
    lines.extend(f"  metric error: {error}" for error in run.variable_errors.values())
    return lines


def _repeat_lines(run: RunRecord) -> list[str]:
    """With --vibe-repeat: the repeats' scores and their mean, pass@k and pass^k, and the evals a
    min_pass_rate let pass."""
    lines = []
    if run.repeats > 1:
        shown = ", ".join(score(s) for s in run.repeat_scores)
        mean = decimal(run.score_mean)
        low, high = run.score_ci95 or (None, None)
        interval = f" (95% CI {decimal(low)} to {decimal(high)})" if run.score_ci95 else ""
        lines.append(
            f"Repeats: {run.repeats} (score: trimmed, recency-weighted; mean {mean}{interval}); "
            f"per repeat: {shown}"
        )
        k = str(run.repeats)
        ran = [st for st in run.eval_stats if st.runs]
        at_k = [st.pass_at_k[k] for st in ran if k in st.pass_at_k]
        hat_k = [st.pass_hat_k[k] for st in ran if k in st.pass_hat_k]
        rates = [st.pass_rate for st in ran if st.pass_rate is not None]
        if rates:
            line = f"Pass rate: {decimal(sum(rates) / len(rates))} mean over {len(rates)} evals"
            if at_k and len(at_k) == len(ran):
                at, hat = decimal(sum(at_k) / len(at_k)), decimal(sum(hat_k) / len(hat_k))
                line += f" · pass@{k} {at} · pass^{k} {hat}"
            lines.append(line)
    for st in run.eval_stats:
        if st.passed_by_rate and st.pass_rate is not None:
            lines.append(
                f"  FLAKY  {st.name}: passed {st.passed}/{st.runs} ({100 * st.pass_rate:.0f}%), "
                f"min_pass_rate {st.min_pass_rate:g}: counted as passed"
            )
    return lines


def _rubric_line(run: RunRecord) -> str | None:
    """The automatic rubric over the run, when its score is not already the rubric."""
    value = run.variables.get("rubric_score")
    if run.score_preset == "rubric":
        return None
    if value is None:
        graded = [r for r in run.evals if r.rubric is not None and r.rubric.score is not None]
        if not graded:
            return None
        return f"Rubric: n/a ({len(graded)} of {len(run.evals)} evals graded; see `rubric.missing`)"
    return f"Rubric: {decimal(value)} ({grade(value)}) mean over the evals"


def baseline_line(run: RunRecord) -> str:
    """``Baseline: 82.10 → 78.00 (Δ -4.10) regression; pass→fail: a, b``."""
    base = run.baseline
    assert base is not None
    before = score(base.score)
    delta = "" if base.delta is None else f" (Δ {signed(base.delta)})"
    line = f"Baseline: {before} → {score(run.score)}{delta} {base.label}"
    if base.accepted is not None and base.label == "exploration":
        line += " (kept)" if base.accepted else " (not kept)"
    if base.label in ("incomparable", "new"):
        line += f": {base.reason}"
    for label, names in (("pass→fail", base.pass_to_fail), ("fail→pass", base.fail_to_pass)):
        if names:
            line += f"; {label}: {', '.join(names[:10])}" + (" …" if len(names) > 10 else "")
    return line


def _subtasks_line(run: RunRecord) -> str | None:
    """Partial credit: the subtasks the grade steps' results files reported, over the run."""
    reported = [r for r in run.evals if r.subtasks_total is not None and r.subtasks_passed is not None]
    if not reported:
        return None
    passed = sum(r.subtasks_passed or 0 for r in reported)
    total = sum(r.subtasks_total or 0 for r in reported)
    pct = f"{100 * passed / total:.1f}%" if total else MISSING
    return f"Subtasks: {pct} ({passed}/{total} from {len(reported)} of {len(run.evals)} evals)"


def _judge_cost_lines(run: RunRecord) -> list[str]:
    """What the llm_judge judges cost, ``n/a`` with the reason when some judge's cost is unknown;
    nothing when no judge was asked."""
    total = run.metrics.get("total_judge_cost")
    if total is not None:
        return [f"Judge Cost: {money(total)} (llm_judge; not in Total Cost)"]
    if not judged_evals(run.evals):
        return []
    return [f"Judge Cost: n/a ({judge_cost_total(run.evals)[1]}; llm_judge)"]


def _cost_gap(run: RunRecord) -> str:
    """Why the total cost is unknown, if it is."""
    if run.metrics["total_cost"] is not None:
        return ""
    counted = [r for r in run.evals if r.outcome != "skipped"]
    if not counted:
        return " (no eval ran)"
    reported = sum(1 for r in counted if r.cost is not None)
    if not reported:
        return " (not reported)"
    if reported == len(counted):  # every eval reported one: their sum is too large for a float
        return " (the costs add up to more than the largest number)"
    return f" (reported by {reported} of {len(counted)} evals)"


def _reruns(run: RunRecord) -> str:
    """How much of the total cost the evals a plugin reran spent on their earlier attempts (known
    when the total is: an eval's cost is null when one of its attempts reported none)."""
    rerun = [r for r in run.evals if r.attempts > 1 and r.outcome != "skipped"]
    if not rerun or run.metrics["total_cost"] is None:
        return ""
    spent = money(sum(r.rerun_cost or 0.0 for r in rerun))
    count = sum(r.attempts - 1 for r in rerun)
    return f" ({spent} of it on {count} earlier attempt(s) of {len(rerun)} rerun eval(s))"


def _first_failed_check(record: EvalRecord) -> str:
    """The first failed check (and its turn), or the first line of the message (a failed workspace
    step)."""
    return failed_check(record) or first_line(record.message or "failed")


def comparison_table(runs: Sequence[RunRecord]) -> list[str]:
    """Configurations of one suite side by side."""
    header = ("configuration", "score", "success", "passed", "cost", "avg latency")
    rows = [
        (
            run.configuration,
            _graded(run),
            MISSING if run.metrics["success_pct"] is None else f"{run.metrics['success_pct']:.1f}%",
            f"{run.metrics['passed']:.0f}/{run.metrics['total']:.0f}",
            money(run.metrics["total_cost"]),
            seconds(run.metrics["avg_latency"]),
        )
        for run in runs
    ]
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        )

    return [fmt(header), fmt(tuple("-" * w for w in widths)), *(fmt(row) for row in rows)]


def gate_failures(runs: Sequence[RunRecord]) -> list[str]:
    """``GATE FAILED: quiz × claude: score 42.10 is below min 50 (by 7.90)``, one per failed gate."""
    return [
        f"GATE FAILED: {run_title(run)}: {run.gate.message}"
        for run in runs
        if run.gate is not None and not run.gate.passed
    ]


def summary_lines(
    runs: Sequence[RunRecord], breakdown: bool = False, sandboxed: list[EvalRecord] | None = None
) -> list[str]:
    """The Run Summary's lines; ``sandboxed`` (when given) collects the records of the coding-agent
    items (those with a ``sandbox``) for :func:`workspace_lines`, read on the way: on the
    controller each pass over the records reads every one anew."""
    lines: list[str] = []
    by_suite: dict[str, list[RunRecord]] = {}
    for run in runs:
        by_suite.setdefault(run.source, []).append(run)
    for suite_runs in by_suite.values():
        for run in suite_runs:
            if lines:
                lines.append("")
            lines.extend(run_block(run, breakdown, sandboxed))
        if len(suite_runs) > 1:
            lines.append("")
            lines.append(f"{suite_runs[0].suite}: configurations side by side")
            lines.extend(comparison_table(suite_runs))
    failures = gate_failures(runs)
    if failures:
        lines.append("")
        lines.extend(failures)
    return lines


KEPT_SHOWN = 20


def workspace_lines(
    records: Sequence[EvalRecord], sandbox_mode: str, fallback_reason: str | None
) -> list[str]:
    """What the coding agents ran in, and where --vibe-keep-workspaces kept their folders
    (nothing when no coding-agent item ran); ``records``: the records that have a ``sandbox``."""
    if not records:
        return []
    lines = []
    if any(record.sandbox == "bwrap" for record in records):
        lines.append("Sandbox: bwrap (coding agents could write only in their workspaces)")
    if any(record.sandbox == "none" for record in records):
        if sandbox_mode == "auto" and fallback_reason:
            lines.append(
                f"Sandbox: none, coding agents could write wherever you can: {fallback_reason} "
                "(--vibe-sandbox auto)"
            )
        else:
            lines.append(f"Sandbox: none (--vibe-sandbox {sandbox_mode})")
    kept = [record for record in records if record.workspace]
    if kept:
        lines.append(f"Kept workspaces (--vibe-keep-workspaces): {len(kept)}")
        lines += [f"  {record.nodeid}: {record.workspace}" for record in kept[:KEPT_SHOWN]]
        if len(kept) > KEPT_SHOWN:
            lines.append(f"  … and {len(kept) - KEPT_SHOWN} more (see `workspace` in the results JSON)")
    return lines


def _not_started(record: EvalRecord) -> bool:
    """--vibe-max-cost held the item back."""
    return record.outcome == "skipped" and NOT_STARTED in (record.message or "")


def budget_lines(runs: Sequence[RunRecord], limit: float | None, spent: float) -> list[str]:
    """``--vibe-max-cost``: what the run ``spent`` (its ledger: the evals' and their judges' answers
    asked in this session, not the cost of records reused with --vibe-resume nor of cached answers)
    and how many evals it did not start."""
    if limit is None:
        return []
    records = [record for run in runs for record in run.evals]
    reused = [record for record in records if record.reused_from is not None]
    held = sum(1 for record in records if _not_started(record))
    line = f"Budget: {money(spent)} spent of ${limit:g} (--vibe-max-cost; evals and their llm_judge judges)"
    line += f"; {held} eval(s) not started" if held else ""
    if reused:
        earlier = sum(record.cost or 0.0 for record in reused)
        line += f"; {len(reused)} reused eval(s) ({money(earlier)}) not counted"
    return [line]


SHOWN_SOURCES = 3  # files named in the resume line, with their counts


def resume_line(runs: Sequence[RunRecord], source: str) -> str:
    """``--vibe-resume``: the evals reused (from ``source``, or from each file they were produced
    in when several), run in this session, and neither (held back by --vibe-max-cost, cut short by
    the session's end)."""
    reused: dict[str, int] = {}
    ran = held = cut = 0
    for record in (record for run in runs for record in run.evals):
        if record.reused_from is not None:
            reused[record.reused_from] = reused.get(record.reused_from, 0) + 1
        elif _not_started(record):
            held += 1
        elif record.outcome == "skipped" and (record.message or "").startswith(NOT_FINISHED):
            cut += 1
        else:
            ran += 1
    counts = [f"{ran} run in this session"]
    counts += [f"{held} not started"] if held else []
    counts += [f"{cut} not finished"] if cut else []
    origin = _sources(reused, source)
    return (
        f"Resumed: {sum(reused.values())} eval(s) reused from {origin}, {', '.join(counts)} (--vibe-resume)"
    )


def unrecorded_line(runs: Sequence[RunRecord], store: str) -> str | None:
    """``--vibe-record`` with ``--vibe-resume``: the reused evals asked no provider, so this session
    stored no answer of theirs (a replay of the store misses them); None when none was reused."""
    reused = sum(1 for run in runs for record in run.evals if record.reused_from is not None)
    if not reused:
        return None
    return (
        f"--vibe-record {store}: the {reused} eval(s) reused by --vibe-resume asked no provider, so "
        "this session recorded no answer of theirs; run them without --vibe-resume to record them"
    )


def _sources(reused: dict[str, int], source: str) -> str:
    """The file the reused evals came from, or how many files, and the evals of each (in the order
    they were written: results files are named by their time)."""
    if len(reused) < 2:
        return next(iter(reused), source)
    ordered = sorted(reused.items(), key=lambda item: written_order(item[0]))
    shown = [f"{name}: {count}" for name, count in ordered[:SHOWN_SOURCES]]
    more = len(reused) - SHOWN_SOURCES
    shown += [f"and {more} more"] if more > 0 else []
    return f"{len(reused)} files ({', '.join(shown)})"


def nothing_ran_lines(records: Sequence[EvalRecord], shown: int = 5) -> list[str]:
    """Why a session in which every eval was skipped fails, and each distinct reason with its
    count: what to set or install."""
    reasons: dict[str, int] = {}
    for record in records:
        reason = record.message or "no reason given"
        reasons[reason] = reasons.get(reason, 0) + 1
    lines = [
        f"NOTHING RAN: all {len(records)} selected eval(s) were skipped, so the session fails "
        "(--vibe-allow-all-skipped accepts that). What to set:"
    ]
    ordered = sorted(reasons.items(), key=lambda item: -item[1])
    lines.extend(f"  {count} × {reason}" for reason, count in ordered[:shown])
    if len(ordered) > shown:
        lines.append(f"  … and {len(ordered) - shown} other reason(s) (see the skipped items above)")
    return lines
