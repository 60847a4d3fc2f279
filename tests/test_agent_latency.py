"""Agent-reported latency: ``output.latency_ms`` (a dotted path into the JSON/JSONL output, in
milliseconds) and a Python callable's ``latency`` (seconds) replace the measured wall time as the
eval's ``latency``; the step record keeps the measured duration."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import PYTHON, XDIST_MODES, agent, evals_by_nodeid, load_json, run, run_of, write
from test_workspace_agents import add_configurations
from test_workspace_evals import make_config_dir

# Answers every prompt with "ok"; `duration_ms` is the raw JSON text given for the prompt (omitted
# when the prompt is not in the table), so invalid values (NaN, strings, booleans) reach the parser.
REPORTING_AGENT = """
import json, sys
RAW = {raw!r}
prompt = sys.stdin.read()
fields = ['"result": "ok"']
if prompt in RAW:
    fields.append('"meta": {{"duration_ms": ' + RAW[prompt] + '}}')
print("{{" + ", ".join(fields) + "}}")
"""

JSONL_AGENT = """
import json, sys
sys.stdin.read()
for event in [
    {"type": "system", "duration_ms": 999999},
    {"type": "result", "result": "draft", "duration_ms": 111},
    {"type": "result", "result": "ok", "duration_ms": 4321},
    {"type": "progress", "duration_ms": 7},
]:
    print(json.dumps(event))
"""


def reporting_agent(directory: Path, raw: dict[str, str]) -> str:
    return agent(directory, "reporting_agent.py", REPORTING_AGENT.format(raw=raw))


def write_suite(
    directory: Path,
    configurations: dict[str, Any],
    prompts: list[str],
    *,
    formula: str = "success_pct",
    name: str = "timed",
) -> Path:
    data = {
        "metadata": {"name": name, "model": "m"},
        "evals": [
            # The "slow" eval fails: reported latency counts for failed evals too.
            {"name": p, "prompt": p, "checks": [{"match": "nope" if p == "slow" else "ok"}]}
            for p in prompts
        ],
        "score": {"formula": formula},
        "configurations": configurations,
    }
    return write(directory / f"{name}.eval.yaml", yaml.safe_dump(data, sort_keys=False))


def json_config(script: str, **output: Any) -> dict[str, Any]:
    return {
        "cli": PYTHON,
        "args": [script],
        "output": {"format": "json", "response": "result", "latency_ms": "meta.duration_ms", **output},
    }


def results_of(
    pytester: pytest.Pytester, *, xdist: list[str] | None = None, label: str = "results"
) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / f"{label}.json"
    result = run(pytester, "-rA", "--vibe-results", str(path), xdist=xdist)
    return result, load_json(path)


def record(data: dict[str, Any], eval_id: str, config_id: str = "agent", suite: str = "timed") -> Any:
    return evals_by_nodeid(data)[f"{suite}.eval.yaml::{eval_id}[{config_id}]"]


@XDIST_MODES
def test_reported_latency_replaces_wall_time(pytester: pytest.Pytester, xdist: list[str]) -> None:
    # 123456 ms is far longer than the agent can really take: seeing it proves it was used.
    script = reporting_agent(pytester.path, {"fast": "250", "slow": "123456", "text-number": '"1500"'})
    write_suite(
        pytester.path,
        {"agent": json_config(script)},
        ["fast", "slow", "text-number", "unreported"],
        formula="fast_latency + slow_latency + text-number_latency",
    )
    result, data = results_of(pytester, xdist=xdist)
    result.assert_outcomes(passed=3, failed=1)

    reported = {"fast": 250 / 1000, "slow": 123456 / 1000, "text-number": 1500 / 1000}
    for eval_id, seconds in reported.items():
        rec = record(data, eval_id)
        assert rec["latency"] == pytest.approx(seconds, rel=1e-12)
        # The step keeps what was measured: the real run of a tiny script, not the reported figure.
        (step,) = rec["steps"]
        assert 0 < step["duration"] < 30
        assert step["duration"] != rec["latency"]
    assert record(data, "slow")["outcome"] == "failed"

    # Not in the output: the measured wall time around the agent, close to the step's duration.
    unreported = record(data, "unreported")
    (step,) = unreported["steps"]
    assert 0 < unreported["latency"] < 30
    assert abs(unreported["latency"] - step["duration"]) < 5

    timed = run_of(data, "agent")
    expected_score = 250 / 1000 + 123456 / 1000 + 1500 / 1000  # fast + slow + text-number, seconds
    assert timed["score"] == pytest.approx(expected_score, rel=1e-12)
    assert timed["metrics"]["max_latency"] == pytest.approx(123.456, rel=1e-12)
    assert timed["metrics"]["total_latency"] == pytest.approx(
        expected_score + unreported["latency"], rel=1e-12
    )
    result.stdout.fnmatch_lines(
        ["Score: 125.21 (formula: fast_latency + slow_latency + text-number_latency)"]
    )


@XDIST_MODES
def test_invalid_reported_latency_is_an_error_naming_the_path(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    raw = {"negative": "-5", "nan": "NaN", "infinite": "Infinity", "word": '"fast"', "flag": "true"}
    raw |= {"listed": "[100]", "null": "null", "zero": "0"}
    script = reporting_agent(pytester.path, raw)
    write_suite(pytester.path, {"agent": json_config(script)}, list(raw))
    result, data = results_of(pytester, xdist=xdist)
    result.assert_outcomes(passed=2, failed=6)

    shown = {"negative": "-5", "nan": "nan", "infinite": "inf", "word": "'fast'", "flag": "True"}
    shown["listed"] = "[100]"
    for eval_id, value in shown.items():
        rec = record(data, eval_id)
        assert rec["outcome"] == "error", eval_id
        assert rec["message"] == (
            f"output.latency_ms path `meta.duration_ms` holds {value}, not a non-negative finite number"
        )
        assert rec["steps"][0]["exit_code"] == 0  # the agent ran; its output is what is wrong
    result.stdout.fnmatch_lines(
        ["*output.latency_ms path `meta.duration_ms` holds -5, not a non-negative finite number*"]
    )
    # null counts as absent (wall time); 0 is a valid report.
    assert record(data, "null")["outcome"] == "passed"
    assert 0 < record(data, "null")["latency"] < 30
    assert record(data, "zero")["latency"] == 0.0


def test_jsonl_latency_comes_from_the_selected_event(pytester: pytest.Pytester) -> None:
    script = agent(pytester.path, "jsonl_agent.py", JSONL_AGENT)
    config = {
        "cli": PYTHON,
        "args": [script],
        "output": {
            "format": "jsonl",
            "response": "result",
            "where": {"type": "result"},
            "latency_ms": "duration_ms",
        },
    }
    write_suite(pytester.path, {"agent": config}, ["ask"], formula="ask_latency")
    result, data = results_of(pytester)
    result.assert_outcomes(passed=1)
    assert record(data, "ask")["response"] == "ok"
    assert record(data, "ask")["latency"] == pytest.approx(4.321, rel=1e-12)  # 4321 ms
    assert run_of(data, "agent")["score"] == pytest.approx(4.321, rel=1e-12)


def test_latency_path_needs_structured_output(pytester: pytest.Pytester) -> None:
    config = {"cli": PYTHON, "args": ["-c", "print('ok')"], "output": {"latency_ms": "duration_ms"}}
    write_suite(pytester.path, {"agent": config}, ["ask"])
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*output.latency_ms ('duration_ms') needs `format: json` or `format: jsonl`*"]
    )


PYTHON_APP = """
def timed(prompt):
    return {"response": "ok", "latency": 2.5, "cost": 0.5}

def negative(prompt):
    return {"response": "ok", "latency": -1}

def wordy(prompt):
    return {"response": "ok", "latency": "slow"}

def untimed(prompt):
    return {"response": "ok"}
"""


@XDIST_MODES
def test_python_callable_may_report_latency(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write(pytester.path / "vibe_latency_app.py", PYTHON_APP)
    write_suite(
        pytester.path,
        {name: {"python": f"vibe_latency_app:{name}"} for name in ("timed", "negative", "wordy", "untimed")},
        ["ask"],
        formula="ask_latency / ask_cost",
    )
    result, data = results_of(pytester, xdist=xdist)
    result.assert_outcomes(passed=2, failed=2)
    assert record(data, "ask", "timed")["latency"] == 2.5
    assert run_of(data, "timed")["score"] == pytest.approx(2.5 / 0.5, rel=1e-12)
    assert 0 <= record(data, "ask", "untimed")["latency"] < 30  # measured
    assert record(data, "ask", "negative")["message"] == (
        "vibe_latency_app:negative returned latency=-1; expected a non-negative finite number"
    )
    assert record(data, "ask", "wordy")["message"] == (
        "vibe_latency_app:wordy returned latency='slow'; expected a non-negative finite number"
    )


HUGE_APP = """
def huge(prompt):
    return {"response": "ok", "latency": 1e308, "cost": 1e300}
"""


@XDIST_MODES
def test_huge_values_are_shown_in_exponent_form(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """A latency of 1e308 s (and a cost, score and gate as large) prints as 1.000e+308, in the
    Run Summary and the HTML report, never as 309 digits."""
    write(pytester.path / "vibe_huge_app.py", HUGE_APP)
    path = write_suite(pytester.path, {"huge": {"python": "vibe_huge_app:huge"}}, ["ask"], formula="ask_cost")
    path.write_text(path.read_text().replace("formula: ask_cost", "formula: ask_cost\n  max: 1"))
    html = pytester.path / "report.html"
    result = run(pytester, "--vibe-html", html, xdist=xdist)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "Score: 1.000e+300 (formula: ask_cost)",
            "Gate: FAILED: score 1.000e+300 is above max 1 (by 1.000e+300)",
            "Total Cost: $1.000e+300",
            "Latency: avg 1.000e+308s · min 1.000e+308s · max 1.000e+308s",
        ]
    )
    report = html.read_text(encoding="utf-8")
    assert "1.000e+308s" in report and "$1.000e+300" in report
    for text in (result.stdout.str(), report):
        assert not re.search(r"\d[\d,]{20}", text)


def test_same_scores_serial_and_xdist(pytester: pytest.Pytester) -> None:
    """Reported latencies make latency-based scores reproducible across runs and worker counts."""
    script = reporting_agent(pytester.path, {"fast": "250", "slow": "1750"})
    write_suite(
        pytester.path,
        {"agent": json_config(script)},
        ["fast", "slow"],
        formula="success_pct / avg_latency",
    )
    _, serial = results_of(pytester, label="serial")
    _, parallel = results_of(pytester, xdist=["-n", "2"], label="xdist")
    expected = 50 / ((0.25 + 1.75) / 2)  # one of two passed; mean of the reported latencies
    assert run_of(serial, "agent")["score"] == pytest.approx(expected, rel=1e-12)
    assert run_of(parallel, "agent")["score"] == run_of(serial, "agent")["score"]
    assert json.dumps(run_of(parallel, "agent")["metrics"], sort_keys=True) == json.dumps(
        run_of(serial, "agent")["metrics"], sort_keys=True
    )


# Solves the coding eval as the oracle does, then reports in JSON as Claude Code does.
REPORTING_CODER = """
import json, shutil, sys
sys.stdin.read()
problem = open("prompt.md").readline().split()[-1]
shutil.copytree(sys.argv[1] + "/" + problem, ".", dirs_exist_ok=True)
print(json.dumps({"result": "did it", "cost": 0.5, "duration_ms": 12345, "usage": {"in": 100, "out": 7}}))
"""


@XDIST_MODES
def test_coding_agent_reported_latency_replaces_wall_time(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    config = make_config_dir(pytester.path)
    script = agent(pytester.path / "agents", "reporting_coder.py", REPORTING_CODER)
    output = {"format": "json", "response": "result", "cost": "cost", "latency_ms": "duration_ms"}
    output |= {"input_tokens": "usage.in", "output_tokens": "usage.out"}
    add_configurations(
        config,
        {"reporting": {"cli": PYTHON, "args": [script, str(config.parent / "solutions")], "output": output}},
    )
    path = pytester.path / "results.json"
    args = ("--vibe-sandbox", "none", "--vibe-config", "reporting,oracle")
    result = run(pytester, "-rA", "--vibe-results", str(path), *args, xdist=xdist)
    result.assert_outcomes(passed=4)
    data = load_json(path)
    records = evals_by_nodeid(data)
    for problem in ("add", "mul"):
        rec = records[f"evals/config/eval-config.json::{problem}[reporting]"]
        assert (rec["response"], rec["cost"], rec["input_tokens"], rec["output_tokens"]) == (
            "did it",
            0.5,
            100,
            7,
        )
        assert rec["latency"] == pytest.approx(12.345, rel=1e-12)
        step = rec["steps"][0]
        assert step["phase"] == "agent" and 0 < step["duration"] < 12  # measured, kept
        # an agent that reports no latency: the agent step's measured duration, as before
        oracle = records[f"evals/config/eval-config.json::{problem}[oracle]"]
        assert oracle["latency"] == oracle["steps"][0]["duration"]
    assert run_of(data, "reporting")["metrics"]["avg_latency"] == pytest.approx(12.345, rel=1e-12)
