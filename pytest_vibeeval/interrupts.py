"""SIGTERM ends a session as Ctrl-C does, and a second signal cannot make it look complete.

CI systems cancel a job with SIGTERM, whose default action kills Python on the spot: nothing is
written. :class:`InterruptWatch` turns it into the ``KeyboardInterrupt`` that Ctrl-C raises, and
remembers that either came. The first signal raises; later ones are held until the results are
written (:meth:`InterruptWatch.release`): a second Ctrl-C arriving while pytest handles the first
would otherwise leave the session with its status before the interruption (``"interrupted":
false``, a score over the few evals that finished). A third one raises anyway: the user insists.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

WATCHED = (signal.SIGINT, signal.SIGTERM)
INSISTING = 3  # signals after which one raises even while held


class InterruptWatch:
    """Installed by :meth:`install` in the main thread; ``received`` names the first signal."""

    def __init__(self) -> None:
        self.received: str | None = None
        self.count = 0
        self._previous: dict[signal.Signals, Any] = {}

    def install(self) -> None:
        """Watch SIGINT and SIGTERM where they have their default handling (an ignored SIGINT, as in
        a background job, or a handler someone else set stays as it is)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in WATCHED:
            current = signal.getsignal(signum)
            default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
            if current is default:
                self._previous[signum] = current
                signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.received is None:
            self.received = signal.Signals(signum).name
        if self.count == 1 or self.count >= INSISTING:
            raise KeyboardInterrupt

    def release(self) -> None:
        """The results are written: from now on every signal has its usual effect."""
        self.count = max(self.count, INSISTING - 1)

    def uninstall(self) -> None:
        """Put the previous handlers back (those still ours: a test may have replaced them)."""
        for signum, previous in self._previous.items():
            if signal.getsignal(signum) == self._handle:
                signal.signal(signum, previous)
        self._previous.clear()
