"""Unit tests for pytest_vibeeval.scoring.aggregate: reports in, runs out (grouping, metrics, score,
notes)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from pytest_vibeeval.results import EvalRecord, RunRecord
from pytest_vibeeval.scoring.aggregate import Aggregator, RunInfo
from pytest_vibeeval.scoring.variables import compute_variables

SOURCE = "suites/math.eval.yaml"
SUITE_EVALS = 6  # evals in the suite file, selected or not
NAMED = {"add", "mul", "sub", "xf", "skipme", "crashy", "critical-eval", "secondary-eval"}


def nodeid(eval_id: str, config: str, source: str = SOURCE) -> str:
    return f"{source}::{eval_id}[{config}]"


def run_info(
    eval_id: str,
    config: str,
    formula: str = "success_pct / total_cost",
    *,
    source: str = SOURCE,
    suite_evals: int = SUITE_EVALS,
) -> RunInfo:
    return RunInfo(
        suite="math",
        source=source,
        configuration=config,
        configuration_name="Fast model" if config == "fast" else None,
        score_formula=formula,
        eval_id=eval_id,
        named=eval_id in NAMED,
        suite_evals=suite_evals,
    )


def eval_record(
    eval_id: str,
    config: str,
    outcome: str,
    latency: float | None = None,
    cost: float | None = None,
    *,
    source: str = SOURCE,
    **extra: Any,
) -> EvalRecord:
    return EvalRecord(
        name=eval_id,
        named=eval_id in NAMED,
        nodeid=nodeid(eval_id, config, source),
        outcome=outcome,  # type: ignore[arg-type]
        latency=latency,
        cost=cost,
        **extra,
    )


def feed(
    agg: Aggregator,
    info: RunInfo,
    record: EvalRecord | None,
    *,
    setup: str = "passed",
    call: str | None = None,
    teardown: str = "passed",
    longrepr: str | None = None,
    wasxfail: bool = False,
) -> None:
    """The three reports pytest makes for one item, as the plugin passes them on.

    The RunInfo rides on every report; the record is attached during the call, so the call and
    teardown reports carry it. A failed setup means no call report.
    """
    nid = nodeid(info.eval_id, info.configuration, info.source)
    if setup != "passed":
        agg.add_report(nid, "setup", setup, info, None, longrepr, False)
        agg.add_report(nid, "teardown", teardown, info, None, None, False)
        return
    agg.add_report(nid, "setup", "passed", info, None, None, False)
    outcome = (
        call
        or {"passed": "passed", "failed": "failed", "error": "failed", "skipped": "skipped"}[
            record.outcome if record else "passed"
        ]
    )
    call_longrepr = longrepr if outcome != "passed" else None
    if record is not None and record.message and outcome != "passed" and longrepr is None:
        call_longrepr = record.message
    agg.add_report(nid, "call", outcome, info, record, call_longrepr, wasxfail)
    teardown_longrepr = longrepr if teardown != "passed" else None
    agg.add_report(nid, "teardown", teardown, info, record, teardown_longrepr, False)


def crash(agg: Aggregator, eval_id: str, config: str, source: str = SOURCE) -> None:
    """What xdist reports for an item whose worker died: no user properties, when='???'."""
    agg.add_report(
        nodeid(eval_id, config, source),
        "???",
        "failed",
        None,
        None,
        "worker 'gw0' crashed while running 'suites/math.eval.yaml::x'",
        False,
    )


def by_config(runs: list[RunRecord]) -> dict[str, RunRecord]:
    return {run.configuration: run for run in runs}


def by_name(run: RunRecord) -> dict[str, EvalRecord]:
    return {record.name: record for record in run.evals}


@pytest.fixture
def two_configs() -> list[RunRecord]:
    """One suite of six evals, five selected, against two configurations."""
    agg = Aggregator()
    # fast: every eval reports latency and cost
    feed(agg, run_info("add", "fast"), eval_record("add", "fast", "passed", 1.0, 0.01))
    feed(
        agg,
        run_info("sub", "fast"),
        eval_record("sub", "fast", "failed", 2.0, 0.02, message="checks failed:\n  FAIL match"),
    )
    feed(agg, run_info("what-is-2-2", "fast"), eval_record("what-is-2-2", "fast", "passed", 0.5, 0.005))
    feed(
        agg,
        run_info("skipme", "fast"),
        eval_record("skipme", "fast", "skipped", message="the `semantic` check is not available"),
    )
    feed(
        agg,
        run_info("xf", "fast"),
        eval_record("xf", "fast", "failed", 1.5, 0.015, xfail=True, message="checks failed"),
        call="skipped",
        wasxfail=True,
    )
    # slow: no eval reports cost; one setup fails; one worker crashes
    feed(agg, run_info("add", "slow"), eval_record("add", "slow", "passed", 3.0))
    feed(agg, run_info("sub", "slow"), None, setup="failed", longrepr="E   RuntimeError: no provider")
    feed(agg, run_info("what-is-2-2", "slow"), eval_record("what-is-2-2", "slow", "passed", 1.0))
    crash(agg, "skipme", "slow")
    feed(
        agg,
        run_info("xf", "slow"),
        eval_record("xf", "slow", "failed", 2.0, xfail=True, message="checks failed"),
        call="skipped",
        wasxfail=True,
    )
    return agg.runs()


def test_runs_are_grouped_by_source_and_configuration(two_configs: list[RunRecord]) -> None:
    assert [(r.source, r.configuration) for r in two_configs] == [(SOURCE, "fast"), (SOURCE, "slow")]
    fast, slow = two_configs
    assert fast.suite == slow.suite == "math"
    assert fast.configuration_name == "Fast model"
    assert slow.configuration_name is None
    assert fast.score_formula == "success_pct / total_cost"
    assert {r.nodeid for r in fast.evals} == {
        nodeid(e, "fast") for e in ("add", "sub", "what-is-2-2", "skipme", "xf")
    }
    assert {r.nodeid for r in slow.evals} == {
        nodeid(e, "slow") for e in ("add", "sub", "what-is-2-2", "skipme", "xf")
    }
    assert [r.nodeid for r in fast.evals] == sorted(r.nodeid for r in fast.evals)


def test_counts_and_success_pct_skip_skipped_evals(two_configs: list[RunRecord]) -> None:
    fast = two_configs[0].metrics
    # add, what-is-2-2 passed; sub and xf (an xfail keeps its failed record) failed; skipme skipped
    assert fast["passed"] == 2
    assert fast["failed"] == 2
    assert fast["total"] == 4
    assert fast["success_pct"] == pytest.approx(50.0)
    assert fast["skipped"] == 1
    assert fast["errors"] == 0


def test_latency_and_cost_aggregates(two_configs: list[RunRecord]) -> None:
    fast = two_configs[0].metrics
    assert fast["total_latency"] == pytest.approx(5.0)  # 1.0 + 2.0 + 0.5 + 1.5, skipme not counted
    assert fast["avg_latency"] == pytest.approx(1.25)
    assert fast["min_latency"] == pytest.approx(0.5)
    assert fast["max_latency"] == pytest.approx(2.0)
    assert fast["total_cost"] == pytest.approx(0.05)
    assert fast["avg_cost"] == pytest.approx(0.0125)
    assert fast["min_cost"] == pytest.approx(0.005)
    assert fast["max_cost"] == pytest.approx(0.02)


def test_score_is_the_formula_over_the_run(two_configs: list[RunRecord]) -> None:
    fast = two_configs[0]
    assert fast.score == pytest.approx(50.0 / 0.05)  # 1000
    assert fast.score_error is None


def test_cost_is_null_with_a_reason_when_no_eval_reported_it(two_configs: list[RunRecord]) -> None:
    slow = two_configs[1]
    for name in ("total_cost", "avg_cost", "min_cost", "max_cost"):
        assert slow.metrics[name] is None
        assert slow.variables[name] is None
    assert slow.score is None
    assert slow.score_error == "no value for total_cost: no eval reported cost"


def test_setup_failure_and_crash_are_errors_in_their_run(two_configs: list[RunRecord]) -> None:
    slow = two_configs[1]
    evals = by_name(slow)
    assert evals["sub"].outcome == "error"
    assert evals["sub"].message is not None
    assert evals["sub"].message.startswith("no result recorded (setup failed): ")
    assert "RuntimeError: no provider" in evals["sub"].message
    crashed = evals["skipme"]
    assert crashed.outcome == "error"
    assert crashed.nodeid == nodeid("skipme", "slow")
    assert crashed.message is not None
    assert crashed.message.startswith("no result recorded: worker 'gw0' crashed")
    assert "crashed" in crashed.message
    # add, what-is-2-2 passed; sub and skipme errored; xf failed
    assert slow.metrics["passed"] == 2
    assert slow.metrics["failed"] == 3
    assert slow.metrics["errors"] == 2
    assert slow.metrics["total"] == 5
    assert slow.metrics["skipped"] == 0
    assert slow.metrics["success_pct"] == pytest.approx(40.0)
    # latency of the evals without a result is unknown, so run-wide latency is too
    assert slow.metrics["avg_latency"] is None
    assert slow.variables["add_latency"] == 3.0


def test_crash_keeps_the_run_info_of_its_siblings(two_configs: list[RunRecord]) -> None:
    slow = two_configs[1]
    assert slow.suite == "math"
    assert slow.score_formula == "success_pct / total_cost"
    # the crashed eval is named in the other configuration, so it is named here too
    assert by_name(slow)["skipme"].named is True
    assert slow.variables["skipme"] == 0.0


def test_xfailed_eval_keeps_its_failed_record(two_configs: list[RunRecord]) -> None:
    xf = by_name(two_configs[0])["xf"]
    assert xf.outcome == "failed"
    assert xf.xfail is True
    assert xf.latency == 1.5
    assert two_configs[0].variables["xf"] == 0.0


def test_per_eval_variables_exist_for_named_evals_only(two_configs: list[RunRecord]) -> None:
    variables = two_configs[0].variables
    assert variables["add"] == 1.0
    assert variables["add_latency"] == 1.0
    assert variables["add_cost"] == 0.01
    assert variables["sub"] == 0.0
    assert variables["sub_latency"] == 2.0
    assert variables["sub_cost"] == 0.02
    assert variables["skipme"] is None  # skipped: no value
    assert not any(name.startswith("what-is-2-2") for name in variables)
    slow = two_configs[1].variables
    assert slow["sub"] == 0.0  # an error counts as a failure
    assert slow["sub_latency"] is None
    assert slow["add_cost"] is None


def test_notes_say_how_many_evals_were_selected_and_skipped(two_configs: list[RunRecord]) -> None:
    fast, slow = two_configs
    assert fast.notes == [
        "5 of 6 evals were selected; success_pct and the score are over the selected evals only",
        "1 eval(s) skipped and not counted: the `semantic` check is not available",
    ]
    assert slow.notes == [
        "5 of 6 evals were selected; success_pct and the score are over the selected evals only",
    ]


def test_no_note_when_every_eval_ran() -> None:
    agg = Aggregator()
    feed(agg, run_info("add", "fast", suite_evals=1), eval_record("add", "fast", "passed", 1.0, 0.5))
    (run,) = agg.runs()
    assert run.notes == []
    assert run.score == pytest.approx(200.0)


def test_cost_null_with_a_reason_when_only_some_evals_reported_it() -> None:
    agg = Aggregator()
    feed(agg, run_info("add", "c", suite_evals=2), eval_record("add", "c", "passed", 1.0, 0.01))
    feed(agg, run_info("sub", "c", suite_evals=2), eval_record("sub", "c", "passed", 1.0))
    (run,) = agg.runs()
    assert run.metrics["total_cost"] is None
    assert run.variables["add_cost"] == 0.01
    assert run.score is None
    assert run.score_error == "no value for total_cost: cost unknown for 1 of 2 evals (sub)"


def test_partial_cost_reason_names_at_most_three_evals() -> None:
    records = [eval_record(f"e{i}", "c", "passed", 1.0) for i in range(5)]
    records.append(eval_record("paid", "c", "passed", 1.0, 0.5))
    _, reasons = compute_variables(records)
    assert reasons["total_cost"] == "cost unknown for 5 of 6 evals (e0, e1, e2, …)"


def test_formula_referencing_an_eval_that_did_not_run() -> None:
    agg = Aggregator()
    formula = "add * 2 + mul + critical-eval"
    feed(agg, run_info("add", "c", formula), eval_record("add", "c", "passed", 1.0))
    (run,) = agg.runs()
    assert run.score is None
    assert run.score_error == (
        "no value for critical-eval: the eval did not run in this run (deselected?); "
        "mul: the eval did not run in this run (deselected?)"
    )
    assert run.variables["add"] == 1.0


def test_hyphenated_eval_names_in_the_formula() -> None:
    """The seed's example: ``(critical-eval * 2 + secondary-eval) / avg_latency``."""
    agg = Aggregator()
    formula = "(critical-eval * 2 + secondary-eval) / avg_latency"
    feed(agg, run_info("critical-eval", "c", formula), eval_record("critical-eval", "c", "passed", 1.0))
    feed(agg, run_info("secondary-eval", "c", formula), eval_record("secondary-eval", "c", "failed", 3.0))
    (run,) = agg.runs()
    assert run.variables["critical-eval"] == 1.0
    assert run.variables["secondary-eval_latency"] == 3.0
    assert run.score_error is None
    assert run.score == pytest.approx((1 * 2 + 0) / 2.0)


def test_crashed_named_eval_counts_as_a_failure_in_the_formula() -> None:
    """Only a crash report: the eval's id is in the formula, so it is a named eval that failed."""
    agg = Aggregator()
    formula = "add + crashy"
    feed(agg, run_info("add", "c", formula, suite_evals=2), eval_record("add", "c", "passed", 1.0))
    crash(agg, "crashy", "c")
    (run,) = agg.runs()
    crashed = by_name(run)["crashy"]
    assert crashed.outcome == "error"
    assert crashed.named is True
    assert run.variables["crashy"] == 0.0
    assert run.score == pytest.approx(1.0)
    assert run.metrics["success_pct"] == pytest.approx(50.0)


def test_crash_after_a_setup_report_uses_that_run_info() -> None:
    agg = Aggregator()
    info = run_info("add", "c", "success_pct")
    agg.add_report(nodeid("add", "c"), "setup", "passed", info, None, None, False)
    crash(agg, "add", "c")
    (run,) = agg.runs()
    (record,) = run.evals
    assert record.outcome == "error"
    assert record.named is True
    assert record.message is not None
    assert record.message.startswith("no result recorded: worker 'gw0' crashed")
    assert run.metrics["success_pct"] == 0.0


def test_crash_picks_the_configuration_name_of_its_own_configuration() -> None:
    agg = Aggregator()
    feed(agg, run_info("add", "other"), eval_record("add", "other", "passed", 1.0))
    feed(agg, run_info("sub", "fast"), eval_record("sub", "fast", "passed", 1.0))
    crash(agg, "add", "fast")
    runs = by_config(agg.runs())
    assert runs["fast"].configuration_name == "Fast model"
    assert runs["other"].configuration_name is None


def test_crash_in_an_unknown_suite_is_its_own_run() -> None:
    agg = Aggregator()
    crash(agg, "lonely", "cfg", source="other.eval.yaml")
    (run,) = agg.runs()
    assert (run.source, run.configuration, run.suite) == ("other.eval.yaml", "cfg", "other.eval.yaml")
    assert run.score_formula == "success_pct"
    assert run.score == 0.0
    assert run.evals[0].outcome == "error"


# pytest-rerunfailures runs an item's phases again and reports a failed attempt as "rerun".
def test_a_rerun_item_is_its_last_attempt_with_every_attempts_cost() -> None:
    agg = Aggregator()
    info = run_info("add", "c", "success_pct")
    feed(agg, info, eval_record("add", "c", "failed", 1.0, 0.01, judge_cost=0.001), call="rerun")
    feed(agg, info, eval_record("add", "c", "failed", 2.0, 0.02), call="rerun")
    feed(agg, info, eval_record("add", "c", "passed", 3.0, 0.04, input_tokens=7))
    (run,) = agg.runs()
    (record,) = run.evals
    assert (record.outcome, record.latency, record.input_tokens, record.attempts) == ("passed", 3.0, 7, 3)
    assert (record.cost, record.rerun_cost, record.judge_cost) == pytest.approx((0.07, 0.03, 0.001))
    assert (run.metrics["passed"], run.metrics["total"]) == (1, 1)
    assert run.metrics["total_cost"] == pytest.approx(0.07)


def test_a_rerun_cost_is_unknown_when_an_attempt_reported_none() -> None:
    agg = Aggregator()
    info = run_info("add", "c", "success_pct")
    feed(agg, info, eval_record("add", "c", "failed", 1.0, None), call="rerun")
    feed(agg, info, eval_record("add", "c", "passed", 1.0, 0.04))
    (record,) = agg.runs()[0].evals
    assert (record.attempts, record.cost, record.rerun_cost) == (2, None, None)


def test_an_attempt_whose_worker_was_lost_counts_with_an_unknown_cost() -> None:
    """pytest-rerunfailures reports a lost worker's item as "rerun" and runs it on another worker."""
    agg = Aggregator()
    info = run_info("add", "c", "success_pct")
    lost = "worker 'gw0' crashed while running 'suites/math.eval.yaml::add[c]'"
    agg.add_report(nodeid("add", "c"), "???", "rerun", None, None, lost, False)
    feed(agg, info, eval_record("add", "c", "passed", 1.0, 0.04))
    (run,) = agg.runs()
    (record,) = run.evals
    assert (record.outcome, record.attempts, record.cost, record.rerun_cost) == ("passed", 2, None, None)
    assert run.metrics["success_pct"] == 100.0


def test_a_rerun_that_sends_no_record_leaves_the_earlier_attempts() -> None:
    """A rerun --vibe-max-cost held back fails without a record: the failed attempt stands."""
    agg = Aggregator()
    info = run_info("add", "c", "success_pct")
    feed(agg, info, eval_record("add", "c", "failed", 1.0, 0.01), call="rerun")
    held = "not rerun: --vibe-max-cost $0.01 reached (spent $0.0100): its earlier attempt's result stands"
    agg.add_report(nodeid("add", "c"), "setup", "passed", info, None, None, False)
    agg.add_report(nodeid("add", "c"), "call", "failed", info, None, held, False)
    agg.add_report(nodeid("add", "c"), "teardown", "passed", info, None, None, False)
    (record,) = agg.runs()[0].evals
    assert (record.outcome, record.attempts, record.cost) == ("failed", 1, 0.01)


def test_a_rerun_of_a_reused_record_costs_nothing_more() -> None:
    """--vibe-resume answers every attempt with the same record, paid for in the earlier session."""
    agg = Aggregator()
    info = run_info("add", "c", "success_pct")
    reused = eval_record("add", "c", "failed", 1.0, 0.01, reused_from="earlier.json")
    feed(agg, info, reused, call="rerun")
    feed(agg, info, reused)
    (record,) = agg.runs()[0].evals
    assert (record.attempts, record.cost) == (1, 0.01)


def test_teardown_failure_turns_a_passed_record_into_an_error() -> None:
    agg = Aggregator()
    feed(
        agg,
        run_info("add", "c", "success_pct"),
        eval_record("add", "c", "passed", 1.0),
        teardown="failed",
        longrepr="E   OSError: cleanup",
    )
    feed(agg, run_info("sub", "c", "success_pct"), eval_record("sub", "c", "failed", 1.0), teardown="failed")
    (run,) = agg.runs()
    evals = by_name(run)
    assert evals["add"].outcome == "error"
    assert evals["add"].message == "teardown failed: E   OSError: cleanup"
    assert evals["sub"].outcome == "failed"  # a failure stays a failure
    assert run.score == 0.0


def test_item_skipped_at_setup_is_skipped_with_its_reason() -> None:
    agg = Aggregator()
    feed(agg, run_info("add", "c", "success_pct"), eval_record("add", "c", "passed", 1.0))
    feed(agg, run_info("sub", "c", "success_pct"), None, setup="skipped", longrepr="Skipped: no API key")
    (run,) = agg.runs()
    sub = by_name(run)["sub"]
    assert sub.outcome == "skipped"
    assert sub.message == "Skipped: no API key"
    assert run.metrics["success_pct"] == 100.0
    assert run.metrics["total"] == 1
    assert run.metrics["skipped"] == 1
    assert "1 eval(s) skipped and not counted: Skipped: no API key" in run.notes


def test_only_skipped_evals_give_a_null_success_pct() -> None:
    agg = Aggregator()
    feed(agg, run_info("add", "c", "success_pct"), eval_record("add", "c", "skipped", message="no key"))
    (run,) = agg.runs()
    assert run.metrics["success_pct"] is None
    assert run.score is None
    assert run.score_error == "no value for success_pct: no eval ran"


def test_item_without_any_result_is_an_error() -> None:
    agg = Aggregator()
    info = run_info("add", "c", "success_pct")
    agg.add_report(nodeid("add", "c"), "setup", "passed", info, None, None, False)
    agg.add_report(nodeid("add", "c"), "teardown", "passed", info, None, None, False)
    (run,) = agg.runs()
    assert run.evals[0].outcome == "error"
    assert run.evals[0].message == "no result recorded"


def test_formula_that_no_longer_parses_gives_a_score_error() -> None:
    agg = Aggregator()
    feed(agg, run_info("add", "c", "success_pct // 2"), eval_record("add", "c", "passed", 1.0))
    (run,) = agg.runs()
    assert run.score is None
    assert run.score_error is not None
    assert "'//' is not allowed" in run.score_error


def test_division_by_zero_at_session_end() -> None:
    agg = Aggregator()
    feed(agg, run_info("add", "c", "success_pct / failed"), eval_record("add", "c", "passed", 1.0))
    (run,) = agg.runs()
    assert run.score is None
    assert run.score_error == "division by zero in 'success_pct / failed' with failed=0, success_pct=100"


def test_eval_named_like_a_run_variable_does_not_replace_it() -> None:
    """An eval called `passed` (or `total`, whose `total_latency` collides) must not change the metrics."""
    records = [
        EvalRecord(name="passed", named=True, nodeid="s::passed[c]", outcome="failed", latency=9.0),
        EvalRecord(name="total", named=True, nodeid="s::total[c]", outcome="passed", latency=1.0),
    ]
    values, _ = compute_variables(records)
    assert values["passed"] == 1.0  # one eval passed (the one called `total`)
    assert values["total"] == 2.0
    assert values["total_latency"] == 10.0


def test_a_crash_after_a_passing_call_report_is_an_error() -> None:
    """The worker died after the item passed (in its teardown): pytest counts a failure, so must we."""
    agg = Aggregator()
    info = run_info("add", "c", "success_pct")
    feed(agg, info, eval_record("add", "c", "passed", 1.0))
    crash(agg, "add", "c")
    (run,) = agg.runs()
    (record,) = run.evals
    assert record.outcome == "error"
    assert record.message is not None and "crashed" in record.message


def test_a_run_info_travels_as_json_unchanged() -> None:
    info = RunInfo(
        suite="math",
        source=SOURCE,
        configuration="fast",
        configuration_name="Fast model",
        score_formula="success_pct",
        eval_id="add",
        named=True,
        suite_evals=3,
        eval_index=2,
        score_min=0.5,
        score_max=None,
        score_canonical="success_pct",
        score_preset="success_pct",
        repeat=2,
        repeats=3,
        min_pass_rate=0.75,
        input_digest="abc",
    )
    assert RunInfo.from_json(info.to_json()) == info


def test_run_info_text_is_two_lines_whatever_its_strings_hold() -> None:
    """A newline, a line or paragraph separator, NUL, an emoji or a lone surrogate in a name stays
    escaped: the text is the run's line and the item's, and reads back the same."""
    odd = "a\nb\u2028c\u2029d\x00e🎉\udcff"
    info = replace(run_info(odd, odd, odd), suite=odd, configuration_name=odd, input_digest=odd)
    text = info.to_json()
    assert text.count("\n") == 1 and text.isascii()
    assert RunInfo.from_json(text) == info


@pytest.mark.parametrize(
    "text",
    [
        '{"suite": "math", "source": "s.eval.yaml"}',  # a keyed object, as an earlier release sent
        "",
        '["math"]\n["add", true, 0, 0, null]',  # too few run values
        # objects with as many keys as there are values: their keys must not pass for values
        json.dumps({f"k{n}": n for n in range(12)}) + '\n["add", true, 0, 0, null]',
        json.dumps(["m"] * 5 + [3, None, None, None, None, 1, None])
        + "\n"
        + json.dumps({f"k{n}": n for n in range(5)}),
    ],
)
def test_run_info_text_of_another_shape_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        RunInfo.from_json(text)


# The run info of another release with as many values, in another order: its suite and source
# swapped, untagged (as the releases before the tag sent it) or tagged with another format.
SWAPPED_RUN = ["s.eval.yaml", "math", "fast", None, "success_pct", 3, None, None, None, None, 1, None]
SWAPPED_ITEM = '\n["add",true,0,0,null]'


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (json.dumps(SWAPPED_RUN) + SWAPPED_ITEM, "an untagged format, where this release reads format 2"),
        (json.dumps([3, *SWAPPED_RUN]) + SWAPPED_ITEM, "format 3, where this release reads format 2"),
        (json.dumps([True, *SWAPPED_RUN]) + SWAPPED_ITEM, "an untagged format"),
    ],
    ids=["untagged", "another-format", "a-bool"],
)
def test_run_info_of_another_format_is_never_read_with_its_fields_shifted(text: str, says: str) -> None:
    """The field counts of two releases may match while their fields differ: the format tag, not
    the count, tells them apart (the controller then makes the item's run from its node id)."""
    with pytest.raises(ValueError, match=says):
        RunInfo.from_json(text)


def test_the_run_info_format_changes_with_its_fields() -> None:
    """Adding, removing or reordering a field of RunInfo fails here: give the text a new
    RUN_INFO_FORMAT with it, so that the controller of one release never reads another's shifted."""
    from pytest_vibeeval import transport

    assert (transport.RUN_INFO_FORMAT, transport._RUN_FIELDS, transport._ITEM_FIELDS) == (
        2,
        (
            "suite",
            "source",
            "configuration",
            "configuration_name",
            "score_formula",
            "suite_evals",
            "score_min",
            "score_max",
            "score_canonical",
            "score_preset",
            "repeats",
            "input_digest",
        ),
        ("eval_id", "named", "eval_index", "repeat", "min_pass_rate"),
    )


def test_a_canonical_formula_says_why_a_per_eval_variable_has_no_value() -> None:
    """The controller keeps the reasons of the variables the formula reads, and only those."""
    agg = Aggregator()
    formula = "add_cost + mul"
    info = replace(run_info("add", "c", formula), score_canonical=formula)
    feed(agg, info, eval_record("add", "c", "passed", 1.0))
    feed(agg, replace(info, eval_id="mul", eval_index=1), eval_record("mul", "c", "skipped"))
    (run,) = agg.runs()
    assert run.score is None
    assert run.score_error == (
        "no value for add_cost: eval 'add' reported no cost; mul: eval 'mul' was skipped"
    )
    assert run.variables["add_cost"] is None and run.variables["mul_latency"] is None


def test_an_item_s_run_info_is_read_without_json_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller reads every item's line of run info: the decoder's scanner reads it directly,
    without ``json.loads``'s checks and whitespace matching; text with spaces around it still reads
    the same, and text that is no JSON raises ``json.loads``'s own error."""
    from pytest_vibeeval import transport

    info = run_info("add", "fast")
    run_line, _, item_line = info.to_json().partition("\n")
    assert RunInfo.from_json(f"{run_line}\n{item_line}") == info  # the run's line read (and kept) once
    loads: list[str] = []
    real_loads = json.loads

    def counting(text: str) -> object:
        loads.append(text)
        return real_loads(text)

    monkeypatch.setattr(transport.json, "loads", counting)
    assert RunInfo.from_json(f"{run_line}\n{item_line}") == info
    assert loads == []
    assert RunInfo.from_json(f"{run_line}\n {item_line} ") == info
    with pytest.raises(ValueError, match="Expecting value: line 1 column 1"):
        RunInfo.from_json(f"{run_line}\nnot json")
    with pytest.raises(ValueError, match="Extra data"):
        RunInfo.from_json(f"{run_line}\n{item_line}]")
