"""Benchmarks of pytest-vibeeval against floors measured in the same run; prints a table of ratios.

    python -m bench.run [--only NAME ...] [--repeat 3] [--sizes 100,500,2000] ...

Benchmarks (``--only`` picks some; all run by default):

- ``overhead``: N prompt evals through a ``cli:`` configuration whose agent prints a fixed answer
  (full pytest run: collection, N subprocesses, checks, aggregation, results file) against a plain
  pytest file running the same subprocesses, serial and ``-n 2``; target ratio ≤ 1.2 at N = 100,
  500, 2 000, and ms per eval not growing with N.
- ``python``: the same N in-process ``python:`` evals against a plain parametrized function calling
  the same function, serial and ``-n 2``; target ratio ≤ 1.2 (the marginal ms per eval in a note).
- ``collection``: ``--collect-only`` of 1 000 and 10 000 items against a parametrized function of
  as many cases; target ≤ 2× at 10 000 (pytest's "collected in"); the peak RSS of collecting; 300
  suites of 5 evals against 300 test modules (what a file costs; no target).
- ``memory``: the controller's peak RSS running 10 000 items under ``-n 2`` against the plain
  project under ``-n 2``; target ≤ plain + 30 MB.
- ``workspace``: copying a 5 000-file template with copy_tree against ``cp -a``; target ≤ 1.2.
- ``output``: an agent printing 200 MB; peak RSS of the controller and the workers against an idle
  run whose agent prints one line; target: within a few MB (≤ idle + 5 MB), and a worker reading the
  answer (``max_output_bytes`` raised) ≤ idle + 2× the excerpt it keeps.
- ``formula``: a score formula evaluated for 1 000 runs against simpleeval and Python's ``eval``.
- ``peers``: the same N evals through promptfoo (``exec:`` provider, the same agent script) and
  inspect_ai (mockllm answering with the same function as a ``python:`` configuration), pinned
  versions installed once into ``--cache`` (bench/peer_install.py); goal ours ≤ 0.33× promptfoo
  and ≤ 0.2× inspect_ai.

Timings are the median of interleaved runs: ``--repeat`` of them, ``2 × repeat - 1`` below 500
evals. Targets are issue #21's (bench/targets.py), each against a floor measured in the same run;
the "verdict" column says whether a row meets its target. None of it is part of the test suite.
The package's bytecode is written once before anything is timed. Every project, pytest temporary
root and ``TMPDIR`` of the runs is in one temporary folder under ``--tmp`` (default: the system's
temporary folder), removed in the background at the end. The header names that folder's file
system; a disk probe (bench/disk.py: creating and removing 500 empty files) at the start, before
the benchmarks that create files per eval or per copy (overhead, workspace, peers) and at the end
is printed with the results, so that a disk slowed by an earlier deletion shows.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .collection import collection, memory
from .common import Row, compile_package
from .disk import Probe, describe, probe
from .formulas import formulas
from .output import big_output
from .overhead import AGENTS, cli_overhead, python_overhead
from .peer_install import default_cache
from .peers import peers
from .targets import met_cell
from .workspace import workspace

BENCHMARKS = ("overhead", "python", "collection", "memory", "workspace", "output", "formula", "peers")
PROBED_BEFORE = ("overhead", "workspace", "peers")  # the benchmarks whose rows follow the disk
COLUMNS = ("benchmark", "case", "pytest-vibeeval", "floor", "ratio", "target", "verdict", "notes")


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _folder(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is not a folder: name an existing one")
    return path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--only", action="append", choices=BENCHMARKS, help="run only this benchmark (repeatable)")
    add("--repeat", type=int, default=3, help="interleaved repeats of each timing; the median counts")
    add("--sizes", type=_ints, default=[100, 500, 2000], help="overhead, peers: numbers of evals")
    add("--workers", type=_ints, default=[0, 2], help="overhead, python, peers: xdist workers (0: serial)")
    add("--agent", choices=sorted(AGENTS), default="sh", help="overhead: the fixed-answer agent")
    add("--python-sizes", type=_ints, default=[100, 500, 2000], help="python: numbers of evals")
    add("--collect", type=_ints, default=[1000, 10_000], help="collection: numbers of items")
    add("--memory-items", type=int, default=10_000, help="memory: number of items")
    add("--files", type=int, default=5000, help="workspace: files in the template")
    add("--copy-repeat", type=int, default=5, help="workspace: interleaved repeats of the copies")
    add("--cache", type=Path, default=default_cache(), help="peers: install folder, reused across runs")
    add(
        "--tmp",
        type=_folder,
        default=None,
        help="folder of every project and pytest temporary root of the run (default: the system's "
        "temporary folder), e.g. /dev/shm for a tmpfs",
    )
    return parser


def _table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        ratio = "—" if r.ratio is None else f"{r.ratio:.2f}"
        cells = (r.bench, r.case, r.ours, r.floor, ratio, r.target, met_cell(r.met), r.note)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.platform()}, {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _remove(root: Path) -> None:
    """Remove the temporary tree in the background at the lowest I/O priority: its tens of
    thousands of small files take minutes to delete on some disks, and nothing is timed any more."""
    command = ["rm", "-rf", str(root)]
    if shutil.which("ionice"):
        command = ["ionice", "-c", "3", *command]
    try:
        proc = subprocess.Popen(command, start_new_session=True)
    except OSError:
        shutil.rmtree(root, ignore_errors=True)
        return
    print(f"\n(removing {root} in the background, pid {proc.pid})")


def _plan(args: argparse.Namespace, root: Path) -> dict[str, Callable[[], list[Row]]]:
    return {
        "overhead": lambda: cli_overhead(root, args.sizes, args.workers, args.repeat, args.agent),
        "python": lambda: python_overhead(root, args.python_sizes, args.workers, args.repeat),
        "collection": lambda: collection(root, args.collect, args.repeat),
        "memory": lambda: memory(root, args.memory_items, 2),
        "workspace": lambda: workspace(root, args.files, args.copy_repeat),
        "output": lambda: big_output(root, 2),
        "formula": lambda: formulas(max(args.repeat, 5)),
        "peers": lambda: peers(root, args.cache, args.sizes, args.workers, args.repeat),
    }


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    only = set(args.only or BENCHMARKS)
    print(f"machine: {_machine()}")
    print(
        f"timings: medians of interleaved runs (--repeat {args.repeat}; {2 * args.repeat - 1} below 500"
        " evals); peak RSS: one run each\n",
        flush=True,
    )
    compile_package()
    rows: list[Row] = []
    probes: list[Probe] = []
    tmp = args.tmp if args.tmp is not None else Path(tempfile.gettempdir())
    root = Path(tempfile.mkdtemp(prefix="vibeeval-bench-", dir=tmp))
    os.environ["TMPDIR"] = str(tmp)  # the runs' own temporary files (the plugin's lock folders)
    print(f"temporary folder: {root} on {describe(root)}", flush=True)
    probes.append(_probe(root, "start"))
    try:
        plan = _plan(args, root)
        for name in BENCHMARKS:
            if name not in only:
                continue
            if name in PROBED_BEFORE:
                probes.append(_probe(root, f"before {name}"))
            started = time.perf_counter()
            new = plan[name]()
            rows += new
            took = f"  ({name}: {time.perf_counter() - started:.0f} s)"
            print(_table(new).split("\n", 2)[2], took, flush=True)
        probes.append(_probe(root, "end"))
    finally:
        _remove(root)
    print("\n" + _table(rows))
    print("\n" + "\n".join(p.line() for p in probes))
    print("\n" + summary(rows))


def _probe(root: Path, when: str) -> Probe:
    found = probe(root, when)
    print(found.line(), flush=True)
    return found


def summary(rows: Sequence[Row]) -> str:
    """How many rows meet and miss their targets, and which miss."""
    missed = [r for r in rows if r.met is False]
    line = f"targets: {sum(r.met is True for r in rows)} met, {len(missed)} missed"
    return "\n".join([line, *(f"  misses: {r.bench}, {r.case} ({r.target})" for r in missed)])


if __name__ == "__main__":
    main()
