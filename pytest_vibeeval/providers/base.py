"""The provider protocol and the records it exchanges."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..quick import quick_init
from ..results import StepRecord, ToolCallRecord

USER, ASSISTANT = "user", "assistant"


@quick_init
@dataclass(frozen=True)
class PromptRequest:
    """Everything a provider may use to answer one prompt. Templates are already filled.

    In a conversation (an eval's ``turns``) ``turn`` is this prompt's number (1, 2, …; 0 for a
    single prompt), ``history`` holds the earlier turns, oldest first, as ``(role, text)`` pairs:
    each user message and the answer to it; ``session_id`` is what the previous turn's agent CLI
    reported, to continue its session, and ``session_tokens`` the input, output, cached input and
    cache-write tokens it reported for the whole session so far (by a CLI that reports running
    totals)."""

    prompt: str
    model: str
    system_prompt: str | None
    suite: str
    eval_id: str
    configuration_id: str
    workdir: Path  # a private directory for this item's files
    mcp_server: dict[str, Any] | None = None
    repeat: int = 0  # 1…N with --vibe-repeat N: recorded answers are kept per repeat
    turn: int = 0
    history: tuple[tuple[str, str], ...] = ()
    session_id: str | None = None
    session_tokens: tuple[int | None, ...] | None = None
    # An llm_judge request: its system_prompt, the grading instructions, is sent as it is (a
    # configuration's own system_prompt does not replace it: the answer is read in their format).
    grading: bool = False

    @property
    def messages(self) -> list[dict[str, str]]:
        """The conversation as chat messages, this prompt last (``[{"role": "user", "content":
        prompt}]`` for a single prompt); the system prompt is not among them. A new list each time."""
        earlier = [{"role": role, "content": text} for role, text in self.history]
        return [*earlier, {"role": USER, "content": self.prompt}]


@quick_init
@dataclass(frozen=True)
class ProviderResponse:
    """What a provider answered, with what it reported about the answer (cost, tokens, steps)."""

    text: str
    cost: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    steps: list[StepRecord] = field(default_factory=list)
    # Of input_tokens, those read from the model's prompt cache (priced at cached_input_per_mtok).
    cached_input_tokens: int | None = None
    # Of input_tokens, those written to the prompt cache (priced at cache_write_per_mtok); reported
    # by Anthropic's models only (Claude Code's cache_creation_input_tokens).
    cache_write_tokens: int | None = None
    # Seconds, as the agent itself reported it; None means the runner's measured wall time is used.
    latency: float | None = None
    # The agent's tool calls, in order (an output.parser reads them). None: this provider cannot
    # report them (the checks that need them are undecided); []: it reported that there were none.
    tool_calls: list[ToolCallRecord] | None = None
    cached: bool = False  # answered from the response cache (--vibe-cache), not asked now
    api_retries: int | None = None  # requests to the model the agent retried (ParsedOutput's)
    session_id: str | None = None  # the agent CLI's session, which a later turn continues
    # The session's input, output, cached input and cache write tokens so far, as a CLI that reports
    # running totals said; the token fields are then this turn's share.
    session_tokens: tuple[int | None, ...] | None = None
    # Why the model stopped, as an HTTP model reported it (stop, length, content_filter, tool_calls).
    finish_reason: str | None = None


class ProviderError(Exception):
    """The provider could not produce an answer; the message says why (the item errors)."""

    def __init__(
        self, message: str, steps: list[StepRecord] | None = None, spent: ProviderResponse | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.steps = steps or []
        self.latency: float | None = None  # seconds until it was raised (set by the runner)
        # An answer that came and was paid for, but is no answer (a refusal): its usage, not its text.
        self.spent = spent


class Provider(Protocol):
    def unavailable_reason(self) -> str | None:
        """Why this provider cannot run on this machine (the item skips), or None."""

    def answer(self, request: PromptRequest) -> ProviderResponse:
        """Answer one prompt or raise :class:`ProviderError`."""


def uses_workdir(provider: Provider) -> bool:
    """Whether ``provider`` may use a request's folder; one says it does not with a false
    ``uses_workdir`` attribute (the built-in Python callable and HTTP providers do)."""
    return bool(getattr(provider, "uses_workdir", True))


class Wrapping:
    """A provider that answers through ``inner`` (a cache, a recording): ``inner`` says whether it
    can run here and whether it uses the item's folder."""

    inner: Provider

    def unavailable_reason(self) -> str | None:
        return self.inner.unavailable_reason()

    @property
    def uses_workdir(self) -> bool:
        return uses_workdir(self.inner)


class Unavailable:
    """A provider that cannot run here, for the given reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def unavailable_reason(self) -> str | None:
        return self.reason

    def answer(self, request: PromptRequest) -> ProviderResponse:
        raise ProviderError(self.reason)


def without_token(mcp: dict[str, Any] | None) -> dict[str, Any] | None:
    """A request's ``mcp_server`` as the material of its answer's key (--vibe-cache, --vibe-replay):
    without its token, which authenticates, and its URL, which locates the server (a server on a new
    port each session, or --vibe-mcp-url pointing elsewhere, must not make every answer a miss);
    neither shapes the answer."""
    if mcp is None:
        return None
    return {key: value for key, value in mcp.items() if key not in {"authorization_token", "url"}}


def missing_env_reason(config_id: str, names: list[str]) -> str | None:
    """Why a configuration cannot run here: environment variables it requires are unset."""
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        return f"configuration {config_id!r} needs the environment variable(s) {', '.join(missing)}"
    return None


def as_measure(value: object, *, whole: bool) -> float | int:
    """``value`` as a reported cost, latency or token count; raises ValueError naming what it must be
    (``a non-negative finite number`` / ``a whole number``)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError("a non-negative finite number")
    if whole:
        if value != int(value):
            raise ValueError("a whole number")
        return int(value)
    return float(value)
