"""Acceptance test of user-defined scoring: the design document's three example suites, scored
against a deterministic stand-in agent, give exactly the scores computed by hand below.

The suites' `metadata` and `evals` are copied from the document ("Add support for user defined
scoring", section Examples); each gets a `configurations:` section naming the stand-in. The one
change: Example 3's `prompt: Solve: 2x + 5 = 15` is quoted, because unquoted it is not valid YAML
(a plain scalar cannot contain ": "); the last test shows the plugin reports that clearly.

The stand-in prints Claude Code-shaped JSON (`result`, `total_cost_usd`, `duration_ms`,
`usage.output_tokens`), so every eval's cost and latency (`duration_ms` / 1000 via
`output.latency_ms`) is known, and latency-based formulas are exact and reproducible.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers import PYTHON, XDIST_MODES, agent, load_json, run, run_of, run_summary, write

# prompt -> (answer, cost in USD, duration_ms, output tokens)
ANSWERS: dict[str, tuple[str, float, int, int]] = {
    # Example 1: 2 + 2 is right; 3 + 3 is wrong (no "6" in the answer).
    "What is 2 + 2?": ("2 + 2 = 4", 0.003, 800, 7),
    "What is 3 + 3?": ("3 + 3 = 5", 0.005, 1200, 7),
    # Example 2: math and translation pass; the sky is not blue.
    "What is 15 * 7?": ("15 * 7 = 105", 0.004, 2000, 8),
    'Translate "hello" to Spanish': ("Hola", 0.006, 1500, 1),
    "What color is the sky?": ("The sky is grey today.", 0.002, 500, 6),
    # Example 3: accuracy passes; speed matches "*response*" but reports 64 tokens > max_tokens 50.
    "Solve: 2x + 5 = 15": ("x = 5", 0.010, 1200, 3),
    "Quick response test": ("Here is my quick response.", 0.002, 300, 64),
}

STAND_IN = """
import json, sys
ANSWERS = json.loads({answers!r})
prompt = sys.stdin.read()
if prompt not in ANSWERS:
    sys.exit(f"stand-in: unknown prompt {{prompt!r}}")
text, cost, duration_ms, tokens = ANSWERS[prompt]
print(json.dumps({{
    "type": "result",
    "result": text,
    "total_cost_usd": cost,
    "duration_ms": duration_ms,
    "usage": {{"output_tokens": tokens}},
}}))
"""

EXAMPLE_1 = """
metadata:
  name: cost-efficient-eval
  model: anthropic/claude-3.5-sonnet

evals:
  - prompt: What is 2 + 2?
    checks:
      - match: "*4*"

  - prompt: What is 3 + 3?
    checks:
      - match: "*6*"

score:
  formula: success_pct / total_cost
"""

EXAMPLE_2 = """
metadata:
  name: weighted-cost-eval
  model: anthropic/claude-3.5-sonnet

evals:
  - name: critical-math
    prompt: What is 15 * 7?
    checks:
      - match: "*105*"

  - name: important-translation
    prompt: Translate "hello" to Spanish
    checks:
      - match: "*hola*"

  - name: secondary-question
    prompt: What color is the sky?
    checks:
      - match: "*blue*"

score:
  formula: (critical-math * 3 + important-translation * 2 + secondary-question) / total_cost
"""

EXAMPLE_3_VERBATIM = """
metadata:
  name: comprehensive-scoring
  model: anthropic/claude-3.5-sonnet

evals:
  - name: accuracy-test
    prompt: Solve: 2x + 5 = 15
    checks:
      - match: "*5*"

  - name: speed-test
    prompt: Quick response test
    checks:
      - match: "*response*"
      - max_tokens: 50

score:
  formula: (accuracy-test * 0.6 + speed-test * 0.4) * success_pct / (avg_latency * total_cost)
"""
EXAMPLE_3 = EXAMPLE_3_VERBATIM.replace("prompt: Solve: 2x + 5 = 15", 'prompt: "Solve: 2x + 5 = 15"')

# Backward compatibility: Example 1 without its `score:` section.
NO_SCORE = EXAMPLE_1.replace("cost-efficient-eval", "no-score-eval").split("\nscore:")[0] + "\n"

SUITES = {
    "cost-efficient-eval": EXAMPLE_1,
    "weighted-cost-eval": EXAMPLE_2,
    "comprehensive-scoring": EXAMPLE_3,
    "no-score-eval": NO_SCORE,
}

CONFIG = "stand-in"

# --- The expected scores, by hand -------------------------------------------------------------

# Example 1: one of two passed -> success_pct = 50; total_cost = 0.003 + 0.005.
EXPECTED_1 = (1 + 0) / 2 * 100 / (0.003 + 0.005)  # = 6250
# Example 2: critical-math = 1, important-translation = 1, secondary-question = 0;
# total_cost = 0.004 + 0.006 + 0.002.
EXPECTED_2 = (1 * 3 + 1 * 2 + 0) / (0.004 + 0.006 + 0.002)  # = 416.67
# Example 3: accuracy-test = 1, speed-test = 0 -> success_pct = 50;
# avg_latency = (1200 ms + 300 ms) / 2 = 0.75 s; total_cost = 0.010 + 0.002.
EXPECTED_3 = (1 * 0.6 + 0 * 0.4) * 50 / (((1200 + 300) / 2 / 1000) * (0.010 + 0.002))  # = 3333.33
# No score section: the score is success_pct, one of two passed.
EXPECTED_NO_SCORE = (1 + 0) / 2 * 100  # = 50

EXPECTED = {
    "cost-efficient-eval": (EXPECTED_1, "success_pct / total_cost"),
    "weighted-cost-eval": (
        EXPECTED_2,
        "(critical-math * 3 + important-translation * 2 + secondary-question) / total_cost",
    ),
    "comprehensive-scoring": (
        EXPECTED_3,
        "(accuracy-test * 0.6 + speed-test * 0.4) * success_pct / (avg_latency * total_cost)",
    ),
    "no-score-eval": (EXPECTED_NO_SCORE, "success_pct"),
}


def configurations(script: str) -> str:
    output = {
        "format": "json",
        "response": "result",
        "cost": "total_cost_usd",
        "output_tokens": "usage.output_tokens",
        "latency_ms": "duration_ms",
    }
    config = {"cli": PYTHON, "args": [script], "output": output}
    return f"\nconfigurations:\n  {CONFIG}: {json.dumps(config)}\n"


def write_project(directory: Path) -> None:
    script = agent(directory, "stand_in.py", STAND_IN.format(answers=json.dumps(ANSWERS)))
    for name, text in SUITES.items():
        write(directory / f"{name}.eval.yaml", textwrap.dedent(text) + configurations(script))


def run_project(
    pytester: pytest.Pytester, xdist: list[str], label: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / f"results-{label}.json"
    result = run(pytester, "--vibe-results", str(path), xdist=xdist)
    return result, load_json(path)


def scores(data: dict[str, Any]) -> dict[str, float]:
    return {suite: run_of(data, CONFIG, suite)["score"] for suite in SUITES}


@XDIST_MODES
def test_seed_examples_score_exactly(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write_project(pytester.path)
    result, data = run_project(pytester, xdist, "run")
    # Passed: 2 + 2, 15 * 7, hello, 2x + 5 (and 2 + 2 again in the unscored suite).
    result.assert_outcomes(passed=5, failed=4)

    for suite, (expected, formula) in EXPECTED.items():
        run_record = run_of(data, CONFIG, suite)
        assert run_record["score_error"] is None, (suite, run_record["score_error"])
        assert run_record["score_formula"] == formula
        assert run_record["score"] == pytest.approx(expected, rel=1e-12), suite

    # The inputs of the hand computation are what the plugin saw.
    weighted = run_of(data, CONFIG, "weighted-cost-eval")["variables"]
    assert (weighted["critical-math"], weighted["important-translation"], weighted["secondary-question"]) == (
        1,
        1,
        0,
    )
    assert weighted["total_cost"] == pytest.approx(0.004 + 0.006 + 0.002, rel=1e-12)
    comprehensive = run_of(data, CONFIG, "comprehensive-scoring")
    assert comprehensive["metrics"]["avg_latency"] == pytest.approx((1.2 + 0.3) / 2, rel=1e-12)
    assert comprehensive["metrics"]["success_pct"] == 50
    speed = next(r for r in comprehensive["evals"] if r["name"] == "speed-test")
    assert speed["outcome"] == "failed" and speed["output_tokens"] == 64
    assert [c["passed"] for c in speed["checks"]] == [True, False]  # *response* yes, max_tokens no

    # The Run Summary shows each score with its formula right under the run's heading.
    summary = run_summary(result)
    for suite, (expected, formula) in EXPECTED.items():
        (heading,) = [i for i, line in enumerate(summary) if line.startswith(f"{suite} × {CONFIG}")]
        assert summary[heading + 1] == f"Score: {expected:.2f} (formula: {formula})"
    assert "Score: 6250.00 (formula: success_pct / total_cost)" in summary
    assert "Score: 50.00 (formula: success_pct)" in summary


def test_serial_and_xdist_scores_are_identical(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    serial_result, serial = run_project(pytester, [], "serial")
    xdist_result, parallel = run_project(pytester, ["-n", "2"], "xdist")
    assert scores(serial) == scores(parallel)
    assert scores(serial)["comprehensive-scoring"] == pytest.approx(EXPECTED_3, rel=1e-12)
    for suite in SUITES:
        assert run_of(serial, CONFIG, suite)["metrics"] == run_of(parallel, CONFIG, suite)["metrics"]
        assert run_of(serial, CONFIG, suite)["variables"] == run_of(parallel, CONFIG, suite)["variables"]

    def score_lines(result: pytest.RunResult) -> list[str]:
        return [line for line in run_summary(result) if line.startswith("Score:")]

    assert score_lines(serial_result) == score_lines(xdist_result)
    assert len(score_lines(serial_result)) == len(SUITES)


def test_example_3_verbatim_is_reported_as_invalid_yaml(pytester: pytest.Pytester) -> None:
    """The document's Example 3 as printed (unquoted `Solve: ...`) is not YAML: a clear load error,
    naming the file and line, and no traceback."""
    write(pytester.path / "verbatim.eval.yaml", EXAMPLE_3_VERBATIM)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "verbatim.eval.yaml:7" in out
    assert "Traceback" not in out
