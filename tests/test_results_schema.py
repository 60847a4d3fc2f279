"""The results JSON matches the schema shipped in the package, and has the documented structure."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from typing import Any

import jsonschema
import pytest
import yaml
from helpers import PYTHON, XDIST_MODES, agent, comparable, evals_by_nodeid, load_json, run, run_of, write

from pytest_vibeeval.results import ResultsFile, RunRecord
from pytest_vibeeval.scoring.variables import EVAL_VARIABLES, run_variable_names

METRIC_KEYS = {
    "success_pct", "passed", "failed", "total",
    "total_latency", "avg_latency", "min_latency", "max_latency",
    "total_cost", "avg_cost", "min_cost", "max_cost", "total_judge_cost",
    "errors", "skipped",
}  # fmt: skip

APP = """
def answer(prompt):
    if "explode" in prompt:
        raise RuntimeError("provider exploded")
    return {"response": "4" if "2 + 2" in prompt else "green", "cost": 0.01, "output_tokens": 1}
"""

AGENT = """
import sys
prompt = sys.stdin.read()
if "explode" in prompt:
    print("agent exploded", file=sys.stderr)
    sys.exit(2)
print("4" if "2 + 2" in prompt else "green")
"""

EVALS = [
    {"name": "pass_me", "prompt": "What is 2 + 2?", "checks": [{"match": "*4*"}]},
    {"name": "fail_me", "prompt": "What colour is the sky?", "checks": [{"match": "*blue*"}]},
    {"name": "error_me", "prompt": "Please explode", "checks": [{"match": "*"}]},
    {"name": "skip_me", "prompt": "Say hi", "checks": [{"match": "*"}]},  # skipped by the conftest
    {"prompt": "Unnamed: what is 2 + 2?", "checks": [{"match": "*4*"}]},
]
NAMED = ("pass_me", "fail_me", "error_me", "skip_me")
UNNAMED_ID = "unnamed-what-is-2-2"
OUTCOMES = {
    "pass_me": "passed",
    "fail_me": "failed",
    "error_me": "error",
    "skip_me": "skipped",
    UNNAMED_ID: "passed",
}


def results_schema() -> Any:
    text = (resources.files("pytest_vibeeval") / "schemas" / "results.schema.json").read_text("utf-8")
    return json.loads(text)


SKIPPING_CONFTEST = """
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "skip_me" in item.nodeid:
            item.add_marker(pytest.mark.skip(reason="vibe_schema_skip_q7x"))
"""


def make_suite(pytester: pytest.Pytester) -> None:
    write(pytester.path / "vibe_schema_app.py", APP)
    write(pytester.path / "conftest.py", SKIPPING_CONFTEST)
    script = agent(pytester.path, "schema_agent.py", AGENT)
    suite = {
        "metadata": {"name": "mixed", "model": "test/model"},
        "evals": EVALS,
        "score": {"formula": "success_pct + pass_me * 10"},
        "configurations": {
            "app": {"python": "vibe_schema_app:answer", "name": "The app"},
            "agent": {"cli": PYTHON, "args": [script]},
        },
    }
    write(pytester.path / "mixed.eval.yaml", yaml.safe_dump(suite, sort_keys=False))


@XDIST_MODES
def test_results_match_the_schema_and_structure(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester)
    path = pytester.path / "out" / "results.json"
    result = run(pytester, "--vibe-results", str(path), xdist=xdist)
    result.assert_outcomes(passed=4, failed=4, skipped=2)
    data = load_json(path)

    schema = results_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(data)

    assert data["schema_version"] == 1
    assert data["interrupted"] is False
    assert data["started_at"] <= data["finished_at"]
    # runs × evals: one run per configuration, every eval in each.
    assert [(r["suite"], r["configuration"]) for r in data["runs"]] == [("mixed", "agent"), ("mixed", "app")]
    for run_record in data["runs"]:
        config_id = run_record["configuration"]
        assert run_record["source"] == "mixed.eval.yaml"
        assert run_record["score_formula"] == "success_pct + pass_me * 10"
        assert run_record["score_error"] is None
        assert run_record["score"] == pytest.approx(50 + 10)  # 2 of 4 ran evals passed; pass_me passed
        records = run_record["evals"]
        assert [r["name"] for r in records] == [*NAMED, UNNAMED_ID]  # the suite's order
        assert {r["name"]: r["outcome"] for r in records} == OUTCOMES
        for record in records:
            assert record["nodeid"] == f"mixed.eval.yaml::{record['name']}[{config_id}]"
            assert record["named"] is (record["name"] != UNNAMED_ID)
            assert record["xfail"] is False
            if record["outcome"] == "skipped":
                assert record["latency"] is None
                assert "vibe_schema_skip_q7x" in record["message"]
            else:
                assert record["latency"] >= 0
        by_name = {r["name"]: r for r in records}
        assert by_name["fail_me"]["checks"][0]["type"] == "match"
        assert by_name["fail_me"]["checks"][0]["passed"] is False
        assert by_name["pass_me"]["message"] is None

        metrics = run_record["metrics"]
        assert set(metrics) == METRIC_KEYS
        assert (metrics["passed"], metrics["failed"], metrics["total"]) == (2, 2, 4)
        assert (metrics["errors"], metrics["skipped"], metrics["success_pct"]) == (1, 1, 50.0)

        variables = run_record["variables"]
        expected_names = set(run_variable_names()) | {
            name + v.suffix for name in NAMED for v in EVAL_VARIABLES
        }
        assert set(variables) == expected_names  # unnamed evals have no per-eval variables
        assert variables["pass_me"] == 1.0 and variables["fail_me"] == 0.0 and variables["error_me"] == 0.0
        assert variables["skip_me"] is None and variables["skip_me_latency"] is None
        assert variables["success_pct"] == metrics["success_pct"]
        assert any("1 eval(s) skipped and not counted" in note for note in run_record["notes"])

    agent_run, app_run = run_of(data, "agent"), run_of(data, "app")
    # Cost is null wherever it is unknown: the agent reports none; the app's error has none.
    assert all(r["cost"] is None for r in agent_run["evals"])
    assert agent_run["metrics"]["total_cost"] is None and agent_run["variables"]["total_cost"] is None
    assert agent_run["variables"]["pass_me_cost"] is None
    app_records = {r["name"]: r for r in app_run["evals"]}
    assert app_records["pass_me"]["cost"] == 0.01
    assert app_records["error_me"]["cost"] is None
    assert app_run["metrics"]["total_cost"] is None  # unknown for one eval that ran
    assert app_run["variables"]["pass_me_cost"] == 0.01
    assert app_run["configuration_name"] == "The app" and agent_run["configuration_name"] is None
    assert app_records["pass_me"]["output_tokens"] == 1 and app_records["pass_me"]["input_tokens"] is None
    # The error of each kind of configuration is recorded with its reason.
    assert "provider exploded" in app_records["error_me"]["message"]
    agent_error = {r["name"]: r for r in agent_run["evals"]}["error_me"]
    assert "exited with code 2" in agent_error["message"]
    assert agent_error["steps"][0]["phase"] == "agent" and agent_error["steps"][0]["exit_code"] == 2
    assert set(evals_by_nodeid(data)) == {
        f"mixed.eval.yaml::{name}[{config}]" for name in OUTCOMES for config in ("agent", "app")
    }


def test_serial_and_xdist_results_are_the_same(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    serial, xdist = pytester.path / "serial.json", pytester.path / "xdist.json"
    run(pytester, "--vibe-results", str(serial))
    run(pytester, "--vibe-results", str(xdist), xdist=["-n", "2"])
    first, second = comparable(load_json(serial)), comparable(load_json(xdist))
    assert first == second


def minimal_results(metrics: dict[str, Any]) -> dict[str, Any]:
    """A results file of one run with these metrics, as JSON data."""
    run_record = RunRecord(
        suite="s", source="s.eval.yaml", configuration="app", score=None, score_formula="success_pct",
        score_error="no eval ran", metrics=metrics, variables={}, evals=[],
    )  # fmt: skip
    times = {"started_at": "2025-01-01T00:00:00+00:00", "finished_at": "2025-01-01T00:00:01+00:00"}
    return ResultsFile(runs=[run_record], **times).model_dump(mode="json")


@pytest.mark.parametrize(
    ("metrics", "wrong"),
    [
        ({"success_pct": 50.0, "passed": 1.0, "total_cost": None, "errors": 0, "skipped": 2}, None),
        ({"success_pct": 50.0, "precision": 0.5, "recall": None}, None),  # a plugin's metrics
        ({"success_pct": "50"}, "success_pct"),
        ({"total_cost": "$0.01"}, "total_cost"),
        ({"errors": 1.5}, "errors"),
        ({"skipped": -1}, "skipped"),
    ],
    ids=["built-in", "plugin", "text-pct", "text-cost", "fractional-errors", "negative-skipped"],
)
def test_the_documented_metrics_are_typed_and_plugin_metrics_allowed(
    metrics: dict[str, Any], wrong: str | None
) -> None:
    schema = results_schema()
    found = [
        list(error.absolute_path)
        for error in jsonschema.Draft202012Validator(schema).iter_errors(minimal_results(metrics))
    ]
    assert found == ([] if wrong is None else [["runs", 0, "metrics", wrong]])
    documented = schema["$defs"]["RunRecord"]["properties"]["metrics"]
    assert set(documented["properties"]) == METRIC_KEYS and documented["additionalProperties"] is True


def test_shipped_schema_is_up_to_date() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "schema", "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
