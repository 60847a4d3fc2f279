"""Per-eval overhead: prompt evals through a ``cli:`` configuration against a plain pytest file
running the same subprocesses, serial and under xdist; in-process ``python:`` evals against a plain
parametrized function calling the same function."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .common import (
    Row,
    Run,
    best,
    clean_env,
    cli_config,
    executable,
    interleaved,
    outcome_count,
    project,
    run_pytest,
    seconds,
    suite_text,
)

# Agents that print a fixed answer: a shell script (a few ms a process, so our overhead shows
# most; the default) and a Python script (about 20 ms, closer to a real agent CLI's start-up).
AGENTS = {
    "sh": "#!/bin/sh\ncat > /dev/null\necho 'The answer is 42.'\n",
    "python": f"#!{sys.executable}\nimport sys\nsys.stdin.read()\nprint('The answer is 42.')\n",
}
RATIO_TARGET = 1.5
GROWTH_TOLERANCE = 1.1  # ms per eval at the largest N may be this much above the smaller Ns' best

PLAIN_CLI = """\
import subprocess

import pytest


@pytest.mark.parametrize("i", range({evals}))
def test_eval(i):
    out = subprocess.run([{agent!r}], input=f"Question {{i}}?", capture_output=True, text=True)
    assert "42" in out.stdout
"""
APP = "def answer(prompt):\n    return 'The answer is 42.'\n"
PLAIN_PYTHON = """\
from fnmatch import fnmatchcase

import pytest
from bench_app import answer


@pytest.mark.parametrize("i", range({evals}))
def test_eval(i):
    assert fnmatchcase(answer(f"Question {{i}}?"), "*42*")
"""


# Measured beside "ours" at one N, serial: the same run without the per-agent pids cgroup.
VARIANT_ARGS = ["-o", "vibe_max_processes=0"]


@dataclass(frozen=True)
class Point:
    """Best-of-``repeat`` runs of both sides at one N (and of the variant, where measured)."""

    evals: int
    repeat: int
    ours: Run
    plain: Run
    variant: Run | None = None


def repeats_for(evals: int, repeat: int) -> int:
    """Twice the repeats below 500 evals, where runs are short and noise weighs most; one fewer
    (at least 2) from 2 000 evals, where runs are long."""
    if evals < 500:
        return 2 * repeat
    return max(2, repeat - 1) if evals >= 2000 else repeat


def _sides(root: Path, evals: int, suite: str, plain: str, files: dict[str, str]) -> tuple[Path, Path]:
    ours_dir = project(root / f"ours-{evals}", {"bench.eval.yaml": suite, **files})
    plain_dir = project(root / f"plain-{evals}", {"test_plain.py": plain, **files})
    return ours_dir, plain_dir


def _measure(
    root: Path, dirs: tuple[Path, Path], evals: int, xdist: list[str], repeat: int, variant: bool = False
) -> Point:
    """Interleaved best-of-``repeat`` runs of both sides (and of the variant); every eval must pass.
    Each side has its own pytest temporary root, so pytest's retention never deletes during a run."""
    ours_dir, plain_dir = dirs
    tag = "-".join([str(evals), *xdist])
    roots = {side: root / f"tmp-{side}-{tag}" for side in ("ours", "plain", "variant")}
    results = ["--vibe-results", str(root / f"results-{tag}.json")]
    calls = {
        "plain": lambda: run_pytest([*xdist, "-p", "no:vibeeval"], plain_dir, clean_env(roots["plain"])),
        "ours": lambda: run_pytest([*xdist, *results], ours_dir, clean_env(roots["ours"])),
    }
    if variant:
        calls["variant"] = lambda: run_pytest(
            [*xdist, *results, *VARIANT_ARGS], ours_dir, clean_env(roots["variant"])
        )
    runs = interleaved(calls, repeat)
    for run in (run for side in runs.values() for run in side):
        if outcome_count(run.output, "passed") != evals:
            raise SystemExit(f"not every eval passed:\n{run.output[-2000:]}")
    variant_run = best(runs["variant"]) if variant else None
    return Point(evals, repeat, best(runs["ours"]), best(runs["plain"]), variant_run)


def _ms(run: Run, evals: int) -> float:
    return run.wall / evals * 1000


def _marginal(points: Sequence[Point], side: str) -> list[float]:
    """ms per additional eval between consecutive Ns: the per-eval cost without start-up."""
    out = []
    for a, b in itertools.pairwise(points):
        ta, tb = getattr(a, side).wall, getattr(b, side).wall
        out.append((tb - ta) / (b.evals - a.evals) * 1000)
    return out


def _cli_rows(points: Sequence[Point], mode: str, kind: str) -> list[Row]:
    rows = []
    for p in points:
        ratio = p.ours.wall / p.plain.wall
        rows.append(
            Row(
                "prompt-eval overhead",
                f"{kind} agent, N={p.evals}, {mode}",
                f"{seconds(p.ours.wall)} ({_ms(p.ours, p.evals):.2f} ms/eval)",
                f"{seconds(p.plain.wall)} ({_ms(p.plain, p.evals):.2f} ms/eval)",
                ratio,
                f"≤ {RATIO_TARGET:.2f}",
                ratio <= RATIO_TARGET,
                f"best of {p.repeat}; CPU {p.ours.cpu:.1f} s vs {p.plain.cpu:.1f} s",
            )
        )
        if p.variant is not None:
            saved = (p.ours.wall - p.variant.wall) / p.evals * 1000
            rows.append(
                Row(
                    "prompt-eval overhead",
                    f"{kind} agent, N={p.evals}, {mode}, with {' '.join(VARIANT_ARGS)} (no pids cgroup)",
                    f"{seconds(p.variant.wall)} ({_ms(p.variant, p.evals):.2f} ms/eval)",
                    f"{seconds(p.plain.wall)} ({_ms(p.plain, p.evals):.2f} ms/eval)",
                    p.variant.wall / p.plain.wall,
                    note=f"best of {p.repeat}; the cgroup costs {saved:.2f} ms/eval",
                )
            )
    if len(points) > 1:
        largest, smaller = points[-1], points[:-1]
        low = min(_ms(p.ours, p.evals) for p in smaller)
        growth = _ms(largest.ours, largest.evals) / low
        marginal = ", ".join(
            f"{a:.2f} vs {b:.2f}"
            for a, b in zip(_marginal(points, "ours"), _marginal(points, "plain"), strict=True)
        )
        rows.append(
            Row(
                "prompt-eval overhead",
                f"{kind} agent, {mode}: ms/eval at N={largest.evals} / best smaller N",
                " / ".join(f"{_ms(p.ours, p.evals):.2f}" for p in points) + " ms",
                " / ".join(f"{_ms(p.plain, p.evals):.2f}" for p in points) + " ms",
                growth,
                f"≤ {GROWTH_TOLERANCE:.2f} (no growth)",
                growth <= GROWTH_TOLERANCE,
                f"marginal ms/eval between Ns, ours vs plain: {marginal}",
            )
        )
    return rows


def cli_overhead(
    root: Path, sizes: Sequence[int], workers: Sequence[int], repeat: int, kind: str
) -> list[Row]:
    """Prompt evals through a ``cli:`` configuration vs. plain ``subprocess.run`` tests, at every N
    in ``sizes``, serial (0 workers) and with ``-n W`` for each W in ``workers``."""
    work = root / f"overhead-{kind}"
    work.mkdir()
    agent = executable(work / "agent", AGENTS[kind])
    projects = {
        n: _sides(
            work,
            n,
            suite_text(n, {"c0": cli_config(agent)}),
            PLAIN_CLI.format(evals=n, agent=str(agent)),
            {},
        )
        for n in sizes
    }
    ablate = sizes[len(sizes) // 2]  # the middle size, serial: the variant without the pids cgroup
    rows = []
    for w in workers:
        xdist = ["-n", str(w)] if w else []
        mode = f"-n {w}" if w else "serial"
        points = [
            _measure(work, projects[n], n, xdist, repeats_for(n, repeat), variant=not w and n == ablate)
            for n in sizes
        ]
        rows += _cli_rows(points, mode, kind)
    return rows


def python_overhead(root: Path, sizes: Sequence[int], repeat: int) -> list[Row]:
    """In-process ``python:`` evals vs. a plain parametrized function calling the same function:
    the marginal ms per eval between the two sizes (start-up cancels out), and the totals."""
    work = root / "python-evals"
    work.mkdir()
    points = []
    for n in sizes:
        suite = suite_text(n, {"c0": '{python: "bench_app:answer"}'})
        ours_dir, plain_dir = _sides(work, n, suite, PLAIN_PYTHON.format(evals=n), {"bench_app.py": APP})
        points.append(_measure(work, (ours_dir, plain_dir), n, [], repeats_for(n, repeat)))
    ours_ms, plain_ms = _marginal(points, "ours")[-1], _marginal(points, "plain")[-1]
    largest = points[-1]
    return [
        Row(
            "python: evals",
            f"marginal per eval, N={points[0].evals}→{largest.evals}, serial",
            f"{ours_ms:.3f} ms/eval",
            f"{plain_ms:.3f} ms/eval",
            ours_ms / plain_ms if plain_ms > 0 else None,
            note=f"overhead {ours_ms - plain_ms:.3f} ms/eval; totals at N={largest.evals}: "
            f"{seconds(largest.ours.wall)} vs {seconds(largest.plain.wall)}; "
            f"best of {points[0].repeat} and {largest.repeat}",
        )
    ]
