"""Unit tests for pytest_vibeeval.scoring.rubric: the scoring rubric's signals, score and grade."""

from __future__ import annotations

import math

import pytest

from pytest_vibeeval.excerpts import excerpt_marker, response_excerpt
from pytest_vibeeval.results import ToolCallRecord, TranscriptRecord
from pytest_vibeeval.scoring import answer_text, rubric
from pytest_vibeeval.scoring.answer_text import (
    accuracy,
    completeness,
    has_code_block,
    has_direct_answer,
    has_explanation,
    has_next_steps,
    has_refusal,
    split_markdown,
    syntax_errors,
)
from pytest_vibeeval.scoring.rubric import (
    RUBRIC_FORMULA,
    SIGNALS,
    WEIGHTS,
    count_errors,
    count_output_errors,
    efficiency,
    error_rate,
    evaluate_rubric,
    grade,
    output_quality,
    rubric_score,
    structure_score,
    tool_success_rate,
)
from pytest_vibeeval.scoring.transcripts import summarise

FENCE = "```"


def transcript_of(*spec: tuple[str, bool | None]) -> TranscriptRecord:
    return summarise([ToolCallRecord(tool=tool, success=success) for tool, success in spec], "test")


def block(language: str, text: str) -> str:
    return f"{FENCE}{language}\n{text}\n{FENCE}\n"


# --- The document's examples -----------------------------------------------------------------------


def test_tool_success_rate_is_090_for_nine_of_ten() -> None:
    # Read 5/5, Write 2/2, Bash 2/3
    transcript = transcript_of(
        *[("Read", True)] * 5, *[("Write", True)] * 2, ("Bash", True), ("Bash", False), ("Bash", True)
    )
    assert (transcript.calls, transcript.succeeded) == (10, 9)
    assert tool_success_rate(transcript) == (0.90, None)


def test_efficiency_is_050_for_60_of_120_seconds() -> None:
    assert efficiency("time", "medium", 60.0, None) == (0.50, None)


def test_efficiency_is_047_for_8_of_15_tools() -> None:
    value, reason = efficiency("tools", "medium", None, 8)
    assert reason is None
    assert value == pytest.approx(1 - 8 / 15)
    assert round(value or 0, 2) == 0.47


def test_error_component_is_070_for_three_errors() -> None:
    # Bash fails twice; the second failure directly follows the first: 2 tool_fail + 1 retry
    transcript = transcript_of(("Bash", False), ("Bash", False), ("Read", True))
    errors = count_errors(transcript, "All done.")
    assert errors == {"tool_fail": 2, "retry": 1, "output_error": 0}
    value, reason = error_rate(sum(errors.values()))
    assert (value, reason) == (0.30, None)
    assert 1 - (value or 0) == 0.70


# --- The whole rubric ------------------------------------------------------------------------------

ANSWER = f"""## Summary

The test failed because `total()` skipped the last item. I changed the loop to sum every item.

{FENCE}python
def total(items):
    return sum(items)
{FENCE}

- Check the edge case with an empty list.
"""


def test_whole_rubric_by_hand() -> None:
    transcript = transcript_of(("Read", True), ("Edit", True), ("Bash", True))
    # tool_success_rate: 3 succeeded / 3 calls = 1.0
    # completeness (coding task):
    #   direct answer: prose with words, no refusal                       +0.3
    #   code block: the python block                                      +0.3
    #   explanation: "because" (and 2 sentences)                          +0.2
    #   next steps: none of the NEXT_STEPS phrases ("Check" is not one)   +0.0
    #   = 0.8
    # accuracy: python block parses +0.4, no error line/refusal +0.3, passed +0.3 = 1.0
    # output_quality = (0.8 + 1.0) / 2 = 0.9
    # efficiency (medium, time): 1 - 50 / 120 = 0.58333…
    # errors: tool_fail 0 + retry 0 + output_error 0 = 0 -> error_rate 0, component 1 - 0 = 1
    # structure: "## " header 0.4 + "- " list 0.3 + ``` 0.3 = 1.0
    # Score = 0.35·1 + 0.25·0.9 + 0.20·0.58333… + 0.15·1 + 0.05·1
    #       = 0.35 + 0.225 + 0.116666… + 0.15 + 0.05 = 0.891666…
    # × 100 = 89.1666…, round 2 = 89.17 -> grade A (80 ≤ 89.17 < 90)
    record = evaluate_rubric(
        output=ANSWER,
        passed=True,
        transcript=transcript,
        seconds=50.0,
        complexity="medium",
        basis="time",
        task="coding",
    )
    assert completeness(ANSWER, "coding") == 0.8
    assert accuracy(ANSWER, True) == 1.0
    assert record.signals == {
        "tool_success_rate": 1.0,
        "output_quality": 0.9,
        "efficiency": pytest.approx(1 - 50 / 120),
        "error_rate": 0.0,
        "structure_score": 1.0,
    }
    assert record.missing == {}
    assert record.errors == {"tool_fail": 0, "retry": 0, "output_error": 0}
    assert record.score == 89.17
    assert record.grade == "A"
    assert (record.complexity, record.efficiency_basis, record.task) == ("medium", "time", "coding")


def test_whole_rubric_by_tools_for_a_general_task_that_failed() -> None:
    transcript = transcript_of(("Read", True), ("Edit", True), ("Bash", True))
    # completeness (general): answer 0.3 + no code credit + explanation 0.2 + next steps 0 = 0.5
    # accuracy: 0.4 + 0.3 + passed 0 = 0.7; quality = (0.5 + 0.7) / 2 = 0.6
    # efficiency (simple, tools): 1 - 3 / 5 = 0.4
    # Score = 0.35 + 0.25·0.6 + 0.20·0.4 + 0.15 + 0.05 = 0.35 + 0.15 + 0.08 + 0.15 + 0.05 = 0.78 -> 78.0, B
    record = evaluate_rubric(
        output=ANSWER,
        passed=False,
        transcript=transcript,
        seconds=None,
        complexity="simple",
        basis="tools",
        task="general",
    )
    assert record.signals["output_quality"] == 0.6
    assert record.signals["efficiency"] == pytest.approx(0.4)
    assert record.score == 78.0
    assert record.grade == "B"


def test_no_transcript_leaves_tool_signals_missing_with_reasons() -> None:
    record = evaluate_rubric(
        output=ANSWER,
        passed=True,
        transcript=None,
        seconds=None,
        complexity="medium",
        basis="tools",
        task="coding",
    )
    assert record.signals["tool_success_rate"] is None
    assert record.signals["efficiency"] is None
    assert record.signals["error_rate"] is None
    assert record.signals["output_quality"] == 0.9
    assert record.signals["structure_score"] == 1.0
    assert set(record.missing) == {"tool_success_rate", "efficiency", "error_rate"}
    assert all(reason.startswith("no transcript") for reason in record.missing.values())
    assert record.score is None
    assert record.grade is None
    assert record.errors == {"output_error": 0}


def test_no_output_and_no_time() -> None:
    record = evaluate_rubric(
        output=None,
        passed=False,
        transcript=transcript_of(("Read", True)),
        seconds=None,
        complexity="medium",
        basis="time",
        task="general",
    )
    assert record.missing == {
        "output_quality": "no output to analyse",
        "efficiency": "the agent's run time is unknown",
        "structure_score": "no output to analyse",
    }
    assert record.signals["error_rate"] == 0.0
    assert record.errors == {"tool_fail": 0, "retry": 0}


def test_no_tool_calls_leaves_the_rate_missing() -> None:
    assert tool_success_rate(transcript_of()) == (None, "the agent made no tool calls")
    assert tool_success_rate(None)[1] == "no transcript: the agent's tool calls were not recorded"


# --- Efficiency and error rate ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("complexity", "seconds", "tools", "expected"),
    [
        ("simple", 15.0, 5, (0.5, 0.0)),
        ("medium", 120.0, 0, (0.0, 1.0)),
        ("complex", 75.0, 6, (0.75, 0.8)),
        ("medium", 500.0, 40, (0.0, 0.0)),  # over the budget: clamped to 0
        ("simple", -3.0, -1, (1.0, 1.0)),  # clamped to 1
        ("simple", math.inf, 5, (0.0, 0.0)),
    ],
)
def test_efficiency_by_complexity(
    complexity: rubric.Complexity, seconds: float, tools: int, expected: tuple[float, float]
) -> None:
    by_time, _ = efficiency("time", complexity, seconds, None)
    by_tools, _ = efficiency("tools", complexity, None, tools)
    assert (by_time, by_tools) == pytest.approx(expected)


def test_efficiency_unknown_figures() -> None:
    assert efficiency("time", "medium", None, 3) == (None, "the agent's run time is unknown")
    assert efficiency("time", "medium", math.nan, 3)[0] is None
    value, reason = efficiency("tools", "medium", 10.0, None)
    assert value is None and reason is not None and reason.startswith("no transcript")


def test_error_rate_caps_at_ten() -> None:
    assert error_rate(0) == (0.0, None)
    assert error_rate(10) == (1.0, None)
    assert error_rate(25) == (1.0, None)
    assert error_rate(None)[0] is None
    with pytest.raises(ValueError):
        error_rate(-1)


def test_output_errors_are_counted_in_prose_only() -> None:
    output = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "app.py", line 3, in <module>',
            "ValueError: bad value",  # ends the traceback above: counted with it
            "error: linker failed",
            "The ValueError: part is mid-line and not counted.",
            block("text", "Traceback (most recent call last):\nKeyError: 'x'"),  # inside a code block
        ]
    )
    assert count_output_errors(output) == 2
    transcript = transcript_of(("Bash", False))
    assert count_errors(transcript, output) == {"tool_fail": 1, "retry": 0, "output_error": 2}


# --- Structure -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("# Title\nplain text", 0.4),
        ("### Deep header", 0.4),
        ("- a\n- b", 0.3),
        ("* a", 0.3),
        ("1 a", 0.3),  # a digit then whitespace
        ("1. a\n2. b", 0.0),  # the document's regex: one character of [-*\d.] then whitespace, not "1."
        ("10 a", 0.0),
        ("  - indented", 0.0),
        ("see ```x```", 0.3),
        (block("", "code"), 0.3),
        ("# T\n- a\n" + block("py", "x = 1"), 1.0),
        ("just text", 0.0),
        ("", 0.0),
        ("#hashtag", 0.0),
        (block("bash", "# a comment"), 0.7),  # the header regex also sees comments inside code blocks
    ],
)
def test_structure_score(output: str, expected: float) -> None:
    assert structure_score(output) == (expected, None)


def test_structure_score_without_output() -> None:
    assert structure_score(None) == (None, "no output to analyse")


# --- Completeness heuristics -----------------------------------------------------------------------


def test_split_markdown() -> None:
    output = "intro\n```Python title=x\nprint(1)\n```\nmiddle\n~~~~yaml\na: 1\n~~~\n~~~~\n  ```\nopen"
    parts = split_markdown(output)
    assert parts.prose == "intro\nmiddle"
    assert [(b.language, b.text, b.closed) for b in parts.blocks] == [
        ("python", "print(1)", True),
        ("yaml", "a: 1\n~~~", True),
        ("", "open", False),
    ]
    assert split_markdown("one ```inline``` fence").blocks == ()


def test_direct_answer() -> None:
    assert has_direct_answer("Done")
    assert not has_direct_answer(block("python", "x = 1"))
    assert has_direct_answer("   \n42\n")
    assert not has_direct_answer("  \n---\n* *\n")
    assert not has_direct_answer("I'm sorry, but I can't help with that.")
    assert has_direct_answer("I can't reproduce the bug, but the fix is below.")


def test_refusals() -> None:
    for text in (
        "I cannot assist with that",
        "I\u2019m unable to help",
        "I am not able to provide it",
        "As an AI model",
    ):
        assert has_refusal(text), text
    assert not has_refusal("I can do that")


def test_code_block() -> None:
    assert has_code_block(block("", "x"))
    assert not has_code_block(block("python", "  "))
    assert not has_code_block("`inline` code")


def test_explanation() -> None:
    assert has_explanation("It failed because the path was wrong")
    assert has_explanation("The path was wrong. I fixed the path in config.")
    assert not has_explanation("Fixed the path.")
    assert has_explanation("Fixed the path, that\u2019s why")
    assert not has_explanation("1. Install\n2. Run. e.g. this")  # numbers and abbreviations are no sentences
    assert not has_explanation(block("python", "# because. It is. A comment here."))


def test_next_steps() -> None:
    for text in (
        "Next steps: deploy",
        "I recommend pinning it",
        "You could add a test",
        "Consider caching",
        "Try it",
    ):
        assert has_next_steps(text), text
    assert not has_next_steps("The function returns a list.")
    assert not has_next_steps("You can't pass None here; you cannot either.")
    assert not has_next_steps(block("python", "try:\n    pass\nexcept Exception:\n    pass"))


def test_completeness_of_a_general_task_ignores_code() -> None:
    assert completeness(block("py", "x = 1"), "general") == 0.0
    assert completeness(block("py", "x = 1"), "coding") == 0.3


# --- Accuracy --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("python", "def f(:\n    pass"),
        ("py", "print('unclosed)"),
        ("json", '{"a": 1,}'),
        ("yaml", "a: [1, 2"),
        ("yml", "key: *undefined"),
    ],
)
def test_syntax_errors_lower_accuracy(language: str, text: str) -> None:
    output = "Here it is.\n" + block(language, text)
    assert len(syntax_errors(output)) == 1
    assert syntax_errors(output)[0].startswith(f"{language} block 1: ")
    assert accuracy(output, True) == 0.6  # loses the 0.4 for syntax


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("python", "    def f(x):\n        return x"),  # indented as a whole: dedented first
        ("json", '{"a": [1, 2]}'),
        ("yaml", "a: &x 1\nb: *x\n---\nc: 2"),
        ("yaml", "Resources: !Ref Bucket"),  # custom tags are not errors
        ("bash", "if then fi ((("),  # not checked
        ("", "{not: json"),  # untagged: not checked
    ],
)
def test_valid_or_unchecked_blocks(language: str, text: str) -> None:
    output = "Here it is.\n" + block(language, text)
    assert syntax_errors(output) == []
    assert accuracy(output, True) == 1.0


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('x = 1\ny = "a\x00b"\n', "a NUL character (\\x00) at line 2, which Python source cannot hold"),
        ("\x00", "a NUL character (\\x00) at line 1, which Python source cannot hold"),
        ("x = (\n", "'(' was never closed (line 1)"),
    ],
)
def test_a_python_block_error_says_where(text: str, said: str) -> None:
    """A NUL character is named with its line: Python reports it without one ("line None")."""
    assert syntax_errors("Here it is.\n" + block("python", text)) == [f"python block 1: {said}"]


@pytest.mark.timeout(60)  # expanding the aliases would take gigabytes: a backstop, not a benchmark
def test_yaml_alias_bomb_is_not_expanded() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    output = block("yaml", "\n".join(lines))
    assert syntax_errors(output) == []


@pytest.mark.timeout(60)  # a backstop: building these would recurse or take minutes
def test_deep_nesting_is_not_checked() -> None:
    output = "".join(
        [
            block("yaml", "[" * 100_000 + "]" * 100_000),
            block("json", "[" * 100_000 + "]" * 100_000),
            block("python", "x" + "[0]" * 60_000),
        ]
    )
    assert syntax_errors(output) == []


def test_oversized_blocks_are_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answer_text, "MAX_BLOCK_CHARS", 10)
    assert syntax_errors(block("json", "{" * 11)) == []
    assert syntax_errors(block("json", "{")) != []


def test_a_block_the_excerpt_cuts_is_not_checked() -> None:
    code = "def f():\n" + "".join(f"    x{n} = {n}  # a line of a long answer\n" for n in range(3000))
    broken = "Before.\n" + block("python", "def g(:\n    pass")
    answer = broken + "Here:\n" + block("python", code + "    return 1") + "Done.\n"
    excerpt, whole = response_excerpt(answer, "/runs/1/agent.stdout")
    cut = excerpt_marker(excerpt, whole)
    assert cut is not None and cut.startswith("[… ") and cut in excerpt
    # the cut python block reads as one block through the marker line, which does not parse
    errors = syntax_errors(excerpt)
    assert errors[0] == "python block 1: invalid syntax (line 1)"
    assert errors[1].startswith("python block 2: ") and len(errors) == 2
    assert syntax_errors(excerpt, cut) == ["python block 1: invalid syntax (line 1)"]
    whole_block = answer.replace(broken, "Before.\n")
    excerpt, whole = response_excerpt(whole_block)
    assert accuracy(excerpt, True, excerpt_marker(excerpt, whole)) == 1.0
    assert excerpt_marker(answer[:100], None) is None


def test_obvious_errors_and_instructions() -> None:
    assert accuracy("All good.", True) == 1.0
    assert accuracy("All good.", False) == 0.7
    assert accuracy("Error: could not finish", True) == 0.7
    assert accuracy("I cannot help with that.", True) == 0.7
    assert accuracy("", False) == 0.7


def test_output_quality() -> None:
    assert output_quality(None, "general", True) == (None, "no output to analyse")
    assert output_quality(ANSWER, "coding", True) == (0.9, None)


# --- Score and grade -------------------------------------------------------------------------------


def test_signals_and_weights() -> None:
    assert list(SIGNALS) == [
        "tool_success_rate",
        "output_quality",
        "efficiency",
        "error_rate",
        "structure_score",
    ]
    assert list(WEIGHTS) == list(SIGNALS)
    assert sum(WEIGHTS.values()) == pytest.approx(1.0)


def test_rubric_score_needs_every_signal() -> None:
    full: dict[str, float | None] = {str(name): 1.0 for name in SIGNALS}
    full["error_rate"] = 0.0
    assert rubric_score(full) == 100.0
    assert rubric_score(full | {"efficiency": None}) is None
    assert rubric_score({k: v for k, v in full.items() if k != "efficiency"}) is None
    assert rubric_score({name: 0.0 for name in SIGNALS}) == 15.0  # only 1 - error_rate counts


def signal_set(tool: float, quality: float, eff: float, errors: float, structure: float) -> dict[str, float]:
    return dict(zip(SIGNALS, (tool, quality, eff, errors, structure), strict=True))


@pytest.mark.parametrize(
    "signals",
    [
        signal_set(0.9, 0.85, 0.5, 0.3, 0.7),
        signal_set(1 / 3, 0.45, 1 - 8 / 15, 1.0, 0.0),
        signal_set(1, 1, 1, 0, 1),
    ],
)
def test_formula_text_computes_the_same_score(signals: dict[str, float]) -> None:
    assert eval(RUBRIC_FORMULA, {"round": round}, dict(signals)) == rubric_score(signals)


@pytest.mark.parametrize(
    ("score", "letter"),
    [
        (100.0, "A+"),
        (90.0, "A+"),
        (89.99, "A"),
        (89.5, "A"),
        (80.0, "A"),
        (79.99, "B"),
        (70.0, "B"),
        (69.99, "C"),
        (60.0, "C"),
        (59.99, "D"),
        (50.0, "D"),
        (49.99, "F"),
        (0.0, "F"),
        (None, None),
        (math.nan, None),
    ],
)
def test_grade_boundaries(score: float | None, letter: str | None) -> None:
    assert grade(score) == letter


@pytest.mark.parametrize(("score", "letter"), [(89.997, "A+"), (89.995, "A+"), (89.994, "A"), (49.996, "D")])
def test_the_grade_is_that_of_the_score_as_shown(score: float, letter: str) -> None:
    """A mean of repeats such as 89.997 shows as 90.00: its grade is that of 90.00."""
    assert grade(score) == letter
