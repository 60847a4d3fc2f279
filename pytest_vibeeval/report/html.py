"""A self-contained HTML report of a results file: one page, inline CSS and JS, no network.

Per suite (runs grouped by ``source``): the configurations side by side, a bar chart of their scores,
an evals × configurations pass/fail grid and, for each failed or errored eval, a collapsible block
with its message, its response and the tail of the failing step's output. Everything taken from the
results is HTML-escaped, and long texts are cut, so a megabyte response does not make a megabyte page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from ..process import read_tail
from ..results import EvalRecord, ResultsFile, RunRecord, StepRecord
from ..scoring.formula import show_formula
from .format import decimal, money, number, score, seconds
from .resultsfile import write_atomic

__all__ = ["render_html", "write_html"]

TEXT_LIMIT = 4000  # characters of a message or a response
LOG_LINES = 40  # lines of a step's output
LOG_BYTES = 16384  # read at most this much from the end of a log file
LOG_LIMIT = 6000  # characters of a log tail shown
FAILURES_SHOWN = 100  # failure blocks per suite; the rest are counted
OUTCOME_LABEL = {"passed": "pass", "failed": "fail", "error": "error", "skipped": "skip"}

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

CSS = """
:root { --fg: #1f2328; --muted: #656d76; --bg: #fff; --line: #d0d7de; --soft: #f6f8fa;
  --pass: #1a7f37; --pass-bg: #dafbe1; --fail: #cf222e; --fail-bg: #ffebe9; --warn: #9a6700;
  --warn-bg: #fff8c5; --bar: #0969da; --neg: #cf222e; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --muted: #8d96a0; --bg: #0d1117; --line: #30363d; --soft: #161b22;
    --pass: #3fb950; --pass-bg: #12261e; --fail: #f85149; --fail-bg: #2d1517; --warn: #d29922;
    --warn-bg: #272115; --bar: #2f81f7; --neg: #f85149; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 16px 24px 48px; color: var(--fg);
  background: var(--bg); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 32px 0 2px; padding-top: 12px; border-top: 1px solid var(--line); }
h3 { font-size: 14px; margin: 18px 0 6px; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
.muted { color: var(--muted); }
.meta { margin: 0; color: var(--muted); }
.banner { padding: 6px 10px; border-radius: 6px; margin: 8px 0; }
.banner.warn { background: var(--warn-bg); color: var(--warn); }
.banner.bad { background: var(--fail-bg); color: var(--fail); }
table { border-collapse: collapse; margin: 4px 0; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
thead th { background: var(--soft); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.good { color: var(--pass); } .bad { color: var(--fail); } .warn { color: var(--warn); }
.overview { display: flex; flex-wrap: wrap; gap: 8px 32px; align-items: flex-start; }
.chart { display: grid; grid-template-columns: minmax(80px, max-content) minmax(160px, 1fr) max-content;
  gap: 4px 10px; align-items: center; margin: 4px 0; flex: 1 1 380px; max-width: 640px; padding-top: 8px; }
.track { position: relative; height: 14px; background: var(--soft); border-radius: 3px; }
.bar { position: absolute; top: 0; bottom: 0; background: var(--bar); border-radius: 3px; }
.bar.neg { background: var(--neg); }
.zero { position: absolute; top: -2px; bottom: -2px; width: 1px; background: var(--muted); }
.vibe-grid td.cell { text-align: center; min-width: 56px; font-weight: 600; }
.vibe-grid td.cell a { color: inherit; text-decoration: none; display: block; }
.vibe-grid th[scope=row] { font-weight: normal; max-width: 360px; overflow-wrap: anywhere; }
.cell.passed { background: var(--pass-bg); color: var(--pass); }
.cell.failed, .cell.error { background: var(--fail-bg); color: var(--fail); }
.cell.mixed { background: var(--warn-bg); color: var(--warn); }
.cell.skipped, .cell.absent { color: var(--muted); }
.cell.xfail { opacity: 0.7; font-style: italic; }
details.failure { border: 1px solid var(--line); border-radius: 6px; margin: 4px 0; padding: 0 10px; }
details.failure > summary { cursor: pointer; padding: 5px 0; overflow-wrap: anywhere; }
details.failure[open] > summary { border-bottom: 1px solid var(--line); margin-bottom: 6px; }
details.failure:target { outline: 2px solid var(--bar); }
pre { background: var(--soft); padding: 8px; border-radius: 4px; overflow: auto; max-height: 320px;
  white-space: pre-wrap; overflow-wrap: anywhere; margin: 2px 0 8px; }
.label { font-weight: 600; margin: 6px 0 0; }
ul.notes { margin: 4px 0; padding-left: 20px; color: var(--muted); }
"""

# Opens the failure block a grid cell links to (a fragment alone does not open a <details>).
JS = """
(function () {
  function openTarget() {
    var id = location.hash.slice(1);
    var target = id ? document.getElementById(id) : null;
    if (target && target.tagName === "DETAILS") { target.open = true; }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
"""


def write_html(results: ResultsFile, path: Path) -> None:
    """Write the report of ``results`` to ``path`` atomically (temp file + rename)."""
    write_atomic(path, render_html(results))


def render_html(results: ResultsFile) -> str:
    """The report of ``results`` as one self-contained HTML page."""
    suites = _by_source(results.runs)
    numbering = _Counter()
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
            f"<title>vibeeval report · {_h(results.started_at)}</title>",
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


@dataclass
class _Counter:
    """Numbers the failure blocks across the page, so their ids are unique."""

    value: int = 0

    def next(self) -> int:
        self.value += 1
        return self.value


# -- text ------------------------------------------------------------------------------------------


def _clean(text: str) -> str:
    """``text`` safe to write as UTF-8 HTML: no lone surrogates, no control characters but tab/newline."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return _CONTROL.sub("\ufffd", text)


def _h(value: object) -> str:
    """HTML-escaped text (quotes too, so it is safe in attributes)."""
    return escape(_clean(str(value)), quote=True)


def _cut(text: str, limit: int = TEXT_LIMIT) -> str:
    """The start of ``text``, with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [{len(text) - limit} more characters not shown]"


def _cut_start(text: str, limit: int) -> str:
    """The end of ``text`` (a log's tail), with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"[{len(text) - limit} earlier characters not shown] …\n{text[-limit:]}"


def _first_line(text: str | None, limit: int = 160) -> str:
    lines = (text or "").strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- numbers ---------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 2) -> str:
    return decimal(value, digits, grouped=True)


def _count(value: Any) -> str:
    found = number(value)
    return "?" if found is None else f"{found:.0f}"


# -- page parts ------------------------------------------------------------------------------------


def _by_source(runs: Iterable[RunRecord]) -> list[list[RunRecord]]:
    """Runs grouped by suite file, in the order they first appear."""
    groups: dict[str, list[RunRecord]] = {}
    for run in runs:
        groups.setdefault(run.source, []).append(run)
    return list(groups.values())


def _header(results: ResultsFile, suites: Sequence[Sequence[RunRecord]]) -> list[str]:
    records = [record for run in results.runs for record in run.evals]
    counts = {o: sum(1 for r in records if r.outcome == o) for o in ("passed", "failed", "error", "skipped")}
    tally = " · ".join(f"{n} {outcome}" for outcome, n in counts.items() if n) or "no evals"
    expected = sum(1 for r in records if r.xfail and r.outcome in ("failed", "error"))
    if expected:
        tally += f" ({expected} expected: xfail)"
    lines = [
        "<header>",
        "<h1>vibeeval report</h1>",
        f'<p class="meta">started <time>{_h(results.started_at)}</time> · finished '
        f"<time>{_h(results.finished_at)}</time> · {len(suites)} suite(s), {len(results.runs)} run(s)"
        f" · {_h(tally)}</p>",
    ]
    if results.interrupted:
        lines.append(
            '<p class="banner warn" id="interrupted">Interrupted: the session stopped early; '
            "some evals did not run.</p>"
        )
    if results.load_errors:
        lines.append(
            f'<div class="banner bad" id="load-errors"><b>{len(results.load_errors)} suite file(s) '
            "failed to load</b> (their evals did not run):"
        )
        lines.append("<pre>" + _h(_cut("\n".join(results.load_errors))) + "</pre></div>")
    lines.append("</header>")
    return lines


def _suite(index: int, runs: Sequence[RunRecord], numbering: _Counter) -> list[str]:
    first = runs[0]
    names = sorted({run.suite for run in runs})
    lines = [
        f'<section class="suite" id="suite-{index}" data-source="{_h(first.source)}">',
        f"<h2>{_h(', '.join(names))}</h2>",
        f'<p class="meta mono">{_h(first.source)}</p>',
    ]
    formulas = {show_formula(r.score_formula, r.score_canonical, r.score_preset) for r in runs}
    if len(formulas) == 1:
        lines.append(f'<p class="meta">score: <code>{_h(formulas.pop())}</code></p>')
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
    lines.append("".join(f"<th>{_h(cell)}</th>" for cell in head) + "</tr></thead><tbody>")
    for run in runs:
        cells = [_config_cell(run), *_metric_cells(run)]
        if repeated:
            cells.append(f'<td class="num">{_h(_mean_ci(run))}</td>')
        if baseline:
            cells.append(_baseline_cell(run))
        if gated:
            cells.append(_gate_cell(run))
        if per_run_formula:
            formula = show_formula(run.score_formula, run.score_canonical, run.score_preset)
            cells.append(f"<td><code>{_h(formula)}</code></td>")
        lines.append(f'<tr data-configuration="{_h(run.configuration)}">{"".join(cells)}</tr>')
    lines.append("</tbody></table>")
    return lines


def _config_cell(run: RunRecord) -> str:
    name = f' <span class="muted">({_h(run.configuration_name)})</span>' if run.configuration_name else ""
    return f"<td><b>{_h(run.configuration)}</b>{name}</td>"


def _score_text(run: RunRecord) -> str:
    text = score(run.score)
    return f"{text} ({run.grade})" if run.grade and run.score is not None else text


def _metric_cells(run: RunRecord) -> list[str]:
    m = run.metrics
    why = f' title="{_h(run.score_error)}"' if run.score_error else ""
    success = number(m.get("success_pct"))
    skipped = number(m.get("skipped"))
    passed = f"{_count(m.get('passed'))}/{_count(m.get('total'))}"
    if skipped:
        passed += f" ({skipped:.0f} skipped)"
    return [
        f'<td class="num score"{why}>{_h(_score_text(run))}</td>',
        f'<td class="num">{"n/a" if success is None else f"{success:.1f}%"}</td>',
        f'<td class="num">{_h(passed)}</td>',
        f'<td class="num">{_h(money(m.get("total_cost")))}</td>',
        f'<td class="num">{_h(seconds(m.get("avg_latency")))}</td>',
    ]


def _mean_ci(run: RunRecord) -> str:
    if run.repeats <= 1:
        return ""
    mean = _fmt(run.score_mean)
    ci = run.score_ci95
    if ci and len(ci) == 2 and run.score_mean is not None:
        return f"{mean} ± {_fmt((ci[1] - ci[0]) / 2)} [{_fmt(ci[0])}, {_fmt(ci[1])}] ×{run.repeats}"
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
        f'<td class="{css.get(base.label, "muted")}" title="{_h(title)}">'
        f'{_h(base.label.replace("_", " "))}{_h(delta)} <span class="muted">(was {_h(score(base.score))})'
        "</span></td>"
    )


def _gate_cell(run: RunRecord) -> str:
    if run.gate is None:
        return "<td></td>"
    verdict, css = ("passed", "good") if run.gate.passed else ("FAILED", "bad")
    return f'<td class="{css}" title="{_h(run.gate.message)}">{verdict}</td>'


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
            f'<span class="mono">{_h(run.configuration)}</span><div class="track">{track}</div>'
            f'<span class="num">{_h(_score_text(run))}</span>'
        )
    lines.append("</div>")
    return lines


# -- the grid and the failures ---------------------------------------------------------------------


def _eval_names(runs: Sequence[RunRecord]) -> list[str]:
    """Every eval of the suite, in the order the runs list them."""
    names: dict[str, None] = {}
    for run in runs:
        for record in run.evals:
            names.setdefault(record.name, None)
    return list(names)


def _grid(index: int, runs: Sequence[RunRecord], numbering: _Counter) -> list[str]:
    names = _eval_names(runs)
    anchors: dict[int, str] = {}  # id(record) → the id of its failure block
    failures = _failure_blocks(runs, numbering, anchors)
    by_name = [_records_by_name(run) for run in runs]
    head = "".join(f"<th>{_h(run.configuration)}</th>" for run in runs)
    lines = [
        "<h3>Evals × configurations</h3>",
        f'<table class="vibe-grid" id="grid-{index}"><thead><tr><th>eval</th>{head}</tr></thead><tbody>',
    ]
    for name in names:
        cells = "".join(
            _cell(name, run, records.get(name, []), anchors)
            for run, records in zip(runs, by_name, strict=True)
        )
        lines.append(f'<tr><th scope="row">{_h(name)}</th>{cells}</tr>')
    lines.append("</tbody></table>")
    return lines + failures


def _records_by_name(run: RunRecord) -> dict[str, list[EvalRecord]]:
    grouped: dict[str, list[EvalRecord]] = {}
    for record in run.evals:
        grouped.setdefault(record.name, []).append(record)
    return grouped


def _cell(name: str, run: RunRecord, records: Sequence[EvalRecord], anchors: dict[int, str]) -> str:
    """One eval × configuration: its outcome (``passed/runs`` over repeats), linked to its failure."""
    title = f"{name} × {run.configuration}"
    if not records:
        return f'<td class="cell absent" data-outcome="absent" title="{_h(title)}: not run">—</td>'
    if run.repeats > 1 or len(records) > 1:
        outcome, text = _repeated_outcome(records)
        title += f": passed {text} runs"
    else:
        record = records[0]
        outcome, text = record.outcome, OUTCOME_LABEL.get(record.outcome, record.outcome)
        if record.xfail:
            text = "xfail" if outcome in ("failed", "error") else "xpass"
        reason = _reason(record) if outcome in ("failed", "error") else _first_line(record.message)
        title += f": {outcome}" + (f" — {reason}" if reason else "")
    xfail = all(r.xfail for r in records)
    css = _h(f"cell {outcome}" + (" xfail" if xfail else ""))
    anchor = next((anchors[id(r)] for r in records if id(r) in anchors), None)
    shown = f'<a href="#{anchor}">{_h(text)}</a>' if anchor else _h(text)
    flag = " data-xfail" if xfail else ""
    return f'<td class="{css}" data-outcome="{_h(outcome)}"{flag} title="{_h(title)}">{shown}</td>'


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


def _failure_blocks(runs: Sequence[RunRecord], numbering: _Counter, anchors: dict[int, str]) -> list[str]:
    failed = [(run, r) for run in runs for r in run.evals if r.outcome in ("failed", "error")]
    if not failed:
        return []
    lines = [f"<h3>Failures ({len(failed)})</h3>"]
    for run, record in failed[:FAILURES_SHOWN]:
        anchor = f"failure-{numbering.next()}"
        anchors[id(record)] = anchor
        lines.extend(_failure(anchor, run, record))
    if len(failed) > FAILURES_SHOWN:
        lines.append(f'<p class="muted">… and {len(failed) - FAILURES_SHOWN} more not shown.</p>')
    return lines


def _failure(anchor: str, run: RunRecord, record: EvalRecord) -> list[str]:
    which = f"{record.name} × {run.configuration}" + (f" (repeat {record.repeat})" if record.repeat else "")
    expected = ' <span class="muted">(expected: xfail)</span>' if record.xfail else ""
    reason = _reason(record)
    lines = [
        f'<details class="failure" id="{anchor}" data-outcome="{_h(record.outcome)}">',
        f'<summary><b>{_h(which)}</b> <span class="bad">{_h(record.outcome)}</span>{expected}'
        + (f' <span class="muted">{_h(reason)}</span>' if reason else "")
        + "</summary>",
    ]
    if record.message:
        lines.append(_block("message", _cut(record.message)))
    if record.response:
        lines.append(_block("response", _cut(record.response)))
    failing = _failing_step(record)
    if failing is not None:
        lines.extend(_step_logs(failing, record.message or ""))
    lines.append("</details>")
    return lines


def _reason(record: EvalRecord) -> str:
    """One line on why it failed: the first failed check, or the message's first line."""
    if record.outcome == "failed":
        for check in record.checks:
            if check.passed is False:
                return _first_line(f"{check.type}: {check.message}")
    return _first_line(record.message)


def _block(label: str, text: str) -> str:
    return f'<p class="label">{_h(label)}</p><pre>{_h(text)}</pre>'


def _failing_step(record: EvalRecord) -> StepRecord | None:
    """The first step that exited non-zero or timed out, if any."""
    return next((s for s in record.steps if s.timed_out or s.exit_code != 0), None)


def _step_logs(step: StepRecord, message: str) -> list[str]:
    """The tail of the failing step's output (a ``.stdout`` log's ``.stderr`` beside it too), except
    files whose tail the message already quotes."""
    what = f"{step.phase} step {step.name!r}: " + (
        "timed out" if step.timed_out else f"exit code {step.exit_code}"
    )
    lines = [f'<p class="label">{_h(what)}</p>']
    if not step.log:
        return [*lines, '<p class="muted">no output file recorded</p>']
    paths = [Path(step.log), *_stderr_beside(Path(step.log))]
    quoted = [path for path in paths if str(path) in message]
    problems: list[str] = []
    for path in paths:
        if path in quoted:
            continue
        tail, problem = _log_tail(path)
        if problem:
            problems.append(problem)
        elif tail:
            lines.append(f'<p class="muted mono">last {LOG_LINES} lines of {_h(path)}</p>')
            lines.append(f"<pre>{_h(tail)}</pre>")
    if quoted:
        lines.append('<p class="muted">the message above quotes the tail of its output</p>')
    lines.extend(f'<p class="muted mono">{_h(problem)}</p>' for problem in dict.fromkeys(problems))
    if len(lines) == 1:
        lines.append(f'<p class="muted mono">no output in {_h(paths[0])}</p>')
    return lines


def _stderr_beside(log: Path) -> list[Path]:
    """The ``.stderr`` file written beside a ``.stdout`` log, if it is there."""
    stderr = log.with_suffix(".stderr")
    try:
        return [stderr] if log.suffix == ".stdout" and stderr.exists() else []
    except (OSError, ValueError):
        return []


def _log_tail(path: Path) -> tuple[str, str | None]:
    """The file's last lines ("" if it is empty), or why they cannot be shown."""
    try:
        if not path.exists():
            return "", f"{path} no longer exists"
        if not path.is_file():  # never open a FIFO or a device: reading could block
            return "", f"{path} is not a regular file"
        text = read_tail(path, LOG_LINES, LOG_BYTES)
    except (OSError, ValueError) as exc:
        return "", f"{path} could not be read: {exc}"
    if "\x00" in text or text.count("\ufffd") > max(8, len(text) // 10):
        return "", f"{path} looks binary: not shown"
    return _cut_start(text.rstrip("\n"), LOG_LIMIT), None


def _notes(runs: Sequence[RunRecord]) -> list[str]:
    """The runs' notes and score errors, each once, with the configurations it is about."""
    about: dict[str, list[str]] = {}
    for run in runs:
        texts = [*run.notes, *([f"score error: {run.score_error}"] if run.score_error else [])]
        for text in dict.fromkeys(texts):
            about.setdefault(text, []).append(run.configuration)
    items = [
        f"<li><b>{_h(', '.join(configurations))}</b>: {_h(_cut(text, 500))}</li>"
        for text, configurations in about.items()
    ]
    return ['<ul class="notes">', *items, "</ul>"] if items else []
