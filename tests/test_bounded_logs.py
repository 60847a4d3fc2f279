"""An agent's or step's log is read like any untrusted file: a log that an agent replaced with a FIFO
or a device is refused at once instead of blocking the run or reading forever."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_vibeeval.bounded_read import UnreadableFile
from pytest_vibeeval.process import read_head, read_tail, tail_lines


@pytest.mark.timeout(30)  # a blocking open or an endless read would hang here
@pytest.mark.parametrize(
    "read", [lambda p: read_head(p, 100), lambda p: read_tail(p, 5, 100)], ids=["head", "tail"]
)
def test_a_fifo_or_device_log_is_refused_without_blocking(tmp_path: Path, read: object) -> None:
    fifo = tmp_path / "agent.stdout"
    os.mkfifo(fifo)  # no writer: opening it for reading the usual way blocks
    with pytest.raises(UnreadableFile, match="not a regular file but a FIFO"):
        read(fifo)  # type: ignore[operator]
    with pytest.raises(UnreadableFile, match="not a regular file but a character device"):
        read(Path("/dev/zero"))  # type: ignore[operator]


def test_failure_tails_leave_out_logs_that_are_not_files(tmp_path: Path) -> None:
    fifo = tmp_path / "agent.stderr"
    os.mkfifo(fifo)
    log = tmp_path / "agent.stdout"
    log.write_text("one\ntwo\nthree\n")
    lines = tail_lines([("stdout", log), ("stderr", fifo)], max_lines=2)
    assert lines == [f"last 2 lines of stdout ({log}):", "two\nthree"]


def test_the_tail_window_drops_a_partial_first_line(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"x" * 50 + b"\nwhole line\nlast\n")
    assert read_tail(log, 10, 20) == "whole line\nlast\n"  # the window starts inside the x's
    assert read_tail(log, 1, 20) == "last\n"
    log.write_bytes(b"0123456789")
    assert read_tail(log, 10, 10) == "0123456789"  # exactly the window: nothing dropped
    assert read_tail(log, 10, 9) == "…123456789"  # one line only: kept from the window's start, marked
