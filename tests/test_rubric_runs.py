"""The automatic rubric through real pytest runs: an agent writes its JSONL tool log where
VIBEEVAL_TRANSCRIPT says, the items summarise it, and the `rubric` preset scores the run with its
grade; evals without a transcript get null signals with the reason, never invented values."""

from __future__ import annotations

import pytest
from helpers import PYTHON, XDIST_MODES, agent, load_json, run, run_of, run_summary, write

ANSWER = """\
# Answer

The capital of France is Paris. It has been the seat of government for centuries.

- Paris lies on the Seine.

Next step: you can visit the Louvre.
"""

# Writes the document's executions.jsonl (string values, as a shell hook writes them) and answers.
AGENT = f"""
import json, os, sys
prompt = sys.stdin.read()
if "clean" in prompt:
    calls = [
        {{"ts": "2026-11-22T10:00:00Z", "tool": "Read", "exit": "0", "success": "true"}},
        {{"ts": "2026-11-22T10:00:10Z", "tool": "Grep", "exit": "0", "success": "true"}},
        {{"ts": "2026-11-22T10:00:20Z", "tool": "Write", "exit": "0", "success": "true"}},
    ]
    bad = "this line is not JSON"
else:
    calls = [
        {{"ts": 1795341600, "tool": "Bash", "exit": 1, "error": "command not found"}},
        {{"ts": 1795341601, "tool": "Bash", "exit": 0}},
        {{"ts": 1795341605, "tool": "Read", "exit": "0"}},
    ]
    bad = None
if "VIBEEVAL_TRANSCRIPT" in os.environ and "silent" not in sys.argv:
    with open(os.environ["VIBEEVAL_TRANSCRIPT"], "a") as log:
        for n, call in enumerate(calls):
            log.write(json.dumps(call) + "\\n")
            if n == 0 and bad:
                log.write(bad + "\\n")
print({ANSWER!r})
"""


def make_suite(pytester: pytest.Pytester) -> None:
    script = agent(pytester.path, "hooked.py", AGENT)
    write(pytester.path / "app.py", f"def answer(prompt):\n    return {ANSWER!r}\n")
    write(
        pytester.path / "rubric.eval.yaml",
        f"""
        metadata: {{name: graded, model: m}}
        configurations:
          hooked: {{cli: "{PYTHON}", args: ["{script}"], transcript: logs/executions.jsonl}}
          silent: {{cli: "{PYTHON}", args: ["{script}", silent], transcript: executions.jsonl}}
          plain: {{python: "app:answer"}}
        score: {{formula: rubric}}
        evals:
          - name: clean
            prompt: clean run
            checks: [{{match: "*Paris*"}}]
            rubric: {{complexity: simple, efficiency: tools}}
          - name: bumpy
            prompt: bumpy run
            checks: [{{match: "*Paris*"}}]
            rubric: {{complexity: simple, efficiency: tools}}
        """,
    )


@XDIST_MODES
def test_the_rubric_scores_a_run_from_its_transcripts(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester)
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(passed=6)
    data = load_json(out)
    hooked = run_of(data, "hooked")
    evals = {r["name"]: r for r in hooked["evals"]}

    clean = evals["clean"]
    assert clean["transcript"]["source"] == "logs/executions.jsonl"
    assert (clean["transcript"]["calls"], clean["transcript"]["succeeded"]) == (3, 3)
    assert clean["transcript"]["duration"] == 20.0  # first to last timestamp
    assert clean["transcript"]["problems"][0].startswith("executions.jsonl:2: ")
    assert [c["tool"] for c in clean["tool_calls"]] == ["Read", "Grep", "Write"]
    # completeness: direct answer 0.3 + explanation (two sentences) 0.2 + next steps 0.2 = 0.7
    #   (no code block is expected: a general task); accuracy: no syntax errors 0.4 + no obvious
    #   errors 0.3 + followed instructions (passed) 0.3 = 1.0; quality (0.7 + 1.0) / 2 = 0.85
    # efficiency (simple, tools): 1 - 3/5 = 0.4; structure: header 0.4 + list 0.3 = 0.7
    # score = 0.35·1 + 0.25·0.85 + 0.20·0.4 + 0.15·(1 - 0) + 0.05·0.7 = 0.8275 → 82.75 (A)
    assert clean["rubric"]["signals"] == pytest.approx(
        {
            "tool_success_rate": 1.0,
            "output_quality": 0.85,
            "efficiency": 0.4,
            "error_rate": 0.0,
            "structure_score": 0.7,
        }
    )
    assert (clean["rubric"]["score"], clean["rubric"]["grade"]) == (82.75, "A")

    bumpy = evals["bumpy"]
    transcript = bumpy["transcript"]
    assert transcript["tools"] == {
        "Bash": {"calls": 2, "succeeded": 1, "failed": 1},
        "Read": {"calls": 1, "succeeded": 1, "failed": 0},
    }
    assert transcript["errors"] == {"tool_fail": 1, "retry": 1}  # Bash again right after it failed
    assert transcript["duration"] == 5.0
    # tool rate 2/3; errors 1 failed call + 1 retry = 2 → error_rate 0.2
    # score = 0.35·(2/3) + 0.25·0.85 + 0.20·0.4 + 0.15·0.8 + 0.05·0.7 = 0.680833 → 68.08 (C)
    assert bumpy["rubric"]["errors"] == {"tool_fail": 1, "retry": 1, "output_error": 0}
    assert (bumpy["rubric"]["score"], bumpy["rubric"]["grade"]) == (68.08, "C")

    # the preset over the run-wide means: tool (1 + 2/3)/2, error 0.1, the rest as above
    # = 0.35·0.8333 + 0.2125 + 0.08 + 0.15·0.9 + 0.035 = 0.754167 → 75.42 (B)
    assert (hooked["score"], hooked["grade"], hooked["score_preset"]) == (75.42, "B", "rubric")
    assert hooked["variables"]["tool_success_rate"] == pytest.approx(5 / 6)
    assert hooked["variables"]["bumpy_error_rate"] == pytest.approx(0.2)
    assert hooked["variables"]["rubric_score"] == pytest.approx((82.75 + 68.08) / 2, abs=0.01)

    plain = run_of(data, "plain")
    assert plain["score"] is None and plain["grade"] is None
    assert "tool_success_rate" in plain["score_error"]
    missing = plain["evals"][0]["rubric"]["missing"]
    assert set(missing) == {"tool_success_rate", "error_rate", "efficiency"}
    assert all(reason.startswith("no transcript") for reason in missing.values())
    assert plain["evals"][0]["rubric"]["signals"]["output_quality"] == pytest.approx(0.85)
    assert plain["evals"][0]["transcript"] is None

    silent = run_of(data, "silent")
    reason = silent["evals"][0]["rubric"]["missing"]["tool_success_rate"]
    assert "executions.jsonl" in reason, reason

    summary = "\n".join(run_summary(result))
    assert "Score: 75.42 (B) (formula: rubric = round((0.35 * tool_success_rate" in summary
    assert "Score: null (formula: rubric" in summary


def test_a_transcript_path_must_stay_in_the_item_folder(pytester: pytest.Pytester) -> None:
    write(
        pytester.path / "bad.eval.yaml",
        """
        metadata: {name: bad, model: m}
        configurations:
          a: {cli: "true", transcript: ../../elsewhere.jsonl}
        evals:
          - prompt: hi
            checks: [{match: "*"}]
        """,
    )
    result = run(pytester)
    assert result.ret == 1
    assert (
        "bad.eval.yaml:3: configurations.a.transcript: '../../elsewhere.jsonl' must be a file path "
        "relative to the agent's working directory" in result.stdout.str()
    )


def test_an_eval_with_an_unknown_complexity_names_the_line(pytester: pytest.Pytester) -> None:
    write(
        pytester.path / "bad.eval.yaml",
        """
        metadata: {name: bad, model: m}
        configurations:
          a: {cli: "true"}
        evals:
          - prompt: hi
            checks: [{match: "*"}]
            rubric: {complexity: huge}
        """,
    )
    result = run(pytester)
    assert "bad.eval.yaml:7: evals[0].rubric.complexity: Input should be 'simple', 'medium' or 'complex'" in (
        result.stdout.str()
    )
