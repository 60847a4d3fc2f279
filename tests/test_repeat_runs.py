"""--vibe-repeat through real pytest runs: one item per repeat, per-eval pass rates with pass@k and
pass^k, the run's score over its repeats, min_pass_rate, and recorded answers kept per repeat."""

from __future__ import annotations

import math

import pytest
from helpers import PYTHON, XDIST_MODES, load_json, run, run_of, run_summary, write

# `steady` always passes; `flaky` fails on its second repeat; `broken` never passes.
APP = """
def answer(prompt, context):
    if prompt.startswith("flaky") and context.repeat == 2:
        return {"response": "no", "cost": 0.01}
    if prompt.startswith("broken"):
        return {"response": "no", "cost": 0.01}
    return {"response": "yes", "cost": 0.01}
"""


def make_suite(pytester: pytest.Pytester, min_pass_rate: str = "") -> None:
    write(pytester.path / "app.py", APP)
    write(
        pytester.path / "rep.eval.yaml",
        f"""
        metadata: {{name: rep, model: m}}
        configurations:
          app: {{python: "app:answer"}}
        score: {{formula: "success_pct"}}
        evals:
          - name: steady
            prompt: steady
            checks: [{{match: "yes"}}]
          - name: flaky
            prompt: flaky
            checks: [{{match: "yes"}}]
            {min_pass_rate}
          - name: broken
            prompt: broken
            checks: [{{match: "yes"}}]
        """,
    )


@XDIST_MODES
def test_each_repeat_is_an_item_and_the_run_is_scored_over_the_repeats(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_suite(pytester)
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-repeat", "3", "--vibe-results", str(out), "-rA", xdist=xdist)
    result.assert_outcomes(passed=5, failed=4)
    assert result.ret == 1
    stdout = result.stdout.str()
    for n in (1, 2, 3):
        assert f"rep.eval.yaml::steady[app-r{n}]" in stdout
    run_record = run_of(load_json(out), "app")
    assert run_record["repeats"] == 3
    assert sorted((r["name"], r["repeat"]) for r in run_record["evals"]) == sorted(
        (name, n) for name in ("steady", "flaky", "broken") for n in (1, 2, 3)
    )
    stats = {s["name"]: s for s in run_record["eval_stats"]}
    assert (stats["steady"]["passed"], stats["steady"]["runs"], stats["steady"]["status"]) == (3, 3, "passed")
    flaky = stats["flaky"]
    assert (flaky["passed"], flaky["runs"], flaky["status"]) == (2, 3, "failed")
    assert flaky["pass_rate"] == pytest.approx(2 / 3)
    # n = 3, c = 2: pass@1 = 1 - C(1,1)/C(3,1) = 2/3; pass@2 = 1 - C(1,2)/C(3,2) = 1 (C(1,2) = 0)
    # pass^2 = C(2,2)/C(3,2) = 1/3; pass^3 = C(2,3)/C(3,3) = 0
    assert flaky["pass_at_k"] == pytest.approx({"1": 2 / 3, "2": 1.0, "3": 1.0})
    assert flaky["pass_hat_k"] == pytest.approx({"1": 2 / 3, "2": 1 / 3, "3": 0.0})
    assert stats["broken"]["pass_at_k"]["3"] == 0.0
    # success_pct per repeat: r1 2/3, r2 1/3, r3 2/3 → 66.67, 33.33, 66.67
    assert run_record["repeat_scores"] == pytest.approx([200 / 3, 100 / 3, 200 / 3])
    # the document's aggregation, latest repeat first: [r3, r2, r1], nothing trimmed below 10 scores,
    # weights 1.0, 0.9, 0.8: (66.67·1.0 + 33.33·0.9 + 66.67·0.8) / 2.7
    expected = (200 / 3 * 1.0 + 100 / 3 * 0.9 + 200 / 3 * 0.8) / 2.7
    assert run_record["score"] == pytest.approx(expected)
    assert run_record["score_mean"] == pytest.approx(500 / 9)
    # sample sd of the three: deviations 11.11, -22.22, 11.11 → s = √(740.74 / 2) = 19.245;
    # t(0.975, 2) = 4.3027: half width 4.3027 · s / √3 = 47.81
    half = 4.3027 * math.sqrt(((100 / 9) ** 2 * 2 + (200 / 9) ** 2) / 2) / math.sqrt(3)
    low, high = run_record["score_ci95"]
    assert (low, high) == pytest.approx((500 / 9 - half, 500 / 9 + half), abs=0.01)
    # per-eval variables are the means over the repeats: `flaky` is its pass rate
    assert run_record["variables"]["flaky"] == pytest.approx(2 / 3)
    summary = "\n".join(run_summary(result))
    assert "Repeats: 3 (score: trimmed, recency-weighted; mean 55.56 (95% CI" in summary
    assert "pass@3 0.67 · pass^3 0.33" in summary  # means over steady (1, 1), flaky (1, 0), broken (0, 0)
    assert "FAILED flaky (r2)" in summary.replace("  ", " ")


@XDIST_MODES
def test_min_pass_rate_lets_a_flaky_eval_pass(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester, "min_pass_rate: 0.6")
    out = pytester.path / "results.json"
    result = run(
        pytester, "--vibe-repeat", "3", "--vibe-results", str(out), "--vibe-eval", "steady,flaky", xdist=xdist
    )
    result.assert_outcomes(passed=5, failed=1)
    assert result.ret == 0, result.outlines
    stats = {s["name"]: s for s in run_of(load_json(out), "app")["eval_stats"]}
    assert stats["flaky"]["status"] == "passed"
    assert stats["flaky"]["passed_by_rate"] is True
    assert stats["flaky"]["min_pass_rate"] == 0.6
    summary = "\n".join(run_summary(result))
    assert "FLAKY  flaky: passed 2/3 (67%), min_pass_rate 0.6: counted as passed" in summary
    assert (
        "min_pass_rate: 1 failed run(s) of evals that passed often enough do not fail the session" in summary
    )


def test_min_pass_rate_does_not_forgive_other_failures(pytester: pytest.Pytester) -> None:
    make_suite(pytester, "min_pass_rate: 0.6")
    result = run(pytester, "--vibe-repeat", "3")
    assert result.ret == 1  # `broken` still fails the session
    summary = "\n".join(run_summary(result))
    assert "min_pass_rate not applied: 3 failure(s) not forgiven by a min_pass_rate" in summary


def test_min_pass_rate_not_met_fails(pytester: pytest.Pytester) -> None:
    make_suite(pytester, "min_pass_rate: 0.9")
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-repeat", "3", "--vibe-eval", "flaky", "--vibe-results", str(out))
    assert result.ret == 1
    stats = run_of(load_json(out), "app")["eval_stats"][0]
    assert (stats["status"], stats["passed_by_rate"]) == ("failed", False)


@pytest.mark.parametrize(
    ("value", "message"),
    [("0", "--vibe-repeat: 0 is not between 1 and 1000"), ("two", "argument --vibe-repeat: invalid int")],
)
def test_bad_repeat_values_are_usage_errors(pytester: pytest.Pytester, value: str, message: str) -> None:
    make_suite(pytester)
    result = run(pytester, f"--vibe-repeat={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_bad_min_pass_rate_names_the_line(pytester: pytest.Pytester) -> None:
    make_suite(pytester, "min_pass_rate: 1.5")
    result = run(pytester)
    assert result.ret == 1
    assert "rep.eval.yaml:12: evals[1].min_pass_rate: must be 1 or less" in result.stdout.str()


def test_without_repeat_the_ids_and_records_are_unchanged(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out), "--collect-only", "-q")
    assert "rep.eval.yaml::steady[app]" in result.stdout.str()
    result = run(pytester, "--vibe-results", str(out))
    record = run_of(load_json(out), "app")
    assert record["repeats"] == 1 and record["repeat_scores"] == [] and record["score_ci95"] is None
    assert {r["repeat"] for r in record["evals"]} == {0}
    assert record["score"] == pytest.approx(200 / 3)


@XDIST_MODES
def test_recorded_answers_are_kept_per_repeat(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """A repeat is never answered from another repeat's recording: replaying more repeats than
    were recorded is an error for the missing ones."""
    make_suite(pytester)
    store = pytester.path / "store"
    run(pytester, "--vibe-repeat", "2", "--vibe-record", str(store), "--vibe-eval", "flaky", xdist=xdist)
    # two answers, one for each repeat
    assert len(list((store / "app").glob("*.json"))) == 2
    out = pytester.path / "replayed.json"
    result = run(
        pytester,
        "--vibe-repeat", "3", "--vibe-replay", str(store), "--vibe-eval", "flaky", "--vibe-results", str(out),
        xdist=xdist,
    )  # fmt: skip
    records = {r["repeat"]: r for r in run_of(load_json(out), "app")["evals"]}
    assert (records[1]["outcome"], records[2]["outcome"]) == ("passed", "failed")  # as recorded
    assert records[3]["outcome"] == "error"
    assert "no recorded answer for repeat 3 of configuration 'app'" in records[3]["message"]
    assert "with the same --vibe-repeat" in records[3]["message"]
    assert result.ret == 1


@XDIST_MODES
def test_coding_agent_repeats_get_their_own_workspaces(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """Each repeat of a coding-agent eval starts from a fresh copy of the template."""
    write(pytester.path / "template" / "README.md", "start\n")
    write(pytester.path / "grading" / "check.py", "import pathlib; pathlib.Path('ok').exists()\n")
    agent = write(
        pytester.path / "agent.py",
        """
        import pathlib, sys
        marker = pathlib.Path("touched")
        if marker.exists():
            sys.exit("this workspace was used before")
        marker.write_text("x")
        """,
    )
    write(
        pytester.path / "code.eval.yaml",
        f"""
        metadata: {{name: code, model: m}}
        configurations:
          py: {{cli: "{PYTHON}", args: ["{agent}"]}}
        commands:
          check: {{command: "test", args: ["-f", "touched"]}}
        evals:
          - name: once
            prompt: do it
            workspace: template
            grading: grading
            grade_steps: [check]
        """,
    )
    result = run(pytester, "--vibe-repeat", "3", "--vibe-sandbox", "none", xdist=xdist)
    result.assert_outcomes(passed=3)
