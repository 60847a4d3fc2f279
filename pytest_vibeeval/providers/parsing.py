"""What the agent output parsers share: reading JSON lines and documents, numbers with where
they were found, tool-call bookkeeping, and :class:`Malformed` for output of the wrong shape."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..loading.syntax_hints import json_error
from ..masking import keep_start
from ..results import ToolCallRecord
from ..surrogates import loads
from ..text_input import WIDE_PEEK
from .base import as_measure
from .output import read_utf8_output, refuse_wide

ERROR_CHARS = 500


class Malformed(ValueError):
    """The output does not have the shape the parser expects; the message says where and why."""


class AgentReported(Malformed):
    """Output of the right shape in which the agent reports that its run failed (an API error, a
    failed turn): the item is an error with that cause, whatever its steps did."""


# --- shared helpers -------------------------------------------------------------------------


def output_lines(path: Path) -> Iterator[bytes]:
    """The lines of the agent's output at ``path``, read one at a time; OutputError when it is
    UTF-16 or UTF-32 (:func:`~.output.refuse_wide`)."""
    with path.open("rb") as handle:
        refuse_wide(handle.read(WIDE_PEEK))
        handle.seek(0)
        yield from handle


def json_events(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines output, in order. Lines that do not start with ``{`` are
    not events (blank lines, notices some CLIs print) and are skipped; a line that starts like an
    event but is not valid JSON is an error."""
    for number, raw in enumerate(output_lines(path), 1):
        line = raw.strip()
        if not line.startswith(b"{"):
            continue
        try:
            event = loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            cut = "" if raw.endswith(b"\n") else "; the output ends inside it: was the run cut off?"
            problem = json_error(exc) if isinstance(exc, json.JSONDecodeError) else exc
            raise Malformed(f"line {number} is not valid JSON ({problem}){cut}") from None
        yield event


# A line that opens a JSON object, or an array (of objects); not a notice such as `[dotenv@17.2.1] …`.
_JSON_START = re.compile(rb"^[ \t]*(?:\{|\[[ \t]*(?:[{\]]|\r?$))", re.MULTILINE)


def json_start(path: Path) -> bytes:
    """The first line that opens a JSON object or array, stripped (notices before it are passed
    over); empty when there is none."""
    for raw in output_lines(path):
        if _JSON_START.match(raw):
            return raw.strip()
    return b""


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def json_document(path: Path) -> Any:
    """The JSON document of the output, from the first line that opens it (see :func:`json_start`)."""
    data = read_utf8_output(path)
    start = _JSON_START.search(data)
    try:
        return loads(data[start.start() :] if start and start.start() else data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        problem = json_error(exc) if isinstance(exc, json.JSONDecodeError) else exc
        raise Malformed(f"the output is not valid JSON ({problem})") from None


def checked_number(value: Any, where: str, *, whole: bool = False) -> Any:
    """A reported cost, token count or duration; None when absent."""
    if value is None:
        return None
    try:
        return as_measure(value, whole=whole)
    except ValueError as exc:
        raise Malformed(f"`{where}` holds {value!r}, not {exc}") from None


def checked_total(values: list[Any], where: str) -> int | None:
    """The sum of the token counts that were reported (None if none was)."""
    counts = [checked_number(v, where, whole=True) for v in values if v is not None]
    return sum(counts) if counts else None


def shorten(text: str) -> str:
    text = text.strip()
    return keep_start(text, ERROR_CHARS - 1)


def text_of(content: Any) -> str:
    """Tool output as text: a string, or a list of content blocks with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", "")) if isinstance(block, dict) else str(block) for block in content
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def no_final(event: str, seen: int) -> Malformed:
    return Malformed(
        f"no {event} among {seen} JSON lines; the output ends early (was the run cut off?) "
        "or is not this tool's format"
    )


class ToolCalls:
    """Tool calls in the order they were made, completed by id as their results arrive."""

    def __init__(self) -> None:
        self.records: list[ToolCallRecord] = []
        self.index: dict[str, int] = {}

    def start(self, call_id: Any, tool: str, batch: int | None = None) -> None:
        self.index[str(call_id)] = len(self.records)
        self.records.append(ToolCallRecord(tool=tool, batch=batch))

    def finish(
        self, call_id: Any, success: bool | None, error: str | None = None, duration: float | None = None
    ) -> None:
        position = self.index.get(str(call_id))
        if position is None:  # a result without its call: keep what is known
            self.start(call_id, "unknown")
            position = len(self.records) - 1
        self.records[position] = self.records[position].model_copy(
            update={
                "success": success,
                "error": shorten(error) if error and success is False else None,
                "duration": duration,
            }
        )
