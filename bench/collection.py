"""Collection time of large suites, and the controller's peak memory with 10 000 items, against a
plain parametrized test function with as many cases."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from .common import (
    RSS_ENV,
    Row,
    best,
    clean_env,
    collected_in,
    interleaved,
    mb,
    peak_rss,
    project,
    run_pytest,
    suite_text,
    workers_peak,
)
from .overhead import APP

PER_SUITE = 500  # evals per suite file; two configurations each
PLAIN = """\
from fnmatch import fnmatchcase

import pytest
from bench_app import answer


@pytest.mark.parametrize("i", range({items}))
def test_eval(i):
    assert fnmatchcase(answer(f"Question {{i}}?"), "*42*")
"""


def _projects(root: Path, items: int) -> tuple[Path, Path]:
    """Suites of ``PER_SUITE`` evals × 2 in-process configurations totalling ``items`` items, and
    the plain equivalent (both runnable: the memory benchmark runs them)."""
    configurations = {f"c{c}": '{python: "bench_app:answer"}' for c in range(2)}
    suite = suite_text(PER_SUITE, configurations)
    suites = {f"s{s}.eval.yaml": suite for s in range(items // (PER_SUITE * 2))}
    ours = project(root / f"ours-{items}", {"bench_app.py": APP, **suites})
    plain_test = PLAIN.format(items=items)
    plain = project(root / f"plain-{items}", {"bench_app.py": APP, "test_plain.py": plain_test})
    return ours, plain


def collection(root: Path, sizes: Sequence[int], repeat: int) -> list[Row]:
    """``pytest --collect-only`` at each size: pytest's own "collected in" figure, best of
    ``repeat`` interleaved runs, and how the time per item changes with the size."""
    work = root / "collection"
    work.mkdir()
    env = clean_env(work / "tmp")
    rows: list[Row] = []
    per_item: list[float] = []
    plain_per_item: list[float] = []
    for items in sizes:
        ours_dir, plain_dir = _projects(work, items)
        plain_args = ["--collect-only", "-p", "no:vibeeval"]
        runs = interleaved(
            {
                "plain": functools.partial(run_pytest, plain_args, plain_dir, env),
                "ours": functools.partial(run_pytest, ["--collect-only"], ours_dir, env),
            },
            repeat,
        )
        ours = min(collected_in(r.output) for r in runs["ours"])
        plain = min(collected_in(r.output) for r in runs["plain"])
        per_item.append(ours / items * 1e6)
        plain_per_item.append(plain / items * 1e6)
        rows.append(
            Row(
                "collection",
                f"{items} items, --collect-only",
                f"{ours:.2f} s",
                f"{plain:.2f} s",
                ours / plain,
                note=f"{per_item[-1]:.0f} µs/item; wall with start-up {best(runs['ours']).wall:.2f} s vs "
                f"{best(runs['plain']).wall:.2f} s",
            )
        )
    if len(sizes) > 1:
        growth = per_item[-1] / min(per_item[:-1])
        rows.append(
            Row(
                "collection",
                f"µs/item at {sizes[-1]} items / best smaller size",
                " / ".join(f"{u:.0f}" for u in per_item) + " µs",
                " / ".join(f"{u:.0f}" for u in plain_per_item) + " µs",
                growth,
                note="no target in the issue: shows whether collection stays linear",
            )
        )
    return rows


def memory(root: Path, items: int, workers: int) -> list[Row]:
    """Peak RSS of the pytest process collecting ``items`` items, and of the controller (and the
    workers) running them in-process under ``-n workers``, against the plain equivalent."""
    work = root / "memory"
    work.mkdir()
    ours_dir, plain_dir = _projects(work, items)
    rows = []
    for case, args in (("--collect-only", ["--collect-only"]), (f"run, -n {workers}", ["-n", str(workers)])):
        peaks = {}
        for side, folder, extra in (("ours", ours_dir, []), ("plain", plain_dir, ["-p", "no:vibeeval"])):
            rss_file = work / f"rss-{side}-{args[0]}.jsonl"
            env = clean_env(work / f"tmp-{side}", {RSS_ENV: str(rss_file)})
            run_pytest([*args, *extra], folder, env)
            peaks[side] = peak_rss(rss_file)
        ours, plain = peaks["ours"]["controller"], peaks["plain"]["controller"]
        note = f"+{ours - plain:.1f} MB"
        if workers_peak(peaks["ours"]):
            note += f"; workers' peak {mb(workers_peak(peaks['ours']))} vs {mb(workers_peak(peaks['plain']))}"
        case = f"{items} items, {case}: controller peak RSS"
        rows.append(Row("memory", case, mb(ours), mb(plain), ours / plain, note=note))
    return rows
