"""Parsers of agent CLIs' own output formats (``output.parser``), where dotted paths cannot say
where the answer is: the final response, cost, tokens, the agent's latency and its tool calls.
The registry and the built-in table are here; each agent's parser is a module of its own
(``parse_claude``, ``parse_codex``, ``parse_gemini``, ``parse_aider``) over ``parsing``.

Each parser takes the path of the agent's stdout (already checked against ``max_output_bytes``)
and returns a :class:`ParsedOutput`, or raises :class:`Malformed` saying what is wrong; the CLI
provider turns that into the item's error, naming the parser. JSON lines are read one at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

from ..models import OutputSpec
from ..registry import ParserRegistry
from .output import OutputError, ParsedOutput, parse_output
from .parse_aider import parse_aider
from .parse_claude import parse_claude_code
from .parse_codex import parse_codex
from .parse_gemini import parse_gemini
from .parsing import AgentReported, Malformed

Parser = Callable[[Path], ParsedOutput]


def parse_with(name: str, path: Path, parsers: Mapping[str, Parser] | None = None) -> ParsedOutput:
    """Run the parser ``name`` on the output at ``path``; :class:`OutputError` names the parser."""
    try:
        return (BUILTIN_PARSERS if parsers is None else parsers)[name](path)
    except Malformed as exc:
        raise OutputError(f"output.parser {name!r}: {exc}", isinstance(exc, AgentReported)) from None


def parse_agent_output(
    path: Path, spec: OutputSpec, parsers: Mapping[str, Parser] | None = None
) -> ParsedOutput:
    """An agent's stdout at ``path`` read as its configuration's ``output`` says: with the named
    parser (from ``parsers``, the built-ins by default), else as text, JSON or JSON lines; raises
    :class:`OutputError`."""
    return parse_with(spec.parser, path, parsers) if spec.parser else parse_output(path, spec)


BUILTIN_PARSERS: Mapping[str, Parser] = MappingProxyType(
    {
        "claude-code": parse_claude_code,
        "codex": parse_codex,
        "gemini": parse_gemini,
        "llxprt": parse_gemini,  # a fork of Gemini CLI, with its output formats
        "aider": parse_aider,
    }
)


def builtin_parsers() -> ParserRegistry:
    """A registry holding the built-in parsers only."""
    parsers = ParserRegistry()
    for name, parser in BUILTIN_PARSERS.items():
        parsers.register(name, parser)
    return parsers
