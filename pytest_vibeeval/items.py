"""The one eval item class, made from an :class:`~pytest_vibeeval.plan.EvalPlan` whichever file it
came from: its markers, the run info its reports carry, --vibe-resume, and the shared end of its
body (:func:`finish`)."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

from .budget import NOT_RERUN
from .errors import terminal_safe
from .phases import PhaseTracker, Progress
from .pytest_private import node_ids_are_structured, structure_node_id
from .stash import STATE_KEY as STATE_KEY
from .stash import get_state as get_state
from .stash import rootdir_relative as rootdir_relative
from .transport import RESULT_PROPERTY, RUN_PROPERTY, Attached, RunInfo, attach_record

if TYPE_CHECKING:  # what the items are made of: imported when a suite is collected
    from .models import Configuration
    from .plan import EvalPlan, WorkspaceWork
    from .results import EvalRecord
    from .runner import ItemVerdict
    from .state import VibeState


def loadgroup_name(config: pytest.Config, configuration: Configuration | None, config_id: str) -> str | None:
    """The configuration's xdist group when this run distributes with ``--dist loadgroup``.

    xdist groups the items whose node ids end in ``@<group>``; it appends that suffix itself on the
    workers, which pytest 9.2's immutable node ids no longer allow (pytest-xdist#1386), so the
    items are named with it."""
    if configuration is None or configuration.group_name(config_id) is None:
        return None
    on_worker = getattr(config.option, "loadgroup", False)
    if not on_worker and getattr(config.option, "dist", None) != "loadgroup":
        return None
    if not node_ids_are_structured():
        return None  # before pytest 9.2 xdist's own suffix works: adding ours would double it
    return configuration.group_name(config_id)


_Failed: Any = pytest.fail.Exception  # pytest's `Failed`, public only as this attribute


class BackstopTimeout(_Failed):  # type: ignore[misc]  # a subclass of what mypy sees as Any
    """The item's timeout backstop stopped it (see :mod:`.backstop`); the message says in which phase."""

    __module__ = "builtins"  # shown as `BackstopTimeout: …`, as pytest shows its `Failed: …`


class RerunHeld(_Failed):  # type: ignore[misc]  # a subclass of what mypy sees as Any
    """--vibe-max-cost held back a rerun of the item: its earlier attempt's record stands."""

    __module__ = "builtins"


class EvalItem(pytest.Function):
    """One eval × configuration (× repeat), made from its :class:`EvalPlan`: a prompt eval or a
    coding-agent eval, run by the body its plan's kind names (see :mod:`pytest_vibeeval.execute` and
    :mod:`pytest_vibeeval.coding_items`).

    --vibe-resume may answer it with its finished record from an earlier run: then neither its
    fixtures (the workspace copy) nor its body run."""

    def __init__(self, *, plan: EvalPlan, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan = plan
        self.setup_seconds = 0.0  # the fixtures' time (a coding item's workspace preparation)
        self.attempts = 0  # how often its setup began: more than once when a plugin reran it
        self.failure: str | None = None  # why its last failed attempt that may be rerun failed
        structure_node_id(self)
        self.extra_keyword_matches.update(plan.keywords)
        self.add_marker(_mark("vibeeval"))
        for tag in plan.tags:
            self.add_marker(_mark(tag))
        if plan.expected_failure:
            self.add_marker(pytest.mark.xfail(reason=plan.expected_failure, strict=True))
        if plan.group:
            self.add_marker(pytest.mark.xdist_group(name=plan.group))  # --dist loadgroup: one worker
        state = get_state(self.config)
        self.backstop_s = plan.timeout_s + state.settings.timeout_margin  # see .backstop
        info = plan.info
        # Its text is made only where a worker sends it (see itemhooks), not for every item that
        # every worker collects: each worker collects the whole suite and runs its share.
        self.user_properties.append((RUN_PROPERTY, Attached(info, RunInfo.to_json)))
        self.reused: EvalRecord | None = None
        if state.resume is not None and info.input_digest is not None:
            digests = (info.input_digest, *filter(None, [plan.earlier_digest]))
            where = (info.configuration, info.eval_id, info.repeat)
            self.reused = state.resume.find(info.source, digests, *where)

    def begin_attempt(self) -> None:
        """Its setup begins. Again when pytest-rerunfailures reruns it: then its phases and what it
        finished start afresh, so that a rerun stopped early does not report the earlier attempt's."""
        self.attempts += 1
        if self.attempts > 1:
            self._phases = self._progress = None

    # Made at first use, by the process that runs the item: one that only collects it never does.
    _phases: PhaseTracker | None = None
    _progress: Progress | None = None

    @property
    def vibe_phases(self) -> PhaseTracker:
        """The phases of its current attempt."""
        if self._phases is None:
            self._phases = PhaseTracker()
        return self._phases

    @property
    def vibe_progress(self) -> Progress:
        """What its current attempt finished (a prompt eval's), should its backstop stop it."""
        if self._progress is None:
            self._progress = Progress()
        return self._progress

    @property
    def info(self) -> RunInfo:
        """What the item's reports carry about its run."""
        return self.plan.info

    @property
    def workspace_work(self) -> WorkspaceWork | None:
        """The coding-agent part of the plan (None for a prompt eval)."""
        work = self.plan.work
        return work if isinstance(work, loaded("pytest_vibeeval.plan").WorkspaceWork) else None

    def setup(self) -> None:
        """Skip a coding item whose required commands are missing; time the fixtures (a coding item's
        workspace preparation)."""
        if self.reused is not None:
            return  # --vibe-resume answers it: no workspace
        work = self.workspace_work
        if work is not None:
            missing = [name for name in work.evaluation.requires if shutil.which(name) is None]
            if missing:
                pytest.skip(f"{work.evaluation.id} requires {', '.join(missing)} on PATH (not found)")
            self.vibe_phases.enter("workspace", work.evaluation.id)
        started = time.perf_counter()
        super().setup()
        self.setup_seconds = time.perf_counter() - started

    def runtest(self) -> None:
        if self.reused is None:
            super().runtest()
            return
        record = self.reused.model_copy(update={"nodeid": self.nodeid})  # e.g. now with an @group
        self.user_properties.append((RESULT_PROPERTY, attach_record(self.config, record)))
        if record.outcome != "passed":
            pytest.fail(terminal_safe(record.message or record.outcome), pytrace=False)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.plan.line - 1 if self.plan.line else None, self.name

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        """The failure located (``--tb=line``, the crash line) at the eval in its suite when the
        plugin failed it (a failed check, the timeout backstop), not at a line of the plugin. The
        backstop's shows only the user's frames where it fired (a ``python:`` callable's), not the
        plugin's machinery nor the standard library's."""
        from .check_api import PACKAGE_DIR

        value = excinfo.value
        if isinstance(value, BackstopTimeout) and not self.config.getoption("fulltrace", False):
            users = _users_frames(excinfo)
            if users:
                excinfo.traceback = excinfo.traceback.filter(lambda entry: id(entry) in users)
            else:
                value.pytrace = False  # none is the user's (it fired in the plugin): the message alone
        rep: Any = super().repr_failure(excinfo)
        crash = getattr(rep, "reprcrash", None)
        if crash is None or not self.plan.line:
            return rep
        # pytest locates the plugin's pytest.fail in the plugin or in pluggy, which may drop its frames
        if isinstance(value, _Failed) or str(Path(crash.path).resolve()).startswith(PACKAGE_DIR):
            rep.reprcrash = dataclasses.replace(crash, path=str(self.path), lineno=self.plan.line)
            chain = getattr(rep, "chain", None)
            if chain:  # what an xdist worker sends: the controller takes the crash from the chain
                traceback, _, description = chain[-1]
                rep.chain = [*chain[:-1], (traceback, rep.reprcrash, description)]
        return rep


def _users_frames(excinfo: pytest.ExceptionInfo[BaseException]) -> set[int]:
    """The ids of the traceback entries that are the user's (:func:`.check_api.is_users_file`)
    among those after the plugin's first frame (pytest's and pluggy's come before it)."""
    from .check_api import PACKAGE_DIR, is_users_file

    entries = list(excinfo.traceback)
    ours = (i for i, entry in enumerate(entries) if str(entry.path).startswith(PACKAGE_DIR))
    first = next(ours, len(entries))
    return {id(entry) for entry in entries[first:] if is_users_file(str(entry.path))}


def loaded(module: str) -> ModuleType:
    """The plugin's ``module`` (``"pytest_vibeeval.plan"``), imported where it was not yet. For what
    an item's run uses of the eval machinery, loaded with the first eval file: an import statement
    in a function runs at each call, a relative one costing about 11 000 instructions with its
    module loaded, more than what the item then does with it. Looked up each time, not kept: a
    module imported again (pytester's in-process runs do) must not leave its old classes here."""
    found = sys.modules.get(module)
    return found if found is not None else importlib.import_module(module)


@functools.cache
def _mark(name: str) -> pytest.MarkDecorator:
    """``pytest.mark.<name>``, made once: items of a large suite would each make it again."""
    return getattr(pytest.mark, name)  # type: ignore[no-any-return]


def finish(item: EvalItem, record: EvalRecord, verdict: ItemVerdict) -> None:
    """The end of every item's body: count its cost (its judges' is counted as they answer), put its
    record on the report, and pass, skip or fail it as the verdict says."""
    state = get_state(item.config)
    state.budget.add(loaded("pytest_vibeeval.spending").spent_now(record))
    # Under --runxfail pytest ignores the mark: the eval is then reported (and recorded) as any other.
    expected = item.plan.expected_failure is not None and not item.config.option.runxfail
    update = {"xfail": expected, **_row_fields(item.plan, state)}
    if any(getattr(record, field) != value for field, value in update.items()):
        record = record.model_copy(update=update)
    item.user_properties.append((RESULT_PROPERTY, attach_record(item.config, record)))
    # The record it would leave if stopped now is never asked for once this one is on its reports
    # (see itemhooks._record_unfinished); let it go rather than keep an earlier copy of the record
    # alive with the item until the session ends.
    item.vibe_progress.so_far = None
    if verdict.outcome == "skipped":  # what an agent printed never reaches the terminal raw
        pytest.skip(terminal_safe(verdict.message or "skipped"))
    if verdict.outcome != "passed":
        pytest.fail(terminal_safe(verdict.message or verdict.outcome), pytrace=False)


def _row_fields(plan: EvalPlan, state: VibeState) -> dict[str, Any]:
    """A dataset row's record fields: its eval, id and values (secret values masked)."""
    case = plan.work.case if isinstance(plan.work, loaded("pytest_vibeeval.plan").PromptWork) else None
    if case is None or case.row is None:
        return {}
    redact = state.renderer.redactor()
    row = {column: redact(value) if isinstance(value, str) else value for column, value in case.row.items()}
    return {"eval_name": case.eval_name, "row_id": case.row_id, "row": row}


def start_or_skip(item: EvalItem) -> None:
    """Skip the item when --vibe-max-cost is spent (checked as each item starts). A rerun of an item
    that ran (pytest-rerunfailures) fails instead: its earlier attempt's result stands, and pytest
    then reports the item as the results record it, not as skipped, with that attempt's failure
    first. (A failed attempt once the budget is spent is not rerun at all: see
    ``itemhooks._hold_reruns``; this holds back a rerun whose budget ran out after its attempt.)"""
    budget = get_state(item.config).budget
    if item.attempts > 1:
        reason = budget.exhausted_reason(NOT_RERUN)
        if reason:
            held = f"{reason}: its earlier attempt's result stands"
            earlier = item.failure
            raise RerunHeld(terminal_safe(f"{earlier}\n({held})" if earlier else held), pytrace=False)
    reason = budget.exhausted_reason()
    if reason:
        pytest.skip(reason)
