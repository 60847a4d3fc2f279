"""pytest-vibeeval: LLM and coding-agent eval suites as pytest items.

What a plugin needs to extend it (see docs/extending.md and :mod:`.hookspecs`)."""

from .checks import CheckRegistry, CheckType, Response, Verdict
from .providers.base import PromptRequest, Provider, ProviderError, ProviderResponse
from .providers.factory import ProviderSpec
from .providers.output import ParsedOutput
from .providers.parsers import ParserRegistry
from .results import EvalRecord, ResultsFile, RunRecord, ToolCallRecord
from .scoring.formula import FormulaPresets
from .scoring.variables import RunVariable, RunVariables

__version__ = "0.1.0"

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
