"""--vibe-record stores every answer; --vibe-replay (or `replay:` on a configuration) answers from
the store with the server gone, giving the same outcomes and scores."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from chat_server import ChatServer
from helpers import XDIST_MODES, comparable, evals_by_nodeid, load_json, run, write

from pytest_vibeeval.providers.base import PromptRequest, ProviderResponse
from pytest_vibeeval.recording import RecordingProvider, ReplayProvider, Store

KEY = "sk-record-0123456789"


def recorded_suite(root: Path, url: str, **sut: Any) -> Path:
    """Three evals on an HTTP model (``sut``: more of its configuration's settings), one judged."""
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
            "sut": {"http": {"base_url": url, "api_key_env": "CHAT_KEY"}, "model": "vendor/ok", **sut},
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
    # one answer per request sent (`four` and `five` share theirs)
    assert [f.split("/")[0] for f in files] == ["grader", "sut", "sut"]
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
    stored = f"{pytester.path / 'answers' / 'app'}/*.json"
    result.stdout.fnmatch_lines(
        [f"*--vibe-record: the answer could not be stored in {stored}: Not a directory*"]
    )


@pytest.mark.parametrize(
    "change",
    [
        {"system_prompt": "Answer in French."},
        {"http": {"temperature": 1.5}},
        {"http": {"params": {"max_tokens": 5}}},
        {"http": {"headers": {"X-Route": "eu"}}},
    ],
    ids=["system_prompt", "temperature", "params", "headers"],
)
@XDIST_MODES
def test_a_replay_misses_when_the_configuration_would_send_another_request(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str], change: dict[str, Any]
) -> None:
    """What is sent (the configuration's own system prompt, temperature, params, headers) is part
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


@XDIST_MODES
def test_each_answer_is_filed_once_with_the_system_prompt_it_was_sent_with(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    """One key for every lookup: --vibe-replay and a `replay:` configuration read the one file of
    an answer, and the file says what was sent (the configuration's own system prompt)."""
    monkeypatch.setenv("CHAT_KEY", KEY)
    store = pytester.path / "store"
    with ChatServer() as server:
        suite = recorded_suite(pytester.path, server.url, system_prompt="Answer tersely.")
        run(pytester, "--vibe-record", store, xdist=xdist).assert_outcomes(passed=2, failed=1)
        sent = {request["body"]["messages"][0]["content"] for request in server.requests}
    assert "Answer tersely." in sent
    entries = {path.parent.name: load_json(path) for path in store.rglob("*.json")}
    stored = [load_json(path) for path in (store / "sut").glob("*.json")]
    assert len(stored) == 2 and len(list(store.rglob("*.json"))) == 3
    assert {entry["system_prompt"] for entry in stored} == {"Answer tersely."}
    # A store is shared (committed, read by a teammate's or CI's user): files get the mode any
    # file the user writes gets, not mkstemp's 0600.
    umask = os.umask(0o022)
    os.umask(umask)
    assert {path.stat().st_mode & 0o777 for path in store.rglob("*.json")} == {0o666 & ~umask}
    assert entries["grader"]["system_prompt"] in sent  # the grading instructions, as sent
    run(pytester, "--vibe-replay", store, xdist=xdist).assert_outcomes(passed=2, failed=1)
    data = yaml.safe_load(suite.read_text())
    data["configurations"] = {
        "sut": {"replay": "store", "model": "vendor/ok"},
        "grader": {"replay": "store", "model": "vendor/judge-pass"},
    }
    write(suite, yaml.safe_dump(data, sort_keys=False))
    run(pytester, xdist=xdist).assert_outcomes(passed=2, failed=1)


@XDIST_MODES
def test_where_a_request_is_sent_is_no_part_of_its_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    """A server on a new port each session (a fixture's, a container's) still finds the answers
    of the cache and of a recording: the URL says where a request goes, not what it asks."""
    monkeypatch.setenv("CHAT_KEY", KEY)
    args = ("--vibe-cache=cache", "--vibe-results", "r.json", "-k", "four")
    with ChatServer() as server:
        recorded_suite(pytester.path, server.url)
        run(pytester, *args, "--vibe-record", "store", xdist=xdist).assert_outcomes(passed=1)
    with ChatServer() as elsewhere:
        recorded_suite(pytester.path, elsewhere.url)
        run(pytester, *args, xdist=xdist).assert_outcomes(passed=1)
        assert elsewhere.requests == []
    assert evals_by_nodeid(load_json(pytester.path / "r.json"))["recorded.eval.yaml::four[sut]"]["cached"]
    recorded_suite(pytester.path, "http://127.0.0.1:9/nowhere/v1")
    run(pytester, "--vibe-replay", "store", "-k", "four", xdist=xdist).assert_outcomes(passed=1)


APP = """
def answer(prompt):
    return "{VERSION}"
"""


def python_suite(root: Path, version: str = "yes") -> Path:
    """A suite of one eval answered by a Python callable; the callable's module."""
    write(
        root / "app.eval.yaml",
        """
        metadata: {name: app, model: m}
        configurations: {app: {python: "replayed_app:answer"}}
        evals: [{name: a, prompt: hi, checks: [{equals: "yes"}]}]
        """,
    )
    return write(root / "replayed_app.py", APP.replace("{VERSION}", version))


@XDIST_MODES
def test_a_python_recording_replays_where_its_module_cannot_be_imported(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """Replaying offline is the point: a machine without the application (its module, or a
    package it imports) answers from the recording, which keeps the code's digest beside it."""
    app = python_suite(pytester.path)
    run(pytester, "--vibe-record", "store", "--vibe-history=", xdist=xdist).assert_outcomes(passed=1)
    (entry,) = [load_json(path) for path in (pytester.path / "store").rglob("*.json")]
    assert len(entry["code"]) == 64
    write(app, "import a_package_this_machine_lacks\n")
    run(pytester, "--vibe-replay", "store", "--vibe-history=", xdist=xdist).assert_outcomes(passed=1)
    app.unlink()
    run(pytester, "--vibe-replay", "store", "--vibe-history=", xdist=xdist).assert_outcomes(passed=1)


@XDIST_MODES
def test_a_python_recording_of_other_code_is_an_error_on_replay(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A stale recording must not pass as the new code's answer: where the module can be imported,
    an answer recorded from other code is an error saying so, as a changed setting is a miss."""
    python_suite(pytester.path)
    run(pytester, "--vibe-record", "store", "--vibe-history=", xdist=xdist).assert_outcomes(passed=1)
    (recorded,) = (pytester.path / "store").rglob("*.json")
    python_suite(pytester.path, "no")
    result = run(pytester, "--vibe-replay", "store", "--vibe-results", "r.json", xdist=xdist)
    result.assert_outcomes(failed=1)
    message = evals_by_nodeid(load_json(pytester.path / "r.json"))["app.eval.yaml::a[app]"]["message"]
    assert message == (
        f"recorded answer {recorded} was given by other code than configuration 'app' runs now (its "
        "Python module, or the file that defines its function, changed since); record it again with "
        f"--vibe-record {pytester.path / 'store'}"
    )
    run(pytester, "--vibe-record", "store", "--vibe-history=", xdist=xdist).assert_outcomes(failed=1)
    assert [path.name for path in (pytester.path / "store").rglob("*.json")] == [recorded.name]
    run(pytester, "--vibe-replay", "store", "--vibe-history=", xdist=xdist).assert_outcomes(failed=1)
    assert load_json(recorded)["response"] == "no"  # the new code's answer, replayed as it is


EARLIER = Path(__file__).parent / "earlier_store"


def earlier_store(root: Path) -> None:
    """A store recorded by the earlier format (each answer filed twice: under its request's key and
    under the key of what was sent), with the suite and the application it was recorded from."""
    shutil.copytree(EARLIER / "store", root / "store")
    shutil.copy(EARLIER / "earlier_app.py", root)
    shutil.copy(EARLIER / "suite.yaml", root / "earlier.eval.yaml")


@XDIST_MODES
def test_a_store_of_the_earlier_format_still_replays(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """A user's existing recordings keep replaying, with the application or without it and from a
    `replay:` configuration; --vibe-replay says they cannot be checked against what is sent."""
    earlier_store(pytester.path)
    assert len(list((pytester.path / "store").rglob("*.json"))) == 6  # three answers, filed twice
    args = ("--vibe-history=", "-W", "always")
    result = run(pytester, "--vibe-replay", "store", *args, xdist=xdist)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*--vibe-replay: the answers of configuration 'app' in * were recorded in an earlier format, *"]
    )
    (pytester.path / "earlier_app.py").unlink()
    run(pytester, "--vibe-replay", "store", *args, xdist=xdist).assert_outcomes(passed=2)
    suite = pytester.path / "earlier.eval.yaml"
    suite.write_text(suite.read_text().replace('python: "earlier_app:answer"', "replay: store"))
    result = run(pytester, *args, xdist=xdist)
    result.assert_outcomes(passed=2)
    assert "earlier format" not in result.stdout.str()  # a `replay:` configuration never compared


class SettingsProvider:
    """A provider whose answer depends on a setting sent with the request (as an HTTP model's
    temperature is)."""

    def __init__(self, temperature: float, text: str) -> None:
        self.temperature, self.text = temperature, text

    def unavailable_reason(self) -> None:
        return None

    def cache_material(self, request: PromptRequest) -> dict[str, Any]:
        return {"body": {"temperature": self.temperature, "prompt": request.prompt}}

    def answer(self, request: PromptRequest) -> ProviderResponse:
        return ProviderResponse(self.text, 0.0, 1, 1)


def test_a_replay_configuration_answers_with_the_answer_recorded_last_after_a_checkout(
    tmp_path: Path,
) -> None:
    """Recorded again with other settings, a request has two answers; a ``replay:`` configuration
    (which sends nothing to tell them apart) takes the one recorded last, also when a git checkout
    wrote the files in the other order."""
    request = PromptRequest("hi", "m", None, "s", "e", "c", tmp_path)
    for temperature, text in ((0.0, "first"), (1.0, "second")):
        provider = SettingsProvider(temperature, text)
        RecordingProvider(provider, Store(tmp_path / "store"), "c", None, provider).answer(request)
    files = sorted((tmp_path / "store" / "c").glob("*.json"))
    assert len(files) == 2
    for path in files:  # the earlier answer's file written last
        written = 2 * 10**18 if json.loads(path.read_text())["response"] == "first" else 10**18
        os.utime(path, ns=(written, written))
    assert ReplayProvider(Store(tmp_path / "store"), "c", None).answer(request).text == "second"
