"""The OpenAI-compatible HTTP provider against a real chat-completions server on 127.0.0.1."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from chat_server import USAGE, ChatServer
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, run_of, run_summary, write

from pytest_vibeeval.models import Configuration, Pricing
from pytest_vibeeval.pricing import cost_of
from pytest_vibeeval.providers import PromptRequest, ProviderError
from pytest_vibeeval.providers.http import HttpProvider, backoff_seconds, retry_after_seconds

KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as chat:
        yield chat


def request(prompt: str = "hello", model: str = "suite/ok", system: str | None = None) -> PromptRequest:
    return PromptRequest(prompt, model, system, "suite", "e", "c", Path("."))


def provider(
    server_url: str | None, sleeps: list[float] | None = None, lock_dir: Path | None = None, **http: Any
) -> HttpProvider:
    spec: dict[str, Any] = {"http": {"base_url": server_url, **http}} if server_url else {"http": http}
    secrets: set[str] = set()
    recorded = sleeps if sleeps is not None else []
    return HttpProvider("c", Configuration.model_validate(spec), secrets, lock_dir, recorded.append)


def test_an_answer_with_usage_and_cost(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", KEY)
    http = provider(server.url, api_key_env="MY_KEY", temperature=0.2, params={"max_tokens": 64})
    response = http.answer(request("What is 2+2?", system="Be brief."))
    assert response.text == "echo: What is 2+2?"
    assert (response.input_tokens, response.output_tokens, response.cost) == (12, 5, USAGE["cost"])
    sent = server.requests[0]
    assert sent["body"] == {
        "model": "suite/ok",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}],
        "temperature": 0.2,
        "max_tokens": 64,
    }  # no OpenRouter-only `usage` field for another server
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
    assert KEY in http.secrets  # so that every output redacts it


def test_usage_without_cost_leaves_cost_unknown(server: ChatServer) -> None:
    response = provider(server.url).answer(request(model="m/nocost"))
    assert response.cost is None and response.output_tokens == 5


def test_429_waits_for_retry_after(server: ChatServer) -> None:
    sleeps: list[float] = []
    response = provider(server.url, sleeps).answer(request(model="m/ratelimit"))
    assert response.text == "echo: hello"
    assert sleeps == [1.0]  # the server's Retry-After, not the backoff
    assert len(server.requests) == 2


@pytest.mark.parametrize("value", ["NaN", "inf", "-5", "-inf"])
def test_a_retry_after_that_is_no_wait_is_treated_as_absent(server: ChatServer, value: str) -> None:
    """``time.sleep(nan)`` raised ValueError out of the provider: such a value is no wait at all,
    so the backoff applies."""
    assert retry_after_seconds(value) is None
    sleeps: list[float] = []
    response = provider(server.url, sleeps).answer(request(f"RETRY_AFTER: {value}\nANSWER: 4", "m/ratelimit"))
    assert response.text == "4"
    assert len(sleeps) == 1 and 0.25 <= sleeps[0] <= 0.5  # the backoff of attempt 0


def test_a_retry_after_longer_than_the_cap_errors_at_once(server: ChatServer) -> None:
    """Waiting 100000 s would outlast every limit of the eval (its backstop killed it, saying
    nothing of the rate limit): the eval errors at once, naming the wait."""
    sleeps: list[float] = []
    with pytest.raises(ProviderError) as info:
        provider(server.url, sleeps, max_retries=1).answer(request("RETRY_AFTER: 100000", "m/ratelimit"))
    assert info.value.message.startswith(
        "rate limited (429): the server asked to wait 100000 s (Retry-After), more than the 120 s an "
        f"eval waits between attempts, so it was not retried: HTTP 429 from {server.url}/chat/completions"
    ), info.value.message
    assert sleeps == [] and len(server.requests) == 1
    sleeps.clear()
    answered = provider(server.url, sleeps, max_retries=1).answer(request("RETRY_AFTER: 120", "m/ratelimit"))
    assert answered.text.startswith("echo: ") and sleeps == [120.0]  # the cap itself is waited


@XDIST_MODES
def test_a_long_retry_after_is_the_evals_error_not_a_backstop_timeout(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    configurations = {"app": {"http": {"base_url": server.url, "max_retries": 1}, "model": "v/ratelimit"}}
    evals = [{"name": "four", "prompt": "RETRY_AFTER: 100000\nANSWER: 4", "checks": [{"equals": "4"}]}]
    suite(pytester.path, evals, {**configurations, "app": {**configurations["app"], "timeout": 2000}})
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results, xdist=xdist)
    result.assert_outcomes(failed=1)
    [record] = evals_by_nodeid(load_json(results)).values()
    assert record["outcome"] == "error"
    assert record["message"].startswith("rate limited (429): the server asked to wait 100000 s"), record
    assert "BackstopTimeout" not in result.stdout.str()


def test_500_then_success_backs_off(server: ChatServer) -> None:
    sleeps: list[float] = []
    response = provider(server.url, sleeps).answer(request(model="m/flaky"))
    assert response.text == "echo: hello"
    assert len(sleeps) == 1 and 0.25 <= sleeps[0] <= 0.5  # attempt 0: half to all of 0.5 s


def test_retries_are_bounded(server: ChatServer) -> None:
    sleeps: list[float] = []
    with pytest.raises(ProviderError) as info:
        provider(server.url, sleeps, max_retries=2).answer(request(model="m/down"))
    assert info.value.message.startswith(f"HTTP 503 from {server.url}/chat/completions: upstream hiccup")
    assert info.value.message.endswith("(gave up after 3 attempts)")
    assert len(server.requests) == 3 and len(sleeps) == 2


def test_401_is_not_retried_and_names_the_key_variable(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", KEY)
    with pytest.raises(ProviderError) as info:
        provider(server.url, api_key_env="MY_KEY").answer(request(model="m/unauthorized"))
    assert "HTTP 401" in info.value.message and "check the key in MY_KEY" in info.value.message
    assert KEY not in info.value.message
    assert len(server.requests) == 1


def test_404_names_the_model(server: ChatServer) -> None:
    with pytest.raises(ProviderError) as info:
        provider(server.url).answer(request(model="m/missing"))
    assert "HTTP 404" in info.value.message and "check the model 'm/missing'" in info.value.message


def test_a_body_that_is_not_json_is_a_clear_error(server: ChatServer) -> None:
    with pytest.raises(ProviderError, match="with a body that is not JSON"):
        provider(server.url).answer(request(model="m/garbage"))


def test_a_slow_server_times_out(server: ChatServer) -> None:
    http = HttpProvider(
        "c",
        Configuration.model_validate({"http": {"base_url": server.url, "max_retries": 0}, "timeout": 50}),
        set(),
        None,
    )
    with pytest.raises(ProviderError, match=r"no answer from .* within 0.05 s \(gave up after 1 attempt\)"):
        http.answer(request(model="m/slow"))


def test_an_unreachable_server_is_retried_then_reported() -> None:
    sleeps: list[float] = []
    with pytest.raises(ProviderError, match=r"cannot reach http://127\.0\.0\.1:9/v1/chat/completions"):
        provider("http://127.0.0.1:9/v1", sleeps, max_retries=1).answer(request())
    assert len(sleeps) == 1


def test_a_malformed_base_url_is_a_clear_error_without_retries() -> None:
    sleeps: list[float] = []
    with pytest.raises(ProviderError) as info:
        provider("http://[::1", sleeps, max_retries=3).answer(request())
    assert info.value.message == (
        "invalid URL 'http://[::1/chat/completions': Invalid port: ':1'; check `http.base_url`"
    )
    assert sleeps == []  # no retry can mend a URL


def test_retry_after_and_backoff() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after_seconds("99999") == 99999.0  # as asked: _post refuses a wait that long
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0  # passed
    assert retry_after_seconds("soon") is None
    assert [backoff_seconds(a, lambda: 1.0) for a in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert backoff_seconds(3, lambda: 0.0) == 2.0


def test_openrouter_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.delenv("OPENROUTER_BASE_URL", raising=False)
    implicit = HttpProvider("openrouter", None, set(), None)
    assert implicit.base_url == "https://openrouter.ai/api/v1"
    assert implicit.unavailable_reason() == (
        "set OPENROUTER_API_KEY: configuration 'openrouter' calls https://openrouter.ai/api/v1"
    )
    assert implicit.body(request(model="anthropic/claude-3.5-sonnet"))["usage"] == {"include": True}
    monkeypatch.setenv("OPENROUTER_BASE_URL", "http://proxy.internal/api/v1/")
    assert HttpProvider("openrouter", None, set(), None).base_url == "http://proxy.internal/api/v1"
    local = provider("http://127.0.0.1:8000/v1")
    assert local.unavailable_reason() is None  # a local server needs no key unless api_key_env says so


# --------------------------------------------------------------------------- real runs


def suite(root: Path, evals: list[dict[str, Any]], configurations: dict[str, Any] | None = None) -> Path:
    data: dict[str, Any] = {"metadata": {"name": "chat", "model": "vendor/ok"}, "evals": evals}
    if configurations is not None:
        data["configurations"] = configurations
    return write(root / "chat.eval.yaml", yaml.safe_dump(data, sort_keys=False))


@XDIST_MODES
def test_a_suite_without_configurations_runs_through_openrouter_settings(
    pytester: pytest.Pytester, server: ChatServer, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.setenv("OPENROUTER_BASE_URL", server.url)
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    monkeypatch.setenv("VIBE_SECRET_TOKEN", "tok-secret-987654")
    suite(
        pytester.path,
        [
            {"name": "four", "prompt": "ANSWER: 4\ntoken {{secret('token')}}", "checks": [{"equals": "4"}]},
            {"name": "five", "prompt": "ANSWER: 4", "checks": [{"equals": "5"}]},
        ],
    )
    results = pytester.path / "results.json"
    junit = pytester.path / "junit.xml"
    result = run(pytester, "--vibe-results", results, f"--junitxml={junit}", "-rA", xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    data = load_json(results)
    chat = run_of(data, "openrouter")
    assert chat["metrics"]["total_cost"] == pytest.approx(2 * USAGE["cost"])
    record = evals_by_nodeid(data)["chat.eval.yaml::four[openrouter]"]
    assert (record["input_tokens"], record["output_tokens"]) == (12, 5)
    assert all(r["body"]["model"] == "vendor/ok" for r in server.requests)
    assert any("tok-secret-987654" in r["body"]["messages"][-1]["content"] for r in server.requests)
    produced = result.stdout.str() + result.stderr.str()
    for path in pytester.path.rglob("*"):  # results, JUnit, logs, basetemp: every file the run left
        if path.is_file():
            produced += path.read_bytes().decode(errors="replace")
    assert KEY not in produced and "tok-secret-987654" not in produced


def test_without_the_key_the_suite_skips_saying_which_to_set(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    suite(pytester.path, [{"prompt": "hi", "checks": [{"match": "*"}]}])
    result = run(pytester, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*set OPENROUTER_API_KEY: configuration 'openrouter' calls *"])


def test_http_errors_make_the_item_error_with_the_reason(
    pytester: pytest.Pytester, server: ChatServer
) -> None:
    configurations = {
        "gone": {"http": {"base_url": server.url}, "model": "vendor/missing"},
        "bad": {"http": {"base_url": server.url, "max_retries": 0}, "model": "vendor/garbage"},
    }
    suite(pytester.path, [{"name": "q", "prompt": "hi", "checks": [{"match": "*"}]}], configurations)
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results)
    result.assert_outcomes(failed=2)
    records = evals_by_nodeid(load_json(results))
    assert records["chat.eval.yaml::q[gone]"]["outcome"] == "error"
    assert "HTTP 404" in records["chat.eval.yaml::q[gone]"]["message"]
    assert "not JSON" in records["chat.eval.yaml::q[bad]"]["message"]
    assert "Traceback" not in result.stdout.str()


def test_the_concurrency_limit_holds_across_workers(pytester: pytest.Pytester, server: ChatServer) -> None:
    configurations = {
        "one-at-a-time": {"http": {"base_url": server.url, "max_concurrency": 1}, "model": "v/slow"}
    }
    evals = [{"name": f"q{i}", "prompt": f"question {i}", "checks": [{"match": "*"}]} for i in range(4)]
    suite(pytester.path, evals, configurations)
    result = run(pytester, xdist=["-n", "2"])
    result.assert_outcomes(passed=4)
    assert len(server.requests) == 4
    assert server.max_in_flight["v/slow"] == 1  # each request took SLOW_S: never two at once


def test_cost_from_pricing_when_the_server_reports_none(
    pytester: pytest.Pytester, server: ChatServer
) -> None:
    configurations = {
        "priced": {"http": {"base_url": server.url}, "model": "v/nocost", "pricing": {
            "input_per_mtok": 3.0, "output_per_mtok": 15.0}},
        "unpriced": {"http": {"base_url": server.url}, "model": "v/nocost"},
        "reported": {"http": {"base_url": server.url}, "model": "v/ok", "pricing": {
            "input_per_mtok": 1000.0, "output_per_mtok": 1000.0}},
    }  # fmt: skip
    suite(pytester.path, [{"name": "q", "prompt": "hi", "checks": [{"match": "*"}]}], configurations)
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results).assert_outcomes(passed=3)
    records = {r["nodeid"].split("[")[1][:-1]: r for r in evals_by_nodeid(load_json(results)).values()}
    assert records["priced"]["cost"] == pytest.approx((12 * 3.0 + 5 * 15.0) / 1e6)
    assert records["priced"]["cost_source"] == "pricing"
    assert (records["unpriced"]["cost"], records["unpriced"]["cost_source"]) == (None, None)
    assert records["reported"]["cost"] == USAGE["cost"]  # the server's figure wins
    assert records["reported"]["cost_source"] == "reported"


def test_cached_input_tokens_are_priced_at_the_cached_rate_when_one_is_set() -> None:
    plain = Pricing(input_per_mtok=1.25, output_per_mtok=10)
    cheap_cache = Pricing(input_per_mtok=1.25, output_per_mtok=10, cached_input_per_mtok=0.125)
    # codex's events sample: 24 763 input tokens, 24 448 of them cached, 122 output tokens
    assert cost_of(24763, 122, plain, 24448) == pytest.approx((24763 * 1.25 + 122 * 10) / 1e6)
    assert cost_of(24763, 122, cheap_cache, 24448) == pytest.approx(
        ((24763 - 24448) * 1.25 + 24448 * 0.125 + 122 * 10) / 1e6
    )
    assert cost_of(100, 0, cheap_cache, None) == pytest.approx(100 * 1.25 / 1e6)  # none reported
    assert cost_of(100, 0, cheap_cache, 500) == pytest.approx(100 * 0.125 / 1e6)  # never above the input
    assert cost_of(None, 0, cheap_cache, 10) is None
    # cache writes, reported by Anthropic's models only: 1.25 × the input rate, and reads 0.1 ×,
    # unless the pricing sets its own rates
    assert cost_of(1000, 0, plain, 600, 300) == pytest.approx((100 * 1.25 + 600 * 0.125 + 300 * 1.5625) / 1e6)
    assert cost_of(1000, 0, plain, 600, 0) == pytest.approx((400 * 1.25 + 600 * 0.125) / 1e6)
    own = Pricing(input_per_mtok=1.25, output_per_mtok=10, cached_input_per_mtok=0.5, cache_write_per_mtok=2)
    assert cost_of(1000, 0, own, 600, 300) == pytest.approx((100 * 1.25 + 600 * 0.5 + 300 * 2) / 1e6)
    assert cost_of(100, 0, own, 60, 500) == pytest.approx((60 * 0.5 + 40 * 2) / 1e6)  # never above the input


def test_the_shipped_price_table_is_used_for_known_http_models() -> None:
    from pytest_vibeeval.pricing import estimated_cost
    from pytest_vibeeval.providers import ProviderResponse

    response = ProviderResponse("x", None, 1_000_000, 1_000_000)
    http = Configuration.model_validate({"http": {}, "model": "openai/gpt-4o-mini"})
    assert estimated_cost(response, http, "ignored") == (pytest.approx(0.75), "default_pricing")
    assert estimated_cost(response, None, "openai/gpt-4o-mini") == (pytest.approx(0.75), "default_pricing")
    agent = Configuration.model_validate({"cli": "agent", "model": "openai/gpt-4o-mini"})
    assert estimated_cost(response, agent, "x") == (None, None)  # an agent CLI may use other models
    half = ProviderResponse("x", None, 1000, None)
    assert estimated_cost(half, http, "x") == (None, None)  # a partial count gives no cost


@XDIST_MODES
def test_max_cost_stops_starting_evals(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    configurations = {"paid": {"http": {"base_url": server.url}, "model": "v/ok"}}
    evals = [{"name": f"q{i}", "prompt": f"question {i}", "checks": [{"match": "*"}]} for i in range(6)]
    suite(pytester.path, evals, configurations)
    results = pytester.path / "results.json"
    limit = 2 * USAGE["cost"] - 1e-6  # reached after two evals
    result = run(pytester, "--vibe-max-cost", str(limit), "--vibe-results", results, "-rs", xdist=xdist)
    records = list(evals_by_nodeid(load_json(results)).values())
    started = [r for r in records if r["outcome"] == "passed"]
    held = [r for r in records if r["outcome"] == "skipped"]
    # serially exactly two start; two workers may each start one more before seeing the spend
    assert (len(started), len(held)) == (2, 4) if not xdist else 2 <= len(started) <= 3
    assert all("not started: --vibe-max-cost" in r["message"] for r in held)
    assert len(server.requests) == len(started)
    result.stdout.fnmatch_lines(
        [f"Budget: $* spent of ${limit:g} (--vibe-max-cost; *); {len(held)} eval(s) not started"]
    )


@XDIST_MODES
def test_every_server_behaviour_through_real_runs(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    """Each configuration meets one behaviour of the server; the same outcomes serially and on workers."""
    kinds = ("ok", "nocost", "ratelimit", "flaky", "unauthorized", "missing", "garbage", "slow")
    configurations = {
        kind: {"http": {"base_url": server.url, "max_retries": 2}, "model": f"v/{kind}"} for kind in kinds
    }
    suite(
        pytester.path, [{"name": "q", "prompt": "ANSWER: yes", "checks": [{"equals": "yes"}]}], configurations
    )
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, xdist=xdist).assert_outcomes(passed=5, failed=3)
    records = {r["nodeid"].split("[")[1][:-1]: r for r in evals_by_nodeid(load_json(results)).values()}
    for kind in ("ok", "nocost", "ratelimit", "flaky", "slow"):
        assert records[kind]["outcome"] == "passed", records[kind]["message"]
    assert records["ok"]["cost"] == USAGE["cost"] and records["nocost"]["cost"] is None
    assert records["nocost"]["output_tokens"] == 5
    assert "HTTP 401" in records["unauthorized"]["message"]
    assert "HTTP 404" in records["missing"]["message"]
    assert "not JSON" in records["garbage"]["message"]
    assert all(records[k]["outcome"] == "error" for k in ("unauthorized", "missing", "garbage"))
    tries = Counter(r["body"]["model"] for r in server.requests)
    assert (tries["v/ratelimit"], tries["v/flaky"], tries["v/unauthorized"]) == (2, 2, 1)


@XDIST_MODES
def test_a_base_url_template_is_filled_when_the_eval_runs_and_cached_as_written(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    """A conftest.py that starts a model server on a free port exports its address; where a
    request is sent is no part of its answer's key, so the next session's port still finds them."""
    configurations = {
        "local": {"http": {"base_url": "{{var('model_url')}}", "api_key_env": ""}, "model": "v/ok"}
    }
    suite(pytester.path, [{"name": "q", "prompt": "hi", "checks": [{"match": "*"}]}], configurations)
    missing = run(pytester, "-rs", xdist=xdist)
    missing.assert_outcomes(skipped=1)
    missing.stdout.fnmatch_lines(["*configuration 'local': http.base_url: *model_url*"])

    url = server.url
    first = run(pytester, "--vibe-var", f"model_url={url}", "--vibe-cache", xdist=xdist)
    first.assert_outcomes(passed=1)
    assert len(server.requests) == 1
    moved = url.replace("127.0.0.1", "localhost")  # another address of the same server: a new "port"
    second = run(pytester, "--vibe-var", f"model_url={moved}", "--vibe-cache", xdist=xdist)
    second.assert_outcomes(passed=1)
    assert len(server.requests) == 1  # answered from the cache
    assert " from cache, 0 asked (.vibeeval/cache)" in "\n".join(run_summary(second))


def test_a_base_url_without_a_scheme_fails_at_once_without_retries(
    pytester: pytest.Pytester, server: ChatServer
) -> None:
    address = server.url.removeprefix("http://")
    configurations = {"local": {"http": {"base_url": address, "api_key_env": ""}, "model": "v/ok"}}
    suite(pytester.path, [{"name": "q", "prompt": "hi", "checks": [{"match": "*"}]}], configurations)
    result = run(pytester, "--vibe-results", "r.json")
    result.assert_outcomes(failed=1)
    [record] = evals_by_nodeid(load_json(pytester.path / "r.json")).values()
    assert record["message"].startswith(f"invalid URL '{address}/chat/completions': ")
    assert "check `http.base_url`" in record["message"] and "attempts" not in record["message"]
    assert server.requests == []


def test_a_cut_off_answer_is_kept_with_its_finish_reason(server: ChatServer) -> None:
    response = provider(server.url).answer(request(model="m/length"))
    assert (response.text, response.finish_reason) == ("The answer is 4 and th", "length")
    assert provider(server.url).answer(request()).finish_reason is None  # none reported


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        ("refusal", 'the model refused to answer (message.refusal): "I can\'t help with that."'),
        ("filtered", "withheld the answer: its content filter stopped it (finish_reason: content_filter)"),
    ],
)
def test_a_refused_or_filtered_answer_is_an_error_naming_it(
    server: ChatServer, kind: str, problem: str
) -> None:
    """Not an empty answer for the checks to fail on."""
    with pytest.raises(ProviderError) as info:
        provider(server.url).answer(request(model=f"m/{kind}"))
    assert problem in info.value.message, info.value.message


def test_cached_input_tokens_are_read(server: ChatServer) -> None:
    response = provider(server.url).answer(request(model="m/cached"))
    assert (response.input_tokens, response.cached_input_tokens, response.cost) == (12, 8, None)


@XDIST_MODES
def test_what_the_model_reports_of_its_answer_reaches_the_record(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    """A cut-off answer passes its checks with a note; a refusal or a filtered answer is an error
    naming it, its tokens and cost recorded; cached input tokens are priced at cached_input_per_mtok."""
    pricing = {"input_per_mtok": 1.0, "output_per_mtok": 2.0, "cached_input_per_mtok": 0.1}
    configurations = {
        kind: {"http": {"base_url": server.url, "max_retries": 0}, "model": f"v/{kind}", "pricing": pricing}
        for kind in ("length", "refusal", "filtered", "cached")
    }
    suite(pytester.path, [{"name": "q", "prompt": "hi", "checks": [{"match": "*"}]}], configurations)
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, xdist=xdist).assert_outcomes(passed=2, failed=2)
    records = {r["nodeid"].split("[")[1][:-1]: r for r in evals_by_nodeid(load_json(results)).values()}
    cut = records["length"]
    assert (cut["outcome"], cut["finish_reason"], cut["response"]) == (
        "passed",
        "length",
        "The answer is 4 and th",
    )
    assert cut["message"].startswith(
        "note: the answer was cut off at the model's output limit (finish_reason: length)"
    )
    assert records["refusal"]["outcome"] == "error"
    assert records["refusal"]["message"].startswith("the model refused to answer (message.refusal)")
    assert records["filtered"]["outcome"] == "error"
    assert "(finish_reason: content_filter)" in records["filtered"]["message"]
    for kind, reason in (("refusal", "stop"), ("filtered", "content_filter")):  # paid for: counted
        refused = records[kind]
        measures = ("cost", "cost_source", "input_tokens", "output_tokens", "finish_reason")
        assert tuple(refused[key] for key in measures) == (0.00042, "reported", 12, 5, reason), refused
    cached = records["cached"]
    assert cached["cached_input_tokens"] == 8 and cached["cost_source"] == "pricing"
    assert cached["cost"] == pytest.approx(cost_of(12, 5, Pricing(**pricing), 8))
    assert cached["cost"] == pytest.approx((4 * 1.0 + 8 * 0.1 + 5 * 2.0) / 1e6)
