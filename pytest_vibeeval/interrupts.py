"""SIGTERM ends a session as Ctrl-C does, and no signal while the session ends loses its results.

CI systems cancel a job with SIGTERM, whose default action kills Python on the spot: nothing is
written. :class:`InterruptWatch` turns it into the ``KeyboardInterrupt`` that Ctrl-C raises, and
remembers that either came. The first signal while the evals run raises. Once the session is ending
(that signal raised, or the run loop is over: :meth:`InterruptWatch.ending`), the next signal is
held until the results are written (:meth:`InterruptWatch.release`): raised while the runs are
scored or the files written, it would end the session with no results at all, and one arriving
while pytest handles a first Ctrl-C would leave the session with its status before the interruption
(``"interrupted": false``, a score over the few evals that finished). One more signal after a held
one raises anyway: the user insists, and abandons the results.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn

WATCHED = (signal.SIGINT, signal.SIGTERM)


class InterruptWatch:
    """Installed by :meth:`install` in the main thread. ``received`` names the signal that
    interrupted the run, ``held`` the one held while the session ended."""

    def __init__(self) -> None:
        self.received: str | None = None
        self.held: str | None = None
        self._ending = False  # the run is over: hold the next signal
        self._released = False  # the results are written: signals have their usual effect
        self._announce = False
        self._has_results: Callable[[], bool] = lambda: True
        self._previous: dict[signal.Signals, Any] = {}

    def install(self, announce: bool = False, has_results: Callable[[], bool] | None = None) -> None:
        """Watch SIGINT and SIGTERM where they have their default handling (an ignored SIGINT, as in
        a background job, or a handler someone else set stays as it is). ``announce``: say on
        stderr when a signal is held (the process that writes the results; not an xdist worker).
        ``has_results``: whether a first signal leaves results to write (else the next one is not
        held: a session of plain tests, or one where no eval finished yet)."""
        if threading.current_thread() is not threading.main_thread():
            return
        self._announce = announce
        if has_results is not None:
            self._has_results = has_results
        for signum in WATCHED:
            current = signal.getsignal(signum)
            default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
            if current is default:
                self._previous[signum] = current
                signal.signal(signum, self._handle)

    def ending(self) -> None:
        """The run loop is over and the results are about to be made: hold the next signal."""
        self._ending = True

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self._released or self.held is not None:
            raise KeyboardInterrupt
        if not self._ending:  # the first, while evals run: it stops the run
            self._interrupt(name)
        self.held = name
        if self._announce:
            # os.write, not print: a handler that writes to a stream pytest is writing to can raise
            # "reentrant call" from inside that write.
            os.write(2, f"\n{held_message(name)}\n".encode())

    def relay(self, name: str) -> None:
        """Another process was interrupted (``name``: what it received, and which process): raise
        ``KeyboardInterrupt`` here as for a first signal, unless the session is ending already."""
        if not self._ending and self.received is None:
            self._interrupt(name)

    def _interrupt(self, name: str) -> NoReturn:
        # the next signal is held only where there are results to write (not in a session of plain
        # tests, nor before any eval finished)
        self._ending = self._has_results()
        self.received = self.received or name
        raise KeyboardInterrupt

    def release(self) -> None:
        """The results are written: from now on every signal has its usual effect."""
        self._released = True

    def uninstall(self) -> None:
        """Put the previous handlers back (those still ours: a test may have replaced them)."""
        for signum, previous in self._previous.items():
            if signal.getsignal(signum) == self._handle:
                signal.signal(signum, previous)
        self._previous.clear()


def held_message(name: str) -> str:
    """What the terminal says when a signal is held while the results are written."""
    return (
        f"vibeeval: interrupt ({name}) received while writing results: finishing them first; "
        "press Ctrl-C again to abandon them"
    )
