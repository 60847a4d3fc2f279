"""Read an agent's answer, cost, token counts and own latency from its stdout: text, JSON, or JSON lines."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bounded_read import UnreadableFile, read_bounded
from ..dotted import MISSING as _MISSING
from ..dotted import lookup
from ..models import OutputSpec
from ..results import ToolCallRecord
from ..surrogates import loads
from ..text_input import decode_text, wide_encoding
from .base import as_measure

# The most of an agent's stdout a parser reads: max_output_bytes, checked before, is normally far less.
MAX_OUTPUT_READ = 2 * 2**30


class OutputError(ValueError):
    """The output does not have the shape the configuration says it has, or (``agent_reported``)
    it says the agent's run failed."""

    def __init__(self, message: str, agent_reported: bool = False) -> None:
        super().__init__(message)
        self.agent_reported = agent_reported


@dataclass(frozen=True)
class ParsedOutput:
    text: str
    cost: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None  # of input_tokens, those read from the model's prompt cache
    cache_write_tokens: int | None = None  # of input_tokens, those written to it (Anthropic's accounting)
    latency: float | None = None  # seconds, as the agent reported it (output.latency_ms / 1000)
    tool_calls: tuple[ToolCallRecord, ...] = ()  # read by an output.parser
    # Requests to the model the agent retried, as its output says (codex's `Reconnecting... 1/5`);
    # None: its output does not report them.
    api_retries: int | None = None


def read_output(path: Path) -> bytes:
    """The agent's stdout at ``path``: a regular file of at most :data:`MAX_OUTPUT_READ` bytes, or
    OutputError (a FIFO or a link to a device planted in its place is not read)."""
    try:
        return read_bounded(path, MAX_OUTPUT_READ)
    except UnreadableFile as exc:
        raise OutputError(f"agent output {path}: {exc}") from None


def refuse_wide(start: bytes) -> None:
    """OutputError when the output that starts with ``start`` (its first
    :data:`~pytest_vibeeval.text_input.WIDE_PEEK` bytes suffice) is UTF-16 or UTF-32, refused by
    name as an input file is: read as UTF-8 it would be an answer of NULs and U+FFFD that fails its
    checks unexplained, or JSON lines that no parser finds."""
    wide = wide_encoding(start)
    if wide is not None:
        raise OutputError(f"the agent's output is {wide}, not UTF-8; make it print UTF-8")


def read_utf8_output(path: Path) -> bytes:
    """:func:`read_output`, or OutputError when it is UTF-16 or UTF-32 (:func:`refuse_wide`)."""
    data = read_output(path)
    refuse_wide(data)
    return data


def read_output_text(path: Path) -> str:
    """:func:`read_utf8_output` as text (undecodable bytes replaced, a leading byte-order mark
    dropped, line ends made ``\\n``)."""
    return decode_text(read_utf8_output(path), errors="replace")


def parse_output(path: Path, spec: OutputSpec) -> ParsedOutput:
    """Parse stdout at ``path`` (its size was already checked against the limit)."""
    if spec.format == "text":
        return ParsedOutput(read_output_text(path))
    if spec.format == "json":
        try:
            data = loads(read_output(path))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            from ..loading.syntax_hints import json_error  # output that does not parse

            problem = json_error(exc) if isinstance(exc, json.JSONDecodeError) else exc
            raise OutputError(
                f"output is not valid JSON ({problem}); the configuration says `format: json`"
            ) from None
        return _extract(data, spec)
    event = _last_event(path, spec)
    return _extract(event, spec)


def _last_event(path: Path, spec: OutputSpec) -> Any:
    assert spec.response
    last, events = None, 0
    for raw in read_utf8_output(path).split(b"\n"):
        raw = raw.strip()
        if not raw.startswith(b"{"):
            continue
        try:
            event = loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        events += 1
        if all(lookup(event, key) == value for key, value in spec.where.items()) and (
            lookup(event, spec.response) is not _MISSING
        ):
            last = event
    if last is None:
        where = f" with {spec.where}" if spec.where else ""
        raise OutputError(
            f"no JSON line{where} has `{spec.response}` ({events} JSON lines read); "
            "check `output.response` and `output.where` in the configuration"
        )
    return last


def _extract(data: Any, spec: OutputSpec) -> ParsedOutput:
    assert spec.response
    text = lookup(data, spec.response)
    if text is _MISSING:
        raise OutputError(f"the JSON output has no `{spec.response}` (output.response)")
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False)
    return ParsedOutput(
        text=text,
        cost=_number(data, spec.cost, "cost", float),
        input_tokens=_number(data, spec.input_tokens, "input_tokens", int),
        output_tokens=_number(data, spec.output_tokens, "output_tokens", int),
        latency=_latency(data, spec.latency_ms),
    )


def _latency(data: Any, path: str | None) -> float | None:
    """``output.latency_ms`` in seconds; None when not configured or absent (wall time is used)."""
    millis = _number(data, path, "latency_ms", float)
    return None if millis is None else millis / 1000


def _number(data: Any, path: str | None, field: str, kind: type[float]) -> Any:
    if path is None:
        return None
    value = shown = lookup(data, path)
    if value is _MISSING or value is None:
        return None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    try:
        return as_measure(value, whole=kind is int)
    except ValueError as exc:
        shown = shown if str(exc) != "a whole number" else value
        raise OutputError(f"output.{field} path `{path}` holds {shown!r}, not {exc}") from None
