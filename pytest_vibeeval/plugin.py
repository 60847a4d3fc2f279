"""pytest hooks of pytest-vibeeval. Only wiring: the logic lives in the modules it calls."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .aggregate import RESULT_PROPERTY, RUN_PROPERTY, RunInfo
from .collect import STATE_KEY, EvalItem, SuiteFile, get_state, provider_for
from .configurations import parse_selection, unknown_selection
from .providers import Provider
from .results import EvalRecord
from .resultsfile import build_results, write_results
from .state import Options, VibeState
from .summary import summary_lines
from .templates import Renderer, TemplateValues, parse_assignments

SUITE_SUFFIXES = (".eval.yaml", ".eval.yml")
YAML_SUFFIXES = (".yaml", ".yml")
USAGE_ERROR_OUTPUT = "vibeeval_usage_error"  # key in an xdist worker's workeroutput


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vibeeval", "LLM and agent evals (pytest-vibeeval)")
    group.addoption("--vibe-eval", metavar="NAMES|ALL", help="run only these evals (comma list)")
    group.addoption(
        "--vibe-config",
        metavar="IDS|ALL",
        help="run these configurations (comma list; default: defaultConfigurations, else all)",
    )
    group.addoption(
        "--vibe-results",
        metavar="PATH",
        help="write the results JSON here "
        "(default: .vibeeval/results/<timestamp>.json and latest.json under the rootdir)",
    )
    group.addoption(
        "--vibe-var",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="value for {{var('NAME')}} templates (repeatable)",
    )
    parser.addini("vibe_patterns", "extra glob patterns of YAML suite files", type="linelist", default=[])
    parser.addini("vibe_vars", "NAME=VALUE lines for {{var('NAME')}} templates", type="linelist", default=[])
    parser.addini("vibe_eval", "default for --vibe-eval", default="")
    parser.addini("vibe_config", "default for --vibe-config", default="")
    parser.addini("vibe_results", "default for --vibe-results", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vibeeval: an eval item of pytest-vibeeval")
    try:
        cli_vars = parse_assignments(config.getoption("vibe_var"), "--vibe-var")
        ini_vars = parse_assignments(config.getini("vibe_vars"), "vibe_vars (ini)")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    results = config.getoption("vibe_results") or config.getini("vibe_results") or None
    options = Options(
        evals=parse_selection(config.getoption("vibe_eval") or config.getini("vibe_eval") or None),
        configs=parse_selection(config.getoption("vibe_config") or config.getini("vibe_config") or None),
        results=Path(results).absolute() if results else None,
        patterns=tuple(config.getini("vibe_patterns")),
    )
    config.stash[STATE_KEY] = VibeState(options, Renderer(TemplateValues(cli_vars, ini_vars)))
    config.pluginmanager.register(SessionHooks(config), "vibeeval-session")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
    name = file_path.name
    if not name.endswith((".yaml", ".yml")):
        return None
    state = get_state(parent.config)
    rel = (
        file_path.relative_to(parent.config.rootpath).as_posix()
        if file_path.is_relative_to(parent.config.rootpath)
        else name
    )
    if (
        name.endswith(SUITE_SUFFIXES)
        or parent.session.isinitpath(file_path)
        or any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) for p in state.options.patterns)
    ):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture
def vibe_provider(request: pytest.FixtureRequest) -> Provider:
    """The provider answering the current eval item; override it in a conftest to substitute one."""
    item = request.node
    if not isinstance(item, EvalItem):
        raise pytest.UsageError("vibe_provider is only available to pytest-vibeeval eval items")
    return provider_for(item)


@pytest.fixture
def vibe_workdir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh directory for the current eval item's files: the agent's working directory and output."""
    state = get_state(request.config)
    return state.workdirs.new(lambda: tmp_path_factory.mktemp("vibeeval"), request.node.name)


class SessionHooks:
    """Hooks that need the session's config; registered per config in pytest_configure."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = get_state(config)
        self.controller = not hasattr(config, "workerinput")
        self.usage_error: str | None = None
        self.other_collection_errors = 0

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        state = self.state
        if not state.suites_collected:
            return
        for option, requested, known in (
            ("--vibe-config", state.options.configs, state.known_configs),
            ("--vibe-eval", state.options.evals, state.known_evals),
        ):
            problem = unknown_selection(option, requested, known)
            if problem:
                if self.controller:
                    raise pytest.UsageError(problem.message)
                # An xdist worker: a UsageError here would end only this worker and the controller
                # would report "no tests ran" (exit 5). Run nothing and let the controller raise it.
                self.config.workeroutput[USAGE_ERROR_OUTPUT] = problem.message  # type: ignore[attr-defined]
                items.clear()
                return

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Remember suite files that failed to load (on xdist, the controller sees workers' reports)."""
        if report.failed:
            if report.nodeid.endswith(YAML_SUFFIXES):
                if report.nodeid not in self.state.load_errors:
                    self.state.load_errors.append(report.nodeid)
            else:
                self.other_collection_errors += 1

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """A suite that fails to load stops only itself: the other files still run (and the
        session still fails). Other collection errors keep pytest's rule of stopping the run."""
        if self.state.load_errors and not self.other_collection_errors:
            self.config.option.continue_on_collection_errors = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """xdist controller: remember a usage error a worker found during its collection."""
        message = getattr(node, "workeroutput", {}).get(USAGE_ERROR_OUTPUT)
        if message and self.usage_error is None:
            self.usage_error = str(message)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        result = yield
        if self.usage_error is not None:
            raise pytest.UsageError(self.usage_error)
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Take our records off the report (controller only) and leave concise JUnit properties."""
        if not self.controller:
            return
        aggregator = self.state.aggregator
        ours = [(k, v) for k, v in report.user_properties if k in (RUN_PROPERTY, RESULT_PROPERTY)]
        crashed = report.when not in ("setup", "call", "teardown")
        if not ours and not (crashed and report.nodeid.split("::")[0].endswith((".yaml", ".yml"))):
            return
        info = record = None
        for key, value in ours:
            if key == RUN_PROPERTY:
                info = RunInfo(**json.loads(str(value)))
            else:
                record = EvalRecord.model_validate_json(str(value))
        aggregator.add_report(
            report.nodeid,
            report.when or "",
            report.outcome,
            info,
            record,
            _longrepr_text(report),
            hasattr(report, "wasxfail"),
        )
        report.user_properties = [(k, v) for k, v in report.user_properties if (k, v) not in ours]
        if info is not None:
            report.user_properties.append(("vibe.configuration", info.configuration))
        if record is not None:
            for name in ("outcome", "latency", "cost", "input_tokens", "output_tokens"):
                value = getattr(record, name)
                if value is not None:
                    report.user_properties.append((f"vibe.{name}", value))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Aggregate on the controller before the JUnit writer writes its file."""
        state = self.state
        if not self.controller or not (state.aggregator.items or state.load_errors):
            return
        runs = state.aggregator.runs()
        state.runs = list(runs)
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        results = build_results(runs, state.started_at, interrupted, state.load_errors)
        state.results_written = write_results(results, state.options.results, self.config.rootpath)
        _add_junit_suite_properties(self.config, runs)


def _longrepr_text(report: pytest.TestReport) -> str | None:
    if report.longrepr is None:
        return None
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    return str(report.longrepr)


def _add_junit_suite_properties(config: pytest.Config, runs: list[Any]) -> None:
    try:
        from _pytest.junitxml import xml_key  # private: record_testsuite_property fails under xdist
    except ImportError:  # pragma: no cover - a test fails if pytest moves it
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for run in runs:
        prefix = f"vibe.{run.suite}.{run.configuration}"
        xml.add_global_property(f"{prefix}.score", "null" if run.score is None else run.score)
        xml.add_global_property(
            f"{prefix}.success_pct",
            "null" if run.metrics["success_pct"] is None else run.metrics["success_pct"],
        )
        xml.add_global_property(f"{prefix}.score_formula", run.score_formula)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> Generator[None]:
    """Print the Run Summary after pytest's own short test summary."""
    result = yield
    if not hasattr(config, "workerinput") and STATE_KEY in config.stash:
        _write_summary(terminalreporter, config)
    return result


def _write_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = get_state(config)
    if not state.runs and not state.load_errors:
        return
    terminalreporter.write_sep("=", "Run Summary")
    if state.load_errors:
        terminalreporter.write_line(
            f"{len(state.load_errors)} suite file(s) failed to load and did not run (errors above): "
            + ", ".join(state.load_errors)
        )
    for line in summary_lines(state.runs):  # type: ignore[arg-type]
        terminalreporter.write_line(line)
    for path in state.results_written:
        terminalreporter.write_line(f"results: {path}")
