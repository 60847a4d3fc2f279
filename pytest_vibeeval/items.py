"""What every eval item shares, whichever collector made it: the session state, node naming,
the shared fixture info, and the markers and run info an item carries."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from .aggregate import RESULT_PROPERTY, RUN_PROPERTY, RunInfo
from .models import Configuration
from .phases import PhaseTracker
from .results import EvalRecord
from .state import VibeState

STATE_KEY = pytest.StashKey[VibeState]()


def rootdir_relative(path: Path, rootdir: Path) -> str:
    """``path`` as the results and node ids show it: relative to the rootdir when inside it."""
    return path.relative_to(rootdir).as_posix() if path.is_relative_to(rootdir) else str(path)


def shared_fixtureinfo(collector: pytest.File, func: Callable[..., None]) -> Any:
    """The fixture closure of ``func`` for every item of ``collector``'s file.

    Items of one file share it, as pytest's own parametrized items do; computing it per item
    dominated collection time. The file node stands in for the items: the closure depends only
    on the node id (conftest visibility) and usefixtures marks."""
    fixturemanager = collector.session._fixturemanager
    return fixturemanager.getfixtureinfo(node=collector, func=func, cls=None)  # type: ignore[arg-type]


def repeated(info: RunInfo, repeats: int, group: str | None = None) -> list[tuple[str, RunInfo]]:
    """The items of one eval × configuration: one, or with ``--vibe-repeat N`` N items whose ids
    carry the repeat (``eval[config-r2]``), each its own run of the eval. ``group``: the
    configuration's xdist group under ``--dist loadgroup``, which the ids end in (``@group``)."""
    suffix = f"@{group}" if group else ""
    if repeats <= 1:
        return [(f"{info.eval_id}[{info.configuration}]{suffix}", info)]
    return [
        (f"{info.eval_id}[{info.configuration}-r{n}]{suffix}", replace(info, repeat=n, repeats=repeats))
        for n in range(1, repeats + 1)
    ]


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
    if not _NODE_IDS_ARE_STRUCTURED:
        return None  # before pytest 9.2 xdist's own suffix works: adding ours would double it
    return configuration.group_name(config_id)


# pytest 9.2 keeps node ids as structured values (Node.id), so xdist's ``item._nodeid = …@group``
# no longer renames the item.
_NODE_IDS_ARE_STRUCTURED = isinstance(getattr(pytest.Item, "id", None), property)


def get_state(config: pytest.Config) -> VibeState:
    return config.stash[STATE_KEY]


def mark_item(
    item: pytest.Function,
    keywords: tuple[str, ...],
    tags: tuple[str, ...],
    timeout_s: float,
    info: RunInfo,
    xfail: str | None = None,
    group: str | None = None,
) -> None:
    """What every eval item carries: its ids as keywords, markers (``xfail`` strict, with its
    reason), the timeout backstop (the item's own timeouts plus a margin) and its
    :class:`RunInfo` on the reports."""
    item.extra_keyword_matches.update(keywords)
    item.add_marker(pytest.mark.vibeeval)
    for tag in tags:
        item.add_marker(getattr(pytest.mark, tag))
    if xfail:
        item.add_marker(pytest.mark.xfail(reason=xfail, strict=True))
    if group:
        item.add_marker(pytest.mark.xdist_group(name=group))  # --dist loadgroup: one worker, in turn
    margin = get_state(item.config).options.timeout_margin
    # The signal method raises in the item, so its finally blocks kill the commands it started and
    # the item still reports; the thread method (no SIGALRM) ends the whole process.
    method = "signal" if hasattr(signal, "SIGALRM") else "thread"
    item.add_marker(pytest.mark.timeout(timeout_s + margin, method=method))
    item.user_properties.append((RUN_PROPERTY, json.dumps(vars(info))))
    item.vibe_phases = PhaseTracker()  # type: ignore[attr-defined]
    resume = get_state(item.config).resume
    if resume is not None and info.input_digest is not None and isinstance(item, ReusableItem):
        item.reused = resume.find(
            info.source, info.input_digest, info.configuration, info.eval_id, info.repeat
        )


class ReusableItem(pytest.Function):
    """An eval item that --vibe-resume may answer with its finished record from an earlier run:
    then neither its fixtures (the workspace copy) nor its body run."""

    reused: EvalRecord | None = None

    def setup(self) -> None:
        if self.reused is None:
            super().setup()

    def runtest(self) -> None:
        if self.reused is None:
            super().runtest()
            return
        record = self.reused.model_copy(update={"nodeid": self.nodeid})  # e.g. now with an @group
        self.user_properties.append((RESULT_PROPERTY, record.model_dump_json()))
        if record.outcome != "passed":
            pytest.fail(record.message or record.outcome, pytrace=False)


def phases_of(item: pytest.Item) -> PhaseTracker | None:
    """The item's phase tracker (None for items that are not ours)."""
    tracker = getattr(item, "vibe_phases", None)
    return tracker if isinstance(tracker, PhaseTracker) else None


def start_or_skip(state: VibeState) -> None:
    """Skip the item when --vibe-max-cost is spent (checked as each item starts)."""
    reason = state.budget.exhausted_reason()
    if reason:
        pytest.skip(reason)
