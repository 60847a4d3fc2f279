"""Shared helpers for the end-to-end tests: write suites and agent scripts into a pytester dir, run
pytest in a subprocess (serially or with ``-n 2``), and read what the run left behind."""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import json
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

# Every scenario that matters runs serially and with two xdist workers.
# A run inside this checkout (the examples) must not add to its .vibeeval/history.jsonl.
NO_HISTORY = "--vibe-history="

XDIST_MODES = pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])

# Importing hypothesis costs most of a run's startup, anyio's plugin (installed with the MCP SDK)
# 45 ms; these runs use neither. FAST_ARGS also turn pytest's cache off (and the parses kept there).
FAST_ARGS_WITH_CACHE = ("-p", "no:hypothesispytest", "-p", "no:anyio")
FAST_ARGS = (*FAST_ARGS_WITH_CACHE, "-p", "no:cacheprovider")

PYTHON = sys.executable


def needs_plugin(module: str, distribution: str) -> pytest.MarkDecorator:
    """Skip a test of the plugin beside a third-party pytest plugin where that plugin is not
    installed (``.[test]``, what CI installs, holds pytest-rerunfailures and pytest-repeat)."""
    return pytest.mark.skipif(
        importlib.util.find_spec(module) is None,
        reason=f"needs {distribution} (pip install {distribution}, or the .[test] extra)",
    )


def c_locale(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs started after this (in a subprocess) are in the C locale without Python's UTF-8 mode:
    their file system encoding, environment and terminal are ASCII."""
    for name in ("LANG", "PYTHONIOENCODING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LC_ALL", "C")
    monkeypatch.setenv("PYTHONUTF8", "0")


def write(path: Path, text: str) -> Path:
    """Write dedented ``text`` to ``path`` (creating folders) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def python_suite(
    path: Path,
    evals: Iterable[str],
    answer: str = "app:answer",
    app: str | None = None,
    *,
    configuration: str = "",
    top: str = "",
) -> Path:
    """Write the suite ``path`` (named after its file, model ``m``) whose ``evals`` (a YAML flow
    mapping each) its one configuration ``app`` answers with the ``python:`` callable ``answer``;
    ``configuration``: more of its keys (``", timeout: 1000"``), ``top``: more top-level YAML. With
    ``app``, the callable's module is written beside the suite with that source."""
    module, _, _ = answer.partition(":")
    if app is not None:
        write(path.parent / f"{module}.py", app)
    lines = [
        f"metadata: {{name: {path.name.removesuffix('.eval.yaml')}, model: m}}",
        "configurations:",
        f'  app: {{python: "{answer}"{configuration}}}',
        *([top] if top else []),
        "evals:",
        *(f"  - {item}" for item in evals),
    ]
    return write(path, "\n".join(lines) + "\n")


def agent(directory: Path, name: str, body: str) -> str:
    """A Python agent script; configurations run it as ``cli: <python>, args: [<script>]``."""
    return str(write(directory / name, body))


def run(
    pytester: pytest.Pytester,
    *args: str | os.PathLike[str],
    xdist: list[str] | None = None,
    subprocess: bool = False,
) -> pytest.RunResult:
    """Run pytest in pytester's directory.

    With xdist (or ``subprocess=True``) pytest runs in a subprocess of its own, so workers and
    process-level behaviour are real; a serial run is in-process (pytester restores sys.modules and
    sys.path afterwards), which saves the interpreter start-up.
    """
    if xdist or subprocess:
        return pytester.runpytest_subprocess(*FAST_ARGS, *(xdist or []), *args, timeout=180)
    return pytester.runpytest_inprocess(*FAST_ARGS, *args)


def run_with_file_limit(
    pytester: pytest.Pytester, max_bytes: int, *args: str, xdist: list[str] | None = None
) -> pytest.RunResult:
    """Run pytest in a subprocess in pytester's directory, where no file can grow beyond
    ``max_bytes`` (``RLIMIT_FSIZE``, which its xdist workers and agents inherit): a write past it
    fails as on a full disk (``File too large``)."""
    return run_with_limits(pytester, {resource.RLIMIT_FSIZE: max_bytes}, *args, xdist=xdist)


def run_with_limits(
    pytester: pytest.Pytester,
    limits: dict[int, int],
    *args: str,
    xdist: list[str] | None = None,
    before: Callable[[], None] | None = None,
) -> pytest.RunResult:
    """Run pytest in a subprocess in pytester's directory under the resource ``limits`` (soft and
    hard, e.g. ``{resource.RLIMIT_NOFILE: 64}``), which its xdist workers and agents inherit;
    ``before`` runs in the child first (after the fork, before pytest starts)."""

    def limited() -> None:
        for which, value in limits.items():
            resource.setrlimit(which, (value, value))
        if before is not None:
            before()

    # Under a file-size limit CPython's import system renames a bytecode file it could write only
    # in part into place (it does not check the write's count): every later import of that module,
    # in this run or the next, fails with "marshal data too short".
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"} if resource.RLIMIT_FSIZE in limits else None
    started = time.monotonic()
    done = subprocess.run(
        [PYTHON, "-m", "pytest", *FAST_ARGS, *(xdist or []), *args],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=180,
        preexec_fn=limited,
        env=env,
    )
    lines = (done.stdout.splitlines(), done.stderr.splitlines())
    return pytest.RunResult(done.returncode, *lines, time.monotonic() - started)


# The capabilities that let root bypass file permissions (dropped by run_unprivileged).
DAC_CAPS = "-dac_override,-dac_read_search"


def run_unprivileged(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in a subprocess that file permissions apply to: as root, without the capabilities
    that bypass them (skips where they cannot be dropped)."""
    command = [PYTHON, "-m", "pytest", f"--basetemp={pytester.path / 'basetemp'}", *FAST_ARGS, *args]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        drop = [f"--inh-caps={DAC_CAPS}", f"--bounding-set={DAC_CAPS}", "--"]
        if setpriv is None or subprocess.run([setpriv, *drop, "true"], check=False).returncode != 0:
            pytest.skip("running as root and the capabilities that bypass file permissions stay")
        command = [setpriv, *drop, *command]
    return pytester.run(*command, timeout=180)


def is_agent_log(path: Path) -> bool:
    """An agent's or a step's own output file (what it printed, kept verbatim for debugging), which
    the secret greps pass over."""
    return path.name.startswith("agent.") or path.suffix in (".stdout", ".stderr")


def write_cli_config(path: Path, data: dict[str, Any]) -> Path:
    """Write a cli-config.json; a configuration without the ``name`` that file requires is named
    after its id."""
    named = {
        config_id: {"name": config_id, **config} if isinstance(config, dict) else config
        for config_id, config in data["configurations"].items()
    }
    return write(path, json.dumps({**data, "configurations": named}))


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def evals_by_nodeid(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every eval record of every run, by node id."""
    return {record["nodeid"]: record for run in results["runs"] for record in run["evals"]}


def run_of(results: dict[str, Any], configuration: str, suite: str | None = None) -> dict[str, Any]:
    """The run of ``configuration`` (and ``suite``, if given)."""
    found = [
        r
        for r in results["runs"]
        if r["configuration"] == configuration and (suite is None or r["suite"] == suite)
    ]
    assert len(found) == 1, f"expected one run of {configuration!r}, found {len(found)}"
    only: dict[str, Any] = found[0]
    return only


_VARIABLE = "<varies>"
_LOG_PATH = re.compile(r"\((?:/[^()\s]+)+\)")


def _timed(variable: str) -> bool:
    return any(part in variable for part in ("latency", "efficiency", "rubric"))


def comparable(results: dict[str, Any]) -> dict[str, Any]:
    """The results without what legitimately differs between two runs of the same suite: times,
    latencies (and the time-based rubric values: efficiency and the scores it enters), temporary
    paths and ordering."""
    data = copy.deepcopy(results)
    data.pop("started_at")
    data.pop("finished_at")
    for run_record in data["runs"]:
        for mapping in (run_record["metrics"], run_record["variables"]):
            for key, value in mapping.items():
                if _timed(key) and value is not None:
                    mapping[key] = _VARIABLE
        for record in run_record["evals"]:
            if record["latency"] is not None:
                record["latency"] = _VARIABLE
            for moment in ("started_at", "finished_at"):  # a coding-agent eval's
                if record.get(moment) is not None:
                    record[moment] = _VARIABLE
            rubric = record.get("rubric")
            if rubric is not None:
                rubric.update(score=_VARIABLE, grade=_VARIABLE)
                rubric["signals"]["efficiency"] = _VARIABLE
            for step in record["steps"]:
                step.update(cwd=_VARIABLE, log=_VARIABLE, duration=_VARIABLE)
            if record.get("message"):  # a failing agent's message names its log files
                record["message"] = _LOG_PATH.sub(f"({_VARIABLE})", record["message"])
        run_record["evals"].sort(key=lambda r: r["nodeid"])
    data["runs"].sort(key=lambda r: (r["source"], r["configuration"]))
    return data


def run_summary(result: pytest.RunResult) -> list[str]:
    """The lines of the Run Summary section (empty if there is none)."""
    lines = result.outlines
    starts = [i for i, line in enumerate(lines) if re.fullmatch(r"=+ Run Summary =+", line)]
    if not starts:
        return []
    assert len(starts) == 1, "the Run Summary was printed more than once"
    out = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith("==="):
            break
        out.append(line)
    return out


def assert_held_after_two(
    result: pytest.RunResult, records: list[dict[str, Any]], each: float, limit: float, xdist: list[str]
) -> list[dict[str, Any]]:
    """A run whose ``--vibe-max-cost`` ``limit`` is reached after two evals costing ``each``: serially
    exactly two started, with two workers two or three (each may start one more before seeing the
    other's spend), and the Run Summary's budget line says what they spent and how many were held.
    Returns the records of the evals that started."""
    from pytest_vibeeval.report.format import money

    started = [record for record in records if record["outcome"] != "skipped"]
    assert len(started) == 2 if not xdist else 2 <= len(started) <= 3, [r["name"] for r in started]
    result.stdout.fnmatch_lines(
        [
            f"Budget: {money(len(started) * each)} spent of ${limit:g} (--vibe-max-cost; evals and "
            f"their llm_judge judges); {len(records) - len(started)} eval(s) not started"
        ]
    )
    return started


def score_and_success_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in run_summary(result) if line.startswith(("Score:", "Success Rate:"))]


# An agent that starts a child sleeping forever, records both pids in the file named by its first
# argument (atomically: never a half-written pid file), then sleeps forever itself.
HANGING_TREE_SCRIPT = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
with open(sys.argv[1] + ".tmp", "w") as handle:
    handle.write(f"{os.getpid()} {child.pid}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(1000)
"""


def best_time(call: Callable[[], object], repeats: int = 3) -> float:
    """The shortest of ``repeats`` timings of ``call``: a property of the code, not of the load."""
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        timings.append(time.perf_counter() - started)
    return min(timings)


def is_gone(pid: int) -> bool:
    """True if the process does not exist or is a zombie (the container's init may not reap
    orphans, so an orphaned child killed by the plugin can linger as a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    # Field 2 (comm) is parenthesised and may contain spaces; the state follows it.
    return stat.rpartition(")")[2].split()[0] in {"Z", "X"}


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    """Block (no polling) until ``pid`` has terminated or ``timeout`` passed; then :func:`is_gone`.

    A SIGKILL sent to a process nobody reaps completes asynchronously; a pidfd becomes readable
    once the process has terminated.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    return is_gone(pid)


def default_sigint() -> None:
    """In a child before exec: Ctrl-C's default action, even when the test suite was started with
    SIGINT ignored (a background job), which a child would otherwise inherit and never be stopped."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_when(
    pytester: pytest.Pytester,
    marker: Path,
    *args: str,
    deadline_s: float = 60,
    after_lines: tuple[tuple[str, ...], ...] = (),
    signals: tuple[signal.Signals, ...] = (signal.SIGINT,),
    target: Callable[[int], int] | None = None,
) -> tuple[int, str]:
    """Run pytest in a subprocess and press Ctrl-C (SIGINT to its process group, as a terminal does)
    once ``marker`` exists, i.e. once an agent has started, and pytest has printed, for each of
    ``after_lines``, a line holding all its fragments (e.g. an item's id and ``PASSED``: it must have
    finished); its exit code and output. ``signals``: what is sent to the group instead, one after
    the other (SIGTERM as a CI system's cancel does, two SIGINTs as an impatient user does).
    ``target``: given pytest's pid, the one process to send them to instead of the group."""
    proc = subprocess.Popen(
        [PYTHON, "-m", "pytest", *FAST_ARGS, *args],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=default_sigint,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen = b""
    try:
        assert proc.stdout is not None
        waiting = list(after_lines)
        while waiting:  # the output comes as the run goes: reading it follows the run, not a clock
            # Read what is there, not whole lines: under xdist, `-v` writes "[gw1] PASSED <id>"
            # and its newline only with the next event, which may be the slow item's end.
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"pytest ended before printing {waiting}: {seen.decode()}")
            seen += chunk
            lines = seen.decode(errors="replace").splitlines()
            waiting = [
                fragments
                for fragments in waiting
                if not any(all(f in line for f in fragments) for line in lines)
            ]
        started = time.monotonic()
        while not marker.exists():  # follows the run, not a clock: the deadline only stops a hang
            if proc.poll() is not None:
                raise AssertionError(f"pytest ended before {marker.name} appeared: {proc.communicate()}")
            if time.monotonic() - started > deadline_s:
                raise AssertionError(f"{marker} never appeared")
            time.sleep(0.05)
        to = target(proc.pid) if target is not None else None
        for sent in signals:
            if to is None:
                os.killpg(proc.pid, sent)
            else:
                os.kill(to, sent)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, (seen + rest).decode(errors="replace")


# --- HTTP servers on 127.0.0.1 and how they reply ------------------------------------------------

Reply = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def serving(reply: Reply) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A server answering every POST with ``reply``; its base URL and the headers it received."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.append(dict(self.headers))
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                reply(self)

    with http_server(Handler) as port:
        yield f"http://127.0.0.1:{port}/v1", seen


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """A threading HTTP server on 127.0.0.1 with ``handler``, running while the block runs; its port."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def trickle(handler: BaseHTTPRequestHandler) -> None:
    """Headers at once, then the body one byte at a time, each 0.2 s apart (for a minute)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "300")
    handler.end_headers()
    for _ in range(300):
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(0.2)


def big(size: int, announce: bool) -> Reply:
    """A body of ``size`` bytes, its length announced in a header or not."""

    def reply(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if announce:
            handler.send_header("Content-Length", str(size))
        handler.end_headers()
        handler.wfile.write(b"x" * size)

    return reply


def refuse(handler: BaseHTTPRequestHandler) -> None:
    """HTTP 400 with the error message "nope"."""
    body = b'{"error": {"message": "nope"}}'
    handler.send_response(400)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def redirect_to(url: str) -> Reply:
    """A 307 redirect to ``url``."""

    def reply(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(307)
        handler.send_header("Location", url)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return reply
