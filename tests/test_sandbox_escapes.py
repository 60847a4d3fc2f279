"""What a coding eval's agent, steps and workspace template cannot make happen: a sandboxed agent
or step regain privileges as root (the usual CI container: remount ``/`` writable, make device
files); a template's ``prompt.md`` link get the prompt written through it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import PYTHON, evals_by_nodeid, load_json, run, write

from pytest_vibeeval.workspace.sandbox import bwrap_problem

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"{bwrap_problem()}")

# Reports its effective capabilities, then tries to remount / writable, to make a device file in
# its working folder and to write the file named by its first argument (outside the sandbox's
# writable folders); prints one PROBE line.
PROBE = """
import json, os, subprocess, sys
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
remount = subprocess.run(["mount", "-o", "remount,bind,rw", "/"], capture_output=True, text=True)
report = {"cap_eff": status["CapEff"].strip(), "remount": remount.returncode}
try:
    os.mknod("null", 0o20666, os.makedev(1, 3))
    report["mknod"] = "made"
except OSError as exc:
    report["mknod"] = type(exc).__name__
try:
    with open(sys.argv[1], "w") as handle:
        handle.write("pwned")
    report["outside"] = "written"
except OSError as exc:
    report["outside"] = type(exc).__name__
print("PROBE " + json.dumps(report), flush=True)
"""


def _coding_suite(
    root: Path, configuration: dict[str, Any], commands: dict[str, Any], **steps: list[str]
) -> None:
    write(root / "ws" / "README.md", "the workspace\n")
    (root / "grading").mkdir(exist_ok=True)
    step_keys = "".join(f"\n    {key}: {json.dumps(names)}" for key, names in steps.items())
    write(
        root / "esc.eval.yaml",
        f"""
metadata: {{name: esc, model: m}}
configurations:
  c: {json.dumps(configuration)}
commands: {json.dumps(commands)}
evals:
  - name: a
    prompt: do it
    workspace: ws
    grading: grading{step_keys}
""",
    )


def _probes(log: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in Path(log).read_text().splitlines() if line.startswith("PROBE ")]


@needs_bwrap
def test_sandboxed_agents_and_steps_have_no_capabilities_even_as_root(pytester: pytest.Pytester) -> None:
    marker = Path.home() / f"vibe-cap-escape-{os.getpid()}"
    probe = write(pytester.path / "probe.py", PROBE)
    step = {"command": PYTHON, "args": [str(probe), str(marker)]}
    _coding_suite(
        pytester.path,
        {"cli": PYTHON, "args": [str(probe), str(marker)]},
        {"build-probe": step, "grade-probe": step},
        build_steps=["build-probe"],
        grade_steps=["grade-probe"],
    )
    results = pytester.path / "results.json"
    try:
        run(pytester, "--vibe-sandbox", "bwrap", "--vibe-results", results).assert_outcomes(passed=1)
        record = evals_by_nodeid(load_json(results))["esc.eval.yaml::a[c]"]
        assert record["sandbox"] == "bwrap"
        reports = [report for step in record["steps"] for report in _probes(step["log"])]
        assert len(reports) == 3  # the agent, the build step, the grade step
        for report in reports:
            assert report == {
                "cap_eff": "0000000000000000",
                "remount": 32,  # mount(8): permission denied
                "mknod": "PermissionError",
                "outside": "OSError",
            }
        assert not marker.exists()
    finally:
        marker.unlink(missing_ok=True)


SHOW_PROMPT = "print(open('prompt.md').read())"


def test_a_prompt_md_link_in_the_template_is_replaced_not_written_through(pytester: pytest.Pytester) -> None:
    victim = write(pytester.path / "victim.txt", "precious\n")
    _coding_suite(pytester.path, {"cli": PYTHON, "args": ["-c", SHOW_PROMPT]}, {})
    (pytester.path / "ws" / "prompt.md").symlink_to(victim)
    results = pytester.path / "results.json"
    run(pytester, "--vibe-sandbox", "none", "--vibe-results", results).assert_outcomes(passed=1)
    assert victim.read_text() == "precious\n"
    record = evals_by_nodeid(load_json(results))["esc.eval.yaml::a[c]"]
    assert Path(record["steps"][0]["log"]).read_text() == "do it\n\n"


def test_a_prompt_md_folder_in_the_template_is_a_clear_failure(pytester: pytest.Pytester) -> None:
    _coding_suite(pytester.path, {"cli": PYTHON, "args": ["-c", SHOW_PROMPT]}, {})
    (pytester.path / "ws" / "prompt.md").mkdir()
    results = pytester.path / "results.json"
    run(pytester, "--vibe-sandbox", "none", "--vibe-results", results).assert_outcomes(failed=1)
    record = evals_by_nodeid(load_json(results))["esc.eval.yaml::a[c]"]
    assert record["message"] == (
        f"the prompt is not written: {pytester.path / 'ws' / 'prompt.md'} is a folder; the prompt goes "
        "to prompt.md in the workspace: rename or remove that folder in the template"
    )
    assert record["steps"] == []


# Reads the hidden test directly and through git, from the repository given as its first argument
# and, in the worktree case, from the main repository given as its second.
GIT_PEEK = """
import subprocess, sys
for root in sys.argv[1:]:
    try:
        print("direct:", open(root + "/grading/hidden_test.py").read())
    except OSError as exc:
        print("direct:", type(exc).__name__)
    for argv in (["git", "-C", root, "show", "HEAD:grading/hidden_test.py"],
                 ["git", "-C", root, "log", "-p", "--all"]):
        shown = subprocess.run(argv, capture_output=True, text=True)
        print("git:", shown.returncode, shown.stdout, shown.stderr)
"""
HIDDEN_TEST = "assert 'secret-expected-4711'\n"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True, capture_output=True
    )


@needs_bwrap
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("checkout", ["repository", "worktree"])
def test_hidden_tests_cannot_be_read_through_git(pytester: pytest.Pytester, checkout: str) -> None:
    main = pytester.path / "main"
    peek = write(pytester.path / "peek.py", GIT_PEEK)
    _coding_suite(main, {"cli": PYTHON, "args": [str(peek)]}, {})
    write(main / "grading" / "hidden_test.py", HIDDEN_TEST)
    _git(main, "init", "-q")
    _git(main, "add", "-A")
    _git(main, "commit", "-q", "-m", "suite")
    project, roots = main, [str(main)]
    if checkout == "worktree":
        project = pytester.path / "linked"
        _git(main, "worktree", "add", "-q", str(project))
        shutil.rmtree(main / "grading")  # only its history has the hidden test now
        roots = [str(project), str(main)]
    configuration = {"cli": PYTHON, "args": [str(peek), *roots]}
    _coding_suite(project, configuration, {})
    results = project / "results.json"
    args = ("--vibe-sandbox", "bwrap", "--vibe-results", results, "--rootdir", project, project)
    run(pytester, *args).assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(results))["esc.eval.yaml::a[c]"]
    log = Path(record["steps"][0]["log"]).read_text()
    assert log.count("direct: FileNotFoundError") == len(roots)
    assert log.count("git: 128 ") == 2 * len(roots)  # not a git repository
    assert "secret-expected" not in log


@needs_bwrap
def test_an_agent_and_a_step_found_on_path_under_tmp_run_in_the_sandbox(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside the project, in a folder of the private /tmp: visible read-only, as they were found."""
    tools = tmp_path_factory.mktemp("tools")
    folders = [tools / "agent-bin", tools / "step-bin"]  # apart: each must be shown on its own
    for folder, name in zip(folders, ("fake-agent-cli", "fake-step-tool"), strict=True):
        write(folder / name, f"#!/bin/sh\necho {name} ran\n").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([*map(str, folders), os.environ["PATH"]]))
    _coding_suite(
        pytester.path,
        {"cli": "fake-agent-cli"},
        {"tool": {"command": "fake-step-tool"}},
        build_steps=["tool"],
    )
    results = pytester.path / "results.json"
    run(pytester, "--vibe-sandbox", "bwrap", "--vibe-results", results).assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(results))["esc.eval.yaml::a[c]"]
    logs = [Path(step["log"]).read_text() for step in record["steps"]]
    assert logs == ["fake-agent-cli ran\n", "fake-step-tool ran\n"]
