"""pytest-vibeeval: LLM and coding-agent eval suites as pytest items."""

__version__ = "0.1.0"

__all__ = ["__version__"]
