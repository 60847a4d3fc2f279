"""The package's command line as a shell pipeline uses it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("command", "status"),
    [
        (["schema", "--print-dir"], 1),
        (["--help"], 0),  # argparse itself ignores a failed write of its help
        (["cache", "info", "--help"], 0),
    ],
)
def test_a_reader_that_went_away_ends_the_command_quietly(command: list[str], status: int) -> None:
    """``python -m pytest_vibeeval … | head`` once head has what it wants: no BrokenPipeError
    traceback, and exit code 1 where the output was not all written. The pipe's read end is closed
    before the command starts, so its first write fails whatever the machine's load."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_vibeeval", *command],
            stdout=write_end, stderr=subprocess.PIPE, text=True, check=False, timeout=120,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == status
