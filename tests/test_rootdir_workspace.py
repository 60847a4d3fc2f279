"""A coding eval whose workspace is the rootdir itself, or the folder holding its config: a YAML
suite's `workspace: .`, an eval-config.json's `${EVAL_ROOT}/..` (EVAL_ROOT the folder holding
`config/`), `${EVAL_ROOT}/config`, and `${EVAL_ROOT}` where EVAL_ROOT is the rootdir (the runner's
layout, whose copies go beside the template). Such a workspace holds the eval's grading folder here.
It is copied like any other, without the grading folder (the agent never gets the hidden tests),
and the rootdir is untouched; when the copy would go inside it (pytest's --basetemp in that folder)
the item fails with a message naming the file and the fix, never a traceback, as when no folder
for the copy can be made beside the template (a read-only mount). Serially and with
`-n 2`; tests/hostile/MANIFEST.yaml has the same cases (`paths-workspace-*`)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import FAST_ARGS, PYTHON, XDIST_MODES, agent, evals_by_nodeid, load_json, run, write

from pytest_vibeeval.workspace.sandbox import bwrap_problem

# Writes answer.txt in its working directory (reading prompt.md first, as an agent does), unless it
# finds the hidden tests there.
WRITER = """
import pathlib
pathlib.Path("prompt.md").read_text()
seen = sorted(str(path) for path in pathlib.Path(".").rglob("check.py"))
pathlib.Path("answer.txt").write_text(f"saw the hidden tests: {seen}\\n" if seen else "done\\n")
print("done")
"""
# The grade step: the agent's answer.txt is in the grading copy (the runner's layout: in its workspace/).
CHECK = """
import pathlib
found = [p for p in ("answer.txt", "workspace/answer.txt") if pathlib.Path(p).is_file()]
assert [pathlib.Path(p).read_text() for p in found] == ["done\\n"], found
print("graded")
"""
COMMANDS = {"grade": {"command": PYTHON, "args": ["check.py"], "timeout": 60000}}


def _writer(root: Path) -> str:
    return agent(root.parent / f"agents-{root.name}", "writer.py", WRITER)  # outside, as on PATH


def yaml_suite(root: Path) -> str:
    """A YAML suite at the rootdir whose coding eval's workspace is `.`; its id."""
    write(root / "grading" / "check.py", CHECK)
    write(
        root / "ws.eval.yaml",
        f"""
        metadata: {{name: ws, model: m}}
        configurations: {{writer: {{cli: "{PYTHON}", args: ["{_writer(root)}"], timeout: 60000}}}}
        commands: {json.dumps(COMMANDS)}
        evals:
          - name: dot
            prompt: write the answer
            workspace: .
            grading: grading
            grade_steps: [grade]
        """,
    )
    return "ws.eval.yaml::dot[writer]"


def config_folder(root: Path, workspace: str, grading: str, location: str) -> str:
    """A unified-runner folder `evals/config/` whose evaluation's workspace is ``workspace`` and
    whose grading folder is ``grading``, spelled from EVAL_ROOT, the rootdir's ``location``; its id."""
    config = root / "evals" / "config"
    write(root / "prompts" / "problems" / "task.md", "Write done into answer.txt.\n")
    write(root / location / "check.py", CHECK)
    evaluation = {"workspace": workspace, "grading": grading, "prompt": "task.md", "gradeSteps": ["grade"]}
    write(config / "eval-config.json", json.dumps({"evaluations": {"task": evaluation}}))
    cli = {"writer": {"name": "writer", "cli": PYTHON, "args": [_writer(root)], "timeout": 60000}}
    write(config / "cli-config.json", json.dumps({"configurations": cli}))
    write(config / "command-registry.json", json.dumps(COMMANDS))
    return "evals/config/eval-config.json::task[writer]"


LAYOUTS: dict[str, tuple[Callable[[Path], str], str]] = {  # lays the case out; its workspace
    "yaml-dot": (yaml_suite, "."),
    "config-eval-root-parent": (  # EVAL_ROOT is evals/: the workspace is the rootdir
        lambda root: config_folder(
            root, "${EVAL_ROOT}/..", "${EVAL_ROOT}/grading/task", "evals/grading/task"
        ),
        ".",
    ),
    "config-own-folder": (
        lambda root: config_folder(
            root, "${EVAL_ROOT}/config", "${EVAL_ROOT}/config/hidden", "evals/config/hidden"
        ),
        "evals/config",
    ),
    "config-repository-root": (  # EVAL_ROOT is the rootdir (set in the environment): the runner's layout
        lambda root: config_folder(
            root, "${EVAL_ROOT}", "${EVAL_ROOT}/evals/grading/task", "evals/grading/task"
        ),
        ".",
    ),
}


def _run(
    pytester: pytest.Pytester, layout: str, basetemp: Path, xdist: list[str]
) -> tuple[pytest.RunResult, Path]:
    out = pytester.path.parent / f"results-{layout}.json"
    result = run(
        pytester,
        f"--rootdir={pytester.path}",
        f"--basetemp={basetemp}",
        f"--vibe-results={out}",
        "-rA",
        xdist=xdist,
    )
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    assert "During handling" not in output and "CopyError" not in output, output
    return result, out


@pytest.fixture
def laid_out(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], str]:
    def lay_out(layout: str) -> str:
        if layout == "config-repository-root":
            monkeypatch.setenv("EVAL_ROOT", str(pytester.path))
        else:
            monkeypatch.delenv("EVAL_ROOT", raising=False)
        return LAYOUTS[layout][0](pytester.path)

    return lay_out


@XDIST_MODES
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_workspace_equal_to_the_rootdir_runs_on_a_copy_without_the_hidden_tests(
    pytester: pytest.Pytester, laid_out: Callable[[str], str], layout: str, xdist: list[str]
) -> None:
    nodeid = laid_out(layout)
    result, out = _run(pytester, layout, pytester.path.parent / f"basetemp-{layout}", xdist)
    result.assert_outcomes(passed=1)  # the agent did not find check.py in its copy
    record = evals_by_nodeid(load_json(out))[nodeid]
    assert record["outcome"] == "passed"
    assert [step["exit_code"] for step in record["steps"]] == [0, 0]  # agent, grade step
    assert not list(pytester.path.rglob("answer.txt"))  # the agent wrote in its copy only
    assert not list(pytester.path.rglob("prompt.md"))
    assert len(list(pytester.path.rglob("check.py"))) == 1  # the grading folder is still there
    # the runner's layout copies beside the template, here beside the rootdir, and removes the copy
    assert not list(pytester.path.parent.glob(".tmp-*")) and not list(pytester.path.rglob(".tmp-*"))


@XDIST_MODES
@pytest.mark.parametrize("layout", [name for name in LAYOUTS if name != "config-repository-root"])
def test_a_workspace_holding_the_basetemp_is_a_clear_error(
    pytester: pytest.Pytester, laid_out: Callable[[str], str], layout: str, xdist: list[str]
) -> None:
    nodeid = laid_out(layout)
    workspace = LAYOUTS[layout][1]
    result, out = _run(pytester, layout, pytester.path / workspace / "bt", xdist)  # inside the workspace
    result.assert_outcomes(errors=1)
    source = nodeid.split("::")[0]
    line = ":5" if layout == "yaml-dot" else ""  # a YAML suite names the eval's line
    folder = (pytester.path / workspace).resolve()
    result.stdout.fnmatch_lines(
        [
            f"{source}{line}: eval '*': its workspace folder {folder} cannot be copied: *",
            "the copy would go to *, inside the folder itself * give --basetemp a folder outside *",
        ]
    )
    record = evals_by_nodeid(load_json(out))[nodeid]
    assert record["outcome"] == "error"
    assert not list(pytester.path.rglob("answer.txt"))


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"a read-only mount needs bwrap: {bwrap_problem()}")
@XDIST_MODES
def test_a_workspace_whose_copy_cannot_be_made_beside_it_is_a_clear_error(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """The runner's layout copies a template beside it: on a read-only mount (pytest run in bwrap
    with the problem's folder bound read-only) no folder can be made there."""
    nodeid = config_folder(
        pytester.path,
        "${EVAL_ROOT}/evals/problems/task/workspace",
        "${EVAL_ROOT}/evals/grading/task",
        "evals/grading/task",
    )
    problem = pytester.path / "evals" / "problems" / "task"
    write(problem / "workspace" / "problem.md", "The task.\n")
    bind = ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(problem), str(problem)]
    out = pytester.path.parent / "results-read-only.json"
    args = [*FAST_ARGS, *xdist, "--vibe-sandbox", "none", "--vibe-history=", f"--vibe-results={out}", "-rA"]
    done = subprocess.run(
        [*bind, PYTHON, "-m", "pytest", *args],
        cwd=pytester.path,
        env={**os.environ, "EVAL_ROOT": str(pytester.path)},  # the runner's layout
        capture_output=True,
        text=True,
        timeout=180,
    )
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    expected = (
        f"evals/config/eval-config.json: eval 'task': its workspace folder {problem / 'workspace'} cannot be "
        "copied: cannot make a folder for the copy beside it: Read-only file system"
    )
    assert expected in done.stdout, output
    assert evals_by_nodeid(load_json(out))[nodeid]["outcome"] == "error"
    assert list(problem.iterdir()) == [problem / "workspace"]
