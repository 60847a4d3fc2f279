"""aider's output: `aider --message ...` (text)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..results import ToolCallRecord
from ..text_input import text_lines
from .output import ParsedOutput, read_output_text
from .parsing import AgentReported, shorten

# --- aider: `aider --message ...` (text) --------------------------------------------------------

_AMOUNT = r"([\d.,]+k?)"
AIDER_TOKENS = re.compile(rf"^Tokens: {_AMOUNT} sent,(?: {_AMOUNT} cache \w+,)* {_AMOUNT} received\.")
AIDER_COST = re.compile(r"Cost: \$([\d.]+) (?:message|request), \$([\d.]+) session\.")
AIDER_APPLIED = "Applied edit to "
AIDER_EDIT_FAILED = "The LLM did not conform to the edit format."
AIDER_NO_MATCH = re.compile(r"^# \d+ SEARCH/REPLACE blocks? failed to match!")
AIDER_EDIT_ERRORS_URL = "https://aider.chat/docs/troubleshooting/edit-errors"
# The parts of aider's report on SEARCH/REPLACE blocks that failed to match (aider's
# editblock_coder), after its `# N SEARCH/REPLACE blocks failed to match!` header: each failed
# block (`## SearchReplaceNoExactMatch: …` then the block), its hints, and the closing advice.
AIDER_FAILED_BLOCK = "## "
AIDER_BLOCK_END = ">>>>>>> REPLACE"
AIDER_DID_YOU_MEAN = "Did you mean to match some of these actual lines from "
AIDER_ALREADY_THERE = "Are you sure you need this SEARCH/REPLACE block?"
AIDER_REPORT_PARAGRAPHS = ("The SEARCH section must exactly match", "# The other ")
# An API error as aider prints it (it still exits 0): `litellm.AuthenticationError: …`, followed by
# the wrapped rest of the message and aider's advice, up to a blank line or its retry notice.
AIDER_API_ERROR = re.compile(r"^litellm\.\w+(Error|Exception)\b")
AIDER_VERSION = "Aider v"
# What aider may print before its banner: a fresh HOME's analytics notice, an offline model-metadata
# fetch's warnings.
AIDER_PREAMBLE_END = 40
# What aider prints before the model's answer (the version, models, repository and map).
AIDER_BANNER = (
    "Aider v", "Model:", "Main model:", "Weak model:", "Editor model:", "Git repo:", "Repo-map:",
    "Analytics ", "Detected dumb terminal", "Newer aider version", "Can't initialize", "Use /help",
    "Warning:", "You can skip this check", "https://aider.chat/HISTORY.html",
)  # fmt: skip


def _aider_banner(line: str) -> bool:
    text = line.strip()
    return (
        not text
        or text.startswith(AIDER_BANNER)
        or (text.startswith("Added ") and text.endswith(" to the chat."))
    )


def _aider_count(text: str) -> int:
    """aider's rounded token figure: ``1,234``, ``3.5k`` or ``12k``."""
    text = text.replace(",", "")
    return round(float(text[:-1]) * 1000) if text.endswith("k") else int(float(text))


def _answer_start(lines: list[str]) -> int:
    """The index of the first line after aider's own preamble: what comes before its version line
    (notices, offline warnings; looked for in the first lines only) and the banner after it."""
    head = lines[:AIDER_PREAMBLE_END]
    start = next((i + 1 for i, line in enumerate(head) if line.startswith(AIDER_VERSION)), 0)
    while start < len(lines) and _aider_banner(lines[start]):
        start += 1
    return start


def _api_error(lines: list[str], start: int) -> str:
    """The error aider printed from line ``start``: its lines up to a blank line or a retry notice."""
    said = []
    for line in lines[start:]:
        if not line.strip() or line.startswith("Retrying in "):
            break
        said.append(line.strip())
    return " ".join(said)


def _skip_past(lines: list[str], at: int, ends: Callable[[str], bool]) -> int:
    """The index after the first line from ``at`` for which ``ends`` holds (the end when none does)."""
    while at < len(lines) and not ends(lines[at]):
        at += 1
    return min(at + 1, len(lines))


def _no_match_report(lines: list[str], start: int) -> tuple[int, str]:
    """Read aider's report on blocks that failed to match, whose header is ``lines[start]``: the
    index of the first line after it (where the model's next answer starts) and what it says (the
    header and each failed block's headline)."""
    said = [lines[start].strip()]
    at = start + 1
    while at < len(lines):
        line = lines[at].strip()
        if not line:
            at += 1
        elif line.startswith(AIDER_FAILED_BLOCK):
            head = at
            at = _skip_past(lines, at, lambda text: text.startswith(AIDER_BLOCK_END))
            headline = []
            for text in lines[head:at]:
                if text.startswith("<<<<<<<"):
                    break
                headline.append(text.strip())
            said.append(" ".join(headline))
        elif line.startswith(AIDER_DID_YOU_MEAN):
            opening = next((i for i in range(at + 1, len(lines)) if lines[i].strip()), len(lines))
            fence = lines[opening].strip() if opening < len(lines) else ""
            closing = (i for i in range(opening + 1, len(lines)) if lines[i].strip() == fence)
            at = next(closing, len(lines) - 1) + 1
        elif line.startswith(AIDER_ALREADY_THERE):
            at = min(at + 2, len(lines))  # and `The REPLACE lines are already in <file>!`
        elif line.startswith(AIDER_REPORT_PARAGRAPHS):
            at = _skip_past(lines, at, lambda text: not text.strip())
        else:
            break
    return at, "\n".join(said)


def parse_aider(path: Path) -> ParsedOutput:
    """aider's text output: the answer without aider's preamble (notices, warnings, the banner)
    and the usage lines (``Tokens: 2.1k sent, 150 received.`` summed over the run's requests, as
    aider rounds them; ``Cost: $0.0072 message, $0.01 session.``: the per-message figures summed,
    since aider rounds the session's to cents from $0.01), and its edits as tool calls
    (``Applied edit to <file>``; a block that did not conform or match: a failed one). An API
    error after the last answer (aider exits 0 on those) is raised as :class:`Malformed`."""
    lines = text_lines(read_output_text(path))
    start = _answer_start(lines)
    kept: list[str] = []
    sent: list[int] = []
    received: list[int] = []
    costs: list[float] = []
    calls: list[ToolCallRecord] = []
    error: str | None = None
    number = start - 1
    while number + 1 < len(lines):
        number += 1
        line = lines[number]
        tokens = AIDER_TOKENS.match(line)
        spent = AIDER_COST.search(line)
        if tokens:
            sent.append(_aider_count(tokens.group(1)))
            received.append(_aider_count(tokens.group(3)))
            error = None  # an answer came after it: a retry succeeded
        if spent:
            costs.append(float(spent.group(1)))
        if tokens or (spent and line.startswith("Cost:")):
            continue
        if AIDER_API_ERROR.match(line):
            error = _api_error(lines, number)
        elif line.startswith(AIDER_APPLIED):
            calls.append(ToolCallRecord(tool="edit", success=True))
        elif line.strip() == AIDER_EDIT_FAILED:  # aider's words, not the model's: left out of the answer
            calls.append(ToolCallRecord(tool="edit", success=False, error=AIDER_EDIT_FAILED))
            continue
        elif line.startswith(AIDER_EDIT_ERRORS_URL) and calls and calls[-1].error == AIDER_EDIT_FAILED:
            continue
        elif AIDER_NO_MATCH.match(line) and calls and calls[-1].error == AIDER_EDIT_FAILED:
            after, said = _no_match_report(lines, number)
            calls[-1] = calls[-1].model_copy(update={"error": shorten(said)})  # why it did not conform
            number = after - 1
            continue
        kept.append(line)
    if error is not None:
        raise AgentReported(f"aider reported an API error: {shorten(error)}")
    return ParsedOutput(
        text="\n".join(kept).strip("\n"),
        cost=round(sum(costs), 10) if costs else None,
        input_tokens=sum(sent) if sent else None,
        output_tokens=sum(received) if received else None,
        tool_calls=tuple(calls),
    )
