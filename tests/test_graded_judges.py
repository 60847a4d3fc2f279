"""Graded ``llm_judge`` checks (``rubric``, ``threshold``, several ``judges``) through a judge
configuration answering on a real local chat-completions server, and the ``<name>_score`` formula
variables that check scores feed."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import yaml
from chat_server import USAGE, ChatServer
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, run_of, write

from pytest_vibeeval.judge import JudgeError, parse_score
from pytest_vibeeval.results import CheckRecord, EvalRecord
from pytest_vibeeval.scoring.variables import compute_variables

RUBRIC = "The reply is polite and says what happens next."
# What a `grade-*` judge model answers (the prompt's rubric does not change it).
GRADES = {
    "grade-0.9": '{"score": 0.9, "reasoning": "polite, and it names the next step"}',
    "grade-0.8": '{"score": 0.8, "reasoning": "polite; the next step is vague"}',
    "grade-0.2": 'Here is my grade:\n```json\n{"score": "0.2", "reasoning": "curt"}\n```',
    "grade-words": "I would give it eight out of ten.",
    "grade-ten": '{"score": 8, "reasoning": "good"}',
}


class GradingServer(ChatServer):
    """The test chat server, whose ``grade-*`` models answer a judge's JSON score (see GRADES)."""

    def handle(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        kind = str(body.get("model", "")).rsplit("/", 1)[-1]
        if kind not in GRADES:
            super().handle(handler, body)
            return
        with self.lock:
            self.requests.append({"body": body, "headers": dict(handler.headers)})
        message = {"role": "assistant", "content": GRADES[kind]}
        self.send_raw(
            handler, *self.json_reply(200, {"choices": [{"index": 0, "message": message}], "usage": USAGE})
        )


@pytest.fixture
def server() -> Iterator[GradingServer]:
    with GradingServer() as chat:
        yield chat


def graded_suite(
    root: Path,
    url: str,
    evals: list[dict[str, Any]],
    formula: str | None = None,
    judge_model: str | None = None,
) -> Path:
    """A suite answered by ``sut`` on the server and judged by ``grader`` (no `model` of its own:
    the suite's model, vendor/grade-0.9, unless a check lists `judges`)."""
    grader: dict[str, Any] = {"http": {"base_url": url}}
    if judge_model:
        grader["model"] = judge_model
    data: dict[str, Any] = {
        "metadata": {"name": "graded", "model": "vendor/grade-0.9"},
        "evals": evals,
        "configurations": {"sut": {"http": {"base_url": url}, "model": "vendor/ok"}, "grader": grader},
        "default_configurations": ["sut"],
        "judge": "grader",
    }
    if formula:
        data["score"] = {"formula": formula}
    return write(root / "graded.eval.yaml", yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def judged(eval_name: str, **check: Any) -> dict[str, Any]:
    """An eval answered ``reply for <eval_name>`` with one llm_judge check of the keys ``check``."""
    return {"name": eval_name, "prompt": f"ANSWER: reply for {eval_name}", "checks": [{"llm_judge": check}]}


@XDIST_MODES
def test_a_rubric_score_passes_at_the_threshold_and_feeds_the_formula(
    pytester: pytest.Pytester, server: GradingServer, xdist: list[str]
) -> None:
    graded_suite(
        pytester.path,
        server.url,
        [
            judged("polite", rubric=RUBRIC),  # 0.9 against the default threshold 0.7
            judged("strict", rubric=RUBRIC, threshold=0.95),
        ],
        formula="polite_score * 100 + strict_score",
    )
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results, xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*FAIL llm_judge: judge: score 0.90 < threshold 0.95: polite, and it names*"]
    )
    data = load_json(results)
    records = evals_by_nodeid(data)
    [polite] = records["graded.eval.yaml::polite[sut]"]["checks"]
    assert (polite["passed"], polite["score"], polite["name"]) == (True, 0.9, None)
    assert polite["message"] == "judge: score 0.90 >= threshold 0.70: polite, and it names the next step"
    [answer] = polite["judges"]
    assert answer["model"] is None  # the judge configuration's model: here the suite's
    assert (
        answer["prompt"]
        == f"RUBRIC:\n{RUBRIC}\n\nPROMPT:\nANSWER: reply for polite\n\nRESPONSE:\nreply for polite\n"
    )
    assert answer["system_prompt"].startswith("You are an impartial grader. Score how well")
    assert (answer["score"], answer["passed"], answer["reasoning"]) == (
        0.9,
        True,
        "polite, and it names the next step",
    )
    assert (answer["cost"], answer["input_tokens"], answer["output_tokens"]) == (USAGE["cost"], 12, 5)
    assert answer["latency"] >= 0
    sent = [r["body"] for r in server.requests if r["body"]["model"] == "vendor/grade-0.9"]
    assert len(sent) == 2 and sent[0]["messages"][0]["content"] == answer["system_prompt"]
    run_record = run_of(data, "sut")
    assert run_record["variables"]["polite_score"] == 0.9 and run_record["variables"]["strict_score"] == 0.9
    assert run_record["score"] == pytest.approx(90.9)
    assert run_record["metrics"]["total_judge_cost"] == pytest.approx(2 * USAGE["cost"])  # apart
    assert run_record["metrics"]["total_cost"] == pytest.approx(2 * USAGE["cost"])  # the answers only


@XDIST_MODES
def test_several_judges_decide_by_mean_or_majority(
    pytester: pytest.Pytester, server: GradingServer, xdist: list[str]
) -> None:
    panel = ["vendor/grade-0.9", "vendor/grade-0.8", "vendor/grade-0.2"]  # mean 0.633, 2 of 3 >= 0.7
    graded_suite(
        pytester.path,
        server.url,
        [
            judged("by-mean", rubric=RUBRIC, judges=panel, name="tone"),
            judged("by-majority", rubric=RUBRIC, judges=panel, aggregate="majority", name="tone"),
            judged("verdicts", criteria="is polite", judges=["vendor/judge-pass", "vendor/judge-fail"]),
        ],
        formula="tone_score * 100",
    )
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results, xdist=xdist).assert_outcomes(passed=1, failed=2)
    data = load_json(results)
    records = evals_by_nodeid(data)
    [mean] = records["graded.eval.yaml::by-mean[sut]"]["checks"]
    assert mean["passed"] is False and mean["score"] == pytest.approx(1.9 / 3)
    assert mean["message"] == (
        "judges: mean score 0.63 < threshold 0.70 (vendor/grade-0.9 0.90, vendor/grade-0.8 0.80, "
        "vendor/grade-0.2 0.20)"
    )
    assert [(j["model"], j["score"], j["passed"]) for j in mean["judges"]] == [
        ("vendor/grade-0.9", 0.9, True),
        ("vendor/grade-0.8", 0.8, True),
        ("vendor/grade-0.2", 0.2, False),
    ]
    assert mean["judges"][2]["reasoning"] == "curt"  # a fenced answer, its score given as text
    [majority] = records["graded.eval.yaml::by-majority[sut]"]["checks"]
    assert majority["passed"] is True and majority["score"] == pytest.approx(1.9 / 3)
    assert majority["message"].startswith("judges: 2 of 3 passed (score >= 0.7), a majority")
    [verdicts] = records["graded.eval.yaml::verdicts[sut]"]["checks"]
    assert verdicts["passed"] is False and verdicts["score"] is None  # 1 of 2 is no majority
    assert verdicts["message"].startswith("judges: 1 of 2 passed, no majority")
    assert records["graded.eval.yaml::by-mean[sut]"]["judge_cost"] == pytest.approx(3 * USAGE["cost"])
    run_record = run_of(data, "sut")
    assert run_record["variables"]["tone_score"] == pytest.approx(1.9 / 3)  # both checks named tone
    assert run_record["score"] == pytest.approx(190 / 3)
    assert run_record["metrics"]["total_judge_cost"] == pytest.approx(8 * USAGE["cost"])


@XDIST_MODES
def test_an_unparsable_score_is_an_error_naming_the_judge_never_a_0(
    pytester: pytest.Pytester, server: GradingServer, xdist: list[str]
) -> None:
    graded_suite(
        pytester.path,
        server.url,
        [
            judged("words", rubric=RUBRIC, judges=["vendor/grade-0.9", "vendor/grade-words"], name="tone"),
            judged("ten", rubric=RUBRIC, judges=["vendor/grade-ten"]),
        ],
        formula="tone_score",
    )
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results, xdist=xdist)
    result.assert_outcomes(failed=2)
    data = load_json(results)
    records = evals_by_nodeid(data)
    words = records["graded.eval.yaml::words[sut]"]
    assert words["outcome"] == "error"
    assert words["message"] == (
        "llm_judge: the judge model 'vendor/grade-words' (configuration 'grader') did not answer a "
        'JSON score {"score": 0–1, "reasoning": …}: \'I would give it eight out of ten.\''
    )
    assert words["judge_cost"] == pytest.approx(2 * USAGE["cost"])  # both were asked, both cost
    ten = records["graded.eval.yaml::ten[sut]"]
    assert ten["message"].startswith(
        "llm_judge: the judge model 'vendor/grade-ten' (configuration 'grader') scored 8, outside 0–1"
    )
    run_record = run_of(data, "sut")
    assert run_record["score"] is None
    assert run_record["score_error"] == (
        "no value for tone_score: eval 'words' errored before its checks gave scores: " + words["message"]
    )


def test_python_check_scores_feed_score_variables(pytester: pytest.Pytester) -> None:
    write(pytester.path / "app.py", "def answer(prompt):\n    return prompt\n")
    write(
        pytester.path / "grading.py",
        "def length(response):\n    return min(1.0, len(response.text) / 10)\n\n"
        "def half(response):\n    return 0.5\n",
    )
    suite = {
        "metadata": {"name": "py", "model": "m"},
        "configurations": {"app": {"python": "app:answer"}},
        "score": {"formula": "short_score + long_score + brevity_score"},
        "evals": [
            {
                "name": "short",
                "prompt": "abcde",
                "checks": [{"python": "grading:length"}, {"python": "grading:half"}],
            },
            {
                "name": "long",
                "prompt": "abcdefghijkl",
                "checks": [{"python": {"function": "grading:length", "name": "brevity"}}],
            },
            {
                "name": "other",
                "prompt": "ab",
                "checks": [{"or": [{"python": {"function": "grading:length", "name": "brevity"}}]}],
            },
        ],
    }
    write(pytester.path / "py.eval.yaml", yaml.safe_dump(suite, sort_keys=False))
    results = pytester.path / "results.json"
    run(pytester, "--vibe-results", results).assert_outcomes(passed=2, failed=1)
    variables = run_of(load_json(results), "app")["variables"]
    assert variables["short_score"] == pytest.approx(0.5)  # (0.5 + 0.5) / 2: its unnamed checks
    assert variables["long_score"] is None  # its only check has a name of its own
    assert variables["brevity_score"] == pytest.approx(0.6)  # (1.0 + 0.2) / 2, inside `or` too
    assert run_of(load_json(results), "app")["score_error"] == (
        "no value for long_score: no check of eval 'long' without a `name` of its own gave a score"
    )


def test_check_score_is_averaged_over_repeats_then_evals() -> None:
    def record(name: str, repeat: int, *scores: float, outcome: str = "passed") -> EvalRecord:
        checks = [CheckRecord(type="python", passed=True, message="", score=s, name="tone") for s in scores]
        return EvalRecord(
            name=name,
            named=True,
            nodeid=name,
            outcome=outcome,
            repeat=repeat,
            checks=checks,
            check_names=["tone"],
        )

    records = [
        record("a", 1, 1.0),
        record("a", 2, 0.0, 0.5),  # two checks named tone in one run: their mean, 0.25
        record("a", 3, outcome="skipped"),  # not counted
        record("b", 1, 0.2),
    ]
    values, reasons = compute_variables(records)
    assert values["tone_score"] == pytest.approx(((1.0 + 0.25) / 2 + 0.2) / 2)
    values, reasons = compute_variables([*records, record("c", 1, outcome="error")])
    assert values["tone_score"] is None
    assert reasons["tone_score"] == "eval 'c' errored before its checks gave scores: "


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"score": 0.75, "reasoning": "ok"}', (0.75, "ok")),
        ('```json\n{"score": 1, "reason": "all there"}\n```', (1.0, "all there")),
        ('Sure. {"score": "0.3", "reasoning": "thin"} Hope that helps.', (0.3, "thin")),
        ('{"scale": "0-1"} and then {"score": 0, "reasoning": "none"}', (0.0, "none")),
        ('{"score": 0.8, "reasoning": "a"} So: {"score": "0.8", "reasoning": "b"}', (0.8, "a")),  # agree
        (  # a per-criterion breakdown nested in the grade is part of it, not a score of its own
            'Grade: {"score": 0.5, "reasoning": "half", "criteria": [{"name": "tone", "score": 1}, '
            '{"name": "facts", "score": 0}]}',
            (0.5, "half"),
        ),
    ],
)
def test_scores_parse(text: str, expected: tuple[float, str]) -> None:
    assert parse_score(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("8/10", "did not answer a JSON score"),
        ('{"score": "high", "reasoning": "x"}', 'no number "score"'),
        ('{"score": true, "reasoning": "x"}', 'no number "score"'),
        ('{"score": 1.5, "reasoning": "x"}', "scored 1.5, outside 0–1"),
        ('{"score": NaN, "reasoning": "x"}', 'no number "score"'),
        ('{"score": 0.5}', 'no "reasoning"'),
        (
            'Format: {"score": 1, "reasoning": "..."}. Mine: {"score": 0.2, "reasoning": "curt"}',
            r'the judge gave conflicting scores \("score": 1, then 0.2\)',
        ),
    ],
)
def test_malformed_scores_are_errors(text: str, problem: str) -> None:
    with pytest.raises(JudgeError, match=problem):
        parse_score(text)


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (
            {"criteria": "x", "rubric": "y"},
            "give either `criteria` (a pass/fail verdict) or `rubric` (a 0–1 score), not both",
        ),
        (
            {"threshold": 0.5},
            "missing required key 'criteria' (a pass/fail verdict), or give `rubric` (a 0–1 score)",
        ),
        ({"criteria": "x", "threshold": 0.5}, "`threshold` applies to `rubric` scores"),
        ({"criteria": "x", "aggregate": "mean"}, "`aggregate: mean` needs scores (`rubric`)"),
        ({"rubric": "x", "threshold": 1.5}, "must be 1 or less"),
        ({"rubric": "x", "judges": []}, "List should have at least 1 item"),
        ({"rubric": "x", "aggregate": "vote"}, "Input should be 'mean' or 'majority'"),
        ({"rubric": "x", "name": "a b"}, "String should match pattern"),
    ],
)
def test_bad_judge_keys_are_collection_errors_with_the_line(
    pytester: pytest.Pytester, check: dict[str, Any], message: str
) -> None:
    graded_suite(pytester.path, "http://127.0.0.1:9/v1", [judged("one", **check)])
    result = run(pytester, "--collect-only")
    result.stdout.fnmatch_lines([f"graded.eval.yaml:*: evals[[]0].checks[[]0].llm_judge*{message}*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("evals", "formula", "message"),
    [
        (
            [judged("tone", rubric="x"), judged("other", rubric="y", name="tone")],
            None,
            "check name 'tone' would define 'tone_score', which is eval 'tone''s `<name>_score` "
            "variable (evals[[]0], line *)",
        ),
        (
            [judged("one", rubric="x", name="rubric")],
            None,
            "check name 'rubric' would define 'rubric_score', which is a run-wide variable",
        ),
        (
            [
                {
                    "name": "two",
                    "prompt": "p",
                    "checks": [
                        {"llm_judge": {"rubric": "x", "name": "t"}},
                        {"llm_judge": {"rubric": "y", "name": "t"}},
                    ],
                }
            ],
            None,
            "two checks of this eval are named 't' (also line *)",
        ),
        (
            [judged("one", rubric="x", name="tone")],
            "tone_scor * 2",
            "score.formula: unknown variable 'tone_scor' (did you mean 'tone_score'?)",
        ),
    ],
)
def test_check_name_collisions_and_unknown_score_variables_fail_collection(
    pytester: pytest.Pytester, evals: list[dict[str, Any]], formula: str | None, message: str
) -> None:
    graded_suite(pytester.path, "http://127.0.0.1:9/v1", evals, formula=formula)
    result = run(pytester, "--collect-only")
    result.stdout.fnmatch_lines([f"graded.eval.yaml:*: *{message}*"])
    assert "Traceback" not in result.stdout.str()


def test_judges_beside_a_judge_configuration_with_its_own_model_fail_collection(
    pytester: pytest.Pytester,
) -> None:
    graded_suite(
        pytester.path,
        "http://127.0.0.1:9/v1",
        [judged("one", rubric="x", judges=["vendor/a", "vendor/b"])],
        judge_model="vendor/pinned",
    )
    result = run(pytester, "--collect-only")
    result.stdout.fnmatch_lines(
        [
            "graded.eval.yaml:*: judge: configuration 'grader' sets `model: vendor/pinned`, which would "
            "answer for every model*"
        ]
    )
