"""Give a chat model an MCP server's tools: connect with the official MCP SDK (Streamable HTTP, or
SSE for older servers), offer the tools as OpenAI-style functions, and run the model ⇄ tool loop
to a final answer within a step limit and the configuration's timeout.

Every call is recorded (``mcp__<server>__<tool>``, success, error, duration), as the agent CLIs'
parsers record their MCP calls, so checks and the rubric see the same names either way.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from ..loading.syntax_hints import json_error
from ..masking import keep_start
from ..results import ToolCallRecord
from .base import ProviderError, ProviderResponse

INSTALL_HINT = "pip install 'pytest-vibeeval[mcp]'"
# A chat-completions call: (messages, tools) → the decoded response JSON.
Chat = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Any]
# The parsed text and usage of one chat-completions response (http.parse_completion).
ParseCompletion = Callable[[Any], ProviderResponse]
ERROR_EXCERPT = 300


@dataclass(frozen=True)
class McpTarget:
    """The MCP server of a suite (``metadata.mcp_server``, templates filled in)."""

    url: str
    name: str
    token: str | None = None
    transport: str = "auto"
    max_steps: int = 10

    @classmethod
    def from_request(cls, server: dict[str, Any]) -> McpTarget:
        return cls(
            url=str(server["url"]),
            name=str(server["name"]),
            token=server.get("authorization_token") or None,
            transport=str(server.get("transport") or "auto"),
            max_steps=int(server.get("max_steps") or 10),
        )


def sdk_missing_reason() -> str | None:
    """Why the MCP SDK cannot be used here (the item skips), or None."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        return f"the suite's mcp_server needs the MCP SDK: {INSTALL_HINT}"
    return None


def openai_tools(tools: list[Any]) -> list[dict[str, Any]]:
    """MCP tool definitions as chat-completions ``tools``."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description or "",
                "parameters": tool.input_schema or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]


def result_text(result: Any) -> str:
    """A tool result as the text the model reads: its text blocks, else its structured content."""
    parts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    others = [f"[{block.type} content]" for block in result.content if getattr(block, "type", None) != "text"]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts + others)


def _excerpt(text: str) -> str:
    return keep_start(" ".join(text.split()), ERROR_EXCERPT)


def _reason(exc: BaseException) -> str:
    """The innermost message of an exception (anyio wraps task failures in exception groups)."""
    exc = _innermost(exc)
    return _excerpt(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


REFUSALS = {401: "Unauthorized", 403: "Forbidden"}


@asynccontextmanager
async def _connected(target: McpTarget, transport: str, refused: list[int]) -> AsyncIterator[Any]:
    """An SDK client over ``transport``; an HTTP 401 or 403 answer is appended to ``refused`` (the
    SDK reports it only as "Server returned an error response")."""
    import httpx2
    from mcp import Client
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    async def note_refusal(response: Any) -> None:
        if response.status_code in REFUSALS:
            refused.append(response.status_code)

    headers = {"Authorization": f"Bearer {target.token}"} if target.token else {}
    if transport == "sse":
        connection: Any = sse_client(target.url, headers=headers)
        async with Client(connection) as client:
            yield client
        return
    timeout = httpx2.Timeout(30.0, read=300.0)
    hooks = {"response": [note_refusal]}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks=hooks) as http,
        Client(streamable_http_client(target.url, http_client=http)) as client,
    ):
        yield client


def transports(target: McpTarget) -> list[str]:
    """The transports to try, in order (``auto``: SSE first for a URL ending in ``/sse``)."""
    if target.transport != "auto":
        return [target.transport]
    if target.url.rstrip("/").endswith("/sse"):
        return ["sse", "streamable-http"]
    return ["streamable-http", "sse"]


@asynccontextmanager
async def connect(target: McpTarget) -> AsyncIterator[Any]:
    """A connected SDK client; with ``transport: auto`` the second transport is tried when the
    first cannot connect. ProviderError names the server and each failure."""
    failures: list[str] = []
    refused: list[int] = []
    for transport in transports(target):
        entered = False
        try:
            async with _connected(target, transport, refused) as client:
                entered = True
                yield client
                return
        except ProviderError:
            raise
        except Exception as exc:  # the SDK and its transports raise many kinds
            if entered:
                raise
            status = getattr(getattr(_innermost(exc), "response", None), "status_code", None)
            if status in REFUSALS:  # the SSE transport raises the HTTP error itself
                refused.append(status)
            failures.append(f"{transport}: {_reason(exc)}")
    if refused:
        status = refused[0]
        given = "the authorization_token it was given" if target.token else "a request without a token"
        raise ProviderError(
            f"the MCP server {target.name!r} at {target.url} refused {given}: HTTP {status} "
            f"{REFUSALS[status]}; check mcp_server.authorization_token"
        )
    raise ProviderError(
        f"cannot connect to MCP server {target.name!r} at {target.url} ({'; '.join(failures)}); "
        "check mcp_server.url (and authorization_token)"
    )


async def answer_with_tools(
    target: McpTarget,
    messages: list[dict[str, Any]],
    chat: Chat,
    parse: ParseCompletion,
    timeout_s: float,
) -> ProviderResponse:
    """Run the model ⇄ tool loop; the final answer with every call and the summed usage."""
    import anyio
    import anyio.to_thread

    calls: list[ToolCallRecord] = []
    usage: list[ProviderResponse] = []
    try:
        with anyio.fail_after(timeout_s):
            async with connect(target) as client:
                listing = await client.list_tools()
                tools = openai_tools(list(listing.tools))
                for step in range(target.max_steps + 1):
                    data = await anyio.to_thread.run_sync(chat, messages, tools)
                    parsed = parse(data)
                    usage.append(parsed)
                    requested = _tool_calls(data)
                    if not requested:
                        return _final(parsed.text, usage, calls)
                    if step == target.max_steps:
                        raise ProviderError(
                            f"the model was still calling tools after {target.max_steps} rounds "
                            f"(mcp_server.max_steps); last calls: {', '.join(_names(requested))}"
                        )
                    messages.append(
                        {"role": "assistant", "content": parsed.text or None, "tool_calls": requested}
                    )
                    for call in requested:
                        messages.append(await _call(client, target, call, calls))
    except BaseException as exc:  # the SDK's task groups wrap what the loop raised
        inner = _innermost(exc)
        if isinstance(inner, ProviderError):
            raise inner from None
        if isinstance(inner, TimeoutError):
            raise ProviderError(
                f"no final answer within {timeout_s:g} s (the model and the MCP server {target.name!r}, "
                f"{len(calls)} tool call(s)); raise the configuration's timeout"
            ) from None
        if not isinstance(inner, Exception):
            raise  # KeyboardInterrupt, cancellation: not ours to turn into an answer
        raise ProviderError(f"the MCP server {target.name!r} failed: {_reason(inner)}") from None
    raise AssertionError("unreachable")  # the loop returns or raises


def _innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _tool_calls(data: Any) -> list[dict[str, Any]]:
    try:
        requested = data["choices"][0]["message"].get("tool_calls") or []
    except (KeyError, IndexError, TypeError, AttributeError):
        return []
    return [call for call in requested if isinstance(call, dict)]


def _names(requested: list[dict[str, Any]]) -> list[str]:
    return [str((call.get("function") or {}).get("name")) for call in requested]


async def _call(
    client: Any, target: McpTarget, call: dict[str, Any], calls: list[ToolCallRecord]
) -> dict[str, Any]:
    """Call one requested tool; the ``tool`` message for the model. A failure is told to the
    model (as an MCP tool error is) and recorded, not raised."""
    function = call.get("function") or {}
    name = str(function.get("name") or "")
    started = time.monotonic()
    error: str | None = None
    arguments: Any = None
    try:
        arguments = json.loads(function.get("arguments") or "{}")
        if not isinstance(arguments, dict):
            raise ValueError("the arguments are not a JSON object")
    except ValueError as exc:
        problem = json_error(exc) if isinstance(exc, json.JSONDecodeError) else exc
        error = f"invalid arguments from the model: {problem}"
        text = error
    else:
        try:
            result = await client.call_tool(name, arguments)
        except Exception as exc:  # a protocol error: the model is told, the call recorded as failed
            error = _reason(exc)
            text = f"error: {error}"
        else:
            text = result_text(result)
            if result.is_error:
                error = _excerpt(text) or "the tool reported an error"
    calls.append(
        ToolCallRecord(
            tool=f"mcp__{target.name}__{name}",
            success=error is None,
            error=error,
            duration=round(time.monotonic() - started, 6),
            args=arguments if isinstance(arguments, dict) else None,
        )
    )
    return {"role": "tool", "tool_call_id": str(call.get("id") or name), "content": text}


def _final(text: str, usage: list[ProviderResponse], calls: list[ToolCallRecord]) -> ProviderResponse:
    def total(field: str) -> Any:
        values = [getattr(response, field) for response in usage]
        return None if any(value is None for value in values) else sum(values)

    return ProviderResponse(
        text,
        total("cost"),
        total("input_tokens"),
        total("output_tokens"),
        tool_calls=list(calls),
        cached_input_tokens=total("cached_input_tokens"),
        cache_write_tokens=total("cache_write_tokens"),
        finish_reason=usage[-1].finish_reason if usage else None,
    )
