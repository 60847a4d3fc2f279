"""Runs that several tests read, made once per test session: by the first test that needs one,
under a file lock, then read by the others, on every xdist worker (a session-scoped fixture alone
would run once per worker).

The bundled examples are the costly case: their serial and ``-n 2`` runs are each made once and
checked by tests/test_examples.py and tests/test_html_report.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
from helpers import NO_HISTORY

REPO = Path(__file__).resolve().parents[1]
_DONE = "done"
# Readers wait for the worker that makes a run: their timeout covers the run's own.
SHARED_RUN_TIMEOUT = pytest.mark.timeout(900)


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this session sees: the session's base temp folder, or under
    xdist its parent (each worker's own is ``popen-gwN`` inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder ``name``, filled by ``make`` the first time any worker asks for it; later callers
    wait on the lock while it is being made. A ``make`` that raised leaves no folder behind: the
    next caller tries again (and sees the same failure)."""
    root = shared_root(tmp_path_factory)
    folder = root / name
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / _DONE).exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / _DONE).touch()
    return folder


@dataclass(frozen=True)
class PytestRun:
    """A finished ``python -m pytest`` subprocess: its exit code, output and results file."""

    folder: Path

    @cached_property
    def returncode(self) -> int:
        return int((self.folder / "returncode").read_text())

    @cached_property
    def stdout(self) -> str:
        return (self.folder / "stdout").read_text(encoding="utf-8")

    @cached_property
    def stderr(self) -> str:
        return (self.folder / "stderr").read_text(encoding="utf-8")

    @cached_property
    def results(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.folder / "results.json").read_text(encoding="utf-8"))
        return data

    @property
    def results_path(self) -> Path:
        return self.folder / "results.json"

    def assert_ok(self) -> None:
        assert self.returncode == 0, self.stdout[-4000:] + self.stderr[-2000:]

    def runs(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The results' runs by (suite, configuration)."""
        return {(run["suite"], run["configuration"]): run for run in self.results["runs"]}


def vibeeval_folder_state() -> list[tuple[str, int]]:
    """The files of the checkout's .vibeeval folder and their sizes."""
    return sorted((str(path), path.stat().st_size) for path in (REPO / ".vibeeval").rglob("*"))


@dataclass(frozen=True)
class ExamplesRun(PytestRun):
    """``pytest examples`` in the checkout, and the checkout's .vibeeval folder around it."""

    @cached_property
    def vibeeval_before_and_after(self) -> tuple[list[list[Any]], list[list[Any]]]:
        state = json.loads((self.folder / "vibeeval-state.json").read_text(encoding="utf-8"))
        return state["before"], state["after"]


def _run_examples(xdist: list[str]) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        before = vibeeval_folder_state()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "examples", "-p", "no:cacheprovider",
             "--basetemp", str(folder / "basetemp"), "--vibe-results", str(folder / "results.json"),
             NO_HISTORY, *xdist],
            cwd=REPO, capture_output=True, text=True, timeout=840,
        )  # fmt: skip
        after = vibeeval_folder_state()
        (folder / "stdout").write_text(proc.stdout, encoding="utf-8")
        (folder / "stderr").write_text(proc.stderr, encoding="utf-8")
        (folder / "returncode").write_text(str(proc.returncode))
        state = {"before": before, "after": after}
        (folder / "vibeeval-state.json").write_text(json.dumps(state), encoding="utf-8")

    return make


def examples_run(tmp_path_factory: pytest.TempPathFactory, xdist: list[str]) -> ExamplesRun:
    """``pytest examples`` (serially, or with ``xdist``'s arguments), run once per session; its
    step logs and temporary folders stay in the shared folder while the session lasts."""
    name = "examples-xdist" if xdist else "examples-serial"
    return ExamplesRun(once(tmp_path_factory, name, _run_examples(xdist)))
