"""pytest-vibeeval: LLM and coding-agent eval suites as pytest items.

What a plugin needs to extend it (see docs/extending.md and :mod:`.hookspecs`). The names are
imported from their modules when first used: importing a submodule (as pytest does the plugin)
does not import them all."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .checks import CheckType, Response, Verdict
    from .providers.base import PromptRequest, Provider, ProviderError, ProviderResponse
    from .providers.factory import ProviderSpec
    from .providers.output import ParsedOutput
    from .registry import CheckRegistry, FormulaPresets, ParserRegistry, RunVariables
    from .results import EvalRecord, ResultsFile, RunRecord, ToolCallRecord
    from .scoring.variables import RunVariable

__version__ = "0.1.0"

# name: the module (relative to this package) that defines it
_EXPORTS = {
    "CheckRegistry": ".registry",
    "CheckType": ".checks",
    "Response": ".checks",
    "Verdict": ".checks",
    "PromptRequest": ".providers.base",
    "Provider": ".providers.base",
    "ProviderError": ".providers.base",
    "ProviderResponse": ".providers.base",
    "ProviderSpec": ".providers.factory",
    "ParsedOutput": ".providers.output",
    "ParserRegistry": ".registry",
    "EvalRecord": ".results",
    "ResultsFile": ".results",
    "RunRecord": ".results",
    "ToolCallRecord": ".results",
    "FormulaPresets": ".registry",
    "RunVariable": ".scoring.variables",
    "RunVariables": ".registry",
}

__all__ = [
    "CheckRegistry",
    "CheckType",
    "EvalRecord",
    "FormulaPresets",
    "ParsedOutput",
    "ParserRegistry",
    "PromptRequest",
    "Provider",
    "ProviderError",
    "ProviderResponse",
    "ProviderSpec",
    "Response",
    "ResultsFile",
    "RunRecord",
    "RunVariable",
    "RunVariables",
    "ToolCallRecord",
    "Verdict",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Not cached here: pytest's in-process runs (pytester) drop the modules a run imported, and a
    # cached name would then be another class than the one the next run's plugin checks against.
    return getattr(importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
