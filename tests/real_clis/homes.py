"""A private HOME for each real CLI, pointing it at the scripted server: no keys, no internet.

:func:`cli_setup` writes the CLI's settings under ``home`` and returns the environment and model
its configuration needs (the same variables docs/configurations.md tells users for a gateway).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DUMMY_KEY = "scripted-key"
# Models whose names the CLIs know (claude-code prices it; codex sends it its tools).
MODELS = {
    "claude-code": "claude-sonnet-4-5",
    "codex": "gpt-5.1-codex",
    "gemini": "gemini-2.5-pro",
    "llxprt": "claude-sonnet-4-5",
    "aider": "openai/gpt-4o",
}
# The local server, never a proxy (a CI machine's proxy variables would catch 127.0.0.1).
NO_PROXY = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
# On aider's PYTHONPATH: its sitecustomize cuts aider's minute of retries on an API error to 1.75 s.
AIDER_RETRY = Path(__file__).with_name("aider_retry")


@dataclass(frozen=True)
class CliSetup:
    """What a configuration of the CLI's preset needs: ``env`` and ``model``."""

    env: dict[str, str]
    model: str
    mcp: dict[str, Any] = field(default_factory=dict)


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def cli_setup(preset: str, home: Path, base_url: str, bin_dir: Path) -> CliSetup:
    """Settings for ``preset`` in ``home`` for the API at ``base_url`` (``http://…/<scenario>``);
    ``bin_dir`` (the CLI's folder, with its own node where it needs one) goes first on PATH."""
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        **NO_PROXY,
    }
    model = MODELS[preset]
    if preset == "claude-code":
        env |= {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": DUMMY_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
    elif preset == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(
            f"model = {_toml_string(model)}\n"
            'model_provider = "scripted"\n'
            "[model_providers.scripted]\n"
            'name = "scripted"\n'
            f"base_url = {_toml_string(base_url + '/v1')}\n"
            'wire_api = "responses"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n",
            encoding="utf-8",
        )
        env |= {"CODEX_HOME": str(codex_home)}
    elif preset == "gemini":
        settings = home / ".gemini" / "settings.json"
        settings.parent.mkdir(exist_ok=True)
        settings.write_text(
            # One attempt: its default is ten, with backoff, on a 500 (minutes).
            json.dumps(
                {"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"maxAttempts": 1}}
            ),
            encoding="utf-8",
        )
        env |= {"GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_API_KEY": DUMMY_KEY}
    elif preset == "llxprt":
        # The backend comes from a profile that LLXPRT_PROFILE names (the preset's arguments stay
        # as they are), the key from the environment. One attempt: its default is six, with
        # backoff from 4 s, on a 500 (minutes). Its error reports go to TMPDIR.
        profiles = home / ".config" / "llxprt-code" / "profiles"
        profiles.mkdir(parents=True, exist_ok=True)
        profile = {
            "version": 1,
            "provider": "anthropic",
            "model": model,
            "ephemeralSettings": {"base-url": base_url, "retries": 1, "retrywait": 0},
        }
        (profiles / "scripted.json").write_text(json.dumps(profile), encoding="utf-8")
        (home / "tmp").mkdir(exist_ok=True)
        env |= {"LLXPRT_PROFILE": "scripted", "ANTHROPIC_API_KEY": DUMMY_KEY, "TMPDIR": str(home / "tmp")}
    elif preset == "aider":
        # aider fetches litellm's model price list from GitHub unless its cache (a day old at most)
        # holds an entry, and prints a failed fetch into the answer (no network, no DNS); an empty
        # cache, which aider itself writes after a failure, does not stop the next fetch. One entry
        # naming no model: litellm uses the list it ships with
        caches = home / ".aider" / "caches"
        caches.mkdir(parents=True, exist_ok=True)
        (caches / "model_prices_and_context_window.json").write_text('{"sample_spec": {}}', encoding="utf-8")
        env |= {
            "OPENAI_API_BASE": base_url + "/v1",
            "OPENAI_API_KEY": DUMMY_KEY,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONPATH": str(AIDER_RETRY),
        }
    else:
        raise LookupError(f"no private HOME recipe for {preset!r}")
    return CliSetup(env, model)
