"""vibecheck's ``mcp_server``: an HTTP configuration's model gets a real MCP server's tools.

The MCP server is the SDK's own (tests/mcp_server.py, a subprocess on 127.0.0.1, over Streamable
HTTP or SSE); the model is the scripted chat server (tests/chat_server.py, model ``tools``)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_server import USAGE, ChatServer
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, write
from mcp_process import TOKEN, McpProcess
from test_compat import CORPUS


@pytest.fixture(scope="module")
def mcp_http() -> Iterator[McpProcess]:
    server = McpProcess("streamable-http")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def mcp_sse() -> Iterator[McpProcess]:
    server = McpProcess("sse")
    yield server
    server.stop()


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


def suite(path: Path, chat_url: str, model: str = "tools", evals: str | None = None, **mcp: Any) -> None:
    """A vibecheck-style suite whose mcp_server URL comes from a var and its token from a secret."""
    extra = "".join(f"    {key}: {value}\n" for key, value in mcp.items())
    write(
        path / "tracker.eval.yaml",
        f"""\
metadata:
  name: tracker
  model: scripted/{model}
  mcp_server:
    url: "{{{{var('tracker.url')}}}}"
    name: tracker
    authorization_token: "{{{{secret('tracker.apiKey')}}}}"
{extra}configurations:
  model:
    http: {{base_url: "{chat_url}"}}
evals:
"""
        + (
            evals
            or """\
  - name: listed
    prompt: |
      List the issues of team ENG.
      CALL: list_issues {"team": "ENG"}
    checks:
      - match: "*ENG-1: Get familiar*"
  - name: created_and_broken
    prompt: |
      Create an issue, then try the broken tool.
      CALL: create_issue {"team": "ENG", "title": "Remember the milk"}
      CALL: broken {}
    checks:
      - match: "*created ENG-*Remember the milk*"
  - name: plain
    prompt: Just answer, no tools needed.
    checks:
      - match: "tools said*"
"""
        ),
    )


def run_suite(
    pytester: pytest.Pytester, server: McpProcess, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[pytest.RunResult, dict[str, dict[str, Any]]]:
    monkeypatch.setenv("VIBE_SECRET_TRACKER_APIKEY", TOKEN)
    result = run(pytester, "--vibe-var", f"tracker.url={server.url}", "--vibe-results", "results.json", *args)
    return result, evals_by_nodeid(load_json(pytester.path / "results.json"))


@XDIST_MODES
def test_the_model_calls_the_mcp_servers_tools_over_streamable_http(
    pytester: pytest.Pytester,
    mcp_http: McpProcess,
    chat: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
    xdist: list[str],
) -> None:
    suite(pytester.path, chat.url)
    result, records = run_suite(pytester, mcp_http, monkeypatch, *xdist)
    result.assert_outcomes(passed=3)
    listed = records["tracker.eval.yaml::listed[model]"]
    assert listed["response"] == "tools said: ENG-1: Get familiar with the tracker\nENG-2: Write the docs"
    assert [(c["tool"], c["success"], c["error"]) for c in listed["tool_calls"]] == [
        ("mcp__tracker__list_issues", True, None)
    ]
    assert listed["tool_calls"][0]["duration"] >= 0
    assert listed["tool_calls"][0]["args"] == {"team": "ENG"}  # so tool_called can match arguments
    # two model rounds: usage is summed over them
    assert listed["input_tokens"] == 2 * USAGE["prompt_tokens"]
    assert listed["cost"] == pytest.approx(2 * USAGE["cost"])
    both = records["tracker.eval.yaml::created_and_broken[model]"]
    calls = [(c["tool"], c["success"]) for c in both["tool_calls"]]
    assert calls == [("mcp__tracker__create_issue", True), ("mcp__tracker__broken", False)]
    assert (
        "the tracker is down" in both["tool_calls"][1]["error"] or "broken" in both["tool_calls"][1]["error"]
    )
    assert records["tracker.eval.yaml::plain[model]"]["tool_calls"] == []
    # the model was offered the server's tools, as OpenAI-style functions
    offered = chat.requests[0]["body"]["tools"]
    assert sorted(tool["function"]["name"] for tool in offered) == ["broken", "create_issue", "list_issues"]
    lister = next(tool for tool in offered if tool["function"]["name"] == "list_issues")["function"]
    assert lister["description"] == "List the most recent issues of a team."
    assert lister["parameters"]["required"] == ["team"]
    # the token reached the server (it answers 401 without it) and no output shows it
    assert TOKEN not in result.stdout.str()
    assert TOKEN not in (pytester.path / "results.json").read_text()


def test_an_sse_server_is_reached_too(
    pytester: pytest.Pytester, mcp_sse: McpProcess, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite(pytester.path, chat.url)
    result, records = run_suite(pytester, mcp_sse, monkeypatch, "-k", "listed")
    result.assert_outcomes(passed=1)
    assert records["tracker.eval.yaml::listed[model]"]["tool_calls"][0]["success"] is True


def test_transport_auto_falls_back_to_sse_when_streamable_http_is_refused(
    pytester: pytest.Pytester, mcp_sse: McpProcess, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SSE server's URL that does not end in /sse: Streamable HTTP is tried first, then SSE."""
    suite(pytester.path, chat.url, transport="auto")
    monkeypatch.setenv("VIBE_SECRET_TRACKER_APIKEY", TOKEN)
    url = mcp_sse.url + "?via=auto"
    result = run(pytester, "--vibe-var", f"tracker.url={url}", "-k", "listed")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_a_wrong_token_is_an_error_saying_the_server_refused_it_and_showing_no_token(
    pytester: pytest.Pytester,
    mcp_http: McpProcess,
    mcp_sse: McpProcess,
    chat: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
    transport: str,
) -> None:
    """The SDK says only "Server returned an error response"; the message names the HTTP status."""
    server = mcp_http if transport == "streamable-http" else mcp_sse
    suite(pytester.path, chat.url, transport=transport)
    wrong = "wrong-token-8d2e4f6a"
    monkeypatch.setenv("VIBE_SECRET_TRACKER_APIKEY", wrong)
    result = run(
        pytester, "--vibe-var", f"tracker.url={server.url}", "--vibe-results", "r.json", "-k", "listed"
    )
    result.assert_outcomes(failed=1)
    record = evals_by_nodeid(load_json(pytester.path / "r.json"))["tracker.eval.yaml::listed[model]"]
    assert record["outcome"] == "error"
    assert record["message"] == (
        f"the MCP server 'tracker' at {server.url} refused the authorization_token it was given: "
        "HTTP 401 Unauthorized; check mcp_server.authorization_token"
    )
    assert wrong not in result.stdout.str() and wrong not in (pytester.path / "r.json").read_text()


def test_a_server_that_is_not_there_is_an_error_naming_each_transport_tried(
    pytester: pytest.Pytester, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite(pytester.path, chat.url)
    monkeypatch.setenv("VIBE_SECRET_TRACKER_APIKEY", TOKEN)
    url = f"{chat.url}/no-mcp-here"  # an HTTP server that is not an MCP server: 404
    result = run(pytester, "--vibe-var", f"tracker.url={url}", "--vibe-results", "r.json", "-k", "listed")
    result.assert_outcomes(failed=1)
    message = evals_by_nodeid(load_json(pytester.path / "r.json"))["tracker.eval.yaml::listed[model]"][
        "message"
    ]
    assert message.startswith(f"cannot connect to MCP server 'tracker' at {url} (streamable-http: ")
    assert "; sse: " in message and message.endswith("check mcp_server.url (and authorization_token)")


def test_a_model_that_never_stops_calling_tools_is_stopped_at_max_steps(
    pytester: pytest.Pytester, mcp_http: McpProcess, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite(pytester.path, chat.url, model="tools-forever", max_steps=3)
    result, records = run_suite(pytester, mcp_http, monkeypatch, "-k", "listed")
    result.assert_outcomes(failed=1)
    record = records["tracker.eval.yaml::listed[model]"]
    assert record["outcome"] == "error"
    assert record["message"] == (
        "the model was still calling tools after 3 rounds (mcp_server.max_steps); last calls: list_issues"
    )
    assert len(chat.requests) == 4  # the first answer and three rounds of tool results


def test_a_cli_configuration_skips_saying_it_cannot_use_the_mcp_server(
    pytester: pytest.Pytester, mcp_http: McpProcess, chat: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite(pytester.path, chat.url)
    text = (pytester.path / "tracker.eval.yaml").read_text()
    text = text.replace(
        "configurations:\n",
        f"configurations:\n  shell:\n    cli: {sys.executable}\n    args: ['-c', 'print(1)']\n",
    )
    (pytester.path / "tracker.eval.yaml").write_text(text)
    result, records = run_suite(pytester, mcp_http, monkeypatch, "-rs", "-k", "listed")
    result.assert_outcomes(passed=1, skipped=1)
    assert records["tracker.eval.yaml::listed[shell]"]["message"] == (
        "configuration 'shell' runs a CLI without a preset, which cannot be given the suite's "
        "mcp_server; use preset claude-code, codex or gemini (with your own args if need be), an "
        "`http:` configuration (the model gets the server's tools) or a `python:` callable"
    )


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mcp-tools"
LINEAR_MCP = CORPUS / "linear-mcp.yaml"


@pytest.fixture(scope="module")
def tracker() -> Iterator[McpProcess]:
    """The example's issue tracker (examples/mcp-tools/tracker_server.py), with TOKEN."""
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE / "tracker_server.py"), TOKEN], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    server = McpProcess.__new__(McpProcess)
    server.process, server.url = process, process.stdout.readline().strip()
    assert server.url, "the example MCP server did not start"
    yield server
    server.stop()


@pytest.fixture
def standin_model(monkeypatch: pytest.MonkeyPatch) -> str:
    """The example's tool-calling model stand-in; its URL, as the suite's OpenRouter base URL."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from standin_model import StandinModel

    model = StandinModel()
    monkeypatch.setenv("OPENROUTER_BASE_URL", model.url)
    monkeypatch.setenv("OPENROUTER_API_KEY", "standin-key-3c9d")
    return model.url


@XDIST_MODES
def test_vibechecks_linear_mcp_suite_runs_unchanged_against_a_local_server(
    pytester: pytest.Pytester,
    tracker: McpProcess,
    standin_model: str,
    monkeypatch: pytest.MonkeyPatch,
    xdist: list[str],
) -> None:
    """The corpus file, byte for byte: its URL (https://mcp.linear.app/mcp) is redirected with
    --vibe-mcp-url, its team, project and key come from the environment as vibecheck's do."""
    (pytester.path / "linear-mcp.yaml").write_bytes(LINEAR_MCP.read_bytes())
    monkeypatch.setenv("VIBE_VAR_LINEAR_PROJECTTEAM", "ENG")
    monkeypatch.setenv("VIBE_VAR_LINEAR_PROJECTID", "ENG")
    monkeypatch.setenv("VIBE_SECRET_LINEAR_APIKEY", TOKEN)
    result = run(
        pytester,
        "linear-mcp.yaml",
        "--vibe-mcp-url",
        f"linear={tracker.url}",
        "--vibe-results",
        "results.json",
        "-rs",
        xdist=xdist,
    )
    records = {r["name"]: r for r in load_json(pytester.path / "results.json")["runs"][0]["evals"]}
    listed = records["using-linear-list-the-most-recent-issues"]
    assert listed["outcome"] == "passed", listed
    assert [call["tool"] for call in listed["tool_calls"]] == ["mcp__linear__list_issues"]
    created = records["create-a-new-to-do-item-in-linear-for"]
    assert created["outcome"] == "passed", created
    assert re.search(r"created ENG-\d+: Remember the milk", created["response"])  # the server's state
    assert created["tool_calls"][0]["tool"] == "mcp__linear__create_issue"
    details = records["get-the-deatils-on-linear-todo-item-1"]  # semantic or llm_judge
    assert details["tool_calls"][0]["tool"] == "mcp__linear__get_issue"
    assert details["outcome"] in ("passed", "skipped"), details  # skipped: no semantic extra
    out = result.stdout.str()
    assert TOKEN not in out and TOKEN not in (pytester.path / "results.json").read_text()
    assert "mcp.linear.app" not in out


def test_a_recording_replays_with_the_mcp_server_somewhere_else(
    pytester: pytest.Pytester, tracker: McpProcess, standin_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay asks neither the model nor the MCP server: recorded against the tracker on its port
    of the day, the answers replay with the URL pointing nowhere (a CI machine without it)."""
    (pytester.path / "linear-mcp.yaml").write_bytes(LINEAR_MCP.read_bytes())
    monkeypatch.setenv("VIBE_VAR_LINEAR_PROJECTTEAM", "ENG")
    monkeypatch.setenv("VIBE_VAR_LINEAR_PROJECTID", "ENG")
    monkeypatch.setenv("VIBE_SECRET_LINEAR_APIKEY", TOKEN)
    outcomes = {}
    for mode, url in (("--vibe-record", tracker.url), ("--vibe-replay", "http://127.0.0.1:9/mcp")):
        out = f"{mode[2:]}.json"
        run(
            pytester,
            "linear-mcp.yaml",
            mode,
            "store",
            "--vibe-mcp-url",
            f"linear={url}",
            "--vibe-results",
            out,
        )
        records = load_json(pytester.path / out)["runs"][0]["evals"]
        outcomes[mode] = {record["name"]: (record["outcome"], record["message"]) for record in records}
    assert outcomes["--vibe-replay"] == outcomes["--vibe-record"]
    assert ("passed", None) in outcomes["--vibe-replay"].values()


def test_an_mcp_url_override_must_be_a_url(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--vibe-mcp-url", "linear=mcp.linear.app")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--vibe-mcp-url: linear='mcp.linear.app': the URL must start with http:// or https://*"]
    )
