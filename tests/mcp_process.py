"""The test MCP server (tests/mcp_server.py, the SDK's own server classes) in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOKEN = "mcp-token-5f3a9c1e7b"
SERVER_SCRIPT = Path(__file__).with_name("mcp_server.py")


class McpProcess:
    """The test MCP server in a subprocess; ``url`` once it accepts connections."""

    def __init__(self, transport: str, token: str | None = TOKEN) -> None:
        argv = [sys.executable, str(SERVER_SCRIPT), transport, *([token] if token else [])]
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()  # printed once the socket listens
        if not self.url:
            raise RuntimeError(f"the MCP server did not start: {self.process.communicate()[1]}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=30)
