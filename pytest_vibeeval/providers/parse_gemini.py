"""Gemini CLI's and llxprt's output: `--output-format stream-json` (or json)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from ..results import ToolCallRecord
from .output import ParsedOutput
from .parsing import (
    AgentReported,
    Malformed,
    ToolCalls,
    as_dict,
    checked_number,
    checked_total,
    json_document,
    json_events,
    json_start,
    no_final,
    shorten,
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
    calls = ToolCalls()
    started: dict[str, datetime | None] = {}
    chunks: list[str] = []
    result: dict[str, Any] | None = None
    last_error: str | None = None
    error_status: int | None = None
    seen = 0
    for event in json_events(path):
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
            message = as_dict(event.get("error")).get("message")
            begin, end = started.get(call_id), _timestamp(event.get("timestamp"))
            duration = (end - begin).total_seconds() if begin and end and end >= begin else None
            status = event.get("status")
            success = True if status == "success" else False if status == "error" else None
            calls.finish(call_id, success, str(message or "error"), duration)
        elif kind == "error":  # warnings, and errors that may end the run
            last_error = str(event.get("message") or "no message")
            status = event.get("status")  # llxprt's: the model API's HTTP status
            error_status = status if isinstance(status, int) and not isinstance(status, bool) else None
        elif kind == "result":
            result = event
    if result is None:
        if last_error is not None:
            said = "an error" if error_status is None else f"an error (status {error_status})"
            raise AgentReported(f"the run reported {said} and no `result` event: {shorten(last_error)}")
        raise no_final("`result` event", seen)
    if result.get("status") == "error":
        message = as_dict(result.get("error")).get("message") or "no message"
        raise AgentReported(f"the run ended with an error: {shorten(str(message))}")
    stats = as_dict(result.get("stats"))
    duration = checked_number(stats.get("duration_ms"), "stats.duration_ms")
    return ParsedOutput(
        text="".join(chunks),
        input_tokens=checked_total([stats.get("input_tokens")], "stats.input_tokens"),
        output_tokens=checked_total([stats.get("output_tokens")], "stats.output_tokens"),
        latency=None if duration is None else duration / 1000,
        tool_calls=tuple(calls.records),
    )


def _gemini_json(path: Path) -> ParsedOutput:
    data = json_document(path)
    if not isinstance(data, dict):
        raise Malformed("the output is not a JSON object")
    error = data.get("error")
    if isinstance(error, dict):
        raise Malformed(f"the run ended with an error: {shorten(str(error.get('message') or error))}")
    text = data.get("response")
    if not isinstance(text, str):
        raise Malformed("the JSON output has no `response` text")
    stats = as_dict(data.get("stats"))
    tokens = [as_dict(as_dict(model).get("tokens")) for model in as_dict(stats.get("models")).values()]
    by_name = as_dict(as_dict(stats.get("tools")).get("byName"))
    records: list[ToolCallRecord] = []
    for name, counts in by_name.items():  # only counts per tool: one record per counted call
        if isinstance(counts, dict):
            ok = checked_number(counts.get("success"), f"stats.tools.byName.{name}.success", whole=True) or 0
            bad = checked_number(counts.get("fail"), f"stats.tools.byName.{name}.fail", whole=True) or 0
            records += [ToolCallRecord(tool=name, success=True) for _ in range(ok)]
            records += [ToolCallRecord(tool=name, success=False) for _ in range(bad)]
    return ParsedOutput(
        text=text,
        input_tokens=checked_total([t.get("prompt") for t in tokens], "stats.models.*.tokens.prompt"),
        output_tokens=checked_total(
            [t.get("candidates") for t in tokens], "stats.models.*.tokens.candidates"
        ),
        tool_calls=tuple(records),
    )


def parse_gemini(path: Path) -> ParsedOutput:
    """Gemini CLI's stream-json events: assistant ``message`` chunks (joined: the response),
    ``tool_use`` / ``tool_result`` (``status``, ``error``; the duration from their timestamps)
    and the final ``result`` (``stats``: tokens, ``duration_ms``); a run without one that reported
    an ``error`` (llxprt's, on an API error, with the HTTP ``status``) is the agent's failure.
    Also reads ``--output-format json`` (``response``, ``stats.models``; tool calls only as counts
    per tool, so its records carry no error or duration). Notices before the JSON are passed over;
    output without any JSON is read as a stream without its ``result`` event (empty: the run was
    cut off)."""
    start = json_start(path)
    try:
        first = json.loads(start)
    except (json.JSONDecodeError, UnicodeDecodeError):  # e.g. "{" of a pretty-printed document
        first = None
    if not start or (isinstance(first, dict) and "type" in first):
        return _gemini_stream(path)
    return _gemini_json(path)
