"""The unified runner's repository layout, run unchanged: EVAL_ROOT found without a setting, the
named folders never collected, workspaces inside the problem folder, grading in a copy of the
grading folder beside it with the agent's work in ``workspace/``, subtasks by module from
``workspace/results/``, and the runner's scoring rules."""

from __future__ import annotations

import json
import os
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
    run_of,
    write,
    write_cli_config,
)

from pytest_vibeeval.errors import InputError
from pytest_vibeeval.loading.named_folders import is_named_folder
from pytest_vibeeval.loading.runner_config import load_config_dir
from pytest_vibeeval.workspace.sandbox import bwrap_problem

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"{bwrap_problem()}")
NODE = "evals/config/eval-config.json::calc[{}]"

# Runs in the grading copy: the agent's work is in workspace/, the problem by a relative path.
RUN_HIDDEN = """
import importlib.util, json, os, sys
from pathlib import Path

problem = Path("../../problems/calc/workspace/problem.md")  # as the runner's grading packages reach it
assert problem.is_file(), f"relative path does not resolve from {os.getcwd()}"
tasks = {"add-small": lambda m: m.add(1, 2) == 3, "add-zero": lambda m: m.add(-1, 1) == 0,
         "mul": lambda m: m.mul(2, 3) == 6}
try:
    spec = importlib.util.spec_from_file_location("calc", "workspace/src/calc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
except Exception:
    module = None
results = []
for task, check in tasks.items():
    try:
        passed = module is not None and bool(check(module))
    except Exception:
        passed = False
    results.append({"taskId": task, "passed": passed})
os.makedirs("workspace/results", exist_ok=True)
Path("workspace/results/calc.json").write_text(json.dumps(results))
# the run's own summary in the results folder is never a module
Path("workspace/results/results.json").write_text(json.dumps([{"taskId": "bogus", "passed": True}]))
Path("where.json").write_text(json.dumps({"cwd": os.getcwd(), "listing": sorted(os.listdir("."))}))
sys.exit(0 if all(r["passed"] for r in results) else 1)
"""
LINT = """
import sys
from pathlib import Path
sys.exit(1 if "FIXME" in Path("workspace/src/calc.py").read_text() else 0)
"""
# A build step that finds the repository's node_modules by walking up, as tsc finds @types.
FIND_MODULES = """
import os, sys
here = os.getcwd()
while True:
    if os.path.isfile(os.path.join(here, "node_modules", ".marker")):
        sys.exit(0)
    if os.path.dirname(here) == here:
        sys.exit("no node_modules above " + os.getcwd())
    here = os.path.dirname(here)
"""
SOLUTION = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
AGENTS = {
    "oracle": f"open('src/calc.py', 'w').write({SOLUTION!r})\n",
    "nop": "pass\n",
    "sloppy": f"open('src/calc.py', 'w').write({SOLUTION + '# FIXME tidy up' + chr(10)!r})\n",
    "breaker": "open('src/calc.py', 'w').write('def add(:\\n')\n",
}
SNOOP = """
import json, os
def seen(path):
    return os.path.exists(path)
report = {
    "own_hidden": seen("../../../../grading/calc/hidden/run_hidden.py"),
    "grading_folder": seen("../../../../grading") and bool(os.listdir("../../../../grading")),
    "other_problem": seen("../../../other/workspace/secret.txt"),
    "own_template": seen("../../workspace/src/calc.py"),
    "siblings": sorted(os.listdir("../..")),
    "root_modules": seen("../../../../node_modules/.marker"),
    "cwd": os.getcwd(),
}
print(json.dumps(report))
"""


def make_repository(root: Path, configurations: dict[str, str] | None = None) -> Path:
    """A repository laid out as the unified runner's: evals/config, problems/, grading/, prompts/
    at the root. Returns the config folder."""
    write(root / "node_modules" / ".marker", "")
    write(root / "prompts" / "problems" / "calc.md", "Implement calc.\n")
    write(root / "prompts" / "shared" / "evaluation-instructions.md", "Work only in this folder.\n")
    template = root / "problems" / "calc" / "workspace"
    write(template / "problem.md", "add and mul\n")
    write(template / "src" / "calc.py", "def add(a, b):\n    return a + b\n")
    write(template / "test_public_broken.py", "import a_module_that_does_not_exist\n")
    write(root / "problems" / "other" / "workspace" / "secret.txt", "other problem\n")
    write(root / "problems" / "other" / "workspace" / "problem.md", "other\n")
    write(root / "prompts" / "problems" / "other.md", "Other.\n")
    grading = root / "grading" / "calc"
    write(grading / "hidden" / "run_hidden.py", RUN_HIDDEN)
    write(grading / "lint.py", LINT)
    write(grading / "tests" / "test_hidden_broken.py", "import a_module_that_does_not_exist\n")
    write(grading / "workspace" / "stale.txt", "left by an earlier run\n")
    write(root / "grading" / "other" / "check.py", "")
    config = root / "evals" / "config"
    vybes = {"multiplier": 2, "timeLimitMinutes": 10, "description": "Calculator", "category": "utilities"}
    evaluations = {
        "calc": {
            "workspace": "${EVAL_ROOT}/problems/calc/workspace",
            "grading": "${EVAL_ROOT}/grading/calc",
            "prompt": "calc.md",
            "buildSteps": ["find-modules", "compile"],
            "gradeSteps": ["lint", "test:hidden"],
            "vybes": vybes,
        },
        "other": {
            "workspace": "${EVAL_ROOT}/problems/other/workspace",
            "grading": "${EVAL_ROOT}/grading/other",
            "prompt": "other.md",
        },
    }
    write(config / "eval-config.json", json.dumps({"evaluations": evaluations}, indent=2))
    registry = {
        "find-modules": {"command": PYTHON, "args": ["-c", FIND_MODULES], "timeout": 60000},
        "compile": {"command": PYTHON, "args": ["-m", "py_compile", "src/calc.py"], "timeout": 60000},
        "lint": {"command": PYTHON, "args": ["lint.py"], "timeout": 60000},
        "test:hidden": {"command": PYTHON, "args": ["hidden/run_hidden.py"], "timeout": 60000},
    }
    write(config / "command-registry.json", json.dumps(registry, indent=2))
    scripts = root / "agents"
    bodies = configurations or AGENTS
    cli = {
        name: {"cli": PYTHON, "args": [agent(scripts, f"{name}.py", body)]} for name, body in bodies.items()
    }
    write_cli_config(config / "cli-config.json", {"configurations": cli})
    return config


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --- 1. eval-config.json: the vybes block as the runner writes it ----------------------------------


def test_vybes_description_and_category_load_and_typos_are_still_refused(tmp_path: Path) -> None:
    config = make_repository(tmp_path)
    vybes = load_config_dir(config, {}).evaluations["calc"].vybes
    assert vybes is not None
    assert (vybes.multiplier, vybes.timeLimitMinutes, vybes.description, vybes.category) == (
        2,
        10,
        "Calculator",
        "utilities",
    )
    data = load_json(config / "eval-config.json")
    data["evaluations"]["calc"]["vybes"]["categroy"] = "utilities"
    write(config / "eval-config.json", json.dumps(data, indent=2))
    with pytest.raises(InputError) as info:
        load_config_dir(config, {})
    rendered = info.value.render()
    assert "eval-config.json:20: evaluations.calc.vybes: unknown key 'categroy'" in rendered, rendered
    assert "(did you mean 'category'?)" in rendered


# --- 2. ${EVAL_ROOT} in both layouts, with no setting ----------------------------------------------


def test_eval_root_is_the_repository_root_in_the_runners_layout(tmp_path: Path) -> None:
    config = make_repository(tmp_path)
    loaded = load_config_dir(config, {})
    assert (loaded.eval_root, loaded.layout) == (tmp_path, "repository")
    calc = loaded.evaluations["calc"]
    assert calc.workspace == tmp_path / "problems" / "calc" / "workspace"
    assert calc.prompt_file == tmp_path / "prompts" / "problems" / "calc.md"
    assert loaded.shared_instructions == tmp_path / "prompts" / "shared" / "evaluation-instructions.md"
    # set by hand to the same root, the prompts are still found
    by_hand = load_config_dir(config, {"EVAL_ROOT": str(tmp_path)})
    assert (by_hand.layout, by_hand.evaluations["calc"].prompt_file) == ("repository", calc.prompt_file)


def test_a_byte_order_mark_does_not_change_the_layout(tmp_path: Path) -> None:
    """An editor's "UTF-8 with BOM" eval-config.json loads as without, EVAL_ROOT included."""
    config = make_repository(tmp_path)
    path = config / "eval-config.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    loaded = load_config_dir(config, {})
    assert (loaded.eval_root, loaded.layout) == (tmp_path, "repository")


def test_eval_root_is_the_evals_folder_in_the_seeds_layout(tmp_path: Path) -> None:
    config = make_repository(tmp_path / "x")
    evals = config.parent
    for name in ("problems", "grading"):
        os.rename(tmp_path / "x" / name, evals / name)
    loaded = load_config_dir(config, {})
    assert (loaded.eval_root, loaded.layout) == (evals, "seed")
    assert loaded.evaluations["calc"].grading == evals / "grading" / "calc"
    assert loaded.evaluations["calc"].prompt_file == tmp_path / "x" / "prompts" / "problems" / "calc.md"


# --- 3. the named folders and the copies are never collected ---------------------------------------


def test_named_folders_are_recognised(tmp_path: Path) -> None:
    make_repository(tmp_path)
    assert is_named_folder(tmp_path / "grading" / "calc", {})
    assert is_named_folder(tmp_path / "problems" / "other" / "workspace", {})
    assert not is_named_folder(tmp_path / "problems", {})
    assert not is_named_folder(tmp_path / "agents", {})


@XDIST_MODES
def test_named_folders_are_not_collected_without_an_ini_setting(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_repository(pytester.path)
    # pytest's default norecursedirs would skip dot-folders: without them, our hook still does
    result = run(pytester, "--collect-only", "-q", "-o", "norecursedirs=", xdist=xdist)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    if not xdist:
        result.stdout.fnmatch_lines([NODE.format("breaker"), "*8 tests collected*"])
    result.stdout.no_fnmatch_line("*a_module_that_does_not_exist*")
    result.stdout.no_fnmatch_line("*test_hidden_broken*")


# --- 4, 5. grading as the runner lays it out; subtasks by module; the scoring rules ------------------


@XDIST_MODES
def test_grading_copy_holds_the_work_in_workspace_and_scores_by_the_runners_rules(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    config = make_repository(pytester.path)
    before = {name: tree(pytester.path / name) for name in ("problems", "grading")}
    results_path = pytester.path / "results.json"
    result = run(pytester, "-k", "calc", "--vibe-results", results_path, "-o", "norecursedirs=", xdist=xdist)
    result.assert_outcomes(passed=1, failed=3)
    results = load_json(results_path)
    records = evals_by_nodeid(results)

    oracle = records[NODE.format("oracle")]
    assert oracle["outcome"] == "passed", oracle["message"]
    agent_step, *_, hidden = oracle["steps"]
    # the workspace sat inside the problem folder, where the root's node_modules is found
    workspace = Path(agent_step["cwd"])
    assert workspace.name == "workspace" and workspace.parent.name.startswith(".tmp-workspace-")
    assert workspace.parent.parent == pytester.path / "problems" / "calc"
    # the grade steps ran in a copy beside the grading folder, the agent's work in workspace/
    grading = Path(hidden["cwd"])
    assert grading.parent == pytester.path / "grading" and grading.name.startswith(".tmp-grading-")
    assert grading.name.endswith("-calc")
    assert (oracle["subtasks_passed"], oracle["subtasks_total"]) == (3, 3)
    assert oracle["subtask_modules"] == {
        "calc": {
            "passed": 3,
            "total": 3,
            "passed_tasks": ["add-small", "add-zero", "mul"],
            "failed_tasks": [],
        }
    }
    # nop: the template already passes two hidden subtasks
    nop = records[NODE.format("nop")]
    assert (nop["subtasks_passed"], nop["subtasks_total"]) == (2, 3)
    assert nop["message"].startswith("grade step 'test:hidden' exited with code 1")
    # breaker: a failing build step does not stop the grading
    breaker = records[NODE.format("breaker")]
    assert [(s["phase"], s["name"], s["exit_code"]) for s in breaker["steps"]] == [
        ("agent", "breaker", 0),
        ("build", "find-modules", 0),
        ("build", "compile", 1),
        ("grade", "lint", 0),
        ("grade", "test:hidden", 1),
    ]
    assert (breaker["subtasks_passed"], breaker["subtasks_total"]) == (0, 3)

    def vybes(config_id: str) -> float:
        return run_of(results, config_id)["variables"]["calc_vybes"]

    assert vybes("oracle") == 200.0  # 100 × 2 × 3/3 × 1
    assert vybes("nop") == 133.33  # 100 × 2 × 2/3, rounded to 2 decimals
    assert vybes("sloppy") == 0.0  # all subtasks pass, but the lint step failed
    assert vybes("breaker") == 0.0
    # the templates and grading folders were only read; no copy is left in the repository
    assert {name: tree(pytester.path / name) for name in ("problems", "grading")} == before
    leftovers = [p for p in pytester.path.rglob(".tmp-*")]
    assert leftovers == []
    assert config.is_dir()


def test_kept_grading_copy_shows_the_runners_layout(pytester: pytest.Pytester) -> None:
    make_repository(pytester.path, {"oracle": AGENTS["oracle"]})
    results_path = pytester.path / "results.json"
    result = run(pytester, "-k", "calc", "--vibe-keep-workspaces", "--vibe-results", results_path)
    result.assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(results_path))[NODE.format("oracle")]
    grading = Path(record["steps"][-1]["cwd"])
    where = load_json(grading / "where.json")
    assert where["cwd"] == str(grading)
    # the grading folder's files, the agent's work in workspace/ (the template's stale one dropped)
    assert where["listing"] == ["hidden", "lint.py", "tests", "workspace"]
    assert sorted(p.name for p in (grading / "workspace").iterdir()) == [
        "problem.md",
        "prompt.md",
        "results",
        "src",
        "test_public_broken.py",
    ]
    assert record["workspace"] == str(Path(record["steps"][0]["cwd"]).parent)  # kept in the tree
    assert (pytester.path / "grading" / "calc" / "workspace" / "stale.txt").is_file()


@needs_bwrap
@XDIST_MODES
def test_bwrap_hides_grading_and_other_problems_from_an_agent_in_the_tree(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_repository(pytester.path, {"snoop": SNOOP})
    results_path = pytester.path / "results.json"
    run(pytester, "--vibe-sandbox", "bwrap", "--vibe-results", results_path, xdist=xdist)
    records = evals_by_nodeid(load_json(results_path))
    log = Path(records[NODE.format("snoop")]["steps"][0]["log"])
    report: dict[str, Any] = json.loads(log.read_text().strip().splitlines()[-1])
    assert report["own_hidden"] is False
    assert report["grading_folder"] is False
    assert report["other_problem"] is False
    assert report["own_template"] is False
    assert report["siblings"] == [Path(report["cwd"]).parent.name]  # no other item's workspace
    assert report["root_modules"] is True  # the repository itself stays readable
