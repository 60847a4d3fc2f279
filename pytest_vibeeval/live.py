"""The live terminal status (what each worker runs now, and for how long): started by the
controller around the run loop, and kept out of pytest's way while pytest writes a report."""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from pathlib import Path

import pytest

from .progress import LiveStatus
from .pytest_private import current_line, real_terminal, terminal_writer, writer_file

LIVE_PLUGIN = "vibeeval-live-status"


def start_live_status(config: pytest.Config, lock_dir: Path | None, interval: float) -> LiveStatus | None:
    """The controller's live progress display, unless -q, no terminal reporter, no lock folder or a
    zero ``vibe_progress_interval``."""
    writer = terminal_writer(config)
    if config.get_verbosity() < 0 or writer is None or lock_dir is None or interval == 0:
        return None
    file = writer_file(writer)
    stream, owned = real_terminal(config, file)
    if stream is None:
        return None
    live = LiveStatus(
        lock_dir,
        stream,
        tty=bool(getattr(file, "isatty", lambda: False)()),
        current_line=lambda: current_line(writer),
        width=lambda: int(writer.fullwidth),
        interval=interval,
        sync=writer.flush,
        owns_stream=owned,
    )
    try:
        live.start()
    except RuntimeError:  # no thread can start (`ulimit -u` or a pids.max is reached): no live line
        if owned:
            with contextlib.suppress(OSError, ValueError):
                stream.close()
        return None
    config.pluginmanager.register(LiveHooks(live), LIVE_PLUGIN)
    return live


def stop_live_status(config: pytest.Config, live: LiveStatus) -> None:
    live.stop()
    config.pluginmanager.unregister(name=LIVE_PLUGIN)


class LiveHooks:
    """Keeps the live status line out of pytest's way: cleared while pytest writes a report."""

    def __init__(self, live: LiveStatus) -> None:
        self.live = live

    def _around(self) -> Generator[None, object, object]:
        paused = False
        try:
            self.live.pause()
            paused = True
            return (yield)
        finally:
            if paused:
                self.live.resume()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logstart(self) -> Generator[None, object, object]:
        return (yield from self._around())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self) -> Generator[None, object, object]:
        return (yield from self._around())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logfinish(self) -> Generator[None, object, object]:
        return (yield from self._around())
