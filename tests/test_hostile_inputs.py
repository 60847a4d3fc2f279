"""The hostile corpus (tests/hostile/): malformed and adversarial suites and config folders, each run
through a real pytest session. Every case either fails collection of its own file with a clear message
(the file, the line where there is one, what is wrong; never a traceback) or runs safely, and no run
touches a file outside its items' temporary folders (HOME is a canary folder; the canary, the suites
and HOME are snapshotted before and after), leaves a process its agents started running, or shows a
case's `absent` texts (secrets in their encodings, raw control characters) in its terminal output or
the files it writes.

tests/hostile/MANIFEST.yaml lists every case with its expected outcome. The cases of a batch share one
pytest run (a subprocess: a crash or a hang stays there); each batch runs once per session, also
under xdist (its outcome is cached in the workers' shared temporary folder).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import yaml
from helpers import FAST_ARGS, Reply, big, is_agent_log, is_gone, redirect_to, refuse, serving, trickle

from pytest_vibeeval.workspace.sandbox import bwrap_problem

HOSTILE = Path(__file__).parent / "hostile"
MANIFEST: dict[str, dict[str, Any]] = yaml.safe_load((HOSTILE / "MANIFEST.yaml").read_text(encoding="utf-8"))[
    "cases"
]
RESULTS_SCHEMA = json.loads(
    (Path(__file__).parents[1] / "pytest_vibeeval" / "schemas" / "results.schema.json").read_text()
)

# A traceback in a report: Python's own, or pytest's rendering of an exception (`E   ...`, `x.py:12: in f`).
TRACEBACK = re.compile(
    r'Traceback \(most recent call last\)|^\s*File "|^E {3}|\.py:\d+: (in \w|\w*(Error|Exception)\b)', re.M
)
# Characters that reorder or hide text on a terminal: an error message must show them escaped.
INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
SNAPSHOT_EXCLUDED = ("out", "tmp")  # the run's own outputs; TMPDIR is checked apart

# Product bugs the corpus found; each case stays an expected failure (strict) until its bug is fixed.
KNOWN_BUGS: dict[str, str] = {}


@dataclass(frozen=True)
class Batch:
    """One pytest run over several cases: its environment and extra arguments."""

    env: dict[str, str] = field(default_factory=dict)  # `{run}` stands for the run folder
    args: tuple[str, ...] = ()
    timeout: float = 150  # seconds; a run that takes longer is a hang
    bwrap: bool = False  # runs its agents and steps in bwrap: skipped where bwrap does not work
    exits: tuple[int, ...] = (0, 1)  # pytest's exit codes that are no crash (5: nothing collected)


def with_xdist(name: str, batch: Batch) -> dict[str, Batch]:
    """The batch, and its twin run with two xdist workers: ``<name>-xdist``."""
    return {name: batch, f"{name}-xdist": replace(batch, args=(*batch.args, "-n", "2"))}


def usage_error(*args: str) -> Batch:
    """A run that ``args`` make a usage error (pytest's exit code 4), found before any item runs."""
    return Batch(args=args, exits=(4,), timeout=60)


# Secret-looking values (a `*KEY*` variable agents are not given, and a `VIBE_SECRET_*` one a
# configuration passes on) and the reports a run writes, for the `absent` expectations.
SECRETS = {"HOSTILE_API_KEY": "hostile-api/key+0451=x", "VIBE_SECRET_HOSTILE": "vibe-hostile/secret+0452=y"}
REPORTS = ("--junitxml", "out/junit.xml", "-o", "junit_logging=all", "--vibe-html", "out/report.html")
# and a var that looks like a placeholder; kept workspaces hold the coding evals' prompt.md
CONTAINMENT_ARGS = (*REPORTS, "--vibe-var", "w=${PROMPT}", "--vibe-keep-workspaces")
DOUBLING = {f"HOSTILE_L{i}": f"${{HOSTILE_L{i - 1}}}${{HOSTILE_L{i - 1}}}" for i in range(1, 41)}
BATCHES = {  # the slow ones first: an idle xdist worker starts them
    # a hang here is exponential or endless: 60 s tells it apart even on a loaded 2-core machine
    "expansion-bomb": Batch(env={"HOSTILE_L0": "x", **DOUBLING}, timeout=60),
    "braces-20mb": Batch(timeout=60),
    "link-pair": Batch(timeout=60),
    "evals-50k": Batch(args=("--vibe-eval", "e00042"), timeout=120),
    "main": Batch(),
    "deep-100k": Batch(timeout=60),
    "enormous-timeout": Batch(timeout=60),
    "eval-root-self": Batch(env={"EVAL_ROOT": "${EVAL_ROOT}"}),
    "eval-root-symlink-loop": Batch(env={"EVAL_ROOT": "{run}/selfloop"}),
    "control": Batch(),
    # out/: the run's own outputs
    **with_xdist("basetemp-in-rootdir", Batch(args=("--basetemp", "out/basetemp"))),
    "uncollected": Batch(exits=(5,), timeout=60),
    "history-fifo": Batch(args=("--vibe-history", "cases/history-fifo/history.jsonl"), timeout=60),
    "history-dev-zero": Batch(args=("--vibe-history", "cases/history-dev-zero/history.jsonl"), timeout=60),
    **with_xdist("sandbox", Batch(args=("--vibe-sandbox", "bwrap"), bwrap=True)),
    **with_xdist("containment", Batch(env=SECRETS, args=CONTAINMENT_ARGS)),
    "worker-killed-xdist": Batch(args=("-n", "2")),  # an agent SIGKILLs its worker: xdist only
    **with_xdist("sigterm", Batch(exits=(2,))),  # an agent sends SIGTERM to the run: interrupted
    # a baseline that never ends or blocks, a results path that is a folder
    **with_xdist("baseline-dev-zero", usage_error("--vibe-baseline", "cases/baseline-dev-zero/b.json")),
    **with_xdist("baseline-fifo", usage_error("--vibe-baseline", "cases/baseline-fifo/b.json")),
    **with_xdist("results-folder", usage_error("--vibe-results", "cases/results-folder")),
}
# Every run: the probe's reports, results and no history in out/, and agents unconfined (no bwrap, but
# in the `sandbox` batches), so that any escape from an item's folder would show in the snapshots.
RUN_ARGS: tuple[str, ...] = ("-p", "hostile_probe", "--vibe-results", "out/results.json")
RUN_ARGS += ("--vibe-history", "", "--vibe-sandbox", "none", "-rA")
PATH = os.environ["PATH"]
# In every batch: ${VAR} loops for the config folders, the canary's absolute path, the folder where
# agents note the pids of processes they leave behind, (HOSTILE_PORT) a server on 127.0.0.1 that
# accepts connections, and (OPENROUTER_BASE_URL) the HTTP server of http_router.
COMMON_ENV = {
    "HOSTILE_A": "${HOSTILE_B}",
    "HOSTILE_B": "${HOSTILE_A}",
    "HOSTILE_SELF": "${HOSTILE_SELF}",
    "HOSTILE_CANARY": "{run}/canary",
    "HOSTILE_PIDS": "{run}/out/pids",
}


# --- generated cases (too big to commit, or made of symlinks) ------------------------------------

SUITE_HEAD = (
    "metadata: {name: hostile, model: none}\nconfigurations: {echo: {python: 'hostile_answer:echo'}}\n"
)


def _suite(folder: Path, text: str, name: str = "suite.eval.yaml") -> None:
    (folder / name).write_text(text, encoding="utf-8")


def deep_lists(depth: int) -> Callable[[Path], None]:
    def generate(folder: Path) -> None:
        _suite(folder, SUITE_HEAD + "evals:\n  - prompt: p\n    checks: " + "[" * depth + "]" * depth + "\n")

    return generate


def deep_maps(folder: Path) -> None:
    _suite(
        folder,
        SUITE_HEAD + "evals:\n  - prompt: p\n    checks: " + "{or: " * 10_000 + "x" + "}" * 10_000 + "\n",
    )


def deep_block(folder: Path) -> None:
    nested = "".join("  " * (i + 3) + "or:\n" for i in range(2_000))
    _suite(
        folder, SUITE_HEAD + "evals:\n  - prompt: p\n    checks:\n" + nested + "  " * 2_003 + "- match: x\n"
    )


def prompt_20mb(folder: Path) -> None:
    words = "lorem ipsum dolor sit amet " * (20 * 2**20 // 27)
    _suite(
        folder,
        SUITE_HEAD + f"evals:\n  - name: big\n    prompt: '{words}'\n    checks: [{{match: 'ok lorem*'}}]\n",
    )


def prompt_20mb_argument(folder: Path) -> None:
    head = "metadata: {name: hostile, model: none}\n"
    head += "configurations: {argument: {cli: hostile-writer, prompt_via: argument}}\n"
    _suite(
        folder,
        head + "evals:\n  - name: big\n    prompt: '" + "x" * 20 * 2**20 + "'\n    checks: [{match: '*'}]\n",
    )


def braces_20mb(folder: Path) -> None:
    _suite(
        folder,
        SUITE_HEAD
        + "evals:\n  - name: braces\n    prompt: '"
        + "{{" * 10 * 2**20
        + "'\n    checks: [{match: 'ok*'}]\n",
    )


def evals_50k(folder: Path) -> None:
    lines = [SUITE_HEAD, "evals:\n"]
    lines += [
        f"  - {{name: e{i:05d}, prompt: 'question {i}', checks: [{{match: 'ok*'}}]}}\n" for i in range(50_000)
    ]
    _suite(folder, "".join(lines))


def formula_1mb(folder: Path) -> None:
    formula = " + ".join(["success_pct"] * 80_000)
    _suite(
        folder,
        SUITE_HEAD
        + f"score: {{formula: '{formula}'}}\nevals:\n  - prompt: p\n    checks: [{{match: 'ok*'}}]\n",
    )


def many_problems(folder: Path) -> None:
    evals = "".join(f"  - prompt: p{i}\n    checks: [{{mtch: x}}]\n" for i in range(2_000))
    _suite(folder, SUITE_HEAD + "evals:\n" + evals)


GENERATORS: dict[str, Callable[[Path], None]] = {
    "deep_lists_10k": deep_lists(10_000),
    "deep_lists_100k": deep_lists(100_000),
    "deep_maps_10k": deep_maps,
    "deep_block_2k": deep_block,
    "prompt_20mb": prompt_20mb,
    "prompt_20mb_argument": prompt_20mb_argument,
    "braces_20mb": braces_20mb,
    "evals_50k": evals_50k,
    "formula_1mb": formula_1mb,
    "many_problems": many_problems,
}


# --- laying out a run ----------------------------------------------------------------------------


def case_dir(case_id: str) -> str:
    """The case's folder under ``cases/`` (the manifest's ``dir`` may hold unicode)."""
    return str(MANIFEST[case_id].get("dir", case_id))


def _materialize(case_id: str, folder: Path, run: Path) -> None:
    spec = MANIFEST[case_id]
    folder.mkdir(parents=True)
    if "base" in spec:
        shutil.copytree(HOSTILE / "_base" / spec["base"], folder, dirs_exist_ok=True)
    if "path" in spec:
        source = HOSTILE / spec["path"]
        if source.is_dir():
            shutil.copytree(source, folder, dirs_exist_ok=True, symlinks=True)
        else:
            shutil.copyfile(source, folder / spec.get("as", source.name))
    if "generate" in spec:
        GENERATORS[spec["generate"]](folder)
    for relative in spec.get("remove", ()):
        (folder / relative).unlink()
    for relative in spec.get("fifos", ()):
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(folder / relative)
    places = {"run": str(run), "canary": str(run / "canary"), "home": str(run / "home"), "case": str(folder)}
    for link, target in spec.get("symlinks", {}).items():
        (folder / link).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(str(target).format(**places), folder / link)


def _support(run: Path) -> None:
    """The canary, the canary HOME, the agents (on PATH) and the Python helpers (on PYTHONPATH)."""
    files = {
        "canary/file.txt": "canary\n",
        "canary/secret.md": "The canary's secret prompt.\n",
        "canary/tests/keep.txt": "keep\n",
        "canary/not-executable.sh": "#!/bin/sh\ntouch $HOME/pwned-not-executable\n",
        "canary/hidden_check.py": "print('the canary grades')\n",
        "home/.profile": "export CANARY=1\n",
        "home/.ssh/config": "Host *\n",
        "home/template/notes.txt": "a template in HOME\n",
        "out/pids/.keep": "",
        "tmp/.keep": "",
    }
    for relative, text in files.items():
        (run / relative).parent.mkdir(parents=True, exist_ok=True)
        (run / relative).write_text(text, encoding="utf-8")
    (run / "lib").mkdir()
    for name in ("hostile_probe.py", "hostile_answer.py"):
        shutil.copyfile(HOSTILE / "_support" / name, run / "lib" / name)
    (run / "bin").mkdir()
    os.symlink(sys.executable, run / "bin" / "hostile-python")
    for script in (HOSTILE / "_support" / "bin").iterdir():
        target = run / "bin" / script.name
        target.write_text(f"#!{sys.executable}\n" + script.read_text(encoding="utf-8"), encoding="utf-8")
        target.chmod(0o755)
    os.symlink(run / "selfloop", run / "selfloop")
    (run / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry below ``root`` (links not followed) with its type, mode, size, mtime and link target,
    except the run's own outputs (pytester's basetemp is outside ``root``)."""
    found: dict[str, tuple[Any, ...]] = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        if rel_folder == ".":
            dirs[:] = [d for d in dirs if d not in SNAPSHOT_EXCLUDED]
        for name in (*dirs, *files):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            link = os.readlink(path) if stat.S_ISLNK(info.st_mode) else None
            kind = stat.S_IFMT(info.st_mode)
            size = info.st_size if not stat.S_ISDIR(info.st_mode) else None
            found[os.path.relpath(path, root)] = (kind, info.st_mode, size, info.st_mtime_ns, link)
    return found


def _changes(before: dict[str, tuple[Any, ...]], after: dict[str, tuple[Any, ...]]) -> list[str]:
    return sorted(
        [f"removed {p}" for p in before.keys() - after.keys()]
        + [f"added {p}" for p in after.keys() - before.keys()]
        + [f"changed {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    )


def http_router(other: str) -> Reply:
    """The batch's HTTP server replies as a request's X-Hostile-Reply header says: ``trickle`` (a body
    a byte at a time), ``big`` (2 MB), ``redirect`` (to ``other``, another origin)."""
    replies = {
        "trickle": trickle,
        "big": big(2_000_000, announce=False),
        "redirect": redirect_to(f"{other}/elsewhere"),
    }

    def reply(handler: BaseHTTPRequestHandler) -> None:
        replies[handler.headers["X-Hostile-Reply"]](handler)

    return reply


def _survivors(pids: Path) -> list[int]:
    """The processes noted in ``pids`` (a file each, holding the pid) that still run. Each is killed:
    a failing case leaves nothing behind."""
    alive = []
    for note in pids.iterdir():
        text = note.read_text(encoding="utf-8").strip()
        if text.isdigit() and not is_gone(int(text)):
            alive.append(int(text))
            os.kill(int(text), signal.SIGKILL)
    return sorted(alive)


def _leaks(texts: set[str], output: str, folders: list[Path]) -> dict[str, list[str]]:
    """Where each of ``texts`` shows: in the terminal output, or in a regular file below ``folders``
    other than an agent's or step's own output."""
    found: dict[str, list[str]] = {text: ["the terminal output"] if text in output else [] for text in texts}
    for folder in folders if texts else ():
        for parent, _, files in os.walk(folder):
            for name in files:
                path = os.path.join(parent, name)
                if not stat.S_ISREG(os.lstat(path).st_mode) or is_agent_log(Path(path)):
                    continue
                with open(path, "rb") as handle:
                    data = handle.read()
                for text in texts:
                    if text.encode() in data:
                        found[text].append(os.path.relpath(path, folder.parent))
    return found


def run_batch(
    name: str, run: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Lay out the batch's cases in ``run`` (the current folder), run pytest over them in a subprocess
    and return what the run left: reports, results, output, what changed outside basetemp, the
    processes left running and where the cases' ``absent`` texts showed."""
    batch = BATCHES[name]
    _support(run)
    cases = [case_id for case_id, spec in MANIFEST.items() if spec.get("batch", "main") == name]
    for case_id in cases:
        _materialize(case_id, run / "cases" / case_dir(case_id), run)
    for variable in [
        v for v in os.environ if v.startswith(("VIBE_", "OPENROUTER_", "EVAL_ROOT", "HOSTILE_"))
    ]:
        monkeypatch.delenv(variable)
    for variable, value in {**COMMON_ENV, **batch.env}.items():
        monkeypatch.setenv(variable, value.replace("{run}", str(run)))
    monkeypatch.setenv("HOME", str(run / "home"))
    monkeypatch.setenv("TMPDIR", str(run / "tmp"))
    monkeypatch.setenv("PATH", f"{run / 'bin'}{os.pathsep}{PATH}")
    monkeypatch.setenv("PYTHONPATH", str(run / "lib"))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("HOSTILE_REPORTS", str(run / "out" / "reports.jsonl"))
    monkeypatch.setenv("COLUMNS", "120")
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)  # connections wait in its backlog
    monkeypatch.setenv("HOSTILE_PORT", str(listener.getsockname()[1]))
    servers = contextlib.ExitStack()
    other, _ = servers.enter_context(serving(refuse))
    router, _ = servers.enter_context(serving(http_router(other)))
    monkeypatch.setenv("OPENROUTER_BASE_URL", router)  # for http configurations without a base_url
    before = snapshot(run)
    existing = set(pytester.path.iterdir())
    args = (*RUN_ARGS, *batch.args, "cases")
    started = time.monotonic()
    outcome: dict[str, Any] = {"cases": cases, "timed_out": False, "ret": None, "stdout": "", "stderr": ""}
    try:
        result = pytester.runpytest_subprocess(*FAST_ARGS, *args, timeout=batch.timeout)
    except pytester.TimeoutExpired:
        outcome["timed_out"] = True
    else:
        outcome.update(ret=int(result.ret), stdout=result.stdout.str(), stderr=result.stderr.str())
    finally:
        listener.close()
        servers.close()
    outcome["seconds"] = round(time.monotonic() - started, 2)
    outcome["changes"] = _changes(before, snapshot(run))
    outcome["tmp_left"] = sorted(p.name for p in (run / "tmp").iterdir() if p.name != ".keep")
    outcome["survivors"] = _survivors(run / "out" / "pids")
    absent = {text for case_id in cases for text in MANIFEST[case_id].get("absent", ())}
    # pytester's basetemp for this run (not its `-current` link)
    basetemp = [p for p in pytester.path.iterdir() if p not in existing and p.is_dir() and not p.is_symlink()]
    outcome["leaks"] = _leaks(absent, outcome["stdout"] + outcome["stderr"], [run / "out", *basetemp])
    reports = run / "out" / "reports.jsonl"
    outcome["reports"] = (
        [json.loads(line) for line in reports.read_text(encoding="utf-8").splitlines()]
        if reports.exists()
        else []
    )
    results = run / "out" / "results.json"
    outcome["results"] = results.read_text(encoding="utf-8") if results.exists() else None
    return outcome


@pytest.fixture(scope="session")
def batch_cache(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """A folder every xdist worker of this session shares: each batch runs once, in whichever worker
    needs it first."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if hasattr(request.config, "workerinput") else base) / "hostile-batches"
    folder.mkdir(exist_ok=True)
    return folder


def _try_run(name: str, cache: Path, request: pytest.FixtureRequest, wait: bool) -> bool:
    """Run batch ``name`` unless it is done; False if another worker is running it (and not ``wait``).

    pytester is requested only for a run: the repository's conftest loads the `semantic` model
    (seconds) for every test using pytester, which these subprocess runs do not need."""
    with (cache / f"{name}.lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        stored = cache / f"{name}.json"
        if not stored.exists():
            pytester: pytest.Pytester = request.getfixturevalue("pytester")
            monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
            run = pytester.mkdir(name)
            monkeypatch.chdir(run)
            outcome = run_batch(name, run, pytester, monkeypatch)
            stored.write_text(json.dumps(outcome), encoding="utf-8")
        return True


def _can_run(name: str) -> bool:
    return not BATCHES[name].bwrap or bwrap_problem() is None


def batch_outcome(name: str, cache: Path, request: pytest.FixtureRequest) -> Any:
    """The batch's outcome. While another xdist worker runs it, this one runs batches nobody has
    started (the slow ones first), then waits."""
    while not _try_run(name, cache, request, wait=False):
        idle = [b for b in BATCHES if b != name and not (cache / f"{b}.json").exists() and _can_run(b)]
        if not any(_try_run(other, cache, request, wait=False) for other in idle):
            _try_run(name, cache, request, wait=True)
            break
    return json.loads((cache / f"{name}.json").read_text(encoding="utf-8"))


# --- checking one case ---------------------------------------------------------------------------


def _final_outcomes(reports: list[dict[str, Any]]) -> dict[str, str]:
    """Each item's outcome from its reports: error (setup/teardown failed), failed, skipped, xfailed,
    passed."""
    outcomes: dict[str, str] = {}
    rank = ["passed", "xfailed", "skipped", "failed", "error"]
    for report in reports:
        if report["kind"] != "test":
            continue
        if report["outcome"] == "failed":
            state = "failed" if report["when"] == "call" else "error"
        elif report["outcome"] == "skipped":
            state = "xfailed" if report["xfail"] else "skipped"
        else:
            state = "passed"
        previous = outcomes.get(report["nodeid"], "passed")
        outcomes[report["nodeid"]] = max(previous, state, key=rank.index)
    return outcomes


# The results' outcome of an item pytest reported as each state (an xfailed eval is a failed one).
RECORD_OUTCOMES = {
    "passed": {"passed"},
    "failed": {"failed", "error"},
    "error": {"error"},
    "skipped": {"skipped"},
    "xfailed": {"failed", "error"},
}


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"the results file holds {constant}, which is not JSON")

    return json.loads(text, parse_constant=refuse)


def check_batch(name: str, outcome: dict[str, Any]) -> None:
    """What every case of a batch needs: the run finished, pytest did not crash, nothing outside
    basetemp changed, and the results file is valid."""
    assert not outcome["timed_out"], (
        f"batch {name!r} did not finish within {BATCHES[name].timeout} s (a hang)"
    )
    output = outcome["stdout"] + outcome["stderr"]
    assert outcome["ret"] in BATCHES[name].exits, (
        f"batch {name!r}: pytest exited with {outcome['ret']}\n{output[-3000:]}"
    )
    assert "INTERNALERROR" not in output, output[-3000:]
    allowed = sorted(change for case in outcome["cases"] for change in MANIFEST[case].get("changes", ()))
    assert outcome["changes"] == allowed, f"changed outside the items' tmp dirs: {outcome['changes'][:20]}"
    assert not outcome["tmp_left"], f"left in TMPDIR: {outcome['tmp_left']}"  # (after a normal exit)
    assert not outcome["survivors"], f"processes the agents left still ran: {outcome['survivors']}"
    if outcome["results"] is not None:
        jsonschema.validate(_strict_json(outcome["results"]), RESULTS_SCHEMA)


def _no_traceback(text: str, where: str) -> None:
    found = TRACEBACK.search(text)
    assert found is None, f"{where}: a traceback instead of a message:\n{text[:4000]}"


def check_error(case_id: str, spec: dict[str, Any], prefix: str, outcome: dict[str, Any]) -> None:
    collect = [r for r in outcome["reports"] if r["kind"] == "collect" and r["nodeid"].startswith(prefix)]
    tests = [
        r["nodeid"] for r in outcome["reports"] if r["kind"] == "test" and r["nodeid"].startswith(prefix)
    ]
    assert collect, f"{case_id}: no collection error; items: {tests}"
    assert not tests, f"{case_id}: items ran although collection should fail: {tests}"
    text = "\n".join(r["text"] for r in collect)
    _no_traceback(text, case_id)
    assert not INVISIBLE.search(text), f"{case_id}: invisible or bidi characters shown raw: {text[:2000]!r}"
    expected = spec["errors"] if "errors" in spec else [{"line": spec.get("line"), "text": spec["error"]}]
    lines = text.splitlines()
    path = re.escape(prefix + spec["file"]) if "file" in spec else re.escape(prefix) + r"[^:\n]+"
    for item in expected:
        line = item.get("line")
        head = re.compile(path + (f":{line}: " if line else ": "))
        matching = [candidate for candidate in lines if head.match(candidate) and item["text"] in candidate]
        assert matching, f"{case_id}: no line `<file>:{line}: …{item['text']}…` in:\n{text[:4000]}"


def check_runs(case_id: str, spec: dict[str, Any], prefix: str, outcome: dict[str, Any]) -> None:
    collect = [r for r in outcome["reports"] if r["kind"] == "collect" and r["nodeid"].startswith(prefix)]
    assert not collect, f"{case_id}: collection failed:\n{collect[0]['text'][:4000]}"
    reports = [r for r in outcome["reports"] if r["kind"] == "test" and r["nodeid"].startswith(prefix)]
    outcomes = _final_outcomes(reports)
    counts: dict[str, int] = {}
    for state in outcomes.values():
        counts[state] = counts.get(state, 0) + 1
    assert counts == spec["runs"], f"{case_id}: outcomes {outcomes}"
    for report in reports:
        _no_traceback(report["text"], report["nodeid"])
    if "message" in spec:
        texts = "\n".join(r["text"] for r in reports)
        assert spec["message"] in texts, f"{case_id}: {spec['message']!r} not in:\n{texts[:4000]}"
    results = _strict_json(outcome["results"]) if outcome["results"] else {"runs": []}
    records = {
        r["nodeid"]: (run, r)
        for run in results["runs"]
        for r in run["evals"]
        if r["nodeid"].startswith(prefix)
    }
    for nodeid, state in outcomes.items():
        assert nodeid in records, f"{case_id}: {nodeid!r} is not in the results"
        _, record = records[nodeid]
        assert record["name"] == nodeid.split("::")[1].rsplit("[", 1)[0], record
        assert record["outcome"] in RECORD_OUTCOMES[state], (nodeid, state, record["outcome"])
    for key, value in spec.get("results", {}).items():
        assert results.get(key) == value, f"{case_id}: the results' {key} is {results.get(key)!r}"
    if "score" in spec:
        scores = {run["score"] for run, _ in records.values()}
        assert scores == {spec["score"]}, f"{case_id}: scores {scores}"
    if "score_error" in spec:
        errors = {run["score_error"] for run, _ in records.values()}
        assert len(errors) == 1 and spec["score_error"] in next(iter(errors)), f"{case_id}: {errors}"


def _params() -> list[Any]:
    params = []
    for case_id in MANIFEST:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[case_id])] if case_id in KNOWN_BUGS else []
        params.append(pytest.param(case_id, marks=marks, id=case_id))
    return params


@pytest.mark.parametrize("case_id", _params())
def test_hostile_case(case_id: str, batch_cache: Path, request: pytest.FixtureRequest) -> None:
    spec = MANIFEST[case_id]
    name = spec.get("batch", "main")
    if BATCHES[name].bwrap and bwrap_problem() is not None:
        pytest.skip(f"batch {name!r} runs in bwrap: {bwrap_problem()}")
    outcome = batch_outcome(name, batch_cache, request)
    check_batch(name, outcome)
    prefix = f"cases/{case_dir(case_id)}/"
    if "runs" in spec:
        check_runs(case_id, spec, prefix, outcome)
    else:
        check_error(case_id, spec, prefix, outcome)
    if "output" in spec:
        output = outcome["stdout"] + outcome["stderr"]
        assert spec["output"] in output, f"{case_id}: {spec['output']!r} not in the output:\n{output[-4000:]}"
    for text in spec.get("absent", ()):
        assert not outcome["leaks"][text], f"{case_id}: {text!r} shows in {outcome['leaks'][text][:10]}"


# --- the corpus itself ---------------------------------------------------------------------------


NOT_CORPUS = ("_", ".", "MANIFEST", "conftest")  # support files, the manifest, the collection guard


def test_manifest_covers_the_corpus() -> None:
    """Every corpus file belongs to a case, every case names files that exist, and each expects
    exactly one outcome."""
    used = {spec["path"] for spec in MANIFEST.values() if "path" in spec}
    for spec in MANIFEST.values():
        assert ("runs" in spec) != ("error" in spec or "errors" in spec), spec
        assert {"path", "generate", "base", "fifos", "symlinks"} & set(spec), spec
        assert spec.get("batch", "main") in BATCHES, spec
        assert spec.get("generate", "deep_lists_10k") in GENERATORS, spec
        if "path" in spec:
            assert (HOSTILE / spec["path"]).exists(), spec["path"]
    corpus = {
        path.relative_to(HOSTILE).as_posix()
        for path in HOSTILE.rglob("*")
        if path.is_file() and not path.relative_to(HOSTILE).parts[0].startswith(NOT_CORPUS)
    }
    orphans = {p for p in corpus if not any(p == u or p.startswith(u + "/") for u in used)}
    assert not orphans, f"corpus files no case uses: {sorted(orphans)}"
    assert len(corpus) >= 60
    assert set(KNOWN_BUGS) <= set(MANIFEST)
