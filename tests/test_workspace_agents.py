"""Coding agents that misbehave: they hang with a tree of children, flood stdout, destroy, lock or
rewrite their workspace, print binary garbage. Real subprocesses and real pytest runs, serially and
with ``-n 2``; the config folder is :func:`test_workspace_evals.make_config_dir`'s (evals ``add``
and ``mul``; configuration ``oracle`` passes, and runs beside the misbehaving ones to show that
they do not disturb other items)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    HANGING_TREE_SCRIPT,
    PYTHON,
    XDIST_MODES,
    agent,
    evals_by_nodeid,
    load_json,
    run,
    run_unprivileged,
    wait_gone,
    write,
    write_cli_config,
)
from test_cli_agents import PRINTER, RSS_PLUGIN
from test_workspace_evals import make_config_dir, snapshot

NODE = "evals/config/eval-config.json::{}[{}]"
# The agents run unconfined where confinement would change what is tested (host pids, a workspace
# that can be removed, templates protected by copying alone), so these tests mean the same on every
# machine; what bwrap adds is test_workspace_isolation's. The workspaces are kept to be inspected.
UNCONFINED = ("--vibe-sandbox", "none")
KEEP = "--vibe-keep-workspaces"
TIMEOUT_MS = 1500
PID_FILE = "pids.txt"  # relative: each hanging tree records its pids in its own working directory

# HANGING_TREE_SCRIPT with SIGTERM ignored by the whole tree (an ignored signal stays ignored in
# children), so only the SIGKILL that follows the grace period ends it.
STUBBORN_TREE_SCRIPT = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + HANGING_TREE_SCRIPT


def add_configurations(config: Path, configurations: dict[str, dict[str, Any]]) -> None:
    data = load_json(config / "cli-config.json")
    data["configurations"].update(configurations)
    write_cli_config(config / "cli-config.json", data)


def results_of(
    pytester: pytest.Pytester, *args: str, xdist: list[str], own_process: bool = False
) -> tuple[pytest.RunResult, dict[str, dict[str, Any]]]:
    """Run with ``-rA`` and a results file (in a process of its own if ``own_process``); the
    records by node id."""
    path = pytester.path / "results.json"
    result = run(pytester, "-rA", "--vibe-results", str(path), *args, xdist=xdist, subprocess=own_process)
    assert path.is_file(), result.stdout.str()
    return result, evals_by_nodeid(load_json(path))


def assert_plugin_did_not_crash(result: pytest.RunResult) -> None:
    output = result.stdout.str() + result.stderr.str()
    # (A step's own traceback may be in a failure message: the grade steps are Python scripts.)
    for sign in ("INTERNALERROR", "pytest_vibeeval/", "no result recorded"):
        assert sign not in output, f"{sign!r} in the output:\n{output}"


def assert_tree_gone(pid_file: Path) -> None:
    """Every pid the hanging tree recorded has terminated (bounded wait, no polling)."""
    assert pid_file.is_file(), f"the hanging command did not record its pids in {pid_file}"
    pids = [int(pid) for pid in pid_file.read_text().split()]
    assert len(pids) == 2
    survivors = [pid for pid in pids if not wait_gone(pid)]
    for pid in survivors:  # do not leave them behind when the test fails (pid reuse checked)
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            if "sleep(1000)" in cmdline or "hang" in cmdline:
                os.kill(pid, signal.SIGKILL)
    assert not survivors, f"still alive after the timeout: {survivors} (command, child: {pids})"


# 1. ------------------------------------------------------------------------------------------


@XDIST_MODES
def test_hanging_agent_tree_is_killed_at_the_configuration_timeout(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    config = make_config_dir(pytester.path)
    scripts = pytester.path / "agents"
    hangs = agent(scripts, "hang.py", HANGING_TREE_SCRIPT)
    stubborn = agent(scripts, "stubborn_hang.py", STUBBORN_TREE_SCRIPT)
    add_configurations(
        config,
        {
            "hangs": {"cli": PYTHON, "args": [hangs, PID_FILE], "timeout": TIMEOUT_MS},
            "stubborn": {"cli": PYTHON, "args": [stubborn, PID_FILE], "timeout": TIMEOUT_MS},
        },
    )

    args = (*UNCONFINED, KEEP, "--vibe-eval", "add", "--vibe-config", "hangs,stubborn,oracle")
    result, records = results_of(pytester, *args, xdist=xdist, own_process=True)
    result.assert_outcomes(passed=1, failed=2)
    assert_plugin_did_not_crash(result)
    assert records[NODE.format("add", "oracle")]["outcome"] == "passed"  # unaffected
    for config_id in ("hangs", "stubborn"):
        record = records[NODE.format("add", config_id)]
        assert record["outcome"] == "failed"
        # the runner still builds and grades what the agent left (here: nothing, so grading fails)
        assert record["message"] == (
            f"agent step {config_id!r} timed out after 1.5 s\n(grade steps 'public', 'hidden' failed too)"
        )
        step, *after = record["steps"]
        assert [(s["phase"], s["name"]) for s in after] == [
            ("build", "compile"),
            ("grade", "public"),
            ("grade", "hidden"),
        ]
        assert (step["phase"], step["name"]) == ("agent", config_id)
        assert step["timed_out"] is True and step["exit_code"] is None
        assert 1.5 <= step["duration"] < 30
        assert record["latency"] == step["duration"]
        assert record["sandbox"] == "none"
        assert list(record["phase_durations"]) == ["workspace", "agent", "build", "grade"]
        assert_tree_gone(Path(step["cwd"]) / PID_FILE)
    result.stdout.fnmatch_lines_random(  # the failure reports
        ["agent step 'hangs' timed out after 1.5 s", "agent step 'stubborn' timed out after 1.5 s"]
    )


# 2. ------------------------------------------------------------------------------------------


@XDIST_MODES
def test_hanging_build_step_is_killed_at_its_registry_timeout(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    script = agent(pytester.path / "steps", "hang.py", HANGING_TREE_SCRIPT)
    make_config_dir(
        pytester.path,
        registry_extra={"compile": {"command": PYTHON, "args": [script, PID_FILE], "timeout": TIMEOUT_MS}},
    )
    # unconfined: the pids the tree records are then the ones this test can check (in bwrap they
    # are its pid namespace's, and the namespace takes the tree with it anyway)
    result, records = results_of(
        pytester, *UNCONFINED, KEEP, "--vibe-config", "oracle", xdist=xdist, own_process=True
    )
    result.assert_outcomes(failed=2)
    assert_plugin_did_not_crash(result)
    for problem in ("add", "mul"):
        record = records[NODE.format(problem, "oracle")]
        assert record["outcome"] == "failed"
        assert record["message"] == "build step 'compile' timed out after 1.5 s"
        steps = [(s["phase"], s["name"], s["exit_code"], s["timed_out"]) for s in record["steps"]]
        # a failing build step does not stop the grading (the unified runner's rule)
        assert steps[:2] == [("agent", "oracle", 0, False), ("build", "compile", None, True)]
        assert [(phase, name) for phase, name, _, _ in steps[2:]] == [
            ("grade", "public"),
            ("grade", "hidden"),
        ]
        assert 1.5 <= record["steps"][1]["duration"] < 30
        assert record["latency"] == record["steps"][0]["duration"]  # the agent's time only
        assert record["subtasks_total"] is None
        assert list(record["phase_durations"]) == ["workspace", "agent", "build", "grade"]
        workspace = Path(record["steps"][1]["cwd"])
        assert_tree_gone(workspace / PID_FILE)
    result.stdout.fnmatch_lines(["build step 'compile' timed out after 1.5 s"] * 2)


# 3. ------------------------------------------------------------------------------------------

BIG = 100 * 2**20


def _run_printer(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, size: int, xdist: list[str], label: str
) -> tuple[int, pytest.RunResult, dict[str, Any]]:
    """Peak RSS (KiB) of the controller and workers while the agent prints ``size`` bytes; the
    run's result; the item's record."""
    config = pytester.path / "evals" / "config"
    script = agent(pytester.path / "agents", "printer.py", PRINTER)
    add_configurations(config, {"printer": {"cli": PYTHON, "args": [script, str(size)]}})
    rss_dir = pytester.path / f"rss-{label}"
    rss_dir.mkdir()
    monkeypatch.setenv("VIBE_TEST_RSS_DIR", str(rss_dir))
    path = pytester.path / f"results-{label}.json"
    args = ("-p", "rss_plugin", "--vibe-results", str(path), "--vibe-eval", "add", "--vibe-config", "printer")
    result = run(pytester, *args, xdist=xdist, subprocess=True)
    values = {p.name: int(p.read_text()) for p in rss_dir.iterdir()}
    assert "main-end" in values and len(values) >= 2, values
    return max(values.values()), result, evals_by_nodeid(load_json(path))[NODE.format("add", "printer")]


@XDIST_MODES
def test_agent_printing_100_mb_keeps_memory_flat(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    make_config_dir(pytester.path)
    write(pytester.path / "rss_plugin.py", RSS_PLUGIN)
    small, small_result, small_record = _run_printer(pytester, monkeypatch, 1024, xdist, "small")
    big, big_result, big_record = _run_printer(pytester, monkeypatch, BIG, xdist, "big")
    log = Path(big_record["steps"][0]["log"])
    try:
        for result, record, size in ((small_result, small_record, 1024), (big_result, big_record, BIG)):
            # The printer leaves calc.py alone: the agent step passes, the public check fails.
            result.assert_outcomes(failed=1)
            assert_plugin_did_not_crash(result)
            assert record["message"].startswith("grade step 'public' exited with code 1")
            steps = [(s["phase"], s["name"], s["exit_code"]) for s in record["steps"]]
            assert steps[:3] == [("agent", "printer", 0), ("build", "compile", 0), ("grade", "public", 1)]
            assert Path(record["steps"][0]["log"]).stat().st_size == size
        with log.open("rb") as handle:
            assert handle.read(16) == b"x" * 16
            handle.seek(-16, os.SEEK_END)
            assert handle.read() == b"x" * 16
        # ru_maxrss is in KiB on Linux.
        assert big - small < 20 * 1024, f"peak RSS grew by {(big - small) / 1024:.1f} MiB"
    finally:
        log.unlink()  # free the disk space at once


# 4. ------------------------------------------------------------------------------------------

WIPE_CONTENTS = """
import os, shutil
for entry in os.scandir("."):
    if entry.is_dir(follow_symlinks=False):
        shutil.rmtree(entry.path)
    else:
        os.unlink(entry.path)
print("workspace emptied")
"""

REMOVE_WORKSPACE = """
import os, shutil
shutil.rmtree(os.getcwd())
print("workspace removed")
"""

# Every byte value, invalid UTF-8, terminal escapes, carriage returns and no final newline, on
# stdout and stderr; then solves the problem if given the solutions folder, and exits with 0 if so.
GARBAGE = """
import os, shutil, sys
noise = bytes(range(256)) * 64
noise += b"\\xff\\xfe\\xed\\xa0\\x80\\x1b[2J\\x1b]0;title\\x07\\r\\x00\\n" * 50 + b"\\xc3"
sys.stdout.buffer.write(noise)
sys.stderr.buffer.write(noise[::-1])
if len(sys.argv) < 2:
    sys.exit(3)
problem = open("prompt.md").readline().split()[-1]
shutil.copytree(os.path.join(sys.argv[1], problem), ".", dirs_exist_ok=True)
"""


def _without_build_steps(config: Path, problem: str) -> None:
    """``problem`` goes from the agent straight to the grading copy."""
    data = load_json(config / "eval-config.json")
    data["evaluations"][problem]["buildSteps"] = []
    write(config / "eval-config.json", json.dumps(data))


@XDIST_MODES
def test_emptied_workspace_and_binary_garbage_fail_cleanly(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    config = make_config_dir(pytester.path)
    _without_build_steps(config, "mul")
    scripts = pytester.path / "agents"
    garbage = agent(scripts, "garbage.py", GARBAGE)
    add_configurations(
        config,
        {
            "wipe": {"cli": PYTHON, "args": [agent(scripts, "wipe.py", WIPE_CONTENTS)]},
            "garbage": {"cli": PYTHON, "args": [garbage, str(pytester.path / "evals" / "solutions")]},
            "garbage-fail": {"cli": PYTHON, "args": [garbage]},
        },
    )
    junit = pytester.path / "junit.xml"
    args = (KEEP, "--vibe-config", "oracle,nop,wipe,garbage,garbage-fail", "--junitxml", str(junit))
    result, records = results_of(pytester, *args, xdist=xdist)
    result.assert_outcomes(passed=4, failed=6)
    assert_plugin_did_not_crash(result)
    ET.parse(junit)  # still well-formed XML with the garbage in the failure messages

    def rec(problem: str, config_id: str) -> dict[str, Any]:
        return records[NODE.format(problem, config_id)]

    # Other items are unaffected.
    for problem in ("add", "mul"):
        assert rec(problem, "oracle")["outcome"] == "passed"
        assert rec(problem, "nop")["message"].startswith("grade step 'public' exited with code 1")

    # An emptied workspace: the next step fails on the missing files (add: the build step; mul,
    # without build steps: the grade step, whose script lived in the workspace).
    assert rec("add", "wipe")["message"].startswith("build step 'compile' exited with code 1")
    assert "calc.py" in rec("add", "wipe")["message"]
    assert rec("mul", "wipe")["message"].startswith("grade step 'public' exited with code 2")
    assert "check_public.py" in rec("mul", "wipe")["message"]
    for problem in ("add", "mul"):
        assert rec(problem, "wipe")["steps"][0]["exit_code"] == 0
        assert not any(Path(rec(problem, "wipe")["steps"][0]["cwd"]).iterdir())

    # Garbage on stdout does not get in the way of a passing item, and its log keeps every byte.
    for problem in ("add", "mul"):
        passing = rec(problem, "garbage")
        assert passing["outcome"] == "passed" and passing["message"] is None
        log = Path(passing["steps"][0]["log"])
        assert log.read_bytes().startswith(bytes(range(256)))
        assert log.read_bytes().endswith(b"\x00\n\xc3")

    # A failing agent's garbage tail ends up decoded (U+FFFD for invalid bytes) in the message.
    for problem in ("add", "mul"):
        failing = rec(problem, "garbage-fail")
        assert failing["outcome"] == "failed"
        # graded all the same: its agent's exit code first, then the build and grade steps
        assert failing["steps"][0]["exit_code"] == 3
        assert {s["phase"] for s in failing["steps"][1:]} == (
            {"build", "grade"} if problem == "add" else {"grade"}
        )
        message = failing["message"]
        assert message.startswith("agent step 'garbage-fail' exited with code 3\nlast 40 lines of stdout")
        assert "\ufffd" in message and "last 40 lines of stderr" in message
    result.stdout.fnmatch_lines(["*agent step 'garbage-fail' exited with code 3*"])


# Leaves a folder where the grading folder has a file of that name (the hidden check).
CLASH = """
import os
os.mkdir("check_hidden.py")
"""


@XDIST_MODES
def test_agent_removing_its_workspace_or_blocking_the_grading_copy_fails_cleanly(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    config = make_config_dir(pytester.path)
    _without_build_steps(config, "mul")
    scripts = pytester.path / "agents"
    add_configurations(
        config,
        {
            "remove": {"cli": PYTHON, "args": [agent(scripts, "remove.py", REMOVE_WORKSPACE)]},
            "clash": {"cli": PYTHON, "args": [agent(scripts, "clash.py", CLASH)]},
        },
    )
    args = (*UNCONFINED, "--vibe-config", "oracle,remove,clash")
    result, records = results_of(pytester, *args, xdist=xdist)
    result.assert_outcomes(passed=2, failed=4)
    for problem in ("add", "mul"):
        assert records[NODE.format(problem, "oracle")]["outcome"] == "passed"
        for config_id, named in (("remove", "workspace"), ("clash", "check_hidden.py")):
            record = records[NODE.format(problem, config_id)]
            assert record["outcome"] == "failed"
            assert record["steps"][0]["phase"] == "agent" and record["steps"][0]["exit_code"] == 0
            assert named in record["message"]
    assert_plugin_did_not_crash(result)


# An agent that leaves a folder nobody may read in its workspace (as a tool's cache might be).
LOCKER = """
import os
os.mkdir("locked")
with open("locked/notes.txt", "w") as handle:
    handle.write("private")
os.chmod("locked", 0)
"""


@XDIST_MODES
def test_unreadable_folder_left_by_the_agent_fails_cleanly(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    config = make_config_dir(pytester.path)
    add_configurations(
        config, {"locker": {"cli": PYTHON, "args": [agent(pytester.path / "agents", "lock.py", LOCKER)]}}
    )
    path = pytester.path / "results.json"
    args = (
        *UNCONFINED,
        "-rA",
        "--vibe-results",
        str(path),
        "--vibe-eval",
        "add",
        "--vibe-config",
        "locker,oracle",
    )
    result = run_unprivileged(pytester, *xdist, *args)
    result.assert_outcomes(passed=1, failed=1)
    records = evals_by_nodeid(load_json(path))
    assert records[NODE.format("add", "oracle")]["outcome"] == "passed"
    record = records[NODE.format("add", "locker")]
    assert record["outcome"] == "failed"
    assert [(s["phase"], s["exit_code"]) for s in record["steps"]] == [("agent", 0), ("build", 0)]
    assert "locked" in record["message"] and "Permission denied" in record["message"]
    workdir = Path(record["steps"][0]["cwd"]).parent
    assert sorted(p.name for p in workdir.iterdir()) == ["logs"]  # workspace and grading copy removed
    assert_plugin_did_not_crash(result)


# 5. ------------------------------------------------------------------------------------------

# Rewrites, truncates and chmods every path of its workspace, following symlinks (files and folders)
# wherever they lead; prints what it rewrote.
REWRITER = """
import os
rewritten = []
for top, dirs, files in os.walk(".", followlinks=True):
    for name in dirs:
        os.chmod(os.path.join(top, name), 0o700)
    for name in files:
        path = os.path.join(top, name)
        try:
            os.chmod(path, 0o600)
            with open(path, "r+b") as handle:
                handle.write(b"x" * 4096)
                handle.truncate(0)
            with open(path, "wb") as handle:
                handle.write(b"overwritten\\n")
            os.truncate(path, len(b"overwritten\\n"))
            os.chmod(path, 0o640)
            os.utime(path, (0, 0))
        except OSError as exc:  # e.g. a symlink whose target does not exist here
            print(f"{path}: {exc}")
        else:
            rewritten.append(os.path.normpath(path))
print("\\n".join(sorted(rewritten)))
"""


def tree_state(folder: Path) -> dict[str, tuple[int, int, int, str | None]]:
    """What :func:`snapshot` does not see, for every entry (symlinks not followed): the mode, the
    link count, the modification time and the symlink target."""
    state = {}
    for path in [folder, *sorted(folder.rglob("*"))]:
        info = path.lstat()
        target = os.readlink(path) if path.is_symlink() else None
        state[str(path.relative_to(folder))] = (info.st_mode, info.st_nlink, info.st_mtime_ns, target)
    return state


def _template_with_links(root: Path) -> Path:
    """``add``'s workspace template with files of several modes, a subfolder, a hard link to a
    solution file and relative symlinks (to a file, to a folder, and out of the workspace)."""
    workspace = root / "evals" / "problems" / "add" / "workspace"
    write(workspace / "pkg" / "data.txt", "data\n")
    write(workspace / "run.sh", "#!/bin/sh\necho run\n").chmod(0o755)
    write(workspace / "readonly.txt", "read only\n").chmod(0o444)
    (workspace / "pkg").chmod(0o750)
    write(root / "evals" / "shared" / "notes.txt", "shared notes\n")
    os.link(root / "evals" / "solutions" / "add" / "calc.py", workspace / "hardlinked_solution.py")
    (workspace / "link_calc.py").symlink_to("calc.py")
    (workspace / "link_pkg").symlink_to("pkg", target_is_directory=True)
    (workspace / "link_shared.txt").symlink_to("../../../shared/notes.txt")  # valid in the template
    return workspace


def _run_rewriter(
    pytester: pytest.Pytester, xdist: list[str], template: Path
) -> tuple[dict[str, Any], list[str]]:
    """Run the rewriter on ``add`` (and ``oracle`` beside it); the template and every other file of
    the config folder must be as before. Returns the record and the paths the agent rewrote."""
    config = pytester.path / "evals" / "config"
    add_configurations(
        config, {"rewriter": {"cli": PYTHON, "args": [agent(pytester.path / "agents", "rw.py", REWRITER)]}}
    )
    evals = pytester.path / "evals"
    contents, state = snapshot(evals), tree_state(evals)
    args = (*UNCONFINED, KEEP, "--vibe-eval", "add", "--vibe-config", "rewriter,oracle")
    result, records = results_of(pytester, *args, xdist=xdist)
    assert snapshot(evals) == contents, "the agent wrote to the templates"
    assert tree_state(evals) == state, "the agent changed the templates' modes, links or times"
    result.assert_outcomes(passed=1, failed=1)
    assert_plugin_did_not_crash(result)
    assert records[NODE.format("add", "oracle")]["outcome"] == "passed"
    record = records[NODE.format("add", "rewriter")]
    assert record["outcome"] == "failed"

    # The agent did rewrite its copy of every file, through the symlinks too.
    step = record["steps"][0]
    assert (step["phase"], step["exit_code"]) == ("agent", 0)
    workspace = Path(step["cwd"])
    for name in snapshot(template):
        copied = workspace / name
        if copied.exists():  # not link_shared.txt: out of the workspace, it does not resolve here
            assert copied.read_bytes() == b"overwritten\n", name
            assert stat.S_IMODE(copied.stat().st_mode) == 0o640, name
    rewritten = Path(step["log"]).read_text().split("\n")
    return record, rewritten


@XDIST_MODES
def test_agent_rewriting_its_workspace_leaves_the_template_unchanged(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_config_dir(pytester.path)
    template = _template_with_links(pytester.path)
    record, rewritten = _run_rewriter(pytester, xdist, template)
    assert {"calc.py", "run.sh", "readonly.txt", "hardlinked_solution.py", "link_calc.py"} <= set(rewritten)
    assert {"pkg/data.txt", "link_pkg/data.txt", "prompt.md"} <= set(rewritten)
    # The rewritten check_public.py is run by the grade step: it fails, cleanly.
    assert record["message"].startswith("grade step 'public' exited with code 1")


@XDIST_MODES
def test_absolute_symlinks_into_the_template_do_not_lead_back_to_it(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_config_dir(pytester.path)
    template = _template_with_links(pytester.path)
    (template / "abs_calc.py").symlink_to(template / "calc.py")
    (template / "abs_pkg").symlink_to(template / "pkg", target_is_directory=True)
    _run_rewriter(pytester, xdist, template)
