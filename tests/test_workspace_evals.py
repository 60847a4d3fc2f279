"""Coding-agent evals from a unified-runner config folder: collection, and the run (agent, build
steps, grade steps in a copy of the grading folder) with real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import PYTHON, XDIST_MODES, agent, evals_by_nodeid, load_json, run, write, write_cli_config

PROBLEMS = {"add": "a + b", "mul": "a * b"}
CONFIGS = ("oracle", "nop", "breaker")

# Copies the reference solution of the problem named on prompt.md's first line into the workspace,
# after looking for the hidden grading check everywhere it could reach.
ORACLE = """
import json, os, shutil, sys
found = [os.path.join(d, f) for top in ("..", ".") for d, _, files in os.walk(top)
         for f in files if f == "check_hidden.py"]
print(json.dumps({"found": found, "argv": sys.argv[1:], "stdin": sys.stdin.read()}))
problem = open("prompt.md").readline().split()[-1]
shutil.copytree(os.path.join(sys.argv[1], problem), ".", dirs_exist_ok=True)
"""
NOP = "print('nothing to do')\n"
BREAKER = "open('calc.py', 'w').write('def broken(:\\n')\n"


def make_config_dir(root: Path, registry_extra: dict[str, Any] | None = None) -> Path:
    """``root/evals/config`` with 2 evaluations × 3 configurations; prompts in ``root/prompts``."""
    evals = root / "evals"
    scripts = root / "agents"
    for problem, expression in PROBLEMS.items():
        write(evals / "problems" / problem / "workspace" / "calc.py", "def f(a, b):\n    return 0\n")
        write(evals / "problems" / problem / "workspace" / "problem.md", f"Make f return {expression}.\n")
        write(
            evals / "problems" / problem / "workspace" / "check_public.py",
            f"from calc import f\nassert f(2, 3) == {eval(expression, {'a': 2, 'b': 3})}, f(2, 3)\n",
        )
        write(
            evals / "grading" / problem / "check_hidden.py",
            "import os\nprint(sorted(os.listdir('.')))\nfrom calc import f\n"
            f"assert f(4, 5) == {eval(expression, {'a': 4, 'b': 5})}\n",
        )
        write(evals / "solutions" / problem / "calc.py", f"def f(a, b):\n    return {expression}\n")
        write(root / "prompts" / "problems" / f"{problem}.md", f"problem: {problem}\n")
    write(root / "prompts" / "shared" / "evaluation-instructions.md", "Shared: do not cheat.\n")
    config = evals / "config"
    write(
        config / "eval-config.json",
        json.dumps(
            {
                "evaluations": {
                    problem: {
                        "workspace": f"${{EVAL_ROOT}}/problems/{problem}/workspace",
                        "grading": f"${{EVAL_ROOT}}/grading/{problem}",
                        "prompt": f"{problem}.md",
                        "buildSteps": ["compile"],
                        "gradeSteps": ["public", "hidden"],
                    }
                    for problem in PROBLEMS
                }
            }
        ),
    )
    cli = {
        "oracle": {"cli": PYTHON, "args": [agent(scripts, "oracle.py", ORACLE), str(evals / "solutions")]},
        "nop": {"cli": PYTHON, "args": [agent(scripts, "nop.py", NOP)], "prompt_via": "argument"},
        "breaker": {"cli": PYTHON, "args": [agent(scripts, "breaker.py", BREAKER)], "timeout": 60000},
    }
    write_cli_config(config / "cli-config.json", {"configurations": cli})
    registry = {
        "compile": {"command": PYTHON, "args": ["-m", "py_compile", "calc.py"], "timeout": 60000},
        "public": {"command": PYTHON, "args": ["check_public.py"], "timeout": 60000},
        "hidden": {"command": PYTHON, "args": ["check_hidden.py"], "timeout": 60000},
        **(registry_extra or {}),
    }
    write(config / "command-registry.json", json.dumps(registry))
    return config


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = run(pytester, "--collect-only", "-q", *args)
    return [line for line in result.outlines if "::" in line]


def test_items_and_filtering(pytester: pytest.Pytester) -> None:
    make_config_dir(pytester.path)
    items = collected(pytester)
    assert sorted(items) == sorted(
        f"evals/config/eval-config.json::{p}[{c}]" for p in PROBLEMS for c in CONFIGS
    )
    assert sorted(collected(pytester, "--vibe-eval", "add")) == sorted(
        f"evals/config/eval-config.json::add[{c}]" for c in CONFIGS
    )
    assert sorted(collected(pytester, "--vibe-config", "nop,oracle")) == sorted(
        f"evals/config/eval-config.json::{p}[{c}]" for p in PROBLEMS for c in ("nop", "oracle")
    )
    assert collected(pytester, "-k", "mul and breaker") == ["evals/config/eval-config.json::mul[breaker]"]
    result = run(pytester, "--collect-only", "-q", "--vibe-config", "orcale")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--vibe-config: unknown 'orcale'*"])


def test_default_configurations_select(pytester: pytest.Pytester) -> None:
    config = make_config_dir(pytester.path)
    data = load_json(config / "cli-config.json")
    data["defaultConfigurations"] = ["nop"]
    write_cli_config(config / "cli-config.json", data)
    assert len(collected(pytester)) == 2
    assert len(collected(pytester, "--vibe-config", "ALL")) == 6


def test_bad_config_is_a_collection_error_naming_the_file(pytester: pytest.Pytester) -> None:
    config = make_config_dir(pytester.path)
    data = load_json(config / "eval-config.json")
    data["evaluations"]["add"]["gradeSteps"] = ["hiden"]
    write(config / "eval-config.json", json.dumps(data))
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*evals/config/eval-config.json*unknown step 'hiden'*"])


@XDIST_MODES
def test_oracle_passes_nop_and_breaker_fail(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_config_dir(pytester.path)
    templates = snapshot(pytester.path / "evals")
    results_path = pytester.path / "results.json"
    result = run(pytester, "-rA", "--vibe-results", str(results_path), "--vibe-keep-workspaces", xdist=xdist)
    result.assert_outcomes(passed=2, failed=4)
    assert snapshot(pytester.path / "evals") == templates  # the templates were never written to
    records = evals_by_nodeid(load_json(results_path))
    node = "evals/config/eval-config.json::{}[{}]"

    for problem in PROBLEMS:
        oracle = records[node.format(problem, "oracle")]
        assert oracle["outcome"] == "passed"
        phases = [(s["phase"], s["name"], s["exit_code"], s["timed_out"]) for s in oracle["steps"]]
        assert phases == [
            ("agent", "oracle", 0, False),
            ("build", "compile", 0, False),
            ("grade", "public", 0, False),
            ("grade", "hidden", 0, False),
        ]
        assert oracle["latency"] == oracle["steps"][0]["duration"]
        agent_step, hidden = oracle["steps"][0], oracle["steps"][3]
        seen = json.loads(Path(agent_step["log"]).read_text())
        assert seen["found"] == []  # the hidden check was nowhere the agent could look
        assert seen["stdin"] == "Execute the instructions in ./prompt.md"
        assert Path(agent_step["cwd"]).name == "workspace"
        prompt = (Path(agent_step["cwd"]) / "prompt.md").read_text()
        assert prompt == (
            f"problem: {problem}\n\nMake f return {PROBLEMS[problem]}.\n\nShared: do not cheat.\n"
        )
        assert Path(hidden["cwd"]).name == "grading"
        listing = Path(hidden["log"]).read_text()
        assert "'calc.py'" in listing and "'check_hidden.py'" in listing and "'prompt.md'" in listing

        nop = records[node.format(problem, "nop")]
        assert nop["outcome"] == "failed"
        assert [s["phase"] for s in nop["steps"]] == ["agent", "build", "grade", "grade"]
        assert nop["steps"][0]["argv"][-1] == "Execute the instructions in ./prompt.md"
        assert nop["steps"][2]["name"] == "public" and nop["steps"][2]["exit_code"] == 1
        assert nop["message"].startswith("grade step 'public' exited with code 1")
        assert "AssertionError: 0" in nop["message"]  # the log's tail

        breaker = records[node.format(problem, "breaker")]
        assert breaker["outcome"] == "failed"
        # a failing build step does not stop the grading (the unified runner's rule)
        assert [(s["phase"], s["name"]) for s in breaker["steps"]] == [
            ("agent", "breaker"),
            ("build", "compile"),
            ("grade", "public"),
            ("grade", "hidden"),
        ]
        assert breaker["message"].startswith("build step 'compile' exited with code 1")

    result.stdout.fnmatch_lines(
        ["*grade step 'public' exited with code 1*", "*AssertionError: 0*"], consecutive=False
    )
    result.stdout.fnmatch_lines(["*build step 'compile' exited with code 1*"])


def test_step_timeout_is_reported(pytester: pytest.Pytester) -> None:
    config = make_config_dir(pytester.path)
    registry = load_json(config / "command-registry.json")
    registry["compile"] = {"command": PYTHON, "args": ["-c", "import time; time.sleep(60)"], "timeout": 300}
    write(config / "command-registry.json", json.dumps(registry))
    result = run(pytester, "-k", "add and oracle")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*build step 'compile' timed out after 0.3 s*"])


def test_secrets_in_an_agents_args_are_redacted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIBE_SECRET_KEY", "sk-workspace-secret-42")
    config = make_config_dir(pytester.path)
    cli_config = json.loads((config / "cli-config.json").read_text())
    nop = cli_config["configurations"]["nop"]
    nop["args"] = [*nop["args"], "--key={{secret('key')}}"]
    write_cli_config(config / "cli-config.json", cli_config)
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-config", "nop", "--vibe-results", str(results), "-rA")
    result.assert_outcomes(failed=2)
    produced = result.stdout.str() + results.read_text()
    assert "sk-workspace-secret-42" not in produced
    agent_steps = [
        s for run_ in json.loads(results.read_text())["runs"] for e in run_["evals"] for s in e["steps"]
    ]
    assert any("--key=[secret]" in step["argv"] for step in agent_steps if step["phase"] == "agent")


def _with_score(config: Path, score: dict[str, Any]) -> None:
    eval_config = json.loads((config / "eval-config.json").read_text())
    eval_config["score"] = score
    (config / "eval-config.json").write_text(json.dumps(eval_config, indent=2))


@XDIST_MODES
def test_eval_config_score_formula_and_gate(pytester: pytest.Pytester, xdist: list[str]) -> None:
    config = make_config_dir(pytester.path)
    _with_score(config, {"formula": "add * 60 + mul * 40", "min": 50})
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-config", "oracle,nop", "--vibe-results", str(results), xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    runs = {r["configuration"]: r for r in load_json(results)["runs"]}
    assert runs["oracle"]["score"] == 100.0  # 1 * 60 + 1 * 40
    assert runs["oracle"]["gate"]["passed"] is True
    assert runs["nop"]["score"] == 0.0  # 0 * 60 + 0 * 40
    assert runs["nop"]["gate"]["passed"] is False
    result.stdout.fnmatch_lines(["*GATE FAILED: evals/config × nop: score 0.00 is below min 50*"])


def test_eval_config_bad_formula_is_a_collection_error_with_its_line(pytester: pytest.Pytester) -> None:
    config = make_config_dir(pytester.path)
    _with_score(config, {"formula": "ad * 2"})
    result = run(pytester, "--collect-only")
    result.stdout.fnmatch_lines(
        ["evals/config/eval-config.json:*: score.formula: unknown variable 'ad' (did you mean 'add'?)"]
    )
