"""A scripted model API server for the real agent CLIs, on 127.0.0.1, built on the tests' chat
server (:class:`chat_server.ChatServer`): the subset of four APIs that the CLIs call.

- Anthropic Messages (``POST …/v1/messages``, streamed or not; ``count_tokens``): claude-code,
  llxprt (its ``anthropic`` provider)
- OpenAI Responses (``POST …/responses``, streamed): codex
- OpenAI chat completions (``POST …/chat/completions``): aider
- Gemini (``POST …/models/<model>:streamGenerateContent`` / ``:generateContent`` / ``:countTokens``):
  gemini-cli

The scenario is the first part of the path: a CLI pointed at ``<url>/<scenario>`` gets it, so
parallel tests share one server. Scenarios (:data:`SCENARIOS`): ``plain`` answers; ``write`` calls
the CLI's file-writing tool (``hello.txt``) and then answers; ``fail`` calls a tool that fails
(reading a file that does not exist) and then answers; ``coding`` writes ``solution.py`` (what a
coding eval's grade step checks) and then answers; ``mcp`` calls the MCP tool ``list_issues`` and
answers with its result; ``unauthorized`` answers 401 and ``broken`` 500, each API in its own error
shape, telling clients not to retry.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

from chat_server import ChatServer

SCENARIOS = ("plain", "write", "fail", "coding", "mcp", "unauthorized", "broken")
PLAIN_ANSWER = "The answer is 4."
WRITTEN_FILE, WRITTEN_TEXT = "hello.txt", "hello from the tool\n"
SOLUTION_FILE = "solution.py"
SOLUTION_TEXT = "def add(a, b):\n    return a + b\n"
MISSING_FILE = "no-such-file.txt"
MCP_TOOL = "list_issues"
AFTER_TOOL = "Done: the tool said"
USAGE_IN, USAGE_OUT = 120, 30  # tokens reported for every answer
# the usage block of an OpenAI Responses API answer (codex reads it)
RESPONSES_USAGE = {
    "input_tokens": USAGE_IN,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": USAGE_OUT,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": USAGE_IN + USAGE_OUT,
}
ERROR_TEXT = {401: "invalid api key for the scripted server", 500: "the scripted server broke"}


@dataclass(frozen=True)
class Turn:
    """The model's next move: a tool call (``tool`` with ``arguments``) or an answer (``text``)."""

    text: str = ""
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    raw_input: str | None = None  # a freeform tool's input (codex's apply_patch)


def _patch_add(path: str, text: str) -> str:
    lines = "".join(f"+{line}\n" for line in text.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def _write_call(tools: list[str], cwd: str | None, path: str, text: str) -> Turn:
    """A call of whichever file-writing tool the CLI offers."""
    where = f"{cwd}/{path}" if cwd else path
    if "Write" in tools:
        return Turn(tool="Write", arguments={"file_path": where, "content": text})
    if "write_file" in tools:
        return Turn(tool="write_file", arguments={"file_path": path, "content": text})
    if "replace" in tools:  # llxprt's only editing tool under auto_edit: "" creates the file
        return Turn(tool="replace", arguments={"file_path": where, "old_string": "", "new_string": text})
    if "apply_patch" in tools:
        return Turn(tool="apply_patch", raw_input=_patch_add(path, text))
    if "exec_command" in tools:
        return Turn(tool="exec_command", arguments={"cmd": f"printf %s {shlex.quote(text)} > {path}"})
    raise LookupError(f"no file-writing tool among {tools}")


def _failing_call(tools: list[str], cwd: str | None) -> Turn:
    """A call of a tool that fails: reading (or patching) a file that does not exist."""
    if "Read" in tools:
        return Turn(tool="Read", arguments={"file_path": f"{cwd or '/nonexistent'}/{MISSING_FILE}"})
    if "read_file" in tools:  # llxprt's wants an absolute path, gemini's takes a relative one
        where = f"{cwd}/{MISSING_FILE}" if cwd else MISSING_FILE
        return Turn(tool="read_file", arguments={"file_path": where})
    if "apply_patch" in tools:
        patch = f"*** Begin Patch\n*** Update File: {MISSING_FILE}\n@@\n-old\n+new\n*** End Patch\n"
        return Turn(tool="apply_patch", raw_input=patch)
    if "exec_command" in tools:
        return Turn(tool="exec_command", arguments={"cmd": f"cat {MISSING_FILE}"})
    raise LookupError(f"no file-reading tool among {tools}")


def next_turn(scenario: str, tools: list[str], results: list[str], cwd: str | None) -> Turn:
    """The scripted model: what to do given the tools offered and the tool results so far."""
    if scenario == "plain" or (results and scenario != "mcp"):
        said = f" {results[-1][:200]}" if results else ""
        return Turn(text=PLAIN_ANSWER if not results else f"{AFTER_TOOL}:{said}")
    if scenario == "write":
        return _write_call(tools, cwd, WRITTEN_FILE, WRITTEN_TEXT)
    if scenario == "coding":
        return _write_call(tools, cwd, SOLUTION_FILE, SOLUTION_TEXT)
    if scenario == "fail":
        return _failing_call(tools, cwd)
    if scenario == "mcp":
        if results:
            return Turn(text=f"{AFTER_TOOL}: {results[-1][:200]}")
        name = next((tool for tool in tools if tool.endswith(MCP_TOOL)), None)
        if name is None:
            return Turn(text=f"no MCP tool among {tools}")
        return Turn(tool=name, arguments={"team": "ENG"})
    raise LookupError(f"unknown scenario {scenario!r}")


_CWD = re.compile(r"(?:working directory|workspace root): (/\S+)", re.IGNORECASE)


def working_directory(texts: Iterable[str]) -> str | None:
    """The working directory a CLI states in its system prompt (claude-code's Write and llxprt's
    replace want an absolute path)."""
    for text in texts:
        match = _CWD.search(text)
        if match:
            return match.group(1)
    return None


def sse(events: Iterable[tuple[str | None, Any]]) -> bytes:
    """Server-sent events: ``event:`` lines where named, ``data:`` the JSON."""
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class AgentApiServer(ChatServer):
    """The chat server with the agent CLIs' APIs, routed by path (see the module's docstring)."""

    NO_RETRY: ClassVar[dict[str, str]] = {"x-should-retry": "false", "Retry-After": "0"}

    def handle_get(self, handler: BaseHTTPRequestHandler) -> None:
        _, rest = self.split(handler.path)
        if rest.rstrip("/").endswith("/models"):
            models = [{"id": "scripted", "object": "model", "name": "models/scripted"}]
            self.send_raw(handler, *self.json_reply(200, {"data": models, "models": models}))
            return
        super().handle_get(handler)

    @staticmethod
    def split(path: str) -> tuple[str, str]:
        """The scenario and the API path of a request path ``/<scenario>/<api path>``."""
        parts = path.split("?", 1)[0].lstrip("/").split("/", 1)
        return parts[0], "/" + (parts[1] if len(parts) > 1 else "")

    def handle(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        scenario, path = self.split(handler.path)
        with self.lock:
            self.requests.append({"body": body, "headers": dict(handler.headers), "path": handler.path})
        if scenario not in SCENARIOS:
            self.send_raw(handler, *self.json_reply(404, {"error": {"message": f"no scenario {scenario}"}}))
            return
        try:
            self.route(handler, scenario, path, body)
        except LookupError as exc:  # the script has no move for this request: say so to the CLI
            self.send_raw(handler, *self.json_reply(400, {"error": {"message": str(exc)}}, self.NO_RETRY))

    def route(self, handler: BaseHTTPRequestHandler, scenario: str, path: str, body: dict[str, Any]) -> None:
        if path.endswith("/chat/completions"):
            self.chat(handler, scenario, body)
        elif path.endswith("/messages/count_tokens"):
            self.send_raw(handler, *self.json_reply(200, {"input_tokens": USAGE_IN}))
        elif path.endswith("/messages"):
            self.anthropic(handler, scenario, body)
        elif path.endswith("/responses"):
            self.responses(handler, scenario, body)
        elif ":countTokens" in path:
            self.send_raw(handler, *self.json_reply(200, {"totalTokens": USAGE_IN}))
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self.gemini(handler, scenario, body, stream=":stream" in path)
        else:
            self.send_raw(handler, *self.json_reply(404, {"error": {"message": f"no API at {path}"}}))

    def failed(self, handler: BaseHTTPRequestHandler, scenario: str, shape: str) -> bool:
        """Answer the error scenarios in the API's error ``shape``; False for the others."""
        status = {"unauthorized": 401, "broken": 500}.get(scenario)
        if status is None:
            return False
        message = ERROR_TEXT[status]
        if shape == "anthropic":
            kind = "authentication_error" if status == 401 else "api_error"
            data: Any = {"type": "error", "error": {"type": kind, "message": message}}
        elif shape == "gemini":
            state = "UNAUTHENTICATED" if status == 401 else "INTERNAL"
            data = {"error": {"code": status, "message": message, "status": state}}
        else:
            kind = "invalid_api_key" if status == 401 else "server_error"
            data = {"error": {"message": message, "type": kind, "code": kind}}
        self.send_raw(handler, *self.json_reply(status, data, self.NO_RETRY))
        return True

    def send_sse(self, handler: BaseHTTPRequestHandler, payload: bytes) -> None:
        self.send_raw(handler, 200, payload, "text/event-stream", {"Cache-Control": "no-cache"})

    # --- Anthropic Messages (claude-code) ---------------------------------------------------------

    def anthropic(self, handler: BaseHTTPRequestHandler, scenario: str, body: dict[str, Any]) -> None:
        if self.failed(handler, scenario, "anthropic"):
            return
        tools = [str(tool.get("name")) for tool in body.get("tools") or [] if isinstance(tool, dict)]
        results = [
            " ".join(_strings(block.get("content")))
            for message in body.get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        cwd = working_directory(_strings(body.get("system")))
        turn = next_turn(scenario, tools, results, cwd) if tools else Turn(text=PLAIN_ANSWER)
        if turn.tool:
            block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_{len(results)}", "name": turn.tool}
            block["input"] = turn.arguments or {}
        else:
            block = {"type": "text", "text": turn.text}
        stop = "tool_use" if turn.tool else "end_turn"
        usage = {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT}
        message = {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "scripted"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            self.send_raw(handler, *self.json_reply(200, message))
            return
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        if turn.tool:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(turn.arguments or {})}
        else:
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": turn.text}
        events = [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opened}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    # cumulative, as the API sends it now (llxprt takes it for the whole usage)
                    "usage": usage,
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        self.send_sse(handler, sse(events))

    # --- OpenAI Responses (codex) -----------------------------------------------------------------

    def responses(self, handler: BaseHTTPRequestHandler, scenario: str, body: dict[str, Any]) -> None:
        if self.failed(handler, scenario, "openai"):
            return
        # codex offers an MCP server's tools as a namespace (``mcp__<server>``) of functions; the
        # model calls one by its name and the namespace.
        namespaces: dict[str, tuple[str, str]] = {}
        tools = []
        for tool in body.get("tools") or []:
            if not isinstance(tool, dict):
                continue
            for child in tool.get("tools") or [] if tool.get("type") == "namespace" else []:
                if isinstance(child, dict):
                    full = f"{tool.get('name')}__{child.get('name')}"
                    namespaces[full] = (str(tool.get("name")), str(child.get("name")))
                    tools.append(full)
            tools.append(str(tool.get("name")))
        items = [item for item in body.get("input") or [] if isinstance(item, dict)]
        results = [
            " ".join(_strings(item.get("output")))
            for item in items
            if item.get("type") in ("function_call_output", "custom_tool_call_output")
        ]
        turn = next_turn(scenario, tools, results, None)
        number = len(self.requests)
        if turn.tool and turn.raw_input is not None:
            item: dict[str, Any] = {
                "type": "custom_tool_call",
                "id": f"ctc_{number}",
                "call_id": f"call_{number}",
                "name": turn.tool,
                "input": turn.raw_input,
                "status": "completed",
            }
        elif turn.tool:
            namespace, name = namespaces.get(turn.tool, (None, turn.tool))
            item = {
                "type": "function_call",
                "id": f"fc_{number}",
                "call_id": f"call_{number}",
                "name": name,
                "arguments": json.dumps(turn.arguments or {}),
                "status": "completed",
            }
            if namespace is not None:
                item["namespace"] = namespace
        else:
            content = [{"type": "output_text", "text": turn.text, "annotations": []}]
            item = {
                "type": "message",
                "id": f"msg_{number}",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        response = {"id": f"resp_{number}", "object": "response", "status": "in_progress", "output": []}
        usage = RESPONSES_USAGE
        events: list[tuple[str | None, Any]] = [
            ("response.created", {"type": "response.created", "response": response}),
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": item},
            ),
        ]
        if not turn.tool:
            events.append(
                (
                    "response.output_text.delta",
                    {"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                     "content_index": 0, "delta": turn.text},
                )
            )  # fmt: skip
        done = {**response, "status": "completed", "output": [item], "usage": usage}
        events += [
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            ("response.completed", {"type": "response.completed", "response": done}),
        ]
        self.send_sse(handler, sse(events))

    # --- OpenAI chat completions (aider) ----------------------------------------------------------

    def chat(self, handler: BaseHTTPRequestHandler, scenario: str, body: dict[str, Any]) -> None:
        if self.failed(handler, scenario, "openai"):
            return
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        system = " ".join(_strings([m.get("content") for m in messages if m.get("role") == "system"]))
        last = " ".join(_strings([m.get("content") for m in messages if m.get("role") == "user"][-1:]))
        text = aider_reply(
            scenario, "SEARCH/REPLACE" in system, reflected=AIDER_REFLECTION.search(last) is not None
        )
        usage = {
            "prompt_tokens": USAGE_IN,
            "completion_tokens": USAGE_OUT,
            "total_tokens": USAGE_IN + USAGE_OUT,
        }
        message = {"role": "assistant", "content": text}
        data = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": usage,
        }
        self.send_raw(handler, *self.json_reply(200, data))

    # --- Gemini (gemini-cli) ----------------------------------------------------------------------

    def gemini(
        self, handler: BaseHTTPRequestHandler, scenario: str, body: dict[str, Any], *, stream: bool
    ) -> None:
        if self.failed(handler, scenario, "gemini"):
            return
        tools = [
            str(declaration.get("name"))
            for tool in body.get("tools") or []
            for declaration in (tool.get("functionDeclarations") or [])
            if isinstance(declaration, dict)
        ]
        results = [
            json.dumps(part["functionResponse"].get("response"))
            for content in body.get("contents") or []
            for part in content.get("parts") or []
            if isinstance(part, dict) and "functionResponse" in part
        ]
        turn = next_turn(scenario, tools, results, None) if tools else Turn(text=PLAIN_ANSWER)
        part: dict[str, Any] = (
            {"functionCall": {"name": turn.tool, "args": turn.arguments or {}}}
            if turn.tool
            else {"text": turn.text}
        )
        data = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": USAGE_IN,
                "candidatesTokenCount": USAGE_OUT,
                "totalTokenCount": USAGE_IN + USAGE_OUT,
            },
            "modelVersion": "scripted",
        }
        if stream:
            self.send_sse(handler, sse([(None, data)]))
        else:
            self.send_raw(handler, *self.json_reply(200, data))


# What aider sends back after an edit that failed (its "reflection"), to the same model.
AIDER_REFLECTION = re.compile(r"failed to match|did not conform|SearchReplaceNoExactMatch|edit format", re.I)


def aider_reply(scenario: str, search_replace: bool, *, reflected: bool) -> str:
    """aider's model: an edit in the prompt's edit format (SEARCH/REPLACE or whole files); after
    aider reports a failed edit back, an answer."""
    if scenario in ("plain", "mcp") or reflected:
        return PLAIN_ANSWER
    if scenario == "fail":
        # A SEARCH block that matches nothing in a file that is not there: the edit fails.
        return (
            f"I update {MISSING_FILE}.\n\n{MISSING_FILE}\n```\n<<<<<<< SEARCH\nold text\n=======\nnew text\n"
            ">>>>>>> REPLACE\n```\n"
        )
    path, text = (SOLUTION_FILE, SOLUTION_TEXT) if scenario == "coding" else (WRITTEN_FILE, WRITTEN_TEXT)
    if search_replace:
        return f"I write {path}.\n\n{path}\n```\n<<<<<<< SEARCH\n=======\n{text}>>>>>>> REPLACE\n```\n"
    return f"I write {path}.\n\n{path}\n```\n{text}```\n"
