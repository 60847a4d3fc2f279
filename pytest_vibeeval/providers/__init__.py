"""How a configuration answers a prompt: an executable (``cli``), a Python callable (``python``) or
an OpenAI-compatible HTTP endpoint (``http``, and the implicit OpenRouter configuration)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models import Configuration
from ..templates import Redactor, Renderer
from .base import PromptRequest, Provider, ProviderError, ProviderResponse, Unavailable
from .cli import CliProvider
from .python_callable import PythonProvider

if TYPE_CHECKING:
    from .http import HttpProvider

__all__ = [
    "CliProvider",
    "HttpProvider",
    "PromptRequest",
    "Provider",
    "ProviderError",
    "ProviderResponse",
    "PythonProvider",
    "Unavailable",
    "make_provider",
]


def __getattr__(name: str) -> Any:
    # httpx (and what it pulls in) costs a tenth of a second per process: imported when first used.
    if name == "HttpProvider":
        from .http import HttpProvider

        return HttpProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_provider(
    config_id: str,
    config: Configuration | None,
    suite_dir: Path,
    config_dir: Path,
    renderer: Renderer,
    lock_dir: Path | None = None,
    max_processes: int = 0,
) -> Provider:
    """The provider for a configuration; ``None`` is the implicit OpenRouter configuration.

    ``config_dir`` is the folder of the file that defines the configuration; ``lock_dir`` holds
    the concurrency slots that HTTP configurations share across xdist workers; ``max_processes``
    limits a CLI agent's processes (0: no limit)."""
    if config is not None and config.replay is not None:
        from ..recording import ReplayProvider, Store  # the store module imports this package

        store = Path(config_dir, config.replay)
        return ReplayProvider(Store(store, Redactor(renderer.used_secrets)), config_id, config.model)
    if config is None or config.kind == "http":
        from .http import HttpProvider

        return HttpProvider(config_id, config, renderer.used_secrets, lock_dir)
    if config.kind == "cli":
        return CliProvider(config_id, config, renderer, config_dir, max_processes)
    return PythonProvider(config_id, config, suite_dir)
