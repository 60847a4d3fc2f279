"""Configurations that answer prompts: executables (``cli:``) run as real subprocesses, and Python
callables (``python:``) called in-process."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import (
    HANGING_TREE_SCRIPT,
    PYTHON,
    XDIST_MODES,
    agent,
    c_locale,
    evals_by_nodeid,
    load_json,
    run,
    run_of,
    wait_gone,
    write,
)
from pydantic import TypeAdapter, ValidationError

from pytest_vibeeval.models import MAX_TIMEOUT_MS, CommandDefinition, Configuration, StepName

# Reports what it was given: its arguments, its stdin and one environment variable.
INTROSPECT = """
import json, os, sys
print(json.dumps({
    "argv": sys.argv[1:],
    "stdin": sys.stdin.read(),
    "env": os.environ.get("VIBE_TEST_AGENT_ENV"),
}))
"""


def suite(
    directory: Path,
    configurations: dict[str, Any],
    evals: list[dict[str, Any]] | None = None,
    *,
    name: str = "agents",
    system_prompt: str | None = None,
    formula: str = "success_pct",
) -> Path:
    metadata: dict[str, Any] = {"name": name, "model": "suite/model"}
    if system_prompt is not None:
        metadata["system_prompt"] = system_prompt
    data = {
        "metadata": metadata,
        "evals": evals or [{"name": "ask", "prompt": "Say hi", "checks": [{"match": "*"}]}],
        "score": {"formula": formula},
        "configurations": configurations,
    }
    return write(directory / f"{name}.eval.yaml", yaml.safe_dump(data, sort_keys=False))


def cli(script: str, **extra: Any) -> dict[str, Any]:
    return {"cli": PYTHON, "args": [script], **extra}


def results_of(
    pytester: pytest.Pytester, *args: str, xdist: list[str] | None = None
) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "results.json"
    result = run(pytester, "-rA", "--vibe-results", str(path), *args, xdist=xdist)
    return result, load_json(path)


def record(data: dict[str, Any], config_id: str, eval_id: str = "ask", suite_name: str = "agents") -> Any:
    return evals_by_nodeid(data)[f"{suite_name}.eval.yaml::{eval_id}[{config_id}]"]


def test_prompt_delivery_and_substitutions(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = agent(pytester.path, "introspect.py", INTROSPECT)
    placeholders = [script, "--prompt=${PROMPT}", "--model=${MODEL}", "--system=${SYSTEM_PROMPT}"]
    monkeypatch.setenv("VIBE_VAR_GREETING", "templated")
    suite(
        pytester.path,
        {
            "stdin": cli(script),
            "argument": cli(script, args=[script, "--flag"], prompt_via="argument"),
            "placeholder": {"cli": PYTHON, "args": placeholders, "prompt_via": "argument"},
            "model": {"cli": PYTHON, "args": [script, "${MODEL}"], "model": "config/model"},
            "env": cli(script, env={"VIBE_TEST_AGENT_ENV": "from-config {{var('greeting')}}"}),
        },
        evals=[{"name": "ask", "prompt": "What is the answer?", "checks": [{"match": "*"}]}],
        system_prompt="Be brief.",
    )
    result, data = results_of(pytester)
    result.assert_outcomes(passed=5)

    def seen(config_id: str) -> Any:
        return json.loads(record(data, config_id)["response"])

    assert seen("stdin") == {"argv": [], "stdin": "What is the answer?", "env": None}
    # prompt_via: argument appends the prompt as the last argument; stdin is empty.
    assert seen("argument") == {"argv": ["--flag", "What is the answer?"], "stdin": "", "env": None}
    # ${PROMPT} places it (and nothing is appended); ${MODEL} is the suite's model by default.
    assert seen("placeholder")["argv"] == [
        "--prompt=What is the answer?",
        "--model=suite/model",
        "--system=Be brief.",
    ]
    assert seen("placeholder")["stdin"] == ""
    # A configuration's own `model` wins over the suite's.
    assert seen("model")["argv"] == ["config/model"]
    assert seen("model")["stdin"] == "What is the answer?"
    assert seen("env")["env"] == "from-config templated"
    # The recorded command line does not repeat the prompt.
    step = record(data, "argument")["steps"][0]
    assert step["argv"] == [PYTHON, script, "--flag", "<prompt>"]
    assert step["exit_code"] == 0 and step["timed_out"] is False


@XDIST_MODES
def test_unavailable_agents_skip_with_the_reason(pytester: pytest.Pytester, xdist: list[str]) -> None:
    script = agent(pytester.path, "introspect.py", INTROSPECT)
    suite(
        pytester.path,
        {
            "needs": cli(script, requires_env=["VIBE_TEST_SURELY_UNSET_TOKEN"]),
            "missing": {"cli": "vibe-no-such-agent-q7x"},
        },
    )
    result, data = results_of(pytester, xdist=xdist)
    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # nothing ran: not green
    result.stdout.fnmatch_lines(["NOTHING RAN: all 2 selected eval(s) were skipped*"])
    result.stdout.fnmatch_lines_random(
        [
            "SKIPPED *configuration 'needs' needs the environment variable(s) VIBE_TEST_SURELY_UNSET_TOKEN",
            "SKIPPED *configuration 'missing': executable 'vibe-no-such-agent-q7x' not found on PATH",
        ]
    )
    assert record(data, "needs")["outcome"] == "skipped"
    assert "VIBE_TEST_SURELY_UNSET_TOKEN" in record(data, "needs")["message"]
    assert "not found on PATH" in record(data, "missing")["message"]


def test_requires_env_set_runs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIBE_TEST_AGENT_ENV", "present")
    script = agent(pytester.path, "introspect.py", INTROSPECT)
    suite(pytester.path, {"needs": cli(script, requires_env=["VIBE_TEST_AGENT_ENV"])})
    result, data = results_of(pytester)
    result.assert_outcomes(passed=1)
    assert json.loads(record(data, "needs")["response"])["env"] == "present"


@XDIST_MODES
def test_non_zero_exit_is_an_error_with_stderr_tail(pytester: pytest.Pytester, xdist: list[str]) -> None:
    script = agent(
        pytester.path,
        "crash.py",
        """
        import sys
        for i in range(50):
            print(f"noise line {i}", file=sys.stderr)
        print("the model endpoint refused the key", file=sys.stderr)
        sys.exit(3)
        """,
    )
    suite(pytester.path, {"crashy": cli(script)})
    result, data = results_of(pytester, xdist=xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*{PYTHON} exited with code 3",
            "*last 20 lines of stderr (*",
            "*the model endpoint refused the key*",
        ]
    )
    failure = record(data, "crashy")
    assert failure["outcome"] == "error"
    assert "exited with code 3" in failure["message"]
    assert failure["message"].endswith("the model endpoint refused the key")
    assert "noise line 49" in failure["message"]
    assert "noise line 0\n" not in failure["message"]  # only the tail
    assert failure["steps"][0]["exit_code"] == 3
    assert run_of(data, "crashy")["metrics"]["errors"] == 1


JSON_AGENT = """
import json, sys
sys.stdin.read()
print(json.dumps({
    "data": {"answer": "forty-two"},
    "usage": {"cost": "0.25", "in": 120, "out": 7.0},
}))
"""

JSONL_AGENT = """
import json
events = [
    {"type": "progress", "text": "thinking"},
    {"type": "result", "text": "first draft", "cost": 0.1},
    "not json at all {",
    {"type": "result", "text": "final answer", "cost": 0.5, "usage": {"in": 11, "out": 3}},
    {"type": "progress", "text": "done"},
    {"type": "result", "note": "no text here"},
]
for event in events:
    print(event if isinstance(event, str) else json.dumps(event))
"""


def test_structured_output(pytester: pytest.Pytester) -> None:
    json_script = agent(pytester.path, "json_agent.py", JSON_AGENT)
    jsonl_script = agent(pytester.path, "jsonl_agent.py", JSONL_AGENT)
    bad_script = agent(pytester.path, "bad_agent.py", "print('{\"result\": oops')")
    suite(
        pytester.path,
        {
            "json": cli(
                json_script,
                output={
                    "format": "json",
                    "response": "data.answer",
                    "cost": "usage.cost",
                    "input_tokens": "usage.in",
                    "output_tokens": "usage.out",
                },
            ),
            "jsonl": cli(
                jsonl_script,
                output={
                    "format": "jsonl",
                    "response": "text",
                    "where": {"type": "result"},
                    "cost": "cost",
                    "input_tokens": "usage.in",
                    "output_tokens": "usage.out",
                },
            ),
            "jsonl-nomatch": cli(
                jsonl_script, output={"format": "jsonl", "response": "text", "where": {"type": "final"}}
            ),
            "malformed": cli(bad_script, output={"format": "json", "response": "result"}),
            "missing-path": cli(json_script, output={"format": "json", "response": "data.text"}),
        },
        evals=[{"name": "ask", "prompt": "Answer", "checks": [{"not_match": "*draft*"}]}],
        formula="success_pct / total_cost",
    )
    result, data = results_of(pytester)
    result.assert_outcomes(passed=2, failed=3)

    answer = record(data, "json")
    assert answer["outcome"] == "passed"
    assert answer["response"] == "forty-two"
    assert (answer["cost"], answer["input_tokens"], answer["output_tokens"]) == (0.25, 120, 7)
    json_run = run_of(data, "json")
    assert json_run["metrics"]["total_cost"] == 0.25
    assert json_run["variables"]["ask_cost"] == 0.25
    assert json_run["score"] == pytest.approx(100 / 0.25)

    last = record(data, "jsonl")
    assert last["outcome"] == "passed"
    assert last["response"] == "final answer"  # the last event matching `where` that has `text`
    assert (last["cost"], last["input_tokens"], last["output_tokens"]) == (0.5, 11, 3)

    nomatch = record(data, "jsonl-nomatch")
    assert nomatch["outcome"] == "error"
    assert "no JSON line with {'type': 'final'} has `text` (5 JSON lines read)" in nomatch["message"]

    malformed = record(data, "malformed")
    assert malformed["outcome"] == "error"
    assert malformed["message"].startswith("output is not valid JSON (")
    assert "`format: json`" in malformed["message"]
    assert malformed["cost"] is None
    assert run_of(data, "malformed")["metrics"]["total_cost"] is None

    missing = record(data, "missing-path")
    assert missing["message"] == "the JSON output has no `data.text` (output.response)"
    result.stdout.fnmatch_lines_random(
        ["*output is not valid JSON*", "*the JSON output has no `data.text` (output.response)*"]
    )


@XDIST_MODES
def test_timeout_kills_the_agent_and_its_children(pytester: pytest.Pytester, xdist: list[str]) -> None:
    script = agent(pytester.path, "hang.py", HANGING_TREE_SCRIPT)
    pid_file = pytester.path / "pids.txt"
    suite(pytester.path, {"hangs": {"cli": PYTHON, "args": [script, str(pid_file)], "timeout": 1000}})
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path), xdist=xdist, subprocess=True)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*timed out after 1 s*"])
    assert pid_file.exists(), "the agent did not record its pids"
    pids = [int(p) for p in pid_file.read_text().split()]
    assert len(pids) == 2
    survivors = [pid for pid in pids if not wait_gone(pid)]
    for pid in survivors:  # do not leave them behind when the test fails
        if "sleep(1000)" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace") or (
            "hang.py" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        ):
            os.kill(pid, signal.SIGKILL)
    assert not survivors, f"still alive after the timeout: {survivors} (agent, child: {pids})"
    failure = record(load_json(path), "hangs")
    assert failure["outcome"] == "error"
    assert failure["message"] == "timed out after 1 s"
    step = failure["steps"][0]
    assert step["timed_out"] is True and step["exit_code"] is None
    assert 1.0 <= step["duration"] < 30


# Records the controller's and each worker's peak RSS at session start and end.
RSS_PLUGIN = """
import json, os, resource

def _record(config, when):
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    path = os.path.join(os.environ["VIBE_TEST_RSS_DIR"], f"{worker}-{when}")
    with open(path, "w") as handle:
        handle.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))

def pytest_sessionstart(session):
    _record(session.config, "start")

def pytest_sessionfinish(session):
    _record(session.config, "end")
"""

PRINTER = """
import sys
chunk = b"x" * (1 << 20)
size = int(sys.argv[1])
sys.stdin.read()
while size > 0:
    sys.stdout.buffer.write(chunk[:size])
    size -= len(chunk)
"""


def _peak_rss_kib(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, size: int, xdist: list[str], label: str
) -> tuple[int, pytest.RunResult, dict[str, Any]]:
    rss_dir = pytester.path / f"rss-{label}"
    rss_dir.mkdir()
    monkeypatch.setenv("VIBE_TEST_RSS_DIR", str(rss_dir))
    script = agent(pytester.path, "printer.py", PRINTER)
    suite(pytester.path, {"printer": {"cli": PYTHON, "args": [script, str(size)]}})
    path = pytester.path / f"results-{label}.json"
    result = run(pytester, "-p", "rss_plugin", "--vibe-results", str(path), xdist=xdist, subprocess=True)
    values = {p.name: int(p.read_text()) for p in rss_dir.iterdir()}
    assert "main-end" in values and len(values) >= 2, values
    # Free the disk space of the big output at once.
    for stdout in pytester.path.rglob("agent.stdout"):
        stdout.unlink()
    return max(values.values()), result, load_json(path)


@XDIST_MODES
def test_huge_output_does_not_grow_memory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    write(pytester.path / "rss_plugin.py", RSS_PLUGIN)
    small, small_result, small_data = _peak_rss_kib(pytester, monkeypatch, 1024, xdist, "small")
    big, big_result, big_data = _peak_rss_kib(pytester, monkeypatch, 100 * 2**20, xdist, "big")
    small_result.assert_outcomes(passed=1)
    big_result.assert_outcomes(failed=1)
    assert len(record(small_data, "printer")["response"]) == 1024
    failure = record(big_data, "printer")
    assert failure["outcome"] == "error"
    assert failure["response"] is None
    assert (
        f"printed {100 * 2**20} bytes, more than max_output_bytes ({8 * 2**20}); "
        "raise it in the configuration if that is expected" in failure["message"]
    )
    big_result.stdout.fnmatch_lines(["*more than max_output_bytes (8388608)*"])
    # ru_maxrss is in KiB on Linux.
    assert big - small < 20 * 1024, f"peak RSS grew by {(big - small) / 1024:.1f} MiB"


PYTHON_APP = """
def with_dict(prompt, context):
    return {"response": f"{prompt} / {context.configuration_id} / {context.model}",
            "cost": 0.125, "input_tokens": 10, "output_tokens": 4}

def one_argument(prompt):
    return prompt.upper()

def bad_type(prompt):
    return 42

def bad_keys(prompt):
    return {"text": prompt}

def raises(prompt):
    raise ValueError("the model went away: kaboom-123")
"""


@XDIST_MODES
def test_python_configurations(pytester: pytest.Pytester, xdist: list[str]) -> None:
    # The module lives next to the suite in a folder that is not on sys.path otherwise.
    folder = pytester.path / "evals"
    write(folder / "vibe_agents_app.py", PYTHON_APP)
    suite(
        folder,
        {
            "dict": {"python": "vibe_agents_app:with_dict"},
            "one-arg": {"python": "vibe_agents_app:one_argument"},
            "bad-type": {"python": "vibe_agents_app:bad_type"},
            "bad-keys": {"python": "vibe_agents_app:bad_keys"},
            "raises": {"python": "vibe_agents_app:raises"},
            "no-module": {"python": "vibe_agents_app.missing:answer"},  # found at run time only
            "no-function": {"python": "vibe_agents_app:nope"},
        },
    )
    path = pytester.path / "results.json"
    result = run(pytester, "-rA", "--vibe-results", str(path), xdist=xdist)
    result.assert_outcomes(passed=2, failed=5)
    data = load_json(path)

    def rec(config_id: str) -> Any:
        return evals_by_nodeid(data)[f"evals/agents.eval.yaml::ask[{config_id}]"]

    answer = rec("dict")
    assert answer["response"] == "Say hi / dict / suite/model"
    assert (answer["cost"], answer["input_tokens"], answer["output_tokens"]) == (0.125, 10, 4)
    assert run_of(data, "dict")["metrics"]["total_cost"] == 0.125
    assert rec("one-arg")["response"] == "SAY HI"
    assert rec("one-arg")["cost"] is None

    messages = {c: rec(c)["message"] for c in ("bad-type", "bad-keys", "raises", "no-module", "no-function")}
    assert all(rec(c)["outcome"] == "error" for c in messages)
    assert messages["bad-type"] == (
        "vibe_agents_app:bad_type returned int; return a str or a dict with keys "
        "response, cost, input_tokens, output_tokens, latency, tool_calls"
    )
    assert messages["bad-keys"].startswith("vibe_agents_app:bad_keys returned a dict with keys ['text']")
    assert messages["raises"].startswith(
        "vibe_agents_app:raises raised ValueError: the model went away: kaboom-123"
    )
    assert messages["no-module"].startswith(
        "cannot import 'vibe_agents_app.missing' for configuration 'no-module'"
    )
    assert "ModuleNotFoundError" in messages["no-module"]
    assert messages["no-function"] == "'vibe_agents_app' has no callable 'nope' (configuration 'no-function')"
    result.stdout.fnmatch_lines_random(
        [
            "*returned int; return a str or a dict*",
            "*raised ValueError: the model went away: kaboom-123*",
            "*cannot import 'vibe_agents_app.missing'*",
        ]
    )


@XDIST_MODES
def test_a_python_module_that_is_nowhere_fails_collection(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A top-level module neither beside the suite nor importable is looked up (not imported) at
    collection: the suite fails there, naming the closest local module, instead of every item
    erroring."""
    folder = pytester.path / "evals"
    write(folder / "vibe_agents_app.py", PYTHON_APP)
    suite(folder, {"typo": {"python": "vibe_agent_app:with_dict"}, "json": {"python": "json:dumps"}})
    result = run(pytester, xdist=xdist)
    assert result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED)  # xdist: 1
    result.stdout.fnmatch_lines(
        [
            "evals/agents.eval.yaml:12: configuration 'typo': python module 'vibe_agent_app' of"
            " 'vibe_agent_app:with_dict' is neither in the suite's folder (*evals) nor importable"
            " (did you mean 'vibe_agents_app'?): check the name, or install the package that provides it"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_python_module_that_is_nowhere_is_shown_where_its_configuration_is(
    pytester: pytest.Pytester,
) -> None:
    """A configuration of a cli-config.json: the message names that file and the line, not the suite."""
    folder = pytester.path / "evals"
    write(
        folder / "cli-config.json",
        '{\n  "configurations": {\n    "ok": {"name": "ok", "python": "json:dumps"},\n'
        '    "typo": {"name": "typo", "python": "vibe_nowhere_app:answer"}\n  }\n}\n',
    )
    write(
        folder / "a.eval.yaml",
        "metadata: {name: a, model: m}\nevals: [{name: q, prompt: hi, checks: [{match: '*'}]}]\n",
    )
    result = run(pytester)
    result.stdout.fnmatch_lines(
        ["evals/cli-config.json:4: configuration 'typo': python module 'vibe_nowhere_app' of *importable*"]
    )
    assert "Traceback" not in result.stdout.str()


@XDIST_MODES
def test_same_module_name_in_two_suite_folders_is_an_error(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """Python imports a module name once: the second suite must not silently get the first's, and
    the clash is found at collection, so the same file fails with and without xdist."""
    for folder in ("first", "second"):
        write(
            pytester.path / folder / "vibe_same_name_app.py", f"def answer(prompt):\n    return {folder!r}\n"
        )
        suite(
            pytester.path / folder,
            {"app": {"python": "vibe_same_name_app:answer"}},
            evals=[{"name": "ask", "prompt": "Who?", "checks": [{"equals": folder}]}],
            name=folder,
        )
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path), xdist=xdist)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "second/second.eval.yaml:12: configuration 'app': python module 'vibe_same_name_app' of"
            f" 'vibe_same_name_app:answer' is {pytester.path / 'second' / 'vibe_same_name_app.py'}, but*",
        ]
    )
    data = load_json(path)
    assert data["load_errors"] == ["second/second.eval.yaml"]
    assert evals_by_nodeid(data)["first/first.eval.yaml::ask[app]"]["outcome"] == "passed"


@XDIST_MODES
def test_a_configuration_marked_xfail_is_expected_to_fail(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    silent = agent(pytester.path, "silent.py", "import sys\nsys.stdin.read()\n")
    talker = agent(pytester.path, "talker.py", "import sys\nsys.stdin.read()\nprint('hi')\n")
    evals = [{"name": "ask", "prompt": "Say hi", "checks": [{"match": "*hi*"}]}]
    configurations = {
        "silent": cli(silent, xfail="answers nothing"),
        "talker": cli(talker, xfail="wrongly marked"),
    }
    suite(pytester.path, configurations, evals)
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path), "-rxX", xdist=xdist)
    result.assert_outcomes(xfailed=1, failed=1)  # strict: a pass of an xfail configuration fails
    result.stdout.fnmatch_lines(["*XFAIL*ask[[]silent]*answers nothing*"])
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]] wrongly marked*"])
    records = evals_by_nodeid(load_json(path))
    assert records["agents.eval.yaml::ask[silent]"]["xfail"] is True


def test_an_argument_list_too_long_errors_suggesting_stdin(pytester: pytest.Pytester) -> None:
    script = agent(pytester.path, "echo.py", "import sys\nprint(sys.argv[-1][:5])\n")
    # Linux refuses any single argument over 128 KiB (MAX_ARG_STRLEN).
    evals = [{"name": "ask", "prompt": "x" * 2**20, "checks": [{"match": "*"}]}]
    suite(pytester.path, {"argument": cli(script, prompt_via="argument"), "stdin": cli(script)}, evals)
    result, data = results_of(pytester)
    result.assert_outcomes(passed=1, failed=1)
    message = record(data, "argument")["message"]
    assert message.startswith(f"cannot start {PYTHON!r}: argument list too long for the system (E2BIG)")
    assert "Linux takes at most 131071 bytes in one argument (MAX_ARG_STRLEN)" in message
    assert message.endswith(
        f"; the prompt ({2**20} bytes) is on the command line: pass it on stdin instead (`prompt_via: "
        f"stdin` and no `${{PROMPT}}` in `args`) if {PYTHON} reads it there"
    )
    assert "Traceback" not in result.stdout.str()


# Reports the bytes it was given, as hex: its arguments and its stdin (whatever its own locale).
BYTES_SEEN = """
import json, os, sys
stdin = sys.stdin.buffer.read()
print(json.dumps({"argv": [os.fsencode(a).hex() for a in sys.argv[1:]], "stdin": stdin.hex()}))
"""


def prompt_routes(script: str) -> dict[str, Any]:
    """The three ways to the agent: on stdin, appended as an argument, placed by ``${PROMPT}``."""
    return {
        "stdin": cli(script),
        "argument": cli(script, prompt_via="argument"),
        "placed": cli(script, args=[script, "--prompt=${PROMPT}"]),
    }


@XDIST_MODES
def test_a_prompt_with_a_nul_reaches_stdin_and_is_refused_on_the_command_line(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    script = agent(pytester.path, "bytes.py", BYTES_SEEN)
    evals = [{"name": "ask", "prompt": "before\x00after", "checks": [{"match": "*"}]}]
    suite(pytester.path, prompt_routes(script), evals)
    result, data = results_of(pytester, xdist=xdist)
    result.assert_outcomes(passed=1, failed=2)
    assert json.loads(record(data, "stdin")["response"])["stdin"] == b"before\x00after".hex()
    for config_id in ("argument", "placed"):
        assert record(data, config_id)["message"] == (
            "the prompt holds a NUL character (\\x00), which no command-line argument can carry: pass "
            "it on stdin instead (`prompt_via: stdin`, no `${PROMPT}` in `args`)"
        )
    assert "Traceback" not in result.stdout.str()


@XDIST_MODES
def test_prompts_and_values_reach_agents_as_utf8_in_the_c_locale(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    """Without Python's UTF-8 mode the C locale's file system encoding is ASCII; an agent still gets
    its prompt and arguments as UTF-8, and a value of the environment that is not UTF-8 as its bytes."""
    c_locale(monkeypatch)
    monkeypatch.setitem(os.environb, b"VIBE_VAR_WORD", b"caf\xe9")  # Latin-1, as a terminal may send
    script = agent(pytester.path, "bytes.py", BYTES_SEEN)
    prompt = "Réponds 😀 שלום {{var('word')}}"
    suite(
        pytester.path, prompt_routes(script), [{"name": "ask", "prompt": prompt, "checks": [{"match": "*"}]}]
    )
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path), xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=3)
    sent = ("Réponds 😀 שלום ".encode() + b"caf\xe9").hex()
    seen = {
        config_id: json.loads(record(load_json(path), config_id)["response"])
        for config_id in prompt_routes("")
    }
    assert seen == {
        "stdin": {"argv": [], "stdin": sent},
        "argument": {"argv": [sent], "stdin": ""},
        "placed": {"argv": [b"--prompt=".hex() + sent], "stdin": sent},
    }


def test_timeouts_beyond_a_week_count_as_a_week(pytester: pytest.Pytester) -> None:
    for timeout in (3 * 10**9, 10**26):
        assert Configuration(cli="agent", timeout=timeout).timeout == MAX_TIMEOUT_MS
        assert CommandDefinition(command="make", timeout=timeout).timeout_s == 7 * 24 * 3600
    assert Configuration(cli="agent", timeout=1234).timeout == 1234
    with pytest.raises(ValidationError, match="greater than 0"):
        Configuration(cli="agent", timeout=0)
    # Through a real run: the pytest-timeout backstop and the wait for the agent both take it.
    script = agent(pytester.path, "echo.py", "import sys\nsys.stdin.read()\nprint('done')\n")
    suite(pytester.path, {"forever": cli(script, timeout=10**26)})
    result, _ = results_of(pytester)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("name", ["build\n", "build\nrm", "\nbuild", "-build", ""])
def test_step_names_must_match_entirely(name: str) -> None:
    with pytest.raises(ValidationError, match="step name"):
        TypeAdapter(StepName).validate_python(name)


EXITING_APP = """
import json
import sys


def exits(prompt):
    sys.exit(3)


def no_arguments():
    return "never"


def deep(prompt):
    return helper(prompt)


def helper(prompt):
    raise LookupError("not in the catalogue: " + prompt)


def parses(prompt):
    return json.loads(prompt)
"""


@XDIST_MODES
def test_a_python_answer_that_exits_or_cannot_be_called_errors_with_the_users_frames_only(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(pytester.path / "vibe_exiting_app.py", EXITING_APP)
    write(
        pytester.path / "exits.eval.yaml",
        """
        metadata: {name: exits, model: m}
        configurations:
          exits: {python: "vibe_exiting_app:exits"}
          no-arguments: {python: "vibe_exiting_app:no_arguments"}
          deep: {python: "vibe_exiting_app:deep"}
          parses: {python: "vibe_exiting_app:parses"}
        evals: [{name: q, prompt: tea, checks: [{contains: tea}]}]
        """,
    )
    result = run(pytester, "--vibe-results", "r.json", xdist=xdist)
    result.assert_outcomes(failed=4)
    output = result.stdout.str() + result.stderr.str()
    assert "pytest_vibeeval" not in output.replace("plugins: vibeeval", ""), output
    records = {
        r["nodeid"].split("[")[1][:-1]: r
        for r in evals_by_nodeid(load_json(pytester.path / "r.json")).values()
    }
    assert all(record["outcome"] == "error" for record in records.values())
    assert records["exits"]["message"].startswith("vibe_exiting_app:exits raised SystemExit: 3\nTraceback")
    assert records["no-arguments"]["message"] == (
        "vibe_exiting_app:no_arguments raised TypeError: no_arguments() takes 0 positional arguments but 1 "
        "was given"
    )
    deep = records["deep"]["message"]
    assert deep.startswith("vibe_exiting_app:deep raised LookupError: not in the catalogue: tea\nTraceback")
    assert "in deep\n" in deep and "in helper\n" in deep
    # The frames shown are the user's: the standard library's (json's, here) would hide them.
    parses = records["parses"]["message"]
    assert "in parses\n" in parses and "return json.loads(prompt)" in parses, parses
    assert 'decoder.py"' not in parses and 'json/__init__.py"' not in parses, parses


def test_a_timeout_is_a_number_never_text() -> None:
    """A timeout in quotes is refused in every file; a whole number written with a decimal point
    (JSON writers do: 60000.0) is still a timeout."""
    assert Configuration(cli="agent", timeout=60000.0).timeout == 60000  # type: ignore[arg-type]
    assert CommandDefinition(command="make", timeout=60000.0).timeout_s == 60  # type: ignore[arg-type]
    for text in ("30000", "60000.0"):
        with pytest.raises(ValidationError, match="valid integer"):
            Configuration(cli="agent", timeout=text)  # type: ignore[arg-type]
