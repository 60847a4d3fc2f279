"""Tests for pytest_vibeeval.process, using real subprocesses."""

from __future__ import annotations

import os
import pickle
import resource
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers import HANGING_TREE_SCRIPT, is_gone, wait_gone

from pytest_vibeeval import process, reaping
from pytest_vibeeval.process import (
    ArgumentsTooLong,
    CannotStart,
    CommandNotFound,
    CommandResult,
    UnpassableArgument,
    read_head,
    read_tail,
    resolve_executable,
    run_command,
)


def _script(tmp_path: Path, body: str, name: str = "script.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def _run(tmp_path: Path, body: str, *args: str, **kwargs: Any) -> CommandResult:
    script = _script(tmp_path, body)
    kwargs.setdefault("cwd", tmp_path)
    kwargs.setdefault("output_dir", tmp_path / "out")
    kwargs.setdefault("timeout", 30)
    return run_command([sys.executable, str(script), *args], **kwargs)


def _assert_gone(pid: int) -> None:
    assert wait_gone(pid, 5), f"pid {pid} is still alive"


def _read_pids(path: Path) -> list[int]:
    assert path.exists(), "script did not record its pids"
    return [int(p) for p in path.read_text().split()]


@pytest.mark.parametrize("code", [0, 3])
def test_exit_code_and_output_files(tmp_path: Path, code: int) -> None:
    body = f"""
        import sys
        print("to stdout")
        print("to stderr", file=sys.stderr)
        sys.exit({code})
    """
    result = _run(tmp_path, body, name="step")
    assert result.exit_code == code
    assert not result.timed_out
    assert result.stdout_path == tmp_path / "out" / "step.stdout"
    assert result.stderr_path == tmp_path / "out" / "step.stderr"
    assert result.stdout_path.read_text() == "to stdout\n"
    assert result.stderr_path.read_text() == "to stderr\n"
    assert result.output_size() == len("to stdout\n")
    assert result.argv[0] == sys.executable
    assert 0 < result.duration < 30


def test_killed_by_signal_gives_negative_exit_code(tmp_path: Path) -> None:
    result = _run(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert result.exit_code == -9
    assert not result.timed_out


def test_stdin_text_is_delivered(tmp_path: Path) -> None:
    body = "import sys; sys.stdout.write(sys.stdin.read().upper())"
    result = _run(tmp_path, body, stdin_text="hello\nwörld\n")
    assert result.stdout_path.read_text(encoding="utf-8") == "HELLO\nWÖRLD\n"
    assert not (tmp_path / "out" / "command.stdin").exists()  # small input: through a pipe


def test_large_stdin_text_goes_through_a_file(tmp_path: Path) -> None:
    text = "x" * 200_000 + "\nend"  # too large to pre-fill a pipe with
    body = "import sys; data = sys.stdin.read(); print(len(data), data[-3:])"
    result = _run(tmp_path, body, stdin_text=text)
    assert result.stdout_path.read_text(encoding="utf-8") == f"{len(text)} end\n"
    assert (tmp_path / "out" / "command.stdin").read_text(encoding="utf-8") == text


def test_no_stdin_reads_eof(tmp_path: Path) -> None:
    result = _run(tmp_path, "import sys; print(repr(sys.stdin.read()))", timeout=10)
    assert not result.timed_out
    assert result.stdout_path.read_text() == "''\n"
    assert not (tmp_path / "out" / "command.stdin").exists()


def test_output_dir_is_created(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    result = _run(tmp_path, "print('x')", output_dir=out)
    assert result.stdout_path.parent == out
    assert result.stdout_path.read_text() == "x\n"


def test_cwd_is_honoured(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = _run(tmp_path, "import os; print(os.getcwd())", cwd=workdir)
    assert result.cwd == str(workdir)
    assert Path(result.stdout_path.read_text().strip()).resolve() == workdir.resolve()


def test_env_is_exactly_what_is_passed(tmp_path: Path) -> None:
    # `env` (not Python) prints the environment verbatim; it is found via the given PATH.
    env = {"PATH": "/usr/bin:/bin", "VIBE_ONLY": "yes", "EMPTY": ""}
    result = run_command(["env"], cwd=tmp_path, output_dir=tmp_path, env=env, timeout=30)
    assert result.exit_code == 0
    lines = result.stdout_path.read_text().splitlines()
    assert dict(line.split("=", 1) for line in lines) == env


def test_env_none_inherits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIBE_INHERITED", "42")
    result = _run(tmp_path, "import os; print(os.environ['VIBE_INHERITED'])")
    assert result.stdout_path.read_text() == "42\n"


def test_command_not_found(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(CommandNotFound) as info:
        run_command(["no-such-command-xyz", "arg"], cwd=tmp_path, output_dir=out)
    assert str(info.value) == "command not found: 'no-such-command-xyz' (looked in PATH)"
    assert info.value.name == "no-such-command-xyz"
    assert not out.exists()  # nothing was started or created
    clone = pickle.loads(pickle.dumps(info.value))
    assert str(clone) == str(info.value)


def test_non_executable_file_is_not_found(tmp_path: Path) -> None:
    _script(tmp_path, "print('hi')")  # not chmod +x
    with pytest.raises(CommandNotFound, match=r"'\./script\.py' \(not an executable file\)"):
        run_command(["./script.py"], cwd=tmp_path, output_dir=tmp_path)


def test_relative_executable_is_relative_to_cwd(tmp_path: Path) -> None:
    script = _script(tmp_path, f"#!{sys.executable}\nprint('ran')\n", name="tool")
    script.chmod(0o755)
    result = run_command(["./tool"], cwd=tmp_path, output_dir=tmp_path / "out")
    assert result.exit_code == 0
    assert result.stdout_path.read_text() == "ran\n"


def test_popen_permission_error_becomes_command_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    with pytest.raises(CommandNotFound, match=r"'sh' \(Permission denied\)"):
        run_command(["sh"], cwd=tmp_path, output_dir=tmp_path)


def test_an_argument_list_too_long_is_a_clear_error(tmp_path: Path) -> None:
    # Linux refuses any single argument over 128 KiB (MAX_ARG_STRLEN) with E2BIG.
    argv = [sys.executable, "-c", "pass", "x" * 2**20]
    with pytest.raises(ArgumentsTooLong) as info:
        run_command(argv, cwd=tmp_path, output_dir=tmp_path / "out")
    assert isinstance(info.value, CommandNotFound)  # callers that report "cannot run" report it too
    assert str(info.value) == (
        f"cannot start {sys.executable!r}: argument list too long for the system (E2BIG): "
        f"{sum(len(os.fsencode(arg)) for arg in argv)} bytes of arguments; argument 3 alone is "
        f"{2**20} bytes, and Linux takes at most 131071 bytes in one argument (MAX_ARG_STRLEN)"
    )
    assert str(pickle.loads(pickle.dumps(info.value))) == str(info.value)


def test_arguments_and_environment_over_arg_max_name_that_limit(tmp_path: Path) -> None:
    # Each value fits in one argument (under 128 KiB); together they are over ARG_MAX.
    limit = os.sysconf("SC_ARG_MAX")
    env = {f"BIG_{n}": "x" * 100_000 for n in range(limit // 100_000 + 1)}
    with pytest.raises(ArgumentsTooLong) as info:
        run_command([sys.executable, "-c", "pass"], cwd=tmp_path, output_dir=tmp_path, env=env)
    message = str(info.value)
    assert "bytes of environment, the longest argument" in message
    assert f"the system takes at most {limit} bytes of both together (ARG_MAX" in message


@pytest.mark.parametrize(
    ("argv", "env", "reason"),
    [
        (
            ["-c", "pass", "a\x00b"],
            None,
            "argument 3 holds a NUL character (\\x00), which no command line can carry",
        ),
        (
            ["-c", "pass"],
            {"K": "v\x00"},
            "the environment variable 'K' holds a NUL character (\\x00), which no environment can carry",
        ),
    ],
)
def test_a_nul_in_an_argument_or_the_environment_is_a_clear_error(
    tmp_path: Path, argv: list[str], env: dict[str, str] | None, reason: str
) -> None:
    with pytest.raises(UnpassableArgument) as info:
        run_command([sys.executable, *argv], cwd=tmp_path, output_dir=tmp_path / "out", env=env)
    assert isinstance(info.value, CommandNotFound)  # reported as a command that cannot start
    assert str(info.value) == f"cannot start {sys.executable!r}: {reason}"
    assert str(pickle.loads(pickle.dumps(info.value))) == str(info.value)


def test_each_command_gets_the_environment_it_is_given_however_many_share_one(tmp_path: Path) -> None:
    """The environment encoded for the last command is reused only while it is the same: a value
    changed, a variable added or removed, a NUL, and the same one again after those."""
    script = (
        "import os, sys; "
        "sys.stdout.write(repr(sorted((k, v) for k, v in os.environ.items() if k.startswith('VIBE_'))))"
    )

    def seen(env: dict[str, str]) -> str:
        result = run_command([sys.executable, "-c", script], cwd=tmp_path, output_dir=tmp_path, env=env)
        assert result.exit_code == 0
        return result.stdout_path.read_text()

    base = {"PATH": os.environ["PATH"], "VIBE_A": "1"}
    assert seen(base) == seen(dict(base)) == "[('VIBE_A', '1')]"
    given = dict(base)
    given["VIBE_A"] = "2"  # the same keys, another value
    assert seen(given) == "[('VIBE_A', '2')]"
    assert seen({**base, "VIBE_B": "\u00e9"}) == "[('VIBE_A', '1'), ('VIBE_B', '\u00e9')]"
    with pytest.raises(UnpassableArgument, match="'VIBE_C' holds a NUL"):
        seen({**base, "VIBE_C": "x\x00"})
    with pytest.raises(UnpassableArgument, match="argument 2 holds a NUL"):  # an argument's is named first
        run_command(
            [sys.executable, "-c", "a\x00"], cwd=tmp_path, output_dir=tmp_path, env={**base, "VIBE_C": "\x00"}
        )
    assert seen(base) == "[('VIBE_A', '1')]"
    assert seen({"PATH": os.environ["PATH"]}) == "[]"


def test_an_environment_changed_in_place_after_a_command_reaches_the_next(tmp_path: Path) -> None:
    """The same mapping passed again after the caller changed it (a value, a variable added or
    removed): the next command gets it as it is now, not as the last one got it."""
    script = "import os, sys; sys.stdout.write(os.environ.get('VIBE_A', '-') + os.environ.get('VIBE_B', '-'))"

    def seen(env: dict[str, str]) -> str:
        result = run_command([sys.executable, "-c", script], cwd=tmp_path, output_dir=tmp_path, env=env)
        return result.stdout_path.read_text()

    env = {"PATH": os.environ["PATH"], "VIBE_A": "1"}
    assert seen(env) == "1-"
    env["VIBE_A"] = "2"
    assert seen(env) == "2-"
    env["VIBE_B"] = "b"
    assert seen(env) == "2b"
    del env["VIBE_A"]
    assert seen(env) == "-b"
    env["VIBE_B"] = "\x00"
    with pytest.raises(UnpassableArgument, match="'VIBE_B' holds a NUL"):
        seen(env)


def test_other_spawn_errors_are_cannot_start_naming_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(subprocess, "Popen", fail)
    with pytest.raises(CannotStart) as info:
        run_command(["sh"], cwd=tmp_path, output_dir=tmp_path)
    assert not isinstance(info.value, ArgumentsTooLong)
    assert str(info.value) == "cannot start 'sh': not enough memory to start it (ENOMEM)"


def test_a_timeout_beyond_what_poll_takes_still_waits(tmp_path: Path) -> None:
    # select.poll takes at most 2**31 - 1 ms (~24.8 days); 10**20 s is far beyond it.
    result = _run(tmp_path, "print('done')", timeout=10**20)
    assert result.exit_code == 0 and not result.timed_out


def test_long_waits_are_made_of_several_polls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reaping, "MAX_POLL_MS", 20)
    finished = _run(tmp_path, "import time; time.sleep(0.3)", timeout=30)
    assert finished.exit_code == 0 and not finished.timed_out
    hung = _run(tmp_path, "import time; time.sleep(60)", timeout=0.3)
    assert hung.timed_out and 0.3 <= hung.duration < 10


def test_missing_cwd_is_not_reported_as_missing_command(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        run_command([sys.executable], cwd=tmp_path / "nope", output_dir=tmp_path)


def test_resolve_executable(tmp_path: Path) -> None:
    sh = resolve_executable("sh")
    assert sh is not None and os.path.isabs(sh) and os.access(sh, os.X_OK)
    assert resolve_executable("definitely-not-a-command-q7x") is None
    assert resolve_executable("") is None
    assert resolve_executable("sh", {"PATH": ""}) is None
    tool = tmp_path / "mytool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert resolve_executable("mytool", {"PATH": str(tmp_path)}) == str(tool)
    assert resolve_executable(str(tool)) == str(tool)
    tool.chmod(0o644)
    assert resolve_executable(str(tool)) is None
    assert resolve_executable(str(tmp_path)) is None  # a directory is not executable


def test_timeout_kills_whole_tree(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    result = _run(tmp_path, HANGING_TREE_SCRIPT, str(pidfile), timeout=1)
    assert result.timed_out
    assert result.exit_code is None
    assert 1 <= result.duration < 5
    pids = _read_pids(pidfile)
    assert len(pids) == 2
    for pid in pids:
        _assert_gone(pid)


def test_sigterm_ignored_still_killed_after_grace(tmp_path: Path) -> None:
    body = """
        import os, signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(1000)
    """
    pidfile = tmp_path / "pid"
    result = _run(tmp_path, body, str(pidfile), timeout=1, grace=0.5)
    assert result.timed_out
    assert result.exit_code is None
    assert 1.4 <= result.duration < 5  # the grace period was used up: SIGTERM was ignored
    _assert_gone(_read_pids(pidfile)[0])


def test_background_child_killed_after_normal_exit(tmp_path: Path) -> None:
    body = """
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
        open(sys.argv[1], "w").write(str(child.pid))
    """
    pidfile = tmp_path / "pid"
    result = _run(tmp_path, body, str(pidfile), timeout=30)
    assert result.exit_code == 0
    assert not result.timed_out
    assert result.duration < 10
    _assert_gone(_read_pids(pidfile)[0])


def test_interrupt_while_waiting_kills_and_reraises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        return proc

    def interrupted(proc: subprocess.Popen[bytes], timeout: float | None) -> bool:
        raise KeyboardInterrupt  # as Ctrl-C arriving while the runner waits

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    monkeypatch.setattr(process, "_exited_within", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, "import time; time.sleep(1000)")
    (proc,) = started
    assert proc.returncode == -9  # killed by the group SIGKILL and reaped
    assert is_gone(proc.pid)


def test_large_output_bounded_memory(tmp_path: Path) -> None:
    # 100 MiB in 1 MiB chunks of 1024-byte numbered lines.
    body = """
        import sys
        out = sys.stdout.buffer
        for chunk in range(100):
            base = chunk * 1024
            out.write(b"".join(b"%08d" % (base + i) + b"." * 1015 + b"\\n" for i in range(1024)))
        out.flush()
    """
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = _run(tmp_path, body, timeout=60)
    head, truncated = read_head(result.stdout_path, 1024)
    tail = read_tail(result.stdout_path)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert (after - before) * 1024 < 20 * 2**20  # ru_maxrss is in KiB on Linux
    assert result.exit_code == 0
    assert result.output_size() == 100 * 2**20
    assert len(head) == 1024 and truncated
    assert head.startswith("00000000.")
    lines = tail.splitlines()
    assert len(lines) == 40
    assert [line[:8] for line in lines] == [f"{n:08d}" for n in range(102360, 102400)]
    assert all(len(line) == 1023 for line in lines)


def test_read_tail_many_lines(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_text("".join(f"line {i}\n" for i in range(10_000)))
    assert read_tail(path) == "".join(f"line {i}\n" for i in range(9_960, 10_000))
    assert read_tail(path, max_lines=3) == "line 9997\nline 9998\nline 9999\n"


def test_read_tail_small_and_empty(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.write_text("a\nb\nc")
    assert read_tail(small) == "a\nb\nc"
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert read_tail(empty) == ""
    assert read_tail(small, max_lines=0) == ""


def test_read_tail_byte_window(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_text("aaaa\nbbbb\ncccc\n")
    # The window starts mid-line: the partial line is dropped.
    assert read_tail(path, max_bytes=7) == "cccc\n"
    # The window starts exactly at a line start: nothing is lost.
    assert read_tail(path, max_bytes=10) == "bbbb\ncccc\n"
    # A single line longer than the window: its end is still returned, after a mark of the cut.
    long_line = tmp_path / "long"
    long_line.write_text("x" * 1000 + "\n")
    assert read_tail(long_line, max_bytes=10) == "…" + "x" * 9 + "\n"


def test_read_head(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("hello")
    assert read_head(path, 100) == ("hello", False)
    assert read_head(path, 5) == ("hello", False)
    assert read_head(path, 4) == ("hell", True)
    assert read_head(path, 0) == ("", True)
    path.write_bytes("aé".encode() + b"\xff")
    # A character cut in half by the limit is dropped; invalid bytes are replaced.
    assert read_head(path, 2) == ("a", True)
    assert read_head(path, 10) == ("aé\ufffd", False)


def test_an_environment_variable_too_long_for_the_system_is_named(tmp_path: Path) -> None:
    env = {"HUGE": "x" * 200_000}
    with pytest.raises(ArgumentsTooLong) as info:
        run_command([sys.executable, "-c", "pass"], cwd=tmp_path, output_dir=tmp_path, env=env)
    assert str(info.value).endswith(
        "; the environment variable HUGE alone is 200005 bytes, and Linux takes at most 131071 bytes "
        "in one (MAX_ARG_STRLEN)"
    )


def _count_terminal_opens(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The opens of ``/dev/tty`` from now on."""
    opens: list[object] = []
    real_open = os.open

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == "/dev/tty":
            opens.append(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    return opens


def test_whether_there_is_a_terminal_is_asked_once_per_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "_has_terminal", process._Terminal())
    opens = _count_terminal_opens(monkeypatch)
    sessions = iter([100, 100, 200])  # not this process's pid: it is no session leader
    monkeypatch.setattr(os, "getsid", lambda pid: next(sessions))
    for _ in range(2):
        assert run_command(["true"], cwd=tmp_path, output_dir=tmp_path).exit_code == 0
    assert len(opens) == 1  # this process cannot acquire a terminal while it stays in its session
    assert run_command(["true"], cwd=tmp_path, output_dir=tmp_path).exit_code == 0
    assert len(opens) == 2  # a session of its own since (setsid): asked again


@pytest.mark.parametrize("terminal", [False, True])
def test_a_session_leader_without_a_terminal_asks_before_every_command(
    monkeypatch: pytest.MonkeyPatch, terminal: bool
) -> None:
    asked: list[bool] = []

    def ask() -> bool:
        asked.append(terminal)
        return terminal

    has_terminal = process._Terminal()
    monkeypatch.setattr(process, "_asks_terminal", ask)
    monkeypatch.setattr(os, "getsid", lambda pid: os.getpid())  # this process leads its session
    assert [has_terminal() for _ in range(3)] == [terminal] * 3
    # A leader may open a terminal at any time; one that has one keeps giving sessions.
    assert len(asked) == (1 if terminal else 3)


def test_a_checked_path_is_not_looked_at_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _script(tmp_path, f"#!{sys.executable}\nprint('ran')\n", name="tool")
    tool.chmod(0o755)
    looked: list[str] = []
    real = process.resolve_executable

    def resolve(name: str, env: Any = None) -> str | None:
        looked.append(name)
        return real(name, env)

    monkeypatch.setattr(process, "resolve_executable", resolve)
    result = run_command([str(tool)], cwd=tmp_path, output_dir=tmp_path, checked=True)
    assert result.stdout_path.read_text() == "ran\n" and looked == []
    tool.unlink()  # gone since it was checked: the start says so all the same
    with pytest.raises(CommandNotFound, match=r"\(No such file or directory\)"):
        run_command([str(tool)], cwd=tmp_path, output_dir=tmp_path, checked=True)
    run_command(["true"], cwd=tmp_path, output_dir=tmp_path, checked=True)  # a name: looked up in PATH
    assert looked == ["true"]
