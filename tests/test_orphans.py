"""A pytest killed with SIGKILL (the OOM killer, a CI job's hard timeout, ``kill -9``) runs no
cleanup, and its agents run in process groups of their own: they must not go on running (and
spending) for nothing. Its watcher ends them; an xdist worker ends when its controller is gone."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers import FAST_ARGS, PYTHON, XDIST_MODES, is_gone, wait_gone, write

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watcher is Linux's")

# Writes its pid to the FIFO "agents", then waits far longer than any test.
AGENT = """
import os, sys
sys.stdin.read()
with open(os.path.join(sys.argv[1], "agents"), "w") as fifo:
    fifo.write(f"{os.getpid()}\\n")
os.execvp("sleep", ["sleep", "300"])
"""

# Every xdist worker records its pid (by workerinput: PYTEST_XDIST_WORKER is inherited when these
# tests themselves run under xdist); the controller says on "down" when it has handled a lost worker.
CONFTEST = """
import os, pathlib, pytest
def pytest_configure(config):
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker:
        (pathlib.Path(__file__).parent / f"worker-{worker}.pid").write_text(str(os.getpid()))
@pytest.hookimpl(trylast=True)
def pytest_testnodedown(node, error):
    if error is not None:
        with open(pathlib.Path(__file__).parent / "down", "w") as down:
            down.write("down\\n")
"""

GONE_WITHIN_S = 60.0  # an upper bound: the watcher ends them at once, execnet a worker within 15 s


def make_suite(path: Path) -> None:
    agent = write(path / "agent.py", AGENT)
    write(path / "conftest.py", CONFTEST)
    write(
        path / "o.eval.yaml",
        f"metadata: {{name: o, model: m}}\n"
        f'configurations:\n  agent: {{cli: "{PYTHON}", args: ["{agent}", "{path}"]}}\n'
        "evals:\n"
        '  - {name: one, prompt: one, checks: [{match: "*"}]}\n'
        '  - {name: two, prompt: two, checks: [{match: "*"}]}\n',
    )
    os.mkfifo(path / "agents")


def read_pids(fifo: int, count: int) -> list[int]:
    """The first ``count`` pids the agents write to the FIFO (opened for reading and writing, so
    that it never reads end of file), waiting at most a generous while for each."""
    text = b""
    while text.count(b"\n") < count:
        ready, _, _ = select.select([fifo], [], [], GONE_WITHIN_S)
        assert ready, f"the agents did not start: {text!r}"
        text += os.read(fifo, 4096)
    return [int(line) for line in text.split()]


@contextlib.contextmanager
def killed_session(path: Path, xdist: list[str], kill_workers: bool) -> Iterator[tuple[list[int], list[int]]]:
    """Run the suite until every agent runs, then SIGKILL its pytest (and with ``kill_workers`` its
    xdist workers): (the agents' pids, the workers' pids). Whatever is left is killed afterwards."""
    make_suite(path)
    fifo = os.open(path / "agents", os.O_RDWR | os.O_NONBLOCK)
    args = [PYTHON, "-m", "pytest", *FAST_ARGS, "-p", "no:randomly", *xdist]
    pytest_process = subprocess.Popen(args, cwd=path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    agents: list[int] = []
    workers: list[int] = []
    try:
        agents = read_pids(fifo, 2 if xdist else 1)
        workers = [int(p.read_text()) for p in path.glob("worker-*.pid")]
        assert len(workers) == (2 if xdist else 0)
        pytest_process.kill()
        pytest_process.wait()
        if kill_workers:
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
        yield agents, workers
    finally:
        os.close(fifo)
        with contextlib.suppress(ProcessLookupError):
            pytest_process.kill()
        pytest_process.wait()
        for pid in agents + workers:
            if not is_gone(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL) if pid in agents else os.kill(pid, signal.SIGKILL)
                wait_gone(pid)


@XDIST_MODES
def test_agents_and_workers_end_when_pytest_is_killed(pytester: pytest.Pytester, xdist: list[str]) -> None:
    with killed_session(pytester.path, xdist, kill_workers=False) as (agents, workers):
        for pid in agents + workers:
            assert wait_gone(pid, GONE_WITHIN_S), f"{pid} outlived its killed session"


# Stops the watcher of each process that ran an agent as that process ends, and names it.
STOP_WATCHER = """
import os, pathlib, signal
def pytest_unconfigure(config):
    from pytest_vibeeval.reaping import watcher_pid
    pid = watcher_pid()
    if pid is not None:
        os.kill(pid, signal.SIGSTOP)
        (pathlib.Path(__file__).parent / f"watcher-{pid}").touch()
"""


@XDIST_MODES
def test_a_sessions_output_ends_with_it(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """What reads a session's output (``subprocess.run(..., capture_output=True)``, a CI step)
    is done when pytest is: the watcher holds none of it, even when it does not end (stopped here).
    With ``-s`` the agents start where pytest's own output is, not a capture file."""
    make_suite(pytester.path)
    write(pytester.path / "agent.py", "import sys; sys.stdin.read(); print('ok')\n")
    write(pytester.path / "conftest.py", STOP_WATCHER)
    args = [PYTHON, "-m", "pytest", *FAST_ARGS, "-p", "no:randomly", "-s", *xdist]
    try:
        done = subprocess.run(args, cwd=pytester.path, capture_output=True, text=True, timeout=GONE_WITHIN_S)
        assert done.returncode == 0, done.stdout + done.stderr
        assert list(pytester.path.glob("watcher-*")), "no watcher started"
    finally:
        for stopped in pytester.path.glob("watcher-*"):
            pid = int(stopped.name.partition("-")[2])
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            wait_gone(pid)


def test_agents_end_when_every_pytest_process_is_killed(pytester: pytest.Pytester) -> None:
    """A hard timeout that SIGKILLs pytest's process group kills the workers too: nothing is left
    to stop the agents, in groups of their own, but the workers' watchers."""
    with killed_session(pytester.path, ["-n", "2"], kill_workers=True) as (agents, _):
        for pid in agents:
            assert wait_gone(pid, GONE_WITHIN_S), f"agent {pid} outlived its killed session"


def killed_watcher() -> int:
    """Start this process's watcher unless it runs, kill it and return its pid: the next
    :func:`~pytest_vibeeval.reaping.marked` starts a new one."""
    from pytest_vibeeval import reaping

    reaping.start_watcher()
    old = reaping.watcher_pid()
    assert old is not None and reaping.is_alive(old)
    os.kill(old, signal.SIGKILL)
    assert wait_gone(old)
    return old


def test_one_watcher_per_process_started_again_when_it_ended() -> None:
    """A watcher that ended (killed) is replaced with the next command; the commands' reaping of
    what started after them spares it, and later commands keep it."""
    from pytest_vibeeval.reaping import Orphans, is_alive, marked, watcher_pid

    first = killed_watcher()
    with Orphans() as orphans:
        orphans.starting()
        marked({})  # starts the new watcher after the command's start: what that command reaps
    second = watcher_pid()
    assert second not in (None, first)
    assert is_alive(second), "the command's reaping ended the watcher"
    marked({})
    assert watcher_pid() == second


def test_a_watcher_started_while_another_threads_command_ends_is_spared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command that ends in one thread while another thread starts the watcher (after that
    command started: within what its end reaps) does not take the new watcher, whose pid is not
    yet recorded, for one of its processes."""
    from pytest_vibeeval import reaping

    old = killed_watcher()
    begun, go, popened, ended = (threading.Event() for _ in range(4))

    def command() -> None:
        with reaping.Orphans() as orphans:
            orphans.starting()
            begun.set()
            go.wait(120)

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(*args, **kwargs)
        popened.set()
        ended.wait(3)  # the command's end comes now, unless it waits for the watcher's record
        return process

    monkeypatch.setattr(reaping, "subprocess", SimpleNamespace(Popen=popen, DEVNULL=subprocess.DEVNULL))
    ending, starting = threading.Thread(target=command), threading.Thread(target=reaping.marked, args=({},))
    ending.start()
    assert begun.wait(120)
    starting.start()
    assert popened.wait(120)
    go.set()
    ending.join(120)
    ended.set()
    starting.join(120)
    assert not ending.is_alive() and not starting.is_alive()
    new = reaping.watcher_pid()
    assert new not in (None, old)
    assert reaping.is_alive(new), "the command's end killed the watcher started meanwhile"


def test_threads_finding_the_watcher_ended_at_once_replace_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads' commands find the watcher ended at the same moment: one replaces it, under the
    lock, and the other keeps that one (it used to forget it, as the one that ended, and fail)."""
    from pytest_vibeeval import reaping

    old = killed_watcher()
    inside, other_done = threading.Event(), threading.Event()
    close = reaping._close_pipe_end

    def closing(state: dict[str, Any]) -> None:
        if threading.current_thread().name == "first":
            inside.set()
            other_done.wait(3)  # the other thread's start comes now, unless it waits for the lock
        close(state)

    monkeypatch.setattr(reaping, "_close_pipe_end", closing)
    errors: list[BaseException] = []

    def start() -> None:
        try:
            reaping.marked({})
        except Exception as exc:
            errors.append(exc)

    first, second = (
        threading.Thread(target=start, name="first"),
        threading.Thread(target=start, name="second"),
    )
    first.start()
    assert inside.wait(120)
    second.start()
    second.join(120)
    other_done.set()
    first.join(120)
    assert not first.is_alive() and not second.is_alive()
    assert errors == []
    new = reaping.watcher_pid()
    assert new not in (None, old) and reaping.is_alive(new), "no watcher runs"


WATCHER_CODE_PART = "pytest_vibeeval.reaping import watch"


def watchers_of(pid: int) -> list[int]:
    """The children of ``pid`` that run the watcher's code."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split():
            with contextlib.suppress(OSError):
                if WATCHER_CODE_PART in Path(f"/proc/{child}/cmdline").read_text():
                    found.append(int(child))
    return found


def dead_pid() -> int:
    """A pid that was a process of this namespace and no longer is (reaped)."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


# Starts its watcher (marked), starts an agent of its own and one whose marker names another
# process (as a runner in another pid namespace's does: a pid that means nothing here), prints
# both pids, and with "fork" forks a child that goes on (no exec) before it exits normally.
STARTER = """
import os, subprocess, sys, time
from pytest_vibeeval.reaping import MARKER, marked, watcher_pid
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
own = subprocess.Popen(["sleep", "300"], env=marked(None), **quiet)
foreign = subprocess.Popen(["sleep", "300"], env={**os.environ, MARKER: sys.argv[1]}, **quiet)
child = os.fork() if len(sys.argv) > 2 else -1
if child == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.dup2(1, 2)
    time.sleep(300)
    os._exit(0)
print(own.pid, foreign.pid, child, watcher_pid(), flush=True)
"""


@contextlib.contextmanager
def started(*args: str) -> Iterator[tuple[int, int, int]]:
    """Run :data:`STARTER` to its end: (its own agent, the foreign one, its watcher); the agents are
    killed afterwards."""
    done = subprocess.run(
        [PYTHON, "-c", STARTER, *args], capture_output=True, text=True, timeout=60, check=True
    )
    own, foreign, child, watcher = (int(p) for p in done.stdout.split())
    try:
        yield own, foreign, watcher
    finally:
        if child > 0:
            os.kill(child, signal.SIGKILL)
            wait_gone(child)
        for pid in (own, foreign):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            wait_gone(pid)


def test_the_watcher_ends_only_what_its_own_process_left() -> None:
    """A marker naming another process (a runner in a container or a bwrap sandbox names a pid of
    its own pid namespace, dead or unknown here) is not the watcher's business."""
    with started(f"{dead_pid()}:1") as (own, foreign, watcher):
        assert wait_gone(own, GONE_WITHIN_S), "the watcher did not end its own process's agent"
        assert wait_gone(watcher, GONE_WITHIN_S), "the watcher did not end"
        assert not is_gone(foreign), "the watcher killed an agent another process started"


def test_a_forked_child_does_not_keep_the_watcher_waiting() -> None:
    with started(f"{dead_pid()}:1", "fork") as (own, _, _):
        assert wait_gone(own, GONE_WITHIN_S), "a forked child kept the watcher from ending the agent"


def test_a_module_shadowing_the_stdlib_beside_the_package_does_not_break_the_watcher(tmp_path: Path) -> None:
    """The package's folder (site-packages for an installed wheel) may hold a module named as one
    of the stdlib's (the old ``pathlib`` backport): the watcher still imports and does its work."""
    from pytest_vibeeval import reaping

    root = tmp_path / "site-packages"
    root.mkdir()
    (root / "pytest_vibeeval").symlink_to(Path(reaping.__file__).parent)
    write(root / "pathlib.py", "raise ImportError('the backport')\n")
    argv = [arg if arg != reaping._ROOT else str(root) for arg in reaping._watcher_argv()]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_failed_watcher_is_not_started_again_and_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_vibeeval import reaping

    saved = reaping._state().copy()
    try:
        reaping._state().clear()
        monkeypatch.setattr(reaping, "_WATCHER_CODE", "raise SystemExit(1)")
        reaping.start_watcher()
        failed = reaping.watcher_pid()
        assert failed is not None
        assert wait_gone(failed)
        for _ in range(3):
            reaping.marked({})
            assert reaping.watcher_pid() in (None, failed)
        assert reaping._state().get("failed")
    finally:
        reaping._state().clear()
        reaping._state().update(saved)


def test_inline_runs_leave_one_watcher(pytester: pytest.Pytester) -> None:
    """An in-process pytester run drops the modules it imported; the next imports them again. The
    watcher's state survives that: one watcher for the process however many runs."""
    agent = write(pytester.path / "agent.py", "import sys; sys.stdin.read(); print('ok')\n")
    write(
        pytester.path / "o.eval.yaml",
        f"metadata: {{name: o, model: m}}\n"
        f'configurations:\n  agent: {{cli: "{PYTHON}", args: ["{agent}"]}}\n'
        'evals:\n  - {name: one, prompt: one, checks: [{match: "*"}]}\n',
    )
    for _ in range(3):
        pytester.inline_run(*FAST_ARGS, "-p", "no:randomly").assertoutcome(passed=1)
    assert len(watchers_of(os.getpid())) == 1


def test_a_watcher_that_could_not_be_replaced_leaves_marked_working(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher was killed and no process could be spared for the next one (EAGAIN): commands
    still run, unwatched, and the one after them too."""
    import errno

    from pytest_vibeeval import reaping

    first = killed_watcher()

    def no_process(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    with monkeypatch.context() as patched:
        patched.setattr(subprocess, "Popen", no_process)
        for _ in range(3):
            assert reaping.MARKER in reaping.marked({})
        assert reaping.watcher_pid() is None
    reaping.marked({})  # processes to spare again: a watcher again
    assert reaping.watcher_pid() not in (None, first)


def test_a_pipe_end_closed_by_other_code_is_not_closed_again(tmp_path: Path) -> None:
    """Code in the process closed the pipe's end (as one closing every descriptor it does not know
    does), and the number went to a file of its own: the watcher, done, is replaced without closing
    that file."""
    from pytest_vibeeval import reaping

    reaping.start_watcher()
    first = reaping.watcher_pid()
    assert first is not None
    number = reaping._state()["fd"]
    os.close(number)
    assert wait_gone(first)
    own = os.open(tmp_path / "own", os.O_WRONLY | os.O_CREAT)
    try:
        os.dup2(own, number)  # the number is the process's own file's now
        reaping.marked({})
        assert os.fstat(number).st_ino == os.fstat(own).st_ino, "the file was closed"
    finally:
        os.close(own)
        with contextlib.suppress(OSError):
            os.close(number)
    assert reaping.watcher_pid() not in (None, first)


# A runner started by another (a session whose agent runs pytest-vibeeval): it starts an agent of
# its own, prints its pid and its own, and waits.
INNER = """
import os, subprocess, time
from pytest_vibeeval.reaping import marked
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
agent = subprocess.Popen(["sleep", "300"], env=marked(None), **quiet)
print(agent.pid, os.getpid(), flush=True)
time.sleep(300)
"""
OUTER = """
import subprocess, sys
from pytest_vibeeval.reaping import marked
subprocess.Popen([sys.executable, "-c", sys.argv[1]], env=marked(None)).wait()
"""


def test_a_nested_runners_agent_ends_when_the_outer_runner_is_killed() -> None:
    """The outer runner's watcher ends the inner runner (its agent's descendant) but not the inner
    runner's watcher, which holds no marker: that one then ends the inner runner's agent."""
    outer = subprocess.Popen([PYTHON, "-c", OUTER, INNER], stdout=subprocess.PIPE)
    assert outer.stdout is not None
    pids: list[int] = []
    try:
        assert select.select([outer.stdout], [], [], GONE_WITHIN_S)[0], "the inner runner did not start"
        pids = [int(p) for p in outer.stdout.readline().split()]
        outer.kill()
        outer.wait()
        agent, inner = pids
        assert wait_gone(inner, GONE_WITHIN_S), "the outer watcher did not end the inner runner"
        assert wait_gone(agent, GONE_WITHIN_S), "the inner runner's agent outlived it"
    finally:
        with contextlib.suppress(ProcessLookupError):
            outer.kill()
        outer.wait()
        outer.stdout.close()
        for pid in pids:
            if not is_gone(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                wait_gone(pid)


def test_a_lost_workers_end_spares_what_other_processes_started(pytester: pytest.Pytester) -> None:
    """The controller ends what its dead worker left, nothing else: a marker naming a live pid with
    another start time (a container's runner names its own namespace's pids, its pid 1 not this
    one's) is not its worker's, and its agent goes on."""
    from pytest_vibeeval.reaping import MARKER

    foreign = subprocess.Popen(
        ["sleep", "300"],
        env={**os.environ, MARKER: f"{os.getpid()}:1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    make_suite(pytester.path)
    fifo = os.open(pytester.path / "agents", os.O_RDWR | os.O_NONBLOCK)
    os.mkfifo(pytester.path / "down")
    down = os.open(pytester.path / "down", os.O_RDWR | os.O_NONBLOCK)
    args = [PYTHON, "-m", "pytest", *FAST_ARGS, "-p", "no:randomly", "-n", "2"]
    session = subprocess.Popen(args, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    agents: list[int] = []
    try:
        agents = read_pids(fifo, 2)
        worker = int(next(pytester.path.glob("worker-*.pid")).read_text())
        os.kill(worker, signal.SIGKILL)
        assert select.select([down], [], [], GONE_WITHIN_S)[0], "the controller did not see its worker die"
        assert any(is_gone(pid) for pid in agents), "the dead worker's agent runs on"
        assert not is_gone(foreign.pid), "the controller killed an agent its workers did not start"
    finally:
        os.close(fifo)
        os.close(down)
        for pid in agents:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            wait_gone(pid)
        session.kill()
        session.wait()
        foreign.kill()
        foreign.wait()


# Runs itself again and again: most of the time it is in the middle of an exec or just past one.
REEXEC = '#!/bin/sh\nexec "$0"\n'


@contextlib.contextmanager
def reexecuting(folder: Path, marker: str, count: int = 1) -> Iterator[list[int]]:
    """``count`` processes that exec themselves over and over with ``marker`` as their
    :data:`~pytest_vibeeval.reaping.MARKER`; killed afterwards."""
    from pytest_vibeeval.reaping import MARKER

    script = write(folder / "reexec.sh", REEXEC)
    script.chmod(0o755)
    env = {"PATH": os.environ.get("PATH", os.defpath), MARKER: marker}
    processes = [subprocess.Popen([str(script)], env=env, start_new_session=True) for _ in range(count)]
    try:
        yield [process.pid for process in processes]
    finally:
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()


def test_a_process_in_the_middle_of_an_exec_still_shows_its_marker(tmp_path: Path) -> None:
    """While a process execs, its new program's environment reads as empty for a moment (it is not
    set up yet): an agent caught then by the watcher's scan (one that writes something and execs
    another program, as its pytest is killed) must not pass for one without the marker."""
    from pytest_vibeeval.reaping import _marker

    with reexecuting(tmp_path, "1:1") as (pid,):
        read = [_marker(pid) for _ in range(20000)]
    assert None not in read, f"{read.count(None)} of {len(read)} reads found no marker"


def test_the_watchers_scan_ends_processes_caught_in_the_middle_of_an_exec(tmp_path: Path) -> None:
    """The scan looks again at what was in the middle of an exec, until it can tell."""
    from pytest_vibeeval.reaping import end_lost_workers_processes

    owner = f"{dead_pid()}:1"
    with reexecuting(tmp_path, owner, count=8) as pids:
        end_lost_workers_processes(owner)
        running = [pid for pid in pids if not is_gone(pid)]
    assert not running, f"{len(running)} of {len(pids)} processes caught in an exec were left running"


def test_a_process_caught_in_an_exec_after_a_long_kill_wait_is_still_looked_at_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scan's time for what is caught in the middle of an exec starts when it is caught: a
    first generation that took its whole kill wait to die does not use it up, and the agent caught
    in an exec by the next scan is still looked at again and ended. On a clock of its own: the
    kill wait takes no time here."""
    from pytest_vibeeval import reaping

    owner, agent, exec_caught = "1:1", 101, 102
    clock = [0.0]
    killed: list[int] = []
    reads = {exec_caught: 0}

    def marker(pid: int) -> str | None:
        if pid == exec_caught:
            reads[pid] += 1
            return reaping._PENDING if reads[pid] <= 2 else owner  # in an exec at the first two scans
        return owner if pid == agent else None

    def wait_dead(pids: list[int], fds: object) -> None:
        clock[0] += reaping.KILL_WAIT_S + 1  # all of the kill wait, and more

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    monkeypatch.delattr(os, "pidfd_open", raising=False)  # no pidfd of a pid this test made up
    monkeypatch.setattr(reaping, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=sleep))
    monkeypatch.setattr(reaping, "_owner_is_gone", lambda marker: True)
    monkeypatch.setattr(reaping, "remove_abandoned", lambda keep: None)
    monkeypatch.setattr(reaping, "_all_pids", lambda: [agent, exec_caught])
    monkeypatch.setattr(reaping, "_marker", marker)
    monkeypatch.setattr(reaping, "is_alive", lambda pid: pid not in killed)
    monkeypatch.setattr(reaping, "_kill", killed.append)
    monkeypatch.setattr(reaping, "_wait_dead", wait_dead)
    reaping.end_lost_workers_processes(owner)
    assert killed == [agent, exec_caught]


def test_a_process_caught_in_an_exec_is_looked_at_again_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the scan waits for a process caught in the middle of an exec (any process of this
    user that execs, not only an agent), it reads again that process alone, not all of ``/proc``
    every 10 ms; once that one is told, it looks at every process once more."""
    from pytest_vibeeval import reaping

    exec_caught, other = 102, 103
    scans: list[int] = []
    reads = {exec_caught: 0, other: 0}

    def marker(pid: int) -> str | None:
        reads[pid] += 1
        return reaping._PENDING if pid == exec_caught and reads[pid] <= 50 else None

    def all_pids() -> list[int]:
        scans.append(1)
        return [exec_caught, other]

    monkeypatch.setattr(
        reaping, "time", SimpleNamespace(monotonic=time.monotonic, sleep=lambda seconds: None)
    )
    monkeypatch.setattr(reaping, "_owner_is_gone", lambda marker: True)
    monkeypatch.setattr(reaping, "remove_abandoned", lambda keep: None)
    monkeypatch.setattr(reaping, "_all_pids", all_pids)
    monkeypatch.setattr(reaping, "_marker", marker)
    monkeypatch.setattr(reaping, "_kill", lambda pid: pytest.fail(f"process {pid} was killed"))
    reaping.end_lost_workers_processes("1:1")
    assert (len(scans), reads) == (2, {exec_caught: 52, other: 2})
