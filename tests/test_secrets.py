"""Secrets end to end: with `secret()` values in prompts and arguments, an API key in the
environment, an agent whose tool log and answer repeat the secret, and every output switched on
(results, JUnit, HTML report, history, recorded answers, progress board, terminal), none of the
files the plugin writes and none of its terminal output holds a secret value.

The agent's own files (its stdout log and its tool log, kept verbatim under pytest's basetemp for
debugging) are the agent's output, not the plugin's: they are left out, as the Security model
(docs/security.md) says."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from chat_server import ChatServer
from helpers import PYTHON, XDIST_MODES, agent, run, write, write_cli_config

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
