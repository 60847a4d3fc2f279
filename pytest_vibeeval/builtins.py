"""The built-in check types, output parsers, formula presets, run variables, provider factory and
result writers, registered through pytest-vibeeval's own hooks like any plugin's (first, so a
plugin that registers a built-in name is the one told it exists)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cache import summary_lines as cache_lines
from .cache import unused_reason as cache_unused_reason
from .checks import BUILTIN_CHECKS, CheckRegistry
from .items import get_state, rootdir_relative
from .providers.base import Provider
from .providers.factory import ProviderSpec, make_provider
from .providers.parsers import BUILTIN_PARSERS, ParserRegistry
from .report.baseline import append_history
from .results import ResultsFile, run_records
from .scoring.formula import BUILTIN_PRESETS, FormulaPresets
from .scoring.variables import BUILTIN_RUN_VARIABLES, RunVariables


@pytest.hookimpl(tryfirst=True)
def pytest_vibeeval_register_checks(registry: CheckRegistry) -> None:
    for check_type in BUILTIN_CHECKS:
        registry.register(check_type)


@pytest.hookimpl(tryfirst=True)
def pytest_vibeeval_register_parsers(registry: ParserRegistry) -> None:
    for name, parser in BUILTIN_PARSERS.items():
        registry.register(name, parser)


@pytest.hookimpl(tryfirst=True)
def pytest_vibeeval_register_formula_presets(registry: FormulaPresets) -> None:
    for name, text in BUILTIN_PRESETS.items():
        registry.register(name, text)


@pytest.hookimpl(tryfirst=True)
def pytest_vibeeval_register_run_variables(registry: RunVariables) -> None:
    for variable in BUILTIN_RUN_VARIABLES:
        registry.register(variable)


@pytest.hookimpl(trylast=True)
def pytest_vibeeval_make_provider(spec: ProviderSpec) -> Provider | None:
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
        shown = rootdir_relative(results_path, config.rootpath) if results_path else None
        try:
            append_history(settings.history, results, shown)
        except OSError as exc:
            lines.append(f"history not written to {settings.history}: {exc.strerror or exc}")
    return lines
