"""An answer longer than the record keeps: the checks read all of it, the record (and so the
results file, the controller and the rubric) holds its head and tail with a marker."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import PYTHON, XDIST_MODES, agent, evals_by_nodeid, load_json, run, write

from pytest_vibeeval.excerpts import RESPONSE_EXCERPT_CHARS, response_excerpt
from pytest_vibeeval.results import EvalRecord
from pytest_vibeeval.runner import failure_message

# 300 000 characters: a start, a word only in the middle, and the answer at the very end.
LONG_AGENT = """
import sys
sys.stdin.read()
sys.stdout.write("START " + "a" * 150_000 + " MIDDLE-WORD " + "b" * 149_968 + " The answer is 42.")
"""


def test_a_short_answer_is_kept_whole() -> None:
    text = "x" * RESPONSE_EXCERPT_CHARS
    assert response_excerpt(text) == (text, None)


def test_a_long_answer_keeps_its_head_and_tail() -> None:
    text = "H" * 40_000 + "M" * 100_000 + "T" * 40_000
    kept, whole = response_excerpt(text, "/runs/1/agent.stdout")
    half = RESPONSE_EXCERPT_CHARS // 2
    assert whole == 180_000
    assert kept.startswith("H" * half) and kept.endswith("T" * half)
    left_out = f"{180_000 - 2 * half:,} characters not shown"
    assert kept[half:-half] == f"\n[… {left_out}: the whole answer is in /runs/1/agent.stdout …]\n"


def test_the_failure_message_gives_the_whole_length() -> None:
    kept, whole = response_excerpt("z" * 100_000)
    record = EvalRecord(name="e", nodeid="s::e[c]", outcome="failed", response=kept, response_chars=whole)
    assert "… [100000 chars]" in failure_message(record)


@XDIST_MODES
def test_checks_read_the_whole_answer_and_the_record_an_excerpt(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    script = agent(pytester.path, "long_agent.py", LONG_AGENT)
    write(
        pytester.path / "long.eval.yaml",
        f"""
        metadata: {{name: long, model: m}}
        evals:
          - name: middle
            prompt: Say it at length.
            checks:
              - contains: MIDDLE-WORD
              - match: '*42.'
        configurations:
          agent: {{cli: {PYTHON!r}, args: [{script!r}]}}
        """,
    )
    result = run(pytester, "--vibe-results", "out.json", xdist=xdist)
    result.assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(pytester.path / "out.json"))["long.eval.yaml::middle[agent]"]
    assert record["response_chars"] == len("START ") + 150_000 + len(" MIDDLE-WORD ") + 149_968 + 18
    response = record["response"]
    assert len(response) < RESPONSE_EXCERPT_CHARS + 1000  # the marker names a path
    assert response.startswith("START ") and response.endswith("The answer is 42.")
    assert "MIDDLE-WORD" not in response
    log = next(step["log"] for step in record["steps"] if step["phase"] == "agent")
    assert f"the whole answer is in {log}" in response
    assert "MIDDLE-WORD" in Path(log).read_text()


# A valid python block of about 150 000 characters: the excerpt's cut lands inside it.
LONG_CODE_AGENT = """
import sys
sys.stdin.read()
lines = "".join(f"    x{n} = {n}  # a line of a long answer\\n" for n in range(4000))
print("# Fix\\n- I changed it because it was wrong. You should run the tests.\\n"
      "```python\\ndef f():\\n" + lines + "    return 1\\n```\\nDone.")
"""


@XDIST_MODES
def test_the_rubric_does_not_check_a_code_block_the_excerpt_cuts(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    script = agent(pytester.path, "code_agent.py", LONG_CODE_AGENT)
    write(
        pytester.path / "long.eval.yaml",
        f"""
        metadata: {{name: long, model: m}}
        evals:
          - name: code
            prompt: Fix it.
            checks: [{{contains: "return 1"}}]
        configurations:
          agent: {{cli: {PYTHON!r}, args: [{script!r}]}}
        """,
    )
    result = run(pytester, "--vibe-results", "out.json", xdist=xdist)
    result.assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(pytester.path / "out.json"))["long.eval.yaml::code[agent]"]
    assert record["response_chars"] > RESPONSE_EXCERPT_CHARS and "characters not shown" in record["response"]
    # completeness: answer 0.3 + explanation 0.2 + next steps 0.2 (a general task) = 0.7; accuracy: no
    # syntax error 0.4 (the cut block is not checked) + no error line 0.3 + passed 0.3 = 1.0
    assert record["rubric"]["signals"]["output_quality"] == pytest.approx(0.85)
