"""How a configuration answers a prompt: an executable (``cli``), a Python callable (``python``) or
an OpenAI-compatible HTTP endpoint (``http``, and the implicit OpenRouter configuration)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import PromptRequest, Provider, ProviderError, ProviderResponse, Unavailable
from .factory import ProviderSpec, make_provider
from .python_callable import PythonProvider

if TYPE_CHECKING:
    from .cli import CliProvider
    from .http import HttpProvider

__all__ = [
    "CliProvider",
    "HttpProvider",
    "PromptRequest",
    "Provider",
    "ProviderError",
    "ProviderResponse",
    "ProviderSpec",
    "PythonProvider",
    "Unavailable",
    "make_provider",
]


def __getattr__(name: str) -> Any:
    # httpx (and what it pulls in) costs a tenth of a second per process, the agent CLI's process
    # machinery a few ms: imported when first used.
    if name == "HttpProvider":
        from .http import HttpProvider

        return HttpProvider
    if name == "CliProvider":
        from .cli import CliProvider

        return CliProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
