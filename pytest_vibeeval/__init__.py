"""pytest-vibeeval: LLM and coding-agent eval suites as pytest items."""

from .checks import CheckRegistry, CheckType, Response, Verdict

__version__ = "0.1.0"

__all__ = ["CheckRegistry", "CheckType", "Response", "Verdict", "__version__"]
