"""Contract tests: the real agent CLIs (pinned, installed by ``tests/real_clis/install.py``) driven
through the plugin's presets in real pytest runs, against the scripted API server of
``tests/real_clis/api_server.py`` on 127.0.0.1, each with a private HOME. They skip, saying why,
where node or the install is missing (llxprt's package may be missing from the registry: name a
build of it in ``VIBE_CLI_LLXPRT``, see docs/development.md).

One pytest run per CLI holds a configuration per scenario (plain answer, a tool that writes a
file, a tool that fails, 401, 500); a second, with ``-n 2``, runs a scenario per CLI again and a
coding eval whose tool call writes the solution the grade step checks. For the presets that take
a suite's ``mcp_server``, the model calls a tool of the SDK's own MCP server (tests/mcp_server.py,
with a bearer token) and answers with its result, serially per CLI and with ``-n 2`` for all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import PYTHON, XDIST_MODES, evals_by_nodeid, load_json, run, write, write_cli_config
from mcp_process import TOKEN, McpProcess
from real_clis.api_server import (
    AFTER_TOOL,
    ERROR_TEXT,
    PLAIN_ANSWER,
    SOLUTION_FILE,
    USAGE_IN,
    USAGE_OUT,
    AgentApiServer,
)
from real_clis.configs import cli_configuration
from real_clis.install import CLIS, installed, missing_reason

PRESETS = list(CLIS)
# Where each CLI's scripted 401 and 500 show in the item's error message.
ERRORS = {
    "claude-code": ("the model API answered with status 401", "the model API answered with status 500"),
    "codex": ("unexpected status 401 Unauthorized", "codex reported turn.failed"),
    "gemini": ('"code":401', '"code":500'),
    "llxprt": ("an error (status 401)", "an error (status 500)"),
    "aider": ("aider reported an API error: litellm.AuthenticationError", "litellm.InternalServerError"),
}
REPORTS_COST = {"claude-code", "aider"}
REPORTS_LATENCY = {"claude-code", "gemini", "llxprt"}  # duration_ms in their final event
FAILING_TOOL = {
    "claude-code": "Read",
    "codex": "command_execution",
    "gemini": "read_file",
    "llxprt": "read_file",
    "aider": "edit",
}
# llxprt under auto_edit offers `replace` (which creates a file from an empty old_string), not write_file
WRITING_TOOL = {
    "claude-code": "Write",
    "codex": "command_execution",
    "gemini": "write_file",
    "llxprt": "replace",
    "aider": "edit",
}


@pytest.fixture(scope="module")
def api() -> Iterator[AgentApiServer]:
    with AgentApiServer() as server:
        yield server


def require(preset: str) -> Path:
    reason = missing_reason(CLIS[preset])
    if reason:
        pytest.skip(reason)
    path = installed(CLIS[preset])
    assert path is not None
    return path


def configuration(preset: str, scenario: str, api: AgentApiServer, homes: Path) -> dict[str, Any]:
    """A configuration of ``preset`` running the real CLI against ``scenario``, in its own HOME."""
    base = api.url.rsplit("/v1", 1)[0]
    return cli_configuration(preset, f"{base}/{scenario}", homes / f"{preset}-{scenario}")


def prompt_suite(directory: Path, preset: str, scenarios: tuple[str, ...], api: AgentApiServer) -> Path:
    configurations = {s: configuration(preset, s, api, directory / "homes") for s in scenarios}
    data = {
        "metadata": {"name": "contract", "model": "unused"},
        "evals": [{"name": "ask", "prompt": "What is 2 + 2?", "checks": [{"match": "*"}]}],
        "configurations": configurations,
    }
    return write(directory / "contract.eval.yaml", yaml.safe_dump(data, sort_keys=False))


def records(
    pytester: pytest.Pytester, xdist: list[str], *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "results.json"
    result = run(pytester, "-rA", "--vibe-results", str(path), *args, xdist=xdist, subprocess=True)
    assert path.is_file(), result.stdout.str() + result.stderr.str()
    return result, {
        r["nodeid"].rsplit("[", 1)[1].rstrip("]"): r for r in evals_by_nodeid(load_json(path)).values()
    }


def tools(record: dict[str, Any]) -> list[tuple[str, bool | None]]:
    return [(call["tool"], call["success"]) for call in record["tool_calls"]]


def check_answer(preset: str, record: dict[str, Any]) -> None:
    assert record["outcome"] == "passed", record["message"]
    assert record["input_tokens"] and record["output_tokens"]
    assert record["input_tokens"] % USAGE_IN == 0 and record["output_tokens"] % USAGE_OUT == 0
    if preset in REPORTS_COST:
        assert record["cost"] and record["cost_source"] == "reported"
    else:
        assert record["cost"] is None
    agent_step = record["steps"][0]
    assert agent_step["phase"] == "agent" and agent_step["exit_code"] == 0
    if preset in REPORTS_LATENCY:  # the agent's own figure, less than the process's wall time
        assert 0 < record["latency"] < agent_step["duration"]
    else:
        assert record["latency"] >= agent_step["duration"]


@pytest.mark.parametrize("preset", PRESETS)
def test_prompt_scenarios(pytester: pytest.Pytester, api: AgentApiServer, preset: str) -> None:
    require(preset)
    prompt_suite(pytester.path, preset, ("plain", "write", "fail", "unauthorized", "broken"), api)
    result, by_config = records(pytester, [])
    assert "INTERNALERROR" not in result.stdout.str()

    plain = by_config["plain"]
    check_answer(preset, plain)
    assert plain["response"] == PLAIN_ANSWER
    assert plain["tool_calls"] == []

    wrote = by_config["write"]
    check_answer(preset, wrote)
    assert tools(wrote) == [(WRITING_TOOL[preset], True)]

    failed = by_config["fail"]
    check_answer(preset, failed)
    assert tools(failed) == [(FAILING_TOOL[preset], False)]
    assert failed["tool_calls"][0]["error"]
    if preset != "aider":  # aider's answer holds its own notes on the failed edit
        assert failed["response"].startswith(AFTER_TOOL)

    for scenario, expected in zip(("unauthorized", "broken"), ERRORS[preset], strict=True):
        record = by_config[scenario]
        assert record["outcome"] == "error", record
        status = 401 if scenario == "unauthorized" else 500
        assert expected in record["message"], record["message"]
        if preset != "codex" or status == 401:  # codex words a 500 as "high demand"
            assert ERROR_TEXT[status] in record["message"].replace("\n", " "), record["message"]
        assert "Traceback" not in record["message"] or preset == "gemini"  # gemini's own stderr


def coding_config_dir(root: Path, preset: str, api: AgentApiServer) -> Path:
    """An eval-config.json folder: eval ``add``, solved by the scripted ``coding`` scenario."""
    evals = root / "evals"
    write(evals / "workspace" / "README.md", f"Write {SOLUTION_FILE}.\n")
    write(
        evals / "grading" / "check.py", "from solution import add\nassert add(2, 3) == 5\nprint('graded')\n"
    )
    write(root / "prompts" / "problems" / "add.md", f"Write add(a, b) in {SOLUTION_FILE}.\n")
    config = evals / "config"
    evaluation = {
        "workspace": "${EVAL_ROOT}/workspace",
        "grading": "${EVAL_ROOT}/grading",
        "prompt": "add.md",
        "buildSteps": ["compile"],
        "gradeSteps": ["check"],
    }
    write(config / "eval-config.json", json.dumps({"evaluations": {"add": evaluation}}))
    agents = {preset: configuration(preset, "coding", api, root / "homes")}
    write_cli_config(config / "cli-config.json", {"configurations": agents})
    registry = {
        "compile": {"command": PYTHON, "args": ["-m", "py_compile", SOLUTION_FILE], "timeout": 60000},
        "check": {"command": PYTHON, "args": ["check.py"], "timeout": 60000},
    }
    write(config / "command-registry.json", json.dumps(registry))
    return config


@pytest.mark.parametrize("preset", PRESETS)
def test_xdist_run_and_coding_eval(pytester: pytest.Pytester, api: AgentApiServer, preset: str) -> None:
    """With ``-n 2``: the CLI's 500 (and a plain answer) as prompt evals, and a coding eval whose
    tool call writes the solution that the grade step checks."""
    require(preset)
    prompt_suite(pytester.path, preset, ("plain", "broken"), api)
    coding_config_dir(pytester.path, preset, api)
    # Inside bwrap, codex, gemini and llxprt cannot write their HOME (codex: "failed to initialize
    # in-process app-server client: Read-only file system"; gemini: EROFS on ~/.gemini, exit 1;
    # llxprt: EROFS on ~/.local, exit 1): they run unconfined here (see "codex, gemini, llxprt and
    # sandboxes" in docs/configurations.md).
    sandbox = ("--vibe-sandbox", "none") if preset in ("codex", "gemini", "llxprt") else ()
    result, by_config = records(pytester, ["-n", "2"], *sandbox)
    assert "INTERNALERROR" not in result.stdout.str()
    nodes = evals_by_nodeid(load_json(pytester.path / "results.json"))
    coding = next(record for nodeid, record in nodes.items() if "eval-config.json" in nodeid)
    assert coding["outcome"] == "passed", coding["message"]
    assert [step["phase"] for step in coding["steps"]] == ["agent", "build", "grade"]
    assert tools(coding) == [(WRITING_TOOL[preset], True)]
    assert coding["input_tokens"] and coding["output_tokens"]
    check_answer(preset, by_config["plain"])
    broken = by_config["broken"]
    assert broken["outcome"] == "error" and ERRORS[preset][1] in broken["message"], broken["message"]


LONG_PROMPT = 200_000  # characters: over the 128 KiB Linux takes in one argument (MAX_ARG_STRLEN)


@pytest.mark.parametrize("preset", PRESETS)
def test_a_prompt_too_long_for_the_command_line_reaches_the_model_whole(
    pytester: pytest.Pytester, api: AgentApiServer, preset: str
) -> None:
    """claude-code and codex read the prompt on stdin; gemini and aider take it as an argument,
    and one too long for the command line goes on stdin to gemini and in a --message-file to
    aider: the model gets all of it. llxprt has no such way (its stdin is not known to be read
    so): the eval errors, naming the limit."""
    require(preset)
    end = f"END-OF-LONG-PROMPT-{preset}"
    config = configuration(preset, "plain", api, pytester.path / "homes")
    data = {
        "metadata": {"name": "contract", "model": "unused"},
        "evals": [{"name": "ask", "prompt": "word " * (LONG_PROMPT // 5) + end, "checks": [{"match": "*"}]}],
        "configurations": {"long": config},
    }
    write(pytester.path / "contract.eval.yaml", yaml.safe_dump(data, sort_keys=False))
    _, by_config = records(pytester, [])
    record = by_config["long"]
    if preset == "llxprt":
        assert record["outcome"] == "error" and "(MAX_ARG_STRLEN)" in record["message"], record["message"]
        return
    check_answer(preset, record)
    with api.lock:
        sent = [r for r in api.requests if end in json.dumps(r["body"])]
    assert sent, f"no request to the model held the end of the prompt ({preset})"


MCP_PRESETS = ("claude-code", "codex", "gemini")  # the presets that are given the suite's mcp_server
MCP_RESULT = "ENG-1: Get familiar with the tracker"


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[McpProcess]:
    server = McpProcess("streamable-http")
    yield server
    server.stop()


def mcp_suite(directory: Path, presets: tuple[str, ...], api: AgentApiServer, url: str) -> Path:
    """A vibecheck suite with an ``mcp_server`` (the token a secret), a configuration per preset
    in the ``mcp`` scenario: the model calls ``list_issues`` and answers with its result."""
    configurations = {}
    for preset in presets:
        config = configuration(preset, "mcp", api, directory / "homes")
        config.pop("args", None)  # codex's own args (workspace-write): its MCP calls are approved
        configurations[preset] = config
    data = {
        "metadata": {
            "name": "tracker",
            "model": "unused",
            "mcp_server": {"url": url, "name": "tracker", "authorization_token": "{{secret('tracker.key')}}"},
        },
        "evals": [
            {
                "name": "listed",
                "prompt": "List the issues of team ENG.",
                "checks": [{"match": f"*{MCP_RESULT}*"}],
            }
        ],
        "configurations": configurations,
    }
    return write(directory / "tracker.eval.yaml", yaml.safe_dump(data, sort_keys=False))


def files_holding(root: Path, text: str) -> list[Path]:
    needle = text.encode()
    return [path for path in root.rglob("*") if path.is_file() and needle in path.read_bytes()]


def check_mcp_run(pytester: pytest.Pytester, result: pytest.RunResult, by_config: dict[str, Any]) -> None:
    """Every configuration's model called the MCP tool and answered with its result; the token
    is in no output and no file of the run (results, logs, item folders, settings written)."""
    for preset, record in by_config.items():
        assert record["outcome"] == "passed", (preset, record["message"])
        assert MCP_RESULT in record["response"], (preset, record["response"])
        assert tools(record) == [("mcp__tracker__list_issues", True)], preset
        assert Path(record["steps"][0]["log"]).is_relative_to(pytester.path)  # scanned below
    assert TOKEN not in result.stdout.str() + result.stderr.str()
    assert files_holding(pytester.path, TOKEN) == []


@pytest.mark.parametrize("preset", MCP_PRESETS)
def test_mcp_server_given_to_the_cli(
    pytester: pytest.Pytester,
    api: AgentApiServer,
    mcp_server: McpProcess,
    monkeypatch: pytest.MonkeyPatch,
    preset: str,
) -> None:
    require(preset)
    mcp_suite(pytester.path, (preset,), api, mcp_server.url)
    monkeypatch.setenv("VIBE_SECRET_TRACKER_KEY", TOKEN)
    result, by_config = records(pytester, [])
    check_mcp_run(pytester, result, by_config)
    assert set(by_config) == {preset}


def test_mcp_server_given_to_every_cli_with_xdist(
    pytester: pytest.Pytester, api: AgentApiServer, mcp_server: McpProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    presets = tuple(preset for preset in MCP_PRESETS if missing_reason(CLIS[preset]) is None)
    if not presets:
        pytest.skip("; ".join(str(missing_reason(CLIS[preset])) for preset in MCP_PRESETS))
    mcp_suite(pytester.path, presets, api, mcp_server.url)
    monkeypatch.setenv("VIBE_SECRET_TRACKER_KEY", TOKEN)
    # codex and gemini cannot write their HOME inside bwrap (see test_xdist_run_and_coding_eval).
    result, by_config = records(pytester, ["-n", "2"], "--vibe-sandbox", "none")
    check_mcp_run(pytester, result, by_config)
    assert set(by_config) == set(presets)


def test_a_refused_token_is_an_error_naming_the_server(
    pytester: pytest.Pytester, api: AgentApiServer, mcp_server: McpProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """claude-code runs on without a server it cannot connect to (its ``init`` event says so),
    codex fails the run (``required``): either way the item errors. gemini says nothing: its
    evals fail on their checks instead."""
    presets = tuple(preset for preset in ("claude-code", "codex") if missing_reason(CLIS[preset]) is None)
    if not presets:
        pytest.skip("; ".join(str(missing_reason(CLIS[preset])) for preset in ("claude-code", "codex")))
    mcp_suite(pytester.path, presets, api, mcp_server.url)
    monkeypatch.setenv("VIBE_SECRET_TRACKER_KEY", "not-the-token")
    result, by_config = records(pytester, [])
    expected = {
        "claude-code": "claude-code could not connect to the MCP server 'tracker'",
        "codex": "required MCP servers failed to initialize: tracker",
    }
    for preset, record in by_config.items():
        assert record["outcome"] == "error", record
        assert expected[preset] in record["message"], record["message"]
    assert "not-the-token" not in result.stdout.str() + result.stderr.str()


# A workspace's gemini settings with comments, as gemini reads them (strip-json-comments), excluding
# the file-writing tool gemini offers otherwise (WRITING_TOOL).
COMMENTED_SETTINGS = """// the project's gemini settings
{
  /* evals must not write files */
  "tools": {"exclude": ["write_file"]}, // gemini drops the comments before parsing
  "general": {"maxAttempts": 1}
}
"""
WORKDIR_WITH_SETTINGS = f"""
import pytest

@pytest.fixture
def vibe_workdir(tmp_path):
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text({COMMENTED_SETTINGS!r}, encoding="utf-8")
    return tmp_path
"""


@XDIST_MODES
def test_gemini_workspace_settings_with_comments_get_the_mcp_server_and_keep_their_own(
    pytester: pytest.Pytester,
    api: AgentApiServer,
    mcp_server: McpProcess,
    monkeypatch: pytest.MonkeyPatch,
    xdist: list[str],
) -> None:
    """gemini reads its settings.json with ``//`` and ``/* */`` comments: the suite's mcp_server
    is merged into such a file of the item's folder, and gemini still applies the file's own
    settings (its requests to the model offer no ``write_file``) and calls the server's tool."""
    require("gemini")
    suite = mcp_suite(pytester.path, ("gemini",), api, mcp_server.url)
    data = yaml.safe_load(suite.read_text(encoding="utf-8"))
    marker = f"run {pytester.path.name}"
    data["evals"][0]["prompt"] += f" ({marker})"
    write(suite, yaml.safe_dump(data, sort_keys=False))
    write(pytester.path / "conftest.py", WORKDIR_WITH_SETTINGS)
    monkeypatch.setenv("VIBE_SECRET_TRACKER_KEY", TOKEN)
    sandbox = ("--vibe-sandbox", "none") if xdist else ()  # see test_mcp_server_given_to_every_cli_with_xdist
    result, by_config = records(pytester, xdist, *sandbox)
    check_mcp_run(pytester, result, by_config)
    with api.lock:
        sent = [r["body"] for r in api.requests if marker in json.dumps(r["body"])]
    offered = [
        {function["name"] for tool in body.get("tools") or [] for function in tool["functionDeclarations"]}
        for body in sent
    ]
    assert offered and all("mcp_tracker_list_issues" in names for names in offered), offered
    assert not any(WRITING_TOOL["gemini"] in names for names in offered), offered
    assert any("read_file" in names for names in offered), offered
