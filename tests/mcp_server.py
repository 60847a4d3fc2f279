"""A real MCP server for the tests, built with the official MCP SDK's own server classes.

Run as ``python mcp_server.py streamable-http|sse [TOKEN]``: it listens on a free port of
127.0.0.1 and prints its URL as its first line once the socket accepts connections (clients
that connect before the server loop starts wait in the listen backlog). With a TOKEN, every HTTP
request must carry ``Authorization: Bearer TOKEN`` (else 401).

Tools, like a small issue tracker: ``list_issues(team)``, ``create_issue(team, title)`` and
``broken()``, which always fails.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server import MCPServer

server = MCPServer("tracker")
created: list[str] = []


@server.tool()
def list_issues(team: str) -> str:
    """List the most recent issues of a team."""
    return f"{team}-1: Get familiar with the tracker\n{team}-2: Write the docs"


@server.tool()
def create_issue(team: str, title: str) -> str:
    """Create an issue for a team; returns its id."""
    created.append(title)
    return f"created {team}-{2 + len(created)}: {title}"


@server.tool()
def broken() -> str:
    """Always fails."""
    raise RuntimeError("the tracker is down")


def require_token(app: Any, token: str) -> Any:
    """The ASGI app, answering 401 to HTTP requests without the bearer token."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send(
                {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]}
            )
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    transport = sys.argv[1]
    app = server.streamable_http_app() if transport == "streamable-http" else server.sse_app()
    if len(sys.argv) > 2:
        app = require_token(app, sys.argv[2])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    path = "/mcp" if transport == "streamable-http" else "/sse"
    print(f"http://127.0.0.1:{sock.getsockname()[1]}{path}", flush=True)
    http = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    anyio.run(lambda: http.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
