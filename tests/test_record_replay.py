"""--vibe-record stores every answer; --vibe-replay (or `replay:` on a configuration) answers from
the store with the server gone, giving the same outcomes and scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from chat_server import ChatServer
from helpers import XDIST_MODES, comparable, evals_by_nodeid, load_json, run, write

from pytest_vibeeval import recording
from pytest_vibeeval.providers import PromptRequest

KEY = "sk-record-0123456789"


def recorded_suite(root: Path, url: str) -> Path:
    data: dict[str, Any] = {
        "metadata": {"name": "recorded", "model": "vendor/ok", "system_prompt": "Be brief."},
        "evals": [
            {"name": "four", "prompt": "ANSWER: 4", "checks": [{"equals": "4"}]},
            {"name": "five", "prompt": "ANSWER: 4", "checks": [{"equals": "5"}]},
            {
                "name": "judged",
                "prompt": "ANSWER: Paris",
                "checks": [{"llm_judge": {"criteria": "a capital"}}],
            },
        ],
        "configurations": {
            "sut": {"http": {"base_url": url, "api_key_env": "CHAT_KEY"}, "model": "vendor/ok"},
            "grader": {"http": {"base_url": url}, "model": "vendor/judge-pass"},
        },
        "default_configurations": ["sut"],
        "judge": "grader",
        "score": {"formula": "success_pct * 2"},
    }
    return write(root / "recorded.eval.yaml", yaml.safe_dump(data, sort_keys=False))


@XDIST_MODES
def test_record_then_replay_without_the_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.setenv("CHAT_KEY", KEY)
    store = pytester.path / "store"
    with ChatServer() as server:
        recorded_suite(pytester.path, server.url)
        first = pytester.path / "first.json"
        run(pytester, "--vibe-record", store, "--vibe-results", first, xdist=xdist).assert_outcomes(
            passed=2, failed=1
        )
        asked = len(server.requests)
    assert asked == 4  # three evals and one judge call
    files = sorted(p.relative_to(store).as_posix() for p in store.rglob("*.json"))
    # one answer per configuration × model × system prompt × prompt (`four` and `five` share
    # theirs), each under that key and under the key of what was sent for it
    assert [f.split("/")[0] for f in files] == ["grader", "grader", "sut", "sut", "sut", "sut"]
    stored = [json.loads(p.read_text()) for p in store.rglob("*.json")]
    assert all(KEY not in json.dumps(entry) for entry in stored)
    # the server is gone: every answer, the judge's too, comes from the store
    second = pytester.path / "second.json"
    run(pytester, "--vibe-replay", store, "--vibe-results", second, xdist=xdist).assert_outcomes(
        passed=2, failed=1
    )
    assert comparable(load_json(first)) == comparable(load_json(second))
    runs = load_json(second)["runs"]
    assert runs[0]["score"] == pytest.approx(2 * 200 / 3)
    judged = evals_by_nodeid(load_json(second))["recorded.eval.yaml::judged[sut]"]
    assert judged["checks"][0]["message"] == "judge: the response meets the criteria"


def test_a_replay_miss_is_an_error_saying_how_to_record(pytester: pytest.Pytester) -> None:
    recorded_suite(pytester.path, "http://127.0.0.1:9/v1")
    store = pytester.path / "empty-store"
    store.mkdir()
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-replay", store, "--vibe-results", results, "-k", "four")
    result.assert_outcomes(failed=1)
    record = evals_by_nodeid(load_json(results))["recorded.eval.yaml::four[sut]"]
    assert record["outcome"] == "error"
    assert record["message"].startswith("no recorded answer for configuration 'sut', model 'vendor/ok'")
    assert f"record it with --vibe-record {store}" in record["message"]


def test_a_replay_configuration_answers_from_its_store(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAT_KEY", KEY)
    with ChatServer() as server:
        suite = recorded_suite(pytester.path, server.url)
        run(pytester, "--vibe-record", pytester.path / "answers").assert_outcomes(passed=2, failed=1)
    data = yaml.safe_load(suite.read_text())
    data["configurations"] = {
        "sut": {"replay": "answers", "model": "vendor/ok"},
        "grader": {"replay": "answers", "model": "vendor/judge-pass"},
    }
    write(suite, yaml.safe_dump(data, sort_keys=False))
    run(pytester).assert_outcomes(passed=2, failed=1)


def test_record_and_replay_together_are_a_usage_error(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--vibe-record", "a", "--vibe-replay", "b")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--vibe-record and --vibe-replay exclude each other*"])
    result = run(pytester, "--vibe-replay", "nowhere")
    result.stderr.fnmatch_lines(["*--vibe-replay: nowhere is not a folder of recorded answers*"])


def test_a_record_folder_that_cannot_be_made_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write(pytester.path / "plain", "a file\n")
    result = run(pytester, "--vibe-record", "plain/answers")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*--vibe-record: cannot make the folder {pytester.path / 'plain' / 'answers'}: *"]
    )


LOSING_APP = """
import pathlib
import shutil


def answer(prompt):  # the record folder becomes a file meanwhile
    store = pathlib.Path("answers")
    if store.is_dir():
        shutil.rmtree(store)
        store.write_text("in the way")
    return "hi"
"""


@XDIST_MODES
def test_an_answer_that_cannot_be_stored_errors_its_eval_saying_why(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(pytester.path / "losing_app.py", LOSING_APP)
    write(
        pytester.path / "l.eval.yaml",
        """
        metadata: {name: l, model: m}
        configurations: {app: {python: "losing_app:answer"}}
        evals: [{name: a, prompt: hi, checks: [{equals: hi}]}]
        """,
    )
    result = run(pytester, "--vibe-record", "answers", xdist=xdist)
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "Traceback" not in output and "pytest_vibeeval/" not in output, output
    result.stdout.fnmatch_lines(["*--vibe-record: the answer could not be stored: *"])


@pytest.mark.parametrize(
    "change",
    [
        {"system_prompt": "Answer in French."},
        {"http": {"temperature": 1.5}},
        {"http": {"params": {"max_tokens": 5}}},
        {"http": {"base_url": "http://127.0.0.1:9/other/v1"}},
    ],
    ids=["system_prompt", "temperature", "params", "base_url"],
)
@XDIST_MODES
def test_a_replay_misses_when_the_configuration_would_send_another_request(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str], change: dict[str, Any]
) -> None:
    """What is sent (the configuration's own system prompt, temperature, params, endpoint) is part
    of what a recording is for: the suite's system prompt alone was, so a replay answered a request
    the configuration would no longer send."""
    monkeypatch.setenv("CHAT_KEY", KEY)
    store = pytester.path / "store"
    with ChatServer() as server:
        suite = recorded_suite(pytester.path, server.url)
        run(pytester, "--vibe-record", store, "-k", "four", xdist=xdist).assert_outcomes(passed=1)
    run(pytester, "--vibe-replay", store, "-k", "four", xdist=xdist).assert_outcomes(passed=1)
    data = yaml.safe_load(suite.read_text())
    sut = data["configurations"]["sut"]
    sut.update({key: value for key, value in change.items() if key != "http"})
    sut["http"].update(change.get("http", {}))
    write(suite, yaml.safe_dump(data, sort_keys=False))
    results = pytester.path / "results.json"
    run(
        pytester, "--vibe-replay", store, "--vibe-results", results, "-k", "four", xdist=xdist
    ).assert_outcomes(failed=1)
    message = evals_by_nodeid(load_json(results))["recorded.eval.yaml::four[sut]"]["message"]
    assert message.startswith("no recorded answer for configuration 'sut', model 'vendor/ok'"), message
    assert (
        "this prompt was recorded, but sent with other request settings than the configuration's now"
        in message
    )
    assert message.endswith(f"record it with --vibe-record {store}")


def test_an_answer_recorded_without_what_was_sent_is_a_miss(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recording made before answers held what was sent for them cannot be checked: re-record it
    (a `replay:` configuration, which has no request of its own to compare, still reads it)."""
    monkeypatch.setenv("CHAT_KEY", KEY)
    store = pytester.path / "store"
    with ChatServer() as server:
        recorded_suite(pytester.path, server.url)
        run(pytester, "--vibe-record", store, "-k", "four").assert_outcomes(passed=1)
    answers = list((store / "sut").glob("*.json"))
    assert len(answers) == 2 and len(json.loads(answers[0].read_text())["sent"]) == 64
    request_key = recording.request_key(
        "sut", "vendor/ok", PromptRequest("ANSWER: 4", "", "Be brief.", "", "", "", pytester.path)
    )
    [sent] = [path for path in answers if not path.name.startswith(request_key[:40])]
    sent.unlink()  # as a recording made before answers were filed by what was sent
    result = run(pytester, "--vibe-replay", store, "-k", "four")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*or it was recorded before recordings noted what was sent); record it with*"]
    )
