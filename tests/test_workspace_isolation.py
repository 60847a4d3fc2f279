"""Where coding agents may write (--vibe-sandbox), what is left behind (--vibe-keep-workspaces), and
the overridable fixtures (vibe_workspace, vibe_commands) that prepare workspaces and run steps."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    PYTHON,
    XDIST_MODES,
    agent,
    evals_by_nodeid,
    load_json,
    run,
    wait_gone,
    write,
    write_cli_config,
)
from test_workspace_evals import make_config_dir, snapshot

from pytest_vibeeval.loading.link_cycles import is_link_cycle
from pytest_vibeeval.workspace.sandbox import bwrap_problem

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"{bwrap_problem()}")

# Tries to write outside its workspace: into the template (its path is the first argument), the
# home folder, /tmp and the item's log folder; reports what happened as JSON, then writes its answer.
ESCAPER = """
import json, os, shutil, sys
template, marker = sys.argv[1], sys.argv[2]
attempts = {
    "template": os.path.join(template, "calc.py"),
    "home": os.path.join(os.path.expanduser("~"), marker),
    "tmp": os.path.join("/tmp", marker),
    "logs": os.path.join("..", "logs", marker),
}
report = {}
for what, path in attempts.items():
    try:
        with open(path, "a") as handle:
            handle.write("escaped\\n")
        report[what] = "written"
    except OSError as exc:
        report[what] = type(exc).__name__
problem = open("prompt.md").readline().split()[-1]
shutil.copytree(os.path.join(sys.argv[3], problem), ".", dirs_exist_ok=True)
report["workspace"] = "written"
print(json.dumps(report))
"""


def _configure_escaper(config: Path, marker: str) -> None:
    scripts = config.parent.parent / "agents"
    data = load_json(config / "cli-config.json")
    problems = config.parent / "problems"
    data["configurations"] = {
        "escaper": {
            "cli": PYTHON,
            "args": [
                agent(scripts, "escaper.py", ESCAPER),
                str(problems / "add" / "workspace"),
                marker,
                str(config.parent / "solutions"),
            ],
        }
    }
    write_cli_config(config / "cli-config.json", data)


def _agent_report(record: dict[str, Any]) -> dict[str, str]:
    log = Path(record["steps"][0]["log"])
    return json.loads(log.read_text().strip().splitlines()[-1])


@needs_bwrap
@XDIST_MODES
def test_bwrap_refuses_writes_outside_the_workspace(
    pytester: pytest.Pytester, xdist: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    config = make_config_dir(pytester.path)
    marker = f"vibe-escape-{os.getpid()}-{len(xdist)}"
    _configure_escaper(config, marker)
    templates = snapshot(pytester.path / "evals")
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-sandbox", "bwrap", "--vibe-results", results, "-k", "add", xdist=xdist)
    result.assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(results))["evals/config/eval-config.json::add[escaper]"]
    assert record["sandbox"] == "bwrap"
    report = _agent_report(record)
    assert report["template"] == "OSError"  # read-only file system
    assert report["home"] == "OSError"
    assert report["logs"] in ("OSError", "FileNotFoundError")
    assert report["tmp"] == "written" and not Path("/tmp", marker).exists()  # a private /tmp
    assert report["workspace"] == "written"
    assert not (Path.home() / marker).exists()
    assert not (Path(record["steps"][0]["log"]).parent / marker).exists()
    assert snapshot(pytester.path / "evals") == templates
    assert record["steps"][0]["argv"][0] == PYTHON  # the record shows the agent's own command
    result.stdout.fnmatch_lines(["*Sandbox: bwrap (coding agents could write only in their workspaces)*"])


@needs_bwrap
def test_bwrap_contains_the_agents_whole_process_tree(pytester: pytest.Pytester) -> None:
    """A grandchild that starts a new session escapes a process-group kill, not the pid namespace."""
    config = make_config_dir(pytester.path)
    marker = f"{300 + os.getpid() % 1000}.{os.getpid()}"  # a sleep no other process runs
    escapee = (
        "import subprocess, sys, time\n"
        f"code = 'import time; time.sleep({marker})'\n"
        "subprocess.Popen([sys.executable, '-c', code], start_new_session=True)\n"
        "time.sleep(300)\n"
    )
    data = load_json(config / "cli-config.json")
    stuck = agent(pytester.path / "agents", "stuck.py", escapee)
    data["configurations"] = {"stuck": {"cli": PYTHON, "args": [stuck], "timeout": 1500}}
    write_cli_config(config / "cli-config.json", data)
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-sandbox", "bwrap", "--vibe-results", results, "-k", "add")
    result.assert_outcomes(failed=1)
    record = next(iter(evals_by_nodeid(load_json(results)).values()))
    assert record["steps"][0]["timed_out"] is True
    found = subprocess.run(["pgrep", "-f", f"time.sleep\\({marker}\\)"], capture_output=True, text=True)
    assert all(wait_gone(int(pid)) for pid in found.stdout.split())  # dying with the namespace


def _without_bwrap(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = pytester.path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_sandbox_bwrap_without_bwrap_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_config_dir(pytester.path)
    _without_bwrap(pytester, monkeypatch)
    result = run(pytester, "--vibe-sandbox", "bwrap", subprocess=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--vibe-sandbox bwrap: bwrap is not installed; install bubblewrap*or use --vibe-sandbox auto*"]
    )


@XDIST_MODES
def test_sandbox_auto_without_bwrap_runs_unconfined_and_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    make_config_dir(pytester.path)
    _without_bwrap(pytester, monkeypatch)
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-config", "oracle", "--vibe-results", results, xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=2)
    assert {r["sandbox"] for r in evals_by_nodeid(load_json(results)).values()} == {"none"}
    result.stdout.fnmatch_lines(
        [
            "Sandbox: none, coding agents could write wherever you can: bwrap is not installed; "
            "install bubblewrap*(--vibe-sandbox auto)",
        ]
    )


@pytest.mark.parametrize("sandbox", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_agents_editing_their_workspace_leave_the_template_alone(
    pytester: pytest.Pytester, sandbox: str
) -> None:
    config = make_config_dir(pytester.path)
    vandal = (
        "import os\n"
        "for top, _, files in os.walk('.'):\n"
        "    for name in files:\n"
        "        path = os.path.join(top, name)\n"
        "        os.chmod(path, 0o777)\n"
        "        with open(path, 'r+b') as handle:\n"
        "            handle.truncate(0)\n"
        "            handle.write(b'vandalised')\n"
    )
    data = load_json(config / "cli-config.json")
    data["configurations"] = {
        "vandal": {"cli": PYTHON, "args": [agent(pytester.path / "agents", "v.py", vandal)]}
    }
    write_cli_config(config / "cli-config.json", data)
    templates = snapshot(pytester.path / "evals")
    modes = {p: p.stat().st_mode for p in (pytester.path / "evals").rglob("*")}
    result = run(pytester, "--vibe-sandbox", sandbox)
    result.assert_outcomes(failed=2)
    assert snapshot(pytester.path / "evals") == templates
    assert {p: p.stat().st_mode for p in (pytester.path / "evals").rglob("*")} == modes


@XDIST_MODES
def test_workspaces_are_removed_unless_kept(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_config_dir(pytester.path)
    results = pytester.path / "results.json"
    args = ("--vibe-config", "oracle,nop", "--vibe-results", results, "-k", "add")
    result = run(pytester, *args, xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    for record in evals_by_nodeid(load_json(results)).values():
        assert record["workspace"] is None
        agent_step = record["steps"][0]
        assert not Path(agent_step["cwd"]).exists()  # the workspace and grading copies are gone
        assert not (Path(agent_step["cwd"]).parent / "grading").exists()
        assert Path(agent_step["log"]).is_file()  # the logs stay, for the failure reports
    assert "Kept workspaces" not in result.stdout.str()

    result = run(pytester, *args, "--vibe-keep-workspaces", xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    records = evals_by_nodeid(load_json(results))
    result.stdout.fnmatch_lines(["*Kept workspaces (--vibe-keep-workspaces): 2"])
    for nodeid, record in records.items():
        kept = Path(record["workspace"])
        assert (kept / "workspace" / "prompt.md").is_file()
        assert (kept / "grading" / "check_hidden.py").is_file()
        result.stdout.fnmatch_lines([f"  {nodeid}: {kept}"])


def test_phase_durations_and_required_commands(pytester: pytest.Pytester) -> None:
    config = make_config_dir(pytester.path)
    data = load_json(config / "eval-config.json")
    data["evaluations"]["mul"]["requires"] = ["python3", "no-such-tool-vibe"]
    write(config / "eval-config.json", json.dumps(data))
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-config", "oracle,nop", "--vibe-results", results, "-rs")
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    result.stdout.fnmatch_lines(["SKIPPED*mul requires no-such-tool-vibe on PATH (not found)"])
    records = evals_by_nodeid(load_json(results))
    oracle = records["evals/config/eval-config.json::add[oracle]"]
    assert list(oracle["phase_durations"]) == ["workspace", "agent", "build", "grade"]
    assert all(value >= 0 for value in oracle["phase_durations"].values())
    nop = records["evals/config/eval-config.json::add[nop]"]
    assert list(nop["phase_durations"]) == ["workspace", "agent", "build", "grade"]  # failed in grade
    skipped = records["evals/config/eval-config.json::mul[oracle]"]
    assert skipped["outcome"] == "skipped" and "no-such-tool-vibe" in skipped["message"]


WORKTREE_CONFTEST = """
import subprocess

import pytest


@pytest.fixture
def vibe_workspace(vibe_evaluation, vibe_workdir):
    # a git worktree of the template's repository instead of a copy
    target = vibe_workdir / "workspace"
    git = ["git", "-C", str(vibe_evaluation.workspace)]
    subprocess.run([*git, "worktree", "add", "--quiet", "--detach", str(target)], check=True)
    (vibe_workdir / "prepared-by").write_text("worktree")
    yield target
    subprocess.run([*git, "worktree", "remove", "--force", str(target)], check=True)


@pytest.fixture
def vibe_commands(vibe_commands, vibe_workdir):
    # the default runner, noting every registry step it is asked to run
    run = vibe_commands.run

    def noting(phase, name, cwd):
        with open(vibe_workdir / "noted", "a") as handle:
            handle.write(f"{phase}:{name}\\n")
        return run(phase, name, cwd)

    vibe_commands.run = noting
    return vibe_commands
"""


@XDIST_MODES
def test_fixtures_can_be_overridden_in_a_conftest(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_config_dir(pytester.path)
    for problem in ("add", "mul"):
        template = pytester.path / "evals" / "problems" / problem / "workspace"
        git = ["git", "-C", str(template), "-c", "user.name=t", "-c", "user.email=t@example.com"]
        subprocess.run(["git", "init", "-q", str(template)], check=True)
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-qm", "template"], check=True)
    write(pytester.path / "conftest.py", WORKTREE_CONFTEST)
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-config", "oracle", "--vibe-results", results, xdist=xdist)
    result.assert_outcomes(passed=2)
    for record in evals_by_nodeid(load_json(results)).values():
        workdir = Path(record["steps"][0]["cwd"]).parent
        assert (workdir / "prepared-by").read_text() == "worktree"
        assert (workdir / "noted").read_text() == "build:compile\ngrade:public\ngrade:hidden\n"
    template = pytester.path / "evals" / "problems" / "add" / "workspace"
    listing = subprocess.run(
        ["git", "-C", str(template), "worktree", "list"], capture_output=True, text=True, check=True
    )
    assert len(listing.stdout.strip().splitlines()) == 1  # the override's teardown removed its worktree


def test_workspace_fixtures_outside_coding_agent_items_are_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain(vibe_workspace):\n    pass\n")
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*vibe_workspace is only available to pytest-vibeeval coding-agent items*"])


@XDIST_MODES
def test_an_agent_cannot_replace_the_hidden_tests(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """The grading folder's files are copied over the agent's: a planted check_hidden.py loses."""
    config = make_config_dir(pytester.path)
    planter = "open('check_hidden.py', 'w').write('print(\"all good\")\\n')\n"
    data = load_json(config / "cli-config.json")
    data["configurations"] = {
        "planter": {"cli": PYTHON, "args": [agent(pytester.path / "agents", "p.py", planter)]}
    }
    write_cli_config(config / "cli-config.json", data)
    registry = load_json(config / "command-registry.json")
    registry["public"]["args"] = ["-c", "pass"]  # only the hidden check decides
    write(config / "command-registry.json", json.dumps(registry))
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results, xdist=xdist)
    result.assert_outcomes(failed=2)
    for record in evals_by_nodeid(load_json(results)).values():
        assert record["message"].startswith("grade step 'hidden' exited with code 1")


CLAUDE_LIKE = """
import shutil, sys
sys.stdin.read()
problem = open("prompt.md").readline().split()[-1]
shutil.copytree(sys.argv[1] + "/" + problem, ".", dirs_exist_ok=True)
sys.stdout.write(open(sys.argv[2]).read())
"""


@XDIST_MODES
def test_a_coding_agents_own_report_is_read_with_its_parser(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """An agent preset's parser reads the coding agent's stdout: response, cost, tokens, tool calls."""
    config = make_config_dir(pytester.path)
    sample = Path(__file__).parent / "samples" / "claude-code" / "stream.jsonl"
    script = agent(pytester.path / "agents", "claude_like.py", CLAUDE_LIKE)
    data = load_json(config / "cli-config.json")
    data["configurations"] = {
        "claude": {"cli": PYTHON, "args": [script, str(config.parent / "solutions"), str(sample)],
                   "output": {"parser": "claude-code"}},
        "broken": {"cli": PYTHON, "args": [agent(pytester.path / "agents", "b.py", "print('not json')")],
                   "output": {"parser": "claude-code"}},
    }  # fmt: skip
    write_cli_config(config / "cli-config.json", data)
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, "-k", "add", xdist=xdist).assert_outcomes(passed=1, failed=1)
    records = evals_by_nodeid(load_json(results))
    claude = records["evals/config/eval-config.json::add[claude]"]
    assert claude["response"] == "Fixed: `add` now returns a + b. The answer is 42."
    assert (claude["cost"], claude["cost_source"], claude["input_tokens"]) == (0.0421, "reported", 4520)
    assert [call["tool"] for call in claude["tool_calls"]][:2] == ["Bash", "Read"]
    broken = records["evals/config/eval-config.json::add[broken]"]
    assert "agent output not read: output.parser 'claude-code'" in broken["message"]


@needs_bwrap
def test_files_the_agents_command_line_names_are_visible_in_the_sandbox(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Outside the project, under the private /tmp: visible read-only because argv names them."""
    config = make_config_dir(pytester.path)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    notes = write(elsewhere / "notes.txt", "from elsewhere\n")
    reader = agent(
        elsewhere,
        "reader.py",
        "import sys\nprint(open(sys.argv[1]).read())\nopen(sys.argv[1], 'a').write('x')\n",
    )
    data = load_json(config / "cli-config.json")
    data["configurations"] = {"reader": {"cli": PYTHON, "args": [reader, str(notes)]}}
    write_cli_config(config / "cli-config.json", data)
    results = pytester.path / "results.json"
    run(pytester, "--vibe-sandbox", "bwrap", "--vibe-results", results, "-k", "add").assert_outcomes(failed=1)
    record = evals_by_nodeid(load_json(results))["evals/config/eval-config.json::add[reader]"]
    assert record["steps"][0]["exit_code"] == 1  # it read the file, then could not write to it
    assert "Read-only file system" in record["message"]
    assert notes.read_text() == "from elsewhere\n"
    assert "from elsewhere" in Path(record["steps"][0]["log"]).read_text()


@XDIST_MODES
def test_template_symlinks_to_ancestors_are_not_collected_again(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """pytest follows symlinked folders: without the plugin's guard it would collect the config folder
    again through each link, 40 levels deep (ELOOP errors), and two links make the walk exponential."""
    make_config_dir(pytester.path)
    workspace = pytester.path / "evals" / "problems" / "add" / "workspace"
    for name, target in {"up": "../../..", "again": "../../..", "top": "../../../..", "here": "."}.items():
        os.symlink(target, workspace / name)
    results = pytester.path / "results.json"
    args = ("--vibe-config", "oracle", "--vibe-results", results, "--vibe-keep-workspaces")
    result = run(pytester, *args, xdist=xdist)
    result.assert_outcomes(passed=2)
    records = evals_by_nodeid(load_json(results))
    assert sorted(records) == [
        "evals/config/eval-config.json::add[oracle]",
        "evals/config/eval-config.json::mul[oracle]",
    ]
    kept = Path(records["evals/config/eval-config.json::add[oracle]"]["workspace"]) / "workspace"
    assert os.readlink(kept / "up") == "../../.."  # the copy keeps the links as links


def test_a_symlinked_test_folder_is_still_collected(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A link to a folder elsewhere is collected as pytest does; only a cycle inside it is skipped."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    make_config_dir(elsewhere)
    os.symlink("../../..", elsewhere / "evals" / "problems" / "add" / "workspace" / "up")
    os.symlink(elsewhere, pytester.path / "linked")
    result = run(pytester, "--collect-only", "-q", "--vibe-config", "oracle")
    result.assert_outcomes()
    assert [line for line in result.outlines if "::" in line] == [
        "linked/evals/config/eval-config.json::add[oracle]",
        "linked/evals/config/eval-config.json::mul[oracle]",
    ]


def test_is_link_cycle(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    links = {
        "a/b/parent": "..",
        "a/b/grandparent": "../..",
        "a/b/itself": ".",
        "a/b/sibling": "../../other",
        "a/b/dangling": "missing",
        "a/b/loop": "loop",
        "a/b/file": "../../f.txt",
        "other/back": "../a",
    }
    (tmp_path / "f.txt").write_text("x")
    for link, target in links.items():
        os.symlink(target, tmp_path / link)
    cycles = {link for link in links if is_link_cycle(tmp_path / link)}
    assert cycles == {"a/b/parent", "a/b/grandparent", "a/b/itself"}
    assert not is_link_cycle(tmp_path / "a" / "b")  # a real folder
    # a/b/sibling -> other, other/back -> a: the walk reaches a again through two links.
    assert is_link_cycle(tmp_path / "a" / "b" / "sibling" / "back")
    assert not is_link_cycle(tmp_path / "other" / "back")


def test_a_writable_folder_naming_an_unknown_user_is_a_usage_error(pytester: pytest.Pytester) -> None:
    make_config_dir(pytester.path)
    pytester.makeini("[pytest]\nvibe_sandbox_writable = ~no-such-user-here/cache\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*vibe_sandbox_writable (ini): cannot expand '~no-such-user-here/cache': *"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
