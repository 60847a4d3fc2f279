"""How a configuration answers a prompt: an executable (``cli``) or a Python callable (``python``)."""

from __future__ import annotations

from pathlib import Path

from ..models import Configuration
from ..templates import Renderer
from .base import PromptRequest, Provider, ProviderError, ProviderResponse, Unavailable
from .cli import CliProvider
from .python_callable import PythonProvider

__all__ = [
    "CliProvider",
    "PromptRequest",
    "Provider",
    "ProviderError",
    "ProviderResponse",
    "PythonProvider",
    "Unavailable",
    "make_provider",
]


def make_provider(
    config_id: str, config: Configuration | None, suite_dir: Path, config_dir: Path, renderer: Renderer
) -> Provider:
    """The provider for a configuration; ``None`` is the implicit OpenRouter configuration.

    ``config_dir`` is the folder of the file that defines the configuration."""
    if config is None:
        return Unavailable(
            "this suite has no configuration: add a `configurations:` section or a cli-config.json "
            "(in its folder or a parent up to the rootdir); the built-in OpenRouter HTTP provider "
            "is not part of this version"
        )
    if config.kind == "cli":
        return CliProvider(config_id, config, renderer, config_dir)
    return PythonProvider(config_id, config, suite_dir)
