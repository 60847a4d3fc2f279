"""Codex's output: `codex exec --json`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..masking import keep_end
from .output import ParsedOutput
from .parsing import (
    AgentReported,
    Malformed,
    ToolCalls,
    as_dict,
    checked_total,
    json_events,
    no_final,
    shorten,
)

# --- Codex: `codex exec --json` ----------------------------------------------------------------

CODEX_RECONNECTING = re.compile(r"Reconnecting\.\.\. \d+/\d+")
"""The message of an ``error`` event codex sends when it retries its request to the model."""


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
            tail = keep_end(output, 300)
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
    response), ``turn.completed`` with ``usage``, ``turn.failed`` and ``error`` (``Reconnecting...
    1/5``: a retried request, counted in ``api_retries``)."""
    calls = ToolCalls()
    response: str | None = None
    inputs: list[Any] = []
    outputs: list[Any] = []
    cached: list[Any] = []  # cached_input_tokens: part of input_tokens
    failure: str | None = None
    stream_error: str | None = None
    turns = seen = retries = 0
    for event in json_events(path):
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
            usage = as_dict(event.get("usage"))
            inputs.append(usage.get("input_tokens"))
            outputs.append(usage.get("output_tokens"))
            cached.append(usage.get("cached_input_tokens"))
        elif kind == "turn.failed":
            failure = f"turn.failed: {as_dict(event.get('error')).get('message') or 'no message'}"
        elif kind == "error" and failure is None:  # also sent for retries the turn may survive
            stream_error = f"error: {event.get('message') or 'no message'}"
            retries += CODEX_RECONNECTING.match(str(event.get("message") or "")) is not None
    if failure is not None:
        raise AgentReported(f"codex reported {shorten(failure)}")
    if turns == 0:
        if stream_error is not None:
            raise AgentReported(f"codex reported {shorten(stream_error)} and no turn completed")
        raise no_final("`turn.completed` event", seen)
    if response is None:
        raise Malformed("the turn completed without an `agent_message` item: there is no response")
    return ParsedOutput(
        text=response,
        input_tokens=checked_total(inputs, "usage.input_tokens"),
        output_tokens=checked_total(outputs, "usage.output_tokens"),
        cached_input_tokens=checked_total(cached, "usage.cached_input_tokens"),
        tool_calls=tuple(calls.records),
        api_retries=retries,
    )


# codex's stderr when it cannot set up the helpers its own sandbox runs commands through, and what
# a command run without them then fails with (shown to the model, so only in what it says).
NO_SANDBOX_HELPERS = "could not create PATH aliases"
NO_SANDBOX_FAILURE = "codex-linux-sandbox"
PEEK_BYTES = 65536


def _head(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return handle.read(PEEK_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _mentions(path: Path, needle: bytes) -> bool:
    """Whether the file holds ``needle``, read in chunks (an agent's stdout can be large)."""
    tail = b""
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(PEEK_BYTES):
                if needle in tail + chunk:
                    return True
                tail = chunk[-len(needle) :]
    except OSError:
        return False
    return False


def own_sandbox_problem(argv: list[str], stderr: Path, stdout: Path | None = None) -> str | None:
    """Why codex's own sandbox could not run commands in this run, or None. codex then exits 0
    and shows the failure (``bwrap: execvp codex-linux-sandbox``) only to the model: every shell
    command fails. Its sandbox is used unless ``--sandbox danger-full-access`` is given; a run
    that ran no command (an MCP tool, a plain answer) is not affected, so with ``stdout`` the
    failure must show there too."""
    mode = next((argv[i + 1] for i in range(len(argv) - 1) if argv[i] == "--sandbox"), None)
    if mode == "danger-full-access" or "--dangerously-bypass-approvals-and-sandbox" in argv:
        return None
    line = next((text for text in _head(stderr).splitlines() if NO_SANDBOX_HELPERS in text), None)
    if line is None or (stdout is not None and not _mentions(stdout, NO_SANDBOX_FAILURE.encode())):
        return None
    return (
        f"codex could not set up its own sandbox, so every shell command it ran failed ({shorten(line)}); "
        "give codex a CODEX_HOME outside /tmp, or turn its sandbox off inside one you trust: "
        'args `--sandbox danger-full-access` (see "codex, gemini and sandboxes" in the docs: '
        "docs/configurations.md#agent-presets)"
    )
