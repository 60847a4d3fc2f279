"""Agent CLI presets (``preset: claude-code`` …) and the output parsers they use: each parser
against hand-written samples of its tool's documented format (tests/samples/<tool>/), malformed
and truncated output, merging a preset with a configuration's own keys, and real runs."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import PYTHON, XDIST_MODES, evals_by_nodeid, load_json, run, write
from pydantic import ValidationError

from pytest_vibeeval.errors import InputError
from pytest_vibeeval.loading.suite import load_suite
from pytest_vibeeval.models import CliConfigFile, Configuration
from pytest_vibeeval.presets import AGENT_PRESETS
from pytest_vibeeval.providers.output import OutputError, ParsedOutput
from pytest_vibeeval.providers.parsers import BUILTIN_PARSERS, builtin_parsers, parse_with
from pytest_vibeeval.results import ToolCallRecord
from pytest_vibeeval.scoring.transcripts import summarise
from pytest_vibeeval.surrogates import model_json

SAMPLES = Path(__file__).parent / "samples"


def parse(parser: str, sample: str) -> ParsedOutput:
    return parse_with(parser, SAMPLES / sample)


def calls(parsed: ParsedOutput) -> list[tuple[str, bool | None, str | None]]:
    return [(call.tool, call.success, call.error) for call in parsed.tool_calls]


def failure(parser: str, path: Path) -> str:
    with pytest.raises(OutputError) as info:
        parse_with(parser, path)
    message = str(info.value)
    assert message.startswith(f"output.parser {parser!r}: "), message
    return message


def variant(tmp_path: Path, sample: str, edit: Any, name: str = "out") -> Path:
    """A copy of ``sample`` changed by ``edit`` (a function of its text)."""
    path = tmp_path / name
    path.write_text(edit((SAMPLES / sample).read_text(encoding="utf-8")), encoding="utf-8")
    return path


# --- the parsers on their samples --------------------------------------------------------------


def test_claude_code_stream_json() -> None:
    parsed = parse("claude-code", "claude-code/stream.jsonl")
    assert parsed.text == "Fixed: `add` now returns a + b. The answer is 42."
    assert parsed.cost == 0.0421
    # usage.input_tokens counts only uncached input: the cache writes and reads are input too.
    assert (parsed.input_tokens, parsed.output_tokens) == (20 + 1500 + 3000, 180)
    assert parsed.cached_input_tokens == 3000  # cache_read_input_tokens, part of the input
    assert parsed.cache_write_tokens == 1500  # cache_creation_input_tokens, part of the input
    assert parsed.latency == pytest.approx(8.421)  # duration_ms
    assert calls(parsed) == [
        ("Bash", True, None),
        ("Read", False, "<tool_use_error>File does not exist.</tool_use_error>"),
        ("Edit", True, None),
    ]


def test_claude_code_parallel_calls_share_their_message() -> None:
    parsed = parse("claude-code", "claude-code/parallel.jsonl")
    assert [(call.tool, call.success, call.batch) for call in parsed.tool_calls] == [
        ("Read", False, 0),
        ("Read", True, 0),  # made together with the failed Read: not a retry
        ("Glob", True, 1),
        ("Read", True, 2),
    ]
    assert summarise(list(parsed.tool_calls), "output:claude-code").errors == {"tool_fail": 1, "retry": 0}


def test_codex_reconnections_are_retries() -> None:
    parsed = parse("codex", "codex/reconnected.jsonl")
    assert parsed.api_retries == 2  # two `Reconnecting... n/5` errors, then the turn completed
    assert parsed.tool_calls == parse("codex", "codex/events.jsonl").tool_calls
    assert parse("codex", "codex/events.jsonl").api_retries == 0
    transcript = summarise(list(parsed.tool_calls), "output:codex", api_retries=parsed.api_retries)
    assert (transcript.errors, transcript.retries, transcript.api_retries) == (
        {"tool_fail": 2, "retry": 2},
        0,
        2,
    )


def test_claude_code_json_result() -> None:
    parsed = parse("claude-code", "claude-code/result.json")
    assert parsed.text == "Paris is the capital of France."
    assert (parsed.cost, parsed.input_tokens, parsed.output_tokens) == (0.0123, 3 + 17500, 9)
    assert parsed.latency == pytest.approx(2.95)
    assert parsed.tool_calls == ()


def test_claude_code_verbose_json_array(tmp_path: Path) -> None:
    """``--output-format json --verbose`` prints every message as one JSON array."""
    lines = (SAMPLES / "claude-code/stream.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "out.json"
    path.write_text(json.dumps([json.loads(line) for line in lines], indent=1), encoding="utf-8")
    parsed = parse_with("claude-code", path)
    assert parsed == parse("claude-code", "claude-code/stream.jsonl")


def test_codex_events() -> None:
    parsed = parse("codex", "codex/events.jsonl")
    assert parsed.text == "Fixed `add` in calc.py; the tests pass now. The answer is 42."
    assert parsed.cost is None  # codex reports no cost
    assert (parsed.input_tokens, parsed.output_tokens) == (24763, 122)
    assert parsed.cached_input_tokens == 24448  # part of input_tokens
    assert parsed.latency is None
    assert calls(parsed) == [
        ("command_execution", True, None),
        (
            "command_execution",
            False,
            "exit code 1: F\nFAILED test_calc.py::test_add - assert -1 == 5\n1 failed in 0.03s",
        ),
        ("file_change", True, None),
        ("mcp__docs__search", False, "MCP server docs is not running"),
    ]


@pytest.mark.parametrize("parser", ["gemini", "llxprt"])
def test_gemini_stream_json(parser: str) -> None:
    parsed = parse(parser, "gemini/stream.jsonl")
    assert parsed.text == "I'll read the file first.\nFixed: add now returns a + b. The answer is 42."
    assert parsed.cost is None
    assert (parsed.input_tokens, parsed.output_tokens) == (5000, 230)
    assert parsed.latency == pytest.approx(6.12)
    assert calls(parsed) == [
        ("read_file", True, None),
        ("run_shell_command", False, "Tool execution denied by policy."),
        ("replace", True, None),
    ]
    # the duration of each call is the time between its tool_use and tool_result events
    assert [call.duration for call in parsed.tool_calls] == [
        pytest.approx(0.25),
        pytest.approx(0.1),
        pytest.approx(0.5),
    ]


def test_llxprt_stream_json() -> None:
    parsed = parse("llxprt", "llxprt/stream.jsonl")
    assert parsed.text == "6 times 7 is 42."
    assert (parsed.input_tokens, parsed.output_tokens, parsed.latency) == (3000, 100, 4.5)
    assert calls(parsed) == [
        ("run_shell_command", True, None),
        ("web_fetch", False, "getaddrinfo ENOTFOUND example.invalid"),
    ]


def test_gemini_json_output() -> None:
    parsed = parse("gemini", "gemini/output.json")
    assert parsed.text == "Paris is the capital of France."
    # summed over the models the run used: prompt and candidates tokens
    assert (parsed.input_tokens, parsed.output_tokens) == (1200 + 80, 45 + 5)
    # json output has only counts per tool: one record per counted call, without details
    assert calls(parsed) == [("read_file", True, None), ("read_file", True, None), ("glob", False, None)]


def test_aider_text() -> None:
    parsed = parse("aider", "aider/output.txt")
    assert parsed.text.startswith("calc.py\n<<<<<<< SEARCH\n")  # no start-up banner
    assert "The answer is 42." in parsed.text
    assert "Tokens:" not in parsed.text and "Cost:" not in parsed.text
    assert parsed.text.endswith("Applied edit to calc.py")
    assert parsed.cost == 0.0177  # the per-message costs summed
    # two requests, as aider rounds them: 2.4k + 2.7k sent, 96 + 80 received
    assert (parsed.input_tokens, parsed.output_tokens) == (5100, 176)
    assert "failed to match" not in parsed.text  # aider's report is the failed edit's error
    assert calls(parsed) == [
        (
            "edit",
            False,
            "# 1 SEARCH/REPLACE block failed to match!\n"
            "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in calc.py",
        ),
        ("edit", True, None),
    ]


# aider's whole report on two failed blocks of three, with its hints (aider's editblock_coder).
AIDER_REPORT = """\
Aider v0.86.2
Main model: openai/gpt-4o with diff edit format

I fix both.

Tokens: 120 sent, 30 received. Cost: $0.00060 message, $0.00060 session.
The LLM did not conform to the edit format.
https://aider.chat/docs/troubleshooting/edit-errors.html

# 2 SEARCH/REPLACE blocks failed to match!

## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in
calc.py
<<<<<<< SEARCH
def add(a, b):

    return a * b
=======
def add(a, b):
    return a + b
>>>>>>> REPLACE

Did you mean to match some of these actual lines from calc.py?

```
# a comment aider quotes from the file
def add(a, b):

    return a - b
```

## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in util.py
<<<<<<< SEARCH
x = 1
=======
x = 2
>>>>>>> REPLACE

Are you sure you need this SEARCH/REPLACE block?
The REPLACE lines are already in util.py!

The SEARCH section must exactly match an existing block of lines including all
white space, comments, indentation, docstrings, etc

# The other 1 SEARCH/REPLACE block were applied successfully.
Don't re-send them.
Just reply with fixed versions of the blocks above that failed to match.

- Fixed: `add` adds now.
"""


def test_aider_leaves_its_whole_edit_report_out_of_the_answer(tmp_path: Path) -> None:
    path = tmp_path / "aider.txt"
    path.write_text(AIDER_REPORT, encoding="utf-8")
    parsed = parse_with("aider", path)
    assert parsed.text == "I fix both.\n\n\n- Fixed: `add` adds now."  # the blank lines around it kept
    assert calls(parsed) == [
        (
            "edit",
            False,
            "# 2 SEARCH/REPLACE blocks failed to match!\n"
            "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in calc.py\n"
            "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in util.py",
        )
    ]


def test_aider_keeps_the_answer_in_the_lines_it_printed(tmp_path: Path) -> None:
    """Only ``\\n`` ends a line of aider's output: a form feed or U+2028 in the answer stays in it
    (``str.splitlines`` broke the line there, and the answer came back with ``\\n`` instead)."""
    path = tmp_path / "aider.txt"
    path.write_text("Aider v0.86.2\n\npage one\x0cpage two\u2028same line\nlast\n", encoding="utf-8")
    assert parse_with("aider", path).text == "page one\x0cpage two\u2028same line\nlast"


# --- malformed and truncated output --------------------------------------------------------------


def cut_mid_last_line(text: str) -> str:
    return text[: text.rstrip("\n").rfind("\n") + 40]


def drop_last_line(text: str) -> str:
    return "".join(text.splitlines(keepends=True)[:-1])


@pytest.mark.parametrize(
    ("parser", "sample", "line"),
    [
        ("claude-code", "claude-code/stream.jsonl", 9),
        ("codex", "codex/events.jsonl", 12),
        ("gemini", "gemini/stream.jsonl", 12),
    ],
)
def test_output_cut_inside_a_line(tmp_path: Path, parser: str, sample: str, line: int) -> None:
    message = failure(parser, variant(tmp_path, sample, cut_mid_last_line))
    assert f"line {line} is not valid JSON (" in message
    assert message.endswith("the output ends inside it: was the run cut off?")


@pytest.mark.parametrize(
    ("parser", "sample", "expected"),
    [
        ("claude-code", "claude-code/stream.jsonl", "no `result` event among 8 JSON lines"),
        ("codex", "codex/events.jsonl", "no `turn.completed` event among 11 JSON lines"),
        ("gemini", "gemini/stream.jsonl", "no `result` event among 11 JSON lines"),
    ],
)
def test_output_without_its_final_event(tmp_path: Path, parser: str, sample: str, expected: str) -> None:
    message = failure(parser, variant(tmp_path, sample, drop_last_line))
    assert expected in message
    assert "the output ends early (was the run cut off?)" in message


def test_empty_or_foreign_output(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("", encoding="utf-8")
    assert "no `result` event among 0 JSON lines" in failure("claude-code", empty)
    text = tmp_path / "text"
    text.write_text("Sure! The answer is 42.\n", encoding="utf-8")
    assert "no `turn.completed` event among 0 JSON lines" in failure("codex", text)
    for parser in ("gemini", "llxprt"):  # as the others say it, not "not valid JSON (Expecting value…)"
        assert "no `result` event among 0 JSON lines; the output ends early" in failure(parser, empty)
        assert "no `result` event among 0 JSON lines" in failure(parser, text)
    assert "no `result` event among 12 JSON lines" in failure("claude-code", SAMPLES / "codex/events.jsonl")


NOTICES = ("[dotenv@17.2.1] injecting env (0) from .env", "Loaded cached credentials.")


@pytest.mark.parametrize("notice", NOTICES)
@pytest.mark.parametrize(
    ("parser", "sample"),
    [
        ("claude-code", "claude-code/stream.jsonl"),
        ("claude-code", "claude-code/result.json"),
        ("gemini", "gemini/stream.jsonl"),
        ("gemini", "gemini/output.json"),
        ("codex", "codex/events.jsonl"),
    ],
)
def test_a_notice_before_the_json_is_passed_over(
    tmp_path: Path, parser: str, sample: str, notice: str
) -> None:
    """Some CLIs (gemini-cli's `Loaded cached credentials.`, dotenv in a wrapper) print a line
    before their JSON; one starting with `[` is not Claude Code's JSON array."""
    noisy = variant(tmp_path, sample, lambda text: f"{notice}\n{text}")
    assert parse_with(parser, noisy) == parse(parser, sample)


def test_a_notice_before_claude_codes_json_array(tmp_path: Path) -> None:
    lines = (SAMPLES / "claude-code/stream.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "out.json"
    array = json.dumps([json.loads(line) for line in lines], indent=1)
    path.write_text(f"{NOTICES[0]}\n{array}", encoding="utf-8")
    assert parse_with("claude-code", path) == parse("claude-code", "claude-code/stream.jsonl")


def test_errors_the_agents_report() -> None:
    assert failure("claude-code", SAMPLES / "claude-code/max_turns.jsonl") == (
        "output.parser 'claude-code': the run ended with error_max_turns after 1 turns"
    )
    assert failure("codex", SAMPLES / "codex/failed.jsonl") == (
        "output.parser 'codex': codex reported turn.failed: stream disconnected before completion: "
        "rate limit reached"
    )
    assert failure("gemini", SAMPLES / "gemini/error.json") == (
        "output.parser 'gemini': the run ended with an error: Please set an Auth method in your settings.json"
    )


def test_gemini_error_event_without_a_result(tmp_path: Path) -> None:
    def fail_midway(text: str) -> str:
        kept = text.splitlines(keepends=True)[:6]
        error = {
            "type": "error",
            "timestamp": "2025-10-10T12:00:02Z",
            "severity": "error",
            "message": "quota",
        }
        return "".join(kept) + json.dumps(error) + "\n"

    message = failure("gemini", variant(tmp_path, "gemini/stream.jsonl", fail_midway))
    assert message == "output.parser 'gemini': the run reported an error and no `result` event: quota"


def test_bad_values_name_the_field(tmp_path: Path) -> None:
    bad_cost = variant(tmp_path, "claude-code/result.json", lambda t: t.replace("0.0123", '"lots"'))
    assert "`total_cost_usd` holds 'lots', not a non-negative finite number" in failure(
        "claude-code", bad_cost
    )
    bad_tokens = variant(
        tmp_path, "codex/events.jsonl", lambda t: t.replace('"output_tokens":122', '"output_tokens":1.5')
    )
    assert "`usage.output_tokens` holds 1.5, not a whole number" in failure("codex", bad_tokens)


def test_codex_retry_errors_do_not_fail_a_completed_turn(tmp_path: Path) -> None:
    retried = variant(
        tmp_path,
        "codex/events.jsonl",
        lambda t: t.replace(
            '{"type":"turn.started"}\n',
            '{"type":"turn.started"}\n{"type":"error","message":"Reconnecting... 1/5"}\n',
        ),
    )
    assert parse_with("codex", retried).text.endswith("The answer is 42.")
    no_answer = variant(
        tmp_path, "codex/events.jsonl", lambda t: t.replace("agent_message", "reasoning"), "b"
    )
    assert "without an `agent_message` item" in failure("codex", no_answer)


def test_a_tool_call_without_its_result_has_no_outcome(tmp_path: Path) -> None:
    def drop_completion(text: str) -> str:
        lines = text.splitlines(keepends=True)
        return "".join(line for line in lines if not ('"item_2"' in line and "item.completed" in line))

    unfinished = variant(tmp_path, "codex/events.jsonl", drop_completion)
    assert calls(parse_with("codex", unfinished))[1] == ("command_execution", None, None)


def test_every_built_in_parser_belongs_to_an_agent_preset() -> None:
    """Without a session's registry, models check parser names against the presets' parsers."""
    assert set(BUILTIN_PARSERS) == {preset.parser for preset in AGENT_PRESETS.values()}


def test_registering_a_parser_name_twice_is_an_error() -> None:
    parsers = builtin_parsers()
    with pytest.raises(ValueError, match="'codex' is already registered"):
        parsers.register("codex", BUILTIN_PARSERS["codex"])


# --- presets: defaults, overrides, errors ----------------------------------------------------------


@pytest.mark.parametrize("name", list(AGENT_PRESETS))
def test_a_preset_supplies_a_complete_configuration(name: str) -> None:
    config = Configuration.model_validate({"preset": name})
    preset = AGENT_PRESETS[name]
    assert config.kind == "cli"
    assert (config.cli, config.args, config.prompt_via) == (preset.cli, list(preset.args), preset.prompt_via)
    assert config.output.parser == preset.parser
    assert config.output.parser in BUILTIN_PARSERS


def test_presets_command_lines() -> None:
    def argv(name: str) -> list[str]:
        config = Configuration.model_validate({"preset": name})
        return [config.cli or "", *config.args]

    assert argv("claude-code")[:5] == ["claude", "-p", "--output-format", "stream-json", "--verbose"]
    assert argv("codex")[:3] == ["codex", "exec", "--json"]
    assert argv("gemini")[:3] == ["gemini", "--output-format", "stream-json"]
    assert argv("gemini")[-2:] == ["-p", "${PROMPT}"]
    assert argv("llxprt")[0] == "llxprt"
    assert argv("aider")[-2:] == ["--message", "${PROMPT}"]


def test_own_keys_override_the_preset() -> None:
    config = Configuration.model_validate(
        {
            "preset": "claude-code",
            "args": ["-p", "--output-format", "json"],
            "timeout": 600000,
            "cli": "./claude",
        }
    )
    assert (config.cli, config.args, config.timeout) == (
        "./claude",
        ["-p", "--output-format", "json"],
        600000,
    )
    assert config.output.parser == "claude-code"  # kept: it reads --output-format json too
    own_output = Configuration.model_validate(
        {"preset": "claude-code", "output": {"format": "json", "response": "result"}}
    )
    assert own_output.output.parser is None and own_output.output.response == "result"
    assert (
        Configuration.model_validate({"preset": "aider", "max_output_bytes": 1000}).max_output_bytes == 1000
    )


def test_model_adds_the_model_flag_unless_args_are_given() -> None:
    with_model = Configuration.model_validate({"preset": "codex", "model": "gpt-5-codex"})
    assert with_model.args[-2:] == ["--model", "${MODEL}"]
    own_args = Configuration.model_validate({"preset": "codex", "model": "gpt-5-codex", "args": ["exec"]})
    assert own_args.args == ["exec"]
    assert "--model" not in Configuration.model_validate({"preset": "codex"}).args


def problem(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        Configuration.model_validate(data)
    return str(info.value)


def test_configuration_errors() -> None:
    unknown = problem({"preset": "claude"})
    assert "unknown preset 'claude' (did you mean 'claude-code'?); known presets: " in unknown
    assert "known presets: claude-code, codex, gemini, llxprt, aider" in unknown
    assert "did you mean" not in problem({"preset": "cursor"})
    assert "preset 'codex' runs an agent CLI; it cannot be combined with `python`" in problem(
        {"preset": "codex", "python": "app:answer"}
    )
    assert "unknown output parser 'gemeni' (did you mean 'gemini'?)" in problem(
        {"cli": "x", "output": {"parser": "gemeni"}}
    )
    assert "output.parser 'codex' reads the whole output; remove `format`, `response`" in problem(
        {"cli": "x", "output": {"parser": "codex", "format": "json", "response": "text"}}
    )


def test_unknown_preset_in_a_suite_names_the_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "suite.eval.yaml",
        """
        metadata: {name: s, model: m}
        evals:
          - {name: ask, prompt: hi, checks: [{match: "*"}]}
        configurations:
          agent:
            preset: codx
            timeout: 1000
        """,
    )
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert info.value.render() == (
        f"{path}:6: configurations.agent.preset: unknown preset 'codx' (did you mean 'codex'?); "
        "known presets: claude-code, codex, gemini, llxprt, aider"
    )


def test_presets_in_cli_config_json() -> None:
    parsed = CliConfigFile.model_validate(
        {"configurations": {"claude": {"preset": "claude-code", "name": "Claude Code"}}}
    )
    assert parsed.configurations["claude"].cli == "claude"


# --- real runs: a preset with `cli:` replaced by a fake agent printing a sample ----------------------

FAKE_AGENT = f"""#!{PYTHON}
import json, os, sys
prompt = sys.stdin.read()
with open(os.environ["FAKE_AGENT_RECORD"], "w") as handle:
    json.dump({{"argv": sys.argv[1:], "stdin": prompt}}, handle)
with open(os.environ["FAKE_AGENT_SAMPLE"], encoding="utf-8") as handle:
    sys.stdout.write(handle.read())
"""

PROMPT = "What is the answer?"


def fake(pytester: pytest.Pytester, config_id: str, sample: Path, **keys: Any) -> dict[str, Any]:
    env = {"FAKE_AGENT_SAMPLE": str(sample), "FAKE_AGENT_RECORD": str(pytester.path / f"{config_id}.json")}
    return {"cli": "./fake_agent.py", "env": env, **keys}


@XDIST_MODES
def test_preset_suite_runs_with_a_fake_agent(pytester: pytest.Pytester, xdist: list[str]) -> None:
    script = write(pytester.path / "fake_agent.py", FAKE_AGENT)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    truncated = pytester.path / "truncated.jsonl"
    truncated.write_text(cut_mid_last_line((SAMPLES / "codex/events.jsonl").read_text()), encoding="utf-8")
    configurations = {
        "claude": fake(
            pytester, "claude", SAMPLES / "claude-code/stream.jsonl", preset="claude-code", timeout=600000
        ),
        "codex": fake(pytester, "codex", SAMPLES / "codex/events.jsonl", preset="codex"),
        "gemini": fake(pytester, "gemini", SAMPLES / "gemini/stream.jsonl", preset="gemini"),
        "llxprt": fake(pytester, "llxprt", SAMPLES / "llxprt/stream.jsonl", preset="llxprt"),
        "aider": fake(pytester, "aider", SAMPLES / "aider/output.txt", preset="aider"),
        "plain": fake(pytester, "plain", SAMPLES / "gemini/output.json", output={"parser": "gemini"}),
        "cut": fake(pytester, "cut", truncated, preset="codex"),
        "parallel": fake(pytester, "parallel", SAMPLES / "claude-code/parallel.jsonl", preset="claude-code"),
        "reconnected": fake(pytester, "reconnected", SAMPLES / "codex/reconnected.jsonl", preset="codex"),
    }
    suite = {
        "metadata": {"name": "agents", "model": "suite/model"},
        "evals": [{"name": "ask", "prompt": PROMPT, "checks": [{"match": "*"}]}],
        "configurations": configurations,
    }
    write(pytester.path / "agents.eval.yaml", yaml.safe_dump(suite, sort_keys=False))
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path), xdist=xdist)
    result.assert_outcomes(passed=8, failed=1)
    assert "Traceback" not in result.stdout.str()
    records = {nodeid.split("[")[1].rstrip("]"): r for nodeid, r in evals_by_nodeid(load_json(path)).items()}

    def seen(config_id: str) -> Any:
        return load_json(pytester.path / f"{config_id}.json")

    def tools(config_id: str) -> list[tuple[str, bool | None]]:
        return [(call["tool"], call["success"]) for call in records[config_id]["tool_calls"]]

    claude = records["claude"]
    assert claude["response"] == "Fixed: `add` now returns a + b. The answer is 42."
    assert (claude["cost"], claude["input_tokens"], claude["output_tokens"]) == (0.0421, 4520, 180)
    assert claude["latency"] == pytest.approx(8.421)  # as Claude Code reported it
    assert claude["tool_calls"][1] == {
        "tool": "Read",
        "success": False,
        "error": "<tool_use_error>File does not exist.</tool_use_error>",
        "duration": None,
        "retry": False,
        "batch": 1,  # the second assistant message
        "args": None,  # the parsers do not record arguments
    }
    assert tools("claude") == [("Bash", True), ("Read", False), ("Edit", True)]
    # the transcript summarises them: per tool, errors by type; the rubric's tool signals use it
    assert claude["transcript"] == {
        "source": "output:claude-code",
        "calls": 3,
        "succeeded": 2,
        "tools": {
            "Bash": {"calls": 1, "succeeded": 1, "failed": 0},
            "Read": {"calls": 1, "succeeded": 0, "failed": 1},
            "Edit": {"calls": 1, "succeeded": 1, "failed": 0},
        },
        "errors": {"tool_fail": 1, "retry": 0},
        "retries": 0,
        "api_retries": 0,
        "duration": 8.421,  # no timestamps in the output: the agent's own run time
        "problems": [],
    }
    assert claude["rubric"]["signals"]["tool_success_rate"] == pytest.approx(2 / 3)
    assert claude["rubric"]["signals"]["error_rate"] == pytest.approx(0.1)
    # two Reads made together, the first failed: one failed call and no retry
    parallel = records["parallel"]
    assert parallel["transcript"]["errors"] == {"tool_fail": 1, "retry": 0}
    assert parallel["rubric"]["signals"]["error_rate"] == pytest.approx(0.1)
    # codex retried its request to the model twice: two retries, with its two failed calls
    reconnected = records["reconnected"]
    assert reconnected["api_retries"] == 2
    assert reconnected["transcript"]["errors"] == {"tool_fail": 2, "retry": 2}
    assert reconnected["transcript"]["api_retries"] == 2
    assert reconnected["rubric"]["errors"] == {"tool_fail": 2, "retry": 2, "output_error": 0}
    assert reconnected["rubric"]["signals"]["error_rate"] == pytest.approx(0.4)
    assert records["codex"]["api_retries"] == 0 and records["claude"]["api_retries"] is None
    assert (claude["cached_input_tokens"], records["codex"]["cached_input_tokens"]) == (3000, 24448)
    # the preset's arguments reach the agent; the prompt arrives on stdin
    assert seen("claude") == {"argv": list(AGENT_PRESETS["claude-code"].args), "stdin": PROMPT}

    codex = records["codex"]
    assert codex["response"].endswith("The answer is 42.")
    assert (codex["cost"], codex["input_tokens"], codex["output_tokens"]) == (None, 24763, 122)
    assert tools("codex") == [
        ("command_execution", True),
        ("command_execution", False),
        ("file_change", True),
        ("mcp__docs__search", False),
    ]
    assert seen("codex") == {"argv": list(AGENT_PRESETS["codex"].args), "stdin": PROMPT}

    gemini = records["gemini"]
    assert gemini["response"].endswith("The answer is 42.")
    assert (gemini["input_tokens"], gemini["output_tokens"], gemini["latency"]) == (5000, 230, 6.12)
    assert tools("gemini") == [("read_file", True), ("run_shell_command", False), ("replace", True)]
    # the prompt is the value of -p, and not on stdin
    assert seen("gemini") == {"argv": [*AGENT_PRESETS["gemini"].args[:-1], PROMPT], "stdin": ""}
    assert records["gemini"]["steps"][0]["argv"][-1] == "<prompt>"

    assert records["llxprt"]["response"] == "6 times 7 is 42."
    assert tools("llxprt") == [("run_shell_command", True), ("web_fetch", False)]

    aider = records["aider"]
    assert "The answer is 42." in aider["response"] and "Tokens:" not in aider["response"]
    assert (aider["cost"], aider["input_tokens"], aider["output_tokens"]) == (0.0177, 5100, 176)
    assert tools("aider") == [("edit", False), ("edit", True)]
    assert seen("aider")["argv"][-2:] == ["--message", PROMPT]

    plain = records["plain"]
    assert plain["response"] == "Paris is the capital of France."
    assert tools("plain") == [("read_file", True), ("read_file", True), ("glob", False)]

    cut = records["cut"]
    assert cut["outcome"] == "error"
    assert cut["message"].startswith("output.parser 'codex': line 12 is not valid JSON (")
    assert cut["message"].endswith("the output ends inside it: was the run cut off?")
    assert cut["tool_calls"] == [] and cut["response"] is None
    result.stdout.fnmatch_lines(["*output.parser 'codex': line 12 is not valid JSON*"])


def priced_records(
    pytester: pytest.Pytester, configurations: dict[str, Any], xdist: list[str]
) -> dict[str, dict[str, Any]]:
    """Run one passing eval through each of the fake agent's ``configurations``: their records
    by configuration."""
    script = write(pytester.path / "fake_agent.py", FAKE_AGENT)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    suite = {
        "metadata": {"name": "priced", "model": "m"},
        "evals": [{"name": "ask", "prompt": PROMPT, "checks": [{"match": "*"}]}],
        "configurations": configurations,
    }
    write(pytester.path / "priced.eval.yaml", yaml.safe_dump(suite, sort_keys=False))
    path = pytester.path / "results.json"
    run(pytester, "--vibe-results", str(path), xdist=xdist).assert_outcomes(passed=len(configurations))
    return {nodeid.split("[")[1].rstrip("]"): r for nodeid, r in evals_by_nodeid(load_json(path)).items()}


@XDIST_MODES
def test_codex_cached_input_is_priced_at_its_own_rate(pytester: pytest.Pytester, xdist: list[str]) -> None:
    prices = {"input_per_mtok": 1.25, "output_per_mtok": 10}
    cached_rate = {"cached_input_per_mtok": 0.125}
    sample = SAMPLES / "codex/events.jsonl"
    configurations = {
        "full": fake(pytester, "full", sample, preset="codex", pricing=prices),
        "cheap": fake(pytester, "cheap", sample, preset="codex", pricing={**prices, **cached_rate}),
    }
    records = priced_records(pytester, configurations, xdist)
    # 24 763 input tokens, 24 448 of them read from codex's prompt cache, and 122 output tokens
    for record in records.values():
        tokens = record["input_tokens"], record["cached_input_tokens"], record["output_tokens"]
        assert tokens == (24763, 24448, 122)
        assert record["cost_source"] == "pricing"
    assert records["full"]["cost"] == pytest.approx((24763 * 1.25 + 122 * 10) / 1e6)  # no cached rate
    assert records["cheap"]["cost"] == pytest.approx((315 * 1.25 + 24448 * 0.125 + 122 * 10) / 1e6)


def without_reported_cost(text: str) -> str:
    return text.replace('"total_cost_usd":0.0421,', "")


@XDIST_MODES
def test_claude_cache_writes_and_reads_are_priced_at_anthropics_rates(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """Claude Code's usage: 20 uncached input tokens, 1 500 written to the prompt cache, 3 000 read
    from it, 180 output tokens. Priced from tokens, writes cost 1.25 × the input rate and reads
    0.1 × unless the pricing sets its own; a reported total_cost_usd wins over any price."""
    prices = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
    own = {**prices, "cached_input_per_mtok": 0.5, "cache_write_per_mtok": 6.0}
    unpriced = variant(pytester.path, "claude-code/stream.jsonl", without_reported_cost, "unpriced.jsonl")
    configurations = {
        "reported": fake(
            pytester, "reported", SAMPLES / "claude-code/stream.jsonl", preset="claude-code", pricing=prices
        ),
        "anthropic": fake(pytester, "anthropic", unpriced, preset="claude-code", pricing=prices),
        "own": fake(pytester, "own", unpriced, preset="claude-code", pricing=own),
    }
    records = priced_records(pytester, configurations, xdist)
    for record in records.values():
        tokens = record["input_tokens"], record["cached_input_tokens"], record["cache_write_tokens"]
        assert (*tokens, record["output_tokens"]) == (4520, 3000, 1500, 180)
    assert (records["reported"]["cost"], records["reported"]["cost_source"]) == (0.0421, "reported")
    assert records["anthropic"]["cost_source"] == records["own"]["cost_source"] == "pricing"
    assert records["anthropic"]["cost"] == pytest.approx((20 * 3 + 1500 * 3.75 + 3000 * 0.3 + 180 * 15) / 1e6)
    assert records["own"]["cost"] == pytest.approx((20 * 3 + 1500 * 6 + 3000 * 0.5 + 180 * 15) / 1e6)


def cut_mid_emoji(text: str) -> str:
    """What Node's JSON.stringify writes for a string cut inside an emoji: a lone surrogate escape."""
    return text.replace("The answer is 42.", "The answer is 42. \\ud83d").replace(
        "File does not exist.", "File does not exist. \\uD83D"
    )


@XDIST_MODES
def test_a_lone_surrogate_in_agent_json_is_replaced(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """It cannot be written as UTF-8: kept, it lost the session's results (serially) or failed the
    eval (under xdist)."""
    script = write(pytester.path / "fake_agent.py", FAKE_AGENT)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    stream = variant(pytester.path, "claude-code/stream.jsonl", cut_mid_emoji, "stream.jsonl")
    document = write(pytester.path / "answer.json", '{"answer": "42 \\udfff", "cost": 0.5}')
    configurations = {
        "claude": fake(pytester, "claude", stream, preset="claude-code"),
        "plain": fake(pytester, "plain", document, output={"format": "json", "response": "answer"}),
    }
    suite = {
        "metadata": {"name": "agents", "model": "m"},
        "evals": [{"name": "ask", "prompt": PROMPT, "checks": [{"contains": "42"}]}],
        "configurations": configurations,
    }
    write(pytester.path / "agents.eval.yaml", yaml.safe_dump(suite))
    result = run(pytester, "--vibe-results", "results.json", xdist=xdist)
    result.assert_outcomes(passed=2)
    assert "Traceback" not in result.stdout.str()
    records = evals_by_nodeid(load_json(pytester.path / "results.json"))
    claude, plain = (records[f"agents.eval.yaml::ask[{name}]"] for name in ("claude", "plain"))
    assert claude["response"] == "Fixed: `add` now returns a + b. The answer is 42. \ufffd"
    assert claude["tool_calls"][1]["error"] == "<tool_use_error>File does not exist. \ufffd</tool_use_error>"
    assert plain["response"] == "42 \ufffd"


def test_a_record_holding_a_surrogate_is_still_written() -> None:
    """Defense in depth: a string from elsewhere than JSON does not make the record unwritable."""
    record = ToolCallRecord(tool="bash", success=False, error="cut \ud83d")
    assert json.loads(model_json(record, indent=2))["error"] == "cut \ufffd"
    assert model_json(ToolCallRecord(tool="bash")) == ToolCallRecord(tool="bash").model_dump_json()


def test_the_samples_say_whether_they_are_hand_written() -> None:
    for folder in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        readme = (folder / "README.md").read_text(encoding="utf-8")
        assert "hand-written" in readme.lower() and "not captured from a real run" in readme, folder
        recorded = folder / "recorded"
        if recorded.is_dir():
            note = (recorded / "README.md").read_text(encoding="utf-8")
            assert "Recorded from the real" in note and "not written by hand" in note, recorded
