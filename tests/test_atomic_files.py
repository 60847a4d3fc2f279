"""Files written whole or not at all (``atomic_files``), with the mode the umask gives any file the
user writes, the umask read once per process and never changed where /proc tells it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_vibeeval import atomic_files

# Writes two files under umask 027 with os.umask refused: the process's umask, read without it.
UNCHANGED_UMASK = """
import os, sys
from pathlib import Path

os.umask(0o027)


def refused(mask):
    raise AssertionError(f"os.umask({mask:o}) called: the umask changed for every thread meanwhile")


os.umask = refused
from pytest_vibeeval.atomic_files import write_atomic

for name in ("a.json", "b.json"):
    write_atomic(Path(sys.argv[1]) / name, "{}")
"""


def file_modes(folder: Path) -> set[int]:
    return {path.stat().st_mode & 0o777 for path in folder.iterdir()}


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="no /proc/self/status to read it from")
def test_the_files_get_the_umasks_mode_and_the_umask_is_never_changed(tmp_path: Path) -> None:
    """Every file written (each cached or recorded answer too) got its mode from setting the umask
    and setting it back, process-wide state another thread could see changed; it is read instead."""
    done = subprocess.run(
        [sys.executable, "-c", UNCHANGED_UMASK, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert file_modes(tmp_path) == {0o640}


@pytest.fixture
def umask_027() -> Iterator[None]:
    """The process's umask 027 (a file written is 0640, not the usual 0644), read afresh."""
    old = os.umask(0o027)
    atomic_files._umask.cache_clear()
    yield
    os.umask(old)
    atomic_files._umask.cache_clear()


@pytest.mark.usefixtures("umask_027")
def test_without_proc_the_umask_is_set_and_set_back_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there is no /proc the umask is set and set back, but once, not for every file."""
    calls = []
    umask = os.umask

    def counted(mask: int) -> int:
        calls.append(mask)
        return umask(mask)

    monkeypatch.setattr(atomic_files, "_PROC_STATUS", tmp_path / "no-proc" / "status")
    monkeypatch.setattr(os, "umask", counted)
    folder = tmp_path / "out"
    for name in ("a.json", "b.json", "c.json"):
        atomic_files.write_atomic(folder / name, "{}")
    assert len(calls) == 2
    assert file_modes(folder) == {0o640}
