"""Workspace preparation: copying an F-file template (nested folders, small files, a few of 100 KB,
symlinks) into a fresh item directory with copy_tree, against a plain ``cp -a`` of the same tree."""

from __future__ import annotations

import os
import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pytest_vibeeval.workspace import copying

from .common import Row, median_of
from .targets import WORKSPACE_RATIO, ratio_verdict

WALK_REPEAT = 3


def _template(root: Path, files: int) -> Path:
    """A workspace template of ``files`` regular files, 25 a folder three levels deep, mostly up to
    4 KB with one of 100 KB in every thousand, and two symlinks (to a file and to a folder)."""
    rng = random.Random(0)
    template = root / "template"
    line = b"def f(x):\n    return x + 1  # some code\n"
    for i in range(files):
        leaf = i // 25
        folder = template / f"pkg{leaf // 40}" / f"mod{leaf // 8 % 5}" / f"sub{leaf % 8}"
        if i % 25 == 0:
            folder.mkdir(parents=True)
        size = 100_000 if i % 1000 == 999 else rng.randrange(4096)
        (folder / f"file{i}.py").write_bytes((line * (size // len(line) + 1))[:size])
    (template / "link-to-file").symlink_to("pkg0/mod0/sub0/file0.py")
    (template / "pkg0" / "link-to-folder").symlink_to("mod0")
    return template


def _entries(root: Path) -> int:
    return sum(len(dirs) + len(names) for _, dirs, names in os.walk(root))


def _timings(work: Path, template: Path, repeat: int) -> dict[str, list[float]]:
    """Seconds of each way of copying: interleaved, each in turn first. The copies are kept, as an
    item's are during a run (deleting them makes some VMs hand the memory back to the host and the
    next copy slower); the last copy's writeback is flushed first so it is not charged to this one."""
    calls: dict[str, Callable[[Path], object]] = {
        "ours": lambda dst: copying.copy_tree(template, dst),
        "cp": lambda dst: subprocess.run(["cp", "-a", f"{template}/.", str(dst)], check=True),
        "walk": lambda dst: copying.copy_tree(template, dst, ignore=["no-such-name"]),
    }
    expected = _entries(template)
    for i in range(2):  # untimed: the first copies after writing the template are slow
        calls["cp"](work / f"warm-up-{i}")
    timings: dict[str, list[float]] = {name: [] for name in calls}
    for r in range(repeat):
        names = ["ours", "cp"] if r % 2 == 0 else ["cp", "ours"]
        for name in names + ["walk"] * (r < WALK_REPEAT):
            dst = work / f"{name}-{r}"
            os.sync()
            started = time.perf_counter()
            calls[name](dst)
            timings[name].append(time.perf_counter() - started)
            if r == 0 and _entries(dst) != expected:
                raise SystemExit(f"{name}: the copy of the template is incomplete")
    return timings


def workspace(root: Path, files: int, repeat: int) -> list[Row]:
    """Median-of-``repeat`` copy_tree vs. ``cp -a``; copy_tree's Python walk (an ignore pattern
    that matches nothing) is timed too, median of 3, without a target."""
    work = root / "workspace"
    work.mkdir()
    timings = _timings(work, _template(work, files), repeat)
    ours, plain, walk = (median_of(timings[name]) for name in ("ours", "cp", "walk"))
    how = "cp -a" if copying._gnu_cp() else "Python walk"
    return [
        Row(
            "workspace preparation",
            f"{files}-file template, copy_tree ({how})",
            f"{ours * 1000:.0f} ms",
            f"{plain * 1000:.0f} ms",
            ours / plain,
            *ratio_verdict(ours / plain, WORKSPACE_RATIO),
        ),
        Row(
            "workspace preparation",
            f"{files}-file template, Python walk (an ignore pattern set)",
            f"{walk * 1000:.0f} ms",
            f"{plain * 1000:.0f} ms",
            walk / plain,
        ),
    ]
