"""What agents leave running: a prompt eval's agent whose grandchildren escape its process group
(``setsid``, a double fork) leaves none of them behind, without a cgroup or a sandbox; and when an
xdist worker is killed while its agent runs, the controller ends that agent and removes its pids
cgroup, reports the lost item as an error and keeps the other results."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import threading
import time
import warnings
from pathlib import Path

import pytest
from helpers import (
    FAST_ARGS,
    PYTHON,
    XDIST_MODES,
    agent,
    evals_by_nodeid,
    is_gone,
    load_json,
    run,
    wait_gone,
    write,
)

from pytest_vibeeval import reaping
from pytest_vibeeval.notes import note
from pytest_vibeeval.process import CommandResult, read_head, run_command
from pytest_vibeeval.reaping import ReapNote, is_alive
from pytest_vibeeval.workspace.cgroups import V1_ROOT, process_limit
from pytest_vibeeval.workspace.sandbox import bwrap_problem

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"{bwrap_problem()}")
needs_linux = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reaping needs Linux /proc")

# Starts a grandchild in a new session (it outlives the agent) and a double-forked one; each writes
# its pid to a file and says so on a pipe; once both have, the agent answers and exits.
ESCAPING_AGENT = """
import os, subprocess, sys, time
pids = sys.argv[1]
read, write = os.pipe()
note = (
    "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); "
    "os.write(int(sys.argv[2]), b'.'); time.sleep(600)"
)
argv = [sys.executable, "-c", note, pids + ".setsid", str(write)]
subprocess.Popen(argv, start_new_session=True, pass_fds=[write])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(pids + ".double", "w").write(str(os.getpid()))
        os.write(write, b".")
        time.sleep(600)
    os._exit(0)
os.read(read, 1), os.read(read, 1)
print("answered")
"""


@needs_linux
@XDIST_MODES
def test_a_prompt_agents_escaped_grandchildren_are_ended(pytester: pytest.Pytester, xdist: list[str]) -> None:
    pids = pytester.path / "pids"
    script = agent(pytester.path, "escaping.py", ESCAPING_AGENT)
    write(
        pytester.path / "esc.eval.yaml",
        f"""
        metadata: {{name: esc, model: m}}
        configurations:
          escaping: {{cli: "{PYTHON}", args: ["{script}", "{pids}"], prompt_via: stdin}}
        evals:
          - {{name: e, prompt: p, checks: [{{match: "answered*"}}]}}
        """,
    )
    run(pytester, xdist=xdist).assert_outcomes(passed=1)
    for kind in ("setsid", "double"):
        pid = int(Path(f"{pids}.{kind}").read_text())
        assert is_gone(pid), f"the {kind} grandchild {pid} survived the item"  # ended before it finished


# Says on the FIFO (its first argument) that it has started, then waits to be killed; any other
# problem passes at once.
WAITING_AGENT = """
import sys, time
if "hang" in open("prompt.md").read():
    with open(sys.argv[1], "w") as fifo:
        fifo.write("started\\n")
    time.sleep(600)
"""

probe = process_limit(2)
if probe is not None:
    probe.close()
HAS_CGROUP = probe is not None


def _ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1:
        chain.append(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
        except OSError:
            break
    return chain


def _processes_naming(token: str, folder: str) -> list[int]:
    """The processes whose command line holds ``token`` and whose working folder ``folder``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
                cwd = os.readlink(f"/proc/{name}/cwd")
            except OSError:
                continue
            if token.encode() in cmdline and folder in cwd:
                found.append(int(name))
    return found


@needs_linux
@pytest.mark.parametrize("sandbox", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_a_killed_workers_agent_and_cgroup_are_ended(pytester: pytest.Pytester, sandbox: str) -> None:
    fifo = pytester.path / f"started-{os.getpid()}"
    os.mkfifo(fifo)
    script = agent(pytester.path, "waiting.py", WAITING_AGENT)
    write(pytester.path / "template" / "a.txt", "a\n")
    write(pytester.path / "grading" / "b.txt", "b\n")
    write(
        pytester.path / "lost.eval.yaml",
        f"""
        metadata: {{name: lost, model: m}}
        configurations:
          waiting: {{cli: "{PYTHON}", args: ["{script}", "{fifo}"], timeout: 600000}}
        commands:
          check: {{command: "true"}}
        evals:
          - {{name: hang, prompt: hang, workspace: template, grading: grading, grade_steps: [check]}}
          - {{name: quick, prompt: quick, workspace: template, grading: grading, grade_steps: [check]}}
        """,
    )
    results = pytester.path / "results.json"
    args = ("-n", "2", "--vibe-sandbox", sandbox, "--vibe-results", str(results))
    proc = subprocess.Popen(
        [PYTHON, "-m", "pytest", *FAST_ARGS, *args],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # readable once the agent has written
        try:
            assert select.select([reader], [], [], 120)[0], "the agent never started"
        finally:
            os.close(reader)
        agents = _processes_naming(str(fifo), "-hang-")  # not the other item's agent, if it runs
        assert agents
        chain = _ancestors(agents[0])
        worker = chain[chain.index(proc.pid) - 1]  # the controller's child on the agent's way up
        os.kill(worker, signal.SIGKILL)
        output, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "crashed while running 'lost.eval.yaml::hang[waiting]'" in output, output[-3000:]
    records = evals_by_nodeid(load_json(results))
    assert records["lost.eval.yaml::quick[waiting]"]["outcome"] == "passed"
    assert records["lost.eval.yaml::hang[waiting]"]["outcome"] == "error"
    assert not any(is_alive(pid) for pid in agents), "the lost worker's agent is still running"
    if HAS_CGROUP:
        assert not list(V1_ROOT.glob(f"pytest-vibeeval-{worker}-*")), "its pids cgroup was left behind"


# A command of its own: leaves a daemon (a double fork in a new session, re-parented to the
# runner while the command runs), says "started" on the FIFO ``<notes>.started``, waits until
# something is written to the FIFO ``<notes>.go``, then leaves a second daemon and exits.
DAEMONISING_COMMAND = """
import os, sys, time
notes = sys.argv[1]

def daemon(kind):
    read, write = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            open(f"{notes}.{kind}", "w").write(str(os.getpid()))
            os.write(write, b".")
            time.sleep(600)
        os._exit(0)
    os.read(read, 1)
    os.wait()  # its parent is gone: the daemon is the runner's child now

daemon("daemon")
with open(notes + ".started", "w") as fifo:
    fifo.write("started\\n")
with open(notes + ".go") as fifo:
    fifo.read()
daemon("late")
print("finished")
"""


class _Command(threading.Thread):
    """Runs :data:`DAEMONISING_COMMAND` through ``run_command`` in a thread of its own."""

    def __init__(self, folder: Path, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.notes = folder / name
        for fifo in ("started", "go"):
            os.mkfifo(f"{self.notes}.{fifo}")
        self.argv = [PYTHON, str(agent(folder, "daemonising.py", DAEMONISING_COMMAND)), str(self.notes)]
        self.folder = folder
        self.result: CommandResult | None = None

    def run(self) -> None:
        self.result = run_command(
            self.argv, cwd=self.folder, output_dir=self.folder, name=self.name, timeout=300
        )

    def wait_started(self) -> None:
        reader = os.open(f"{self.notes}.started", os.O_RDONLY | os.O_NONBLOCK)  # readable once written
        try:
            assert select.select([reader], [], [], 120)[0], f"command {self.name} never started"
        finally:
            os.close(reader)

    def finish(self) -> None:
        try:  # without a reader (the command was killed) this fails at once rather than blocking
            writer = os.open(f"{self.notes}.go", os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            pytest.fail(f"command {self.name} no longer waits to be told to finish ({exc})")
        os.write(writer, b"go\n")
        os.close(writer)
        self.join(120)
        assert not self.is_alive(), f"command {self.name} did not finish"

    def pid(self, kind: str) -> int:
        return int(Path(f"{self.notes}.{kind}").read_text())


@needs_linux
def test_commands_run_from_threads_at_once_keep_each_others_processes(tmp_path: Path) -> None:
    """One command's end does not end another's processes, its leader or its daemons; what each
    left behind is still ended, at the latest when the last of them ends."""
    first, second = _Command(tmp_path, "first"), _Command(tmp_path, "second")
    first.start()
    first.wait_started()
    second.start()  # started after the first: its processes are younger than the first command
    second.wait_started()
    first.finish()
    assert first.result is not None and first.result.exit_code == 0
    assert is_alive(second.pid("daemon")), "the first command's end ended the second's daemon"
    second.finish()
    assert second.result is not None
    assert (second.result.exit_code, read_head(second.result.stdout_path, 100)[0]) == (0, "finished\n")
    for command in (first, second):
        for kind in ("daemon", "late"):
            assert wait_gone(command.pid(kind), 10), f"{command.name}'s {kind} survived the commands"


@needs_linux
def test_a_python_without_pidfds_still_ends_what_a_command_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python built without ``os.pidfd_open`` (some distributions' builds): a command's end still
    kills what it left and waits for it by looking, rather than failing."""
    monkeypatch.delattr(os, "pidfd_open")
    command = _Command(tmp_path, "nopidfd")
    command.start()
    command.wait_started()
    with warnings.catch_warnings(record=True) as noted:  # the command's thread shares the filters
        warnings.simplefilter("always", ReapNote)
        Path(f"{command.notes}.go").write_text("go\n")  # once the command opened it to read
        command.join(120)
    monkeypatch.undo()
    assert not command.is_alive(), "the command did not finish"
    assert [str(found.message) for found in noted if found.category is ReapNote] == []  # reaped at once
    assert command.result is not None and command.result.exit_code == 0
    for kind in ("daemon", "late"):
        assert wait_gone(command.pid(kind), 10), f"the command's {kind} survived it"


# Traces (PTRACE_SEIZE: the process goes on running) the process whose pid it reads on stdin, says
# so, and never waits for it: once killed, that process stays a zombie its parent cannot reap (as
# one stuck in uninterruptible sleep, on a hung network mount, cannot be) until this tracer ends,
# when its stdin closes.
TRACER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.stdin.readline())
if libc.ptrace(0x4206, pid, None, None) != 0:
    print("cannot trace:", os.strerror(ctypes.get_errno()), flush=True)
    sys.exit(0)
print("tracing", flush=True)
sys.stdin.read()
"""


def _wait_past_start(pid: int) -> None:
    """Wait until the clock process start times are counted in (clock ticks since boot) has passed
    ``pid``'s start: a command started from now on counts ``pid`` as older than itself."""
    start = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])
    ticks = os.sysconf("SC_CLK_TCK")
    while time.clock_gettime(time.CLOCK_BOOTTIME) * ticks < start + 1:
        time.sleep(1 / ticks)


def _run_in_thread(folder: Path, name: str) -> threading.Thread:
    thread = threading.Thread(
        target=run_command,
        args=(["true"],),
        kwargs={"cwd": folder, "output_dir": folder, "name": name},
        daemon=True,
    )
    thread.start()
    return thread


@needs_linux
def test_a_process_that_cannot_be_reaped_holds_up_no_other_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command's end kills a process that then cannot be reaped (traced, here; stuck in the kernel
    on a hung mount, elsewhere): that command ends all the same, with a note naming the process, a
    command of another thread runs meanwhile, and the process is reaped once it can be. The note
    comes after the command's end is done: a command starting while it is shown must not find this
    process still a subreaper with no command running (it would then keep it one for good)."""
    running = reaping._running()
    at_note: list[tuple[bool, int]] = []

    def noting(warning: Warning, stacklevel: int = 1) -> None:
        at_note.append((reaping._subreaper(), len(running.commands)))
        note(warning, stacklevel + 1)

    monkeypatch.setattr(reaping, "note", noting)
    first = _Command(tmp_path, "first")
    # Started before the command: not one of its processes, not killed at its end.
    tracer = subprocess.Popen(
        [PYTHON, "-c", TRACER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert tracer.stdin is not None and tracer.stdout is not None
    try:
        _wait_past_start(tracer.pid)
        first.start()
        first.wait_started()
        daemon = first.pid("daemon")
        tracer.stdin.write(f"{daemon}\n")
        tracer.stdin.flush()
        said = tracer.stdout.readline()
        if said != "tracing\n":
            pytest.skip(f"a process cannot trace another here: {said.strip()}")
        daemon_fd = os.pidfd_open(daemon)  # the daemon is this process's child: it can tell when reaped
        with warnings.catch_warnings(record=True) as noted:  # from the first command's thread
            warnings.simplefilter("always", ReapNote)
            Path(f"{first.notes}.go").write_text("go\n")  # once the command opened it to read
            assert select.select([daemon_fd], [], [], 120)[0], (
                "the first command's end did not kill its daemon"
            )
            second = _run_in_thread(tmp_path, "second")  # while the first command's end deals with it
            second.join(60)
            assert not second.is_alive(), "a command waited for another command's unreapable process"
            first.join(60)
            assert not first.is_alive(), "the command waited for its unreapable process to be reaped"
        (message,) = [str(found.message) for found in noted if found.category is ReapNote]
        assert re.match(rf"process {daemon} .* process {tracer.pid} traces it", message), message
        [(subreaper, commands)] = at_note
        if not running.was_subreaper and commands == 0:
            assert not subreaper, "the note came while this process was still a subreaper"
        assert first.result is not None and first.result.exit_code == 0
        assert wait_gone(first.pid("late"), 10)
        tracer.stdin.close()
        assert tracer.wait(60) == 0
        _run_in_thread(tmp_path, "third").join(60)  # the next command's end reaps it
        with pytest.raises(ChildProcessError):
            os.waitid(os.P_PIDFD, daemon_fd, os.WEXITED | os.WNOHANG)  # reaped already
        os.close(daemon_fd)
    finally:
        if tracer.poll() is None:
            tracer.kill()
            tracer.wait()
        tracer.stdout.close()


# Leaves a process (a double fork in a new session, re-parented to the runner) that starts a child
# in a session of its own and stays; both write their pids to files before the command exits.
STUCK_PARENT_COMMAND = """
import os, subprocess, sys, time
notes = sys.argv[1]
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        child = subprocess.Popen(["sleep", "600"], start_new_session=True)
        open(notes + ".child", "w").write(str(child.pid))
        open(notes + ".parent", "w").write(str(os.getpid()))
        os.write(write, b".")
        time.sleep(600)
    os._exit(0)
os.read(read, 1)
os.wait()
"""


@needs_linux
def test_the_children_of_a_killed_process_that_does_not_die_are_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process a command left that does not die when killed (stuck in the kernel on a hung mount;
    here the kill spares it) would pass its children to this process only when it ends, after the
    command, outside any command's window: they are killed at the command's end instead."""
    notes = tmp_path / "stuck"
    kill = reaping._kill

    def kill_but_the_stuck(pid: int) -> None:
        if str(pid) != Path(f"{notes}.parent").read_text():
            kill(pid)

    monkeypatch.setattr(reaping, "_kill", kill_but_the_stuck)
    monkeypatch.setattr(reaping, "KILL_WAIT_S", 0.5)
    argv = [PYTHON, str(agent(tmp_path, "stuck.py", STUCK_PARENT_COMMAND)), str(notes)]
    with warnings.catch_warnings(record=True) as noted:
        warnings.simplefilter("always", ReapNote)
        result = run_command(argv, cwd=tmp_path, output_dir=tmp_path, name="stuck", timeout=300)
    parent, child = (int(Path(f"{notes}.{kind}").read_text()) for kind in ("parent", "child"))
    try:
        assert result.exit_code == 0
        (message,) = [str(found.message) for found in noted if found.category is ReapNote]
        assert message.startswith(f"process {parent} "), message
        assert wait_gone(child, 10), "the child of the process that did not die outlived the command"
    finally:
        os.kill(parent, signal.SIGKILL)
        os.waitpid(parent, 0)  # this process's child: re-parented here as its command ran
        reaping._running().unreaped.discard(parent)
        if not is_gone(child):
            os.killpg(child, signal.SIGKILL)
            wait_gone(child)


# Leaves a daemon (a double fork in a new session, re-parented to the runner) and exits.
DAEMON_LEAVING_COMMAND = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
os.wait()
"""


@needs_linux
@pytest.mark.parametrize("with_pidfds", [True, False], ids=["pidfds", "no-pidfds"])
def test_a_killed_process_reaped_by_another_command_meanwhile_is_not_taken_for_stuck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_pidfds: bool
) -> None:
    """While a command's end waits for what it killed (without the lock), another thread's command
    end may reap it, and a new process may get its pid: that process is not taken for the killed
    one stuck in the kernel, and its children are not killed. The reuse of the pid is played here:
    the killed process reaped as the other command's end would, its pid then read as not ended."""
    if with_pidfds and not hasattr(os, "pidfd_open"):
        pytest.skip("this Python has no os.pidfd_open")
    if not with_pidfds:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    running = reaping._running()
    wait_dead, not_ended, kill_children_of = reaping._wait_dead, reaping._not_ended, reaping._kill_children_of
    reused: set[int] = set()
    children_killed_of: list[int] = []

    def wait_then_reaped_elsewhere(pids: list[int], fds: object) -> None:
        wait_dead(pids, fds)  # type: ignore[arg-type]
        for pid in pids:
            if pid in running.unreaped:  # as another command's end would: Orphans.reap
                os.waitpid(pid, 0)
                running.unreaped.discard(pid)
                reused.add(pid)

    def killing_children_of(parents: list[int]) -> list[int]:
        children_killed_of.extend(parents)
        return kill_children_of([parent for parent in parents if parent not in reused])

    monkeypatch.setattr(reaping, "_wait_dead", wait_then_reaped_elsewhere)
    monkeypatch.setattr(reaping, "_not_ended", lambda pid: pid in reused or not_ended(pid))
    monkeypatch.setattr(reaping, "_kill_children_of", killing_children_of)
    argv = [PYTHON, str(agent(tmp_path, "leaving.py", DAEMON_LEAVING_COMMAND))]
    result = run_command(argv, cwd=tmp_path, output_dir=tmp_path, name="leaving", timeout=300)
    assert result.exit_code == 0
    assert reused, "the command's end killed no daemon"
    assert not set(children_killed_of) & reused, "the children of a new process given the pid were killed"
