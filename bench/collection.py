"""Collection time of large suites and of one dataset eval of 10 000 rows, and the controller's peak
memory with 10 000 items, against a plain parametrized test function with as many cases."""

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


DATASET_SUITE = """\
metadata: {name: bench, model: bench/model}
configurations:
  c0: {python: "bench_app:answer"}
evals:
  - name: e
    dataset: rows.csv
    prompt: "Question {{row.n}} about {{row.topic}}?"
    checks:
      - contains: "{{row.answer}}"
      - match: "*{{row.answer}}*"
"""


def _dataset_projects(root: Path, rows: int) -> tuple[Path, Path]:
    """One eval over a CSV dataset of ``rows`` rows (an id column, templates in the prompt and two
    checks), and the plain equivalent."""
    data = "id,n,topic,answer\n" + "".join(f"row-{i},{i},topic {i % 7},42\n" for i in range(rows))
    files = {"bench_app.py": APP, "rows.csv": data, "s.eval.yaml": DATASET_SUITE}
    ours = project(root / f"ours-dataset-{rows}", files)
    plain_test = PLAIN.format(items=rows)
    plain = project(root / f"plain-dataset-{rows}", {"bench_app.py": APP, "test_plain.py": plain_test})
    return ours, plain


def dataset_collection(root: Path, rows: int, repeat: int) -> Row:
    """``pytest --collect-only`` of one dataset eval of ``rows`` rows (one item per row) against a
    parametrized function of as many cases: best of ``repeat`` interleaved runs."""
    ours_dir, plain_dir = _dataset_projects(root, rows)
    env = clean_env(root / "tmp-dataset")
    runs = interleaved(
        {
            "plain": functools.partial(run_pytest, ["--collect-only", "-p", "no:vibeeval"], plain_dir, env),
            "ours": functools.partial(run_pytest, ["--collect-only"], ours_dir, env),
        },
        repeat,
    )
    ours = min(collected_in(r.output) for r in runs["ours"])
    plain = min(collected_in(r.output) for r in runs["plain"])
    return Row(
        "collection",
        f"dataset of {rows} rows (CSV, 1 eval × 1 configuration), --collect-only",
        f"{ours:.2f} s",
        f"{plain:.2f} s",
        ours / plain,
        note=f"{ours / rows * 1e6:.0f} µs/row; wall with start-up {best(runs['ours']).wall:.2f} s vs "
        f"{best(runs['plain']).wall:.2f} s",
    )


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
    rows.append(dataset_collection(work, max(sizes), repeat))
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
