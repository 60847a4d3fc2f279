"""Ready configurations for agent CLIs: ``preset: claude-code`` supplies the executable, its
arguments, how the prompt is passed and how the output is read; the configuration's own keys win.

This module holds data only (no imports from the package), so :mod:`pytest_vibeeval.models` can
apply a preset while validating a configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

# Agent transcripts (every tool call and its output) are much larger than answers.
TRANSCRIPT_MAX_OUTPUT_BYTES = 64 * 2**20


SESSION_ID = "${SESSION_ID}"


@dataclass(frozen=True)
class Resume:
    """How a preset's CLI continues its session in a conversation's later turns: ``args`` go after
    the configuration's arguments, ``${SESSION_ID}`` replaced by the id the previous turn's output
    reported in the JSON field ``field`` of a line (``event``: only in a line whose ``type`` is it).
    ``running_totals``: a continuing run reports the tokens of the whole session so far, not its own."""

    args: tuple[str, ...]
    field: str
    event: str | None = None
    running_totals: bool = False


PROMPT_FILE = "${PROMPT_FILE}"


@dataclass(frozen=True)
class LongPrompt:
    """How a preset's CLI takes a prompt too long for its command line (Linux takes at most 128 KiB
    in one argument): in place of an argument ``${PROMPT}`` that follows one of ``flags``, the
    pair becomes ``args`` (``${PROMPT_FILE}``: a file holding the prompt), or with no ``args`` the
    prompt goes on stdin, of which the CLI reads at most ``stdin_max_bytes``."""

    flags: tuple[str, ...]
    args: tuple[str, ...] = ()
    stdin_max_bytes: int | None = None


@dataclass(frozen=True)
class Preset:
    """The keys a preset supplies. ``model_args`` are appended to ``args`` when the configuration
    sets ``model`` but not ``args`` (with its own ``args`` it places ``${MODEL}`` itself)."""

    cli: str
    args: tuple[str, ...]
    prompt_via: Literal["stdin", "argument"]
    parser: str
    model_args: tuple[str, ...]
    max_output_bytes: int | None = None
    # How the CLI is given a suite's mcp_server (providers/cli_mcp.py); None: it is not.
    mcp: Literal["claude-code", "codex", "gemini"] | None = None
    # The variables of the controller's environment the CLI is given (names or globs), beside
    # the base set every agent gets (providers/agent_env.py).
    env: tuple[str, ...] = ()
    # How the CLI continues a session (an eval's `turns`); None: it cannot, such evals skip.
    resume: Resume | None = None
    # How the CLI takes a prompt too long for an argument; None: it is passed no other way.
    long_prompt: LongPrompt | None = None

    def defaults(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """The preset's keys for a configuration whose own keys are ``data``."""
        args = list(self.args)
        if "model" in data and "args" not in data:
            args.extend(self.model_args)
        keys: dict[str, Any] = {
            "cli": self.cli,
            "args": args,
            "prompt_via": self.prompt_via,
            "output": {"parser": self.parser},
        }
        if self.max_output_bytes is not None:
            keys["max_output_bytes"] = self.max_output_bytes
        return keys


MODEL_ARGS = ("--model", "${MODEL}")
# What a CLI that calls an API needs to reach it from behind a proxy or a private CA.
NETWORK_ENV = (
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
)  # fmt: skip

AGENT_PRESETS: dict[str, Preset] = {
    # stream-json rather than json: only the stream has the tool_use / tool_result blocks; its
    # last line is the same `result` object that json prints. The CLI needs --verbose for it.
    "claude-code": Preset(
        cli="claude",
        args=("-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"),
        prompt_via="stdin",
        parser="claude-code",
        model_args=MODEL_ARGS,
        max_output_bytes=TRANSCRIPT_MAX_OUTPUT_BYTES,
        mcp="claude-code",
        env=("ANTHROPIC_*", "CLAUDE_*", "DISABLE_AUTOUPDATER", "DISABLE_TELEMETRY", *NETWORK_ENV),
        # Every stream-json line carries the session's id; `--resume ID` continues it.
        resume=Resume(("--resume", SESSION_ID), field="session_id"),
    ),
    # With no prompt argument `codex exec` reads the prompt from stdin. The item's folder is not
    # a git repository, hence --skip-git-repo-check.
    "codex": Preset(
        cli="codex",
        args=("exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write"),
        prompt_via="stdin",
        parser="codex",
        model_args=MODEL_ARGS,
        max_output_bytes=TRANSCRIPT_MAX_OUTPUT_BYTES,
        mcp="codex",
        env=("OPENAI_*", "CODEX_*", *NETWORK_ENV),
        # `codex exec [options] resume ID -`: the thread.started event names the thread; `-` reads
        # the prompt from stdin (exec's options stay before the subcommand, which lacks some). Since
        # 0.155 a resumed run's turn.completed usage is the whole session's (0.153 reported the turn's).
        resume=Resume(
            ("resume", SESSION_ID, "-"), field="thread_id", event="thread.started", running_totals=True
        ),
    ),
    # Every item runs in a new folder, which headless gemini refuses as untrusted (exit 55) unless
    # told to trust it for the session.
    "gemini": Preset(
        cli="gemini",
        args=(
            "--output-format",
            "stream-json",
            "--approval-mode",
            "auto_edit",
            "--skip-trust",
            "-p",
            "${PROMPT}",
        ),
        prompt_via="argument",
        parser="gemini",
        model_args=MODEL_ARGS,
        max_output_bytes=TRANSCRIPT_MAX_OUTPUT_BYTES,
        mcp="gemini",
        env=("GEMINI_*", "GOOGLE_*", *NETWORK_ENV),
        # Headless gemini reads a prompt piped on stdin (before -p's, which it then needs not),
        # 8 MiB of it at most: it cuts the rest, saying so only in its debug log.
        long_prompt=LongPrompt(flags=("-p", "--prompt"), stdin_max_bytes=8 * 2**20),
    ),
    # A fork of Gemini CLI with its output formats, but no --skip-trust (it runs in a new folder).
    # The backend comes from a profile (LLXPRT_PROFILE) or --provider in your own args. Headless,
    # auto_edit offers the read-only tools and `replace` (which creates files), no write_file or shell.
    "llxprt": Preset(
        cli="llxprt",
        args=("--output-format", "stream-json", "--approval-mode", "auto_edit", "-p", "${PROMPT}"),
        prompt_via="argument",
        parser="llxprt",
        model_args=MODEL_ARGS,
        max_output_bytes=TRANSCRIPT_MAX_OUTPUT_BYTES,
        env=("LLXPRT_*", "GEMINI_*", "GOOGLE_*", "OPENAI_*", "ANTHROPIC_*", *NETWORK_ENV),
    ),
    "aider": Preset(
        cli="aider",
        args=(
            "--yes-always",
            "--no-git",
            "--no-pretty",
            "--no-stream",
            "--no-check-update",
            "--no-show-model-warnings",
            "--message",
            "${PROMPT}",
        ),
        prompt_via="argument",
        parser="aider",
        model_args=MODEL_ARGS,
        env=("AIDER_*", "OPENAI_*", *NETWORK_ENV),
        # aider reads a piped stdin as chat input a line at a time, but a file whole.
        long_prompt=LongPrompt(flags=("--message", "--msg", "-m"), args=("--message-file", PROMPT_FILE)),
    ),
}

# Keys that choose another kind of configuration than an agent CLI.
OTHER_KINDS = ("python", "http", "provider")


def with_preset(data: dict[str, Any]) -> dict[str, Any]:
    """A configuration's keys over its preset's defaults; unchanged when there is no preset or it
    is unknown (validating the ``preset`` field reports that)."""
    name = data.get("preset")
    preset = AGENT_PRESETS.get(name) if isinstance(name, str) else None
    if preset is None:
        return data
    return {**preset.defaults(data), **data}
