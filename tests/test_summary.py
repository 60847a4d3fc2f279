"""Unit tests for pytest_vibeeval.report.summary: the Run Summary text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_vibeeval.budget import Budget
from pytest_vibeeval.report.summary import (
    budget_lines,
    comparison_table,
    gate_failures,
    resume_line,
    run_block,
    summary_lines,
)
from pytest_vibeeval.results import CheckRecord, EvalRecord, GateRecord, RunRecord

FORMULA = "success_pct / (total_cost * 100)"


def metrics(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "success_pct": 80.0,
        "passed": 4.0,
        "failed": 1.0,
        "total": 5.0,
        "total_latency": 6.0,
        "avg_latency": 1.2,
        "min_latency": 0.8,
        "max_latency": 2.1,
        "total_cost": 0.0177,
        "avg_cost": 0.00354,
        "min_cost": 0.001,
        "max_cost": 0.01,
        "errors": 0,
        "skipped": 0,
    }
    base.update(overrides)
    return base


def record(name: str, outcome: str, cost: float | None = 0.001, **extra: Any) -> EvalRecord:
    return EvalRecord(
        name=name,
        nodeid=f"math.eval.yaml::{name}[fast]",
        outcome=outcome,  # type: ignore[arg-type]
        latency=1.0,
        cost=cost,
        **extra,
    )


def run(
    configuration: str = "fast",
    *,
    source: str = "suites/math.eval.yaml",
    score: float | None = 45.2281,
    score_error: str | None = None,
    evals: list[EvalRecord] | None = None,
    notes: list[str] | None = None,
    configuration_name: str | None = None,
    score_breakdown: str | None = None,
    gate: GateRecord | None = None,
    **metric_overrides: Any,
) -> RunRecord:
    m = metrics(**metric_overrides)
    return RunRecord(
        suite="math",
        source=source,
        configuration=configuration,
        configuration_name=configuration_name,
        score=score,
        score_formula=FORMULA,
        score_error=score_error,
        score_breakdown=score_breakdown,
        gate=gate,
        metrics=m,
        variables={k: v for k, v in m.items() if k not in ("errors", "skipped")},
        notes=notes or [],
        evals=evals if evals is not None else [record(f"e{i}", "passed") for i in range(5)],
    )


def test_run_block_headline_numbers() -> None:
    lines = summary_lines([run(configuration_name="Fast model")])
    assert lines[:5] == [
        "math × fast (Fast model)  [suites/math.eval.yaml]",
        f"Score: 45.23 (formula: {FORMULA})",
        "Success Rate: 80.0% (4/5)",
        "Total Cost: $0.0177",
        "Latency: avg 1.20s · min 0.80s · max 2.10s",
    ]


def test_every_element_is_one_line() -> None:
    lines = summary_lines([run(score=None, score_error="division by zero"), run("slow")])
    assert all("\n" not in line for line in lines)


def test_unknown_cost_and_score_error() -> None:
    evals = [record("a", "passed", cost=None), record("b", "failed", cost=None)]
    lines = run_block(
        run(
            score=None,
            score_error="no value for total_cost: no eval reported cost",
            evals=evals,
            total_cost=None,
            avg_cost=None,
        )
    )
    assert lines[1] == f"Score: null (formula: {FORMULA})"
    assert lines[2] == "  score error: no value for total_cost: no eval reported cost"
    assert "Total Cost: n/a (not reported)" in lines


def test_cost_reported_by_some_evals_only() -> None:
    evals = [record("a", "passed", cost=0.5), record("b", "passed", cost=None), record("c", "skipped", None)]
    lines = run_block(run(evals=evals, total_cost=None))
    assert "Total Cost: n/a (reported by 1 of 2 evals)" in lines


def test_costs_too_large_to_add_up() -> None:
    evals = [record("a", "passed", cost=1.5e308), record("b", "passed", cost=1.5e308)]
    lines = run_block(run(evals=evals, total_cost=None))
    assert "Total Cost: n/a (the costs add up to more than the largest number)" in lines


def test_no_eval_ran() -> None:
    evals = [record("a", "skipped", cost=None)]
    lines = run_block(
        run(
            score=None,
            evals=evals,
            success_pct=None,
            passed=0.0,
            total=0.0,
            skipped=1,
            total_cost=None,
            avg_latency=None,
            min_latency=None,
            max_latency=None,
        )
    )
    assert "Success Rate: n/a (0/0; 1 skipped)" in lines
    assert "Total Cost: n/a (no eval ran)" in lines
    assert "Latency: avg n/a · min n/a · max n/a" in lines


def test_skipped_count_and_notes() -> None:
    lines = run_block(run(skipped=2, notes=["5 of 6 evals were selected"]))
    assert "Success Rate: 80.0% (4/5, 2 skipped)" in lines
    assert "note: 5 of 6 evals were selected" in lines


def test_failures_are_listed_with_their_first_failed_check() -> None:
    failing = record(
        "sub",
        "failed",
        checks=[
            CheckRecord(type="min_tokens", passed=True, message="3 tokens"),
            CheckRecord(type="match", passed=False, message="pattern '*4*' does not match the response"),
        ],
        message="checks failed:\n ...",
    )
    crashed = record("crashy", "error", message="no result recorded: worker crashed\nmore")
    lines = run_block(run(evals=[record("add", "passed"), failing, crashed]))
    assert "  FAILED sub: match: pattern '*4*' does not match the response" in lines
    assert "  ERROR  crashy: no result recorded: worker crashed" in lines
    assert not any("add" in line for line in lines[5:])


def test_more_than_ten_failures_are_cut_short() -> None:
    evals = [record(f"f{i:02}", "failed") for i in range(13)]
    lines = run_block(run(evals=evals))
    failed_lines = [line for line in lines if line.startswith("  FAILED")]
    assert len(failed_lines) == 10
    assert failed_lines[0] == "  FAILED f00: failed"
    assert lines[-1] == "  … and 3 more"


def test_single_configuration_has_no_table() -> None:
    lines = summary_lines([run()])
    assert not any("side by side" in line for line in lines)
    assert "" not in lines


def test_several_configurations_of_one_suite_get_a_table() -> None:
    runs = [
        run("fast"),
        run(
            "slow-model",
            score=None,
            success_pct=40.0,
            passed=2.0,
            total_cost=None,
            avg_latency=12.345,
        ),
    ]
    lines = summary_lines(runs)
    title = lines.index("math: configurations side by side")
    header, rule, first, second = lines[title + 1 : title + 5]
    assert header.split() == ["configuration", "score", "success", "passed", "cost", "avg", "latency"]
    assert set(rule.replace(" ", "")) == {"-"}
    assert first.split() == ["fast", "45.23", "80.0%", "4/5", "$0.0177", "1.20s"]
    assert second.split() == ["slow-model", "null", "40.0%", "2/5", "n/a", "12.35s"]
    # columns line up: every row as wide as the header
    assert len({len(line) for line in (header, rule, first, second)}) == 1
    assert first.startswith("fast       ")  # the first column is left-aligned
    assert lines[title - 1] == ""
    # both blocks are printed before the table, separated by a blank line
    assert lines.count("math × fast  [suites/math.eval.yaml]") == 1
    assert lines.count("math × slow-model  [suites/math.eval.yaml]") == 1


def test_table_only_for_the_suite_with_several_configurations() -> None:
    runs = [run("a"), run("b"), run("only", source="suites/other.eval.yaml")]
    lines = summary_lines(runs)
    assert sum("side by side" in line for line in lines) == 1
    assert lines.index("math: configurations side by side") < lines.index(
        "math × only  [suites/other.eval.yaml]"
    )


def test_comparison_table_n_a_success() -> None:
    table = comparison_table([run("x", success_pct=None, passed=0.0, total=0.0, avg_latency=None)])
    assert table[2].split() == ["x", "45.23", "n/a", "0/0", "$0.0177", "n/a"]


def test_no_runs_no_lines() -> None:
    assert summary_lines([]) == []


BREAKDOWN = "80 / (0.0177 * 100)"


def test_breakdown_only_when_asked() -> None:
    plain = run_block(run(score_breakdown=BREAKDOWN))
    assert not any(BREAKDOWN in line for line in plain)
    shown = run_block(run(score_breakdown=BREAKDOWN), breakdown=True)
    assert shown[1:3] == [f"Score: 45.23 (formula: {FORMULA})", f"  {BREAKDOWN} = 45.23"]
    assert summary_lines([run(score_breakdown=BREAKDOWN)], breakdown=True)[2] == f"  {BREAKDOWN} = 45.23"


def test_breakdown_of_a_null_score_keeps_the_error() -> None:
    lines = run_block(
        run(score=None, score_error="no value for total_cost: x", score_breakdown="80 / (? * 100)"),
        breakdown=True,
    )
    assert lines[2:4] == ["  80 / (? * 100) = null", "  score error: no value for total_cost: x"]


def test_gate_lines() -> None:
    failed = GateRecord(min=50.0, max=None, passed=False, message="score 42.10 is below min 50 (by 7.90)")
    passed = GateRecord(min=40.0, max=None, passed=True, message="score 45.23 meets min 40")
    runs = [run("fast", gate=failed, score=42.1), run("slow", gate=passed), run("plain")]
    lines = summary_lines(runs)
    assert "Gate: FAILED: score 42.10 is below min 50 (by 7.90)" in lines
    assert "Gate: passed: score 45.23 meets min 40" in lines
    assert sum(line.startswith("Gate:") for line in lines) == 2
    assert lines[-1] == "GATE FAILED: math × fast: score 42.10 is below min 50 (by 7.90)"
    assert gate_failures(runs) == [lines[-1]]
    assert gate_failures(runs[1:]) == []


def test_a_preset_shows_its_name_and_expansion() -> None:
    preset = run().model_copy(
        update={
            "score_formula": "price_performance",
            "score_preset": "price_performance",
            "score_canonical": "success_pct / (total_cost * 1000)",
        }
    )
    assert run_block(preset)[1] == (
        "Score: 45.23 (formula: price_performance = success_pct / (total_cost * 1000))"
    )
    # success_pct is a preset of itself: nothing to expand
    plain = run().model_copy(
        update={
            "score_formula": "success_pct",
            "score_preset": "success_pct",
            "score_canonical": "success_pct",
        }
    )
    assert run_block(plain)[1] == "Score: 45.23 (formula: success_pct)"


def test_tiny_costs_and_scores_keep_two_significant_digits() -> None:
    lines = summary_lines([run(score=0.003, total_cost=0.0000213)])
    assert lines[1] == f"Score: 0.003 (formula: {FORMULA})"
    assert lines[3] == "Total Cost: $0.000021"


def test_number_formats() -> None:
    from pytest_vibeeval.report.format import decimal, money, score, seconds

    assert [score(v) for v in (0.003, 0.0031, 0.054, 0.0999, 0.1, 12.345, 0, -0.004)] == [
        "0.003", "0.0031", "0.054", "0.10", "0.10", "12.35", "0.00", "-0.004",
    ]  # fmt: skip
    assert score(1e-15) == "1.0e-15" and score(None) == "null" and score(2e12) == "2.000e+12"
    assert [money(v) for v in (0.00002, 0.0144, 0.000123456, 0, 12345.6789)] == [
        "$0.00002", "$0.0144", "$0.00012", "$0.0000", "$12,345.6789",
    ]  # fmt: skip
    assert decimal(float("nan")) == "n/a"
    assert [seconds(v) for v in (0.0004, 0.1, 12345.678, 1e9, 1e308, -2e10)] == [
        "0.4ms", "0.10s", "12,345.68s", "1.000e+09s", "1.000e+308s", "-2.000e+10s",
    ]  # fmt: skip
    assert money(1e300) == "$1.000e+300"


def test_the_budget_says_what_it_spent_at_every_magnitude(tmp_path: Path) -> None:
    budget = Budget(tmp_path, 1.0)
    budget.add(1e300)
    assert budget.exhausted_reason() == "not started: --vibe-max-cost $1 reached (spent $1.000e+300)"


def resumed_run() -> RunRecord:
    """A run resumed under --vibe-max-cost: 2 evals reused, 2 run now, 1 held back, 1 cut short."""
    held = "not started: --vibe-max-cost $0.02 reached (spent $0.0200)"
    return run(
        evals=[
            record("a", "passed", 0.01, reused_from="first.json"),
            record("b", "failed", 0.01, reused_from="first.json"),
            record("c", "passed", 0.01),
            record("d", "passed", 0.01),
            record("e", "skipped", None, message=held),
            record("f", "skipped", None, message="not finished: the session was interrupted"),
        ]
    )


def test_the_budget_counts_what_this_session_spent() -> None:
    """The budget's own count (its ledger), as its skips say it (spent $0.0200), and the reused
    records' cost apart, not counted."""
    assert budget_lines([resumed_run()], 0.02, 0.02) == [
        "Budget: $0.0200 spent of $0.02 (--vibe-max-cost; evals and their llm_judge judges); "
        "1 eval(s) not started; 2 reused eval(s) ($0.0200) not counted"
    ]
    assert budget_lines([run(evals=[record("c", "passed", 0.01)])], 0.02, 0.01) == [
        "Budget: $0.0100 spent of $0.02 (--vibe-max-cost; evals and their llm_judge judges)"
    ]
    assert budget_lines([resumed_run()], None, 0.0) == []


def test_the_resume_line_counts_reused_run_and_not_run_evals() -> None:
    assert resume_line([resumed_run()], "first.json") == (
        "Resumed: 2 eval(s) reused from first.json, 2 run in this session, 1 not started, "
        "1 not finished (--vibe-resume)"
    )
    assert resume_line([run(evals=[record("a", "passed", reused_from="f.json")])], "f.json") == (
        "Resumed: 1 eval(s) reused from f.json, 0 run in this session (--vibe-resume)"
    )


def test_the_resume_line_names_each_file_the_reused_evals_ran_in() -> None:
    """Records reused through a chain of resumed sessions name the file each ran in: the line
    counts the files and the evals of each (the first few, by name: by time)."""
    two = run(evals=[record("a", "passed", reused_from=f) for f in ("p1.json", "p2.json", "p1.json")])
    assert resume_line([two], "p2.json") == (
        "Resumed: 3 eval(s) reused from 2 files (p1.json: 2, p2.json: 1), 0 run in this session "
        "(--vibe-resume)"
    )
    five = run(evals=[record(f"e{i}", "passed", reused_from=f"p{i}.json") for i in range(5)])
    assert resume_line([five], "p4.json") == (
        "Resumed: 5 eval(s) reused from 5 files (p0.json: 1, p1.json: 1, p2.json: 1, and 2 more), "
        "0 run in this session (--vibe-resume)"
    )
    assert resume_line([run(evals=[record("a", "passed")])], "p4.json") == (
        "Resumed: 0 eval(s) reused from p4.json, 1 run in this session (--vibe-resume)"
    )


def test_the_resume_line_orders_files_of_the_same_second_as_they_were_written() -> None:
    """Two sessions that wrote in the same second: ``<stamp>.json`` came before ``<stamp>-2.json``,
    although as text ``-2`` sorts first."""
    first, second = ".vibeeval/results/20261127T180726Z.json", ".vibeeval/results/20261127T180726Z-2.json"
    both = run(evals=[record("a", "passed", reused_from=f) for f in (second, first, first)])
    assert resume_line([both], second) == (
        f"Resumed: 3 eval(s) reused from 2 files ({first}: 2, {second}: 1), 0 run in this session "
        "(--vibe-resume)"
    )
