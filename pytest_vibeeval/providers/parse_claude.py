"""Claude Code's output: `claude -p --output-format stream-json --verbose` (or json)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    text_of,
)

# --- Claude Code: `claude -p --output-format stream-json --verbose` (or json) -------------------


def _raise_reported_error(result: dict[str, Any]) -> None:
    """Raise :class:`Malformed` for a ``result`` that reports a failure: an API error (claude-code
    says ``"subtype": "success", "is_error": true, "api_error_status": 401``), or a run that ended
    otherwise than in success (``error_max_turns`` …)."""
    subtype = result.get("subtype")
    status = result.get("api_error_status")
    if result.get("is_error") is not True and subtype in (None, "success"):
        return
    detail = result.get("result") or result.get("errors") or ""
    said = f": {shorten(text_of(detail))}" if detail else ""
    if status is not None:
        raise AgentReported(f"the model API answered with status {status}{said}")
    turns = result.get("num_turns")
    ended = subtype if subtype not in (None, "success") else "an error"
    raise Malformed(  # e.g. error_max_turns: the work may be done; its steps decide a coding eval
        f"the run ended with {ended}" + (f" after {turns} turns" if isinstance(turns, int) else "") + said
    )


def parse_claude_code(path: Path) -> ParsedOutput:
    """Claude Code's stream-json events: ``assistant`` messages with ``tool_use`` blocks,
    ``user`` messages with their ``tool_result`` blocks (``is_error``), and the final ``result``
    (``result``, ``total_cost_usd``, ``usage``, ``duration_ms``). Also reads ``--output-format
    json``: the single result object, or with ``--verbose`` the array of all messages."""
    events: Any = json_events(path)
    if json_start(path).startswith(b"["):
        events = json_document(path)
        if not isinstance(events, list):
            raise Malformed("the output is not a JSON array of messages")
    calls = ToolCalls()
    batches: dict[object, int] = {}  # assistant message id → batch: parallel calls share a message
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
            # Claude Code writes each block of a message as an event of its own, the message's id repeated.
            message_id = message.get("id") if isinstance(message, dict) else None
            key: object = str(message_id) if message_id is not None else ("event", seen)
            batch = batches.setdefault(key, len(batches))
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    calls.start(block.get("id"), str(block.get("name") or "unknown"), batch)
                elif block.get("type") == "text":
                    texts.append(str(block.get("text", "")))
            if texts:
                last_text = "".join(texts)
        elif kind == "user" and isinstance(blocks, list):
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    failed = block.get("is_error") is True
                    calls.finish(
                        block.get("tool_use_id"), not failed, text_of(block.get("content")) or "failed"
                    )
        elif kind == "result":
            result = event
    if result is None:
        raise no_final("`result` event", seen)
    _raise_reported_error(result)
    text = result.get("result")
    if text is None:
        text = last_text
    if not isinstance(text, str):
        raise Malformed("the `result` event has no `result` text")
    usage = as_dict(result.get("usage"))
    input_parts = [
        usage.get(key) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    duration = checked_number(result.get("duration_ms"), "duration_ms")
    return ParsedOutput(
        text=text,
        cost=checked_number(result.get("total_cost_usd"), "total_cost_usd"),
        input_tokens=checked_total(input_parts, "usage.input_tokens"),
        output_tokens=checked_total([usage.get("output_tokens")], "usage.output_tokens"),
        cached_input_tokens=checked_total(
            [usage.get("cache_read_input_tokens")], "usage.cache_read_input_tokens"
        ),
        cache_write_tokens=checked_total(
            [usage.get("cache_creation_input_tokens")], "usage.cache_creation_input_tokens"
        ),
        latency=None if duration is None else duration / 1000,
        tool_calls=tuple(calls.records),
    )
