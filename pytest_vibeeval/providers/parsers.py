"""Parsers of agent CLIs' own output formats (``output.parser``), where dotted paths cannot say
where the answer is: the final response, cost, tokens, the agent's latency and its tool calls.

Each parser takes the path of the agent's stdout (already checked against ``max_output_bytes``)
and returns a :class:`ParsedOutput`, or raises :class:`Malformed` saying what is wrong; the CLI
provider turns that into the item's error, naming the parser. JSON lines are read one at a time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..models import OutputSpec
from ..registry import Registry
from ..results import ToolCallRecord
from .base import as_measure
from .output import OutputError, ParsedOutput, parse_output

Parser = Callable[[Path], ParsedOutput]

ERROR_CHARS = 500


class Malformed(ValueError):
    """The output does not have the shape the parser expects; the message says where and why."""


class ParserRegistry(Registry[Parser]):
    """Output parsers by name: what ``output.parser: NAME`` reads an agent's stdout with (see
    :func:`builtin_parsers`; plugins add theirs with ``pytest_vibeeval_register_parsers``)."""

    kind = "output parser"

    def register(self, name: str, parser: Parser) -> None:
        """Make ``output.parser: name`` read stdout with ``parser(path) -> ParsedOutput``."""
        self._add(name, parser)


def parse_with(name: str, path: Path, parsers: Mapping[str, Parser] | None = None) -> ParsedOutput:
    """Run the parser ``name`` on the output at ``path``; :class:`OutputError` names the parser."""
    try:
        return (BUILTIN_PARSERS if parsers is None else parsers)[name](path)
    except Malformed as exc:
        raise OutputError(f"output.parser {name!r}: {exc}") from None


def parse_agent_output(
    path: Path, spec: OutputSpec, parsers: Mapping[str, Parser] | None = None
) -> ParsedOutput:
    """An agent's stdout at ``path`` read as its configuration's ``output`` says: with the named
    parser (from ``parsers``, the built-ins by default), else as text, JSON or JSON lines; raises
    :class:`OutputError`."""
    return parse_with(spec.parser, path, parsers) if spec.parser else parse_output(path, spec)


# --- shared helpers -------------------------------------------------------------------------


def _events(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines output, in order. Lines that do not start with ``{`` are
    not events (blank lines, notices some CLIs print) and are skipped; a line that starts like an
    event but is not valid JSON is an error."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            line = raw.strip()
            if not line.startswith(b"{"):
                continue
            try:
                event = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                cut = "" if raw.endswith(b"\n") else "; the output ends inside it: was the run cut off?"
                raise Malformed(f"line {number} is not valid JSON ({exc}){cut}") from None
            yield event


def _first_line(path: Path) -> bytes:
    """The first line that is not blank, stripped."""
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                return raw.strip()
    return b""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _document(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Malformed(f"the output is not valid JSON ({exc})") from None


def _number(value: Any, where: str, *, whole: bool = False) -> Any:
    """A reported cost, token count or duration; None when absent."""
    if value is None:
        return None
    try:
        return as_measure(value, whole=whole)
    except ValueError as exc:
        raise Malformed(f"`{where}` holds {value!r}, not {exc}") from None


def _total(values: list[Any], where: str) -> int | None:
    """The sum of the token counts that were reported (None if none was)."""
    counts = [_number(v, where, whole=True) for v in values if v is not None]
    return sum(counts) if counts else None


def _shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def _text_of(content: Any) -> str:
    """Tool output as text: a string, or a list of content blocks with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", "")) if isinstance(block, dict) else str(block) for block in content
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _no_final(event: str, seen: int) -> Malformed:
    return Malformed(
        f"no {event} among {seen} JSON lines; the output ends early (was the run cut off?) "
        "or is not this tool's format"
    )


class _Calls:
    """Tool calls in the order they were made, completed by id as their results arrive."""

    def __init__(self) -> None:
        self.records: list[ToolCallRecord] = []
        self.index: dict[str, int] = {}

    def start(self, call_id: Any, tool: str) -> None:
        self.index[str(call_id)] = len(self.records)
        self.records.append(ToolCallRecord(tool=tool))

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
                "error": _shorten(error) if error and success is False else None,
                "duration": duration,
            }
        )


# --- Claude Code: `claude -p --output-format stream-json --verbose` (or json) -------------------


def parse_claude_code(path: Path) -> ParsedOutput:
    """Claude Code's stream-json events: ``assistant`` messages with ``tool_use`` blocks,
    ``user`` messages with their ``tool_result`` blocks (``is_error``), and the final ``result``
    (``result``, ``total_cost_usd``, ``usage``, ``duration_ms``). Also reads ``--output-format
    json``: the single result object, or with ``--verbose`` the array of all messages."""
    events: Any = _events(path)
    if _first_line(path).startswith(b"["):
        events = _document(path)
        if not isinstance(events, list):
            raise Malformed("the output is not a JSON array of messages")
    calls = _Calls()
    result: dict[str, Any] | None = None
    last_text: str | None = None
    seen = 0
    for event in events:
        if not isinstance(event, dict):
            continue
        seen += 1
        kind = event.get("type")
        message = event.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        if kind == "assistant" and isinstance(blocks, list):
            texts = []
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    calls.start(block.get("id"), str(block.get("name") or "unknown"))
                elif block.get("type") == "text":
                    texts.append(str(block.get("text", "")))
            if texts:
                last_text = "".join(texts)
        elif kind == "user" and isinstance(blocks, list):
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    failed = block.get("is_error") is True
                    calls.finish(
                        block.get("tool_use_id"), not failed, _text_of(block.get("content")) or "failed"
                    )
        elif kind == "result":
            result = event
    if result is None:
        raise _no_final("`result` event", seen)
    subtype = result.get("subtype")
    if result.get("is_error") is True or (subtype is not None and subtype != "success"):
        detail = result.get("result") or result.get("errors") or ""
        turns = result.get("num_turns")
        raise Malformed(
            f"the run ended with {subtype or 'an error'}"
            + (f" after {turns} turns" if isinstance(turns, int) else "")
            + (f": {_shorten(_text_of(detail))}" if detail else "")
        )
    text = result.get("result")
    if text is None:
        text = last_text
    if not isinstance(text, str):
        raise Malformed("the `result` event has no `result` text")
    usage = _dict(result.get("usage"))
    input_parts = [
        usage.get(key) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    duration = _number(result.get("duration_ms"), "duration_ms")
    return ParsedOutput(
        text=text,
        cost=_number(result.get("total_cost_usd"), "total_cost_usd"),
        input_tokens=_total(input_parts, "usage.input_tokens"),
        output_tokens=_total([usage.get("output_tokens")], "usage.output_tokens"),
        latency=None if duration is None else duration / 1000,
        tool_calls=tuple(calls.records),
    )


# --- Codex: `codex exec --json` ----------------------------------------------------------------


def _codex_outcome(item: dict[str, Any]) -> tuple[bool | None, str | None]:
    """Whether a completed tool item succeeded, and the error it reports."""
    kind, status = item.get("type"), item.get("status")
    if status == "in_progress":
        return None, None
    if kind == "command_execution":
        exit_code = item.get("exit_code")
        if status == "declined":
            return False, "declined"
        if status == "failed" or (isinstance(exit_code, int) and exit_code != 0):
            output = str(item.get("aggregated_output") or "").strip()
            tail = output[-300:] if output else ""
            return False, f"exit code {exit_code}" + (f": {tail}" if tail else "")
        return True, None
    if status == "failed":
        error = item.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        return False, str(message or "failed")
    return True, None


CODEX_TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call")


def _codex_tool(item: dict[str, Any]) -> str:
    kind = str(item.get("type"))
    if kind == "mcp_tool_call":
        return f"mcp__{item.get('server')}__{item.get('tool')}"
    if kind == "collab_tool_call":
        return str(item.get("tool") or kind)
    return kind


def parse_codex(path: Path) -> ParsedOutput:
    """``codex exec --json`` events: ``item.started`` / ``item.completed`` for commands, file
    changes, MCP tool calls and web searches, ``agent_message`` items (the last one is the
    response), ``turn.completed`` with ``usage``, ``turn.failed`` and ``error``."""
    calls = _Calls()
    response: str | None = None
    inputs: list[Any] = []
    outputs: list[Any] = []
    failure: str | None = None
    stream_error: str | None = None
    turns = seen = 0
    for event in _events(path):
        seen += 1
        kind = event.get("type")
        item = event.get("item")
        if kind in ("item.started", "item.updated", "item.completed") and isinstance(item, dict):
            item_kind = item.get("type")
            if item_kind in CODEX_TOOL_ITEMS:
                if str(item.get("id")) not in calls.index:
                    calls.start(item.get("id"), _codex_tool(item))
                if kind == "item.completed":
                    success, error = _codex_outcome(item)
                    calls.finish(item.get("id"), success, error)
            elif item_kind == "agent_message" and kind == "item.completed":
                response = str(item.get("text") or "")
        elif kind == "turn.completed":
            turns += 1
            usage = _dict(event.get("usage"))
            inputs.append(usage.get("input_tokens"))
            outputs.append(usage.get("output_tokens"))
        elif kind == "turn.failed":
            failure = f"turn.failed: {_dict(event.get('error')).get('message') or 'no message'}"
        elif kind == "error" and failure is None:  # also sent for retries the turn may survive
            stream_error = f"error: {event.get('message') or 'no message'}"
    if failure is not None:
        raise Malformed(f"codex reported {_shorten(failure)}")
    if turns == 0:
        if stream_error is not None:
            raise Malformed(f"codex reported {_shorten(stream_error)} and no turn completed")
        raise _no_final("`turn.completed` event", seen)
    if response is None:
        raise Malformed("the turn completed without an `agent_message` item: there is no response")
    return ParsedOutput(
        text=response,
        input_tokens=_total(inputs, "usage.input_tokens"),
        output_tokens=_total(outputs, "usage.output_tokens"),
        tool_calls=tuple(calls.records),
    )


# --- Gemini CLI and llxprt: `--output-format stream-json` (or json) -------------------------------


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _gemini_stream(path: Path) -> ParsedOutput:
    calls = _Calls()
    started: dict[str, datetime | None] = {}
    chunks: list[str] = []
    result: dict[str, Any] | None = None
    last_error: str | None = None
    seen = 0
    for event in _events(path):
        seen += 1
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            chunks.append(str(event.get("content") or ""))
        elif kind == "tool_use":
            call_id = str(event.get("tool_id"))
            calls.start(call_id, str(event.get("tool_name") or "unknown"))
            started[call_id] = _timestamp(event.get("timestamp"))
        elif kind == "tool_result":
            call_id = str(event.get("tool_id"))
            message = _dict(event.get("error")).get("message")
            begin, end = started.get(call_id), _timestamp(event.get("timestamp"))
            duration = (end - begin).total_seconds() if begin and end and end >= begin else None
            status = event.get("status")
            success = True if status == "success" else False if status == "error" else None
            calls.finish(call_id, success, str(message or "error"), duration)
        elif kind == "error":  # warnings, and errors that may end the run
            last_error = str(event.get("message") or "no message")
        elif kind == "result":
            result = event
    if result is None:
        if last_error is not None:
            raise Malformed(f"the run reported an error and no `result` event: {_shorten(last_error)}")
        raise _no_final("`result` event", seen)
    if result.get("status") == "error":
        message = _dict(result.get("error")).get("message") or "no message"
        raise Malformed(f"the run ended with an error: {_shorten(str(message))}")
    stats = _dict(result.get("stats"))
    duration = _number(stats.get("duration_ms"), "stats.duration_ms")
    return ParsedOutput(
        text="".join(chunks),
        input_tokens=_total([stats.get("input_tokens")], "stats.input_tokens"),
        output_tokens=_total([stats.get("output_tokens")], "stats.output_tokens"),
        latency=None if duration is None else duration / 1000,
        tool_calls=tuple(calls.records),
    )


def _gemini_json(path: Path) -> ParsedOutput:
    data = _document(path)
    if not isinstance(data, dict):
        raise Malformed("the output is not a JSON object")
    error = data.get("error")
    if isinstance(error, dict):
        raise Malformed(f"the run ended with an error: {_shorten(str(error.get('message') or error))}")
    text = data.get("response")
    if not isinstance(text, str):
        raise Malformed("the JSON output has no `response` text")
    stats = _dict(data.get("stats"))
    tokens = [_dict(_dict(model).get("tokens")) for model in _dict(stats.get("models")).values()]
    by_name = _dict(_dict(stats.get("tools")).get("byName"))
    records: list[ToolCallRecord] = []
    for name, counts in by_name.items():  # only counts per tool: one record per counted call
        if isinstance(counts, dict):
            ok = _number(counts.get("success"), f"stats.tools.byName.{name}.success", whole=True) or 0
            bad = _number(counts.get("fail"), f"stats.tools.byName.{name}.fail", whole=True) or 0
            records += [ToolCallRecord(tool=name, success=True) for _ in range(ok)]
            records += [ToolCallRecord(tool=name, success=False) for _ in range(bad)]
    return ParsedOutput(
        text=text,
        input_tokens=_total([t.get("prompt") for t in tokens], "stats.models.*.tokens.prompt"),
        output_tokens=_total([t.get("candidates") for t in tokens], "stats.models.*.tokens.candidates"),
        tool_calls=tuple(records),
    )


def parse_gemini(path: Path) -> ParsedOutput:
    """Gemini CLI's stream-json events: assistant ``message`` chunks (joined: the response),
    ``tool_use`` / ``tool_result`` (``status``, ``error``; the duration from their timestamps)
    and the final ``result`` (``stats``: tokens, ``duration_ms``). Also reads ``--output-format
    json`` (``response``, ``stats.models``; tool calls only as counts per tool, so its records
    carry no error or duration)."""
    try:
        first = json.loads(_first_line(path))
    except (json.JSONDecodeError, UnicodeDecodeError):  # e.g. "{" of a pretty-printed document
        first = None
    if isinstance(first, dict) and "type" in first:
        return _gemini_stream(path)
    return _gemini_json(path)


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


BUILTIN_PARSERS: Mapping[str, Parser] = MappingProxyType(
    {
        "claude-code": parse_claude_code,
        "codex": parse_codex,
        "gemini": parse_gemini,
        "llxprt": parse_gemini,  # a fork of Gemini CLI, with its output formats
        "aider": parse_aider,
    }
)


def builtin_parsers() -> ParserRegistry:
    """A registry holding the built-in parsers only."""
    parsers = ParserRegistry()
    for name, parser in BUILTIN_PARSERS.items():
        parsers.register(name, parser)
    return parsers
