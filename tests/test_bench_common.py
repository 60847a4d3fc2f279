"""The benchmark's pytest runs (bench/common.py): what one timed run does besides the work it
times."""

from __future__ import annotations

from pathlib import Path

from bench.common import clean_env, run_pytest

TMP_PATH_TEST = "def test_folder(tmp_path):\n    (tmp_path / 'agent.stdout').write_text('42')\n"


def test_no_timed_run_deletes_an_earlier_runs_folders(tmp_path: Path) -> None:
    """pytest keeps the last 3 sessions' folders of a temporary root and deletes older ones as the
    session exits, inside the run's wall time: a benchmark repeating a side 5 times in one root had
    its 4th and 5th runs delete the 1st and 2nd runs' item folders (a `cli:` side's agent folders
    and output files, a plain side's none). Every run gets a root of its own."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_folder.py").write_text(TMP_PATH_TEST)
    temproot = tmp_path / "tmp"
    for _ in range(4):
        run_pytest(["-p", "no:vibeeval"], project, clean_env(temproot))
    made = sorted(temproot.rglob("agent.stdout"))
    assert len(made) == 4, made
