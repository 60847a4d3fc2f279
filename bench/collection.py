"""Collection time of large suites, of one dataset eval of 10 000 rows and of many small suites,
and the peak memory of collecting them and of the controller running them under xdist, against a
plain parametrized test function with as many cases (as many test modules for the small suites)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from pytest_vibeeval.filenames import PARSED_SUITES_FOLDER

from .common import (
    RSS_ENV,
    Row,
    Run,
    clean_env,
    collected_in,
    interleaved,
    mb,
    median,
    median_of,
    outcome_count,
    peak_rss,
    project,
    run_pytest,
    suite_text,
    workers_peak,
)
from .overhead import APP
from .targets import (
    COLLECTION_ITEMS,
    COLLECTION_RATIO,
    CONTROLLER_EXTRA_MB,
    MEMORY_ITEMS,
    MEMORY_WORKERS,
    NO_TARGET,
    extra_verdict,
    ratio_verdict,
)

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
    the plain equivalent: made once under ``root``, shared by the collection and memory benchmarks
    (the memory benchmark runs them)."""
    work = root / "items-projects"
    ours, plain = work / f"ours-{items}", work / f"plain-{items}"
    if ours.exists() and plain.exists():
        return ours, plain
    work.mkdir(exist_ok=True)
    configurations = {f"c{c}": '{python: "bench_app:answer"}' for c in range(2)}
    suite = suite_text(PER_SUITE, configurations)
    suites = {f"s{s}.eval.yaml": suite for s in range(items // (PER_SUITE * 2))}
    project(ours, {"bench_app.py": APP, **suites})
    project(plain, {"bench_app.py": APP, "test_plain.py": PLAIN.format(items=items)})
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


def _collect_both(
    ours_dir: Path, plain_dir: Path, env: dict[str, str], repeat: int, warm: bool = False
) -> tuple[float, float, dict[str, list[Run]]]:
    """``pytest --collect-only`` in both projects, ``repeat`` interleaved runs each (after one run
    of each side that is not counted, if ``warm``: it keeps the bytecode and the suites' parses):
    the medians of pytest's "collected in" of ours and the plain side's, and the runs."""
    calls = {
        "plain": functools.partial(run_pytest, ["--collect-only", "-p", "no:vibeeval"], plain_dir, env),
        "ours": functools.partial(run_pytest, ["--collect-only"], ours_dir, env),
    }
    if warm:
        for call in calls.values():
            call()
    runs = interleaved(calls, repeat)
    ours = median_of([collected_in(r.output) for r in runs["ours"]])
    plain = median_of([collected_in(r.output) for r in runs["plain"]])
    return ours, plain, runs


def dataset_collection(root: Path, rows: int, repeat: int) -> Row:
    """``pytest --collect-only`` of one dataset eval of ``rows`` rows (one item per row) against a
    parametrized function of as many cases: median of ``repeat`` interleaved runs."""
    ours_dir, plain_dir = _dataset_projects(root, rows)
    ours, plain, runs = _collect_both(ours_dir, plain_dir, clean_env(root / "tmp-dataset"), repeat)
    return Row(
        "collection",
        f"dataset of {rows} rows (CSV, 1 eval × 1 configuration), --collect-only",
        f"{ours:.2f} s",
        f"{plain:.2f} s",
        ours / plain,
        note=f"{ours / rows * 1e6:.0f} µs/row; wall with start-up {median(runs['ours']).wall:.2f} s vs "
        f"{median(runs['plain']).wall:.2f} s",
    )


SMALL_FILES, PER_SMALL_FILE = 300, 5  # a project of many small suites (as vibecheck's are laid out)


def _small_files_projects(root: Path) -> tuple[Path, Path]:
    """:data:`SMALL_FILES` suites of :data:`PER_SMALL_FILE` evals and one configuration each, and as
    many test modules of a function parametrized as many times: what a file costs, which the large
    suites above hide."""
    suite = suite_text(PER_SMALL_FILE, {"c0": '{python: "bench_app:answer"}'})
    suites = {f"s{s}.eval.yaml": suite for s in range(SMALL_FILES)}
    ours = project(root / "ours-small-files", {"bench_app.py": APP, **suites})
    module = PLAIN.format(items=PER_SMALL_FILE)
    plain = project(
        root / "plain-small-files",
        {"bench_app.py": APP, **{f"test_s{s}.py": module for s in range(SMALL_FILES)}},
    )
    return ours, plain


def small_files_collection(root: Path, repeat: int) -> Row:
    """``pytest --collect-only`` of many small suites against as many small test modules: median of
    ``repeat`` interleaved runs after one run of each side (which keeps the parses and bytecode)."""
    ours_dir, plain_dir = _small_files_projects(root)
    env = clean_env(root / "tmp-small-files")
    ours, plain, runs = _collect_both(ours_dir, plain_dir, env, repeat, warm=True)
    items = SMALL_FILES * PER_SMALL_FILE
    return Row(
        "collection",
        f"{SMALL_FILES} suites of {PER_SMALL_FILE} evals ({items} items), --collect-only",
        f"{ours:.2f} s",
        f"{plain:.2f} s",
        ours / plain,
        note=f"{ours / SMALL_FILES * 1e3:.2f} ms/file; no target in the issue; wall with start-up "
        f"{median(runs['ours']).wall:.2f} s vs {median(runs['plain']).wall:.2f} s",
    )


def collection_row(items: int, ours: float, plain: float, ours_wall: float, plain_wall: float) -> Row:
    """pytest's "collected in" of both sides at one size, with the issue's target at 10 000 items."""
    ratio = ours / plain
    return Row(
        "collection",
        f"{items} items, --collect-only",
        f"{ours:.2f} s",
        f"{plain:.2f} s",
        ratio,
        *ratio_verdict(ratio, COLLECTION_RATIO, items, (COLLECTION_ITEMS,)),
        f"{ours / items * 1e6:.0f} µs/item; wall with start-up {ours_wall:.2f} s vs {plain_wall:.2f} s "
        f"({ours_wall / plain_wall:.2f}×)",
    )


def _first_read(project: Path, env: dict[str, str]) -> Run:
    """``pytest --collect-only`` in ``project`` with no kept parse of its suites (removed first)."""
    for kept in (project / ".pytest_cache" / "d" / PARSED_SUITES_FOLDER).glob("*"):
        kept.unlink()
    return run_pytest(["--collect-only"], project, env)


def first_read_row(items: int, ours: float, plain: float) -> Row:
    """Collection when every suite is parsed: the first session after an edit or ``--cache-clear``
    (no target: the issue's is for everyday runs, which take the parses an earlier run kept, as the
    plain side takes its test module's bytecode)."""
    return Row(
        "collection",
        f"{items} items, --collect-only, first read (no kept parse)",
        f"{ours:.2f} s",
        f"{plain:.2f} s",
        ours / plain,
        note=f"{ours / items * 1e6:.0f} µs/item; each run removes the suites' kept parses first",
    )


def collection(root: Path, sizes: Sequence[int], repeat: int) -> list[Row]:
    """``pytest --collect-only`` at each size: pytest's own "collected in" figure, median of
    ``repeat`` interleaved runs, and how the time per item changes with the size. The runs at the
    largest size report their peak RSS too (the memory row of collecting)."""
    work = root / "collection"
    work.mkdir()
    rows: list[Row] = []
    per_item: list[float] = []
    plain_per_item: list[float] = []
    for items in sizes:
        ours_dir, plain_dir = _projects(root, items)
        envs = {
            side: clean_env(work / f"tmp-{side}", {RSS_ENV: str(work / f"rss-{side}-{items}.jsonl")})
            for side in ("ours", "plain")
        }
        calls = {
            "plain": functools.partial(
                run_pytest, ["--collect-only", "-p", "no:vibeeval"], plain_dir, envs["plain"]
            ),
            "ours": functools.partial(run_pytest, ["--collect-only"], ours_dir, envs["ours"]),
        }
        if items == sizes[-1]:
            calls["first read"] = functools.partial(_first_read, ours_dir, envs["ours"])
        runs = interleaved(calls, repeat)
        ours = median_of([collected_in(r.output) for r in runs["ours"]])
        plain = median_of([collected_in(r.output) for r in runs["plain"]])
        per_item.append(ours / items * 1e6)
        plain_per_item.append(plain / items * 1e6)
        rows.append(collection_row(items, ours, plain, median(runs["ours"]).wall, median(runs["plain"]).wall))
        if "first read" in runs:
            first = median_of([collected_in(r.output) for r in runs["first read"]])
            rows.append(first_read_row(items, first, plain))
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
    largest = sizes[-1]
    rows.append(dataset_collection(work, largest, repeat))
    rows.append(small_files_collection(work, repeat))
    ours_mb, plain_mb = (
        peak_rss(work / f"rss-{side}-{largest}.jsonl")["controller"] for side in ("ours", "plain")
    )
    rows.append(
        Row(
            "memory",
            f"{largest} items, --collect-only: peak RSS",
            mb(ours_mb),
            mb(plain_mb),
            ours_mb / plain_mb,
            note=f"{ours_mb - plain_mb:+.1f} MB; each side's highest over its collection runs above",
        )
    )
    return rows


def memory_row(items: int, workers: int, ours: dict[str, float], plain: dict[str, float]) -> Row:
    """Controller peak RSS of a run of ``items`` items under ``-n workers`` against the plain
    project's, with the issue's target (floor + 30 MB) at 10 000 items and ``-n 2``."""
    ours_mb, plain_mb = ours["controller"], plain["controller"]
    at_target = items == MEMORY_ITEMS and workers == MEMORY_WORKERS
    verdict = extra_verdict(ours_mb, plain_mb, CONTROLLER_EXTRA_MB) if at_target else NO_TARGET
    return Row(
        "memory",
        f"{items} items, run, -n {workers}: controller peak RSS",
        mb(ours_mb),
        mb(plain_mb),
        ours_mb / plain_mb,
        *verdict,
        f"{ours_mb - plain_mb:+.1f} MB; workers' peak {mb(workers_peak(ours))} vs {mb(workers_peak(plain))}",
    )


def memory(root: Path, items: int, workers: int) -> list[Row]:
    """Peak RSS of the controller (and the workers) running ``items`` in-process items under
    ``-n workers``, against the plain project of the same size under ``-n workers``: one run each."""
    work = root / "memory"
    work.mkdir()
    ours_dir, plain_dir = _projects(root, items)
    peaks = {}
    for side, folder, extra in (("ours", ours_dir, []), ("plain", plain_dir, ["-p", "no:vibeeval"])):
        rss_file = work / f"rss-{side}.jsonl"
        env = clean_env(work / f"tmp-{side}", {RSS_ENV: str(rss_file)})
        run = run_pytest(["-n", str(workers), *extra], folder, env)
        if outcome_count(run.output, "passed") != items:
            raise SystemExit(f"not every item passed:\n{run.output[-2000:]}")
        peaks[side] = peak_rss(rss_file)
    return [memory_row(items, workers, peaks["ours"], peaks["plain"])]
