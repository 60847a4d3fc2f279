"""Secrets end to end: with `secret()` values in prompts and arguments, an API key in the
environment, an agent whose tool log and answer repeat the secret, and every output switched on
(results, JUnit, HTML report, history, recorded answers, progress board, terminal), none of the
files the plugin writes and none of its terminal output holds a secret value.

The agent's own files (its stdout log and its tool log, kept verbatim under pytest's basetemp for
debugging) are the agent's output, not the plugin's: they are left out, as the Security model
(docs/security.md) says."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from chat_server import ChatServer
from helpers import (
    PYTHON,
    XDIST_MODES,
    agent,
    evals_by_nodeid,
    load_json,
    run,
    serving,
    write,
    write_cli_config,
)

TOKEN = "tok-5ecret-4711-abcdef"
KEY = "sk-live-9f8e7d6c5b4a3210"

# Answers with the secret it was given and logs a failed tool call whose error repeats it.
AGENT = """
import json, os, sys
prompt = sys.stdin.read()
token = sys.argv[1]
with open(os.environ["VIBEEVAL_TRANSCRIPT"], "a") as log:
    log.write(json.dumps({"tool": "curl", "exit": 7, "error": f"auth failed for {token}"}) + "\\n")
    log.write('{"tool": "curl", "duration": "' + token + '"}\\n')
print(f"# Done\\nused {token} and {os.environ['AGENT_TOKEN']}: {prompt}")
"""


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as chat:
        yield chat


@XDIST_MODES
def test_no_output_of_the_plugin_holds_a_secret(
    pytester: pytest.Pytester, server: ChatServer, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.setenv("VIBE_SECRET_TOKEN", TOKEN)
    monkeypatch.setenv("MY_API_KEY", KEY)
    script = agent(pytester.path / "agents", "leaky.py", AGENT)
    write(
        pytester.path / "sec.eval.yaml",
        f"""
        metadata: {{name: sec, model: vendor/ok}}
        configurations:
          leaky:
            cli: "{PYTHON}"
            args: ["{script}", "{{{{secret('token')}}}}"]
            env: {{AGENT_TOKEN: "{{{{secret('token')}}}}"}}
            transcript: executions.jsonl
          model:
            http: {{base_url: "{server.url}", api_key_env: MY_API_KEY}}
        evals:
          - name: uses-token
            prompt: "the token is {{{{secret('token')}}}}"
            checks: [{{match: "*nothing-like-this*"}}]
          - name: plain
            prompt: "ANSWER: hello"
            checks: [{{match: "*hello*"}}]
        """,
    )
    outputs = pytester.path / "out"
    result = run(
        pytester,
        "-v", "-rA",
        "--vibe-results", str(outputs / "results.json"),
        f"--junitxml={outputs / 'junit.xml'}",
        "--vibe-html", str(outputs / "report.html"),
        "--vibe-history", str(outputs / "history.jsonl"),
        "--vibe-record", str(outputs / "store"),
        xdist=xdist,
    )  # fmt: skip
    assert result.ret == 1  # uses-token fails on both configurations: its failure report is printed
    assert any(request["headers"].get("Authorization") == f"Bearer {KEY}" for request in server.requests)
    produced = {"terminal": result.stdout.str() + result.stderr.str()}
    for path in outputs.rglob("*"):
        if path.is_file():
            produced[str(path.relative_to(pytester.path))] = path.read_bytes().decode(errors="replace")
    assert set(produced) >= {"out/results.json", "out/junit.xml", "out/report.html", "out/history.jsonl"}
    assert any(name.startswith("out/store/") for name in produced)
    leaks = sorted(name for name, text in produced.items() if TOKEN in text or KEY in text)
    assert leaks == []
    assert "[secret]" in produced["out/results.json"]  # redacted where the value was, not dropped


@XDIST_MODES
def test_a_secret_in_a_collection_error_is_masked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.setenv("MYAPP_API_KEY", KEY)
    monkeypatch.setenv("EVAL_ROOT", str(pytester.path))
    config = pytester.path / "evals" / "config"
    evaluation = {"workspace": "${EVAL_ROOT}/problems/${MYAPP_API_KEY}/workspace", "prompt": "x.md"}
    evaluation |= {"grading": "${EVAL_ROOT}/grading/x", "buildSteps": [], "gradeSteps": []}
    write(config / "eval-config.json", json.dumps({"evaluations": {"x": evaluation}}))
    write_cli_config(config / "cli-config.json", {"configurations": {"c": {"cli": "true"}}})
    write(config / "command-registry.json", "{}")
    write(pytester.path / "prompts" / "problems" / "x.md", "hi")
    result = run(pytester, "--junitxml=junit.xml", "--vibe-results=results.json", xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    terminal = result.stdout.str() + result.stderr.str()
    junit = (pytester.path / "junit.xml").read_text()
    assert KEY not in terminal + junit + (pytester.path / "results.json").read_text()
    shown = f"workspace folder {pytester.path}/problems/[secret]/workspace does not exist"
    assert shown in terminal and shown in junit


# Excerpts cut before they are masked: a 401 body whose key straddles the 300-character excerpt,
# an agent's stderr line whose key straddles the start of the 8 KiB tail its failure shows, and a
# tool call error whose key straddles the 500 characters kept of it.
LOUD = """
import os, sys
key = os.environ["MY_API_KEY"]
sys.stderr.write("A" * 1000 + key + "B" * (8192 - 1 - len(key) + 8) + "\\n")
sys.exit(2)
"""
LOGGED = """
import json, os, sys
sys.stdin.read()
with open(os.environ["VIBEEVAL_TRANSCRIPT"], "a") as log:
    error = "e" * 488 + " key=" + os.environ["MY_API_KEY"]
    log.write(json.dumps({"tool": "bash", "success": False, "error": error}))
print("done")
"""


def refuse_naming_the_key(handler: BaseHTTPRequestHandler) -> None:
    body = json.dumps({"error": {"message": "x" * 285 + " key=" + KEY + " tail"}}).encode()
    handler.send_response(401)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@XDIST_MODES
def test_no_part_of_a_secret_is_left_where_an_excerpt_was_cut(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.setenv("MY_API_KEY", KEY)
    loud = agent(pytester.path / "agents", "loud.py", LOUD)
    logged = agent(pytester.path / "agents", "logged.py", LOGGED)
    with serving(refuse_naming_the_key) as (url, _):
        write(
            pytester.path / "cut.eval.yaml",
            f"""
            metadata: {{name: cut, model: m}}
            configurations:
              api: {{http: {{base_url: "{url}", api_key_env: MY_API_KEY, max_retries: 0}}}}
              loud: {{cli: "{PYTHON}", args: ["{loud}"], env_passthrough: [MY_API_KEY]}}
              logged:
                cli: "{PYTHON}"
                args: ["{logged}"]
                env_passthrough: [MY_API_KEY]
                transcript: executions.jsonl
            evals:
              - name: a
                prompt: hi
                checks: [{{match: "*nothing*"}}]
            """,
        )
        outputs = ("results.json", "junit.xml", "report.html")
        result = run(
            pytester,
            "--vibe-results=results.json", "--junitxml=junit.xml", "--vibe-html=report.html",
            xdist=xdist,
        )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    produced = [result.stdout.str() + result.stderr.str()]
    produced += [(pytester.path / name).read_text() for name in outputs]
    # Each cut leaves 6 or more of the key's characters; shorter parts of it may match random hex.
    parts = {KEY[at : at + 6] for at in range(len(KEY) - 5)}
    assert [part for part in parts if any(part in text for text in produced)] == []
    records = evals_by_nodeid(load_json(pytester.path / "results.json"))
    api, loud, logged = (records[f"cut.eval.yaml::a[{name}]"] for name in ("api", "loud", "logged"))
    assert f"{'x' * 285} key=[secret]…; check the key in MY_API_KEY" in api["message"]
    assert "\n…[secret]" + "B" * 100 in loud["message"]
    assert logged["tool_calls"][0]["error"] == "e" * 488 + " key=[secret]…"


def echo_the_credentials(handler: BaseHTTPRequestHandler) -> None:
    """HTTP 401 quoting the Authorization header base64-encoded, and the key as a Basic credential."""
    sent = handler.headers["Authorization"]
    basic = base64.b64encode(f"user:{sent.removeprefix('Bearer ')}".encode()).decode()
    message = f"header {base64.b64encode(sent.encode()).decode()} is no Basic {basic}"
    body = json.dumps({"error": {"message": message}}).encode()
    handler.send_response(401)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@XDIST_MODES
def test_a_key_inside_longer_base64_is_masked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.setenv("MY_API_KEY", KEY)
    with serving(echo_the_credentials) as (url, _):
        write(
            pytester.path / "b64.eval.yaml",
            f"""
            metadata: {{name: b64, model: m}}
            configurations:
              api: {{http: {{base_url: "{url}", api_key_env: MY_API_KEY, max_retries: 0}}}}
            evals:
              - name: a
                prompt: hi
                checks: [{{match: "*nothing*"}}]
            """,
        )
        result = run(pytester, "--vibe-results=results.json", xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    record = evals_by_nodeid(load_json(pytester.path / "results.json"))["b64.eval.yaml::a[api]"]
    # left of each encoding: what holds bits of "Bearer " or "user:", or of the padding after the key
    assert ": header QmVhcmVyIH[secret]A== is no Basic dXNlcjp[secret]A=;" in record["message"]
    assert "header QmVhcmVyIH[secret]A==" in result.stdout.str()


@XDIST_MODES
def test_a_key_shorter_than_six_characters_is_not_masked(
    pytester: pytest.Pytester, server: ChatServer, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.setenv("MYCREDS", "e")  # masked, it would hide every "e" of every output
    monkeypatch.setenv("VIBE_SECRET_PIN", "1234")
    write(
        pytester.path / "short.eval.yaml",
        f"""
        metadata: {{name: short, model: vendor/ok}}
        configurations:
          api: {{http: {{base_url: "{server.url}", api_key_env: MYCREDS}}}}
        evals:
          - name: a
            prompt: "ANSWER: the pattern is here, pin {{{{secret('pin')}}}}"
            checks: [{{match: "*nothing*"}}]
        """,
    )
    result = run(pytester, "--vibe-results=results.json", "-rf", xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    record = evals_by_nodeid(load_json(pytester.path / "results.json"))["short.eval.yaml::a[api]"]
    assert record["response"] == "the pattern is here, pin 1234"
    assert record["message"].startswith("match: pattern '*nothing*' does not match the response")
    result.stdout.fnmatch_lines(["*FAIL match: pattern '[*]nothing[*]' does not match the response"])
