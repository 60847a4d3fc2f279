"""Coding-agent evals written in a YAML suite (`workspace`, `grading`, `build_steps`, `grade_steps`)
run exactly as those of a unified-runner config folder, beside ordinary prompt evals."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import PYTHON, XDIST_MODES, agent, evals_by_nodeid, load_json, run, run_of, write
from test_workspace_evals import NOP, ORACLE, make_config_dir

from pytest_vibeeval.errors import InputError
from pytest_vibeeval.loading.runner_config import resolve_suite_coding
from pytest_vibeeval.loading.suite import load_suite

# Answers prompt evals with "42"; in a workspace (prompt.md present) acts as the oracle.
ORACLE_OR_42 = (
    "import os, sys\n"
    "if not os.path.exists('prompt.md'):\n"
    "    sys.stdin.read()\n"
    "    print('The answer is 42.')\n"
    "    raise SystemExit\n" + ORACLE
)


def make_suite(root: Path, evals: str = "", top: str = "") -> Path:
    """``root/suite.eval.yaml`` over make_config_dir's problems, with oracle and nop agents."""
    make_config_dir(root)
    scripts = root / "agents"
    oracle = agent(scripts, "oracle42.py", ORACLE_OR_42)
    nop = agent(scripts, "nop.py", NOP)
    configurations = {
        "oracle": {"cli": PYTHON, "args": [oracle, str(root / "evals" / "solutions")]},
        "nop": {"cli": PYTHON, "args": [nop]},
    }
    commands = {
        "compile": {"command": PYTHON, "args": ["-m", "py_compile", "calc.py"]},
        "public": {"command": PYTHON, "args": ["check_public.py"]},
        "hidden": {"command": PYTHON, "args": ["check_hidden.py"]},
    }
    body = (
        evals
        or """
      - name: add
        prompt: "problem: add"
        workspace: evals/problems/add/workspace
        grading: evals/grading/add
        build_steps: [compile]
        grade_steps: [public, hidden]
        vybes: {multiplier: 2}
      - name: mul
        prompt: "problem: mul"
        workspace: ${EVAL_ROOT}/evals/problems/mul/workspace
        grading: evals/grading/mul
        grade_steps: [public, hidden]
      - name: answer
        prompt: What is 6 x 7?
        checks:
          - match: "*42*"
    """
    )
    text = (
        "metadata: {name: mixed, model: none}\n"
        "evals:\n" + "\n".join(line[4:] for line in body.strip("\n").splitlines()) + "\n"
        f"configurations: {json.dumps(configurations)}\n"
        f"{top or f'commands: {json.dumps(commands)}'}\n"
        "score: {formula: 'add * 50 + mul * 30 + answer * 20'}\n"
    )
    return write(root / "suite.eval.yaml", text)


@XDIST_MODES
def test_yaml_coding_evals_run_beside_prompt_evals(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester.path)
    results = pytester.path / "results.json"
    result = run(pytester, "suite.eval.yaml", "--vibe-results", results, "-rA", xdist=xdist)
    result.assert_outcomes(passed=3, failed=3)  # nop answers no prompt either
    data = load_json(results)
    records = evals_by_nodeid(data)
    add = records["suite.eval.yaml::add[oracle]"]
    assert [(s["phase"], s["name"]) for s in add["steps"]] == [
        ("agent", "oracle"),
        ("build", "compile"),
        ("grade", "public"),
        ("grade", "hidden"),
    ]
    assert add["vybes_multiplier"] == 2
    assert json.loads(Path(add["steps"][0]["log"]).read_text())["found"] == []  # hidden tests unseen
    assert records["suite.eval.yaml::answer[oracle]"]["outcome"] == "passed"
    assert records["suite.eval.yaml::mul[nop]"]["message"].startswith(
        "grade step 'public' exited with code 1"
    )
    assert run_of(data, "oracle")["score"] == 100.0
    assert run_of(data, "nop")["score"] == 0.0


def test_yaml_and_json_forms_run_the_same_steps(pytester: pytest.Pytester) -> None:
    make_suite(pytester.path)
    results = pytester.path / "results.json"
    run(
        pytester, "--vibe-results", results, "--vibe-config", "ALL", "--vibe-eval", "add,mul"
    ).assert_outcomes(passed=4, failed=6)
    records = evals_by_nodeid(load_json(results))

    def shape(record: dict[str, Any]) -> list[tuple[str, str, int | None]]:
        return [(s["phase"], s["name"], s["exit_code"]) for s in record["steps"][1:]]

    for problem in ("add", "mul"):
        json_form = records[f"evals/config/eval-config.json::{problem}[oracle]"]
        yaml_form = records[f"suite.eval.yaml::{problem}[oracle]"]
        assert json_form["outcome"] == yaml_form["outcome"] == "passed"
        if problem == "add":  # the JSON form compiles too, as the YAML `add` does
            assert shape(json_form) == shape(yaml_form)


def test_yaml_prompt_templates_are_filled_in(pytester: pytest.Pytester) -> None:
    evals = """
      - name: add
        prompt: "problem: {{ var('problem') }}"
        workspace: evals/problems/add/workspace
        grading: evals/grading/add
        grade_steps: [public]
    """
    make_suite(pytester.path, evals)
    write(pytester.path / "suite.eval.yaml", (pytester.path / "suite.eval.yaml").read_text().replace(
        "add * 50 + mul * 30 + answer * 20", "success_pct"))  # fmt: skip
    results = pytester.path / "results.json"
    args = ("suite.eval.yaml", "--vibe-config", "oracle")
    result = run(pytester, *args, "--vibe-var", "problem=add", "--vibe-results", results)
    result.assert_outcomes(passed=1)
    result = run(pytester, *args, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*problem*--vibe-var*"])


def test_the_registry_beside_the_suite_is_used_without_commands(pytester: pytest.Pytester) -> None:
    make_suite(pytester.path, top="score: {}")
    suite = pytester.path / "suite.eval.yaml"
    write(suite, suite.read_text().replace("score: {formula: 'add * 50 + mul * 30 + answer * 20'}\n", ""))
    registry = load_json(pytester.path / "evals" / "config" / "command-registry.json")
    write(pytester.path / "command-registry.json", json.dumps(registry))
    run(pytester, "suite.eval.yaml", "--vibe-config", "oracle").assert_outcomes(passed=3)


def _problems(root: Path, evals: str, top: str = "") -> str:
    path = make_suite(root, evals, top)
    try:
        suite = load_suite(path)
        resolve_suite_coding(suite, root, {})
    except InputError as exc:
        return exc.render(root)
    raise AssertionError("no problem found")


CASES = {
    "missing grading": (
        "- name: add\n  prompt: p\n  workspace: evals/problems/add/workspace\n  grade_steps: [public]",
        "suite.eval.yaml:3: evals[0]: a coding-agent eval needs both `workspace` and `grading`; "
        "`grading` is missing",
    ),
    "steps without a workspace": (
        "- name: add\n  prompt: p\n  checks: [{match: x}]\n  build_steps: [compile]",
        "suite.eval.yaml:3: evals[0]: `build_steps` belong to coding-agent evals",
    ),
    "checks on a coding eval": (
        "- name: add\n  prompt: p\n  workspace: evals/problems/add/workspace\n  grading: evals/grading/add\n"
        "  checks: [{match: x}]",
        "suite.eval.yaml:3: evals[0]: a coding-agent eval is decided by its build and grade steps",
    ),
    "unknown step": (
        "- name: add\n  prompt: p\n  workspace: evals/problems/add/workspace\n  grading: evals/grading/add\n"
        "  grade_steps: [public, hiden]",
        "suite.eval.yaml:7: evals[0].grade_steps[1]: unknown step 'hiden' (did you mean 'hidden'?)",
    ),
    "missing folder": (
        "- name: add\n  prompt: p\n  workspace: evals/problems/nope/workspace\n  grading: evals/grading/add",
        "suite.eval.yaml:5: evals[0].workspace: workspace folder * does not exist",
    ),
    "pseudo filesystem": (
        "- name: add\n  prompt: p\n  workspace: /proc/self\n  grading: evals/grading/add",
        "suite.eval.yaml:5: evals[0].workspace: workspace folder /proc/self is under /proc, a pseudo "
        "filesystem, not a folder of files (from '/proc/self')",
    ),
    "unset variable": (
        "- name: add\n  prompt: p\n  workspace: ${NOPE}/add\n  grading: evals/grading/add",
        "suite.eval.yaml:5: evals[0].workspace: variable NOPE is not set",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_yaml_coding_evals_name_the_line(tmp_path: Path, case: str) -> None:
    evals, expected = CASES[case]
    rendered = _problems(tmp_path, "\n".join("    " + line for line in evals.splitlines()))
    pattern = re.compile(".*".join(re.escape(part) for part in expected.split("*")))  # `[` is literal
    assert any(pattern.match(line) for line in rendered.splitlines()), rendered


@XDIST_MODES
def test_workspace_on_proc_fails_collection_before_copying(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """``cp -a /proc/self`` wrote gigabytes and never ended; now the suite fails to load, naming the line."""
    suite = make_suite(pytester.path)
    write(
        suite, suite.read_text().replace("workspace: evals/problems/add/workspace", "workspace: /proc/self")
    )
    result = run(pytester, "suite.eval.yaml", xdist=xdist)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "suite.eval.yaml:5: evals[0].workspace: workspace folder /proc/self is under /proc, a pseudo "
            "filesystem, not a folder of files (from '/proc/self')",
            "    hint: a template is copied for every item: name a folder of ordinary files, "
            "not one under /proc, /sys or /dev",
        ]
    )
    assert not list(pytester.path.rglob("workspace/fd"))  # nothing of /proc was copied


def test_a_coding_eval_needs_a_cli_configuration(pytester: pytest.Pytester) -> None:
    evals = """
      - name: add
        prompt: p
        workspace: evals/problems/add/workspace
        grading: evals/grading/add
    """
    suite = make_suite(pytester.path, evals)
    lines = [
        'configurations: {app: {python: "app:answer"}}' if line.startswith("configurations:") else line
        for line in suite.read_text().replace("add * 50 + mul * 30 + answer * 20", "success_pct").splitlines()
    ]
    write(suite, "\n".join(lines) + "\n")
    result = run(pytester, "suite.eval.yaml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*suite.eval.yaml*configuration 'app': coding-agent evals need a `cli` configuration"]
    )
