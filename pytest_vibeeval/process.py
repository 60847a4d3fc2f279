"""Run external commands safely.

Output goes to files (never pipes, so no deadlock and no unbounded memory), every command runs in
its own process group (and its own session when this process has a controlling terminal), timeouts
apply to the whole group, and the group is always killed and the leader reaped before returning,
whatever happened in between.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .bounded_read import UnreadableFile, read_end, read_start
from .masking import CUT
from .reaping import Orphans, pidfds, wait_pidfds
from .surrogates import utf8_bytes
from .workspace.cgroups import ProcessLimit, process_limit

__all__ = [
    "ArgumentsTooLong",
    "CannotStart",
    "CommandNotFound",
    "CommandResult",
    "FilesNotWritten",
    "UnpassableArgument",
    "read_head",
    "read_tail",
    "resolve_executable",
    "run_command",
]


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one `run_command` call; the output itself stays in files."""

    argv: tuple[str, ...]
    cwd: str
    exit_code: int | None
    """Return code (negative = killed by that signal); None if killed because of the timeout."""
    duration: float
    timed_out: bool
    stdout_path: Path
    stderr_path: Path

    def output_size(self) -> int:
        """Size of the stdout file in bytes (0 if it no longer exists)."""
        try:
            return self.stdout_path.stat().st_size
        except FileNotFoundError:
            return 0


class CommandNotFound(Exception):
    """The executable does not exist or is not executable."""

    def __init__(self, name: str, reason: str = "looked in PATH") -> None:
        # Both parts go to Exception.args so the exception pickles and unpickles faithfully.
        super().__init__(name, reason)
        self.name = name
        self.reason = reason

    def __str__(self) -> str:
        return f"command not found: {self.name!r} ({self.reason})"


class CannotStart(CommandNotFound):
    """The command exists but could not be started (``reason`` says why). A CommandNotFound, so
    that callers reporting an executable that cannot run report this too."""

    def __str__(self) -> str:
        return f"cannot start {self.name!r}: {self.reason}"


class ArgumentsTooLong(CannotStart):
    """The system refused to start the command: its arguments (with the environment) exceed the
    kernel's limit (E2BIG)."""


class FilesNotWritten(CannotStart):
    """The files the command reads its input from and writes its output to could not be made (a
    full disk, a file-size limit)."""


class UnpassableArgument(CannotStart):
    """An argument or an environment variable holds a NUL character, which no command line and no
    environment can carry (the system ends a string at it)."""


def _args_nul_reason(args: Sequence[str]) -> str | None:
    """Why ``args`` cannot be passed to a command: the first argument that holds a NUL."""
    for index, arg in enumerate(args[1:], 1):
        if "\x00" in arg:
            return f"argument {index} holds a NUL character (\\x00), which no command line can carry"
    return None


def _env_nul_reason(env: Mapping[str, str]) -> str | None:
    """Why ``env`` cannot be given to a command: the first variable that holds a NUL."""
    for name, value in env.items():
        if "\x00" in name or "\x00" in value:
            return (
                f"the environment variable {name!r} holds a NUL character (\\x00), which no "
                "environment can carry"
            )
    return None


class _ChildEnvironment:
    """A command's environment as the child gets it (UTF-8 bytes, whatever the locale), or why it
    cannot be given (a NUL), remembered for the last environment asked for: an agent gets the same
    one for every eval, and comparing it costs less than checking and encoding every variable.
    Kept after the command: what it holds, secrets included, this process holds anyway while the
    configuration is in use (``os.environ``, the configuration's ``env``, the suite's MCP token);
    only its bytes are needed to reuse it, so no fingerprint could stand in for it."""

    def __init__(self) -> None:
        # (the environment, as bytes, why it cannot be given): replaced whole, never changed
        self._last: tuple[dict[str, str], dict[bytes, bytes], str | None] = ({}, {}, None)

    def __call__(self, env: Mapping[str, str]) -> tuple[dict[bytes, bytes], str | None]:
        last = self._last
        if env != last[0]:
            unpassable = _env_nul_reason(env)
            encoded = {} if unpassable else {utf8_bytes(k): utf8_bytes(v) for k, v in env.items()}
            last = self._last = (dict(env), encoded, unpassable)
        return last[1], last[2]


_child_environment = _ChildEnvironment()


def _os_args(args: Sequence[str]) -> list[bytes]:
    """The arguments as the child gets them: UTF-8 whatever this process's locale (a file system
    encoding of ASCII, in the C locale without Python's UTF-8 mode, could not encode them)."""
    return [utf8_bytes(arg) for arg in args]


# Linux refuses any one argument (or environment string) of this many bytes or more, its final NUL
# counted: 32 pages (MAX_ARG_STRLEN), whatever the stack limit. Other systems limit only the total.
MAX_ARG_STRLEN = 32 * 4096 if sys.platform.startswith("linux") else 2**62


def arg_max() -> int | None:
    """The system's limit on the arguments and the environment together (``getconf ARG_MAX``)."""
    with contextlib.suppress(ValueError, OSError):
        return os.sysconf("SC_ARG_MAX")
    return None


def _too_long_reason(args: Sequence[str], env: Mapping[bytes, bytes] | None) -> str:
    """Why the system refused ``args`` with E2BIG: the argument over the limit on one argument,
    else the arguments and the environment over the limit on both together."""
    sizes = [len(arg) for arg in _os_args(args)]
    longest = max(range(len(sizes)), key=sizes.__getitem__)
    what = f"argument list too long for the system (E2BIG): {sum(sizes)} bytes of arguments"
    if sizes[longest] + 1 > MAX_ARG_STRLEN:
        return (
            f"{what}; argument {longest} alone is {sizes[longest]} bytes, and Linux takes at most "
            f"{MAX_ARG_STRLEN - 1} bytes in one argument (MAX_ARG_STRLEN)"
        )
    environment = os.environb if env is None else env
    strings = {key: len(key) + len(value) + 1 for key, value in environment.items()}  # NAME=value
    widest = max(strings, key=strings.__getitem__, default=None)
    if widest is not None and strings[widest] + 1 > MAX_ARG_STRLEN:
        return (
            f"{what}; the environment variable {widest.decode(errors='replace')} alone is "
            f"{strings[widest]} bytes, and Linux takes at most {MAX_ARG_STRLEN - 1} bytes in one "
            "(MAX_ARG_STRLEN)"
        )
    env_size = sum(strings.values()) + len(strings)
    limit = arg_max()
    return (
        f"{what} and {env_size} bytes of environment, the longest argument {sizes[longest]} bytes; "
        f"the system takes at most {limit or 'ARG_MAX'} bytes of both together (ARG_MAX, a quarter "
        "of the stack limit `ulimit -s`)"
    )


def _soft_limit(limit: int) -> str:
    value = resource.getrlimit(limit)[0]
    return "unlimited" if value == resource.RLIM_INFINITY else str(value)


def _start_problem(exc: OSError) -> str:
    """Why the system could not start a command (``Popen`` raised ``exc``), and what helps when
    it is one of the limits on processes, files or memory."""
    if exc.errno == errno.EAGAIN:
        return (
            "the system refused to start another process (EAGAIN): the limit on processes is "
            f"reached (this user's `ulimit -u` is {_soft_limit(resource.RLIMIT_NPROC)}; a container's or "
            "cgroup's pids.max counts too); raise it, or run fewer processes at once (fewer "
            "xdist workers, a lower `vibe_max_processes`)"
        )
    if exc.errno == errno.EMFILE:
        return (
            "this process has too many files open (EMFILE; its `ulimit -n` is "
            f"{_soft_limit(resource.RLIMIT_NOFILE)}): raise it, e.g. `ulimit -n 4096` before pytest"
        )
    if exc.errno == errno.ENFILE:
        return (
            "the system's table of open files is full (ENFILE): close files elsewhere, or raise fs.file-max"
        )
    if exc.errno == errno.ENOMEM:
        return "not enough memory to start it (ENOMEM)"
    return f"{exc.strerror or exc} ({errno.errorcode.get(exc.errno or 0, 'OSError')})"


def resolve_executable(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """Absolute path of `name` using PATH from env (or os.environ), or the path itself if it
    contains a slash and is executable; None if not found."""
    if not name:
        return None
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    source = os.environ if env is None else env
    # Like execvp: a child environment without PATH searches the default path.
    found = shutil.which(name, path=source.get("PATH", os.defpath))
    return os.path.abspath(found) if found else None


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    # ProcessLookupError: group already gone; PermissionError: some kernels, only zombies left.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _exited_within(proc: subprocess.Popen[bytes], timeout: float | None) -> bool:
    """Block until the leader exits or `timeout` passes; True if it exited. With a pidfd (Linux)
    the leader is left unreaped (see :func:`~pytest_vibeeval.reaping.wait_pidfds`)."""
    fds = pidfds([proc.pid])
    if fds is not None:
        return wait_pidfds(fds, timeout)
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def _wait(proc: subprocess.Popen[bytes], timeout: float | None, grace: float) -> bool:
    """Wait for the leader; on timeout TERM then KILL the group. Returns True if it timed out."""
    if _exited_within(proc, timeout):
        return False
    _signal_group(proc.pid, signal.SIGTERM)
    if not _exited_within(proc, max(grace, 0.0)):
        _signal_group(proc.pid, signal.SIGKILL)
    return True


class _Terminal:
    """Whether this process has a controlling terminal, asked of ``/dev/tty`` once per session id
    rather than before every command (an open of a device on every agent's start). Only a session's
    leader acquires a terminal for it: a process that is not the leader keeps its answer, unless it
    leaves the session (``setsid``: the id compared here changes). A leader without a terminal
    asks every time, as it may open one. An answer of yes is kept after a hangup took the terminal
    away: commands keep getting sessions of their own, which keeps them from a terminal all the
    same. A forked child shares its parent's session and terminal, so the answer holds there too."""

    def __init__(self) -> None:
        self._known: tuple[int, bool] | None = None  # (session id, answer)

    def __call__(self) -> bool:
        sid = os.getsid(0)
        known = self._known
        if known is not None and known[0] == sid:
            return known[1]
        answer = _asks_terminal()
        if answer or sid != os.getpid():
            self._known = (sid, answer)
        return answer


def _asks_terminal() -> bool:
    """Whether this process has a controlling terminal; True when that cannot be told."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return exc.errno != errno.ENXIO  # ENXIO: this session has none
    os.close(fd)
    return True


_has_terminal = _Terminal()


def _prefilled_pipe(data: bytes) -> int | None:
    """The read end of a pipe already holding all of `data` and closed for writing, or None when
    `data` does not fit in the pipe's buffer (then stdin comes from a file instead). Saves two
    file operations per command, which matters for short evals."""
    if len(data) > 16384:
        return None
    read_end, write_end = os.pipe()
    try:
        os.set_blocking(write_end, False)
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view) :]
    except BlockingIOError:
        os.close(read_end)
        return None
    finally:
        os.close(write_end)
    return read_end


_OUTPUT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC  # as open(path, "wb")


def _output_descriptor(path: Path, files: list[int]) -> int:
    """``path`` created (or emptied) for writing; its descriptor is added to ``files``."""
    fd = os.open(path, _OUTPUT_FLAGS, 0o666)
    files.append(fd)
    return fd


def _stdin_descriptor(text: str | None, stdout_path: Path, files: list[int]) -> int:
    """What the child reads: ``text`` in a prefilled pipe, or when too long for one in the
    ``.stdin`` file beside ``stdout_path``; /dev/null (subprocess.DEVNULL) without text. A
    descriptor made here is added to ``files``."""
    if text is None:
        return subprocess.DEVNULL
    data = utf8_bytes(text)
    fd = _prefilled_pipe(data)
    if fd is None:
        path = stdout_path.with_suffix(".stdin")
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    files.append(fd)
    return fd


def run_command(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    name: str = "command",
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    stdin_text: str | None = None,
    grace: float = 2.0,
    max_processes: int = 0,
    checked: bool = False,
) -> CommandResult:
    """Run `argv` until it exits or times out; output goes to `output_dir/<name>.stdout|.stderr`.

    `env` is the child's complete environment (None inherits os.environ). On timeout the whole
    process group gets SIGTERM, then SIGKILL after `grace` seconds. In every case (normal exit,
    timeout, exception, KeyboardInterrupt) the group is SIGKILLed and the leader reaped before
    this returns or re-raises. Raises CommandNotFound if the executable cannot be run, and its
    subclasses ArgumentsTooLong if the arguments exceed the system's limit and FilesNotWritten if
    its input and output files cannot be written.

    ``max_processes`` > 0 runs the command in a pids cgroup of its own where this machine allows
    one (see :mod:`pytest_vibeeval.workspace.cgroups`): at most that many processes at once, and every one
    left, even outside the process group, killed at the end. Without one, what left the group
    (``setsid``, a double fork) is killed and reaped too, on Linux (see :mod:`pytest_vibeeval.reaping`).

    ``checked``: the caller has just found ``argv[0]``, an absolute path, to be an executable file
    (:func:`resolve_executable`), so it is not looked at again (were it gone since, the start fails
    with CommandNotFound all the same).
    """
    args = tuple(argv)
    if not args:
        raise ValueError("argv must not be empty")
    if not name or "/" in name or name in {".", ".."}:
        raise ValueError(f"invalid output file stem: {name!r}")
    cwd_str = os.fspath(cwd)
    if not os.path.isdir(cwd_str):
        # Checked up front: Popen would report this as a FileNotFoundError about the command.
        raise NotADirectoryError(f"working directory is not a directory: {cwd_str!r}")

    child_env, unpassable = (None, None) if env is None else _child_environment(env)
    unpassable = _args_nul_reason(args) or unpassable  # an argument's NUL is named first
    if unpassable:
        raise UnpassableArgument(args[0], unpassable)
    target = args[0]
    if "/" in target and not os.path.isabs(target):
        target = os.path.join(cwd_str, target)  # relative paths are relative to the child's cwd
    executable = target if checked and os.path.isabs(target) else resolve_executable(target, env)
    if executable is None:
        if "/" in target:
            raise CommandNotFound(args[0], "not an executable file")
        raise CommandNotFound(args[0], "looked in PATH")
    out = Path(output_dir)
    if os.fspath(output_dir) != cwd_str and not out.is_dir():  # the cwd was just checked
        out.mkdir(parents=True, exist_ok=True)
    stdout_path = out / f"{name}.stdout"
    stderr_path = out / f"{name}.stderr"

    limit = process_limit(max_processes) if max_processes > 0 else None
    orphans = Orphans()
    with orphans:
        proc, timed_out, start = _run(args, executable, cwd_str, child_env, stdin_text,
                                      (stdout_path, stderr_path), limit, orphans, timeout, grace)  # fmt: skip
        duration = time.monotonic() - start
    return CommandResult(
        argv=args,
        cwd=cwd_str,
        exit_code=None if timed_out else proc.returncode,
        duration=duration,
        timed_out=timed_out,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
    )


def _run(
    args: tuple[str, ...],
    executable: str,
    cwd_str: str,
    env: dict[bytes, bytes] | None,
    stdin_text: str | None,
    outputs: tuple[Path, Path],
    limit: ProcessLimit | None,
    orphans: Orphans,
    timeout: float | None,
    grace: float,
) -> tuple[subprocess.Popen[bytes], bool, float]:
    """Start the command, wait for it, kill its group and reap it; (the process, whether it timed
    out, when it started: time.monotonic()). ``outputs``: the stdout and stderr files."""
    stdout_path, stderr_path = outputs
    program = os.path.abspath(executable)
    proc: subprocess.Popen[bytes] | None = None
    start = time.monotonic()
    try:
        # Plain descriptors, not file objects: each of those costs more system calls. The parent's
        # copies are closed as soon as the child has its own.
        files: list[int] = []
        try:
            try:
                stdin = _stdin_descriptor(stdin_text, stdout_path, files)
                stdout = _output_descriptor(stdout_path, files)
                stderr = _output_descriptor(stderr_path, files)
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE):  # no file can be opened: not the folder's fault
                    raise CannotStart(args[0], _start_problem(exc)) from exc
                reason = (
                    f"cannot write its input and output files in {stdout_path.parent}: {exc.strerror or exc}"
                )
                raise FilesNotWritten(args[0], reason) from exc
            # A session of its own only keeps a terminal from the command: without one, a process
            # group of its own is the same to it and to the group kill. On Linux a new session is
            # also a new scheduler autogroup, which on a busy machine waits behind every other
            # session for a CPU: milliseconds at each of a short command's wake-ups.
            own_session = _has_terminal()
            start = time.monotonic()
            orphans.starting()
            try:
                proc = subprocess.Popen(
                    _os_args(limit.wrap([program, *args[1:]]) if limit else args),
                    executable=None if limit else program,
                    cwd=cwd_str,
                    env=env,
                    stdin=stdin,
                    stdout=stdout,
                    stderr=stderr,
                    close_fds=True,
                    start_new_session=own_session,
                    process_group=None if own_session else 0,
                )
            except (FileNotFoundError, PermissionError) as exc:
                raise CommandNotFound(args[0], exc.strerror or "cannot execute") from exc
            except OSError as exc:
                if exc.errno == errno.E2BIG:
                    raise ArgumentsTooLong(args[0], _too_long_reason(args, env)) from exc
                raise CannotStart(args[0], _start_problem(exc)) from exc
        finally:
            for fd in files:
                os.close(fd)
        timed_out = _wait(proc, timeout, grace)
    finally:
        if proc is not None:
            # Also after a normal exit: background children may still be running in the group.
            # A new session or process_group=0 makes the leader's pid the process group id.
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        if limit is not None:
            limit.close()
    return proc, timed_out, start


def read_head(path: Path, max_bytes: int) -> tuple[str, bool]:
    """Decode (utf-8, errors='replace') at most max_bytes from the start of the file;
    bool = file was larger. Only a regular file is read (:mod:`.bounded_read`)."""
    max_bytes = max(max_bytes, 0)
    data = read_start(path, max_bytes + 1)
    truncated = len(data) > max_bytes
    # When truncated, a multi-byte character cut in half at the end is dropped, not replaced.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return decoder.decode(data[:max_bytes], final=not truncated), truncated


def tail_lines(outputs: Iterable[tuple[str, Path]], max_lines: int, max_bytes: int = 65536) -> list[str]:
    """For each ``(label, path)`` with output, ``last N lines of <label> (<path>):`` and those
    lines: how a failed command's output is shown, for agents and steps alike. Unreadable files
    are left out."""
    lines: list[str] = []
    for label, path in outputs:
        try:
            tail = read_tail(path, max_lines, max_bytes)
        except (OSError, UnreadableFile):
            continue
        if tail.strip():
            lines.append(f"last {max_lines} lines of {label} ({path}):")
            lines.append(tail.rstrip("\n"))
    return lines


def read_tail(path: Path, max_lines: int = 40, max_bytes: int = 65536) -> str:
    """Last max_lines lines of the file, reading at most max_bytes from its end (never the whole
    file, and only a regular file: :mod:`.bounded_read`)."""
    if max_lines <= 0 or max_bytes <= 0:
        return ""
    # One extra byte before the window tells whether the window starts mid-line.
    data, _ = read_end(path, max_bytes + 1)
    if len(data) > max_bytes:
        cut = data.find(b"\n")
        # Drop the partial first line, unless it is the only line in the window: then mark the cut,
        # so that masking masks a secret's end there too.
        data = data[cut + 1 :] if 0 <= cut < len(data) - 1 else CUT.encode() + data[1:]
    ends_with_newline = data.endswith(b"\n")
    lines = (data[:-1] if ends_with_newline else data).split(b"\n")
    text = b"\n".join(lines[-max_lines:]) + (b"\n" if ends_with_newline else b"")
    return text.decode("utf-8", errors="replace")
