"""pytest hooks of pytest-vibeeval. Only wiring: the logic lives in the modules it calls."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import tempfile
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .aggregate import RESULT_PROPERTY, RUN_PROPERTY, RunInfo
from .baseline import BaselineError, append_history, compare_results, load_baseline, resolve_baseline
from .budget import Budget
from .collect import EvalItem, SuiteFile, provider_for
from .configurations import parse_selection, unknown_selection
from .html_report import write_html
from .items import STATE_KEY, get_state, phases_of, rootdir_relative
from .junit import add_gate_cases, add_suite_properties
from .link_cycles import is_link_cycle
from .phases import unfinished_record
from .progress import LiveStatus, ProgressBoard, Running
from .providers import Provider
from .results import EvalRecord, ResultsFile, RunRecord
from .resultsfile import DEFAULT_HISTORY, build_results, write_results
from .resume import ResumeIndex, load_resume
from .runner_config import EVAL_CONFIG_NAME, ResolvedEval
from .sandbox import SANDBOX_MODES, SandboxUnavailable
from .state import Options, VibeState
from .summary import budget_lines, run_title, summary_lines, workspace_lines
from .templates import Renderer, TemplateValues, parse_assignments
from .workspace import DEFAULT_SUBTASK_GLOBS, RegistryCommands
from .workspace_collect import (
    WorkspaceConfigFile,
    discard,
    prepare_workspace,
    registry_commands,
    session_sandbox,
    workspace_item,
)

SUITE_SUFFIXES = (".eval.yaml", ".eval.yml")
YAML_SUFFIXES = (".yaml", ".yml")
SOURCE_SUFFIXES = (*YAML_SUFFIXES, EVAL_CONFIG_NAME)  # files whose load errors stop only themselves
USAGE_ERROR_OUTPUT = "vibeeval_usage_error"  # key in an xdist worker's workeroutput
SESSION_PLUGIN = "vibeeval-session"
LIVE_PLUGIN = "vibeeval-live-status"
LOCK_DIR_INPUT = "vibeeval_lock_dir"  # key in an xdist worker's workerinput
RESUME_INPUT = "vibeeval_resume"  # the --vibe-resume index, for workers (remote ones have no file)
MAX_REPEATS = 1000


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
    group.addoption(
        "--vibe-breakdown",
        action="store_true",
        default=None,
        help="show each score formula with the run's values substituted (also shown with -v)",
    )
    group.addoption(
        "--vibe-gate-only",
        action="store_true",
        default=None,
        help="failed evals of runs with a score gate (score.min/max) do not fail the session: "
        "the gate decides the exit code",
    )
    group.addoption(
        "--vibe-sandbox",
        choices=SANDBOX_MODES,
        default=None,
        help="where coding agents run: bwrap (only their workspace writable), none, or auto "
        "(bwrap when it works here; the default)",
    )
    group.addoption(
        "--vibe-keep-workspaces",
        action="store_true",
        default=None,
        help="keep each coding-agent item's workspace and grading copy, and print where",
    )
    group.addoption(
        "--vibe-max-cost",
        metavar="USD",
        type=float,
        default=None,
        help="start no new eval once the run has spent this much (reported costs)",
    )
    group.addoption(
        "--vibe-record",
        metavar="DIR",
        help="store every provider answer (response, usage, cost, latency) in this folder",
    )
    group.addoption(
        "--vibe-replay",
        metavar="DIR",
        help="answer every prompt from this folder of recorded answers (a miss is an error)",
    )
    group.addoption(
        "--vibe-repeat",
        metavar="N",
        type=int,
        default=None,
        help="run every eval N times, as N items (ids end in -r1 … -rN); adds pass rates, pass@k, "
        "pass^k and a score over the repeats",
    )
    group.addoption(
        "--vibe-baseline",
        metavar="PATH|latest",
        help="compare every suite × configuration with this results JSON (latest: the previous run's)",
    )
    group.addoption(
        "--vibe-html",
        metavar="PATH",
        help="also write a self-contained HTML report of the results here",
    )
    group.addoption(
        "--vibe-resume",
        metavar="PATH|latest",
        nargs="?",
        const="latest",
        default=None,
        help="reuse the finished evals of an earlier (interrupted) run's results file and run only the "
        "rest (default: latest)",
    )
    group.addoption(
        "--vibe-fail-on-regression",
        action="store_true",
        default=None,
        help="with --vibe-baseline: a score regression fails the session",
    )
    group.addoption(
        "--vibe-history",
        metavar="PATH",
        help="append one JSON line per suite × configuration to this file "
        "(default: .vibeeval/history.jsonl under the rootdir; '' for none)",
    )
    parser.addini(
        "vibe_timeout_margin",
        "seconds the pytest-timeout backstop of every eval item adds to its own command timeouts",
        default="30",
    )
    parser.addini(
        "vibe_max_processes",
        "processes a coding agent may run at once, where a pids cgroup can be made (0: no limit)",
        default="1024",
    )
    parser.addini("vibe_repeat", "default for --vibe-repeat", default="")
    parser.addini("vibe_html", "default for --vibe-html", default="")
    parser.addini(
        "vibe_progress_interval",
        "seconds between the live progress lines when the output is not a terminal (0: none)",
        default="30",
    )
    parser.addini("vibe_baseline", "default for --vibe-baseline", default="")
    parser.addini(
        "vibe_fail_on_regression", "default for --vibe-fail-on-regression", type="bool", default=False
    )
    parser.addini("vibe_history", "default for --vibe-history", default=None)
    parser.addini("vibe_max_cost", "default for --vibe-max-cost", default="")
    parser.addini("vibe_sandbox", "default for --vibe-sandbox (auto, bwrap or none)", default="auto")
    parser.addini(
        "vibe_sandbox_writable",
        "extra folders a sandboxed agent may write to (e.g. its tool's config folder, ~ expanded)",
        type="linelist",
        default=[],
    )
    parser.addini("vibe_keep_workspaces", "default for --vibe-keep-workspaces", type="bool", default=False)
    parser.addini(
        "vibe_workspace_ignore",
        "glob names left out when copying workspace templates (e.g. node_modules, .git); default: none",
        type="linelist",
        default=[],
    )
    parser.addini(
        "vibe_subtask_globs",
        "where grade steps' JUnit XML / results JSON files are looked for, relative to the grading folder",
        type="linelist",
        default=list(DEFAULT_SUBTASK_GLOBS),
    )
    parser.addini("vibe_breakdown", "default for --vibe-breakdown", type="bool", default=False)
    parser.addini("vibe_gate_only", "default for --vibe-gate-only", type="bool", default=False)
    parser.addini("vibe_patterns", "extra glob patterns of YAML suite files", type="linelist", default=[])
    parser.addini("vibe_vars", "NAME=VALUE lines for {{var('NAME')}} templates", type="linelist", default=[])
    parser.addini("vibe_eval", "default for --vibe-eval", default="")
    parser.addini("vibe_config", "default for --vibe-config", default="")
    parser.addini("vibe_results", "default for --vibe-results", default="")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vibeeval: an eval item of pytest-vibeeval")
    try:
        cli_vars = parse_assignments(config.getoption("vibe_var"), "--vibe-var")
        ini_vars = parse_assignments(config.getini("vibe_vars"), "vibe_vars (ini)")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    results = config.getoption("vibe_results") or config.getini("vibe_results") or None
    sandbox_mode = config.getoption("vibe_sandbox") or config.getini("vibe_sandbox")
    if sandbox_mode not in SANDBOX_MODES:
        raise pytest.UsageError(
            f"vibe_sandbox (ini): {sandbox_mode!r} is not one of {', '.join(SANDBOX_MODES)}"
        )
    max_cost = config.getoption("vibe_max_cost")
    if max_cost is None and config.getini("vibe_max_cost"):
        try:
            max_cost = float(config.getini("vibe_max_cost"))
        except ValueError:
            raise pytest.UsageError(
                f"vibe_max_cost (ini): {config.getini('vibe_max_cost')!r} is not a number"
            ) from None
    if max_cost is not None and not max_cost > 0:
        raise pytest.UsageError(f"--vibe-max-cost: {max_cost:g} is not a positive amount of USD")
    repeats = _repeats(config)
    record, replay = config.getoption("vibe_record"), config.getoption("vibe_replay")
    if record and replay:
        raise pytest.UsageError("--vibe-record and --vibe-replay exclude each other: record, then replay")
    if replay and not Path(replay).is_dir():
        raise pytest.UsageError(f"--vibe-replay: {replay} is not a folder of recorded answers")
    options = Options(
        evals=parse_selection(config.getoption("vibe_eval") or config.getini("vibe_eval") or None),
        configs=parse_selection(config.getoption("vibe_config") or config.getini("vibe_config") or None),
        results=Path(results).absolute() if results else None,
        patterns=tuple(config.getini("vibe_patterns")),
        sandbox_mode=sandbox_mode,
        sandbox_writable=tuple(
            Path(p).expanduser().absolute() for p in config.getini("vibe_sandbox_writable")
        ),
        keep_workspaces=_flag(config, "vibe_keep_workspaces"),
        workspace_ignore=tuple(config.getini("vibe_workspace_ignore")),
        subtask_globs=tuple(config.getini("vibe_subtask_globs")),
        max_cost=max_cost,
        record=Path(record).absolute() if record else None,
        replay=Path(replay).absolute() if replay else None,
        repeats=repeats,
        fail_on_regression=_flag(config, "vibe_fail_on_regression"),
        history=_history_path(config),
        timeout_margin=_ini_seconds(config, "vibe_timeout_margin"),
        progress_interval=_ini_seconds(config, "vibe_progress_interval"),
        max_processes=_ini_count(config, "vibe_max_processes"),
    )
    state = VibeState(options, Renderer(TemplateValues(cli_vars, ini_vars)))
    if not hasattr(config, "workerinput"):
        _read_baseline(config, state)
    _read_resume(config, state)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get(LOCK_DIR_INPUT):
        state.lock_dir = Path(workerinput[LOCK_DIR_INPUT])
    else:
        state.lock_dir = Path(tempfile.mkdtemp(prefix="pytest-vibeeval-locks-"))
        state.owns_lock_dir = True
    state.budget = Budget(state.lock_dir, max_cost)
    if sandbox_mode == "bwrap":  # fail now rather than at every item
        try:
            session_sandbox(state)
        except SandboxUnavailable as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(SessionHooks(config), SESSION_PLUGIN)
    try:
        config.hook.pytest_vibeeval_register_checks.call_historic(kwargs={"registry": state.registry})
    except ValueError as exc:  # a name registered twice
        raise pytest.UsageError(f"pytest_vibeeval_register_checks: {exc}") from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: the workers share its folder of concurrency slots."""
    state = get_state(node.config)
    if state.lock_dir is not None:
        node.workerinput[LOCK_DIR_INPUT] = str(state.lock_dir)
    if state.resume is not None:
        node.workerinput[RESUME_INPUT] = state.resume.to_json()


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None and state.lock_dir is not None and state.owns_lock_dir:
        shutil.rmtree(state.lock_dir, ignore_errors=True)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Skip a symlinked folder that leads back to a folder above it (e.g. a workspace template's
    link to an ancestor): pytest would collect the tree again through it, link after link."""
    return True if is_link_cycle(collection_path) else None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    name = file_path.name
    if name == EVAL_CONFIG_NAME:
        return WorkspaceConfigFile.from_parent(parent, path=file_path)
    if not name.endswith((".yaml", ".yml")):
        return None
    state = get_state(parent.config)
    rel = rootdir_relative(file_path, parent.config.rootpath)
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


@pytest.fixture
def vibe_evaluation(request: pytest.FixtureRequest) -> ResolvedEval:
    """The current coding-agent item's evaluation: template, grading folder, prompt, steps."""
    return workspace_item(request, "vibe_evaluation").evaluation


@pytest.fixture
def vibe_workspace(request: pytest.FixtureRequest, vibe_workdir: Path) -> Generator[Path]:
    """The coding-agent item's workspace, ready for the agent: by default ``vibe_workdir/workspace``,
    a copy of the evaluation's template (removed afterwards unless --vibe-keep-workspaces).
    Override it in a conftest to prepare workspaces another way, e.g. as git worktrees."""
    item = workspace_item(request, "vibe_workspace")
    workspace = prepare_workspace(item, vibe_workdir)
    yield workspace
    discard(workspace, request.config)


@pytest.fixture
def vibe_commands(request: pytest.FixtureRequest, vibe_workdir: Path) -> RegistryCommands:
    """Runs the coding-agent item's agent and registry steps by name and records them
    (:class:`pytest_vibeeval.workspace.RegistryCommands`); override it to run them another way."""
    return registry_commands(workspace_item(request, "vibe_commands"), vibe_workdir)


class SessionHooks:
    """Hooks that need the session's config; registered per config in pytest_configure."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = get_state(config)
        self.controller = not hasattr(config, "workerinput")
        self.usage_error: str | None = None
        self.other_collection_errors = 0
        self.failed_nodeids: set[str] = set()  # controller: items with a failed report, ours or not
        self.gate_only = _flag(config, "vibe_gate_only")
        self.notes: list[str] = []  # what the session's end did or could not do (exit code, files)
        self.regression_note: str | None = None  # what --vibe-fail-on-regression did to it
        self.lost_workers: list[str] = []  # xdist workers that went down with an error
        self.board = ProgressBoard(self.state.lock_dir)  # what this process runs now (live progress)

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
            if report.nodeid.endswith(SOURCE_SUFFIXES):
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
        """xdist controller: remember a usage error a worker found during its collection, and a
        worker that was lost (it crashed, e.g. killed by the item it ran)."""
        message = getattr(node, "workeroutput", {}).get(USAGE_ERROR_OUTPUT)
        if message and self.usage_error is None:
            self.usage_error = str(message)
        if error is not None:
            name = getattr(getattr(node, "gateway", None), "id", "?")
            self.lost_workers.append(
                f"{name}: {str(error).strip().splitlines()[0] if str(error).strip() else error}"
            )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        live = _start_live_status(self.config) if self.controller else None
        try:
            result = yield
        finally:
            if live is not None:
                live.stop()
                self.config.pluginmanager.unregister(name=LIVE_PLUGIN)
        if self.usage_error is not None:
            raise pytest.UsageError(self.usage_error)
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Put the item on this process's progress board as it enters each phase."""
        phases = phases_of(item)
        if phases is None or self.config.get_verbosity() < 0 or not self.state.options.progress_interval:
            return  # nothing would show it (-q, or vibe_progress_interval = 0)
        board, nodeid, started = self.board, item.nodeid, time.time()

        def show(phase: str, detail: str) -> None:
            board.show(Running(nodeid, phase, detail, started, time.time()))

        phases.listener = show

    def pytest_runtest_logfinish(self) -> None:
        self.board.clear()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """The record travels on the call report only: the teardown report would copy it again
        (responses can be megabytes) for the controller to parse twice."""
        report = yield
        stopped = call.excinfo is not None and not call.excinfo.errisinstance(pytest.skip.Exception)
        if stopped and call.when in ("setup", "call"):  # failed, or xfailed: the item's own marker
            _record_unfinished(item, report)
        if call.when == "call":
            item.user_properties[:] = [p for p in item.user_properties if p[0] != RESULT_PROPERTY]
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Take our records off the report (controller only); the JUnit properties are added at the end."""
        if not self.controller:
            return
        if report.failed:
            self.failed_nodeids.add(report.nodeid)
        aggregator = self.state.aggregator
        ours = [(k, v) for k, v in report.user_properties if k in (RUN_PROPERTY, RESULT_PROPERTY)]
        crashed = report.when not in ("setup", "call", "teardown")
        if not ours and not (crashed and report.nodeid.split("::")[0].endswith(SOURCE_SUFFIXES)):
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

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Aggregate on the controller before the JUnit writer writes its file, and let the score
        gates decide the exit code (pytest returns ``session.exitstatus`` after this hook)."""
        state = self.state
        if not self.controller or not (state.aggregator.items or state.load_errors):
            return
        if self.config.option.collectonly:
            return  # nothing ran: no results to write
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        runs = state.aggregator.runs(interrupted)
        state.runs = list(runs)
        results = build_results(runs, state.started_at, interrupted, state.load_errors)
        if state.baseline is not None:
            results = self._compare(results)
            runs = state.runs = list(results.runs)
        state.results_written = write_results(results, state.options.results, self.config.rootpath)
        html = self.config.getoption("vibe_html") or self.config.getini("vibe_html")
        if html:
            path = Path(html).absolute()
            try:
                write_html(results, path)
                state.report_written = path
            except OSError as exc:
                self.notes.append(f"HTML report not written to {path}: {exc.strerror or exc}")
        if state.options.history is not None:
            written = state.results_written[0] if state.results_written else None
            shown = rootdir_relative(written, self.config.rootpath) if written else None
            try:
                append_history(state.options.history, results, shown)
            except OSError as exc:
                self.notes.append(f"history not written to {state.options.history}: {exc.strerror or exc}")
        add_suite_properties(self.config, runs)
        add_gate_cases(self.config, runs)
        self._apply_gates(session, runs)
        self._apply_regressions(session, runs)

    def _compare(self, results: ResultsFile) -> ResultsFile:
        """The results with each run compared with the baseline's same suite × configuration."""
        state = self.state
        assert state.baseline is not None and state.baseline_path is not None
        comparison = compare_results(results, state.baseline, state.baseline_path)
        state.baseline_missing = comparison.missing
        compared = {id(run): record for run, record in comparison.pairs}
        runs = [run.model_copy(update={"baseline": compared.get(id(run))}) for run in results.runs]
        return results.model_copy(update={"runs": runs})

    def _apply_regressions(self, session: pytest.Session, runs: list[RunRecord]) -> None:
        """--vibe-fail-on-regression: a run that regressed against the baseline fails the session."""
        regressed = [run for run in runs if run.baseline is not None and run.baseline.label == "regression"]
        if not (self.state.options.fail_on_regression and regressed):
            return
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        shown = ", ".join(run_title(run) for run in regressed[:3]) + (", …" if len(regressed) > 3 else "")
        self.regression_note = (
            f"--vibe-fail-on-regression: {len(regressed)} run(s) regressed against the baseline ({shown})"
        )

    def _apply_gates(self, session: pytest.Session, runs: list[RunRecord]) -> None:
        """A failed gate turns exit code 0 into 1. Failed runs of an eval whose pass rate met its
        min_pass_rate do not fail the session; with vibe_gate_only neither do failed evals of gated
        runs. When those are the session's only failures, the gates alone decide (0 or 1)."""
        gated = [run for run in runs if run.gate is not None]
        gate_failed = any(run.gate is not None and not run.gate.passed for run in runs)
        by_rate = {
            record.nodeid
            for run in runs
            for stats in run.eval_stats
            if stats.passed_by_rate
            for record in run.evals
            if record.name == stats.name
        }
        gate_only = self.gate_only and bool(gated)
        forgiven_by_rate = self.failed_nodeids & by_rate
        if (gate_only or forgiven_by_rate) and session.exitstatus == pytest.ExitCode.TESTS_FAILED:
            covered = set(by_rate)
            if gate_only:
                covered |= {record.nodeid for run in gated for record in run.evals}
            others = sorted(self.failed_nodeids - covered)
            blockers = []
            if others:
                shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
                where = "outside runs with a score gate" if gate_only else "not forgiven by a min_pass_rate"
                blockers.append(f"{len(others)} failure(s) {where} ({shown})")
            if self.state.load_errors or self.other_collection_errors:
                blockers.append("collection errors")
            if session.shouldfail or session.shouldstop:
                blockers.append("the session stopped early (-x/--maxfail)")
            what = "vibe_gate_only" if gate_only else "min_pass_rate"
            if blockers:
                self.notes.append(f"{what} not applied: " + "; ".join(blockers))
            else:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED if gate_failed else pytest.ExitCode.OK
                notes = []
                if forgiven_by_rate:
                    notes.append(
                        f"min_pass_rate: {len(forgiven_by_rate)} failed run(s) of evals that passed often "
                        "enough do not fail the session"
                    )
                if gate_only:
                    notes.append(
                        f"vibe_gate_only: {len(self.failed_nodeids)} failed eval(s) do not fail the session;"
                        f" the score gates decide the exit code ({int(session.exitstatus)})"
                    )
                self.notes.append("; ".join(notes))
        if gate_failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _start_live_status(config: pytest.Config) -> LiveStatus | None:
    """The controller's live progress display, unless -q, no terminal reporter or no lock folder."""
    state = get_state(config)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if config.get_verbosity() < 0 or reporter is None or state.lock_dir is None:
        return None
    interval = state.options.progress_interval
    if interval == 0:
        return None
    writer = reporter._tw  # pytest's TerminalWriter: its file and the line it is writing
    stream, owned = _terminal_stream(config, writer._file)
    live = LiveStatus(
        state.lock_dir,
        stream,
        tty=bool(getattr(writer._file, "isatty", lambda: False)()),
        current_line=lambda: str(getattr(writer, "_current_line", "")),
        width=lambda: int(writer.fullwidth),
        interval=interval,
        sync=writer.flush,
        owns_stream=owned,
    )
    config.pluginmanager.register(LiveHooks(live), LIVE_PLUGIN)
    live.start()
    return live


def _terminal_stream(config: pytest.Config, default: Any) -> tuple[Any, bool]:
    """Where the status goes: the terminal itself. In a serial run the items' output is captured
    at the file-descriptor level while they run, which would swallow pytest's own stream; pytest's
    capture keeps a duplicate of the real descriptor (private API; falls back to pytest's stream)."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    out = getattr(getattr(capman, "_global_capturing", None), "out", None)
    saved = getattr(out, "targetfd_save", None)
    if not isinstance(saved, int):
        return default, False
    try:
        return open(os.dup(saved), "w", encoding="utf-8", errors="replace"), True
    except OSError:
        return default, False


class LiveHooks:
    """Keeps the live status line out of pytest's way: cleared while pytest writes a report."""

    def __init__(self, live: LiveStatus) -> None:
        self.live = live

    def _around(self) -> Generator[None, object, object]:
        paused = False
        try:
            self.live.pause()
            paused = True
            return (yield)
        finally:
            if paused:
                self.live.resume()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logstart(self) -> Generator[None, object, object]:
        return (yield from self._around())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self) -> Generator[None, object, object]:
        return (yield from self._around())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logfinish(self) -> Generator[None, object, object]:
        return (yield from self._around())


def _record_unfinished(item: pytest.Item, report: pytest.TestReport) -> None:
    """An eval item that failed without leaving its result (its timeout backstop fired, a fixture
    raised) gets one: an error naming the phase it was in, with the steps it finished."""
    phases = phases_of(item)
    if phases is None or any(key == RESULT_PROPERTY for key, _ in report.user_properties):
        return
    info = getattr(item, "info", None)
    if not isinstance(info, RunInfo):
        return
    commands = getattr(item, "funcargs", {}).get("vibe_commands")
    steps = list(commands.steps) if isinstance(commands, RegistryCommands) else []
    record = unfinished_record(
        info.eval_id, info.named, item.nodeid, info.repeat, phases, _longrepr_text(report) or "", steps
    )
    report.user_properties.append((RESULT_PROPERTY, record.model_dump_json()))


def _longrepr_text(report: pytest.TestReport) -> str | None:
    """The failure text, led by the exception line (e.g. a pytest-timeout ``Failed: Timeout``)."""
    if report.longrepr is None:
        return None
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None)
    text = str(report.longrepr)
    return f"{crash}\n{text}" if crash else text


def _ini_count(config: pytest.Config, name: str) -> int:
    """An ini option that is a whole number >= 0; a usage error otherwise."""
    value = config.getini(name)
    if not str(value).strip().isdigit():
        raise pytest.UsageError(f"{name} (ini): {value!r} is not a whole number >= 0")
    return int(value)


def _ini_seconds(config: pytest.Config, name: str) -> float:
    """An ini option that is a finite number of seconds >= 0; a usage error otherwise."""
    value = config.getini(name)
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise pytest.UsageError(f"{name} (ini): {value!r} is not a number of seconds >= 0")
    return seconds


def _history_path(config: pytest.Config) -> Path | None:
    """--vibe-history, else the ini value, else ``.vibeeval/history.jsonl`` under the rootdir; '' for none."""
    value = config.getoption("vibe_history")
    if value is None:
        value = config.getini("vibe_history")
    if value is None:
        return config.rootpath / DEFAULT_HISTORY
    return Path(value).absolute() if str(value).strip() else None


def _read_baseline(config: pytest.Config, state: VibeState) -> None:
    """Read --vibe-baseline now: a usage error before anything runs, and ``latest`` is the previous
    run's file, not the one this session writes."""
    spec = config.getoption("vibe_baseline") or config.getini("vibe_baseline") or None
    if spec is None:
        if state.options.fail_on_regression:
            raise pytest.UsageError("--vibe-fail-on-regression needs --vibe-baseline PATH|latest")
        return
    path = resolve_baseline(spec, config.rootpath, state.options.results)
    try:
        state.baseline = load_baseline(path)
    except BaselineError as exc:
        hint = " (`latest` is the previous run's results file: run once without --vibe-baseline)"
        raise pytest.UsageError(f"--vibe-baseline: {exc}{hint if spec == 'latest' else ''}") from None
    state.baseline_path = rootdir_relative(path.absolute(), config.rootpath)


def _read_resume(config: pytest.Config, state: VibeState) -> None:
    """Read --vibe-resume now, before this session writes its results (``latest`` is the file as
    the earlier run left it). xdist workers get the controller's index, so they need no file."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        if workerinput.get(RESUME_INPUT):
            state.resume = ResumeIndex.from_json(workerinput[RESUME_INPUT])
        return
    spec = config.getoption("vibe_resume")
    if spec is None:
        return
    path = resolve_baseline(spec, config.rootpath, state.options.results)
    shown = rootdir_relative(path.absolute(), config.rootpath)
    try:
        state.resume = load_resume(path, shown)
    except BaselineError as exc:
        hint = " (`latest` is the previous run's results file; no run wrote it yet)"
        raise pytest.UsageError(f"--vibe-resume: {exc}{hint if spec == 'latest' else ''}") from None


def _repeats(config: pytest.Config) -> int:
    value: object = config.getoption("vibe_repeat")
    where = "--vibe-repeat"
    if value is None:
        value, where = config.getini("vibe_repeat") or "1", "vibe_repeat (ini)"
    try:
        repeats = int(str(value))
    except ValueError:
        raise pytest.UsageError(f"{where}: {value!r} is not a whole number") from None
    if not 1 <= repeats <= MAX_REPEATS:
        raise pytest.UsageError(f"{where}: {repeats} is not between 1 and {MAX_REPEATS}")
    return repeats


def _flag(config: pytest.Config, name: str) -> bool:
    """A boolean option: the command line if given, else the ini value."""
    option = config.getoption(name)
    return bool(config.getini(name)) if option is None else bool(option)


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
    breakdown = config.get_verbosity() >= 1 or _flag(config, "vibe_breakdown")
    for line in summary_lines(state.runs, breakdown):
        if line.startswith("GATE FAILED: "):
            terminalreporter.write_line(line, red=True, bold=True)
        else:
            terminalreporter.write_line(line)
    mode = state.options.sandbox_mode
    unsandboxed = any(record.sandbox == "none" for run in state.runs for record in run.evals)
    reason = session_sandbox(state).reason if mode == "auto" and unsandboxed else None
    for line in budget_lines(state.runs, state.options.max_cost):
        terminalreporter.write_line(line)
    for line in workspace_lines(state.runs, mode, reason):
        terminalreporter.write_line(line)
    hooks = config.pluginmanager.get_plugin(SESSION_PLUGIN)
    if state.resume is not None:
        records = [record for run in state.runs for record in run.evals]
        reused = sum(1 for record in records if record.reused_from is not None)
        terminalreporter.write_line(
            f"Resumed: {reused} eval(s) reused from {state.resume.source}, "
            f"{len(records) - reused} run in this session (--vibe-resume)"
        )
    if state.baseline_path is not None:
        terminalreporter.write_line(f"baseline: {state.baseline_path}")
        if state.baseline_missing:
            shown = ", ".join(state.baseline_missing[:5]) + (" …" if len(state.baseline_missing) > 5 else "")
            terminalreporter.write_line(f"  in the baseline but not in this session: {shown}")
    if isinstance(hooks, SessionHooks) and hooks.lost_workers:
        count = len(hooks.lost_workers)
        which = "; ".join(hooks.lost_workers[:3])
        terminalreporter.write_line(
            f"{count} xdist worker{' was' if count == 1 else 's were'} lost ({which}): "
            "the item each was running is an error above; the other items ran on",
            red=True,
        )
    if isinstance(hooks, SessionHooks):
        for note in (*hooks.notes, hooks.regression_note):
            if note:
                terminalreporter.write_line(note, red=note is hooks.regression_note)
    for path in state.results_written:
        terminalreporter.write_line(f"results: {path}")
    if state.report_written is not None:
        terminalreporter.write_line(f"report: {state.report_written}")
