"""The session's finish, where results are gathered (the xdist controller or a serial run): whether
the run is complete, partial (stopped early, or selected evals that never reported) or interrupted;
the results, the result writers (the HTML report, the history), the JUnit properties; the score
gates, the baseline and the all-skipped rule on the exit status. A SIGINT or SIGTERM is held from
the end of the run loop until all of that and pytest's JUnit file are written.

:class:`SessionFinish` is driven by the controller's hooks (``controller.py``)."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from .collection_gc import paused
from .itemhooks import stopped_by
from .journal import Journal, left_journals, left_note, listing, remove_finished, remove_unnamed
from .pytest_private import load_conftests
from .stash import get_state, rootdir_relative

# The results, scoring and report modules are imported where a session has evals to score.
if TYPE_CHECKING:
    from .results import EvalRecord, ResultsFile, RunRecord
    from .resume import Key


class SessionFinish:
    """The session's end; see the module's docstring. The controller's hooks fill in what they saw
    (failed items, lost workers, a ``pytest.exit()``, a plugin's stop on a worker); the Run Summary
    reads what it did."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = get_state(config)
        self.failed_nodeids: set[str] = set()  # items with a failed report, ours or not
        self.lost_workers: list[str] = []  # xdist workers that went down with an error
        self.exit_cause: str | None = None  # the message of a pytest.exit() that ended the session
        self.worker_stop: str | None = None  # what another plugin said stopping an xdist worker
        self.worker_failed = False  # an xdist worker's session was stopped as failed (shouldfail)
        self.notes: list[str] = []  # what the session's end did or could not do (exit code, files)
        self.regression_note: str | None = None  # what --vibe-fail-on-regression did to it
        self.writer_lines: list[str] = []  # what the result writers said (where they wrote, or why not)
        self.nothing_ran_lines: list[str] = []  # every eval skipped: why, and what to set
        self.unwritten: str | None = None  # the results could be written nowhere: why (it fails the session)
        self.unreplaced: str | None = None  # why the --vibe-results file is not replaced (kept as is)
        self.journal: Journal | None = None  # each finished record, until the results are written
        self.recordings_used: set[str] = set()  # the store's files the xdist workers replayed or recorded
        self._journal_decided = False

    def records_journal(self) -> Journal | None:
        """The journal finished records go to, made when the first comes (None where the session
        keeps none): a session that runs no eval never imports what it needs."""
        if not self._journal_decided:
            self._journal_decided = True
            self.journal = session_journal(self.config)
        return self.journal

    def hold_signals(self) -> None:
        """The run loop is over: where there are results to write, a signal from now on waits
        until they are written."""
        state = self.state
        if state.aggregated() or state.load_errors:
            state.interrupts.ending()

    def finish(self, session: pytest.Session, exitstatus: int) -> None:
        """Aggregate before the JUnit writer writes its file, and let the score gates decide the
        exit code (pytest returns ``session.exitstatus`` after its sessionfinish hook)."""
        state = self.state
        if not (state.aggregated() or state.load_errors):
            return
        if runs_no_eval(self.config):
            return  # no results to write
        stopped = stop_reason(session)
        signalled = state.interrupts.received  # also when a second one cut pytest's own handling short
        # xdist ends the session with its Interrupted when a plugin stopped a worker (saying why, or
        # with a bare ``shouldfail = True``): no interruption
        worker_stopped = self.worker_stop is not None or self.worker_failed
        interrupted_status = exitstatus == pytest.ExitCode.INTERRUPTED and not worker_stopped
        interrupted = (interrupted_status or signalled is not None) and stopped is None
        if not interrupted:
            stopped = stopped or state.budget.stop_reason()
            if exitstatus == pytest.ExitCode.INTERRUPTED and self.exit_cause is None:
                self._failed_as_serially(session)
        if interrupted:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
            if signalled is not None:
                self.notes.append(
                    f"interrupted by {signalled}: the results of the evals that finished are kept"
                )
        with paused(state):
            self._finish(session, interrupted, stopped)

    def _failed_as_serially(self, session: pytest.Session) -> None:
        """xdist ends every session a stop ended with its Interrupted (exit code 2); pytest, serially,
        ends one that -x, --maxfail or another plugin's ``shouldfail`` (``--session-timeout``) stopped
        as failed (1), and only one that ``shouldstop`` stopped (--stepwise) as interrupted."""
        if session.shouldfail or self.worker_failed:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def release(self, session: pytest.Session) -> None:
        """Every file is written (ours, then the JUnit XML): a signal held meanwhile ends the session
        as interrupted, and the next one has its usual effect."""
        if self.journal is not None:
            self.journal.close(remove=False)  # a session that wrote no results keeps its journal
        watch = self.state.interrupts
        watch.release()
        if watch.held is None or watch.received is not None:
            return  # none held, or the run was interrupted already (and says so)
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        self.notes.append(
            f"interrupted by {watch.held} while the session ended: the results were written first"
        )

    def _load_suite_conftests(self) -> None:
        """The conftest.py files of the suites' folders, loaded here too (the xdist controller
        collects nothing): the run variables and metrics they register score the runs."""
        sources = {item.info.source for item in self.state.aggregator.items.values() if item.info}
        for folder in sorted({(self.config.rootpath / source).parent for source in sources}):
            try:
                load_conftests(self.config, folder)
            except Exception as exc:  # pytest shows a conftest's import error as its own
                self.notes.append(f"the conftest.py files of {folder} could not be loaded: {exc}")

    def _finish(self, session: pytest.Session, interrupted: bool, stopped: str | None) -> None:
        """Build and write the results, run the writers, gates and baseline (see :meth:`finish`)."""
        from .report.junit import add_gate_cases, add_suite_properties
        from .report.resultsfile import ResultsNotWritten, build_results, write_results
        from .results import not_loaded

        state = self.state
        self._load_suite_conftests()
        aggregator = state.aggregator
        if stopped and not aggregator.cut_short(interrupted, stopped):
            stopped = None  # every selected item ran before the session stopped: a complete run
        if stopped is None and not interrupted:
            stopped = self._ended_early(session)
        runs = aggregator.runs(interrupted, stopped)
        state.runs = list(runs)
        reused = set(reused_keys(runs)) if state.resume is not None else set()
        carried = state.resume.carried_over(reused) if state.resume is not None else []
        resumed_from = [name for name in state.resume.files if name not in carried] if state.resume else []
        results = build_results(
            runs,
            state.started_at,
            interrupted,
            state.load_errors,
            stopped or ("interrupted" if interrupted else None) or not_loaded(state.load_errors),
            self._without_replaced(resumed_from, reused, runs),
        )
        if state.baseline is not None:
            results = self._compare(results)
            runs = state.runs = list(results.runs)
        try:
            state.results_written = write_results(
                results, state.settings.results, self.config.rootpath, self.unreplaced
            )
        except ResultsNotWritten as exc:
            state.results_written = exc.written
            if exc.written:
                self.notes.append(str(exc))
            else:
                where = str(exc).removeprefix("results not written")  # " to …: why"
                self.unwritten = (
                    f"RESULTS NOT WRITTEN{where}; nothing records this session's runs and score gates, "
                    "so it fails"
                )
        self._close_journals(bool(state.results_written), carried)
        self._note_left_journals()
        self._recordings(results)
        written = state.results_written[0] if state.results_written else None
        self._run_writers({"config": self.config, "results": results, "results_path": written})
        add_suite_properties(self.config, runs, state.extensions.run_variables)
        add_gate_cases(self.config, runs)
        self._apply_gates(session, runs)
        self._apply_regressions(session, runs)
        if not results.partial:
            self._apply_nothing_ran(session, runs)
        elif state.settings.results is None:
            self.notes.append(
                f"latest.json not replaced: this run is partial ({results.stopped_early}), so it is no "
                "baseline and enters no history"
            )
        if self.unwritten and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a gate that nothing records passes nothing

    def _recordings(self, results: ResultsFile) -> None:
        """Say how many recordings of the store no eval used, and remove them on request."""
        settings = self.state.settings
        if settings.record is None and settings.replay is None:
            return
        from .report.recording_text import store_report

        used = self.recordings_used | self.state.recordings_used  # the workers' and this process's
        resumed = self.state.resume is not None
        lost = "an xdist worker was lost, with the recordings it used" if self.lost_workers else None
        not_run = self.state.configs_not_run  # this process's and (merged into it) the workers'
        self.notes.extend(store_report(self.config, settings, results, used, resumed, lost, not_run))

    def _without_replaced(
        self, resumed_from: list[str], reused: set[Key], runs: list[RunRecord]
    ) -> list[str]:
        """``resumed_from`` without the file this session replaces (--vibe-results naming a file it
        resumed from): the results never name themselves. When that file held finished evals this
        session did not reuse (a ``-k`` subset), it is first kept as a timestamped file in the
        default folder (or beside it), named instead, so that nothing paid for is lost; when no copy
        can be kept, it is not replaced (:attr:`unreplaced`). The records ``runs`` reused from it
        name the copy."""
        state, root = self.state, self.config.rootpath
        written = state.settings.results
        name = state.resume.replaced_by(written, root.joinpath) if state.resume and written else None
        if name is None or state.resume is None:
            return resumed_from
        unreused = len(state.resume.finished.get(name, set()) - reused)
        if not unreused or name not in state.resume.started:
            return [other for other in resumed_from if other != name]
        from .report.resultsfile import keep_copy

        try:
            kept = rootdir_relative(keep_copy(root / name, root, state.resume.started[name]), root)
        except OSError as exc:
            self.unreplaced = (
                f"it is the file this session resumed from, and holds {unreused} finished eval(s) this "
                f"session did not reuse; no copy of it could be kept ({exc.strerror or exc}), so it stays"
            )
            return resumed_from
        self.notes.append(
            f"--vibe-results {name} replaces the file this session resumed from: it is kept as {kept} "
            f"first (named in resumed_from), for the {unreused} eval(s) it finished that this session "
            "did not reuse"
        )
        for run in runs:  # the file they name is replaced: as it was, it is the copy now
            run.evals = renamed_source(run.evals, name, kept)
        return [kept if other == name else other for other in resumed_from]

    def _close_journals(self, written: bool, carried: list[str]) -> None:
        """The results are written (``written``): this session's journal is removed, and the
        journals of sessions that did not finish whose finished evals it all reused (``carried``);
        otherwise this session's journal stays for --vibe-resume."""
        journal = self.journal
        if journal is not None:
            journal.close(remove=written)
            if journal.problem:
                self.notes.append(
                    f"{journal.problem}: had the session been killed, --vibe-resume would have found "
                    "none of its finished evals"
                )
        for name in carried if written else ():
            remove_finished(self.config.rootpath.joinpath(name))  # never one a running session writes

    def _note_left_journals(self) -> None:
        """Name the journals of killed sessions that no resume took (the next session ran without
        --vibe-resume), so that they do not stay in the results folder unseen for good: neither this
        session's own nor one it resumed from (its results name those), nor a running session's. The
        hidden file of a journal whose session was killed before naming it, which nothing reads,
        goes."""
        from .report.resultsfile import DEFAULT_DIR

        root = self.config.rootpath
        folder = root / DEFAULT_DIR
        listed = listing(folder)  # once: the folder holds every earlier session's results file
        started = dt.datetime.fromisoformat(self.state.started_at).timestamp()
        remove_unnamed(folder, started, listed)
        resume = self.state.resume
        skip = {root / name for name in (resume.files if resume is not None else ())}
        if self.journal is not None and self.journal.path is not None:
            skip.add(self.journal.path)
        left = left_journals(folder, skip, listed)
        if left:
            self.notes.append("note: " + left_note([rootdir_relative(path, root) for path in left]))

    def _ended_early(self, session: pytest.Session) -> str | None:
        """Why a session that stopped for none of the reasons known above is partial: selected evals
        never reported (``pytest.exit()``, an xdist worker lost and not replaced, another plugin's
        stop such as pytest-timeout's ``--session-timeout``). None: every selected eval reported."""
        aggregator = self.state.aggregator
        unreported = len(aggregator.unreported())
        if not unreported:
            return None
        selected = len(aggregator.selected or ())
        cause = self.exit_cause or stopped_by(session) or self.worker_stop
        if cause is None and self.lost_workers:
            cause = "an xdist worker was lost"
        said = f"{cause}; " if cause else ""
        return f"ended early ({said}{unreported} of {selected} selected evals did not run)"

    def _run_writers(self, kwargs: dict[str, Any]) -> None:
        """Each ``pytest_vibeeval_write_results`` implementation in pluggy's order, on its own: one
        that raises is reported in the Run Summary, and the others, the gates and pytest's own
        reports still run (a failed hook call would end the session's reporting there)."""
        hook = self.config.hook.pytest_vibeeval_write_results
        impls = hook.get_hookimpls()
        calls: list[tuple[str, Callable[[], list[Any]]]]
        if any(impl.hookwrapper or impl.wrapper for impl in impls):  # wrappers need pluggy's own call
            calls = [("result writers", lambda: [line for lines in hook(**kwargs) for line in lines or ()])]
        else:
            calls = [
                (
                    f"result writer {impl.plugin_name}",
                    functools.partial(_lines, impl.function, impl.argnames, kwargs),
                )
                for impl in reversed(impls)
            ]
        for who, call in calls:
            try:
                self.writer_lines.extend(str(line) for line in call())
            except Exception as exc:
                from .check_api import raised_at  # the checks' module: on the xdist controller only for this

                self.writer_lines.append(f"{who} failed: {type(exc).__name__}: {exc}{raised_at(exc)}")

    def _compare(self, results: ResultsFile) -> ResultsFile:
        """The results with each run compared with the baseline's same suite × configuration."""
        from .report.baseline import compare_results

        state = self.state
        assert state.baseline is not None and state.baseline_path is not None
        comparison = compare_results(results, state.baseline, state.baseline_path)
        state.baseline_missing = comparison.missing
        compared = {id(run): record for run, record in comparison.pairs}
        runs = [run.model_copy(update={"baseline": compared.get(id(run))}) for run in results.runs]
        return results.model_copy(update={"runs": runs})

    def _apply_regressions(self, session: pytest.Session, runs: list[RunRecord]) -> None:
        """--vibe-fail-on-regression: a run that regressed against the baseline fails the session."""
        from .report.baseline import regressed as worse
        from .report.format import run_title

        regressed = [run for run in runs if run.baseline is not None and worse(run.baseline)]
        if not (self.state.settings.fail_on_regression and regressed):
            return
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        shown = ", ".join(run_title(run) for run in regressed[:3]) + (", …" if len(regressed) > 3 else "")
        self.regression_note = (
            f"--vibe-fail-on-regression: {len(regressed)} run(s) regressed against the baseline ({shown})"
        )

    def _apply_nothing_ran(self, session: pytest.Session, runs: list[RunRecord]) -> None:
        """A session in which every eval was skipped fails (unless --vibe-allow-all-skipped), with
        what to set: green CI must mean something ran."""
        from .report.summary import nothing_ran_lines
        from .results import run_records

        if not any(run.evals for run in runs) or any(
            record.outcome != "skipped" for record in run_records(runs)
        ):
            return
        if self.state.settings.allow_all_skipped or session.exitstatus != pytest.ExitCode.OK:
            return
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self.nothing_ran_lines = nothing_ran_lines(list(run_records(runs)))

    def _apply_gates(self, session: pytest.Session, runs: list[RunRecord]) -> None:
        """A failed gate turns exit code 0 into 1. Failed runs of an eval whose pass rate met its
        min_pass_rate do not fail the session; with vibe_gate_only neither do failed evals of gated
        runs. When those are the session's only failures, the gates alone decide (0 or 1)."""
        gated = [run for run in runs if run.gate is not None]
        gate_failed = any(run.gate is not None and not run.gate.passed for run in runs)
        # Only a failed item can be forgiven: without one the stats of every eval need not be made.
        by_rate = passed_by_rate(runs) if self.failed_nodeids else set()
        gate_only = self.state.settings.gate_only and bool(gated)
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
            if self.state.load_errors or self.state.other_collection_errors:
                blockers.append("collection errors")
            if session.shouldfail or session.shouldstop:
                other = f"stopped early ({stopped_by(session) or 'by a plugin'})"
                blockers.append(f"the session {stop_reason(session) or other}")  # stopped after … (-x)
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


def renamed_source(records: Sequence[EvalRecord], name: str, kept: str) -> Sequence[EvalRecord]:
    """``records``, made when asked for (as a run's are), those reused from ``name`` naming ``kept``."""
    from .scoring.spool import OnDemand

    def made(index: int) -> EvalRecord:
        record = records[index]
        return record.model_copy(update={"reused_from": kept}) if record.reused_from == name else record

    return OnDemand(list(range(len(records))), made)


def reused_keys(runs: list[RunRecord]) -> Iterator[Key]:
    """The resume keys of the records the runs reused (see ``resume.py``)."""
    from .resume import resume_key

    for run in runs:
        if run.input_digest is not None:
            for record in run.evals:
                if record.reused_from is not None:
                    yield resume_key(run.source, run.input_digest, run.configuration, record)


def session_journal(config: pytest.Config) -> Journal | None:
    """The journal of a session that will run evals and write its results to the default folder
    (with --vibe-results, none: see docs/running.md); made on disk at its first record."""
    state = get_state(config)
    if state.settings.results is not None or runs_no_eval(config):
        return None
    from .report.resultsfile import DEFAULT_DIR, started_stamp

    resumed = state.resume.files if state.resume is not None else ()
    return Journal(config.rootpath / DEFAULT_DIR, started_stamp(state.started_at), resumed)


def runs_no_eval(config: pytest.Config) -> bool:
    """Whether the session runs no eval whatever it collects: --collect-only, or --setup-plan and
    --setup-only, which run fixtures only."""
    option = config.option
    return bool(
        option.collectonly or getattr(option, "setuponly", False) or getattr(option, "setupplan", False)
    )


def passed_by_rate(runs: list[RunRecord]) -> set[str]:
    """The node ids of the records of evals whose pass rate met their min_pass_rate."""
    by_rate: set[str] = set()
    for run in runs:  # each run's records are read once (from the spool, on the controller)
        names = {stats.name for stats in run.eval_stats if stats.passed_by_rate}
        if names:
            by_rate.update(record.nodeid for record in run.evals if record.name in names)
    return by_rate


def _lines(function: Any, argnames: tuple[str, ...], kwargs: dict[str, Any]) -> list[Any]:
    """What one result writer returned, as a list (made here, so that its errors are its own)."""
    return list(function(**{name: kwargs[name] for name in argnames}) or ())


def stop_reason(session: pytest.Session) -> str | None:
    """Why the session ended before every selected item ran because of -x, --maxfail or --sw (pytest
    sets ``shouldfail``/``shouldstop``; under xdist the controller's own count does), or None."""
    maxfail = session.config.getoption("maxfail", 0) or 0
    if session.shouldfail and maxfail:
        if maxfail == 1:
            return "stopped after the first failure (-x)"
        return f"stopped after {maxfail} failures (--maxfail={maxfail})"
    if session.shouldstop and session.config.getoption("stepwise", False):
        return "stopped at the first failure (--stepwise)"
    return None
