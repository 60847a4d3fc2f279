"""Prompt-eval overhead: evals through a ``cli:`` configuration against a plain pytest file running
the same subprocesses, and in-process ``python:`` evals against a plain parametrized function
calling the same function; total wall time at each N, serial and under xdist."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .common import (
    Row,
    Run,
    clean_env,
    cli_config,
    executable,
    interleaved,
    median,
    outcome_count,
    project,
    run_pytest,
    seconds,
    suite_text,
)
from .targets import OVERHEAD_RATIO, OVERHEAD_SIZES, ratio_verdict

# Agents that print a fixed answer: a shell script (a few ms a process, so our overhead shows
# most; the default) and a Python script (about 20 ms, closer to a real agent CLI's start-up).
AGENTS = {
    "sh": "#!/bin/sh\ncat > /dev/null\necho 'The answer is 42.'\n",
    "python": f"#!{sys.executable}\nimport sys\nsys.stdin.read()\nprint('The answer is 42.')\n",
}
CLI_BENCH = "prompt-eval overhead"
PYTHON_BENCH = "python: evals"
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


@dataclass(frozen=True)
class Point:
    """Median-of-``repeat`` runs of both sides at one N."""

    evals: int
    repeat: int
    ours: Run
    plain: Run


def repeats_for(evals: int, repeat: int) -> int:
    """``repeat`` runs, and ``2 × repeat - 1`` below 500 evals, where runs are short and noise weighs
    most: an odd count whenever ``repeat`` is odd, so that the median is one run."""
    return 2 * repeat - 1 if evals < 500 else repeat


def _sides(root: Path, evals: int, suite: str, plain: str, files: dict[str, str]) -> tuple[Path, Path]:
    ours_dir = project(root / f"ours-{evals}", {"bench.eval.yaml": suite, **files})
    plain_dir = project(root / f"plain-{evals}", {"test_plain.py": plain, **files})
    return ours_dir, plain_dir


def _measure(root: Path, dirs: tuple[Path, Path], evals: int, xdist: list[str], repeat: int) -> Point:
    """Interleaved median-of-``repeat`` runs of both sides; every eval must pass. Every run has a
    pytest temporary root of its own (:func:`clean_env`), so pytest's retention never deletes
    during a run."""
    ours_dir, plain_dir = dirs
    tag = "-".join([str(evals), *xdist])
    roots = {side: root / f"tmp-{side}-{tag}" for side in ("ours", "plain")}
    results = ["--vibe-results", str(root / f"results-{tag}.json")]
    calls = {
        "plain": lambda: run_pytest([*xdist, "-p", "no:vibeeval"], plain_dir, clean_env(roots["plain"])),
        "ours": lambda: run_pytest([*xdist, *results], ours_dir, clean_env(roots["ours"])),
    }
    runs = interleaved(calls, repeat)
    for run in (run for side in runs.values() for run in side):
        if outcome_count(run.output, "passed") != evals:
            raise SystemExit(f"not every eval passed:\n{run.output[-2000:]}")
    return Point(evals, repeat, median(runs["ours"]), median(runs["plain"]))


def _ms(run: Run, evals: int) -> float:
    return run.wall / evals * 1000


def _marginal(points: Sequence[Point], side: str) -> list[float]:
    """ms per additional eval between consecutive Ns: the per-eval cost without start-up."""
    out = []
    for a, b in itertools.pairwise(points):
        ta, tb = getattr(a, side).wall, getattr(b, side).wall
        out.append((tb - ta) / (b.evals - a.evals) * 1000)
    return out


def _mode(workers: int) -> str:
    return f"-n {workers}" if workers else "serial"


def total_rows(bench: str, kind: str, points: Sequence[Point], mode: str) -> list[Row]:
    """One row per N: total wall time against the plain side, with the issue's ratio target."""
    rows = []
    for p in points:
        ratio = p.ours.wall / p.plain.wall
        rows.append(
            Row(
                bench,
                f"{kind}, N={p.evals}, {mode}",
                f"{seconds(p.ours.wall)} ({_ms(p.ours, p.evals):.2f} ms/eval)",
                f"{seconds(p.plain.wall)} ({_ms(p.plain, p.evals):.2f} ms/eval)",
                ratio,
                *ratio_verdict(ratio, OVERHEAD_RATIO, p.evals, OVERHEAD_SIZES),
                f"median of {p.repeat}; CPU {p.ours.cpu:.1f} s vs {p.plain.cpu:.1f} s",
            )
        )
    return rows


def growth_row(bench: str, kind: str, points: Sequence[Point], mode: str) -> Row:
    """ms per eval at the largest N over the best smaller N (start-up spread over more evals
    makes it fall; a per-eval cost that grows with N makes it rise), and the marginal costs."""
    largest, smaller = points[-1], points[:-1]
    growth = _ms(largest.ours, largest.evals) / min(_ms(p.ours, p.evals) for p in smaller)
    marginal = ", ".join(
        f"{a:.2f} vs {b:.2f}"
        for a, b in zip(_marginal(points, "ours"), _marginal(points, "plain"), strict=True)
    )
    return Row(
        bench,
        f"{kind}, {mode}: ms/eval at N={largest.evals} / best smaller N",
        " / ".join(f"{_ms(p.ours, p.evals):.2f}" for p in points) + " ms",
        " / ".join(f"{_ms(p.plain, p.evals):.2f}" for p in points) + " ms",
        growth,
        f"≤ {GROWTH_TOLERANCE:.2f} (no growth)",
        growth <= GROWTH_TOLERANCE,
        f"marginal ms/eval between Ns, ours vs plain: {marginal}",
    )


def _sweep(
    work: Path, projects: dict[int, tuple[Path, Path]], workers: Sequence[int], repeat: int
) -> list[tuple[str, list[Point]]]:
    """Every N of ``projects`` (in order), serial (0 workers) and with ``-n W`` for each W."""
    sweeps = []
    for w in workers:
        xdist = ["-n", str(w)] if w else []
        points = [_measure(work, dirs, n, xdist, repeats_for(n, repeat)) for n, dirs in projects.items()]
        sweeps.append((_mode(w), points))
    return sweeps


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
    rows = []
    for mode, points in _sweep(work, projects, workers, repeat):
        rows += total_rows(CLI_BENCH, f"{kind} agent", points, mode)
        if len(points) > 1:
            rows.append(growth_row(CLI_BENCH, f"{kind} agent", points, mode))
    return rows


def python_rows(points: Sequence[Point], mode: str) -> list[Row]:
    """The total-time rows of ``python:`` evals; the largest N's note adds the marginal ms per eval
    between the smallest and the largest N of both sides (start-up cancels out)."""
    rows = total_rows(PYTHON_BENCH, "python: callable", points, mode)
    if len(points) > 1:
        ends = [points[0], points[-1]]
        ours, plain = _marginal(ends, "ours")[0], _marginal(ends, "plain")[0]
        marginal = (
            f"; marginal N={ends[0].evals}→{ends[1].evals}: {ours:.3f} vs {plain:.3f} ms/eval"
            f" ({ours - plain:+.3f})"
        )
        rows[-1] = replace(rows[-1], note=rows[-1].note + marginal)
    return rows


def python_overhead(root: Path, sizes: Sequence[int], workers: Sequence[int], repeat: int) -> list[Row]:
    """In-process ``python:`` evals vs. a plain parametrized function calling the same function, at
    every N in ``sizes``, serial (0 workers) and with ``-n W`` for each W in ``workers``."""
    work = root / "python-evals"
    work.mkdir()
    projects = {
        n: _sides(
            work,
            n,
            suite_text(n, {"c0": '{python: "bench_app:answer"}'}),
            PLAIN_PYTHON.format(evals=n),
            {"bench_app.py": APP},
        )
        for n in sizes
    }
    return [
        row for mode, points in _sweep(work, projects, workers, repeat) for row in python_rows(points, mode)
    ]
