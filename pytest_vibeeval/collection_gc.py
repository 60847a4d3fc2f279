"""The garbage collector around collecting eval files (``vibe_gc_freeze``): paused from the first
eval file to the end of collection, then what collection made frozen until the session ends;
paused again while the session's end scores the runs.

Collecting thousands of evals makes as many objects that live until the session ends (items, plans,
the suites' models); every automatic full collection meanwhile rescans all of them made so far (a
quarter of collecting 10 000 items), and every one while the evals run rescans them again. A
process whose collector was already off is left as it was.

At the process's exit, after such a session, one full collection runs (the garbage's finalisers
run), then what is left is frozen: the interpreter's shutdown otherwise rescans every object of the
session several times (more than a tenth of a short eval's whole cost). No pytest here."""

from __future__ import annotations

import atexit
import contextlib
import gc
from collections.abc import Iterator

from .state import VibeState


def pause(state: VibeState) -> None:
    """An eval file is to be collected: no automatic collections until :func:`settle`. Called as
    its collector is made, before the first one imports the machinery of loading and running
    evals (pydantic, the models, the checks), whose objects live as long as the session: the
    full collection that import would otherwise trigger rescans the whole start-up heap."""
    if state.settings.gc_freeze and not state.gc_paused and gc.isenabled():
        gc.disable()
        state.gc_paused = True


def settle(state: VibeState, freeze: bool) -> None:
    """Collection is over: with ``freeze``, freeze what collection made; then let the collector run
    again. Without collecting first: collecting makes no garbage cycles (only importing the
    machinery leaves a few hundred objects, however many evals), and a collection of the young
    generations would scan everything made since :func:`pause`, the imports' objects included
    (about 35 000 objects in a one-eval session). The few unreachable ones are found after :func:`thaw`."""
    if freeze and state.settings.gc_freeze:
        gc.freeze()
        state.gc_frozen = True
    resume(state)


def freeze_controller(state: VibeState) -> None:
    """The xdist controller, which collects no file: its workers collected evals, and the scoring
    machinery is imported. Freeze the start-up's heap (pytest, xdist, pydantic, the results and
    scoring modules) as :func:`settle` freezes a collection's: every full collection while the
    reports arrive, and pytest's own at the session's end, would rescan all of it (a tenth of the
    controller's time per eval). Once; a process whose collector is off is left as it was."""
    if state.settings.gc_freeze and not state.gc_frozen and gc.isenabled():
        gc.collect(1)
        gc.freeze()
        state.gc_frozen = True


def resume(state: VibeState) -> None:
    if state.gc_paused:
        gc.enable()
        state.gc_paused = False


@contextlib.contextmanager
def paused(state: VibeState) -> Iterator[None]:
    """No automatic collections while the session's end scores the runs and writes the results:
    it makes many objects and no garbage cycles, and each full collection meanwhile rescans every
    record the evals made (a tenth of the session's end at 2000 evals)."""
    if not (state.settings.gc_freeze and gc.isenabled()):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def thaw(state: VibeState) -> None:
    """The session's last cleanup: undo :func:`pause` and :func:`settle` (an in-process run, as
    pytester's, must not leave its caller's objects frozen or its collector off); a session that
    ran or scored evals has the exit's collection done once (:func:`collect_once_at_exit`)."""
    resume(state)
    if state.settings.gc_freeze and (state.gc_frozen or state.runs):
        collect_once_at_exit()
    if state.gc_frozen:
        gc.unfreeze()
        state.gc_frozen = False


_exit_collection: list[bool] = []  # registered in this process


def collect_once_at_exit() -> None:
    """At the process's exit (once however many sessions ran in it): a full collection, then
    the survivors frozen. Shutdown frees them as before, but its own collections no longer scan
    them; only the finalisers of objects that are unreachable solely during shutdown (which
    Python does not promise to run) may be skipped."""
    if not _exit_collection:
        atexit.register(_collect_and_freeze)
        _exit_collection.append(True)


def _collect_and_freeze() -> None:
    gc.collect()
    gc.freeze()
