"""Benchmarks of pytest-vibeeval against floors measured in the same run. Prints ratios.

    python -m bench.run [--evals 500] [--collect 10000] [--files 5000] [--only workspace ...]

1. Prompt-eval overhead: N evals through a `cli:` configuration whose script prints a fixed
   answer, full pytest run (collection, N subprocesses, checks, aggregation, results file),
   against a plain pytest file that runs the same N subprocesses with subprocess.run and
   asserts `in`. Target: ratio <= 1.5.
2. Collection: `pytest --collect-only` of suites totalling M items against a parametrized
   plain test function with M cases. Target: under 2 s for 10 000 items.
3. Workspace preparation: copying an F-file template (nested folders, small files, a few of
   100 KB, symlinks) into a fresh item directory with copy_tree, against a plain `cp -a` of the
   same tree, interleaved, best of each. Target: ratio <= 1.2. The Python walk that copy_tree
   takes when names are to be ignored is timed too (no target).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_vibeeval import copying

# Two agents that print a fixed answer: a shell script (about 2 ms a process, so our overhead
# shows most) and a Python script (about 20 ms, closer to a real agent CLI's start-up).
AGENTS = {
    "sh": "#!/bin/sh\ncat > /dev/null\necho 'The answer is 42.'\n",
    "python": f"#!{sys.executable}\nimport sys\nsys.stdin.read()\nprint('The answer is 42.')\n",
}
BENCHMARKS = ("overhead", "collection", "workspace")
WALK_REPEAT = 3


def _pytest(args: list[str], cwd: Path) -> tuple[float, str]:
    """Wall-clock seconds of a pytest run in a fresh interpreter, and its output."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args],
        cwd=cwd, env=env, capture_output=True, text=True,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        tail = proc.stdout[-3000:] + proc.stderr[-3000:]
        raise SystemExit(f"pytest failed in {cwd} ({proc.returncode}):\n{tail}")
    return elapsed, proc.stdout


def _collected_in(output: str) -> float:
    """pytest's own "N tests collected in X s" figure: collection without start-up and exit."""
    match = re.search(r"collected in ([0-9.]+)s", output)
    if not match:
        raise SystemExit(f"no collection time in:\n{output[-2000:]}")
    return float(match.group(1))


def _suite(path: Path, evals: int, agent: Path, configs: int = 1) -> None:
    lines = ["metadata: {name: bench, model: bench/model}", "evals:"]
    for i in range(evals):
        lines += [f"  - name: e{i}", f"    prompt: Question {i}?", "    checks:", "      - match: '*42*'"]
    lines.append("configurations:")
    for c in range(configs):
        lines.append(f"  c{c}: {{cli: {agent}}}")
    path.write_text("\n".join(lines) + "\n")


def bench_overhead(evals: int, root: Path, repeat: int, kind: str) -> tuple[float, float]:
    work = root / f"overhead-{kind}"
    work.mkdir()
    agent = work / "agent"
    agent.write_text(AGENTS[kind])
    agent.chmod(0o755)
    plugin_dir = work / "plugin"
    plugin_dir.mkdir()
    _suite(plugin_dir / "bench.eval.yaml", evals, agent)
    plain_dir = work / "plain"
    plain_dir.mkdir()
    (plain_dir / "test_plain.py").write_text(
        "import subprocess, pytest\n"
        f"@pytest.mark.parametrize('i', range({evals}))\n"
        "def test_eval(i):\n"
        f"    out = subprocess.run([{str(agent)!r}], input=f'Question {{i}}?',\n"
        "                         capture_output=True, text=True)\n"
        "    assert '42' in out.stdout\n"
    )
    # Interleaved repeats, best of each: this filters the machine's noise, not our overhead.
    plain, ours = [], []
    for _ in range(repeat):
        plain.append(_pytest(["-p", "no:vibeeval"], plain_dir)[0])
        ours.append(_pytest(["--vibe-results", str(work / "results.json")], plugin_dir)[0])
    return min(ours), min(plain)


def bench_collection(items: int, root: Path) -> tuple[float, float]:
    work = root / "collect"
    work.mkdir()
    plugin_dir = work / "plugin"
    plugin_dir.mkdir()
    per_suite = 500
    for s in range(items // (per_suite * 2)):
        _suite(plugin_dir / f"s{s}.eval.yaml", per_suite, Path("/bin/true"), configs=2)
    plain_dir = work / "plain"
    plain_dir.mkdir()
    (plain_dir / "test_plain.py").write_text(
        f"import pytest\n@pytest.mark.parametrize('i', range({items}))\ndef test_eval(i):\n    pass\n"
    )
    _, plain = _pytest(["--collect-only", "-p", "no:vibeeval"], plain_dir)
    _, ours = _pytest(["--collect-only"], plugin_dir)
    return _collected_in(ours), _collected_in(plain)


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


def bench_workspace(files: int, root: Path, repeat: int) -> tuple[float, float, float]:
    """Best-of-``repeat`` seconds to copy the template into a fresh directory with copy_tree and
    with plain ``cp -a``, and best-of-3 with copy_tree's Python walk (an ignore pattern that
    matches nothing)."""
    work = root / "workspace"
    work.mkdir()
    template = _template(work, files)
    calls = {
        "ours": lambda dst: copying.copy_tree(template, dst),
        "cp": lambda dst: subprocess.run(["cp", "-a", f"{template}/.", str(dst)], check=True),
        "walk": lambda dst: copying.copy_tree(template, dst, ignore=["no-such-name"]),
    }
    expected = _entries(template)
    for i in range(2):  # untimed: the first copies after writing the template are slow
        calls["cp"](work / f"warm-up-{i}")
    timings: dict[str, list[float]] = {name: [] for name in calls}
    for r in range(repeat):
        # Interleaved, each in turn first: best-of filters the machine's noise, not a difference.
        # The copies are kept, as an item's are during a run (deleting them makes some VMs hand
        # the memory back to the host and the next copy slower).
        names = ["ours", "cp"] if r % 2 == 0 else ["cp", "ours"]
        for name in names + ["walk"] * (r < WALK_REPEAT):
            dst = work / f"{name}-{r}"
            os.sync()  # the last copy's writeback is not charged to this one
            started = time.perf_counter()
            calls[name](dst)
            timings[name].append(time.perf_counter() - started)
            if r == 0 and _entries(dst) != expected:
                raise SystemExit(f"{name}: the copy of the template is incomplete")
    return min(timings["ours"]), min(timings["cp"]), min(timings["walk"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--evals", type=int, default=500)
    parser.add_argument("--collect", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repeats; the best of each counts")
    parser.add_argument("--files", type=int, default=5000, help="files in the workspace template")
    parser.add_argument("--copy-repeat", type=int, default=6, help="interleaved repeats of the copies")
    parser.add_argument(
        "--only", action="append", choices=BENCHMARKS, help="run only this benchmark (repeatable)"
    )
    args = parser.parse_args()
    only = set(args.only or BENCHMARKS)
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="vibeeval-bench-") as tmp:
        root = Path(tmp)
        for kind in AGENTS if "overhead" in only else ():
            ours, plain = bench_overhead(args.evals, root, args.repeat, kind)
            print(
                f"prompt evals, N={args.evals}, {kind} agent: pytest-vibeeval {ours:.2f}s,"
                f" plain subprocess.run {plain:.2f}s, ratio {ours / plain:.2f} (target <= 1.50),"
                f" per eval {ours / args.evals * 1000:.1f} ms vs {plain / args.evals * 1000:.1f} ms"
            )
        if "collection" in only:
            ours, plain = bench_collection(args.collect, root)
            print(
                f"collection, {args.collect} items: pytest-vibeeval {ours:.2f}s,"
                f" plain parametrized {plain:.2f}s, ratio {ours / plain:.2f} (target: under 2 s)"
            )
        if "workspace" in only:
            ours, plain, walk = bench_workspace(args.files, root, args.copy_repeat)
            how = "cp -a" if copying._gnu_cp() else "Python walk"
            print(
                f"workspace preparation, {args.files} files: copy_tree ({how}) {ours * 1000:.0f} ms,"
                f" plain cp -a {plain * 1000:.0f} ms, ratio {ours / plain:.2f} (target <= 1.20),"
                f" Python walk (ignore set) {walk * 1000:.0f} ms"
            )


if __name__ == "__main__":
    main()
