"""The HTML report's failure blocks: why each failed eval failed, with the tail of the step that
failed and its logs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..bounded_read import UnreadableFile
from ..process import read_tail
from ..results import EvalRecord, RunRecord, StepRecord
from ..text_input import text_lines
from .format import failed_check
from .html_text import FAILURES_SHOWN, LOG_BYTES, LOG_LIMIT, LOG_LINES, Counter, cut, cut_start, first_line, h


def failure_blocks(
    runs: Sequence[RunRecord], numbering: Counter, anchors: dict[tuple[int, str], str]
) -> list[str]:
    """The first failures of ``runs``, each with its anchor in ``anchors`` under
    :func:`anchor_key` (a record is read anew each time on the controller, so not by identity)."""
    failed = 0
    shown: list[tuple[RunRecord, EvalRecord]] = []
    for run in runs:
        for record in run.evals:
            if record.outcome in ("failed", "error"):
                failed += 1
                if len(shown) < FAILURES_SHOWN:
                    shown.append((run, record))
    if not failed:
        return []
    lines = [f"<h3>Failures ({failed})</h3>"]
    for run, record in shown:
        anchor = f"failure-{numbering.next()}"
        anchors[anchor_key(run, record)] = anchor
        lines.extend(_failure(anchor, run, record))
    if failed > FAILURES_SHOWN:
        lines.append(f'<p class="muted">… and {failed - FAILURES_SHOWN} more not shown.</p>')
    return lines


def anchor_key(run: RunRecord, record: EvalRecord) -> tuple[int, str]:
    """Which record of which run a failure block is about: the run, and the item's node id."""
    return id(run), record.nodeid


def _failure(anchor: str, run: RunRecord, record: EvalRecord) -> list[str]:
    which = f"{record.name} × {run.configuration}" + (f" (repeat {record.repeat})" if record.repeat else "")
    expected = ' <span class="muted">(expected: xfail)</span>' if record.xfail else ""
    reason = failure_reason(record)
    lines = [
        f'<details class="failure" id="{anchor}" data-outcome="{h(record.outcome)}">',
        f'<summary><b>{h(which)}</b> <span class="bad">{h(record.outcome)}</span>{expected}'
        + (f' <span class="muted">{h(reason)}</span>' if reason else "")
        + "</summary>",
    ]
    if record.message:
        lines.append(_block("message", cut(record.message)))
    if record.turns:
        lines.append(_block("conversation", cut(conversation_text(record))))
    elif record.response:
        lines.append(_block("response", cut(record.response)))
    failing = _failing_step(record)
    if failing is not None:
        lines.extend(_step_logs(failing, record.message or ""))
    lines.append("</details>")
    return lines


def failure_reason(record: EvalRecord) -> str:
    """One line on why it failed: the first failed check (and its turn), or the message's first line."""
    found = failed_check(record) if record.outcome == "failed" or record.turns else None
    return first_line(found or record.message)


def conversation_text(record: EvalRecord) -> str:
    """Each turn of a conversation: its outcome, the user's message and the answer."""
    lines = []
    for turn in record.turns:
        lines.append(f"turn {turn.turn} ({turn.outcome.replace('_', ' ')})")
        lines.extend(f"  user: {line}" for line in text_lines(turn.prompt))
        if turn.response is not None:
            lines.extend(f"  assistant: {line}" for line in text_lines(turn.response))
    return "\n".join(lines)


def _block(label: str, text: str) -> str:
    return f'<p class="label">{h(label)}</p><pre>{h(text)}</pre>'


def _failing_step(record: EvalRecord) -> StepRecord | None:
    """The first step that exited non-zero or timed out, if any."""
    return next((s for s in record.steps if s.timed_out or s.exit_code != 0), None)


def _step_logs(step: StepRecord, message: str) -> list[str]:
    """The tail of the failing step's output (a ``.stdout`` log's ``.stderr`` beside it too), except
    files whose tail the message already quotes."""
    what = f"{step.phase} step {step.name!r}: " + (
        "timed out" if step.timed_out else f"exit code {step.exit_code}"
    )
    lines = [f'<p class="label">{h(what)}</p>']
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
            lines.append(f'<p class="muted mono">last {LOG_LINES} lines of {h(path)}</p>')
            lines.append(f"<pre>{h(tail)}</pre>")
    if quoted:
        lines.append('<p class="muted">the message above quotes the tail of its output</p>')
    lines.extend(f'<p class="muted mono">{h(problem)}</p>' for problem in dict.fromkeys(problems))
    if len(lines) == 1:
        lines.append(f'<p class="muted mono">no output in {h(paths[0])}</p>')
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
    except (OSError, ValueError, UnreadableFile) as exc:
        return "", f"{path} could not be read: {exc}"
    if "\x00" in text or text.count("\ufffd") > max(8, len(text) // 10):
        return "", f"{path} looks binary: not shown"
    return cut_start(text.rstrip("\n"), LOG_LIMIT), None
