"""The timeout backstop of an eval item: a ``SIGALRM`` timer armed for the item's whole run (setup,
call and teardown) that raises in the item when it expires, so the item's own ``finally`` blocks
kill the commands it started and the item still reports.

It is armed and disarmed with two system calls each, where a timeout mark per item would be parsed
again and again. Where ``SIGALRM`` cannot be used (a platform without it, a thread other than the
main one) :meth:`Backstop.arm` says so and the caller falls back to another timer."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

HAS_SIGALRM = hasattr(signal, "SIGALRM")
_Handler = Callable[[int, FrameType | None], Any] | int | None


class Backstop:
    """One process's backstop timer; at most one item is armed at a time.

    A timer that was already running when the backstop was armed (an outer test's own timeout, say)
    is paused while the item runs and resumes afterwards with the time it had left; the signal
    handler that was installed is put back."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.owner: object | None = None  # what the timer is armed for
        self._expire: Callable[[], None] | None = None
        self._previous_handler: _Handler = None
        self._previous_delay = 0.0
        self._armed_at = 0.0

    def arm(self, owner: object, seconds: float, expire: Callable[[], None]) -> bool:
        """Call ``expire`` (which should raise) in the main thread once ``seconds`` have passed,
        unless :meth:`disarm` comes first. False when no ``SIGALRM`` timer can be armed here."""
        if not HAS_SIGALRM or threading.current_thread() is not threading.main_thread():
            return False
        self.disarm()
        self._expire = expire
        self._previous_handler = signal.signal(signal.SIGALRM, self._on_alarm)
        self._armed_at = self._clock()
        self._previous_delay = signal.setitimer(signal.ITIMER_REAL, seconds)[0]
        self.owner = owner
        return True

    def disarm(self) -> None:
        """Stop the timer (nothing happens when it is not armed) and put back what was there."""
        if self.owner is None:
            return
        self.owner = None
        self._expire = None
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous_handler or signal.SIG_DFL)
        if self._previous_delay:
            # At least a microsecond: a timer that ran out meanwhile fires now rather than never.
            elapsed = self._clock() - self._armed_at
            signal.setitimer(signal.ITIMER_REAL, max(self._previous_delay - elapsed, 1e-6))

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        expire = self._expire
        if expire is not None and not being_debugged():
            expire()


_DEBUGGER_MODULES = frozenset({"bdb", "pdb", "pydevd", "_pydevd_bundle", "pydevd_frame_evaluator"})


def being_debugged() -> bool:
    """Whether a debugger is stepping through this thread (then the backstop does not fire: a
    person at a breakpoint is not a hung item)."""
    trace = sys.gettrace()
    if trace is not None:
        module = getattr(trace, "__module__", None) or ""
        if module.split(".")[0] in _DEBUGGER_MODULES:
            return True
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12+: debuggers such as debugpy
    return monitoring is not None and monitoring.get_tool(monitoring.DEBUGGER_ID) is not None
