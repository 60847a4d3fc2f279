"""The output parsers on what the real CLIs printed (tests/samples/<tool>/recorded/, recorded from
the pinned programs against the scripted server): each defect they showed, fixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import PYTHON, XDIST_MODES, load_json, run, write

from pytest_vibeeval.models import OutputSpec
from pytest_vibeeval.providers.failure import failure_report
from pytest_vibeeval.providers.output import OutputError, ParsedOutput
from pytest_vibeeval.providers.parse_codex import own_sandbox_problem
from pytest_vibeeval.providers.parsers import parse_with
from pytest_vibeeval.results import StepRecord
from pytest_vibeeval.scoring.rubric import structure_score
from pytest_vibeeval.workspace.steps import agent_report

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


def test_aiders_report_on_a_failed_edit_is_not_the_answer() -> None:
    """aider's `# 1 SEARCH/REPLACE block failed to match!` report is not the model's: it is the failed
    edit's error, and its Markdown headers earn the answer no structure points."""
    parsed = parse_with("aider", RECORDED / "aider/recorded/fail.txt")
    assert parsed.text.endswith("\n\nThe answer is 4.")  # the model's answer after the report
    for aiders in ("did not conform", "edit-errors.html", "failed to match", "SearchReplace", "must exactly"):
        assert aiders not in parsed.text
    assert [(c.tool, c.success, c.error) for c in parsed.tool_calls] == [
        (
            "edit",
            False,
            "# 1 SEARCH/REPLACE block failed to match!\n## SearchReplaceNoExactMatch: This SEARCH block "
            "failed to exactly match lines in no-such-file.txt",
        )
    ]
    assert structure_score(parsed.text) == (0.3, None)  # its code block only: no headers


def test_codex_whose_own_sandbox_cannot_run_is_named(tmp_path: Path) -> None:
    """Recorded: codex under /tmp cannot make its sandbox helpers, exits 0, and every command fails
    with `bwrap: execvp codex-linux-sandbox`, which it shows only to the model."""
    stderr = RECORDED / "codex/recorded/own-sandbox-failed.stderr"
    preset_argv = ["codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write"]
    stdout = RECORDED / "codex/recorded/own-sandbox-failed.jsonl"
    problem = own_sandbox_problem(preset_argv, stderr, stdout)
    assert problem is not None
    assert problem.startswith(
        "codex could not set up its own sandbox, so every shell command it ran failed ("
    )
    assert "give codex a CODEX_HOME outside /tmp" in problem
    assert own_sandbox_problem(["codex", "exec", "--sandbox", "danger-full-access"], stderr) is None
    # the same warning, but no command hit the missing sandbox (an MCP tool, a plain answer): fine
    ran_no_command = RECORDED / "codex/recorded/fail-nosandbox.jsonl"
    assert own_sandbox_problem(preset_argv, stderr, ran_no_command) is None
    quiet = tmp_path / "agent.stderr"  # a CODEX_HOME outside /tmp: no warning
    quiet.write_text("Reading prompt from stdin...\n", encoding="utf-8")
    assert own_sandbox_problem(preset_argv, quiet) is None


FAKE_CODEX = """
import sys
sys.stdin.read()
sys.stdout.write(open(sys.argv[-2]).read())
sys.stderr.write(open(sys.argv[-1]).read())
"""


@XDIST_MODES
def test_a_prompt_eval_of_a_codex_without_its_sandbox_is_an_error(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    recorded = RECORDED / "codex/recorded"
    agent = write(pytester.path / "fake_codex.py", FAKE_CODEX)
    args = [str(agent), "exec", "--json", "--sandbox", "workspace-write"]
    args += [str(recorded / "own-sandbox-failed.jsonl"), str(recorded / "own-sandbox-failed.stderr")]
    suite = {
        "metadata": {"name": "s", "model": "m"},
        "evals": [{"name": "ask", "prompt": "hi", "checks": [{"match": "*"}]}],
        "configurations": {"codex": {"preset": "codex", "cli": PYTHON, "args": args}},
    }
    write(pytester.path / "s.eval.yaml", json.dumps(suite))
    result = run(pytester, "--vibe-results", "r.json", xdist=xdist)
    result.assert_outcomes(failed=1)
    (record,) = load_json(pytester.path / "r.json")["runs"][0]["evals"]
    assert record["outcome"] == "error"
    assert record["message"].startswith("codex could not set up its own sandbox")


def test_a_coding_eval_names_codexs_missing_sandbox_in_its_message(tmp_path: Path) -> None:
    """The build and grade steps fail after such a run: the note says why."""
    recorded = RECORDED / "codex/recorded"
    log = tmp_path / "00-agent-codex.stdout"
    log.write_bytes((recorded / "own-sandbox-failed.jsonl").read_bytes())
    log.with_suffix(".stderr").write_bytes((recorded / "own-sandbox-failed.stderr").read_bytes())
    argv = ["codex", "exec", "--json", "--sandbox", "workspace-write"]
    step = StepRecord(phase="agent", name="codex", argv=argv, cwd=str(tmp_path), exit_code=0,
                      duration=1.0, timed_out=False, log=str(log))  # fmt: skip
    report = agent_report([step], OutputSpec(parser="codex"), 1_000_000)
    assert report.fields == {} and report.failed and report.note is not None
    assert report.note.startswith("codex could not set up its own sandbox")


PRINT_RECORDED = """
import sys
sys.stdout.write(open(sys.argv[1], encoding="utf-8").read())
"""


@XDIST_MODES
def test_a_coding_eval_whose_agent_reported_an_api_error_is_an_error_naming_it(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """aider exits 0 on a 401: even with steps that pass, the item is an error saying why."""
    agent = write(pytester.path / "print_recorded.py", PRINT_RECORDED)
    write(pytester.path / "problem" / "app.py", "print('unsolved')\n")
    (pytester.path / "grading").mkdir()
    suite = {
        "metadata": {"name": "code", "model": "m"},
        "evals": [
            {
                "name": "fix",
                "prompt": "fix it",
                "workspace": "problem",
                "grading": "grading",
                "build_steps": ["ok"],
                "grade_steps": ["ok"],
            }
        ],
        "configurations": {
            "aider": {
                "preset": "aider",
                "cli": PYTHON,
                "args": [str(agent), str(RECORDED / "aider/recorded/unauthorized.txt")],
                "prompt_via": "stdin",
            }
        },
        "commands": {"ok": {"command": PYTHON, "args": ["-c", "pass"]}},
    }
    write(pytester.path / "code.eval.yaml", json.dumps(suite))
    result = run(pytester, "--vibe-results", "r.json", "--vibe-sandbox", "none", xdist=xdist)
    result.assert_outcomes(failed=1)
    (record,) = load_json(pytester.path / "r.json")["runs"][0]["evals"]
    assert record["outcome"] == "error"
    assert record["message"].startswith(
        "the agent reported its run failed: output.parser 'aider': aider reported an API error: "
        "litellm.AuthenticationError"
    )


def test_llxprt_api_errors_name_the_status() -> None:
    """llxprt ends an API error with an `error` event (no `result`) whose `status` is the HTTP one."""
    assert error_of("llxprt", "llxprt/recorded/unauthorized.jsonl") == (
        "output.parser 'llxprt': the run reported an error (status 401) and no `result` event: "
        "Provider retries exhausted after 1 transport attempts: invalid api key for the scripted server"
    )
    assert "an error (status 500) and no `result` event" in error_of("llxprt", "llxprt/recorded/broken.jsonl")


def tool_calls_of(parsed: ParsedOutput) -> list[tuple[str, bool | None, str | None]]:
    return [(call.tool, call.success, call.error) for call in parsed.tool_calls]


def test_llxprt_stream_json() -> None:
    plain = parse_with("llxprt", RECORDED / "llxprt/recorded/plain.jsonl")
    assert (plain.text, plain.input_tokens, plain.output_tokens) == ("The answer is 4.", 120, 30)
    assert plain.latency == pytest.approx(0.122) and plain.tool_calls == ()
    wrote = parse_with("llxprt", RECORDED / "llxprt/recorded/write.jsonl")
    assert tool_calls_of(wrote) == [("replace", True, None)]  # auto_edit offers no write_file
    assert (wrote.input_tokens, wrote.output_tokens) == (240, 60)
    failed = parse_with("llxprt", RECORDED / "llxprt/recorded/fail.jsonl")
    assert tool_calls_of(failed) == [("read_file", False, "File not found: /tmp/item/no-such-file.txt")]
    assert failed.text.startswith("Done: the tool said: ")


def test_llxprt_json_output(tmp_path: Path) -> None:
    """`--output-format json` counts tool calls per tool, and writes an error to stderr only."""
    wrote = parse_with("llxprt", RECORDED / "llxprt/recorded/write.json")
    assert wrote.text == "Done: the tool said: Created new file: /tmp/item/hello.txt with provided content."
    assert (wrote.input_tokens, wrote.output_tokens) == (240, 60)
    assert tool_calls_of(wrote) == [("replace", True, None)]
    assert parse_with("llxprt", RECORDED / "llxprt/recorded/plain.json").text == "The answer is 4."
    empty = tmp_path / "agent.stdout"
    empty.write_bytes(b"")
    stderr = RECORDED / "llxprt/recorded/unauthorized-json.stderr"
    report = failure_report("llxprt exited with code 1", empty, stderr, OutputSpec(parser="llxprt"))
    assert '    "status": 401,' in report.splitlines()  # the tail of stderr
    assert "invalid api key for the scripted server" in report
