"""Conversation evals (``turns:``): each user message is asked with the conversation so far, its
answer checked on its own; the record keeps every turn; the eval passes when every turn passes
and stops at the first that does not (later turns are ``not_run``). HTTP configurations get the
whole history in the request body (a real server on 127.0.0.1), Python callables in
``context.messages``; CLI configurations that cannot continue a session skip; the response cache
and record/replay key on the conversation so far. Serial and with ``-n 2``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from chat_server import USAGE, ChatServer
from helpers import (
    PYTHON,
    XDIST_MODES,
    agent,
    assert_held_after_two,
    evals_by_nodeid,
    load_json,
    run,
    run_summary,
    write,
)
from mcp_process import TOKEN, McpProcess

import pytest_vibeeval
from pytest_vibeeval.answer_keys import answer_key
from pytest_vibeeval.providers import PromptRequest
from pytest_vibeeval.providers.http import HttpProvider

COST, TOKENS_IN, TOKENS_OUT = 0.001, 10, 3


class MemoryServer(ChatServer):
    """A chat model that answers from the whole conversation: ``heard: <every user message, in
    order, joined by |>`` (or the last message's ``ANSWER: <text>``), with fixed usage."""

    def handle(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        messages = body.get("messages", [])
        with self.lock:
            self.requests.append({"body": body, "headers": dict(handler.headers)})
        said = [m["content"] for m in messages if m.get("role") == "user"]
        last = said[-1] if said else ""
        answer = last[len("ANSWER: ") :] if last.startswith("ANSWER: ") else "heard: " + " | ".join(said)
        usage = {"prompt_tokens": TOKENS_IN, "completion_tokens": TOKENS_OUT, "cost": COST}
        data = {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}],
            "usage": usage,
        }
        self.send_raw(handler, *self.json_reply(200, data))


@pytest.fixture
def server() -> Iterator[MemoryServer]:
    with MemoryServer() as memory:
        yield memory


def suite(root: Path, configurations: dict[str, Any], evals: list[dict[str, Any]], **top: Any) -> Path:
    data = {
        "metadata": {"name": "chat", "model": "vendor/memory", "system_prompt": "Be brief."},
        "evals": evals,
        "configurations": configurations,
        **top,
    }
    return write(root / "chat.eval.yaml", yaml.safe_dump(data, sort_keys=False))


REMEMBER = {
    "name": "remember",
    "turns": [
        {"prompt": "My name is Ana.", "checks": [{"contains": "Ana"}]},
        {"prompt": "What is my name?", "checks": [{"match": "*Ana*What is my name?*"}]},
        {"prompt": "Thanks.", "checks": [{"min_tokens": 1}]},
    ],
}
FORGETS = {  # turn 2 fails: turn 3 is not run
    "name": "forgets",
    "turns": [
        {"prompt": "ANSWER: hello", "checks": [{"equals": "hello"}]},
        {"prompt": "ANSWER: I forgot", "checks": [{"contains": "Ana"}, {"max_tokens": 1}]},
        {"prompt": "Never asked", "checks": [{"contains": "x"}]},
    ],
}


def results(
    pytester: pytest.Pytester, xdist: list[str], *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path), "--vibe-history=", *args, xdist=xdist)
    assert path.is_file(), result.stdout.str()
    return result, {r["name"]: r for r in evals_by_nodeid(load_json(path)).values()}


@XDIST_MODES
def test_http_conversation_sends_the_history_and_records_each_turn(
    pytester: pytest.Pytester, server: MemoryServer, xdist: list[str]
) -> None:
    http = {"http": {"base_url": server.url, "temperature": 0}, "model": "vendor/memory"}
    suite(
        pytester.path,
        {"memory": http},
        [REMEMBER, FORGETS],
        score={"formula": "remember * 100 + forgets + remember_cost * 1000"},
    )
    result, by_name = results(pytester, xdist, "--vibe-html", "report.html", "--junitxml", "junit.xml")
    result.assert_outcomes(passed=1, failed=1)

    # The model saw the system prompt once, then the conversation so far, its own answers included.
    bodies = [r["body"]["messages"] for r in server.requests if "Ana" in json.dumps(r["body"])]
    third = next(m for m in bodies if m[-1]["content"] == "Thanks.")
    assert third == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "My name is Ana."},
        {"role": "assistant", "content": "heard: My name is Ana."},
        {"role": "user", "content": "What is my name?"},
        {"role": "assistant", "content": "heard: My name is Ana. | What is my name?"},
        {"role": "user", "content": "Thanks."},
    ]
    assert all(r["body"]["temperature"] == 0 for r in server.requests)

    remember = by_name["remember"]
    assert remember["outcome"] == "passed"
    turns = remember["turns"]
    assert [(t["turn"], t["outcome"], t["prompt"]) for t in turns] == [
        (1, "passed", "My name is Ana."),
        (2, "passed", "What is my name?"),
        (3, "passed", "Thanks."),
    ]
    assert turns[1]["response"] == "heard: My name is Ana. | What is my name?"
    assert [len(t["checks"]) for t in turns] == [1, 1, 1] and len(remember["checks"]) == 3
    # The eval's measures are the sums of its turns'; its response the last answer.
    assert remember["cost"] == pytest.approx(3 * COST) and remember["cost_source"] == "reported"
    assert (remember["input_tokens"], remember["output_tokens"]) == (3 * TOKENS_IN, 3 * TOKENS_OUT)
    assert remember["latency"] == pytest.approx(sum(t["latency"] for t in turns))
    assert remember["response"] == turns[2]["response"]

    forgets = by_name["forgets"]
    assert forgets["outcome"] == "failed"
    assert [t["outcome"] for t in forgets["turns"]] == ["passed", "failed", "not_run"]
    assert forgets["turns"][2]["response"] is None and forgets["turns"][2]["checks"] == []
    assert forgets["turns"][1]["message"] == "contains: response does not contain 'Ana' (case-insensitive)"
    assert forgets["message"].startswith("turn 2/3: contains: response does not contain 'Ana'")
    assert "turn 3 (not run): Never asked" in forgets["message"]
    assert forgets["cost"] == pytest.approx(2 * COST)
    assert not any("Never asked" in json.dumps(r["body"]) for r in server.requests)

    # The score reads the eval variables from the summed record: 1 * 100 + 0 + 0.003 * 1000.
    run_record = load_json(pytester.path / "results.json")["runs"][0]
    assert run_record["score"] == pytest.approx(103.0)
    output = result.stdout.str()
    assert "FAILED chat.eval.yaml::forgets[memory] - Failed: turn 2/3: contains:" in output
    assert any("FAILED forgets: turn 2/3: contains: response does not contain 'Ana'" in line
               for line in run_summary(result))  # fmt: skip
    html = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert "turn 2/3: contains: response does not contain" in html
    assert "user: ANSWER: I forgot" in html and "turn 3 (not run)" in html
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert 'forgets[memory].failed_turn" value="2"' in junit
    assert 'remember[memory].turns_passed" value="3"' in junit


CALLABLE = """
def chat(prompt, context):
    said = [m["content"] for m in context.messages if m["role"] == "user"]
    assert context.messages[-1] == {"role": "user", "content": prompt}
    assert context.turn == len(said)
    if prompt.startswith("Crash"):
        raise RuntimeError("the app fell over")
    return {"response": f"turn {context.turn}: " + " | ".join(said), "cost": 0.5, "input_tokens": 2}


def single(prompt):
    return "single: " + prompt


def judge(prompt):  # passes when it was shown the whole conversation
    seen = "[user]\\nI live in" in prompt and "[assistant]\\nturn 1:" in prompt
    return '{"pass": %s, "reason": "saw %s"}' % ("true" if seen else "false", "all" if seen else "part")
"""


@XDIST_MODES
def test_python_callable_gets_the_messages_and_single_prompt_callables_still_work(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(pytester.path / "chat_app.py", CALLABLE)
    evals = [
        {
            "name": "rows",
            "turns": [
                {"prompt": "I live in {{row.city}}."},  # no checks: it sets the conversation up
                {
                    "prompt": "Where do I live?",
                    "checks": [
                        {"contains": "{{row.city}}"},
                        {"contains": "turn 2"},
                        {"llm_judge": {"criteria": "It remembers the city."}},
                    ],
                },
            ],
            "rows": [{"id": "oslo", "city": "Oslo"}, {"id": "rome", "city": "Rome"}],
        },
        {
            "name": "crashes",
            "turns": [
                {"prompt": "Hello", "checks": [{"contains": "Hello"}]},
                {"prompt": "Crash now", "checks": [{"contains": "x"}]},
                {"prompt": "After", "checks": [{"contains": "x"}]},
            ],
        },
        {"name": "plain", "prompt": "hi", "checks": [{"equals": "single: hi"}]},
    ]
    suite(
        pytester.path,
        {"app": {"python": "chat_app:chat"}, "grader": {"python": "chat_app:judge"}},
        evals[:2],
        judge="grader",
        default_configurations=["app"],
    )
    write(
        pytester.path / "single.eval.yaml",
        yaml.safe_dump(
            {
                "metadata": {"name": "single", "model": "m"},
                "evals": evals[2:],
                "configurations": {"one": {"python": "chat_app:single"}},
            }
        ),
    )
    result, by_name = results(pytester, xdist, "-k", "rows or crashes or plain")
    result.assert_outcomes(passed=3, errors=0, failed=1)
    oslo = by_name["rows[oslo]"]
    assert oslo["outcome"] == "passed", oslo["message"]
    assert oslo["turns"][0]["checks"] == [] and oslo["turns"][0]["prompt"] == "I live in Oslo."
    assert oslo["turns"][1]["response"] == "turn 2: I live in Oslo. | Where do I live?"
    # An llm_judge of a later turn is shown the conversation so far.
    [judged] = oslo["turns"][1]["checks"][2]["judges"]
    assert judged["passed"] and "[user]\nWhere do I live?" in judged["prompt"]
    assert oslo["cost"] == 1.0 and oslo["input_tokens"] == 4 and oslo["output_tokens"] is None
    assert by_name["rows[rome]"]["outcome"] == "passed"
    crashed = by_name["crashes"]
    assert crashed["outcome"] == "error"
    assert [t["outcome"] for t in crashed["turns"]] == ["passed", "error", "not_run"]
    assert crashed["message"].startswith("turn 2/3: chat_app:chat raised RuntimeError: the app fell over")
    assert crashed["cost"] == 0.5  # the first turn's
    assert by_name["plain"]["outcome"] == "passed" and by_name["plain"]["turns"] == []


def test_cli_configurations_that_cannot_continue_a_session_skip_with_the_reason(
    pytester: pytest.Pytester,
) -> None:
    script = agent(pytester.path, "echo_agent.py", "import sys\nprint(sys.stdin.read())\n")
    suite(pytester.path, {"echo": {"cli": PYTHON, "args": [script]}}, [REMEMBER])
    result, by_name = results(pytester, [], "-rs")
    result.assert_outcomes(skipped=1)
    message = by_name["remember"]["message"]
    assert message.startswith(
        "configuration 'echo' cannot continue a conversation: a `cli:` configuration runs one prompt "
        "per process and has no way to continue its session (the presets that can: claude-code, codex;"
    )
    assert "cannot continue a conversation" in result.stdout.str()


@pytest.mark.parametrize(
    ("eval_yaml", "line", "message"),
    [
        ("    prompt: Hi\n    turns: [{prompt: Hello}]\n", 3, "`prompt` and `turns` exclude each other"),
        ("    turns: []\n", 3, "`turns` is empty; give at least one"),
        (
            "    turns:\n      - checks: [{contains: a}]\n",
            5,
            "evals[0].turns[0]: missing required key 'prompt'",
        ),
        (
            "    turns: [{prompt: Hi}]\n    checks: [{contains: a}]\n",
            3,
            "a conversation's checks go under each turn",
        ),
        (
            "    turns:\n      - prompt: Hi\n        checks: [{contain: a}]\n",
            6,
            "evals[0].turns[0].checks[0]: unknown check 'contain'",
        ),
        (
            "    turns:\n      - prompt: Hi {{row.x}}\n        checks: [{contains: a}]\n",
            5,
            "{{row.x}} has no row here",
        ),
        ("    turns:\n      - prompt: Hi\n      - prompt: And?\n", 3, "no turn has `checks`"),
    ],
    ids=[
        "prompt-and-turns",
        "empty",
        "no-prompt",
        "eval-checks",
        "bad-check",
        "row-without-rows",
        "no-checks",
    ],
)
def test_bad_turns_are_collection_errors_with_file_and_line(
    pytester: pytest.Pytester, eval_yaml: str, line: int, message: str
) -> None:
    (pytester.path / "bad.eval.yaml").write_text(
        "metadata: {name: bad, model: m}\nevals:\n  - name: chat\n" + eval_yaml, encoding="utf-8"
    )
    result = run(pytester)
    output = result.stdout.str()
    assert f"bad.eval.yaml:{line}: " in output and message in output, output
    assert "Traceback" not in output


@XDIST_MODES
def test_cache_and_replay_key_on_the_conversation_so_far(
    pytester: pytest.Pytester, server: MemoryServer, xdist: list[str]
) -> None:
    http = {"http": {"base_url": server.url}, "model": "vendor/memory"}
    suite(pytester.path, {"memory": http}, [REMEMBER])
    args = ("--vibe-cache=cache", "--vibe-record=store")
    results(pytester, xdist, *args)[0].assert_outcomes(passed=1)
    asked = len(server.requests)
    assert asked == 3
    result, by_name = results(pytester, xdist, "--vibe-cache=cache")
    result.assert_outcomes(passed=1)
    assert len(server.requests) == asked  # every turn from the cache
    assert by_name["remember"]["cached"] and all(t["cached"] for t in by_name["remember"]["turns"])

    # A changed first turn: the later turns, whose prompts did not change, are asked again too.
    changed = {**REMEMBER, "turns": [{"prompt": "My name is Ana!", "checks": [{"contains": "Ana"}]},
                                     *REMEMBER["turns"][1:]]}  # fmt: skip
    suite(pytester.path, {"memory": http}, [changed])
    result, by_name = results(pytester, xdist, "--vibe-cache=cache")
    result.assert_outcomes(passed=1)
    assert len(server.requests) == asked + 3 and not by_name["remember"]["cached"]

    # The recorded conversation replays offline; the changed one has no recorded first turn.
    suite(pytester.path, {"memory": http}, [REMEMBER])
    result, by_name = results(pytester, xdist, "--vibe-replay=store")
    result.assert_outcomes(passed=1)
    assert len(server.requests) == asked + 3
    stored = [load_json(path) for path in (pytester.path / "store" / "memory").glob("*.json")]
    # each turn's answer, filed once
    assert sorted(len(entry.get("history", [])) for entry in stored) == [0, 2, 4]
    suite(pytester.path, {"memory": http}, [changed])
    result, by_name = results(pytester, xdist, "--vibe-replay=store")
    result.assert_outcomes(errors=0, failed=1)
    assert by_name["remember"]["message"].startswith(
        "turn 1/3: no recorded answer for turn 1 of a conversation, configuration 'memory'"
    )


def test_keys_change_with_an_earlier_answer() -> None:
    request = PromptRequest("What is my name?", "m", "Be brief.", "chat", "remember", "memory", Path("."))
    first = (("user", "My name is Ana."), ("assistant", "Hello Ana."))
    other = (("user", "My name is Ana."), ("assistant", "Hello Bo."))
    provider = HttpProvider("memory", None, set(), None)
    keys = [
        answer_key(
            provider, "memory", "m", PromptRequest(**{**vars(request), "turn": turn, "history": history})
        )
        for turn, history in ((0, ()), (2, first), (2, other))
    ]
    # the request's part too: a `replay:` configuration, which knows no more, tells them apart
    assert len({key.request for key in keys}) == len({key.sent for key in keys}) == 3
    # A single prompt's body is what it was before conversations existed.
    assert provider.body(request)["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is my name?"},
    ]


@XDIST_MODES
def test_the_mcp_tool_loop_gets_the_history_too(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """The scripted ``tools`` model follows the ``CALL:`` lines of the conversation's first user
    message: turn 2 calls the tool again only because turn 1's message came along."""
    server = McpProcess("streamable-http")
    try:
        with ChatServer() as chat:
            suite(
                pytester.path,
                {"model": {"http": {"base_url": chat.url}, "model": "scripted/tools"}},
                [
                    {
                        "name": "tracker",
                        "turns": [
                            {
                                "prompt": 'List the issues.\nCALL: list_issues {"team": "ENG"}',
                                "checks": [{"tool_called": "mcp__tracker__list_issues"}],
                            },
                            {
                                "prompt": "Once more, please.",
                                "checks": [
                                    {"tool_called": "mcp__tracker__list_issues"},
                                    {"match": "*ENG-1*"},
                                ],
                            },
                        ],
                    }
                ],
            )
            data = yaml.safe_load((pytester.path / "chat.eval.yaml").read_text(encoding="utf-8"))
            data["metadata"]["mcp_server"] = {
                "url": server.url,
                "name": "tracker",
                "authorization_token": TOKEN,
            }
            write(pytester.path / "chat.eval.yaml", yaml.safe_dump(data, sort_keys=False))
            result, by_name = results(pytester, xdist)
            result.assert_outcomes(passed=1)
            turns = by_name["tracker"]["turns"]
            assert [[call["tool"] for call in turn["tool_calls"]] for turn in turns] == [
                ["mcp__tracker__list_issues"],
                ["mcp__tracker__list_issues"],
            ]
            assert len(by_name["tracker"]["tool_calls"]) == 2
            second = [
                r["body"]["messages"]
                for r in chat.requests
                if r["body"]["messages"][-1]["content"] == "Once more, please."
            ]
            assert [m["role"] for m in second[0]] == ["system", "user", "assistant", "user"]
            assert second[0][2]["content"].startswith("tools said: ENG-1")
    finally:
        server.stop()


def test_the_shipped_suite_schema_agrees_on_turns() -> None:
    """Editors validate with the shipped schema: it accepts what the loader accepts and rejects
    the conversations the loader rejects."""
    schema = json.loads((Path(pytest_vibeeval.__file__).parent / "schemas" / "suite.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)

    def valid(eval_spec: dict[str, Any]) -> bool:
        return validator.is_valid({"metadata": {"name": "s", "model": "m"}, "evals": [eval_spec]})

    assert valid({"turns": [{"prompt": "Hi"}, {"prompt": "And?", "checks": [{"contains": "a"}]}]})
    assert valid({"turns": [{"prompt": "Hi {{row.x}}", "checks": [{"contains": "a"}]}], "rows": [{"x": 1}]})
    assert not valid({"turns": [{"prompt": "Hi"}, {"prompt": "And?"}]})  # it would pass whatever
    assert not valid({"prompt": "Hi", "turns": [{"prompt": "Hello"}]})
    assert not valid({"turns": []})
    assert not valid({"turns": [{"checks": [{"contains": "a"}]}]})
    assert not valid({"turns": [{"prompt": "Hi"}], "checks": [{"contains": "a"}]})
    assert not valid({"turns": [{"prompt": "Hi", "checks": [{"contain": "a"}]}]})
    assert not valid({"turns": [{"prompt": "Hi"}], "workspace": "w", "grading": "g"})
    assert not valid({"name": "plain"})  # neither prompt nor turns


@XDIST_MODES
def test_a_refused_turn_counts_what_it_cost(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """A turn the model refused, or its content filter withheld, was paid for: the turn's record has
    its tokens, cost and finish_reason, the eval's totals add them and --vibe-max-cost counts them
    (were refused turns free, four of the six evals would start)."""
    withheld = ("refusal", "filtered")
    evals = [
        {
            "name": f"c{i}",
            "turns": [
                {"prompt": f"hello {i}", "checks": [{"match": "*"}]},
                {"prompt": f"WITHHOLD: {withheld[i % 2]}", "checks": [{"match": "*"}]},
                {"prompt": "Never asked", "checks": [{"match": "*"}]},
            ],
        }
        for i in range(6)
    ]
    each = 2 * USAGE["cost"]  # the answered turn and the refused one
    limit = 2 * each - 1e-6  # reached after two evals
    with ChatServer() as chat:
        suite(
            pytester.path,
            {"model": {"http": {"base_url": chat.url, "max_retries": 0}, "model": "v/ok"}},
            evals,
        )
        result, by_name = results(pytester, xdist, "--vibe-max-cost", str(limit))
    for record in assert_held_after_two(result, list(by_name.values()), each, limit, xdist):
        reason = {"refusal": "stop", "filtered": "content_filter"}[withheld[int(record["name"][1:]) % 2]]
        assert record["outcome"] == "error" and record["message"].startswith("turn 2/3: "), record["message"]
        answered, refused, later = record["turns"]
        assert (answered["outcome"], refused["outcome"], later["outcome"]) == ("passed", "error", "not_run")
        measures = ("cost", "input_tokens", "output_tokens", "finish_reason")
        assert tuple(refused[key] for key in measures) == (USAGE["cost"], 12, 5, reason), refused
        assert refused["response"] is None
        assert (record["cost"], record["cost_source"]) == (pytest.approx(each), "reported")
        assert (record["input_tokens"], record["output_tokens"], record["finish_reason"]) == (24, 10, reason)


@XDIST_MODES
def test_a_refused_turn_after_cached_ones_counts_for_the_budget(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """With --vibe-cache, turn 1 is answered from the cache on the second run and costs nothing now;
    the refused turn 2 is asked again and paid for: the budget counts it (were the eval taken for
    cached as a whole, all six evals would start)."""
    evals = [
        {
            "name": f"c{i}",
            "turns": [
                {"prompt": f"hello {i}", "checks": [{"match": "*"}]},
                {"prompt": "WITHHOLD: refusal", "checks": [{"match": "*"}]},
            ],
        }
        for i in range(6)
    ]
    limit = 2 * USAGE["cost"] - 1e-6  # reached after two evals, each paying for its refused turn
    with ChatServer() as chat:
        suite(
            pytester.path,
            {"model": {"http": {"base_url": chat.url, "max_retries": 0}, "model": "v/ok"}},
            evals,
        )
        results(pytester, xdist, "--vibe-cache")  # fills the cache with every first turn
        result, by_name = results(pytester, xdist, "--vibe-cache", "--vibe-max-cost", str(limit))
    for record in assert_held_after_two(result, list(by_name.values()), USAGE["cost"], limit, xdist):
        answered, refused = record["turns"]
        assert (answered["cached"], refused["cached"]) == (True, False)
        assert record["cached"] is False, record


HALF_PRICED = """
def chat(prompt, context):
    usage = {} if context.turn == 2 else {"cost": 0.5, "input_tokens": 10, "output_tokens": 10}
    return {"response": "fine " + prompt, **usage}
"""


@XDIST_MODES
def test_a_total_over_the_turns_is_unknown_when_a_turn_reported_none(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """Never a partial sum: one turn without a cost makes the eval's cost, and the run's, unknown."""
    write(pytester.path / "half_app.py", HALF_PRICED)
    fine = [{"contains": "fine"}]
    turns = [{"prompt": "hi", "checks": fine}, {"prompt": "again", "checks": fine}]
    evals = [{"name": "conv", "turns": turns}, {"name": "single", "prompt": "yo", "checks": fine}]
    suite(pytester.path, {"app": {"python": "half_app:chat"}}, evals, score={"formula": "total_cost * 100"})
    result, by_name = results(pytester, xdist)
    result.assert_outcomes(passed=2)
    conv = by_name["conv"]
    assert [(t["cost"], t["output_tokens"]) for t in conv["turns"]] == [(0.5, 10), (None, None)]
    assert (conv["cost"], conv["input_tokens"], conv["output_tokens"]) == (None, None, None)
    assert by_name["single"]["cost"] == 0.5
    [run_record] = load_json(pytester.path / "results.json")["runs"]
    assert run_record["metrics"]["total_cost"] is None and run_record["score"] is None
    assert "cost unknown for 1 of 2 evals (conv)" in run_record["score_error"]
    assert "Total Cost: n/a (reported by 1 of 2 evals)" in run_summary(result)


RECORDED_CODEX = Path(__file__).parent / "samples" / "codex" / "recorded"
# Prints what the real codex printed for each turn of a conversation (tests/samples/codex/recorded).
CODEX_TURNS = f"""
import sys
prompt = sys.stdin.read()
turn = 1 if "resume" not in sys.argv else 2 if "BRAVO" in prompt else 3
with open(f"{RECORDED_CODEX}/resume-turn-{{turn}}.jsonl", encoding="utf-8") as handle:
    sys.stdout.write(handle.read())
"""


@XDIST_MODES
def test_codex_running_totals_count_once(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """A resumed codex run reports the session's tokens so far: each turn records its own share
    and the eval the session's total, not a sum of running totals (120 + 240 + 360)."""
    script = agent(pytester.path, "codex_turns.py", CODEX_TURNS)
    codex = {"preset": "codex", "cli": PYTHON, "args": [script, "exec", "--json"]}
    words = ("ALPHA", "BRAVO", "CHARLIE")
    turns = [{"prompt": f"Remember CODEWORD-{word}.", "checks": [{"contains": word}]} for word in words]
    suite(pytester.path, {"codex": codex}, [{"name": "recall", "turns": turns}])
    result, by_name = results(pytester, xdist)
    result.assert_outcomes(passed=1)
    recall = by_name["recall"]
    thread = "01a21afc-32dc-7350-a3ea-be9f9f76fe9d"  # the recorded thread.started's
    assert [step["argv"][-3:] for step in recall["steps"][1:]] == [["resume", thread, "-"]] * 2
    assert [(t["input_tokens"], t["output_tokens"]) for t in recall["turns"]] == [(120, 30)] * 3
    assert (recall["input_tokens"], recall["output_tokens"]) == (360, 90)
    assert [t["cached_input_tokens"] for t in recall["turns"]] == [0, 0, 0]
    assert recall["cached_input_tokens"] == 0
    # each turn's run keeps its own output, which its step's log names
    logs = [Path(step["log"]) for step in recall["steps"]]
    assert [log.name for log in logs] == ["agent.stdout", "agent.turn-2.stdout", "agent.turn-3.stdout"]
    for number, log in enumerate(logs, start=1):
        assert log.read_bytes() == (RECORDED_CODEX / f"resume-turn-{number}.jsonl").read_bytes()


def test_a_turns_tokens_are_its_share_of_running_totals_only_when_they_grew() -> None:
    """codex since 0.155 reports the session's running totals; older versions each turn's own. Input
    tokens grow with every turn of a session (each sends a new prompt), so totals that did not grow
    are the turn's own: equal turns of an older codex must not count 0."""
    from pytest_vibeeval.providers.sessions import turn_tokens

    assert turn_tokens((240, 60, 100), (120, 30, 50)) == (120, 30, 50)
    assert turn_tokens((120, 30, 0), (120, 30, 0)) == (120, 30, 0)
    assert turn_tokens((100, 40, None), (120, 30, 0)) == (100, 40, None)
    assert turn_tokens((120, 30, 0), None) == (None, None, None)
