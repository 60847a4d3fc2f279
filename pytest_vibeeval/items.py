"""What every eval item shares, whichever collector made it: the session state, node naming,
the shared fixture info, and the markers and run info an item carries."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from .aggregate import RUN_PROPERTY, RunInfo
from .state import VibeState

TIMEOUT_MARGIN_S = 30.0
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


def repeated(info: RunInfo, repeats: int) -> list[tuple[str, RunInfo]]:
    """The items of one eval × configuration: one, or with ``--vibe-repeat N`` N items whose ids
    carry the repeat (``eval[config-r2]``), each its own run of the eval."""
    plain = f"{info.eval_id}[{info.configuration}]"
    if repeats <= 1:
        return [(plain, info)]
    return [
        (f"{info.eval_id}[{info.configuration}-r{n}]", replace(info, repeat=n, repeats=repeats))
        for n in range(1, repeats + 1)
    ]


def get_state(config: pytest.Config) -> VibeState:
    return config.stash[STATE_KEY]


def mark_item(
    item: pytest.Function,
    keywords: tuple[str, ...],
    tags: tuple[str, ...],
    timeout_s: float,
    info: RunInfo,
    xfail: str | None = None,
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
    item.add_marker(pytest.mark.timeout(timeout_s + TIMEOUT_MARGIN_S))
    item.user_properties.append((RUN_PROPERTY, json.dumps(vars(info))))


def start_or_skip(state: VibeState) -> None:
    """Skip the item when --vibe-max-cost is spent (checked as each item starts)."""
    reason = state.budget.exhausted_reason()
    if reason:
        pytest.skip(reason)
