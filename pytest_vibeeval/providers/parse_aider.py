"""aider's output: `aider --message ...` (text)."""

from __future__ import annotations

import re
from pathlib import Path

from ..results import ToolCallRecord
from .output import ParsedOutput

# --- aider: `aider --message ...` (text) --------------------------------------------------------

_AMOUNT = r"([\d.,]+k?)"
AIDER_TOKENS = re.compile(rf"^Tokens: {_AMOUNT} sent,(?: {_AMOUNT} cache \w+,)* {_AMOUNT} received\.")
AIDER_COST = re.compile(r"Cost: \$([\d.]+) (?:message|request), \$([\d.]+) session\.")
AIDER_APPLIED = "Applied edit to "
AIDER_EDIT_FAILED = "The LLM did not conform to the edit format."
# What aider prints before the model's answer (the version, models, repository and map).
AIDER_BANNER = (
    "Aider v", "Model:", "Main model:", "Weak model:", "Editor model:", "Git repo:", "Repo-map:",
    "Analytics ", "Detected dumb terminal", "Newer aider version", "Can't initialize", "Use /help",
    "Warning:", "You can skip this check",
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


def parse_aider(path: Path) -> ParsedOutput:
    """aider's text output: the answer without the start-up banner and the usage lines
    (``Tokens: 2.1k sent, 150 received.`` summed over the run's requests, as aider rounds them;
    ``Cost: $0.01 message, $0.03 session.``: the last session figure), and its edits as tool calls
    (``Applied edit to <file>``; ``The LLM did not conform to the edit format.`` a failed one)."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    start = 0
    while start < len(lines) and _aider_banner(lines[start]):
        start += 1
    kept: list[str] = []
    sent: list[int] = []
    received: list[int] = []
    cost: float | None = None
    calls: list[ToolCallRecord] = []
    for line in lines[start:]:
        tokens = AIDER_TOKENS.match(line)
        spent = AIDER_COST.search(line)
        if tokens:
            sent.append(_aider_count(tokens.group(1)))
            received.append(_aider_count(tokens.group(3)))
        if spent:
            cost = float(spent.group(2))
        if tokens or (spent and line.startswith("Cost:")):
            continue
        if line.startswith(AIDER_APPLIED):
            calls.append(ToolCallRecord(tool="edit", success=True))
        elif line.strip() == AIDER_EDIT_FAILED:
            calls.append(ToolCallRecord(tool="edit", success=False, error=AIDER_EDIT_FAILED))
        kept.append(line)
    return ParsedOutput(
        text="\n".join(kept).strip("\n"),
        cost=cost,
        input_tokens=sum(sent) if sent else None,
        output_tokens=sum(received) if received else None,
        tool_calls=tuple(calls),
    )
