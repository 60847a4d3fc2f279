"""A self-contained HTML report of a results file: one page, inline CSS and JS, no network.

Per suite (runs grouped by ``source``): the configurations side by side, a bar chart of their scores,
an evals × configurations pass/fail grid and, for each failed or errored eval, a collapsible block
with its message, its response and the tail of the failing step's output. Everything taken from the
results is HTML-escaped, and long texts are cut, so a megabyte response does not make a megabyte page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..atomic_files import write_atomic
from ..results import EvalRecord, ResultsFile, RunRecord, not_loaded, run_records
from ..scoring.formula import show_formula
from .format import money, number, score, seconds
from .html_assets import CSS, JS

__all__ = ["render_html", "write_html"]

from .html_failures import anchor_key, failure_blocks, failure_reason
from .html_text import (
    OUTCOME_LABEL,
    Counter,
    count,
    cut,
    first_line,
    fmt,
    h,
)


def write_html(
    results: ResultsFile, path: Path, redact: Callable[[str | None], str | None] | None = None
) -> None:
    """Write the report of ``results`` to ``path`` (--vibe-html) atomically (temp file + rename; a
    device or a pipe is written to, see :func:`write_atomic`), passed through ``redact``: the
    records are masked already, the step logs whose tails the page shows are not."""
    page = render_html(results)
    write_atomic(path, (redact(page) or "") if redact is not None else page, into_special=True)


def render_html(results: ResultsFile) -> str:
    """The report of ``results`` as one self-contained HTML page."""
    suites = _by_source(results.runs)
    numbering = Counter()
    body = [*_header(results, suites)]
    for index, runs in enumerate(suites):
        body.extend(_suite(index, runs, numbering))
    if not suites:
        body.append('<p class="muted" id="no-runs">No runs recorded.</p>')
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<link rel="icon" href="data:,">',
            f"<title>vibeeval report · {h(results.started_at)}</title>",
            f"<style>{CSS}</style>",
            "</head>",
            "<body>",
            *body,
            f"<script>{JS}</script>",
            "</body>",
            "</html>",
            "",
        ]
    )


def _by_source(runs: Iterable[RunRecord]) -> list[list[RunRecord]]:
    """Runs grouped by suite file, in the order they first appear."""
    groups: dict[str, list[RunRecord]] = {}
    for run in runs:
        groups.setdefault(run.source, []).append(run)
    return list(groups.values())


def _tally(outcome: str, count: int, xfail: int) -> str:
    """``20 failed (18 of them xfail: expected to fail)``: the xfail ones counted with their outcome."""
    if not xfail:
        return f"{count} {outcome}"
    if outcome in ("failed", "error"):
        return f"{count} {outcome} ({xfail} of them xfail: expected to fail)"
    return f"{count} {outcome} ({xfail} of them marked xfail)"


def _header(results: ResultsFile, suites: Sequence[Sequence[RunRecord]]) -> list[str]:
    counts = dict.fromkeys(("passed", "failed", "error", "skipped"), 0)
    expected = dict.fromkeys(counts, 0)  # of each outcome, the evals marked xfail
    for r in run_records(results.runs):  # one at a time: on the controller they are read from a spool
        counts[r.outcome] += 1
        expected[r.outcome] += r.xfail
    tally = " · ".join(_tally(outcome, n, expected[outcome]) for outcome, n in counts.items() if n)
    lines = [
        "<header>",
        "<h1>vibeeval report</h1>",
        f'<p class="meta">started <time>{h(results.started_at)}</time> · finished '
        f"<time>{h(results.finished_at)}</time> · {len(suites)} suite(s), {len(results.runs)} run(s)"
        f" · {h(tally or 'no evals')}</p>",
    ]
    if results.interrupted:
        lines.append(
            '<p class="banner warn" id="interrupted">Interrupted: the session stopped early; '
            "some evals did not run.</p>"
        )
    elif results.stopped_early and results.stopped_early != not_loaded(results.load_errors):
        lines.append(
            f'<p class="banner warn" id="stopped-early">The session {h(results.stopped_early)}: '
            "some evals did not run, so the scores are over those that did.</p>"
        )
    if results.load_errors:
        lines.append(
            f'<div class="banner bad" id="load-errors"><b>{len(results.load_errors)} suite file(s) '
            "failed to load</b> (their evals did not run):"
        )
        lines.append("<pre>" + h(cut("\n".join(results.load_errors))) + "</pre></div>")
    lines.append("</header>")
    return lines


def _suite(index: int, runs: Sequence[RunRecord], numbering: Counter) -> list[str]:
    first = runs[0]
    names = sorted({run.suite for run in runs})
    lines = [
        f'<section class="suite" id="suite-{index}" data-source="{h(first.source)}">',
        f"<h2>{h(', '.join(names))}</h2>",
        f'<p class="meta mono">{h(first.source)}</p>',
    ]
    formulas = {show_formula(r.score_formula, r.score_canonical, r.score_preset) for r in runs}
    if len(formulas) == 1:
        lines.append(f'<p class="meta">score: <code>{h(formulas.pop())}</code></p>')
    lines.append("<h3>Configurations</h3>")
    lines.append('<div class="overview">')
    lines.extend(_config_table(runs, per_run_formula=len(formulas) > 1))
    lines.extend(_chart(runs))
    lines.append("</div>")
    lines.extend(_notes(runs))
    lines.extend(_grid(index, runs, numbering))
    lines.append("</section>")
    return lines


def _config_table(runs: Sequence[RunRecord], per_run_formula: bool) -> list[str]:
    repeated = any(run.repeats > 1 for run in runs)
    baseline = any(run.baseline is not None for run in runs)
    gated = any(run.gate is not None for run in runs)
    head = ["configuration", "score", "success", "passed", "cost", "avg latency"]
    head += ["mean ± 95% CI"] * repeated + ["baseline"] * baseline + ["gate"] * gated
    head += ["formula"] * per_run_formula
    lines = ['<table class="configs">', "<thead><tr>"]
    lines.append("".join(f"<th>{h(cell)}</th>" for cell in head) + "</tr></thead><tbody>")
    for run in runs:
        cells = [_config_cell(run), *_metric_cells(run)]
        if repeated:
            cells.append(f'<td class="num">{h(_mean_ci(run))}</td>')
        if baseline:
            cells.append(_baseline_cell(run))
        if gated:
            cells.append(_gate_cell(run))
        if per_run_formula:
            formula = show_formula(run.score_formula, run.score_canonical, run.score_preset)
            cells.append(f"<td><code>{h(formula)}</code></td>")
        lines.append(f'<tr data-configuration="{h(run.configuration)}">{"".join(cells)}</tr>')
    lines.append("</tbody></table>")
    return lines


def _config_cell(run: RunRecord) -> str:
    name = f' <span class="muted">({h(run.configuration_name)})</span>' if run.configuration_name else ""
    return f"<td><b>{h(run.configuration)}</b>{name}</td>"


def _score_text(run: RunRecord) -> str:
    text = score(run.score)
    return f"{text} ({run.grade})" if run.grade and run.score is not None else text


def _metric_cells(run: RunRecord) -> list[str]:
    m = run.metrics
    why = f' title="{h(run.score_error)}"' if run.score_error else ""
    success = number(m.get("success_pct"))
    skipped = number(m.get("skipped"))
    passed = f"{count(m.get('passed'))}/{count(m.get('total'))}"
    if skipped:
        passed += f" ({skipped:.0f} skipped)"
    return [
        f'<td class="num score"{why}>{h(_score_text(run))}</td>',
        f'<td class="num">{"n/a" if success is None else f"{success:.1f}%"}</td>',
        f'<td class="num">{h(passed)}</td>',
        f'<td class="num">{h(money(m.get("total_cost")))}</td>',
        f'<td class="num">{h(seconds(m.get("avg_latency")))}</td>',
    ]


def _mean_ci(run: RunRecord) -> str:
    if run.repeats <= 1:
        return ""
    mean = fmt(run.score_mean)
    ci = run.score_ci95
    if ci and len(ci) == 2 and run.score_mean is not None:
        return f"{mean} ± {fmt((ci[1] - ci[0]) / 2)} [{fmt(ci[0])}, {fmt(ci[1])}] ×{run.repeats}"
    return f"{mean} ×{run.repeats}"


def _baseline_cell(run: RunRecord) -> str:
    base = run.baseline
    if base is None:
        return "<td></td>"
    css = {"significant_improvement": "good", "marginal_improvement": "good", "regression": "bad"}
    delta = "" if base.delta is None else f" Δ {base.delta:+.2f}"
    title = f"{base.baseline}: {base.reason}"
    for label, names in (("pass→fail", base.pass_to_fail), ("fail→pass", base.fail_to_pass)):
        if names:
            title += f"; {label}: {', '.join(names[:20])}" + (" …" if len(names) > 20 else "")
    return (
        f'<td class="{css.get(base.label, "muted")}" title="{h(title)}">'
        f'{h(base.label.replace("_", " "))}{h(delta)} <span class="muted">(was {h(score(base.score))})'
        "</span></td>"
    )


def _gate_cell(run: RunRecord) -> str:
    if run.gate is None:
        return "<td></td>"
    verdict, css = ("passed", "good") if run.gate.passed else ("FAILED", "bad")
    return f'<td class="{css}" title="{h(run.gate.message)}">{verdict}</td>'


def _chart(runs: Sequence[RunRecord]) -> list[str]:
    """Horizontal bars: the scale is 0–100, or the largest |score| above that; negatives go left."""
    scores = [s for s in (number(run.score) for run in runs) if s is not None]
    scale = max([100.0, *(abs(s) for s in scores)])
    signed = any(s < 0 for s in scores)
    lines = ['<div class="chart" role="img" aria-label="scores by configuration">']
    for run in runs:
        value = number(run.score)
        track = ""
        if signed:
            track += '<div class="zero" style="left:50%"></div>'
        if value is not None:
            width = abs(value) / scale * (50 if signed else 100)
            left = (50 - width if value < 0 else 50) if signed else 0
            kind = "neg" if value < 0 else "pos"
            track += f'<div class="bar {kind}" style="left:{left:.2f}%;width:{width:.2f}%"></div>'
        lines.append(
            f'<span class="mono">{h(run.configuration)}</span><div class="track">{track}</div>'
            f'<span class="num">{h(_score_text(run))}</span>'
        )
    lines.append("</div>")
    return lines


# -- the grid and the failures ---------------------------------------------------------------------


def _grid(index: int, runs: Sequence[RunRecord], numbering: Counter) -> list[str]:
    anchors: dict[tuple[int, str], str] = {}  # anchor_key(run, record) → the id of its failure block
    failures = failure_blocks(runs, numbering, anchors)
    by_name = [_records_by_name(run) for run in runs]
    names = list(dict.fromkeys(name for grouped in by_name for name in grouped))  # in the runs' order
    head = "".join(f"<th>{h(run.configuration)}</th>" for run in runs)
    lines = [
        "<h3>Evals × configurations</h3>",
        f'<table class="vibe-grid" id="grid-{index}"><thead><tr><th>eval</th>{head}</tr></thead><tbody>',
    ]
    for name in names:
        cells = "".join(
            _cell(name, run, records.get(name, []), anchors)
            for run, records in zip(runs, by_name, strict=True)
        )
        lines.append(f'<tr><th scope="row">{h(name)}</th>{cells}</tr>')
    lines.append("</tbody></table>")
    return lines + failures


def _records_by_name(run: RunRecord) -> dict[str, list[EvalRecord]]:
    grouped: dict[str, list[EvalRecord]] = {}
    for record in run.evals:
        grouped.setdefault(record.name, []).append(record)
    return grouped


def _cell(
    name: str, run: RunRecord, records: Sequence[EvalRecord], anchors: dict[tuple[int, str], str]
) -> str:
    """One eval × configuration: its outcome (``passed/runs`` over repeats), linked to its failure."""
    title = f"{name} × {run.configuration}"
    if not records:
        return f'<td class="cell absent" data-outcome="absent" title="{h(title)}: not run">—</td>'
    if run.repeats > 1 or len(records) > 1:
        outcome, text = _repeated_outcome(records)
        title += f": passed {text} runs"
    else:
        record = records[0]
        outcome, text = record.outcome, OUTCOME_LABEL.get(record.outcome, record.outcome)
        if record.xfail:
            text = "xfail" if outcome in ("failed", "error") else "xpass"
        reason = failure_reason(record) if outcome in ("failed", "error") else first_line(record.message)
        title += f": {outcome}" + (f" — {reason}" if reason else "")
    xfail = all(r.xfail for r in records)
    cached = all(r.cached for r in records)  # --vibe-cache answered it: nothing was asked now
    if cached:
        text += " (cached)"
        title += " (answered from the response cache)"
    css = h(f"cell {outcome}" + (" xfail" if xfail else ""))
    anchor = next((anchors[key] for r in records if (key := anchor_key(run, r)) in anchors), None)
    shown = f'<a href="#{anchor}">{h(text)}</a>' if anchor else h(text)
    flag = (" data-xfail" if xfail else "") + (" data-cached" if cached else "")
    return f'<td class="{css}" data-outcome="{h(outcome)}"{flag} title="{h(title)}">{shown}</td>'


def _repeated_outcome(records: Sequence[EvalRecord]) -> tuple[str, str]:
    """An eval over its repeats: its outcome (passed, failed, error, mixed, skipped) and ``passed/runs``."""
    ran = [r for r in records if r.outcome != "skipped"]
    passed = sum(1 for r in ran if r.outcome == "passed")
    if not ran:
        outcome = "skipped"
    elif passed == len(ran):
        outcome = "passed"
    elif passed:
        outcome = "mixed"
    else:
        outcome = "error" if all(r.outcome == "error" for r in ran) else "failed"
    return outcome, f"{passed}/{len(ran)}"


def _notes(runs: Sequence[RunRecord]) -> list[str]:
    """The runs' notes and score errors, each once, with the configurations it is about."""
    about: dict[str, list[str]] = {}
    for run in runs:
        texts = [*run.notes, *([f"score error: {run.score_error}"] if run.score_error else [])]
        for text in dict.fromkeys(texts):
            about.setdefault(text, []).append(run.configuration)
    items = [
        f"<li><b>{h(', '.join(configurations))}</b>: {h(cut(text, 500))}</li>"
        for text, configurations in about.items()
    ]
    return ['<ul class="notes">', *items, "</ul>"] if items else []
