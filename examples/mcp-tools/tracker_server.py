"""An example MCP server: a tiny in-memory issue tracker, built with the official MCP SDK.

Run as ``python tracker_server.py TOKEN``: it serves Streamable HTTP on a free port of 127.0.0.1,
prints its URL (``http://127.0.0.1:<port>/mcp``) once the socket accepts connections, and answers
401 to any request without ``Authorization: Bearer TOKEN``. A stand-in for a hosted server such as
Linear's (``https://mcp.linear.app/mcp``).
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server import MCPServer

server = MCPServer("tracker")
ISSUES: dict[str, list[str]] = {}


def _issues(team: str) -> list[str]:
    return ISSUES.setdefault(team, ["Get familiar with the tracker", "Write the release notes"])


@server.tool()
def list_issues(team: str) -> str:
    """List the most recent issues of a team, newest last."""
    return "\n".join(f"{team}-{number}: {title}" for number, title in enumerate(_issues(team), 1))


@server.tool()
def get_issue(issue_id: str) -> str:
    """The title and state of one issue, by its id (e.g. ENG-1)."""
    team, _, number = issue_id.partition("-")
    issues = _issues(team)
    if not number.isdigit() or not 1 <= int(number) <= len(issues):
        raise ValueError(f"no issue {issue_id}")
    return f"{issue_id}: {issues[int(number) - 1]} (state: todo)"


@server.tool()
def create_issue(team: str, title: str) -> str:
    """Create a to-do issue for a team; returns its id."""
    issues = _issues(team)
    issues.append(title)
    return f"created {team}-{len(issues)}: {title}"


def require_token(app: Any, token: str) -> Any:
    """The ASGI app, answering 401 to HTTP requests without the bearer token."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    logging.getLogger("mcp").setLevel(logging.WARNING)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    app = require_token(server.streamable_http_app(), sys.argv[1])
    http = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    anyio.run(lambda: http.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
