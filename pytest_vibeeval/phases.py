"""Where a running item is: its current phase (workspace, agent, build, grade, checks) and since
when. An item that fails without a result (its timeout backstop fired, a fixture raised) still gets
one saying which phase it was in, with the steps it finished."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from .text_input import first_line

if TYPE_CHECKING:
    from .results import EvalRecord, StepRecord


class Phase(NamedTuple):  # a tuple: made twice for every item, faster than a frozen dataclass
    name: str  # workspace | agent | build | grade | checks
    detail: str  # the step's or configuration's name, where there is one
    started: float  # time.monotonic()


@dataclass
class PhaseTracker:
    """One item's phases, as the item enters them."""

    current: Phase | None = None
    history: list[str] = field(default_factory=list)
    listener: Callable[[str, str], None] | None = None  # told (phase, detail) as each begins

    def enter(self, name: str, detail: str = "") -> None:
        self.current = Phase(name, detail, time.monotonic())
        self.history.append(name)
        if self.listener is not None:
            self.listener(name, detail)

    def describe(self) -> str:
        """``in the agent phase (claude, 612 s in)``, or ``before its first phase``."""
        phase = self.current
        if phase is None:
            return "before its first phase"
        detail = f"{phase.detail}, " if phase.detail else ""
        return f"in the {phase.name} phase ({detail}{time.monotonic() - phase.started:.0f} s in)"


@dataclass
class Progress:
    """What a running eval has finished and spent so far (answers, turns, judge calls), kept in the
    record it leaves when it stops without one: its timeout backstop fired mid-eval."""

    # The eval's record were it stopped now, given the message saying why (None: nothing spent).
    so_far: Callable[[str], EvalRecord] | None = None

    def record(self, message: str) -> EvalRecord | None:
        """The eval's record with what it finished, stopped with ``message``; None if nothing was."""
        return self.so_far(message) if self.so_far is not None else None


def phases_of(item: object) -> PhaseTracker | None:
    """The item's phase tracker (None for items that are not ours)."""
    tracker = getattr(item, "vibe_phases", None)
    return tracker if isinstance(tracker, PhaseTracker) else None


def unfinished_record(
    name: str,
    named: bool,
    nodeid: str,
    repeat: int,
    tracker: PhaseTracker | None,
    failure: str,
    steps: list[StepRecord],
) -> EvalRecord:
    """The record of an item that stopped without producing one: an error naming the phase it was
    in and why it stopped (as ``failure`` says, when it names the phase already: the backstop's), with
    the steps it had finished."""
    where = tracker.describe() if tracker is not None else "before its first phase"
    first = first_line(failure.strip()) or "it stopped"
    message = first if first.startswith("stopped ") else f"stopped {where}: {first}"
    from .results import EvalRecord

    return EvalRecord(
        name=name,
        named=named,
        nodeid=nodeid,
        outcome="error",
        message=message,
        steps=steps,
        repeat=repeat,
    )
