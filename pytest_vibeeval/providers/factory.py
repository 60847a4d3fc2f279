"""How a configuration becomes its provider: the built-in factory, which
``pytest_vibeeval_make_provider`` asks last (a plugin's provider for a configuration wins)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..loading.templates import Redactor, Renderer
from ..models import Configuration
from .base import PromptRequest, Provider, ProviderError, ProviderResponse
from .python_callable import PythonProvider

if TYPE_CHECKING:
    from .parsers import Parser


@dataclass(frozen=True)
class ProviderSpec:
    """What a provider is made from."""

    config_id: str
    configuration: Configuration | None  # None: the implicit OpenRouter configuration
    suite_dir: Path  # the folder of the suite (a ``python:`` module is looked for there first)
    config_dir: Path  # the folder of the file that defines the configuration
    renderer: Renderer  # fills {{var()}} / {{secret()}} in arguments, environment, headers
    lock_dir: Path | None = None  # concurrency slots shared across xdist workers (HTTP)
    max_processes: int = 0  # a CLI agent's processes at once (0: no limit)
    parsers: Mapping[str, Parser] | None = None  # the session's output parsers (None: the built-ins)


def make_provider(spec: ProviderSpec) -> Provider:
    """The built-in provider for a configuration: replayed, HTTP (also the implicit one), CLI or a
    Python callable."""
    config = spec.configuration
    if config is not None and config.replay is not None:
        from ..recording import ReplayProvider, Store  # the store module imports this package

        store = Path(spec.config_dir, config.replay)
        return ReplayProvider(
            Store(store, Redactor(spec.renderer.used_secrets)), spec.config_id, config.model
        )
    if config is None or config.kind == "http":
        from .http import HttpProvider  # httpx costs a tenth of a second: imported when used

        return HttpProvider(
            spec.config_id, config, spec.renderer.used_secrets, spec.lock_dir, renderer=spec.renderer
        )
    if config.kind == "cli":
        from .cli import CliProvider  # the agent CLI's process machinery: imported when used

        return CliProvider(
            spec.config_id, config, spec.renderer, spec.config_dir, spec.max_processes, spec.parsers
        )
    if config.kind == "provider":
        return UnclaimedProvider(spec.config_id, config.provider or "")
    return PythonProvider(spec.config_id, config, spec.suite_dir)


class UnclaimedProvider:
    """A ``provider: NAME`` configuration that no installed plugin answers: each item errors,
    saying so (a typo must not pass as a skipped run)."""

    def __init__(self, config_id: str, name: str) -> None:
        self.config_id, self.name = config_id, name

    def unavailable_reason(self) -> str | None:
        return None

    def answer(self, request: PromptRequest) -> ProviderResponse:
        raise ProviderError(
            f"configuration {self.config_id!r}: no installed plugin provides `provider: {self.name}` "
            "(a plugin's pytest_vibeeval_make_provider hook returns it; is the plugin installed, or "
            "loaded with -p?)"
        )
