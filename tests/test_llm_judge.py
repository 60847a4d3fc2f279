"""``llm_judge`` through a judge configuration answering on a real local chat-completions server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from chat_server import USAGE, ChatServer
from helpers import XDIST_MODES, assert_held_after_two, evals_by_nodeid, load_json, run, write

from pytest_vibeeval.judge import JUDGE_SYSTEM_PROMPT, JudgeError, parse_verdict

CRITERIA = "The answer names a European capital."


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as chat:
        yield chat


def judged_suite(root: Path, url: str, judge_model: str, judge: str | None = "grader") -> Path:
    data: dict[str, Any] = {
        "metadata": {"name": "judged", "model": judge_model},  # the default judge's model
        "evals": [
            {"name": "capital", "prompt": "ANSWER: Paris", "checks": [{"llm_judge": {"criteria": CRITERIA}}]},
            {"name": "plain", "prompt": "ANSWER: 4", "checks": [{"equals": "4"}]},
        ],
        "configurations": {
            "sut": {"http": {"base_url": url}, "model": "vendor/ok"},
            "grader": {"http": {"base_url": url}, "model": judge_model},
        },
        "default_configurations": ["sut"],
    }
    if judge is not None:
        data["judge"] = judge
    return write(root / "judged.eval.yaml", yaml.safe_dump(data, sort_keys=False))


def judged_evals(root: Path, url: str, judge_model: str, count: int) -> Path:
    """The judged suite with ``count`` evals, each answered ``ANSWER: <i>`` and judged by an llm_judge."""
    suite = judged_suite(root, url, judge_model)
    data = yaml.safe_load(suite.read_text())
    data["evals"] = [
        {"name": f"e{i}", "prompt": f"ANSWER: {i}", "checks": [{"llm_judge": {"criteria": "ok"}}]}
        for i in range(count)
    ]
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    return suite


@XDIST_MODES
def test_a_passing_verdict_passes_with_the_judges_reason(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    judged_suite(pytester.path, server.url, "vendor/judge-pass")
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, xdist=xdist).assert_outcomes(passed=2)
    records = evals_by_nodeid(load_json(results))
    capital = records["judged.eval.yaml::capital[sut]"]
    [judged] = capital["checks"][0].pop("judges")
    assert capital["checks"][0] == {
        "type": "llm_judge",
        "passed": True,
        "message": "judge: the response meets the criteria",
        "children": [],
        "score": None,  # a plain verdict: no 0-1 score
        "name": None,
        "error": False,
    }
    expected_prompt = f"CRITERIA:\n{CRITERIA}\n\nPROMPT:\nANSWER: Paris\n\nRESPONSE:\nParis\n"
    assert judged["model"] is None  # the judge configuration's own model
    assert judged["prompt"] == expected_prompt and "impartial grader" in judged["system_prompt"]
    assert (judged["passed"], judged["score"], judged["reasoning"]) == (
        True,
        None,
        "the response meets the criteria",
    )
    assert (judged["cost"], judged["input_tokens"], judged["output_tokens"]) == (USAGE["cost"], 12, 5)
    assert judged["cost_source"] == "reported"
    assert capital["cost"] == USAGE["cost"] and capital["judge_cost"] == USAGE["cost"]  # apart
    assert records["judged.eval.yaml::plain[sut]"]["judge_cost"] is None  # no judge asked
    [judge_request] = [r for r in server.requests if r["body"]["model"] == "vendor/judge-pass"]
    sent = judge_request["body"]["messages"]
    assert sent[0]["role"] == "system" and "impartial grader" in sent[0]["content"]
    assert sent[1]["content"] == f"CRITERIA:\n{CRITERIA}\n\nPROMPT:\nANSWER: Paris\n\nRESPONSE:\nParis\n"


@XDIST_MODES
def test_a_judge_configurations_system_prompt_never_replaces_the_grading_instructions(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    """The judge request's system prompt is the grading instructions, whatever the judge
    configuration's `system_prompt`, and the record says so; an eval's own request still gets its
    configuration's."""
    suite = judged_suite(pytester.path, server.url, "vendor/judge-pass")
    data = yaml.safe_load(suite.read_text())
    data["configurations"]["grader"]["system_prompt"] = "You are terse."
    data["configurations"]["sut"]["system_prompt"] = "Be brief."
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, xdist=xdist).assert_outcomes(passed=2)
    [judged] = evals_by_nodeid(load_json(results))["judged.eval.yaml::capital[sut]"]["checks"][0]["judges"]
    [judge_request] = [r["body"] for r in server.requests if r["body"]["model"] == "vendor/judge-pass"]
    assert judge_request["messages"][0] == {"role": "system", "content": JUDGE_SYSTEM_PROMPT}
    assert judged["system_prompt"] == JUDGE_SYSTEM_PROMPT  # what was sent
    sut_requests = [r["body"] for r in server.requests if r["body"]["model"] == "vendor/ok"]
    assert [r["messages"][0]["content"] for r in sut_requests] == ["Be brief.", "Be brief."]


PYTHON_JUDGE = """
import json


def grader(prompt, context):
    return json.dumps({"pass": True, "reason": "told: " + context.system_prompt})
"""


def test_a_python_judge_gets_the_grading_instructions_too(pytester: pytest.Pytester) -> None:
    write(pytester.path / "python_judge.py", PYTHON_JUDGE)
    write(
        pytester.path / "pj.eval.yaml",
        """
        metadata: {name: pj, model: m, system_prompt: Answer in French.}
        judge: grader
        configurations:
          app: {python: "python_judge:grader"}
          grader: {python: "python_judge:grader", system_prompt: You are terse.}
        default_configurations: [app]
        evals:
          - {name: one, prompt: hi, checks: [{llm_judge: {criteria: c}}]}
        """,
    )
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results).assert_outcomes(passed=1)
    [check] = load_json(results)["runs"][0]["evals"][0]["checks"]
    assert check["message"] == f"judge: told: {JUDGE_SYSTEM_PROMPT}"
    assert check["judges"][0]["system_prompt"] == JUDGE_SYSTEM_PROMPT


def test_a_failing_verdict_fails_with_the_reason(pytester: pytest.Pytester, server: ChatServer) -> None:
    judged_suite(pytester.path, server.url, "vendor/judge-fail")
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAIL llm_judge: judge: the response is off topic*"])


def test_a_malformed_verdict_is_an_error_not_a_pass(pytester: pytest.Pytester, server: ChatServer) -> None:
    judged_suite(pytester.path, server.url, "vendor/judge-garbage")
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results).assert_outcomes(passed=1, failed=1)
    capital = evals_by_nodeid(load_json(results))["judged.eval.yaml::capital[sut]"]
    assert capital["outcome"] == "error"
    assert capital["message"] == (
        "llm_judge: the judge (configuration 'grader') did not answer a JSON verdict "
        '{"pass": …, "reason": …}: \'I think it is probably fine.\''
    )
    assert capital["judge_cost"] == USAGE["cost"]  # it was asked, and it cost


@XDIST_MODES
def test_a_format_example_before_the_opposite_verdict_is_an_error_not_a_pass(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    judged_suite(pytester.path, server.url, "vendor/judge-example-first")
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, xdist=xdist).assert_outcomes(passed=1, failed=1)
    capital = evals_by_nodeid(load_json(results))["judged.eval.yaml::capital[sut]"]
    assert capital["outcome"] == "error"
    assert capital["message"].startswith(
        "llm_judge: the judge (configuration 'grader') gave conflicting verdicts "
        '("pass": true, then false): \'The format I must use is'
    )


def test_the_default_judge_is_the_suites_model_through_openrouter(
    pytester: pytest.Pytester, server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    judged_suite(pytester.path, server.url, "vendor/judge-pass", judge=None)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    result = run(pytester, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*llm_judge (judge configuration 'openrouter'): set OPENROUTER_API_KEY*"])
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-judge")
    monkeypatch.setenv("OPENROUTER_BASE_URL", server.url)
    run(pytester).assert_outcomes(passed=2)
    [judge_request] = [r for r in server.requests if r["body"]["model"] == "vendor/judge-pass"]
    assert judge_request["body"]["usage"] == {"include": True}  # OpenRouter's way
    assert judge_request["headers"]["Authorization"] == "Bearer sk-judge"


def test_an_unknown_judge_is_a_collection_error_with_its_line(pytester: pytest.Pytester) -> None:
    judged_suite(pytester.path, "http://127.0.0.1:9/v1", "x", judge="grdaer")
    result = run(pytester, "--collect-only")
    result.stdout.fnmatch_lines(
        ["judged.eval.yaml:*: judge: configuration 'grdaer' is not defined (did you mean 'grader'?)"]
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"pass": true, "reason": "ok"}', (True, "ok")),
        ('Sure! {"passed": false, "reason": " no "} hope that helps', (False, "no")),
        ('```json\n{"pass": false, "reason": "off"}\n```', (False, "off")),
        ('My verdict:\n```json\n{"pass": true, "reasoning": "fine"}\n```\nThanks.', (True, "fine")),
        ('{"note": "x"} then {"pass": true, "reason": "second"}', (True, "second")),
        # several verdicts that agree: the first one's reason
        ('{"pass": false, "reason": "a"} In short: {"pass": false, "reason": "b"}', (False, "a")),
        ('```json\n{"pass": true, "reason": "a"}\n```\n```json\n{"passed": true}\n```', (True, "a")),
        # an object nested in the verdict (a per-check breakdown) is part of it, not a verdict
        ('Verdict: {"pass": false, "reason": "rude", "checks": {"polite": {"pass": true}}}', (False, "rude")),
    ],
)
def test_verdicts_parse(text: str, expected: tuple[bool, str]) -> None:
    assert parse_verdict(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("yes", "did not answer a JSON verdict"),
        ('{"pass": "yes", "reason": "x"}', 'no boolean "pass"'),
        ('{"pass": true}', 'no "reason"'),
        ("{not json}", "did not answer a JSON verdict"),
        (
            'The format is {"pass": true, "reason": "..."}. My verdict: {"pass": false, "reason": "no"}',
            r'the judge gave conflicting verdicts \("pass": true, then false\)',
        ),
        (
            '```json\n{"pass": false, "reason": "a"}\n```\n```json\n{"pass": true, "reason": "b"}\n```',
            r'the judge gave conflicting verdicts \("pass": false, then true\)',
        ),
        ('{"pass": "false", "reason": "a"} {"pass": true, "reason": "b"}', "conflicting verdicts"),
    ],
)
def test_malformed_verdicts_are_errors(text: str, problem: str) -> None:
    with pytest.raises(JudgeError, match=problem):
        parse_verdict(text)


def test_the_judges_cost_is_summed_apart(pytester: pytest.Pytester, server: ChatServer) -> None:
    judged_suite(pytester.path, server.url, "vendor/judge-pass")
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results)
    [sut] = load_json(results)["runs"]
    assert sut["metrics"]["total_judge_cost"] == USAGE["cost"]  # one judge call
    assert sut["metrics"]["total_cost"] == pytest.approx(2 * USAGE["cost"])  # the two answers only
    result.stdout.fnmatch_lines(["Judge Cost: $0.00042 (llm_judge; not in Total Cost)"])


@XDIST_MODES
def test_a_judge_cost_not_reported_comes_from_the_judge_configurations_pricing(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    suite = judged_suite(pytester.path, server.url, "vendor/judge-pass-nocost")
    data = yaml.safe_load(suite.read_text())
    data["configurations"]["grader"]["pricing"] = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results, xdist=xdist)
    result.assert_outcomes(passed=2)
    capital = evals_by_nodeid(load_json(results))["judged.eval.yaml::capital[sut]"]
    [judged] = capital["checks"][0]["judges"]
    priced = (12 * 1.0 + 5 * 2.0) / 1_000_000  # the server's 12 input and 5 output tokens
    assert (judged["cost"], judged["cost_source"]) == (pytest.approx(priced), "pricing")
    assert capital["judge_cost"] == pytest.approx(priced)
    result.stdout.fnmatch_lines(["Judge Cost: $0.000022 (llm_judge; not in Total Cost)"])


def test_an_unknown_judge_cost_is_n_a_in_the_run_summary(
    pytester: pytest.Pytester, server: ChatServer
) -> None:
    judged_suite(pytester.path, server.url, "vendor/judge-pass-nocost")  # no pricing; a model no table has
    result = run(pytester)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["Judge Cost: n/a (judge cost unknown for 1 of 1 judged evals (capital); llm_judge)"]
    )


@XDIST_MODES
def test_max_cost_counts_what_the_judges_cost_but_not_cached_answers(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    judged_evals(pytester.path, server.url, "vendor/judge-pass", 4)
    each = 2 * USAGE["cost"]  # an eval's answer and its judge's
    limit = 1.25 * each  # reached after two evals (after three if judges cost nothing)
    results = pytester.path / "results.json"
    args = ("--vibe-cache=cache", "--vibe-max-cost", str(limit), "--vibe-results", results)
    result = run(pytester, *args, xdist=xdist)
    records = list(evals_by_nodeid(load_json(results)).values())
    started = [r["name"] for r in assert_held_after_two(result, records, each, limit, xdist)]
    assert all(r["outcome"] == "passed" for r in records if r["name"] in started)
    asked = len(server.requests)
    again = ("-k", " or ".join(started[:2]))
    result = run(pytester, "--vibe-cache=cache", "--vibe-max-cost", str(limit), *again, xdist=xdist)
    result.assert_outcomes(passed=2)  # from the cache: nothing spent, both start
    assert len(server.requests) == asked
    result.stdout.fnmatch_lines(["Budget: $0.0000 spent of * (--vibe-max-cost; *)"])


@XDIST_MODES
def test_a_refused_judge_answer_counts_in_the_judge_cost_and_the_budget(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str]
) -> None:
    """A judge model's refusal was paid for: the eval errors naming it, its judge_cost holds what the
    refusal cost and --vibe-max-cost counts it (were refusals free, four of the six evals would start)."""
    judged_evals(pytester.path, server.url, "vendor/refusal", 6)
    each = 2 * USAGE["cost"]  # an eval's answer and its judge's refusal
    limit = 2 * each - 1e-6  # reached after two evals
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-max-cost", str(limit), "--vibe-results", results, xdist=xdist)
    records = list(evals_by_nodeid(load_json(results)).values())
    for record in assert_held_after_two(result, records, each, limit, xdist):
        assert record["outcome"] == "error"
        assert "failed: the model refused to answer (message.refusal)" in record["message"], record["message"]
        assert (record["cost"], record["judge_cost"]) == (USAGE["cost"], USAGE["cost"])


NO_VERDICT = {
    "refusal": 'failed: the model refused to answer (message.refusal): "I can\'t help with that."',
    "filtered": "withheld the answer: its content filter stopped it (finish_reason: content_filter)",
    "judge-garbage": "did not answer a JSON verdict",
}


@pytest.mark.parametrize("judge_model", list(NO_VERDICT))
@XDIST_MODES
def test_a_judge_that_answered_no_verdict_is_in_the_checks_judges_with_what_it_cost(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str], judge_model: str
) -> None:
    """A judge that refused, whose answer a content filter withheld, or that answered something else
    than a verdict was paid for: it is in the check's `judges`, with no verdict, why it gave none and
    what it cost, so a reader sees which judge the eval's judge_cost went to."""
    judged_suite(pytester.path, server.url, f"vendor/{judge_model}")
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, xdist=xdist).assert_outcomes(passed=1, failed=1)
    capital = evals_by_nodeid(load_json(results))["judged.eval.yaml::capital[sut]"]
    [check] = capital["checks"]
    assert (capital["outcome"], check["error"], check["passed"]) == ("error", True, None)
    [judged] = check["judges"]
    assert (judged["model"], judged["passed"], judged["score"], judged["reasoning"]) == (None, None, None, "")
    assert judged["error"] == check["message"] and NO_VERDICT[judge_model] in judged["error"], judged["error"]
    assert (judged["cost"], judged["cost_source"]) == (USAGE["cost"], "reported")
    assert (judged["input_tokens"], judged["output_tokens"], judged["cached"]) == (12, 5, False)
    assert judged["latency"] is not None and "impartial grader" in judged["system_prompt"]
    assert capital["judge_cost"] == judged["cost"]


JUDGES_APP = """
import json


def answer(prompt, context=None):
    if "RUBRIC" in prompt:  # a judge: the one named `unpriced` reports no cost
        out = {"response": json.dumps({"score": 0.9, "reasoning": "ok"})}
        if context.model != "unpriced":
            out["cost"] = 0.1
        return out
    return {"response": prompt, "cost": 0.01}
"""


@XDIST_MODES
def test_the_judge_cost_is_unknown_when_a_judge_reported_none(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """Never a partial sum: an eval whose judges include one without a cost has an unknown judge
    cost, and so has the run; an eval without llm_judge checks does not count."""
    write(pytester.path / "judges_app.py", JUDGES_APP)
    write(
        pytester.path / "j.eval.yaml",
        """
        metadata: {name: j, model: m}
        judge: grader
        evals:
          - {name: both, prompt: x, checks: [{llm_judge: {rubric: r, judges: [priced, unpriced]}}]}
          - {name: priced, prompt: y, checks: [{llm_judge: {rubric: r, judges: [priced]}}]}
          - {name: none, prompt: z, checks: [{contains: z}]}
        score: {formula: total_judge_cost * 100}
        configurations:
          app: {python: "judges_app:answer"}
          grader: {python: "judges_app:answer"}
        default_configurations: [app]
        """,
    )
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, xdist=xdist).assert_outcomes(passed=3)
    [run_record] = load_json(results)["runs"]
    records = {r["name"]: r for r in run_record["evals"]}
    assert [j["cost"] for j in records["both"]["checks"][0]["judges"]] == [0.1, None]
    assert records["both"]["judge_cost"] is None
    assert records["priced"]["judge_cost"] == pytest.approx(0.1)
    assert records["none"]["judge_cost"] is None
    assert run_record["metrics"]["total_judge_cost"] is None and run_record["score"] is None
    assert "judge cost unknown for 1 of 2 judged evals (both)" in run_record["score_error"]


FAILING_JUDGE_APP = """
def answer(prompt):
    return "yes"


def grader(prompt, request):
    if request.model == "bad":
        raise RuntimeError("judge down")
    return {"response": '{"score": 0.9, "reasoning": "ok"}', "cost": 0.5}
"""


@XDIST_MODES
def test_what_judges_cost_before_one_failed_counts_in_a_conversation_too(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(pytester.path / "failing_judge_app.py", FAILING_JUDGE_APP)
    write(
        pytester.path / "fj.eval.yaml",
        """
        metadata: {name: fj, model: m}
        judge: grader
        configurations:
          app: {python: "failing_judge_app:answer"}
          grader: {python: "failing_judge_app:grader"}
        default_configurations: [app]
        evals:
          - name: conv
            turns:
              - {prompt: hi, checks: [{equals: "yes"}]}
              - {prompt: again, checks: [{llm_judge: {rubric: fine, judges: [good, bad]}}]}
          - {name: single, prompt: hi, checks: [{llm_judge: {rubric: fine, judges: [good, bad]}}]}
        """,
    )
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, xdist=xdist).assert_outcomes(failed=2)
    [run_record] = load_json(results)["runs"]
    records = {r["name"]: r for r in run_record["evals"]}
    assert records["conv"]["outcome"] == records["single"]["outcome"] == "error"
    assert records["conv"]["judge_cost"] == records["single"]["judge_cost"] == 0.5  # the good judge's
    assert run_record["metrics"]["total_judge_cost"] == 1.0


@XDIST_MODES
def test_a_judge_error_matters_only_when_no_other_check_decides(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """An `or` stops at its first passing alternative (a judge after it is not asked); a judge that
    failed in an alternative a later one makes up for does not matter; an eval that errors keeps its
    check results; what the judges asked cost counts either way."""
    write(pytester.path / "failing_judge_app.py", FAILING_JUDGE_APP)
    write(
        pytester.path / "fo.eval.yaml",
        """
        metadata: {name: fo, model: m}
        judge: grader
        configurations:
          app: {python: "failing_judge_app:answer"}
          grader: {python: "failing_judge_app:grader"}
        default_configurations: [app]
        evals:
          - {name: first, prompt: hi, checks: [{or: [{match: "*ye*"}, {llm_judge: {criteria: c}}]}]}
          - name: later
            prompt: hi
            checks: [{or: [{llm_judge: {rubric: fine, judges: [good, bad]}}, {equals: "yes"}]}]
          - {name: listed, prompt: hi, checks: [{match: "*no*"}, {llm_judge: {rubric: r, judges: [bad]}}]}
        """,
    )
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, xdist=xdist).assert_outcomes(passed=2, failed=1)
    [run_record] = load_json(results)["runs"]
    records = {r["name"]: r for r in run_record["evals"]}
    [either] = records["first"]["checks"]
    assert (records["first"]["outcome"], either["passed"]) == ("passed", True)
    assert [c["type"] for c in either["children"]] == ["match"]  # the judge was not asked
    assert records["first"]["judge_cost"] is None
    [either] = records["later"]["checks"]
    assert records["later"]["outcome"] == "passed"
    judged, equals = either["children"]
    assert (judged["passed"], judged["error"], equals["passed"]) == (None, True, True)
    assert judged["message"].startswith("llm_judge: the judge model 'bad' (configuration 'grader') failed")
    assert [j["model"] for j in judged["judges"]] == ["good"]  # answered before 'bad' failed
    assert records["later"]["judge_cost"] == 0.5
    listed = records["listed"]
    assert listed["outcome"] == "error" and "'bad'" in listed["message"]
    assert [(c["type"], c["passed"], c["error"]) for c in listed["checks"]] == [
        ("match", False, False),
        ("llm_judge", None, True),
    ]
    assert run_record["metrics"]["total_judge_cost"] == 0.5
