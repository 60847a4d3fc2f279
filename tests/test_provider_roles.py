"""One `cli` configuration that answers prompt evals and also runs as a coding agent in the same
suite gets a provider per role, whichever item runs first: under --vibe-record the prompt eval is
recorded and the coding agent runs unwrapped, and the coding agent always has its process limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import PYTHON, XDIST_MODES, agent, evals_by_nodeid, load_json, run, write
from test_process_limits import needs_cgroup
from test_workspace_evals import make_config_dir
from test_yaml_coding_evals import ORACLE_OR_42

PROMPT_EVAL = """
  - name: answer
    prompt: What is 6 x 7?
    checks:
      - match: "*42*"
"""
CODING_EVAL = """
  - name: add
    prompt: "problem: add"
    workspace: evals/problems/add/workspace
    grading: evals/grading/add
    build_steps: [compile]
    grade_steps: [public, hidden]
"""


def make_suite(root: Path, prompt_first: bool) -> Path:
    """A suite with one prompt eval and one coding eval, both answered by the `oracle` CLI, which
    prints the cgroup it runs in when it works in a workspace."""
    make_config_dir(root)
    noting = (
        "import os\n"
        "if os.path.exists('prompt.md'):\n"
        "    print('cgroup:', open('/proc/self/cgroup').read().replace('\\n', ' '))\n"
    )
    oracle = agent(root / "agents", "oracle42.py", noting + ORACLE_OR_42)
    configurations = {"oracle": {"cli": PYTHON, "args": [oracle, str(root / "evals" / "solutions")]}}
    commands = {
        "compile": {"command": PYTHON, "args": ["-m", "py_compile", "calc.py"]},
        "public": {"command": PYTHON, "args": ["check_public.py"]},
        "hidden": {"command": PYTHON, "args": ["check_hidden.py"]},
    }
    evals = PROMPT_EVAL + CODING_EVAL if prompt_first else CODING_EVAL + PROMPT_EVAL
    return write(
        root / "suite.eval.yaml",
        "metadata: {name: roles, model: none}\n"
        "evals:" + evals + f"configurations: {json.dumps(configurations)}\n"
        f"commands: {json.dumps(commands)}\n",
    )


@XDIST_MODES
@pytest.mark.parametrize("prompt_first", [True, False], ids=["prompt-first", "coding-first"])
def test_a_configuration_answering_and_coding_gets_a_provider_per_role(
    pytester: pytest.Pytester, xdist: list[str], prompt_first: bool
) -> None:
    make_suite(pytester.path, prompt_first)
    store, results = pytester.path / "answers", pytester.path / "results.json"
    # --dist loadfile: both items on one worker, in the suite's order, as in a serial run.
    xdist = [*xdist, "--dist", "loadfile"] if xdist else xdist
    result = run(pytester, "suite.eval.yaml", "--vibe-record", store, "--vibe-results", results, xdist=xdist)
    result.assert_outcomes(passed=2)
    records = evals_by_nodeid(load_json(results))
    assert records["suite.eval.yaml::add[oracle]"]["outcome"] == "passed"
    assert records["suite.eval.yaml::answer[oracle]"]["outcome"] == "passed"
    stored = [json.loads(path.read_text()) for path in sorted(store.rglob("*.json"))]
    assert [entry["prompt"] for entry in stored] == ["What is 6 x 7?"]  # the answer, not the agent


@needs_cgroup
@pytest.mark.parametrize("prompt_first", [True, False], ids=["prompt-first", "coding-first"])
def test_the_coding_agent_keeps_its_process_limit_beside_prompt_evals(
    pytester: pytest.Pytester, prompt_first: bool
) -> None:
    make_suite(pytester.path, prompt_first)
    results = pytester.path / "results.json"
    run(pytester, "suite.eval.yaml", "--vibe-results", results).assert_outcomes(passed=2)
    agent_step = evals_by_nodeid(load_json(results))["suite.eval.yaml::add[oracle]"]["steps"][0]
    noted = [line for line in Path(agent_step["log"]).read_text().splitlines() if line.startswith("cgroup:")]
    assert len(noted) == 1 and "pytest-vibeeval-" in noted[0], noted
