"""The timeout backstop of an eval item: a ``SIGALRM`` timer armed for each attempt of the item (its
setup, call and teardown; a plugin may rerun them) that raises in the item when it expires, so the
item's own ``finally`` blocks kill the commands it started and the item still reports.

It is armed and disarmed with a few system calls, where a timeout mark per item would be parsed
again and again. Where ``SIGALRM`` cannot be used (a platform without it, a thread other than the
main one) :meth:`Backstop.arm` says so and the caller falls back to another timer."""

from __future__ import annotations

import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any

HAS_SIGALRM = hasattr(signal, "SIGALRM")
RETRY_S = 0.05  # how soon an alarm that came where it may not raise looks again
RETRY_FOR_S = 10.0  # how long it keeps looking before it raises wherever it is
_Handler = Callable[[int, FrameType | None], Any] | int | None

# The C function itself: signal.signal turns the handler it returns into a Handlers member,
# trying (and failing, at an exception's cost) for a function: most of an item's arming. It takes
# and returns the plain SIG_DFL and SIG_IGN (ints), not the Handlers members. (No stubs: typed here.)
_C_SIGNAL = getattr(signal, "_signal", signal)  # the module signal wraps (itself where it has none)
_c_swap: Callable[[int, _Handler], _Handler] = _C_SIGNAL.signal
_STDLIB_SWAP = signal.signal
_DEFAULT: _Handler = _C_SIGNAL.SIG_DFL


def _swap_handler(signum: int, handler: _Handler) -> _Handler:
    """Install ``handler``; returns the one it replaces. A ``signal.signal`` replaced after import
    (gevent's, a test double) is called as it is; the standard one is skipped for its C function."""
    swap = signal.signal
    if swap is _STDLIB_SWAP:
        return _c_swap(signum, handler)
    return swap(signum, handler)


def backstop_available() -> bool:
    """Whether a ``SIGALRM`` timer can be armed here (a platform that has it, the main thread)."""
    return HAS_SIGALRM and threading.current_thread() is threading.main_thread()


class Backstop:
    """One process's backstop timer; at most one item is armed at a time.

    A timer that was already running when the backstop was armed (an outer test's own timeout, say)
    is paused while the item runs and resumes afterwards with the time it had left (and its
    interval); the signal handler that was installed is put back."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.owner: object | None = None  # what the timer is armed for
        self._expire: Callable[[], None] | None = None
        self._may_fire: Callable[[FrameType | None], bool] | None = None
        self._previous_handler: _Handler = None
        self._previous_timer = (0.0, 0.0)  # (delay, interval) of the paused timer
        self._armed_at = 0.0
        self._seconds = 0.0
        self._refused_since: float | None = None  # when the alarm first came where it may not raise

    def arm(
        self,
        owner: object,
        seconds: float,
        expire: Callable[[], None],
        may_fire: Callable[[FrameType | None], bool] | None = None,
    ) -> bool:
        """Call ``expire`` (which should raise) in the main thread once ``seconds`` have passed,
        unless :meth:`disarm` comes first. ``may_fire(frame)``, given the interrupted frame, says
        whether it may raise there; when not, the alarm comes back every :data:`RETRY_S` seconds
        until it may, or for :data:`RETRY_FOR_S` seconds at most: then it raises where it is (a
        hook that hangs must not hang the session). False when no ``SIGALRM`` timer can be
        armed here."""
        if not backstop_available():
            return False
        self.disarm()
        # The outer timer is paused before the handler changes, and signal.signal runs the
        # handlers of pending signals first: an alarm of the outer timer reaches its own handler,
        # never ours. Nothing is recorded until the swap is done (that handler may raise).
        paused = signal.setitimer(signal.ITIMER_REAL, 0)
        previous = _swap_handler(signal.SIGALRM, self._on_alarm)
        self._previous_handler, self._previous_timer = previous, paused
        self._armed_at, self._seconds = self._clock(), seconds
        self._expire, self._may_fire, self._refused_since = expire, may_fire, None
        self.owner = owner
        signal.setitimer(signal.ITIMER_REAL, seconds)
        return True

    def disarm(self) -> None:
        """Stop the timer (nothing happens when it is not armed) and put back what was there."""
        if self.owner is None:
            return
        self._expire = None  # first: an alarm that comes from here on does nothing
        self.owner = self._may_fire = None
        signal.setitimer(signal.ITIMER_REAL, 0)
        _swap_handler(signal.SIGALRM, self._previous_handler or _DEFAULT)
        delay, interval = self._previous_timer
        if delay:
            # At least a microsecond: a timer that ran out meanwhile fires now rather than never.
            elapsed = self._clock() - self._armed_at
            signal.setitimer(signal.ITIMER_REAL, max(delay - elapsed, 1e-6), interval)

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        expire = self._expire
        if expire is None or being_debugged():
            return  # disarmed meanwhile, or a person at a breakpoint: not a hung item
        if self._may_fire is not None and not self._may_fire(frame):
            now = self._clock()
            if self._refused_since is None:
                self._refused_since = now
            if now - self._refused_since < RETRY_FOR_S:
                signal.setitimer(signal.ITIMER_REAL, RETRY_S)
                return
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


OWN_THREAD_PREFIX = "vibeeval-"  # the names of the plugin's own threads (its progress board)


def other_threads_stacks() -> str:
    """The stacks of the other threads :mod:`threading` started, most recent call last (empty when
    there is none): where the rest of a hung item was when its backstop fired. The plugin's own
    threads and those started below :mod:`threading` (xdist's channel to its controller) are
    left out."""
    me = threading.get_ident()
    names = {
        thread.ident: thread.name
        for thread in threading.enumerate()
        if thread.ident != me and not thread.name.startswith(OWN_THREAD_PREFIX)
    }
    frames = sys._current_frames()
    parts = [
        f"Thread {name}:\n{''.join(traceback.format_stack(frames[ident]))}"
        for ident, name in names.items()
        if ident in frames
    ]
    return "\n".join(parts)
