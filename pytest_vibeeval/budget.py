"""``--vibe-max-cost``: what the run has spent so far, shared by the controller and its xdist
workers through one append-only ledger file (one cost per line, appended under ``flock``)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .report.format import money

LEDGER_NAME = "spent.ledger"
NOT_STARTED = "not started: --vibe-max-cost"  # how the skip of an item the budget held back begins
NOT_RERUN = "not rerun: --vibe-max-cost"  # how the failure of a rerun it held back begins


class Budget:
    """The spend of one run against ``limit`` USD (None: no limit, nothing recorded)."""

    def __init__(self, folder: Path | None, limit: float | None) -> None:
        self.limit = limit
        self.path = folder / LEDGER_NAME if folder is not None and limit is not None else None

    def add(self, cost: float | None) -> None:
        """Record a cost spent: a finished item's answer, a judge's answer."""
        if self.path is None or not cost:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, f"{cost!r}\n".encode())
        finally:
            os.close(fd)

    def spent(self) -> float:
        """What the run (every xdist worker) has spent so far: its evals' and their judges' answers."""
        if self.path is None:
            return 0.0
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return 0.0
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            with os.fdopen(os.dup(fd), encoding="ascii") as handle:
                return sum(float(line) for line in handle if line.strip())
        finally:
            os.close(fd)

    def exhausted_reason(self, held: str = NOT_STARTED) -> str | None:
        """Why no new item may start (the limit is reached), or None; ``held``: what was held back."""
        if self.limit is None:
            return None
        spent = self.spent()
        if spent >= self.limit:
            return f"{held} ${self.limit:g} reached (spent {money(spent)})"
        return None

    def stop_reason(self) -> str | None:
        """Why evals may have been held back (said of a run in which some were), or None."""
        if self.limit is None or self.spent() < self.limit:
            return None
        return f"stopped starting evals at --vibe-max-cost ${self.limit:g}"
