"""Statistics over repeats: pass@k, pass^k, per-eval stats, the rubric's aggregation and the 95 % interval."""

from __future__ import annotations

import math

import pytest

from pytest_vibeeval.results import EvalRecord, EvalStats, Outcome
from pytest_vibeeval.scoring.repeats import (
    MeanCI,
    aggregate_scores,
    eval_stats,
    mean_ci95,
    pass_at_k,
    pass_hat_k,
    recency_order,
    remove_outliers,
    stats_from_counts,
    t_critical_975,
)


def test_pass_at_k_and_pass_hat_k_by_hand() -> None:
    # n=5, c=2, k=2: pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7; pass^2 = C(2,2)/C(5,2) = 1/10 = 0.1
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    # k=1 is the pass rate either way: 1 - C(3,1)/C(5,1) = 1 - 3/5 = 0.4; C(2,1)/C(5,1) = 2/5
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_hat_k(5, 2, 1) == pytest.approx(0.4)
    # n=10, c=3, k=5: pass@5 = 1 - C(7,5)/C(10,5) = 1 - 21/252 = 11/12; pass^5 = C(3,5)/C(10,5) = 0
    assert pass_at_k(10, 3, 5) == pytest.approx(11 / 12)
    assert pass_hat_k(10, 3, 5) == 0.0
    # n=4, c=3, k=2: pass@2 = 1 - C(1,2)/C(4,2) = 1 (n - c < k); pass^2 = C(3,2)/C(4,2) = 3/6 = 0.5
    assert pass_at_k(4, 3, 2) == 1.0
    assert pass_hat_k(4, 3, 2) == pytest.approx(0.5)


@pytest.mark.parametrize("n", [1, 3, 7])
def test_pass_at_k_edges(n: int) -> None:
    for k in range(1, n + 1):
        # c = 0: nothing can pass; c = n: everything passes.
        assert pass_at_k(n, 0, k) == 0.0
        assert pass_hat_k(n, 0, k) == 0.0
        assert pass_at_k(n, n, k) == 1.0
        assert pass_hat_k(n, n, k) == 1.0
    # k = n: all samples are drawn, so pass@n is 1 as soon as one passed and pass^n only when all did.
    if n > 1:
        assert pass_at_k(n, 1, n) == 1.0
        assert pass_hat_k(n, n - 1, n) == 0.0


def test_pass_at_k_large_n_is_stable() -> None:
    # 1 - C(150, 100)/C(200, 100): both binomials are ~1e40..1e58, the ratio is tiny but exact.
    assert pass_at_k(200, 50, 100) == pytest.approx(1.0)
    assert 0 < pass_hat_k(200, 150, 100) < 1e-10


@pytest.mark.parametrize(("n", "c", "k"), [(5, 2, 0), (5, 2, 6), (5, -1, 1), (5, 6, 1), (0, 0, 1)])
def test_pass_at_k_rejects_bad_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def records(*outcomes: Outcome, xfail: bool = False) -> list[EvalRecord]:
    return [
        EvalRecord(name="e", nodeid=f"s.yaml::e[c]#{i}", outcome=o, repeat=i, xfail=xfail)
        for i, o in enumerate(outcomes, start=1)
    ]


def test_eval_stats_counts_runs_and_pass_at_k() -> None:
    stats = eval_stats("e", records("passed", "failed", "skipped", "passed", "error", "failed"), None)
    assert (stats.runs, stats.passed, stats.pass_rate) == (5, 2, 0.4)
    assert stats.pass_at_k.keys() == {"1", "2", "3", "4", "5"}
    assert stats.pass_at_k["2"] == pytest.approx(0.7)
    assert stats.pass_hat_k["2"] == pytest.approx(0.1)
    assert stats.status == "failed"
    assert not stats.passed_by_rate


def test_eval_stats_status() -> None:
    assert eval_stats("e", records("passed", "passed"), None).status == "passed"
    assert eval_stats("e", records("passed", "passed"), 0.9).passed_by_rate is False
    skipped = eval_stats("e", records("skipped", "skipped"), 0.5)
    assert (skipped.status, skipped.runs, skipped.pass_rate, skipped.pass_at_k) == ("skipped", 0, None, {})
    assert eval_stats("e", [], None).status == "skipped"
    # 4 of 5 = 0.8 meets min_pass_rate 0.8 exactly; 0.81 is not met.
    by_rate = eval_stats("e", records("passed", "passed", "failed", "passed", "passed"), 0.8)
    assert (by_rate.status, by_rate.passed_by_rate, by_rate.min_pass_rate) == ("passed", True, 0.8)
    assert eval_stats("e", records("passed", "passed", "failed", "passed", "passed"), 0.81).status == "failed"


def test_eval_stats_takes_xfail_outcomes_as_they_are() -> None:
    stats = eval_stats("e", records("failed", "passed", xfail=True), None)
    assert (stats.runs, stats.passed, stats.status) == (2, 1, "failed")


def test_stats_of_the_same_counts_are_made_once_and_handed_out_as_copies() -> None:
    first = stats_from_counts("a", 3, 2, 0.5)
    first.pass_at_k["1"] = 0.0  # a plugin changing one eval's stats changes no other's
    second = stats_from_counts("b", 3, 2, 0.5)
    assert second == EvalStats(
        name="b",
        runs=3,
        passed=2,
        pass_rate=2 / 3,
        pass_at_k={"1": pass_at_k(3, 2, 1), "2": pass_at_k(3, 2, 2), "3": pass_at_k(3, 2, 3)},
        pass_hat_k={"1": pass_hat_k(3, 2, 1), "2": pass_hat_k(3, 2, 2), "3": pass_hat_k(3, 2, 3)},
        min_pass_rate=0.5,
        status="passed",
        passed_by_rate=True,
    )
    assert second.model_fields_set == EvalStats.model_fields.keys()
    assert stats_from_counts("c", 0, 0, None).model_fields_set == {
        "name",
        "runs",
        "passed",
        "pass_rate",
        "min_pass_rate",
        "status",
    }


def test_remove_outliers_keeps_recency_order() -> None:
    # 10 scores, fraction 0.1: floor(10 × 0.1) = 1 dropped at each end (the 10 and the 99).
    scores = [70, 99, 80, 10, 75, 85, 60, 90, 65, 50]
    assert remove_outliers(scores) == [70, 80, 75, 85, 60, 90, 65, 50]
    # Fewer than 10: nothing is dropped.
    assert remove_outliers(scores[:9]) == scores[:9]
    assert remove_outliers([]) == []
    # 20 scores: 2 at each end.
    twenty = list(range(20))
    assert remove_outliers(twenty) == list(range(2, 18))


def test_remove_outliers_ties_drop_the_oldest() -> None:
    # Most recent first: the lowest 1 ties at index 0 and 9 -> index 9 (the oldest) goes; same for the top.
    scores = [1, 5, 9, 5, 5, 5, 5, 5, 9, 1]
    kept = remove_outliers(scores)
    assert kept == [1, 5, 9, 5, 5, 5, 5, 5]
    # All equal: the k oldest go first as the "lowest", then the next oldest as the "highest".
    assert remove_outliers([7.0] * 10, 0.2) == [7.0] * 6


def test_remove_outliers_fraction() -> None:
    assert remove_outliers(list(range(10)), 0.3) == [3, 4, 5, 6]
    # 100 × 0.29 is 28.999999999999996 in floating point; the tolerance makes it 29.
    assert remove_outliers(list(range(100)), 0.29) == list(range(29, 71))
    # At most (n - 1) // 2 from each end, so something always remains.
    assert remove_outliers([1, 2, 3], 0.49) == [2]
    with pytest.raises(ValueError):
        remove_outliers([1.0], 0.5)
    with pytest.raises(ValueError):
        remove_outliers([1.0], -0.1)


def test_aggregate_scores_by_hand() -> None:
    # Most recent first. 10 scores: floor(10 × 0.1) = 1 trimmed at each end: the 10 and the 99 go.
    scores = [70, 99, 80, 10, 75, 85, 60, 90, 65, 50]
    # Kept in order: 70, 80, 75, 85, 60, 90, 65, 50; the weights stop at five, so 90, 65 and 50 do not count:
    # (70·1.0 + 80·0.9 + 75·0.8 + 85·0.7 + 60·0.6) / (1.0 + 0.9 + 0.8 + 0.7 + 0.6)
    # = (70 + 72 + 60 + 59.5 + 36) / 4.0 = 297.5 / 4 = 74.375
    assert aggregate_scores(scores) == pytest.approx(74.375)


def test_aggregate_scores_short_lists() -> None:
    assert aggregate_scores([]) is None
    assert aggregate_scores([42.0]) == 42.0
    # (90·1.0 + 60·0.9) / 1.9 = 144 / 1.9
    assert aggregate_scores([90, 60]) == pytest.approx(144 / 1.9)


def test_aggregate_scores_matches_the_document() -> None:
    def document(executions: list[float]) -> float:
        trimmed = remove_outliers(executions, 0.1)
        weights = [1.0, 0.9, 0.8, 0.7, 0.6][: len(trimmed)]
        weighted_sum = sum(s * w for s, w in zip(trimmed, weights, strict=False))
        total_weight = sum(weights[: len(trimmed)])
        return weighted_sum / total_weight

    for n in range(1, 25):
        scores = [float((i * 37) % 101) for i in range(n)]
        assert aggregate_scores(scores) == pytest.approx(document(scores))


def test_t_critical_values() -> None:
    assert t_critical_975(1) == pytest.approx(12.706, abs=1e-3)
    assert t_critical_975(2) == pytest.approx(4.303, abs=1e-3)
    assert t_critical_975(4) == pytest.approx(2.776, abs=1e-3)
    assert t_critical_975(30) == pytest.approx(2.042, abs=1e-3)
    # Above the table, the Cornish-Fisher expansion against the known values.
    assert t_critical_975(40) == pytest.approx(2.021, abs=1e-3)
    assert t_critical_975(60) == pytest.approx(2.000, abs=1e-3)
    assert t_critical_975(120) == pytest.approx(1.980, abs=1e-3)
    assert t_critical_975(10**6) == pytest.approx(1.95996, abs=1e-5)
    # The expansion joins the table smoothly: t(31) lies between t(30) and t(40).
    assert t_critical_975(40) < t_critical_975(31) < t_critical_975(30)
    with pytest.raises(ValueError):
        t_critical_975(0)


def test_mean_ci95_by_hand() -> None:
    # [80, 90, 100]: mean 90, s = sqrt((100 + 0 + 100) / 2) = 10, t(0.975, 2) = 4.303,
    # half-width = 4.303 · 10 / sqrt(3) = 24.843...
    result = mean_ci95([80, 90, 100])
    assert result is not None
    half = 4.3027 * 10 / math.sqrt(3)
    assert result.mean == 90
    assert result.interval == pytest.approx((90 - half, 90 + half))
    assert half == pytest.approx(24.84, abs=0.01)


def test_mean_ci95_edges() -> None:
    assert mean_ci95([]) is None
    assert mean_ci95([70.0]) == MeanCI(70.0, None)
    assert mean_ci95([5.0, 5.0, 5.0]) == MeanCI(5.0, (5.0, 5.0))
    # Two values: s = |a - b| / sqrt(2) = 1.4142..., t(1) = 12.706, half = 12.706 · 1.4142 / sqrt(2) = 12.706
    two = mean_ci95([1.0, 3.0])
    assert two is not None and two.interval == pytest.approx((2 - 12.7062, 2 + 12.7062))


def test_recency_order() -> None:
    assert recency_order([10.0, None, 30.0, 40.0]) == [40.0, 30.0, 10.0]
    assert recency_order([]) == []
    assert recency_order([None]) == []
