"""Ending what a command leaves behind: the processes that escaped its process group (``setsid``,
a double fork) and, after an xdist worker was killed, the agents it was running.

While :func:`~pytest_vibeeval.process.run_command` runs a command, the process running it is a
child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): an escapee whose parent exits is re-parented to
it rather than to init, and :class:`Orphans` kills and reaps every such child once the command is
over (commands run from several threads at once: once no command still running can have started
it). Agents and registry steps also carry :data:`MARKER` in their environment (:func:`marked`),
the pid of the process that started them, which their descendants inherit: on the controller,
:func:`end_lost_workers_processes` ends what a worker that died left running, every process whose
marker names that worker (recorded as it was set up: :func:`child_marker`), and the pids cgroups
that worker made.

A process killed with SIGKILL (the OOM killer, a CI job's hard timeout, ``kill -9``) runs no
cleanup at all: before the first marked command starts, :func:`marked` starts this process's
watcher (:func:`start_watcher`), a small Python process in a session of its own that waits for this
process to end (the end of a pipe only this process holds) and then does what
:func:`end_lost_workers_processes` does. That ends the agent of a serial session whose pytest was
killed, and the agents of an xdist worker killed together with its controller.

On other systems there is no subreaper and nothing to scan: only the process group is killed. A
process that clears its environment is not recognised by the controller; the pids cgroup and the
bwrap sandbox's pid namespace (it dies with the worker) still end it where they are available.
No pytest here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from .notes import note
from .workspace.cgroups import remove_abandoned

__all__ = [
    "MARKER",
    "Orphans",
    "ReapNote",
    "child_marker",
    "end_lost_workers_processes",
    "is_alive",
    "marked",
    "pidfds",
    "start_watcher",
    "wait_pidfds",
    "watch",
    "watcher_pid",
]

MARKER = "VIBEEVAL_RUNNER_PID"
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PF_EXITING = 0x4  # in /proc/<pid>/stat's flags: the process has begun to exit
KILL_WAIT_S = 5.0  # how long a SIGKILLed process may take to die (it may be in the middle of I/O)
PENDING_WAIT_S = 5.0  # how long a scan looks again at a process in the middle of an exec


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl: Callable[..., int] = libc.prctl
        return prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def _subreaper() -> bool:
    """Whether this process is a child subreaper."""
    if _PRCTL is None:
        return False
    value = ctypes.c_int(0)
    _PRCTL(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0)
    return bool(value.value)


def _make_subreaper(on: bool) -> None:
    """Make this process a child subreaper, or no longer one."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


def _read_proc(path: str) -> str:
    """The text of a ``/proc`` file: fewer system calls than ``Path.read_text`` (its size is 0)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode(errors="replace")  # a process name may be any bytes


def _stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, parent pid, flags, start time in clock ticks) of ``pid``, or None when it is gone."""
    try:
        text = _read_proc(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # the name before it may hold spaces and parentheses
    return fields[0], int(fields[1]), int(fields[6]), int(fields[19])


def _boot_ticks() -> int | None:
    """Now, as ``/proc/<pid>/stat`` gives a process's start time: clock ticks since boot (rounded
    down, so a process started from now on never counts as earlier); None where there is no such
    clock."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is None:
        return None
    return int(time.clock_gettime(boottime) * _CLOCK_TICKS)


def is_alive(pid: int) -> bool:
    """``pid`` exists and is not exiting: not a zombie, and not in the middle of its exit (an xdist
    worker's pipes close while it exits, before it is a zombie)."""
    found = _stat(pid)
    return found is not None and found[0] not in ("Z", "X") and not found[2] & PF_EXITING


def _not_ended(pid: int) -> bool:
    """``pid`` exists and is not a zombie yet (one in the middle of its exit too: it cannot be
    reaped until it is one)."""
    found = _stat(pid)
    return found is not None and found[0] not in ("Z", "X")


# _marker's answer for a process in the middle of an exec: its new program's environment is not
# set up yet, and reads as empty until it is (a few microseconds; longer on a loaded machine).
_PENDING = "\0pending"
PF_KTHREAD = 0x00200000  # in /proc/<pid>/stat's flags: a kernel thread (no environment, ever)


def _environ_pending(pid: int) -> bool | None:
    """For ``pid``, whose environment just read as empty: True when it is in the middle of an exec
    (its new memory's environment end, ``/proc/<pid>/stat``'s field 51, is still 0); False when it
    has no environment to wait for (a kernel thread, a zombie, one exiting, or this cannot be told:
    gone, a kernel before 3.5); None otherwise: an exec ended between the two reads, or is just
    setting it up, or it is empty indeed (read it again)."""
    try:
        fields = _read_proc(f"/proc/{pid}/stat").rpartition(")")[2].split()
        flags, env_end = int(fields[6]), int(fields[48])
    except (OSError, IndexError, ValueError):
        return False
    if fields[0] in ("Z", "X") or flags & (PF_KTHREAD | PF_EXITING):  # no memory: no environment
        return False
    return True if env_end == 0 else None


def _marker(pid: int) -> str | None:
    """The value of :data:`MARKER` in ``pid``'s environment (None: not set, or not readable), or
    ``_PENDING`` when ``pid`` is in the middle of an exec: its environment is readable once that
    is done (and still holds the marker unless the exec cleared it)."""
    prefix = MARKER.encode() + b"="
    for _ in range(3):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            return None
        if environ:
            for entry in environ.split(b"\0"):
                if entry.startswith(prefix):
                    return entry[len(prefix) :].decode(errors="replace")
            return None
        pending = _environ_pending(pid)
        if pending is not None:
            return _PENDING if pending else None
    return None  # an empty environment


def _children() -> list[int]:
    """The pids of this process's children (of all its threads)."""
    try:  # /proc/self: this process (its thread group), as os.getpid() would name it
        tasks = os.listdir("/proc/self/task")
        return [int(p) for t in tasks for p in _read_proc(f"/proc/self/task/{t}/children").split()]
    except OSError:  # a kernel without the children files: the slow way
        me = os.getpid()
        return [pid for pid in _all_pids() if (found := _stat(pid)) is not None and found[1] == me]


def _all_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _kill(pid: int) -> None:
    """SIGKILL ``pid`` and, when it leads one, its process group."""
    with contextlib.suppress(OSError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _kill_children_of(parents: list[int]) -> list[int]:
    """SIGKILL the children of ``parents`` (killed, not ended: a child's pid stays its own until its
    parent reaps it, which these cannot now) and return their pids."""
    wanted = set(parents)
    found = [pid for pid in _all_pids() if (stat := _stat(pid)) is not None and stat[1] in wanted]
    for pid in found:
        _kill(pid)
    return found


def pidfds(pids: list[int]) -> list[int] | None:
    """A pidfd of each of ``pids`` that still exists; None where there are no pidfds (a kernel
    before 5.3, a Python built without ``os.pidfd_open``): the caller waits another way."""
    fds = _pidfds_of(pids)
    return None if fds is None else list(fds.values())


def _pidfds_of(pids: list[int]) -> dict[int, int] | None:
    """:func:`pidfds`, each under its pid: a pid left out had already been reaped."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    fds: dict[int, int] = {}
    for pid in pids:
        try:
            fds[pid] = pidfd_open(pid)
        except ProcessLookupError:
            pass
        except OSError:
            _close_all(fds.values())
            return None
    return fds


def _close_all(fds: Iterable[int]) -> None:
    for fd in fds:
        os.close(fd)


# select.poll takes a C int of milliseconds; longer waits are made of several polls.
MAX_POLL_MS = 2**31 - 1


def wait_pidfds(fds: list[int], timeout: float | None) -> bool:
    """Block until the process of each of ``fds`` (:func:`pidfds`) has terminated or ``timeout``
    (None: no bound) has passed, then close them all; True when they all terminated. A pidfd is
    ready the moment its process terminates and leaves it unreaped, so its pid is still its own
    (a group can still be killed by its id); Popen.wait(timeout) instead polls with sleeps, which
    cost milliseconds on every short command."""
    try:
        return not _poll_pidfds(fds, timeout)
    finally:
        _close_all(fds)


def _poll_pidfds(fds: Iterable[int], timeout: float | None) -> set[int]:
    """Block until the process of each of ``fds`` has terminated or ``timeout`` (None: no bound)
    has passed; return those whose process has not terminated (all closed by the caller)."""
    poller = select.poll()  # not select.select: it refuses descriptors from 1024 on
    left = set(fds)
    for fd in left:
        poller.register(fd, select.POLLIN)
    deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
    while left:
        left_ms = None if deadline is None else max(deadline - time.monotonic(), 0.0) * 1000
        ready = poller.poll(None if left_ms is None else min(left_ms, MAX_POLL_MS))
        for fd, _ in ready:
            poller.unregister(fd)
            left.discard(fd)
        if not ready and left_ms is not None and left_ms <= MAX_POLL_MS:
            break
    return left


def _wait_dead(pids: list[int], fds: dict[int, int] | None) -> None:
    """Block until every one of ``pids`` (SIGKILLed) has terminated, at most :data:`KILL_WAIT_S` in
    all: through ``fds`` (their :func:`_pidfds_of`, left open), or without those by looking every
    10 ms."""
    if fds is not None:
        _poll_pidfds(fds.values(), KILL_WAIT_S)
        return
    deadline = time.monotonic() + KILL_WAIT_S
    while time.monotonic() < deadline and any(_not_ended(pid) for pid in pids):
        time.sleep(0.01)


def _stuck(pids: list[int], fds: dict[int, int] | None, held: set[int]) -> list[int]:
    """Those of ``pids`` (SIGKILLed, waited for) that have not terminated, asked under the lock of
    each one's pidfd (``fds``, left open) where there is one: a pid alone may be another process's
    by now (another thread's command end reaps what is in ``unreaped``, and a new process may get
    its pid), whose children must not be killed. Without pidfds only the pids in ``held`` count:
    this process's children still unreaped (reaped only under the lock), and the children of a
    stuck process (their parent, killed, cannot reap them)."""
    if fds is None:
        return [pid for pid in pids if pid in held and _not_ended(pid)]
    running = _poll_pidfds(fds.values(), 0)
    return [pid for pid, fd in fds.items() if fd in running]


class _Running:
    """The commands this process runs at the moment, from any of its threads: the subreaper is on
    while any runs, and one command's end kills only what none of the others can have started."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # held from a command's start or end until its scan is done
        self.commands: dict[Orphans, int | None] = {}  # each with its `since` once it started
        self.first: int | None = None  # the earliest `since` since no command was running
        self.was_subreaper = False  # before the first of them began
        # Children killed and not yet reaped, however long they take to die: reaped at a later
        # command's end (a scan skips them), under the lock, never waited for in it.
        self.unreaped: set[int] = set()


# On the ``sys`` module, as the watcher's state (see :data:`_STATE_ATTRIBUTE`): one for the process,
# whichever copy of this module a command runs through (an in-process pytester run imports another).
_RUNNING_ATTRIBUTE = "_pytest_vibeeval_commands"


def _running() -> _Running:
    running = getattr(sys, _RUNNING_ATTRIBUTE, None)
    if running is None:  # setdefault: two threads that both found none get the same one
        running = vars(sys).setdefault(_RUNNING_ATTRIBUTE, _Running())
    return cast("_Running", running)


class Orphans:
    """What one command leaves behind: ``with Orphans() as orphans:`` call :meth:`starting` right
    before the command starts, wait for it and reap it; on leaving, every child of this process that
    started no earlier than the command (re-parented here: it escaped the command's process group
    and its parent exited) is killed and reaped, until none is left. One that has not died within
    :data:`KILL_WAIT_S` (stuck in the kernel: a hung mount) or cannot be reaped (traced) is noted
    (:class:`ReapNote`) and reaped at a later command's end; no other command waits for it.

    Commands run from several threads at once share this process, and a re-parented process does
    not say which command it came from: a command's end kills only the children that started
    before every command still running did (none of those can be theirs); the rest wait until the
    last command running ends. (Any other child of this process that started meanwhile counts too,
    one a thread started without :func:`~pytest_vibeeval.process.run_command` included.)"""

    def __init__(self) -> None:
        self.since: int | None = None  # boot time (clock ticks) just before the command started

    def starting(self) -> None:
        """The command starts now: what starts from here on may be its orphan. The moment is read
        from the clock ``/proc/<pid>/stat`` counts start times in (boot time, in clock ticks), not
        from the new process's stat file: reading that waits while the process is still mapping
        its program in, most of a millisecond for every command."""
        running = _running()
        with running.lock:  # not while another command's end scans: its window is decided first
            self.since = since = _boot_ticks()
            running.commands[self] = since
            if since is not None and (running.first is None or since < running.first):
                running.first = since

    def __enter__(self) -> Orphans:
        running = _running()
        with running.lock:
            if not running.commands:
                running.was_subreaper = _subreaper()
                if not running.was_subreaper:
                    _make_subreaper(True)
                running.first = None
            running.commands[self] = None
        return self

    def __exit__(self, *exc: object) -> None:
        running = _running()
        killed: list[int] = []
        reasons: list[str] = []
        fds: dict[int, int] | None = None
        try:
            with running.lock:
                running.commands.pop(self, None)
                dying = self.reap()
                fds = _pidfds_of(dying) if dying else None  # while their pids are theirs: none is reaped yet
                if dying:
                    # Counted again while it waits, with no start (no bound on the others' windows):
                    # the subreaper stays on, and re-parents the children of what it killed here.
                    running.commands[self] = None
            later: list[int] = []  # children of stuck processes, killed: not this process's
            while dying:
                killed += dying
                # Without the lock: they may take long to die, and no other command waits for that.
                _wait_dead(dying, fds)
                with running.lock:
                    # Those that did not die (stuck in the kernel) keep their children, which are re-
                    # parented here only when they end, maybe after this command, outside its window.
                    stuck = _stuck(dying, fds, running.unreaped | set(later))
                    if fds is not None:
                        _close_all(fds.values())
                        fds = None
                    later = _kill_children_of(stuck) if stuck else []
                    dying = self.reap() + later
                    fds = _pidfds_of(dying) if dying else None
        finally:
            if fds is not None:  # an exception in the wait: nothing closed them
                _close_all(fds.values())
            # One section to the end, the notes after it: a command starting in between would find
            # none running and this process still a subreaper, and keep it one for good.
            with running.lock:
                running.commands.pop(self, None)
                reasons = [_unreaped_reason(pid) for pid in killed if pid in running.unreaped]
                if not running.commands and not running.was_subreaper:
                    _make_subreaper(False)
        for reason in reasons:  # why each killed process that cannot be reaped yet is not
            note(ReapNote(reason), stacklevel=2)

    def reap(self) -> list[int]:
        """Reap what was killed and has died; kill the children that started since the first
        command of those run at once began and before any command still running did, and return
        their pids (the caller holds the lock, and waits for them to die without it)."""
        running = _running()
        unreaped = running.unreaped
        if unreaped:
            for pid in list(unreaped):
                with contextlib.suppress(ChildProcessError):
                    if os.waitpid(pid, os.WNOHANG)[0] == 0:
                        continue
                unreaped.discard(pid)  # reaped (or by something else): its pid may be reused now
        if _PRCTL is None or running.first is None:
            return []
        since, watcher = running.first, watcher_pid()  # the watcher is never a command's: its stat unread
        starts = [start for start in running.commands.values() if start is not None]
        until = min(starts) if starts else None
        found = [
            pid
            for pid in _children()
            if pid != watcher
            and (stat := _stat(pid)) is not None
            and since <= stat[3]
            and (until is None or stat[3] < until)
        ]
        if found:
            if unreaped:  # killed already: each a child until reaped, so its pid is still its own
                found = [pid for pid in found if pid not in unreaped]
            for pid in found:  # killing one re-parents its children here: the caller looks again after
                _kill(pid)
                unreaped.add(pid)
        return found


class ReapNote(UserWarning):
    """A process a command left running was killed but could not be reaped (shown in pytest's
    warnings summary)."""


def _unreaped_reason(pid: int) -> str:
    """What keeps ``pid`` (a child, killed) from being reaped, and what to do (its status read
    under the lock: not yet reaped, the pid is still its own)."""
    fields = {}
    with contextlib.suppress(OSError):
        for line in _read_proc(f"/proc/{pid}/status").splitlines():
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    what = f"process {pid} ({fields.get('Name', '?')}), which a command left running, was killed but"
    tracer = fields.get("TracerPid", "0")
    if tracer != "0":
        why = f"cannot be reaped yet: process {tracer} traces it and has not let it go: end that tracer"
    else:
        why = (
            f"has not ended within {KILL_WAIT_S:g} s: it is in state {fields.get('State', 'unknown')};"
            " a process in state D waits in the kernel (a hung network or FUSE mount, a failing disk), and"
            f" /proc/{pid}/stack and /proc/{pid}/wchan say where: recover or force-unmount (umount -f,"
            " umount -l) what it waits on"
        )
    after = "It is reaped once it has ended, at a later command's end (or goes with this pytest process)."
    return f"{what} {why}. {after}"


def _identity(pid: int) -> str | None:
    """``pid:start time`` (``/proc/<pid>/stat``'s field 22): the value of :data:`MARKER` naming
    ``pid``, which a later process given the same pid does not match. None when ``pid`` is gone."""
    found = _stat(pid)
    return None if found is None else f"{pid}:{found[3]}"


def _owner_is_gone(marker: str) -> bool:
    """Whether the process a :data:`MARKER` value names has terminated (or its pid is another
    process's now)."""
    pid, _, start = marker.partition(":")
    if not pid.isdigit():
        return False
    if not is_alive(int(pid)):
        return True
    return bool(start) and _identity(int(pid)) != marker


def child_marker(pid: int) -> str | None:
    """The :data:`MARKER` value of this process's child ``pid`` (an xdist worker on this machine);
    None when ``pid`` is not a child of this process (a worker on another machine, or started
    through another gateway: its pid means nothing here)."""
    found = _stat(pid)
    return _identity(pid) if found is not None and found[1] == os.getpid() else None


def marked(env: Mapping[str, str] | None) -> dict[str, str]:
    """``env`` (None: this process's environment) with :data:`MARKER` naming this process (its pid
    and start time), so that the controller, or this process's watcher (started here, once), can
    end what is left of the command if this process dies."""
    start_watcher()
    me = os.getpid()
    state = _state()
    identity = state.get("marker") if state.get("owner") == me else None
    return {**(os.environ if env is None else env), MARKER: identity or _identity(me) or str(me)}


def end_lost_workers_processes(owner: str) -> None:
    """End what the process ``owner`` names (a :data:`MARKER` value, ``pid:start time``) left
    running, once it has terminated: the processes whose marker is exactly ``owner`` and the pids
    cgroups that pid made (see :func:`~pytest_vibeeval.workspace.cgroups.remove_abandoned`). For
    its watcher, and for the controller after an xdist worker died. Nothing else: a marker naming
    a pid of another pid namespace (a container's, a sandbox's) may look like a dead process's."""
    if not sys.platform.startswith("linux"):
        return
    if not _owner_is_gone(owner):
        return
    owner_pid = int(owner.partition(":")[0])
    remove_abandoned(lambda pid: pid != owner_pid)  # that pid's cgroups: no other's that looks free
    me = os.getpid()
    generations = 0
    # From when a scan first finds a process in the middle of an exec, and again after each kill:
    # the kill wait (up to KILL_WAIT_S) must not use up the next scan's time for such a process.
    pending_until: float | None = None
    looking_at: list[int] | None = None  # only these (caught in an exec); None: every process
    while generations < 100:  # killing a process may free the next generation; bounded, just in case
        lost, pending = [], []
        for pid in _all_pids() if looking_at is None else looking_at:
            marker = _marker(pid)
            if pid == me or marker is None or marker.partition(":")[0] == str(me):
                continue
            if marker == _PENDING:
                pending.append(pid)
            elif marker == owner and is_alive(pid):
                lost.append(pid)
        if lost:
            generations += 1
            pending_until, looking_at = None, None
            for pid in lost:
                _kill(pid)
            fds = _pidfds_of(lost)
            try:
                _wait_dead(lost, fds)
            finally:
                _close_all(() if fds is None else fds.values())
        elif not pending:
            if looking_at is None:
                return
            # Each caught in an exec has been told, none of them lost: one more look at every
            # process, for what one of them started before its exec cleared its marker.
            looking_at = None
        else:  # a process in the middle of an exec may be one of them: look again once it is done
            if pending_until is None:
                pending_until = time.monotonic() + PENDING_WAIT_S
            elif time.monotonic() > pending_until:
                return
            looking_at = pending  # not all of /proc every 10 ms, for any process of this user that execs
            time.sleep(0.01)


# The package's folder, for the watcher's import of this module (it runs with -I -S: no site).
_ROOT = str(Path(__file__).resolve().parent.parent)
# Appended, not inserted first: that folder is site-packages for an installed wheel, and a module
# there named as one of the stdlib's (an old backport) must not shadow it.
_WATCHER_CODE = (
    "import sys; sys.path.append(sys.argv[1]); from pytest_vibeeval.reaping import watch; watch(sys.argv[2])"
)
# The watcher's state lives on the ``sys`` module under this name, not in a global of this module:
# an in-process pytester run drops the modules it imported, and this one imported again would not
# know the watcher already running (and leak its pipe end, that watcher waiting on forever).
_STATE_ATTRIBUTE = "_pytest_vibeeval_watcher"


def _state() -> dict[str, Any]:
    """The watcher's state: ``owner`` (the pid that started it), ``fd`` (the pipe's write end) and
    ``pipe`` (that pipe's device and inode), ``process`` (its Popen), ``failed`` (a watcher of this
    process ended with an error: none is started again)."""
    state = getattr(sys, _STATE_ATTRIBUTE, None)
    if state is None:
        state = {}
        setattr(sys, _STATE_ATTRIBUTE, state)
    return cast("dict[str, Any]", state)


def _forget_in_child() -> None:
    """After a fork: the child does not hold its parent's pipe end (which would keep the parent's
    watcher waiting until the child ends too), and has no watcher of its own yet. It runs no
    command yet either, is no subreaper (a fork does not pass that on), and must not wait for a
    lock another thread of its parent held."""
    state = _state()
    _close_pipe_end(state)
    state.clear()
    with contextlib.suppress(AttributeError):
        delattr(sys, _RUNNING_ATTRIBUTE)


def _pipe_identity(fd: int) -> tuple[int, int] | None:
    try:
        found = os.fstat(fd)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _close_pipe_end(state: dict[str, Any]) -> None:
    """Close this process's end of its watcher's pipe, unless something else closed it already
    (code that closes every descriptor it does not know, as a daemon does): its number may be
    another file's by now, which must stay open."""
    fd, pipe = state.pop("fd", None), state.get("pipe")
    if fd is not None and (pipe is None or _pipe_identity(fd) == pipe):  # None: it could not be told
        with contextlib.suppress(OSError):
            os.close(fd)


if hasattr(os, "register_at_fork") and not getattr(sys, _STATE_ATTRIBUTE + "_fork", False):
    os.register_at_fork(after_in_child=_forget_in_child)
    setattr(sys, _STATE_ATTRIBUTE + "_fork", True)


def watcher_pid() -> int | None:
    """The pid of this process's watcher, or None when it has none (a forked child has none)."""
    state = _state()
    if state.get("owner") != os.getpid() or "process" not in state:
        return None
    return cast("int", state["process"].pid)


def _watcher_running() -> bool:
    """Whether this process has a watcher that is still running, or should not start one; unlike
    :func:`_watched`, changes nothing: for a look without the lock."""
    state = _state()
    if state.get("owner") != os.getpid():
        return False
    process = state.get("process")
    return bool(state.get("failed")) or (process is not None and process.poll() is None)


def _watched() -> bool:
    """Whether this process has a watcher that is still running, or should not start one (one
    ended with an error: it would fail again at every command). One that ended is reaped and
    forgotten: under the lock (two threads that both found it ended would both forget it, the
    second maybe the new one the first started)."""
    state = _state()
    if state.get("owner") != os.getpid():
        return False
    if state.get("failed"):
        return True
    process = state.get("process")
    if process is None:  # the last one could not start (no process to spare): try again
        return False
    if process.poll() is None:
        return True
    _close_pipe_end(state)
    state["failed"] = state.pop("process").returncode > 0  # killed by a signal: start another
    return bool(state["failed"])


def _watcher_argv() -> list[str]:
    """The watcher's command line: its code, the package's folder and this process's marker."""
    me = os.getpid()
    return [sys.executable, "-I", "-S", "-c", _WATCHER_CODE, _ROOT, _identity(me) or str(me)]


def start_watcher() -> None:
    """Start this process's watcher unless one is running (Linux only: elsewhere it has nothing to
    scan). Its stdin is a pipe whose other end only this process holds (not inheritable, so neither
    agents nor xdist workers get it): it reads end of file once this process has ended, however. In
    a session of its own, a signal to pytest's process group does not reach it; its output goes
    nowhere, so that nothing waiting for pytest's output waits for it. Its environment has no
    :data:`MARKER`: no other process's watcher counts it among what that process left."""
    if _watcher_running() or not sys.platform.startswith("linux") or not sys.executable:
        return
    with _running().lock:  # no command's end scans between its start and the record of its pid
        if _watched():  # another thread's command started one meanwhile
            return
        read_end, write_end = os.pipe()
        try:
            process = subprocess.Popen(
                argv := _watcher_argv(),
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,
                # Without the marker its starter may have inherited (a runner started by another's
                # agent): the outer runner's watcher would kill it with that runner, and leave this
                # process's agents running.
                env={name: value for name, value in os.environ.items() if name != MARKER},
                cwd="/",  # holds no folder of the session's (a temporary one, a mount) open
            )
        except OSError:  # no process to spare: commands still run, unwatched
            os.close(write_end)
            return
        finally:
            os.close(read_end)
        state = _state()
        state.clear()
        state.update(
            owner=os.getpid(), fd=write_end, pipe=_pipe_identity(write_end), process=process, marker=argv[-1]
        )


def watch(owner: str) -> None:
    """The watcher of the process ``owner`` names (a :data:`MARKER` value): wait until the pipe on
    stdin has no writer left (that process has ended, normally or killed), then end what it left
    running: the processes whose marker is ``owner`` and its pids cgroups, nothing else."""
    with contextlib.suppress(OSError):
        while os.read(0, 4096):  # nothing is ever written
            pass
    end_lost_workers_processes(owner)
