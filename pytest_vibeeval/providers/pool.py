"""The session's providers, made once each and kept by what they are used for.

A configuration can play three roles in one session: it answers prompt evals (``answer``: wrapped
for --vibe-record / --vibe-replay), judges ``llm_judge`` checks (``judge``: wrapped the same way)
and runs as a coding agent in a workspace (``agent``: a plain CLI provider with the process
limit). The pool key includes the role, so two roles never share a provider."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..quick import quick_init
from .base import Provider

Role = Literal["answer", "judge", "agent"]


@quick_init
@dataclass(frozen=True)
class PoolKey:
    """Which provider: the file that defines the eval, the configuration id and the role."""

    source: Path
    configuration: str
    role: Role


class ProviderPool:
    """One provider per :class:`PoolKey`, made by the factory on first use (availability, e.g. a
    CLI on PATH, is then checked once per configuration and role)."""

    def __init__(self) -> None:
        self._providers: dict[PoolKey, Provider] = {}

    def get(self, key: PoolKey, make: Callable[[], Provider]) -> Provider:
        provider = self._providers.get(key)
        if provider is None:
            provider = self._providers[key] = make()
        return provider

    def __len__(self) -> int:
        return len(self._providers)
