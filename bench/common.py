"""What the benchmarks share: pytest runs in fresh interpreters, interleaved repeats, peak memory,
suite files and the rows of the result table."""

from __future__ import annotations

import compileall
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest_vibeeval

# Plugins of the development environment (the test extra's) that neither side needs: hypothesis
# registers one, and pytest-rerunfailures and pytest-repeat add hooks every item would pay for.
# pytest's cache provider stays on, as in everyday use: both sides write their last-failed state
# to it, and pytest-vibeeval keeps the suites' parses there (the first run of a project parses).
PYTEST_BASE = ("-q", "-p", "no:hypothesispytest", "-p", "no:rerunfailures", "-p", "no:repeat")
# Variables of the calling environment that would change what pytest does; without
# PYTHONDONTWRITEBYTECODE each project's conftest and test file are compiled (and rewritten by
# pytest) once, not in every run, as in everyday use.
DROPPED_ENV = (
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTEST_XDIST_AUTO_NUM_WORKERS",
    "PYTEST_CURRENT_TEST",
    "PYTHONDONTWRITEBYTECODE",
)
RSS_ENV = "BENCH_RSS_FILE"

# A conftest.py for the benchmark's projects: at the very end of each pytest process (the
# controller and every xdist worker) it appends that process's peak resident set size (VmHWM,
# the high-water mark of its own address space, so an agent's memory is never counted) to the
# file named by $BENCH_RSS_FILE.
RSS_CONFTEST = f"""\
import json
import os
import resource

import pytest


def _peak_kb():
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    path = os.environ.get({RSS_ENV!r})
    if path:
        role = getattr(config, "workerinput", {{}}).get("workerid", "controller")
        with open(path, "a") as out:
            out.write(json.dumps({{"role": role, "kb": _peak_kb()}}) + "\\n")
"""


@dataclass(frozen=True)
class Run:
    """One pytest run: wall-clock seconds, CPU seconds (user + system) of its process tree as far
    as it was reaped, and its output."""

    wall: float
    cpu: float
    output: str


@dataclass(frozen=True)
class Row:
    """One line of the result table. ``met`` is None where the issue sets no target."""

    bench: str
    case: str
    ours: str
    floor: str
    ratio: float | None
    target: str = "—"
    met: bool | None = None
    note: str = ""


def clean_env(temproot: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of one benchmark pytest run: pytest's temporary folders in a new folder
    under ``temproot``, one for each call. pytest keeps a temporary root's last 3 sessions and
    deletes older ones as a session exits, inside its wall time: in a shared root every run after
    the third would time the deletion of an earlier run's item folders (hundreds of µs to ms per
    `cli:` eval on a disk that is slow to free inodes) and no plain run would. Deleting ``temproot``
    removes them all."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    temproot.mkdir(parents=True, exist_ok=True)
    run_root = tempfile.mkdtemp(prefix="run-", dir=temproot)
    env.update(PYTEST_DEBUG_TEMPROOT=run_root, **(extra or {}))
    return env


def compile_package() -> None:
    """Write the bytecode of pytest-vibeeval's modules once, before anything is timed, so that no
    timed run pays for compiling them (a checkout run with PYTHONDONTWRITEBYTECODE set has none)."""
    compileall.compile_dir(Path(pytest_vibeeval.__file__).parent, quiet=1)


def run_command(command: Sequence[str], cwd: Path, env: Mapping[str, str], ok: Sequence[int] = (0,)) -> Run:
    """Run ``command``, timed; exit with its output's tail if its code is not in ``ok``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(list(command), cwd=cwd, env=dict(env), capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        tail = proc.stdout[-3000:] + proc.stderr[-3000:]
        raise SystemExit(f"{' '.join(command)} in {cwd} exited with {proc.returncode}:\n{tail}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu, proc.stdout)


def run_pytest(args: Sequence[str], cwd: Path, env: Mapping[str, str], ok: Sequence[int] = (0,)) -> Run:
    """Run pytest in a fresh interpreter; exit with its output's tail if its code is not in ``ok``."""
    return run_command([sys.executable, "-m", "pytest", *PYTEST_BASE, *args], cwd, env, ok)


def interleaved(calls: Mapping[str, Callable[[], Run]], repeat: int) -> dict[str, list[Run]]:
    """Every call ``repeat`` times, interleaved and in alternating order, so that a slow spell of
    the machine hits both sides alike; the runs of each call, in order."""
    runs: dict[str, list[Run]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(repeat):
        for name in names if r % 2 == 0 else reversed(names):
            runs[name].append(calls[name]())
    return runs


def median(runs: Sequence[Run]) -> Run:
    """The run of median wall time (its own CPU time with it); of an even number of runs, the lower
    of the two middle ones."""
    return sorted(runs, key=lambda run: run.wall)[(len(runs) - 1) // 2]


def median_of(values: Sequence[float]) -> float:
    """The median of ``values``; of an even number, the lower of the two middle ones (like
    :func:`median`, so that a figure is always one that was measured)."""
    return sorted(values)[(len(values) - 1) // 2]


def collected_in(output: str) -> float:
    """pytest's own "N tests collected in X s": collection without start-up and exit."""
    match = re.search(r"collected in ([0-9.]+)s", output)
    if not match:
        raise SystemExit(f"no collection time in:\n{output[-2000:]}")
    return float(match.group(1))


def outcome_count(output: str, outcome: str) -> int:
    """How many items had ``outcome`` (passed, failed, error) in pytest's last line."""
    match = re.search(rf"(\d+) {outcome}", output.strip().splitlines()[-1])
    return int(match.group(1)) if match else 0


def peak_rss(path: Path) -> dict[str, float]:
    """Peak RSS in MB of each process that reported to ``path`` (controller, gw0, gw1, ...)."""
    peaks: dict[str, float] = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        peaks[entry["role"]] = max(peaks.get(entry["role"], 0.0), entry["kb"] / 1024)
    return peaks


def workers_peak(peaks: Mapping[str, float]) -> float:
    """The largest peak RSS of the xdist workers (0 in a serial run)."""
    return max((mb for role, mb in peaks.items() if role != "controller"), default=0.0)


def project(path: Path, files: Mapping[str, str] | None = None) -> Path:
    """A pytest project folder with the peak-RSS conftest.py and ``files`` (name: text)."""
    path.mkdir(parents=True)
    (path / "conftest.py").write_text(RSS_CONFTEST)
    for name, text in (files or {}).items():
        (path / name).write_text(text)
    return path


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def suite_text(evals: int, configurations: Mapping[str, str], check: str = "match: '*42*'") -> str:
    """A YAML suite of ``evals`` prompt evals with one check each; ``configurations`` maps an id
    to its YAML flow mapping (``{cli: "/path/agent"}``)."""
    lines = ["metadata: {name: bench, model: bench/model}", "evals:"]
    for i in range(evals):
        lines += [f"  - name: e{i}", f"    prompt: Question {i}?", "    checks:", f"      - {check}"]
    lines.append("configurations:")
    lines += [f"  {name}: {mapping}" for name, mapping in configurations.items()]
    return "\n".join(lines) + "\n"


def cli_config(agent: Path, **keys: object) -> str:
    """The YAML flow mapping of a ``cli:`` configuration running ``agent``."""
    extra = "".join(f", {key}: {json.dumps(value)}" for key, value in keys.items())
    return f"{{cli: {json.dumps(str(agent))}{extra}}}"


def mb(value: float) -> str:
    return f"{value:.1f} MB"


def seconds(value: float) -> str:
    return f"{value:.2f} s"
