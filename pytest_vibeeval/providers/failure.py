"""What an agent CLI that failed said: its parser's reading of stdout (the real cause is often
there: a ``turn.failed`` event, an ``is_error`` result) and the tails of stdout and stderr."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..models import OutputSpec
from ..process import tail_lines
from .output import OutputError
from .parsers import Parser, parse_agent_output

TAIL_LINES = 20
TAIL_BYTES = 8192  # a tail of JSON lines can hold one huge event (claude-code's `init`)


def parser_note(stdout: Path, output: OutputSpec, parsers: Mapping[str, Parser] | None = None) -> str | None:
    """The configuration's parser's complaint about the output of a failed run (its real cause,
    where the agent reported one), or None when there is no parser or it reads the output fine."""
    if not output.parser:
        return None
    try:
        parse_agent_output(stdout, output, parsers)
    except (OutputError, OSError) as exc:
        return str(exc)
    return None


def failure_report(
    headline: str,
    stdout: Path,
    stderr: Path,
    output: OutputSpec,
    parsers: Mapping[str, Parser] | None = None,
) -> str:
    """``headline`` (``claude exited with code 1``), the parser's note, and the last lines of
    stdout and stderr, each named with its file."""
    lines = [headline]
    note = parser_note(stdout, output, parsers)
    if note:
        lines.append(note)
    lines += tail_lines((("stdout", stdout), ("stderr", stderr)), TAIL_LINES, TAIL_BYTES)
    return "\n".join(lines)
