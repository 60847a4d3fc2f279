"""The configuration that runs a real agent CLI against the scripted API server, shared by the
contract tests and the conversation tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .homes import cli_setup
from .install import CLIS, bin_dir, installed

# codex's own sandbox needs helper aliases in CODEX_HOME, which it refuses to make under /tmp (and
# cannot run inside bwrap): the tests turn it off, as docs/configurations.md says to under
# --vibe-sandbox bwrap.
CODEX_ARGS = ["exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access"]


def cli_configuration(preset: str, scenario_url: str, home: Path) -> dict[str, Any]:
    """A configuration of ``preset`` running its installed CLI against the API at ``scenario_url``
    (``http://…/<scenario>``), with ``home`` as its HOME."""
    setup = cli_setup(preset, home, scenario_url, bin_dir(CLIS[preset]))
    config: dict[str, Any] = {
        "preset": preset,
        "cli": str(installed(CLIS[preset])),
        "model": setup.model,
        "env": setup.env,
        "timeout": 180_000,
    }
    if preset == "codex":
        config["args"] = [*CODEX_ARGS, "--model", "${MODEL}"]
    return config
