"""pytest-vibeeval's hooks: the one way to extend it. Implement them in a plugin or a
``conftest.py``; the built-ins are implemented the same way (:mod:`pytest_vibeeval.builtins`).

The ``register`` hooks are historic: a conftest found later in collection is still called, before
its suites load. Registering a name that exists (a built-in's too) is a usage error."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .providers.base import Provider
    from .providers.factory import ProviderSpec
    from .registry import CheckRegistry, FormulaPresets, ParserRegistry, RunVariables
    from .results import ResultsFile


@pytest.hookspec(historic=True)
def pytest_vibeeval_register_checks(registry: CheckRegistry) -> None:
    """Register check types with ``registry.register(CheckType(...))``: a YAML key, the type of its
    value (validated with pydantic), and a function of the value and the response."""


@pytest.hookspec(historic=True)
def pytest_vibeeval_register_parsers(registry: ParserRegistry) -> None:
    """Register output parsers with ``registry.register(name, parser)``: ``output.parser: name``
    then reads an agent's stdout with ``parser(path) -> ParsedOutput``."""


@pytest.hookspec(historic=True)
def pytest_vibeeval_register_formula_presets(registry: FormulaPresets) -> None:
    """Register formula presets with ``registry.register(name, text)``: a score formula that is
    just ``name`` stands for the formula ``text``."""


@pytest.hookspec(historic=True)
def pytest_vibeeval_register_run_variables(registry: RunVariables) -> None:
    """Register run-wide variables with ``registry.register(RunVariable(...))``: computed from each
    run's eval records (of every xdist worker) on the controller, usable in every score formula,
    shown in the results' ``variables`` (and with ``metric=True`` in ``metrics`` and the Run
    Summary's ``Metrics:`` line). One that raises or returns no number has no value, and the error
    is in the results' ``variable_errors``, the summary and, when the formula uses it, the score's
    ``score_error``."""


@pytest.hookspec(firstresult=True)
def pytest_vibeeval_make_provider(spec: ProviderSpec) -> Provider | None:
    """Return the provider that answers ``spec.configuration`` (None: not yours). The first
    provider returned wins; the built-in one (cli, python, http) is asked last."""


@pytest.hookspec
def pytest_vibeeval_write_results(
    config: pytest.Config, results: ResultsFile, results_path: Path | None
) -> list[str] | None:
    """Write the session's results somewhere else too (called on the controller at the session's
    end, after the results JSON at ``results_path``). Return lines for the Run Summary (where it
    was written, or why it was not), or None."""
