"""The output parsers on what the real CLIs printed (tests/samples/<tool>/recorded/, recorded from
the pinned programs against the scripted server): each defect they showed, fixed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vibeeval.models import OutputSpec
from pytest_vibeeval.providers.failure import failure_report
from pytest_vibeeval.providers.output import OutputError
from pytest_vibeeval.providers.parsers import parse_with

RECORDED = Path(__file__).parent / "samples"


def error_of(parser: str, sample: str) -> str:
    with pytest.raises(OutputError) as caught:
        parse_with(parser, RECORDED / sample)
    return str(caught.value)


def test_claude_api_errors_are_not_worded_as_success() -> None:
    message = error_of("claude-code", "claude-code/recorded/unauthorized.jsonl")
    assert message.startswith("output.parser 'claude-code': the model API answered with status 401: ")
    assert "success" not in message and "invalid api key" in message
    assert "status 500" in error_of("claude-code", "claude-code/recorded/broken.jsonl")


def test_claude_tool_calls() -> None:
    wrote = parse_with("claude-code", RECORDED / "claude-code/recorded/write.jsonl")
    failed = parse_with("claude-code", RECORDED / "claude-code/recorded/fail.jsonl")
    assert [(c.tool, c.success) for c in wrote.tool_calls] == [("Write", True)]
    assert [(c.tool, c.success, c.error) for c in failed.tool_calls] == [
        ("Read", False, "File does not exist. Note: your current working directory is /tmp/item.")
    ]
    assert (wrote.cost, wrote.input_tokens, wrote.output_tokens) == (0.00162, 240, 60)


def test_a_failed_codex_shows_turn_failed_not_only_stderr(tmp_path: Path) -> None:
    """A prompt eval's non-zero exit: the parser's note, then both tails (as coding evals do)."""
    stdout = RECORDED / "codex/recorded/unauthorized.jsonl"
    stderr = RECORDED / "codex/recorded/unauthorized.stderr"
    report = failure_report("codex exited with code 1", stdout, stderr, OutputSpec(parser="codex"))
    lines = report.splitlines()
    assert lines[0] == "codex exited with code 1"
    assert lines[1].startswith("output.parser 'codex': codex reported turn.failed: unexpected status 401")
    assert f"last 20 lines of stdout ({stdout}):" in lines
    assert f"last 20 lines of stderr ({stderr}):" in lines
    assert lines[-1] == "Reading prompt from stdin..."


def test_codex_command_that_failed() -> None:
    parsed = parse_with("codex", RECORDED / "codex/recorded/fail-nosandbox.jsonl")
    [call] = parsed.tool_calls
    assert (call.tool, call.success) == ("command_execution", False)
    assert call.error == "exit code 1: cat: no-such-file.txt: No such file or directory"


def test_gemini_tool_calls_and_errors() -> None:
    failed = parse_with("gemini", RECORDED / "gemini/recorded/fail.jsonl")
    assert [(c.tool, c.success, c.error) for c in failed.tool_calls] == [
        ("read_file", False, "File not found: /tmp/item/no-such-file.txt")
    ]
    assert '"code":401' in error_of("gemini", "gemini/recorded/unauthorized.jsonl").replace("\\", "")


def test_aider_api_errors_are_errors_not_answers() -> None:
    assert error_of("aider", "aider/recorded/unauthorized.txt") == (
        "output.parser 'aider': aider reported an API error: litellm.AuthenticationError: "
        "AuthenticationError: OpenAIException - invalid api key for the scripted server The API "
        "provider is not able to authenticate you. Check your API key."
    )
    assert "litellm.InternalServerError" in error_of("aider", "aider/recorded/broken.txt")


def test_aider_cost_is_not_rounded_and_its_preamble_is_stripped() -> None:
    parsed = parse_with("aider", RECORDED / "aider/recorded/cost.txt")
    assert parsed.cost == 0.0144  # aider's own session figure says $0.01
    assert parsed.text.startswith("I update no-such-file.txt.")  # no notice, warning or release notes
    wrote = parse_with("aider", RECORDED / "aider/recorded/write.txt")
    assert wrote.text.startswith("I write hello.txt.")
    assert [(c.tool, c.success) for c in wrote.tool_calls] == [("edit", True)]
