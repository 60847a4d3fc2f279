"""Runs this folder's suite offline: starts the example MCP server (tracker_server.py) and the
model stand-in (standin_model.py) for this pytest process, and gives the suite their addresses
the way a user gives a vibecheck suite its values: ``VIBE_VAR_*`` and ``VIBE_SECRET_*`` in the
environment, and ``OPENROUTER_BASE_URL`` for the model (the suite has no configurations, so it
runs through OpenRouter's API with ``metadata.model``). Delete this file, set those variables and
``OPENROUTER_API_KEY``, and the same suite runs against a real model and a real MCP server.

Each pytest process (each xdist worker) gets servers of its own; they stop when it exits.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import secrets
import subprocess
import sys
from pathlib import Path

from standin_model import StandinModel

HERE = Path(__file__).parent


def _start_tracker(token: str) -> str:
    """The example MCP server's URL, once it accepts connections."""
    server = subprocess.Popen(
        [sys.executable, str(HERE / "tracker_server.py"), token], stdout=subprocess.PIPE, text=True
    )
    atexit.register(server.terminate)
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    if not url:
        raise RuntimeError(f"the example MCP server did not start (exit code {server.wait()})")
    return url


token = secrets.token_hex(12)  # a fresh secret: the run's outputs show it only as ***
os.environ["VIBE_SECRET_TRACKER_APIKEY"] = token
os.environ["VIBE_VAR_TRACKER_TEAM"] = "ENG"
if importlib.util.find_spec("mcp") is not None:  # without the SDK the evals skip, saying what to install
    os.environ["VIBE_VAR_TRACKER_URL"] = _start_tracker(token)
else:
    os.environ["VIBE_VAR_TRACKER_URL"] = "http://127.0.0.1/mcp"
os.environ["OPENROUTER_BASE_URL"] = StandinModel().url
os.environ["OPENROUTER_API_KEY"] = "standin-" + secrets.token_hex(8)
