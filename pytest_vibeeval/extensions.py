"""What plugins can add to a session, in one object: check types, output parsers, formula presets
and run-wide variables. A session starts with empty registries that pytest-vibeeval's hooks fill
(the built-ins first, through the same hooks, see :mod:`.builtins`); code that runs outside a
session (the editor schemas, unit tests) uses :func:`builtin_extensions`."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from .registry import CheckRegistry, FormulaPresets, ParserRegistry, RunVariables, builtin_presets


@dataclass
class Extensions:
    """The registries of one session."""

    checks: CheckRegistry = field(default_factory=lambda: CheckRegistry(types=()))
    parsers: ParserRegistry = field(default_factory=ParserRegistry)
    formula_presets: FormulaPresets = field(default_factory=FormulaPresets)
    run_variables: RunVariables = field(default_factory=RunVariables)

    def validation_context(self) -> dict[str, Any]:
        """What the input models check names against while loading (pydantic's context)."""
        from .models import PARSERS_CONTEXT, RUN_VARIABLES_CONTEXT

        return {PARSERS_CONTEXT: self.parsers, RUN_VARIABLES_CONTEXT: self.run_variables}


@functools.cache
def builtin_extensions() -> Extensions:
    """The built-in registries alone (shared: read them, do not register into them)."""
    from .providers.parsers import builtin_parsers
    from .scoring.variables import builtin_run_variables

    return Extensions(CheckRegistry(), builtin_parsers(), builtin_presets(), builtin_run_variables())
