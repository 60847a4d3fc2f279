"""Hand a suite's ``mcp_server`` to an agent CLI, the way its preset's CLI takes MCP servers.

- claude-code: ``--mcp-config=<json>`` with ``--strict-mcp-config`` (no other server joins) and
  ``--allowedTools=mcp__<name>`` (headless, an unallowed tool is refused);
- codex: ``-c mcp_servers.<name>.…`` overrides: ``url``, ``bearer_token_env_var``,
  ``required`` (a server that cannot start fails the run), tools approved;
- gemini: ``mcpServers.<name>`` (``httpUrl`` or ``url``, ``headers``, ``trust``) merged into the
  folder's ``.gemini/settings.json`` (comments allowed, as gemini allows them), which gemini reads
  only in a folder trusted before it starts
  (``GEMINI_CLI_TRUST_WORKSPACE``; system settings files under /tmp are refused as insecure).

The token is never on the command line or in a file: each CLI reads it from :data:`TOKEN_ENV`
(claude-code and gemini expand ``${VAR}`` in their MCP settings, codex names the variable).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bounded_read import UnreadableFile
from ..json_comments import strip_json_comments
from ..loading.syntax_hints import json_error
from ..models import Configuration
from ..presets import AGENT_PRESETS
from ..results import ToolCallRecord
from ..text_input import NotUtf8, read_input_text
from .base import ProviderError
from .mcp_tools import McpTarget, transports

TOKEN_ENV = "VIBEEVAL_MCP_TOKEN"
TOKEN_REF = "${" + TOKEN_ENV + "}"
GEMINI_SETTINGS = Path(".gemini", "settings.json")
MAX_SETTINGS_BYTES = 16 * 2**20  # an agent's settings file in its workspace larger than this is refused
# The presets whose CLI is given the server, in the order docs/configurations.md lists them (MCP tools).
MCP_PRESETS = tuple(name for name, preset in AGENT_PRESETS.items() if preset.mcp)
_TOML_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class CliMcp:
    """What one run of the CLI gets: arguments, environment, and settings to merge into a JSON
    file of its folder (a path relative to it)."""

    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    settings: tuple[Path, dict[str, Any]] | None = None


def mcp_way(config: Configuration) -> str | None:
    """How the configuration's CLI takes MCP servers (its preset's ``mcp``), or None."""
    preset = AGENT_PRESETS.get(config.preset) if config.preset else None
    return preset.mcp if preset is not None else None


def _transport(target: McpTarget) -> str:
    """The CLI's one transport: the configured one, or with ``auto`` the first the HTTP tool loop
    would try (a CLI does not fall back to the other)."""
    return transports(target)[0]


def unsupported_reason(config: Configuration, config_id: str, target: McpTarget | None = None) -> str | None:
    """Why this CLI configuration cannot be given the suite's MCP server ``target``, or None."""
    way = mcp_way(config)
    others = "an `http:` configuration (the model gets the server's tools) or a `python:` callable"
    if way is None:
        what = f"preset {config.preset!r}" if config.preset else "a CLI without a preset"
        presets = ", ".join(MCP_PRESETS[:-1]) + f" or {MCP_PRESETS[-1]}"
        return (
            f"configuration {config_id!r} runs {what}, which cannot be given the suite's mcp_server; "
            f"use preset {presets} (with your own args if need be), {others}"
        )
    if target is None:
        return None
    if way == "codex" and _transport(target) != "streamable-http":
        return (
            f"configuration {config_id!r}: codex connects to MCP servers over Streamable HTTP only, "
            f"and the suite's mcp_server {target.name!r} uses SSE; use preset claude-code or gemini, "
            f"or {others}"
        )
    if way == "codex" and not _TOML_BARE_KEY.fullmatch(target.name):
        return (
            f"configuration {config_id!r}: codex cannot be given an MCP server named {target.name!r} "
            "(letters, digits, _ and - only)"
        )
    return None


def handover(way: str, target: McpTarget) -> CliMcp:
    """The arguments, environment and settings that give the CLI ``target``."""
    env = {TOKEN_ENV: target.token} if target.token else {}
    if way == "claude-code":
        return CliMcp(claude_args(target), env)
    if way == "codex":
        return CliMcp(codex_args(target), env)
    if way == "gemini":
        # Trusted before it starts: `--skip-trust` comes after gemini has dropped the folder's settings.
        return CliMcp(
            (), {**env, "GEMINI_CLI_TRUST_WORKSPACE": "true"}, (GEMINI_SETTINGS, gemini_settings(target))
        )
    raise ValueError(f"no MCP handover for {way!r}")


def _headers(target: McpTarget) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN_REF}"} if target.token else {}


def claude_args(target: McpTarget) -> tuple[str, ...]:
    """claude-code's options. The ``=`` forms: both options take several values, and would
    swallow the arguments after them."""
    server: dict[str, Any] = {"type": "sse" if _transport(target) == "sse" else "http", "url": target.url}
    if target.token:
        server["headers"] = _headers(target)
    config = json.dumps({"mcpServers": {target.name: server}}, separators=(",", ":"))
    return (f"--mcp-config={config}", "--strict-mcp-config", f"--allowedTools=mcp__{target.name}")


def codex_args(target: McpTarget) -> tuple[str, ...]:
    """codex's ``-c`` overrides (values are TOML; a JSON string is a TOML string)."""
    key = f"mcp_servers.{target.name}"
    overrides = [f"{key}.url={json.dumps(target.url)}", f"{key}.required=true"]
    # Without it, codex under its workspace-write sandbox refuses every MCP call headless.
    overrides.append(f'{key}.default_tools_approval_mode="approve"')
    if target.token:
        overrides.append(f"{key}.bearer_token_env_var={json.dumps(TOKEN_ENV)}")
    return tuple(arg for override in overrides for arg in ("-c", override))


def gemini_settings(target: McpTarget) -> dict[str, Any]:
    """gemini's settings (``trust``: headless, a tool that needs confirming is refused)."""
    where = "url" if _transport(target) == "sse" else "httpUrl"
    server: dict[str, Any] = {where: target.url, "trust": True}
    if target.token:
        server["headers"] = _headers(target)
    return {"mcpServers": {target.name: server}}


def write_settings(cwd: Path, given: CliMcp) -> None:
    """Merge ``given.settings`` into the JSON file of ``cwd`` it names (the file keeps its other
    keys and servers; its ``//`` and ``/* */`` comments, which gemini allows, are not written
    back); ProviderError when that file is not a JSON object."""
    if given.settings is None:
        return
    relative, settings = given.settings
    path = cwd / relative
    data: dict[str, Any] = {}
    if path.exists():
        try:  # read as the suite's own files are: a byte-order mark dropped, UTF-16 named
            loaded = json.loads(strip_json_comments(read_input_text(path, MAX_SETTINGS_BYTES)))
        except (OSError, UnreadableFile, NotUtf8, json.JSONDecodeError) as exc:
            if isinstance(exc, NotUtf8):
                why: object = f"{exc.message}; {exc.hint}"
            else:
                why = json_error(exc) if isinstance(exc, json.JSONDecodeError) else exc
            raise ProviderError(f"cannot add the suite's mcp_server to {path}: {why}") from None
        if not isinstance(loaded, dict):
            raise ProviderError(f"cannot add the suite's mcp_server to {path}: not a JSON object")
        data = loaded
    for key, value in settings.items():
        old = data.get(key)
        data[key] = {**old, **value} if isinstance(old, dict) and isinstance(value, dict) else value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def connection_failure(way: str, target: McpTarget, stdout: Path) -> str | None:
    """Why the CLI ran without the server's tools, where its output says (claude-code's ``init``
    event gives each server's status; codex fails the run itself; gemini says nothing), or None."""
    if way != "claude-code":
        return None
    try:
        with stdout.open("rb") as lines:
            init = json.loads(lines.readline() or b"{}")
    except (OSError, ValueError):
        return None  # the parser reports output it cannot read
    servers = init.get("mcp_servers") if isinstance(init, dict) else None
    for server in servers if isinstance(servers, list) else []:
        if isinstance(server, dict) and server.get("name") == target.name:
            status = server.get("status")
            if status != "connected":
                return (
                    f"claude-code could not connect to the MCP server {target.name!r} at {target.url} "
                    f"(status {status!r}); check mcp_server.url and authorization_token"
                )
    return None


def gemini_prefix(server: str) -> str:
    """The prefix of gemini's names for the server's tools (``mcp_<server>_``, with the
    characters gemini does not allow in a name replaced by ``_``)."""
    name = f"{server}_" if server.startswith("mcp_") else f"mcp_{server}_"
    return re.sub(r"[^a-zA-Z0-9_\-.:]", "_", name)


def recorded_calls(way: str, target: McpTarget, calls: list[ToolCallRecord]) -> list[ToolCallRecord]:
    """The calls with the server's tools named ``mcp__<name>__<tool>``, as claude-code and codex
    name them (gemini says ``mcp_<name>_<tool>``)."""
    if way != "gemini":
        return calls
    prefix = gemini_prefix(target.name)
    return [
        call.model_copy(update={"tool": f"mcp__{target.name}__{call.tool[len(prefix) :]}"})
        if call.tool.startswith(prefix)
        else call
        for call in calls
    ]
