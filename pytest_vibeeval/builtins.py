"""The built-in check types, output parsers, formula presets, run variables, provider factory and
result writers, registered through pytest-vibeeval's own hooks like any plugin's (first, so a
plugin that registers a built-in name is the one told it exists)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .stash import get_state, rootdir_relative

if TYPE_CHECKING:
    from .providers.base import Provider
    from .providers.factory import ProviderSpec
    from .registry import CheckRegistry, FormulaPresets, ParserRegistry, RunVariables
    from .results import ResultsFile


# The built-ins fill a registry when the session first uses it: a run without evals imports none
# of them (see registry).


@pytest.hookimpl(tryfirst=True)
def pytest_vibeeval_register_checks(registry: CheckRegistry) -> None:
    def fill() -> None:
        from .checks import register_builtin_checks

        register_builtin_checks(registry)

    registry.defer(fill)


@pytest.hookimpl(tryfirst=True)
def pytest_vibeeval_register_parsers(registry: ParserRegistry) -> None:
    def fill() -> None:
        from .providers.parsers import BUILTIN_PARSERS

        for name, parser in BUILTIN_PARSERS.items():
            registry.register(name, parser)

    registry.defer(fill)


@pytest.hookimpl(tryfirst=True)
def pytest_vibeeval_register_formula_presets(registry: FormulaPresets) -> None:
    def fill() -> None:
        from .scoring.formula import BUILTIN_PRESETS

        for name, text in BUILTIN_PRESETS.items():
            registry.register(name, text)

    registry.defer(fill)


@pytest.hookimpl(tryfirst=True)
def pytest_vibeeval_register_run_variables(registry: RunVariables) -> None:
    def fill() -> None:
        from .scoring.variables import BUILTIN_RUN_VARIABLES

        for variable in BUILTIN_RUN_VARIABLES:
            registry.register(variable)

    registry.defer(fill)


@pytest.hookimpl(trylast=True)
def pytest_vibeeval_make_provider(spec: ProviderSpec) -> Provider | None:
    from .providers.factory import make_provider

    return make_provider(spec)


@pytest.hookimpl
def pytest_vibeeval_write_results(
    config: pytest.Config, results: ResultsFile, results_path: Path | None
) -> list[str] | None:
    """The HTML report (--vibe-html), the history line (--vibe-history) and the response cache's
    line (--vibe-cache)."""
    state = get_state(config)
    settings = state.settings
    lines: list[str] = []
    if settings.cache is not None:
        from .cache import summary_lines as cache_lines
        from .cache import unused_reason as cache_unused_reason
        from .results import run_records

        folder = rootdir_relative(settings.cache, config.rootpath)
        unused = cache_unused_reason(settings.repeats, settings.replay)
        lines.extend(cache_lines(run_records(results.runs), folder, unused))
    if settings.html is not None:
        from .report.html import write_html  # imported only for --vibe-html

        try:
            write_html(results, settings.html, state.renderer.redactor())
            lines.append(f"report: {settings.html}")
        except OSError as exc:
            lines.append(f"HTML report not written to {settings.html}: {exc.strerror or exc}")
    if settings.history is not None and results.partial:
        lines.append(f"history: no line for this partial run ({results.stopped_early})")
    elif settings.history is not None:
        from .report.baseline import append_history

        shown = rootdir_relative(results_path, config.rootpath) if results_path else None
        try:
            append_history(settings.history, results, shown)
        except OSError as exc:
            lines.append(f"history not written to {settings.history}: {exc.strerror or exc}")
    return lines
