"""The xdist controller's (or a serial run's) session: it takes each item's record off its reports,
has the session's end (``session_finish.py``) build the runs, write the results, the HTML report
and the history, and apply the score gates and the baseline to the exit status, and prints the Run
Summary.

Registered only where that happens: never on an xdist worker, which does not import it."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from .collection_gc import freeze_controller, paused
from .errors import terminal_safe
from .filenames import SOURCE_SUFFIXES, SUITE_SUFFIXES, YAML_SUFFIXES
from .itemhooks import (
    ITEMS_PLUGIN,
    NOT_RUN_OUTPUT,
    NOTE_OUTPUT,
    RECORDINGS_OUTPUT,
    SIGNALLED_OUTPUT,
    STOPPED_OUTPUT,
    USAGE_ERROR_OUTPUT,
)
from .itemhooks import LOCK_DIR_INPUT as LOCK_DIR_INPUT
from .itemhooks import RESUME_INPUT as RESUME_INPUT
from .live import start_live_status, stop_live_status
from .loading.suite_files import collected_kind, suite_like_files
from .pytest_private import keep_group_suffix, queued_worker_reports
from .session_finish import SessionFinish, runs_no_eval
from .stash import get_state, rootdir_relative
from .text_input import first_line
from .transport import RESULT_PROPERTY, RUN_PROPERTY, RunInfo, longrepr_text, received

# The results, scoring and report modules are imported where a session has evals to score (every
# pytest session registers this class).
if TYPE_CHECKING:
    from pathlib import Path

    from .journal import Journal
    from .results import EvalRecord
    from .settings import Settings

DIST_EACH_REFUSED = (
    "--dist each cannot run evals: every xdist worker would run every eval under the same node id, "
    "and the results can hold only one run of each (which one depends on timing). To run every eval "
    "several times use --vibe-repeat N (N items, scored over the repeats); to spread the evals over "
    "the workers use --dist load (the default of -n) or loadgroup"
)


class ControllerSession:
    """The session's run-wide side; see the module's docstring."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = get_state(config)
        self.usage_error: str | None = None  # found by a worker during its collection
        read_baseline(config)
        read_resume(config)
        self.end = SessionFinish(config)  # the session's finish, and what it did (its journal: resumed files)
        self.nothing_collected = False  # pytest's exit code 5: say which suite-like files it missed
        self._sources: dict[str, bool] = {}  # a worker's collected file: one this plugin collects?
        self.unreadable_info = False  # an item's run info could not be read (said once)

    def pytest_sessionstart(self) -> None:
        """An xdist controller runs no item: the item hooks leave, or pytest would call them for
        every item the workers run (a board to clear at each ``logfinish``)."""
        plugins = self.config.pluginmanager
        if plugins.has_plugin("dsession"):
            items = plugins.get_plugin(ITEMS_PLUGIN)
            if items is not None:
                items.board.stop()
                plugins.unregister(items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: the workers share the controller's folder of concurrency slots and resume index."""
        state = self.state
        if state.lock_dir is not None:
            node.workerinput[LOCK_DIR_INPUT] = str(state.lock_dir)
        if state.resume is not None:
            node.workerinput[RESUME_INPUT] = state.resume.to_json()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """xdist controller: a worker collected eval items, so the reports will need the scoring
        machinery. Made now, before any item runs, not at the first report: imported then, it held
        up the reports queued behind it, and an interrupt could end the session before an item's
        first report was read (its record then missing from the results)."""
        selected = frozenset(nodeid for nodeid in ids if self._collected_by_us(nodeid))
        if selected and self.config.getoption("dist", None) == "each":
            raise pytest.UsageError(DIST_EACH_REFUSED)
        self._select(selected)
        if selected:
            freeze_controller(self.state)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """A serial run: the eval items it selected (an xdist controller collects nothing)."""
        from .items import EvalItem

        self._select(frozenset(item.nodeid for item in session.items if isinstance(item, EvalItem)))

    def _select(self, selected: frozenset[str]) -> None:
        """Remember which eval items the session selected: one that never reports did not run. The
        first time there are some, the results folder they will be written to is checked, before
        any of them runs."""
        if not selected:
            return
        refused = count_refused(self.config)
        if refused is not None:
            raise pytest.UsageError(refused)
        aggregator = self.state.aggregator
        if aggregator.selected is None:
            self._check_results_folder()
        aggregator.selected = selected

    def _check_results_folder(self) -> None:
        """A usage error when the session's results could not be written in the default folder (an
        explicit --vibe-results was checked with the options); none for a session that runs nothing."""
        if self.state.settings.results is not None or runs_no_eval(self.config):
            return
        from .report.resultsfile import default_folder_problem

        problem = default_folder_problem(self.config.rootpath)
        if problem:
            raise pytest.UsageError(problem)

    def _collected_by_us(self, nodeid: str) -> bool:
        """Whether the file of ``nodeid`` (collected by an xdist worker) is one this plugin collects:
        another plugin's YAML tests never report as evals, so they must not count as unrun."""
        source = nodeid.split("::", 1)[0]
        known = self._sources.get(source)
        if known is None:
            config = self.config
            path = config.rootpath / source
            here = config.invocation_params.dir
            given = any((here / arg.split("::")[0]).absolute() == path for arg in config.args)
            kind = collected_kind(path, source, self.state.settings.patterns, given)
            known = self._sources[source] = kind in ("config", "suite")
        return known

    @pytest.hookimpl(optionalhook=True, trylast=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """xdist controller: remember a usage error or note a worker found during its collection, what
        stopped a worker's session, and a worker that was lost (it crashed, e.g. killed by the item
        it ran). A worker interrupted by a signal sent to it alone (SIGTERM to its pid) interrupts
        the session here, as that signal sent to the controller would: xdist would only stop
        scheduling, and wait for the evals still running on the other workers, however long."""
        workeroutput = getattr(node, "workeroutput", {})
        message = workeroutput.get(USAGE_ERROR_OUTPUT)
        if message and self.usage_error is None:
            self.usage_error = str(message)
        note = workeroutput.get(NOTE_OUTPUT)
        if note and note not in self.state.read_notes:  # every worker collected the same items
            self.state.read_notes.append(str(note))
        self.end.recordings_used.update(workeroutput.get(RECORDINGS_OUTPUT, ()))
        for config_id, sources in workeroutput.get(NOT_RUN_OUTPUT, {}).items():
            self.state.configs_not_run.setdefault(str(config_id), set()).update(map(str, sources))
        stopped = workeroutput.get(STOPPED_OUTPUT)
        if stopped and self.end.worker_stop is None:
            self.end.worker_stop = str(stopped)
        # xdist's own key, the worker's session.shouldfail, also where it says nothing (True):
        # STOPPED_OUTPUT holds a reason only
        if workeroutput.get("shouldfail"):
            self.end.worker_failed = True
        name = getattr(getattr(node, "gateway", None), "id", "?")
        if error is not None:
            self.end.lost_workers.append(f"{name}: {first_line(str(error).strip()) or error}")
        signalled = workeroutput.get(SIGNALLED_OUTPUT)
        if signalled and error is None:  # xdist calls this hook again for it, with "keyboard-interrupt"
            self.state.interrupts.relay(f"{signalled} (sent to xdist worker {name})")

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """pytest calls this for a ``pytest.exit()`` too: remember its message, which says why the
        selected evals did not all run."""
        if isinstance(excinfo.value, pytest.exit.Exception):
            self.end.exit_cause = f"pytest.exit: {excinfo.value.msg}"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        state = self.state
        live = start_live_status(self.config, state.lock_dir, state.settings.progress_interval)
        try:
            result = yield
        except KeyboardInterrupt:
            # Reports that reached the controller before the interrupt are results of items that
            # finished: read them as the loop would have (every plugin sees them), then end.
            for report in queued_worker_reports(self.config):
                self.config.hook.pytest_runtest_logreport(report=report)
            raise
        finally:
            self.end.hold_signals()
            if live is not None:
                stop_live_status(self.config, live)
        if self.usage_error is not None:
            raise pytest.UsageError(self.usage_error)
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Take our records off the report; the JUnit properties are added at the end."""
        nodeid = report.nodeid  # read once: recent pytest makes it anew on every access
        if "@" in nodeid:
            keep_group_suffix(report)
        if report.failed:
            self.end.failed_nodeids.add(nodeid)
        ours = [(k, v) for k, v in report.user_properties if k in (RUN_PROPERTY, RESULT_PROPERTY)]
        crashed = report.when not in ("setup", "call", "teardown")
        # Under xdist an item's run info comes on its setup report only: a later report without
        # properties (a skip in the call) still counts for an item already known (looked up only
        # for a report without them).
        if (
            not ours
            and not (crashed and _may_be_eval(nodeid))
            and not (self.state.aggregated() and self.state.aggregator.has_info(nodeid))
        ):
            return
        aggregator = self.state.aggregator
        info: RunInfo | None = None
        record: EvalRecord | str | None = None
        for key, value in ours:
            if key == RESULT_PROPERTY:
                record = received(value, str)  # its JSON waits unparsed in the aggregator's spool
            elif not aggregator.has_info(nodeid):  # the item's first report: read it once
                info = self._read_info(nodeid, value)
        journal = self.end.journal if record is None else self.end.records_journal()
        if journal is not None:
            self._journal(journal, nodeid, report, info, record)
        aggregator.add_report(
            nodeid,
            report.when or "",
            report.outcome,
            info,
            record,
            longrepr_text(report),
            hasattr(report, "wasxfail"),
        )
        if ours:
            report.user_properties = [(k, v) for k, v in report.user_properties if (k, v) not in ours]

    def _read_info(self, nodeid: str, value: object) -> RunInfo | None:
        """An item's run info; None when its text cannot be read (a worker of another release of
        this plugin, or another plugin that changed it): the item's run is then made from its node
        id, as for an item whose worker crashed, and the Run Summary says so once."""
        try:
            return received(value, RunInfo.from_json)
        except (ValueError, TypeError) as exc:
            if not self.unreadable_info:
                self.unreadable_info = True
                self.end.notes.append(
                    f"note: the run info of {nodeid} (and of any other item like it) could not be "
                    f"read ({exc}): its run is made from its node id, as for an item whose worker "
                    "crashed. Does a worker run another release of pytest-vibeeval?"
                )
            return None

    def _journal(
        self,
        journal: Journal,
        nodeid: str,
        report: pytest.TestReport,
        info: RunInfo | None,
        record: EvalRecord | str | None,
    ) -> None:
        """Hand an item's finished record to the session's journal (written after its teardown)."""
        if record is not None:
            known = info or self.state.aggregator.info(nodeid)
            if known is not None and known.input_digest is not None:
                journal.hold(nodeid, known.source, known.input_digest, known.configuration, record)
        if report.when == "teardown":
            journal.settle(nodeid, report.passed)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Aggregate on the controller before the JUnit writer writes its file, and let the score
        gates decide the exit code (pytest returns ``session.exitstatus`` after this hook)."""
        self.nothing_collected = exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        self.end.finish(session, exitstatus)

    @pytest.hookimpl(trylast=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_last(self, session: pytest.Session) -> None:
        """Every file is written (ours, then the JUnit XML): a signal held meanwhile ends the session
        as interrupted, and the next one has its usual effect."""
        self.end.release(session)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None]:
        """Print the Run Summary after pytest's own short test summary."""
        result = yield
        with paused(self.state):
            if self.config.getoption("no_summary", False):
                self._write_failure_reasons(terminalreporter)
            else:
                self._write_summary(terminalreporter)
        return result

    def _write_failure_reasons(self, terminalreporter: Any) -> None:
        """With pytest's ``--no-summary``: only why the session failed, one line each (suites that did
        not load, a failed score gate, a regression, a run where no eval ran, results that could be
        written nowhere); the results file is written still."""
        from .report.summary import gate_failures

        if self.state.load_errors:
            terminalreporter.write_line(self._load_errors_line(""), red=True)
        for line in map(terminal_safe, gate_failures(self.state.runs)):
            terminalreporter.write_line(line, red=True, bold=True)
        end = self.end
        if end.regression_note:
            terminalreporter.write_line(end.regression_note, red=True)
        if end.nothing_ran_lines:
            terminalreporter.write_line(end.nothing_ran_lines[0], red=True, bold=True)
        if end.unwritten:
            terminalreporter.write_line(end.unwritten, red=True, bold=True)

    def _load_errors_line(self, where: str) -> str:
        errors = self.state.load_errors
        return f"{len(errors)} suite file(s) failed to load and did not run{where}: " + ", ".join(errors)

    def _write_summary(self, terminalreporter: Any) -> None:
        state, config = self.state, self.config
        if not state.runs and not state.load_errors:
            if self.nothing_collected:
                for line in uncollected_suites_hint(config):
                    terminalreporter.write_line(line, yellow=True)
            unwritten = not_written_line(state.settings)
            if unwritten:
                terminalreporter.write_line(unwritten, yellow=True)
            return
        from .report.summary import budget_lines, resume_line, summary_lines, unrecorded_line, workspace_lines

        terminalreporter.write_sep("=", "Run Summary")
        if state.load_errors:
            terminalreporter.write_line(self._load_errors_line(" (errors above)"))
        breakdown = config.get_verbosity() >= 1 or state.settings.breakdown
        sandboxed: list[EvalRecord] = []  # read with the summary: here each record is read anew
        lines = summary_lines(state.runs, breakdown, sandboxed)
        for line in map(terminal_safe, lines):  # agents' text, escaped
            if line.startswith("GATE FAILED: "):
                terminalreporter.write_line(line, red=True, bold=True)
            else:
                terminalreporter.write_line(line)
        mode = state.settings.sandbox_mode
        unsandboxed = any(record.sandbox == "none" for record in sandboxed)
        reason = None
        if mode == "auto" and unsandboxed:
            from .execute import session_sandbox  # the items' machinery: not otherwise on xdist's controller

            reason = session_sandbox(state).reason
        for line in budget_lines(state.runs, state.settings.max_cost, state.budget.spent()):
            terminalreporter.write_line(line)
        for line in workspace_lines(sandboxed, mode, reason):
            terminalreporter.write_line(line)
        if state.resume is not None:
            terminalreporter.write_line(resume_line(state.runs, state.resume.source))
            store = state.settings.record
            unrecorded = store and unrecorded_line(state.runs, rootdir_relative(store, config.rootpath))
            if unrecorded:
                terminalreporter.write_line(f"note: {unrecorded}")
        if state.baseline_path is not None:
            terminalreporter.write_line(f"baseline: {state.baseline_path}")
            if state.baseline_missing:
                shown = ", ".join(state.baseline_missing[:5]) + (
                    " …" if len(state.baseline_missing) > 5 else ""
                )
                terminalreporter.write_line(f"  in the baseline but not in this session: {shown}")
        for read_note in state.read_notes:
            terminalreporter.write_line(f"note: {read_note}")
        end = self.end
        if end.lost_workers:
            count = len(end.lost_workers)
            which = "; ".join(end.lost_workers[:3])
            terminalreporter.write_line(
                f"{count} xdist worker{' was' if count == 1 else 's were'} lost ({which}): "
                "the item each was running is an error above, unless a plugin reran it "
                "(pytest-rerunfailures); the other items ran on",
                red=True,
            )
        for index, line in enumerate(end.nothing_ran_lines):
            terminalreporter.write_line(line, red=True, bold=index == 0)
        for note in (*end.notes, end.regression_note):
            if note:
                terminalreporter.write_line(note, red=note is end.regression_note)
        if end.unwritten:
            terminalreporter.write_line(end.unwritten, red=True, bold=True)
        for path in state.results_written:
            terminalreporter.write_line(f"results: {path}")
        for line in end.writer_lines:
            terminalreporter.write_line(line)


def count_refused(config: pytest.Config) -> str | None:
    """Why pytest-repeat's ``--count N`` cannot run in a session with evals, or None: it repeats
    test functions by parametrizing them, which eval items are not, so each eval would run once
    while the session seemed to run everything N times."""
    count = config.getoption("count", None)
    if not config.pluginmanager.hasplugin("repeat") or not isinstance(count, int) or count < 2:
        return None
    return (
        f"--count {count} (pytest-repeat) does not repeat eval items: it repeats test functions, "
        f"which they are not, so each eval would run once. To run every eval {count} times use "
        f"--vibe-repeat {count} (scored over the repeats: pass rates, pass@k); to repeat your other "
        "tests, run them in a session of their own"
    )


def not_written_line(settings: Settings) -> str | None:
    """When no eval ran: the files asked for by name (--vibe-results, --vibe-html) that were not
    written, so that a step expecting them knows why they are missing; None when none was asked for."""
    named = (("--vibe-results", settings.results), ("--vibe-html", settings.html))
    asked = [(option, path) for option, path in named if path is not None]
    if not asked:
        return None
    return "no eval ran: " + ", ".join(f"{option} {path}" for option, path in asked) + " not written"


def uncollected_suites_hint(config: pytest.Config) -> list[str]:
    """When nothing was collected: the YAML files under the run's paths that look like suites (top
    level ``metadata:`` and ``evals:``) but were not collected, and how to collect them."""
    here = config.invocation_params.dir
    roots = [here / arg.split("::")[0] for arg in config.args] or [here]
    found = suite_like_files(roots, YAML_SUFFIXES, SUITE_SUFFIXES)
    if not found:
        return []
    shown = ", ".join(rootdir_relative(path, config.rootpath) for path in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    return [
        f"hint: {len(found)} YAML file(s) look like eval suites but were not collected: {shown}{more}",
        "  suites are collected when named *.eval.yaml, when given as arguments "
        f"(pytest {rootdir_relative(found[0], config.rootpath)}), or with an ini line "
        "vibe_patterns = *.yaml",
    ]


def _may_be_eval(nodeid: str) -> bool:
    return nodeid.split("::", 1)[0].endswith(SOURCE_SUFFIXES)


def read_baseline(config: pytest.Config) -> None:
    """Read --vibe-baseline now: a usage error before anything runs, and ``latest`` is the previous
    run's file, not the one this session writes."""
    state = get_state(config)
    spec = state.settings.baseline
    if spec is None:
        return
    from .report.baseline import BaselineError, read_results, resolve_baseline

    path = resolve_baseline(spec, config.rootpath, state.settings.results)
    try:
        read = read_results(path)
    except BaselineError as exc:
        hint = " (`latest` is the previous complete run's results file: run once without --vibe-baseline)"
        raise pytest.UsageError(f"--vibe-baseline: {exc}{hint if spec == 'latest' else ''}") from None
    state.baseline = read.results
    if state.baseline.partial:
        raise pytest.UsageError(
            f"--vibe-baseline: {path} holds a partial run ({state.baseline.stopped_early or 'interrupted'}): "
            "not every eval ran, so its score is no baseline; compare with a complete run's results"
        )
    from .report.resultsfile import stamped_original

    # latest.json is the file this session replaces: the records name the one it copies
    state.baseline_path = rootdir_relative(stamped_original(path).absolute(), config.rootpath)
    note = read.note(f"--vibe-baseline {state.baseline_path}")
    state.read_notes += [note] if note else []


def named_resume_hint(path: Path) -> str:
    """What to name instead of ``path``, given to --vibe-resume and there but not a regular file (a
    folder, a FIFO); nothing for a file (what is wrong with it is said) or a missing path."""
    from .journal import SUFFIX
    from .report.resultsfile import DEFAULT_DIR

    if not os.path.exists(path) or path.is_file():  # a dangling or looping link: missing
        return ""
    return (
        f" (name the results file of the run to resume, --vibe-resume {DEFAULT_DIR}/<timestamp>.json, "
        f"or the journal of a session that did not finish, {DEFAULT_DIR}/<timestamp>{SUFFIX}; "
        "--vibe-resume alone takes the newest)"
    )


def read_resume(config: pytest.Config) -> None:
    """Read --vibe-resume now, before this session writes its results (``latest`` is the file as
    the earlier run left it), and the files it resumed from. xdist workers get the controller's
    index, so they need no file."""
    state = get_state(config)
    spec = state.settings.resume
    if spec is None:
        return
    from .journal import SUFFIX, newest_journal
    from .report.baseline import BaselineError, resolve_baseline
    from .report.resultsfile import DEFAULT_DIR, stamped_original
    from .resume import load_journal, load_resume

    path = resolve_baseline(spec, config.rootpath, state.settings.results, partial_ok=True)
    path = stamped_original(path)
    if spec == "latest":  # a session that never finished after the newest results: its journal
        path = newest_journal(config.rootpath / DEFAULT_DIR, path if path.is_file() else None) or path
    shown = rootdir_relative(path.absolute(), config.rootpath)
    load = load_journal if path.name.endswith(SUFFIX) else load_resume
    try:
        state.resume = load(path, shown, config.rootpath.joinpath)
    except BaselineError as exc:
        hint = " (`latest` is the previous run's results file; no run wrote it yet)"
        if os.path.lexists(path):  # there, but damaged: the run's timestamped file may not be
            hint = (
                " (`latest` is the newest results file: name the one to resume, "
                f"--vibe-resume {DEFAULT_DIR}/<timestamp>.json)"
            )
        if spec != "latest":
            hint = named_resume_hint(path)
        raise pytest.UsageError(f"--vibe-resume: {exc}{hint}") from None
    state.read_notes += state.resume.notes
