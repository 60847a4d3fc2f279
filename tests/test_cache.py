"""--vibe-cache answers a request identical to an earlier one from disk: a second run asks the
server nothing and marks its answers `cached: true`; a changed prompt, system prompt, model or
parameter is a miss; --vibe-repeat always calls; agent CLIs are never cached; a spoiled entry is a
miss with a warning; no secret reaches a cache file."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from chat_server import USAGE, ChatServer
from helpers import PYTHON, XDIST_MODES, agent, evals_by_nodeid, load_json, run, run_summary, write

from pytest_vibeeval.cache import CachingProvider, ResponseCache
from pytest_vibeeval.checks import JudgeArgs
from pytest_vibeeval.judge import FROM_CACHE, Judge, JudgeError
from pytest_vibeeval.loading.templates import Redactor
from pytest_vibeeval.providers import PromptRequest, ProviderResponse

KEY = "sk-cache-0123456789"
TOKEN = "tok-cache-abcdefghij"


def cached_suite(root: Path, url: str, **changes: Any) -> Path:
    """Two evals (one with a secret in its prompt) on an HTTP model, and one judged by another."""
    sut: dict[str, Any] = {"http": {"base_url": url, "api_key_env": "CHAT_KEY"}, "model": "vendor/ok"}
    sut["http"].update(changes.pop("http", {}))
    sut.update(changes.pop("sut", {}))
    data: dict[str, Any] = {
        "metadata": {"name": "cached", "model": "vendor/ok", "system_prompt": "Be brief."},
        "evals": [
            {"name": "four", "prompt": "ANSWER: 4", "checks": [{"equals": "4"}]},
            {"name": "token", "prompt": "Say {{secret('TOKEN')}}", "checks": [{"match": "echo*"}]},
            {
                "name": "judged",
                "prompt": "ANSWER: Paris",
                "checks": [{"llm_judge": {"criteria": "a capital"}}],
            },
        ],
        "configurations": {"sut": sut, "grader": {"http": {"base_url": url}, "model": "vendor/judge-pass"}},
        "default_configurations": ["sut"],
        "judge": "grader",
    }
    data["metadata"].update(changes.pop("metadata", {}))
    assert not changes, changes
    return write(root / "cached.eval.yaml", yaml.safe_dump(data, sort_keys=False))


def cache_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_KEY", KEY)
    monkeypatch.setenv("VIBE_SECRET_TOKEN", TOKEN)


@XDIST_MODES
def test_a_second_run_asks_nothing_and_marks_its_answers_cached(
    pytester: pytest.Pytester, secrets: None, xdist: list[str]
) -> None:
    cache = pytester.path / "cache"
    with ChatServer() as server:
        cached_suite(pytester.path, server.url)
        first = pytester.path / "first.json"
        result = run(pytester, "--vibe-cache", cache, "--vibe-results", first, xdist=xdist)
        result.assert_outcomes(passed=3)
        assert len(server.requests) == 4  # three evals and the judge
        assert "Cache: 0 answers from cache, 3 asked (cache); llm_judge: 0 answers from cache, 1 asked" in (
            run_summary(result)
        )
        second = pytester.path / "second.json"
        result = run(pytester, f"--vibe-cache={cache}", "--vibe-results", second, xdist=xdist)
        result.assert_outcomes(passed=3)
        assert len(server.requests) == 4  # the judge's verdict came from the cache too
    assert any(
        line.startswith(
            "Cache: 3 answers from cache, 0 asked (cache); llm_judge: 1 answer from cache, 0 asked; "
            "the cached answers' cost and"
        )
        and "$0.0017, not spent again" in line  # the three answers' and the judge's
        for line in run_summary(result)
    ), run_summary(result)
    before, after = evals_by_nodeid(load_json(first)), evals_by_nodeid(load_json(second))
    assert not any(record["cached"] for record in before.values())
    assert all(record["cached"] for record in after.values())
    [judged] = after["cached.eval.yaml::judged[sut]"]["checks"]
    assert judged["judges"][0].pop("cached") is True  # the judge's answer came from the cache too
    assert before["cached.eval.yaml::judged[sut]"]["checks"][0]["judges"][0].pop("cached") is False
    for nodeid, record in after.items():  # the original call's figures, the same checks' verdicts
        for key in ("latency", "cost", "input_tokens", "output_tokens", "checks", "outcome", "judge_cost"):
            assert record[key] == before[nodeid][key], (nodeid, key)
    assert after["cached.eval.yaml::four[sut]"]["cost"] == USAGE["cost"]
    # the secret was in a prompt and in its echo; the key in a header: none is in a cache file
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    files = cache_files(cache)
    assert [f.parent.name for f in files].count("sut") == 3 and len(files) == 4
    text = "".join(f.read_text() for f in files)
    for secret in (KEY, TOKEN, base64.b64encode(TOKEN.encode()).decode()):
        assert secret not in text
    assert "Say [secret]" in text
    # a cached answer holds the masked text: the echo's secret stays masked
    assert after["cached.eval.yaml::token[sut]"]["response"] == "echo: Say [secret]"


CHANGES: dict[str, dict[str, Any]] = {
    "system-prompt": {"metadata": {"system_prompt": "Be verbose."}},
    "configuration-system-prompt": {"sut": {"system_prompt": "You are a pirate."}},
    "temperature": {"http": {"temperature": 0.7}},
    "max-tokens": {"http": {"params": {"max_tokens": 50}}},
    "model": {"sut": {"model": "vendor/nocost"}},
    "header": {"http": {"headers": {"X-Route": "eu"}}},
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_changed_system_prompt_or_parameter_is_a_miss(
    pytester: pytest.Pytester, secrets: None, change: dict[str, Any]
) -> None:
    args = ("--vibe-cache=cache", "--vibe-results", "r.json", "-k", "four")
    with ChatServer() as server:
        cached_suite(pytester.path, server.url)
        run(pytester, *args).assert_outcomes(passed=1)
        cached_suite(pytester.path, server.url, **change)
        run(pytester, *args).assert_outcomes(passed=1)
        assert len(server.requests) == 2, "the changed request was answered from the cache"
        assert not evals_by_nodeid(load_json(pytester.path / "r.json"))["cached.eval.yaml::four[sut]"][
            "cached"
        ]
        run(pytester, *args).assert_outcomes(passed=1)  # and the changed request is cached in turn
        assert len(server.requests) == 2


def test_a_changed_prompt_is_a_miss(pytester: pytest.Pytester, secrets: None) -> None:
    with ChatServer() as server:
        suite = cached_suite(pytester.path, server.url)
        run(pytester, "--vibe-cache=cache", "-k", "four").assert_outcomes(passed=1)
        suite.write_text(suite.read_text().replace("'ANSWER: 4'", "'ANSWER: 4 '"))
        run(pytester, "--vibe-cache=cache", "-k", "four").assert_outcomes(passed=1)
        assert len(server.requests) == 2


@XDIST_MODES
def test_repeats_are_real_calls_never_cached(
    pytester: pytest.Pytester, secrets: None, xdist: list[str]
) -> None:
    with ChatServer() as server:
        cached_suite(pytester.path, server.url)
        run(pytester, "--vibe-cache=cache", "-k", "four").assert_outcomes(passed=1)
        stored = {path: path.read_bytes() for path in cache_files(pytester.path / "cache")}
        result = run(
            pytester, "--vibe-cache=cache", "--vibe-repeat", "3", "-k", "four", "--vibe-results", "r.json",
            xdist=xdist,
        )  # fmt: skip
        result.assert_outcomes(passed=3)
        assert len(server.requests) == 1 + 3
    assert "Cache: not used (with --vibe-repeat 3 every repeat is a real call, never a cached answer)" in (
        run_summary(result)
    )
    assert not any(
        record["cached"] for record in evals_by_nodeid(load_json(pytester.path / "r.json")).values()
    )
    assert {path: path.read_bytes() for path in cache_files(pytester.path / "cache")} == stored


APP = """
import os

def answer(prompt, context):
    with open(os.environ["APP_CALLS"], "a") as calls:
        calls.write(context.eval_id + "\\n")
    return {"response": "{VERSION} " + prompt, "cost": 0.5, "latency": 2.5, "tool_calls": ["lookup"]}
"""


def python_suite(root: Path, version: str = "v1") -> None:
    write(root / "cache_app.py", APP.replace("{VERSION}", version))
    write(
        root / "app.eval.yaml",
        """
        metadata: {name: app, model: m}
        configurations:
          app: {python: "cache_app:answer"}
        evals:
          - {name: a, prompt: alpha, checks: [{match: "*alpha"}, {tool_called: lookup}]}
          - {name: b, prompt: beta, checks: [{match: "*beta"}]}
        """,
    )


@XDIST_MODES
def test_python_callable_answers_are_cached_until_its_module_changes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    calls = pytester.path / "calls.txt"
    monkeypatch.setenv("APP_CALLS", str(calls))
    python_suite(pytester.path)
    args = ("--vibe-cache=cache", "--vibe-results", "r.json", "--vibe-history=")

    def called() -> list[str]:
        return sorted(calls.read_text().split()) if calls.exists() else []

    run(pytester, *args, xdist=xdist).assert_outcomes(passed=2)
    assert called() == ["a", "b"]
    run(pytester, *args, "--vibe-html=report.html", xdist=xdist).assert_outcomes(passed=2)
    assert called() == ["a", "b"]
    assert (pytester.path / "report.html").read_text().count(" data-cached") == 2  # both cells say so
    records = evals_by_nodeid(load_json(pytester.path / "r.json"))
    a = records["app.eval.yaml::a[app]"]
    assert a["cached"] and a["response"] == "v1 alpha" and a["cost"] == 0.5 and a["latency"] == 2.5
    assert [call["tool"] for call in a["tool_calls"]] == ["lookup"]
    # the function's module changed (its size too: a module rewritten within the second keeps its
    # mtime, and a bytecode cache of the same size would be taken as current)
    python_suite(pytester.path, "v2.0")
    run(pytester, *args, "--vibe-html=report.html", xdist=xdist).assert_outcomes(passed=2)
    assert called() == ["a", "a", "b", "b"]
    assert " data-cached" not in (pytester.path / "report.html").read_text()
    records = evals_by_nodeid(load_json(pytester.path / "r.json"))
    assert records["app.eval.yaml::a[app]"]["response"] == "v2.0 alpha"
    assert not records["app.eval.yaml::a[app]"]["cached"]


def truncate(entry: Path) -> None:
    entry.write_text(entry.read_text()[:30])


def link_to_dev_zero(entry: Path) -> None:
    entry.unlink()
    entry.symlink_to("/dev/zero")


def wrong_types(entry: Path) -> None:
    entry.write_text(json.dumps({**json.loads(entry.read_text()), "response": 123}))


def negative_retries(entry: Path) -> None:
    entry.write_text(json.dumps({**json.loads(entry.read_text()), "api_retries": -1}))


def another_key(entry: Path) -> None:
    """The entry of another request under this one's name (a copy, a hash prefix collision)."""
    other = next(path for path in entry.parent.glob("*.json") if path != entry)
    entry.write_bytes(other.read_bytes())


SPOILS: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated": (truncate, "is unreadable: "),
    "dev-zero": (
        link_to_dev_zero,
        "is unreadable: cannot read it: not a regular file but a character device",
    ),
    "wrong-types": (wrong_types, "is not a stored answer: `response` must be text, not 123"),
    "negative-retries": (
        negative_retries,
        "is not a stored answer: `api_retries` must be a whole number (0 or more) or null, not -1",
    ),
    "another-key": (another_key, "is not this request's (its key differs)"),
}


@pytest.mark.parametrize(("spoil", "problem"), SPOILS.values(), ids=SPOILS.keys())
@XDIST_MODES
def test_a_spoiled_entry_is_a_miss_with_a_warning(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    xdist: list[str],
    spoil: Callable[[Path], None],
    problem: str,
) -> None:
    calls = pytester.path / "calls.txt"
    monkeypatch.setenv("APP_CALLS", str(calls))
    python_suite(pytester.path)
    args = ("--vibe-cache=cache", "--vibe-results", "r.json", "--vibe-history=", "-W", "always")
    run(pytester, *args).assert_outcomes(passed=2)
    records = load_json(pytester.path / "r.json")["runs"][0]["evals"]
    assert [record["name"] for record in records] == ["a", "b"]
    entries = cache_files(pytester.path / "cache")
    (entry,) = [path for path in entries if "alpha" in path.read_text()]
    spoil(entry)
    result = run(pytester, *args, xdist=xdist)
    result.assert_outcomes(passed=2)
    output = result.stdout.str()
    assert f"cached answer {entry} {problem}" in output, output
    assert "asked again" in output and "Traceback" not in output and "MemoryError" not in output
    assert sorted(calls.read_text().split()) == ["a", "a", "b"]  # only the spoiled one asked again
    records = evals_by_nodeid(load_json(pytester.path / "r.json"))
    assert records["app.eval.yaml::a[app]"]["response"] == "v1 alpha"
    assert not records["app.eval.yaml::a[app]"]["cached"] and records["app.eval.yaml::b[app]"]["cached"]
    assert not entry.is_symlink() and json.loads(entry.read_text())["response"] == "v1 alpha"  # replaced


@XDIST_MODES
def test_an_agent_cli_is_never_cached_and_says_so(pytester: pytest.Pytester, xdist: list[str]) -> None:
    calls = pytester.path / "calls.txt"
    script = agent(
        pytester.path,
        "echo_agent.py",
        f"""
        import sys
        with open({str(calls)!r}, "a") as handle:
            handle.write("call\\n")
        print("echo " + sys.argv[1])
        """,
    )
    write(
        pytester.path / "cli.eval.yaml",
        f"""
        metadata: {{name: cli, model: m}}
        configurations:
          echo: {{cli: {PYTHON}, args: [{script}, "${{PROMPT}}"]}}
        evals:
          - {{name: hi, prompt: hello, checks: [{{contains: "echo hello"}}]}}
        """,
    )
    for _ in range(2):
        result = run(pytester, "--vibe-cache=cache", "--vibe-results", "r.json", "-W", "always", xdist=xdist)
        result.assert_outcomes(passed=1)
    assert calls.read_text().split() == ["call", "call"]
    output = result.stdout.str()
    assert "--vibe-cache: configuration 'echo' runs an agent CLI; its answers are not cached" in output
    assert "Cache: 0 answers from cache, 1 asked (cache)" in run_summary(result)
    assert not cache_files(pytester.path / "cache")


def test_the_option_alone_uses_the_rootdir_cache_and_refuses_a_folder_of_other_files(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_CALLS", str(pytester.path / "calls.txt"))
    python_suite(pytester.path / "suites")
    pytester.makeini("[pytest]\n")
    # `pytest --vibe-cache suites` would take `suites` as the cache's folder: refused, saying why
    result = run(pytester, "--vibe-cache", "suites")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--vibe-cache: *suites holds files but is no response cache (it has no CACHEDIR.TAG)*=DIR*"]
    )
    run(pytester, "suites", "--vibe-cache", "--vibe-history=").assert_outcomes(passed=2)
    default = pytester.path / ".vibeeval" / "cache"
    assert len(cache_files(default)) == 2 and (default / "CACHEDIR.TAG").is_file()
    # the ini value, relative to the rootdir; `--vibe-cache=` turns it off
    pytester.makeini("[pytest]\nvibe_cache = answers\n")
    sub = pytester.path / "suites"
    monkeypatch.chdir(sub)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--vibe-history=")
    result.assert_outcomes(passed=2)
    assert len(cache_files(pytester.path / "answers")) == 2
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--vibe-history=", "--vibe-cache=")
    result.assert_outcomes(passed=2)
    assert not any(line.startswith("Cache:") for line in run_summary(result))
    afile = write(pytester.path / "afile", "x")
    result = run(pytester, f"--vibe-cache={afile}")
    result.stderr.fnmatch_lines(["*--vibe-cache: *afile is not a folder*"])


def test_replay_leaves_the_cache_unused_and_record_stores_cached_answers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_CALLS", str(pytester.path / "calls.txt"))
    python_suite(pytester.path)
    run(pytester, "--vibe-cache=cache", "--vibe-history=").assert_outcomes(passed=2)
    # a run from the cache records its answers like any other: the store can then replay them
    run(pytester, "--vibe-cache=cache", "--vibe-record", "store", "--vibe-history=").assert_outcomes(passed=2)
    assert len((pytester.path / "calls.txt").read_text().split()) == 2
    result = run(pytester, "--vibe-cache=cache", "--vibe-replay", "store", "--vibe-history=")
    result.assert_outcomes(passed=2)
    assert "Cache: not used (--vibe-replay answers every prompt from its store already)" in run_summary(
        result
    )


@XDIST_MODES
def test_a_judge_answer_that_is_no_verdict_is_not_kept_so_the_next_run_asks_again(
    pytester: pytest.Pytester, secrets: None, xdist: list[str]
) -> None:
    with ChatServer() as server:
        suite = cached_suite(pytester.path, server.url)
        data = yaml.safe_load(suite.read_text())
        data["configurations"]["grader"]["model"] = "vendor/judge-flaky"  # a sentence, then a verdict
        write(suite, yaml.safe_dump(data, sort_keys=False))

        def judge_asked() -> int:
            return sum(r["body"]["model"] == "vendor/judge-flaky" for r in server.requests)

        results = pytester.path / "results.json"
        run(pytester, "--vibe-cache=cache", "--vibe-results", results, xdist=xdist).assert_outcomes(
            passed=2, failed=1
        )
        judged = evals_by_nodeid(load_json(results))["cached.eval.yaml::judged[sut]"]
        assert judged["outcome"] == "error" and "did not answer a JSON verdict" in judged["message"]
        assert cache_files(pytester.path / "cache" / "grader") == []  # the sentence was not kept
        result = run(pytester, "--vibe-cache=cache", "--vibe-results", results, xdist=xdist)
        result.assert_outcomes(passed=3)
        assert judge_asked() == 2  # asked again: its sentence was not kept
        shown = " ".join(run_summary(result))
        assert (
            "Cache: 3 answers from cache, 0 asked (cache); llm_judge: 0 answers from cache, 1 asked" in shown
        )
        result = run(pytester, "--vibe-cache=cache", "--vibe-results", results, xdist=xdist)
        result.assert_outcomes(passed=3)
        assert judge_asked() == 2  # its verdict was kept
    [judge] = evals_by_nodeid(load_json(results))["cached.eval.yaml::judged[sut]"]["checks"][0]["judges"]
    assert judge["cached"] is True
    [line] = [line for line in run_summary(result) if line.startswith("Cache:")]
    assert line.startswith("Cache: 3 answers from cache, 0 asked (cache); llm_judge: 1 answer from cache, 0")
    assert "($0.0017, not spent again)" in line  # the judge's cost is said not spent again too


class ScriptedJudge:
    """A cacheable provider answering its texts in turn, keeping the requests it was asked."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.requests: list[PromptRequest] = []

    def unavailable_reason(self) -> str | None:
        return None

    def cache_material(self, request: PromptRequest) -> dict[str, Any]:
        return {"same": True}

    def answer(self, request: PromptRequest) -> ProviderResponse:
        self.requests.append(request)
        return ProviderResponse(self.texts.pop(0), cost=0.5)


def test_a_cached_judge_answer_that_is_no_verdict_errors_once_saying_so_and_is_dropped(
    tmp_path: Path,
) -> None:
    """A cache written before such answers were dropped: the judge errors saying where the answer
    came from, and the entry goes, so the next run asks."""
    cache = ResponseCache(tmp_path / "cache", Redactor())
    asked = ScriptedJudge('{"pass": true, "reason": "fine"}')  # the request the judge sends
    Judge(asked, "grader", "m", "prompt", "s", "e", tmp_path).decide(JudgeArgs(criteria="c"), "response")
    CachingProvider(ScriptedJudge("Looks fine to me."), cache, "grader", None).answer(asked.requests[0])
    provider = CachingProvider(ScriptedJudge('{"pass": true, "reason": "fine"}'), cache, "grader", None)
    judge = Judge(provider, "grader", "m", "prompt", "s", "e", tmp_path)
    with pytest.raises(JudgeError, match="did not answer a JSON verdict") as raised:
        judge.decide(JudgeArgs(criteria="c"), "response")
    assert str(raised.value).endswith(FROM_CACHE)
    assert cache_files(tmp_path / "cache") == []
    verdict = judge.decide(JudgeArgs(criteria="c"), "response")
    assert verdict.passed is True and verdict.judges[0].cached is False
    verdict = judge.decide(JudgeArgs(criteria="c"), "response")  # now from the cache
    assert verdict.passed is True and verdict.judges[0].cached is True


def test_cached_costs_are_not_spent_again_under_a_budget(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_CALLS", str(pytester.path / "calls.txt"))
    python_suite(pytester.path)  # each answer reports $0.50
    run(pytester, "--vibe-cache=cache", "--vibe-history=").assert_outcomes(passed=2)
    result = run(pytester, "--vibe-cache=cache", "--vibe-max-cost", "0.4", "--vibe-history=")
    result.assert_outcomes(passed=2)  # nothing was spent: both started
    assert "Budget: $0.0000 spent of $0.4 (--vibe-max-cost; evals and their llm_judge judges)" in (
        run_summary(result)
    )
    assert os.path.getsize(pytester.path / "calls.txt") == len("a\nb\n")


def test_workers_storing_the_same_answer_at_once_leave_one_whole_entry(
    pytester: pytest.Pytester, secrets: None
) -> None:
    evals = [{"name": f"same-{i}", "prompt": "ANSWER: 4", "checks": [{"equals": "4"}]} for i in range(6)]
    with ChatServer() as server:
        suite = cached_suite(pytester.path, server.url)
        data = yaml.safe_load(suite.read_text())
        write(suite, yaml.safe_dump({**data, "evals": evals, "judge": None}, sort_keys=False))
        run(pytester, "--vibe-cache=cache", xdist=["-n", "2"]).assert_outcomes(passed=6)
        asked = len(server.requests)
        assert 1 <= asked <= 6  # workers that missed at the same time both asked
        result = run(pytester, "--vibe-cache=cache", xdist=["-n", "2"])
        result.assert_outcomes(passed=6)
        assert len(server.requests) == asked
    assert "Cache: 6 answers from cache, 0 asked (cache)" in " ".join(run_summary(result))
    (entry,) = cache_files(pytester.path / "cache")
    assert json.loads(entry.read_text())["response"] == "4"
    assert sorted(p.name for p in (pytester.path / "cache").rglob("*")) == sorted(
        ["CACHEDIR.TAG", "sut", entry.name]
    )  # no temporary file left behind


def test_a_cache_that_cannot_be_written_is_a_warning_not_a_failure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_CALLS", str(pytester.path / "calls.txt"))
    python_suite(pytester.path)
    write(pytester.path / "cache" / "CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n")
    write(pytester.path / "cache" / "app", "a file where the configuration's folder goes")
    result = run(pytester, "--vibe-cache=cache", "--vibe-history=", "--vibe-results", "r.json")
    result.assert_outcomes(passed=2)
    assert f"answer not cached in {pytester.path / 'cache' / 'app'}" in result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_the_cache_line_counts_the_judges_of_every_attempt() -> None:
    """A rerun eval's judges: the first attempt asked its judge, the rerun got both answers from the
    cache; the line counts both attempts' judges (it counted the last attempt's only)."""
    from pytest_vibeeval.cache import summary_lines
    from pytest_vibeeval.results import CheckRecord, EvalRecord, JudgeRecord
    from pytest_vibeeval.scoring.attempts import EarlierAttempts

    def attempt(cached: bool) -> EvalRecord:
        judge = JudgeRecord(
            model=None, system_prompt="s", prompt="p", passed=False, reasoning="r", cost=0.001, cached=cached
        )
        check = CheckRecord(type="llm_judge", passed=False, message="no", judges=[judge])
        return EvalRecord(
            name="e", nodeid="x::e[app]", outcome="failed", cost=0.01, cached=cached, checks=[check]
        )

    earlier = EarlierAttempts()
    earlier.add(attempt(cached=False))
    folded = earlier.folded(attempt(cached=True))
    assert summary_lines([folded], "cache", None) == [
        "Cache: 1 answer from cache, 1 asked (cache); llm_judge: 1 answer from cache, 1 asked; the cached "
        "answers' cost and latency are their original calls' ($0.0110, not spent again)"
    ]
