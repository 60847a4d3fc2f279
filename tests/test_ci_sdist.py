"""``.ci/sdist.py``, CI's ``sdist`` step: the sdist carries every file git tracks (``.gitignore``
aside), whatever the files' names hold."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "sdist.py"
# a space, non-ASCII (which tar -t escapes under LC_ALL=C), a backslash and a quote (which
# git ls-files quotes), beside plain names
FILES = ["README.md", "tests/a b.txt", "docs/café.md", "examples/back\\slash.txt", 'examples/"q".txt']


def checkout(root: Path) -> None:
    """A git checkout tracking FILES and a .gitignore."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name in [*FILES, ".gitignore"]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n", encoding="utf-8")
    subprocess.run(["git", "add", "--", "."], cwd=root, check=True)


def build_sdist(dist: Path, names: list[str]) -> None:
    dist.mkdir(parents=True)
    with tarfile.open(dist / "pkg-1.0.tar.gz", "w:gz") as archive:
        for name in ["pkg-1.0/PKG-INFO", *(f"pkg-1.0/{name}" for name in names)]:
            archive.addfile(tarfile.TarInfo(name), io.BytesIO(b""))


def sdist_step(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LC_ALL": "C"}  # the locale under which tar -t escaped non-ASCII names
    return subprocess.run(
        [sys.executable, str(SCRIPT), ".ci-wheel/dist"], cwd=root, capture_output=True, text=True, env=env
    )


def test_an_sdist_with_every_tracked_file_passes_whatever_their_names(tmp_path: Path) -> None:
    checkout(tmp_path)
    build_sdist(tmp_path / ".ci-wheel" / "dist", FILES)
    done = sdist_step(tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"carries all {len(FILES)} files git tracks" in done.stderr


@pytest.mark.parametrize("left_out", FILES)
def test_a_tracked_file_missing_from_the_sdist_is_named(tmp_path: Path, left_out: str) -> None:
    checkout(tmp_path)
    build_sdist(tmp_path / ".ci-wheel" / "dist", [name for name in FILES if name != left_out])
    done = sdist_step(tmp_path)
    assert done.returncode == 1
    assert f"(add them to MANIFEST.in): {left_out!r}\n" in done.stderr, done.stderr


def test_no_sdist_fails_saying_the_wheel_step_built_none(tmp_path: Path) -> None:
    checkout(tmp_path)
    (tmp_path / ".ci-wheel" / "dist").mkdir(parents=True)
    done = sdist_step(tmp_path)
    assert done.returncode == 1
    assert "the wheel step did not build one" in done.stderr
