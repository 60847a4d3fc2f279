"""Evals that share a prompt, recorded and replayed: a ``python:`` callable is given the eval that
asks (and its suite), so each eval has its own answer in a store, a ``replay:`` configuration
included; an HTTP model is sent the same request by both, which keeps one answer and both evals'
results. Stores recorded before the eval was part of a callable's key still replay where they
can say which answer is whose, and are refused, saying to record again, where they cannot."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from chat_server import ChatServer
from helpers import XDIST_MODES, comparable, evals_by_nodeid, load_json, run, write

SHARED = Path(__file__).parent / "shared_prompt_store"
PYTHON = 'python: "shared_app:answer"'


def shared_suite(root: Path, store: str | None = None) -> Path:
    """``suite.yaml`` of shared_prompt_store as ``shared.eval.yaml`` with its application, and
    ``store`` (a folder of shared_prompt_store) as ``store``."""
    shutil.copy(SHARED / "shared_app.py", root)
    if store is not None:
        shutil.copytree(SHARED / store, root / "store")
    return write(root / "shared.eval.yaml", (SHARED / "suite.yaml").read_text())


def as_replay(suite: Path) -> None:
    """The suite's configuration `app` answering from `store` (a `replay:` configuration)."""
    suite.write_text(suite.read_text().replace(PYTHON, "replay: store"))


def outcomes(root: Path) -> dict[str, str]:
    """Each eval's outcome, and its message's first line where it did not pass, in ``root/r.json``."""
    records = evals_by_nodeid(load_json(root / "r.json")).values()
    return {
        r["name"]: r["outcome"] + ("" if r["outcome"] == "passed" else f": {r['message'].splitlines()[0]}")
        for r in records
    }


@XDIST_MODES
def test_evals_that_share_a_prompt_replay_their_own_answers(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    suite = shared_suite(pytester.path)
    args = ("--vibe-history=", "--vibe-results", "r.json")
    run(pytester, "--vibe-record", "store", *args, xdist=xdist).assert_outcomes(passed=3)
    recorded = load_json(pytester.path / "r.json")
    # one answer per eval: the callable is given the eval that asks
    entries = [load_json(path) for path in (pytester.path / "store").rglob("*.json")]
    assert sorted((e.get("eval"), e["response"]) for e in entries) == [
        ("first", "first"),
        ("second", "second"),
        ("sum", "4"),
    ]
    run(pytester, "--vibe-replay", "store", *args, xdist=xdist).assert_outcomes(passed=3)
    assert comparable(load_json(pytester.path / "r.json")) == comparable(recorded)
    (pytester.path / "shared_app.py").unlink()  # offline: the application is not there
    run(pytester, "--vibe-replay", "store", *args, xdist=xdist).assert_outcomes(passed=3)
    as_replay(suite)
    run(pytester, *args, xdist=xdist).assert_outcomes(passed=3)


def test_a_replay_configuration_misses_an_eval_whose_prompt_only_another_eval_recorded(
    pytester: pytest.Pytester,
) -> None:
    """`second` was not recorded: `first`'s answer to the same prompt is not `second`'s."""
    suite = shared_suite(pytester.path)
    run(pytester, "--vibe-record", "store", "-k", "not second", "--vibe-history=").assert_outcomes(passed=2)
    as_replay(suite)
    run(pytester, "--vibe-history=", "--vibe-results", "r.json").assert_outcomes(passed=2, failed=1)
    assert outcomes(pytester.path)["second"].startswith(
        "error: no recorded answer for configuration 'app', model 'm' and this prompt in "
    )


@XDIST_MODES
def test_a_store_of_format_2_replays_each_evals_own_answer(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """--vibe-replay finds each eval's answer in a store recorded before the eval was part of the
    request's key (what was sent for it, the second part, always held it)."""
    shared_suite(pytester.path, "format-2")
    args = ("--vibe-history=", "--vibe-results", "r.json", "-W", "error::UserWarning")
    run(pytester, "--vibe-replay", "store", *args, xdist=xdist).assert_outcomes(passed=3)
    (pytester.path / "shared_app.py").unlink()
    run(pytester, "--vibe-replay", "store", *args, xdist=xdist).assert_outcomes(passed=3)


def test_a_store_of_format_2_sent_otherwise_is_a_miss_saying_so(pytester: pytest.Pytester) -> None:
    """The same logic under a new function name sends something else: the answers of format 2 to
    the prompt are stale, not missing; a `replay:` configuration's miss names the files it looks
    for and the configuration that records them."""
    suite = shared_suite(pytester.path, "format-2")
    with (pytester.path / "shared_app.py").open("a") as app:
        app.write("\n\nother = answer\n")
    suite.write_text(suite.read_text().replace(PYTHON, 'python: "shared_app:other"'))
    run(pytester, "--vibe-replay", "store", "--vibe-history=", "--vibe-results", "r.json").assert_outcomes(
        failed=3
    )
    store = pytester.path / "store"
    for eval_id, found in outcomes(pytester.path).items():
        assert found.startswith("error: no recorded answer for configuration 'app'"), eval_id
        assert "; this prompt was recorded, but sent with other request settings" in found, eval_id
        assert found.endswith(f"; record it with --vibe-record {store}"), eval_id
    suite.write_text(suite.read_text().replace('python: "shared_app:other"', "replay: store"))
    run(pytester, "--vibe-history=", "--vibe-results", "r.json", "-k", "sum").assert_outcomes(passed=1)
    (store / "app" / "abffbf366b46fdd4accd3290-cf22037272ebd7f5.json").unlink()
    run(pytester, "--vibe-history=", "--vibe-results", "r.json", "-k", "sum").assert_outcomes(failed=1)
    message = outcomes(pytester.path)["sum"]
    assert " (expected a file named " in message
    assert "*.json, a Python callable's answer to this eval, or abffbf366b46fdd4accd3290-*.json, " in message
    assert message.endswith(
        f"; record it with --vibe-record {store}, running configuration 'app' with the provider its "
        "answers come from (a `replay:` configuration only reads them)"
    )


@XDIST_MODES
def test_a_replay_configuration_refuses_answers_of_format_2_it_cannot_tell_apart(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A `replay:` configuration sends nothing that says which eval an answer of a format-2 store
    was given for: a prompt with one recorded answer replays, one with several is an error
    saying to record again; recorded again, every eval replays its own."""
    suite = shared_suite(pytester.path, "format-2")
    as_replay(suite)
    run(pytester, "--vibe-history=", "--vibe-results", "r.json", xdist=xdist).assert_outcomes(
        passed=1, failed=2
    )
    store = pytester.path / "store"
    found = outcomes(pytester.path)
    assert found["sum"] == "passed"
    names = ", ".join(sorted(p.name for p in (store / "app").glob("f37b1b8baf666aa6e0ddbf24-*")))
    assert found["first"] == found["second"]
    assert found["first"] == (
        f"error: the recorded answers {names} in {store / 'app'} answer this prompt differently, "
        "and were recorded before a store noted which eval each answered (for different evals of a "
        "Python callable or of a plugin's provider, or with other settings): they cannot be told "
        f"apart; record them again with --vibe-record {store}, running configuration 'app' with "
        "the provider its answers come from (a `replay:` configuration only reads them)"
    )
    suite.write_text(suite.read_text().replace("replay: store", PYTHON))
    run(pytester, "--vibe-record", "store", "--vibe-history=", xdist=xdist).assert_outcomes(passed=3)
    as_replay(suite)
    run(pytester, "--vibe-history=", xdist=xdist).assert_outcomes(passed=3)


@XDIST_MODES
def test_a_store_of_format_1_refuses_answers_it_cannot_tell_apart(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A store of the earlier format filed the answer to a request under one name, whichever eval
    asked: where it holds several answers to the request, no replay can say which is this eval's
    (and picking the last one answered `first` with `second`'s answer)."""
    suite = shared_suite(pytester.path, "format-1")
    args = ("--vibe-history=", "--vibe-results", "r.json")
    store = pytester.path / "store"
    for replay in (("--vibe-replay", "store"), ()):
        if not replay:
            as_replay(suite)
        run(pytester, *replay, *args, xdist=xdist).assert_outcomes(passed=1, failed=2)
        found = outcomes(pytester.path)
        assert found["sum"] == "passed"
        assert found["first"] == found["second"]
        hint = "" if replay else ", running configuration 'app' with the provider its answers come from"
        assert found["first"] == (
            f"error: {store / 'app'} holds 2 answers to this request that differ, recorded in the "
            "earlier format, which does not say which eval, code, settings or endpoint each was "
            f"given for: they cannot be told apart; record them again with --vibe-record {store}{hint}"
            + (" (a `replay:` configuration only reads them)" if hint else "")
        )


def test_a_response_cache_of_format_2_still_answers_python_evals(pytester: pytest.Pytester) -> None:
    """A cache written before the eval was part of a callable's key is not asked again."""
    shared_suite(pytester.path)
    cache = pytester.path / ".vibeeval" / "cache"
    shutil.copytree(SHARED / "format-2", cache)
    (cache / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    write(pytester.path / "shared_app.py", "def answer(prompt, context):\n    raise RuntimeError('asked')\n")
    # its code is not the recorded one's: every answer a miss, asked (and failing)
    run(pytester, "--vibe-cache", "--vibe-history=").assert_outcomes(failed=3)
    shutil.copy(SHARED / "shared_app.py", pytester.path)
    result = run(pytester, "--vibe-cache", "--vibe-history=")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["Cache: 3 answers from cache, 0 asked *"])


@XDIST_MODES
def test_http_evals_that_send_the_same_request_share_one_answer_and_keep_both_results(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.setenv("CHAT_KEY", "sk-shared-0123456789")
    with ChatServer() as server:
        data = {
            "metadata": {"name": "same", "model": "vendor/ok"},
            "configurations": {"sut": {"http": {"base_url": server.url, "api_key_env": "CHAT_KEY"}}},
            "evals": [
                {"name": "four", "prompt": "ANSWER: 4", "checks": [{"equals": "4"}]},
                {"name": "five", "prompt": "ANSWER: 4", "checks": [{"equals": "5"}]},
            ],
        }
        suite = write(pytester.path / "same.eval.yaml", yaml.safe_dump(data))
        args = ("--vibe-history=", "--vibe-results", "r.json")
        run(pytester, "--vibe-record", "store", *args, xdist=xdist).assert_outcomes(passed=1, failed=1)
        recorded = load_json(pytester.path / "r.json")
        assert len(server.requests) == 2  # both asked: each eval's result is its own call's
    assert len(list((pytester.path / "store").rglob("*.json"))) == 1  # the same request, one answer
    assert outcomes(pytester.path) == {
        "four": "passed",
        "five": "failed: equals: response does not equal '5' (ignoring outer whitespace)",
    }
    run(pytester, "--vibe-replay", "store", *args, xdist=xdist).assert_outcomes(passed=1, failed=1)
    assert comparable(load_json(pytester.path / "r.json")) == comparable(recorded)
    data["configurations"] = {"sut": {"replay": "store"}}
    suite.write_text(yaml.safe_dump(data))
    run(pytester, *args, xdist=xdist).assert_outcomes(passed=1, failed=1)
    assert outcomes(pytester.path)["five"].startswith("failed: equals: response does not equal '5'")
