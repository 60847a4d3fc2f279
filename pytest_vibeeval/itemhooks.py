"""Hooks of the processes that collect and run items (xdist workers, or the one process of a serial
run): the collection checks, the progress board, and each item's report (its record on the call
report only; an unfinished record for an item that stopped without one)."""

from __future__ import annotations

import dataclasses
import functools
import sys
import time
from collections.abc import Callable, Generator
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

import pytest

from .backstop import Backstop, backstop_available, other_threads_stacks
from .budget import NOT_RERUN
from .collection_gc import resume, settle
from .filenames import SOURCE_SUFFIXES as SOURCE_SUFFIXES
from .filenames import SUITE_SUFFIXES as SUITE_SUFFIXES
from .filenames import YAML_SUFFIXES as YAML_SUFFIXES
from .items import BackstopTimeout, EvalItem, RerunHeld, loaded
from .notes import note
from .phases import phases_of, unfinished_record
from .progress import ProgressBoard, Running
from .pytest_private import in_runtest_phase, reruns_left, stop_reruns
from .stash import get_state
from .transport import RESULT_PROPERTY, RUN_PROPERTY, as_sent, attach_record, longrepr_text

if TYPE_CHECKING:
    from .loading.templates import Redactor

USAGE_ERROR_OUTPUT = "vibeeval_usage_error"  # key in an xdist worker's workeroutput
STOPPED_OUTPUT = "vibeeval_stopped"  # the same: what another plugin said when it stopped the worker
NOTE_OUTPUT = "vibeeval_collection_note"  # key in an xdist worker's workeroutput
RECORDINGS_OUTPUT = "vibeeval_recordings_used"  # key in an xdist worker's workeroutput
NOT_RUN_OUTPUT = "vibeeval_configs_not_run"  # the same: the configurations a suite lists but did not run
SIGNALLED_OUTPUT = "vibeeval_signalled"  # the same: the signal that interrupted the worker's session
LOCK_DIR_INPUT = "vibeeval_lock_dir"  # key in an xdist worker's workerinput
RESUME_INPUT = "vibeeval_resume"  # the --vibe-resume index, for workers (remote ones have no file)


class CollectionHooks:
    """Where files are collected, and on the xdist controller, which sees the workers' collection
    reports: remember suite files that failed to load, and refuse unknown --vibe-eval/--vibe-config."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = get_state(config)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        state = self.state
        if not state.suites_collected:
            return
        from .loading.configurations import unknown_selection

        state.renderer.note_environment(http_key_names(items))
        self._run_each_eval_once(items)
        for option, requested, known in (
            (state.settings.configs_from, state.settings.configs, state.known_configs),
            (state.settings.evals_from, state.settings.evals, state.known_evals),
        ):
            problem = unknown_selection(option, requested, known)
            if problem is None:
                continue
            workeroutput = getattr(self.config, "workeroutput", None)
            if workeroutput is None:
                raise pytest.UsageError(problem.message)
            # An xdist worker: a UsageError here would end only this worker and the controller
            # would report "no tests ran" (exit 5). Run nothing and let the controller raise it.
            workeroutput[USAGE_ERROR_OUTPUT] = problem.message
            items.clear()
            return

    def _run_each_eval_once(self, items: list[pytest.Item]) -> None:
        """An eval item collected twice (``--keep-duplicates``) runs once: its record is kept by its
        node id, so a second run would count in pytest's outcomes but not in the results."""
        seen: set[str] = set()
        kept: list[pytest.Item] = []
        repeated: list[pytest.Item] = []
        for item in items:
            nodeid = item.nodeid if isinstance(item, EvalItem) else None
            if nodeid is not None and nodeid in seen:
                repeated.append(item)
                continue
            if nodeid is not None:
                seen.add(nodeid)
            kept.append(item)
        if not repeated:
            return
        items[:] = kept
        self.config.hook.pytest_deselected(items=repeated)
        said = ran_once_note([item.nodeid for item in repeated])
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is None:
            self.state.read_notes.append(said)
        else:  # the controller shows it (it collects nothing itself)
            workeroutput[NOTE_OUTPUT] = said

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Remember suite files that failed to load (on xdist, the controller sees workers' reports)."""
        if report.failed:
            if report.nodeid.endswith(SOURCE_SUFFIXES):
                if report.nodeid not in self.state.load_errors:
                    self.state.load_errors.append(report.nodeid)
            else:
                self.state.other_collection_errors += 1

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_finish(self, session: pytest.Session) -> Generator[None, object, object]:
        """After the other implementations: a suite that fails to load stops only itself: the other
        files still run (and the session still fails). Other collection errors keep pytest's rule
        of stopping the run. Then the garbage collector runs again, and what collection made is
        frozen when items will run (``vibe_gc_freeze``, see :mod:`.collection_gc`). It runs again
        too when one of them refused the run (the controller's UsageError for a results folder
        that cannot be written): the session still ends, and nothing then runs to be frozen for."""
        state = self.state
        try:
            result = yield
        except BaseException:
            resume(state)
            raise
        if state.load_errors and not state.other_collection_errors:
            self.config.option.continue_on_collection_errors = True
        settle(state, freeze=bool(state.suites_collected) and not self.config.option.collectonly)
        return result


def http_key_names(items: list[pytest.Item]) -> set[str]:
    """The variables that hold the keys of the items' HTTP configurations (their own and their
    judges'): secrets to mask whatever their names."""
    from .plan import PromptWork

    names = set()
    for item in items:
        if not isinstance(item, EvalItem):
            continue
        work = item.plan.work
        judge = work.judge[1] if isinstance(work, PromptWork) and work.judge is not None else None
        for configuration in (item.plan.configuration, judge):
            if configuration is not None and configuration.http is not None:
                names.add(configuration.http.api_key_env or "")
    return names - {""}


def ran_once_note(repeated: list[str]) -> str:
    """What the Run Summary says of the eval items collected more than once (node ids of the
    copies left out)."""
    unique = list(dict.fromkeys(repeated))
    shown = ", ".join(unique[:5]) + (f" and {len(unique) - 5} more" if len(unique) > 5 else "")
    return (
        f"{len(unique)} eval item(s) collected more than once (--keep-duplicates) ran once each; "
        f"{len(repeated)} copies deselected: {shown}. A result is kept by its node id: to run "
        "each eval several times, use --vibe-repeat N"
    )


ITEMS_PLUGIN = "vibeeval-items"  # the name :class:`ItemHooks` is registered under


class ItemHooks:
    """Where items run: the timeout backstop, the progress board and the items' reports, and on an
    xdist worker what stopped its session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = get_state(config)
        self.board = ProgressBoard(self.state.lock_dir)  # what this process runs now (live progress)
        self.in_worker = hasattr(config, "workerinput")  # an xdist worker: reports travel as JSON
        self.backstop = Backstop()
        self.timed: _Timed | None = None  # the eval item whose protocol runs, its backstop's timing
        self.warned_no_backstop = False

    @pytest.hookimpl(wrapper=True)  # inside pytest's warning capture, outside pytest-timeout's timer
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        """An eval item's timeout backstop covers its setup, call and teardown: each attempt's when a
        plugin reruns them. It is armed as the protocol starts, again with all its time as each
        later attempt's setup begins, and disarmed once each attempt's teardown ends, so it never
        runs through the delay between attempts (pytest-rerunfailures' ``--reruns-delay``, a
        sleep in its protocol). It raises only inside a phase: an exception in the report hooks
        between them would end the session.
        Where no SIGALRM timer can be armed, pytest-timeout's thread method (which ends the
        process) stands in: its timer covers the whole protocol, every attempt and delay."""
        if not isinstance(item, EvalItem):
            return (yield)
        seconds = item.backstop_s
        if not backstop_available():
            self._fall_back(item, seconds)
            return (yield)
        expire = functools.partial(_backstop_expired, item, seconds)
        # The frame that called this hook stays on the stack for the whole protocol: what lies
        # above it (a test this session runs inside) is not this item's.
        may_fire = functools.partial(in_runtest_phase, stop=sys._getframe(1))
        self.timed = _Timed(item, seconds, expire, may_fire)
        self.backstop.arm(item, seconds, expire, may_fire)
        try:
            return (yield)
        finally:
            self.timed = None
            self.backstop.disarm()

    def _fall_back(self, item: EvalItem, seconds: float) -> None:
        """pytest-timeout's thread method for ``item``, or a warning (once) that it has no backstop."""
        plugins = self.config.pluginmanager
        if plugins.has_plugin("timeout") or plugins.has_plugin("pytest_timeout"):
            item.add_marker(pytest.mark.timeout(seconds, method="thread"))
        elif not self.warned_no_backstop:
            self.warned_no_backstop = True
            note(NO_BACKSTOP, stacklevel=1)

    @pytest.hookimpl(optionalhook=True)
    def pytest_timeout_set_timer(self, item: pytest.Item) -> bool | None:
        """pytest-timeout (a global ``--timeout``) leaves alone an item the backstop times."""
        return True if self._times(item) else None

    @pytest.hookimpl(optionalhook=True)
    def pytest_timeout_cancel_timer(self, item: pytest.Item) -> bool | None:
        return True if self._times(item) else None

    def _times(self, item: pytest.Item) -> bool:
        return self.timed is not None and self.timed.item is item

    def pytest_enter_pdb(self) -> None:
        """Someone debugging an item is not a hung item."""
        self.backstop.disarm()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Begin an eval item's attempt (a rerun's backstop has all its time again), and put the
        item on this process's progress board as it enters each phase."""
        if isinstance(item, EvalItem):
            item.begin_attempt()
            timed = self.timed
            if timed is not None and timed.item is item and self.backstop.owner is not item:
                # a later attempt (the earlier one's teardown disarmed it): all its time again
                self.backstop.arm(item, timed.seconds, timed.expire, timed.may_fire)
        phases = phases_of(item)
        if phases is not None:
            self.state.renderer.note_environment()  # a conftest may have set secrets since
        if phases is None or self.config.get_verbosity() < 0 or not self.state.settings.progress_interval:
            return  # nothing would show it (-q, or vibe_progress_interval = 0)
        # The entry's times are the wall clock's (another process shows them); when it is due is
        # the board's monotonic clock's.
        board, nodeid, started, since = self.board, item.nodeid, time.time(), self.board.clock()

        def show(phase: str, detail: str) -> None:
            board.post(Running(nodeid, phase, detail, started, time.time()), since)

        phases.listener = show

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        """The attempt's backstop ends with its teardown (what follows, up to the next attempt's
        setup, is no part of it)."""
        try:
            return (yield)
        finally:
            if self._times(item):
                self.backstop.disarm()

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """A prompt eval's direct body takes the item itself, not fixtures (see ``collect._body``)."""
        if not isinstance(pyfuncitem, EvalItem):
            return None
        # imported by the item's collection already; see items.loaded
        direct = loaded("pytest_vibeeval.execute").run_prompt_item_direct
        if pyfuncitem.obj is direct:
            direct(pyfuncitem)
            return True
        return None

    def pytest_runtest_logfinish(self) -> None:
        self.board.clear()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """xdist worker: pass on what stopped its session (pytest-timeout's ``--session-timeout``
        sets ``shouldfail``): the controller sees only xdist's Interrupted, as for a Ctrl-C. And
        the signal that interrupted it: one sent to this worker alone interrupts the whole run."""
        self.board.stop()  # no item runs from here on: the board's thread ends
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is None:
            return
        why = stopped_by(session)
        if why is not None:
            workeroutput[STOPPED_OUTPUT] = why
        signalled = self.state.interrupts.received
        if signalled is not None:
            workeroutput[SIGNALLED_OUTPUT] = signalled
        if self.state.recordings_used:  # the controller decides which recordings are obsolete
            workeroutput[RECORDINGS_OUTPUT] = sorted(self.state.recordings_used)
        if self.state.configs_not_run:
            workeroutput[NOT_RUN_OUTPUT] = {cid: sorted(s) for cid, s in self.state.configs_not_run.items()}

    # Outside pytest-rerunfailures' wrapper, which makes its flags afresh as each setup is reported.
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """The record travels on the call report only: the teardown report would copy it again
        (responses can be megabytes) for the controller to parse twice. Under xdist the item's
        run info travels on its setup report only: the controller reads it once. A failed attempt
        pytest-rerunfailures would rerun is its last once --vibe-max-cost is spent."""
        report = yield
        if not isinstance(item, EvalItem):
            return report
        failed = report.failed and call.when in ("setup", "call") and call.excinfo is not None
        if failed and call.excinfo is not None and reruns_left(item):
            held = call.excinfo.errisinstance(RerunHeld)
            if not held:  # what a held rerun says first
                item.failure = str(call.excinfo.value)
            _hold_reruns(item, report, held)
        redact = self.state.renderer.redactor()
        if redact.secrets:  # without secrets masking changes nothing
            _mask_report(report, redact)
        stopped = call.excinfo is not None and not call.excinfo.errisinstance(
            (pytest.skip.Exception, RerunHeld)  # a held rerun leaves the earlier attempt's record
        )
        if stopped and call.when in ("setup", "call"):  # failed, or xfailed: the item's own marker
            value = call.excinfo.value if call.excinfo is not None else None
            _record_unfinished(item, report, str(value) if isinstance(value, BackstopTimeout) else None)
        if call.when == "call":
            item.user_properties[:] = [p for p in item.user_properties if p[0] != RESULT_PROPERTY]
        elif call.when == "setup" and self.in_worker:
            item.user_properties[:] = [p for p in item.user_properties if p[0] != RUN_PROPERTY]
            report.user_properties = as_sent(report.user_properties)
        _skip_at_eval_line(item, report)
        return report


@dataclasses.dataclass(frozen=True, slots=True)
class _Timed:
    """How the backstop times the attempts of the eval item whose protocol runs."""

    item: EvalItem
    seconds: float
    expire: Callable[[], None]
    may_fire: Callable[[FrameType | None], bool]


NO_BACKSTOP = pytest.PytestWarning(
    "eval items run without their timeout backstop: SIGALRM cannot be used here and pytest-timeout, "
    "whose thread method would stand in, is not loaded, so a hung `python:` answer will not be "
    "stopped; load pytest-timeout (drop `-p no:timeout`) to have one"
)


def _backstop_expired(item: EvalItem, seconds: float) -> NoReturn:
    """Fail the item, saying in which phase it stopped; where it has other threads, their stacks go
    to its captured stderr (they show with the failure), since the traceback shows this thread's
    alone."""
    __tracebackhide__ = True
    stacks = other_threads_stacks()
    if stacks:
        sys.stderr.write(f"vibeeval backstop: the other threads when it fired:\n{stacks}")
    where = item.vibe_phases.describe()
    raise BackstopTimeout(f"stopped {where}: Timeout (>{seconds}s) from the vibeeval backstop")


def _hold_reruns(item: EvalItem, report: pytest.TestReport, held: bool) -> None:
    """Once --vibe-max-cost is spent, no rerun of ``item`` starts (pytest-rerunfailures would rerun
    it, see :func:`.pytest_private.reruns_left`): its failed attempt is its last, and says why it
    is not rerun. ``held``: the attempt was itself held back (the budget ran out between attempts),
    and says so already."""
    if held:
        stop_reruns(item)
        return
    reason = get_state(item.config).budget.exhausted_reason(NOT_RERUN)
    if reason is not None:
        stop_reruns(item)
        report.sections.append(("vibeeval", f"{reason}: this attempt's result stands"))


def _mask_report(report: pytest.TestReport, redact: Redactor) -> None:
    """Mask secrets in what the report shows: the captured output and logs (a Python callable's
    prints, which the terminal and JUnit show) and the failure or skip text."""
    report.sections = [(title, redact(content) or "") for title, content in report.sections]
    longrepr = report.longrepr
    if isinstance(longrepr, str):
        report.longrepr = redact(longrepr)
    elif isinstance(longrepr, tuple):
        report.longrepr = (longrepr[0], longrepr[1], redact(longrepr[2]) or "")
    elif longrepr is not None:
        text = str(longrepr)
        masked = redact(text)
        if masked != text:
            report.longrepr = masked


def _record_unfinished(item: EvalItem, report: pytest.TestReport, stopped: str | None) -> None:
    """An eval item that failed without leaving its result (its timeout backstop fired, a fixture
    raised) gets one: an error naming the phase it was in, with the steps it finished, and for a
    prompt eval its answers, turns and judge calls so far, with their cost. ``stopped``:
    the backstop's message, which names the phase itself."""
    if any(key == RESULT_PROPERTY for key, _ in report.user_properties):
        return
    info = item.plan.info
    commands = getattr(item, "funcargs", {}).get("vibe_commands")
    steps = []
    if commands is not None:  # a coding item's fixture made it: the workspace machinery is loaded
        from .workspace.steps import RegistryCommands

        steps = list(commands.steps) if isinstance(commands, RegistryCommands) else []
    record = unfinished_record(
        info.eval_id,
        info.named,
        item.nodeid,
        info.repeat,
        item.vibe_phases,
        stopped or longrepr_text(report) or "",
        steps,
    )
    spent = item.vibe_progress.record(record.message or "")
    if spent is not None:  # a prompt eval stopped mid-way keeps what it finished and spent
        record = spent
        get_state(item.config).budget.add(None if record.cached else record.cost)
    chosen = get_state(item.config).sandbox  # None until the session's first agent was set up
    if item.workspace_work is not None and chosen is not None:
        # what marks a coding-agent eval's record (`outputs` writes those): the sandbox it runs in
        record = record.model_copy(update={"sandbox": chosen.kind})
    report.user_properties.append((RESULT_PROPERTY, attach_record(item.config, record)))


def _skip_at_eval_line(item: EvalItem, report: pytest.TestReport) -> None:
    """A skipped eval item is reported at its eval's line in the suite, as skip marks are, rather
    than at the line of the plugin that skipped it."""
    if report.skipped and item.plan.line and isinstance(report.longrepr, tuple):
        report.longrepr = (str(item.path), item.plan.line, report.longrepr[2])


def stopped_by(session: pytest.Session) -> str | None:
    """What another plugin said when it stopped the session (pytest-timeout's ``--session-timeout``
    sets ``shouldfail`` to ``session-timeout: 60.0 sec exceeded``), if it said anything."""
    for why in (session.shouldfail, session.shouldstop):
        if isinstance(why, str) and why:
            return why
    return None
