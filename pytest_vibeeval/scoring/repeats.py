"""Statistics over repeated runs (``--vibe-repeat N``): pass@k, pass^k, per-eval stats, the rubric's
trimmed recency-weighted score aggregation and the 95 % interval of a mean.

Pure functions, no pytest: the plugin feeds them the records of a session.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import NamedTuple

from pydantic_core import to_json

from ..results import EvalRecord, EvalStats
from ..surrogates import model_json
from .record_values import ran

# Recency weights of the Scoring Rubric's ``aggregate_scores``: the most recent kept score first.
RECENCY_WEIGHTS = (1.0, 0.9, 0.8, 0.7, 0.6)

# Two-sided 95 % critical values of Student's t, t(0.975, df), for df = 1 … 30 (index df - 1).
T_975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip
Z_975 = 1.959963984540054


def _check_counts(n: int, c: int, k: int) -> None:
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n = {n}, got {k}")
    if not 0 <= c <= n:
        raise ValueError(f"c must be between 0 and n = {n}, got {c}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` passed: 1 - C(n-c, k) / C(n, k).

    The probability that at least one of ``k`` samples drawn without replacement passes (Chen et al.
    2021). Computed exactly with integers, then converted. ValueError unless 1 ≤ k ≤ n and 0 ≤ c ≤ n.
    """
    _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k from ``n`` samples of which ``c`` passed: C(c, k) / C(n, k).

    The probability that all ``k`` samples drawn without replacement pass (tau-bench). Same errors as
    :func:`pass_at_k`.
    """
    _check_counts(n, c, k)
    return float(Fraction(math.comb(c, k), math.comb(n, k)))


def eval_stats(name: str, records: Sequence[EvalRecord], min_pass_rate: float | None) -> EvalStats:
    """One eval's stats over its repeats.

    Skipped records are not runs. A run passed when its outcome is ``passed`` (an xfail record counts by
    its outcome too). Status: ``skipped`` when nothing ran; ``passed`` when every run passed, or when
    ``min_pass_rate`` is set and the pass rate reaches it (then ``passed_by_rate`` unless all passed);
    ``failed`` otherwise.
    """
    return stats_from_counts(name, *run_counts(records), min_pass_rate)


def run_counts(records: Sequence[EvalRecord]) -> tuple[int, int]:
    """How many of one eval's ``records`` ran (skipped ones are not runs) and how many passed."""
    counted = ran(records)
    return len(counted), sum(record.outcome == "passed" for record in counted)


def stats_from_counts(name: str, runs: int, passed: int, min_pass_rate: float | None) -> EvalStats:
    """:func:`eval_stats` from its counts: the runs that were not skipped and those that passed."""
    # A copy of the stats made once per counts: the controller makes every eval's stats anew each
    # time they are read (see ``aggregate._eval_stats``), and validating them cost twice the copy.
    if runs == 0:
        return EvalStats(
            name=name, runs=0, passed=0, pass_rate=None, min_pass_rate=min_pass_rate, status="skipped"
        )
    made = _stats_of_counts(runs, passed, min_pass_rate)
    return made.model_copy(
        update={"name": name, "pass_at_k": dict(made.pass_at_k), "pass_hat_k": dict(made.pass_hat_k)}
    )


_NAMELESS = '{\n  "name": ""'  # how the JSON of stats without a name begins (name is the first field)


def stats_json(name: str, runs: int, passed: int, min_pass_rate: float | None) -> str:
    """``model_json(stats_from_counts(...), indent=2)``, without making the stats: the text of the
    same counts' stats is made once and only the name differs (the results file writes every eval's
    stats, and making them cost more than dumping them)."""
    text = _stats_text(runs, passed, min_pass_rate)
    try:
        quoted = to_json(name).decode()
    except ValueError:  # a lone surrogate: model_json writes U+FFFD in its place
        quoted = None
    if quoted is None or not text.startswith(_NAMELESS):
        return model_json(stats_from_counts(name, runs, passed, min_pass_rate), indent=2)
    return f'{{\n  "name": {quoted}{text[len(_NAMELESS) :]}'


@functools.cache
def _stats_text(runs: int, passed: int, min_pass_rate: float | None) -> str:
    return model_json(stats_from_counts("", runs, passed, min_pass_rate), indent=2)


@functools.cache
def _stats_of_counts(runs: int, passed: int, min_pass_rate: float | None) -> EvalStats:
    """:func:`stats_from_counts` of evals that ran, without a name (kept: never handed out, only
    copied)."""
    rate = passed / runs
    all_passed = passed == runs
    by_rate = not all_passed and min_pass_rate is not None and rate >= min_pass_rate
    return EvalStats(
        name="",
        runs=runs,
        passed=passed,
        pass_rate=rate,
        pass_at_k={str(k): pass_at_k(runs, passed, k) for k in range(1, runs + 1)},
        pass_hat_k={str(k): pass_hat_k(runs, passed, k) for k in range(1, runs + 1)},
        min_pass_rate=min_pass_rate,
        status="passed" if all_passed or by_rate else "failed",
        passed_by_rate=by_rate,
    )


def remove_outliers(scores: Sequence[float], fraction: float = 0.1) -> list[float]:
    """Drop the ``floor(n × fraction)`` highest and as many lowest scores; keep the rest in order.

    ``scores`` is most recent first. Among equal scores the oldest (latest in the list) is dropped first.
    The lowest are dropped first, then the highest among what is left, so at least one score always
    remains. ``fraction`` must be in [0, 0.5); ``n × fraction`` is floored with a 1e-9 tolerance, so
    100 × 0.29 (28.999999999999996 in binary floating point) drops 29.
    """
    if not 0 <= fraction < 0.5:
        raise ValueError(f"fraction must be in [0, 0.5), got {fraction}")
    n = len(scores)
    k = min(math.floor(n * fraction + 1e-9), (n - 1) // 2) if n else 0
    if k == 0:
        return list(scores)
    oldest_first = sorted(range(n), reverse=True)
    lowest = set(sorted(oldest_first, key=lambda i: scores[i])[:k])
    rest = [i for i in oldest_first if i not in lowest]
    dropped = lowest | set(sorted(rest, key=lambda i: -scores[i])[:k])
    return [score for i, score in enumerate(scores) if i not in dropped]


def aggregate_scores(scores_most_recent_first: Sequence[float]) -> float | None:
    """The Scoring Rubric's ``aggregate_scores``, exactly; None for no scores.

    Trim 10 % at each end (:func:`remove_outliers`), then take the weighted average of the kept scores
    with weights 1.0, 0.9, 0.8, 0.7, 0.6, most recent first. As in the document the weights stop at five,
    so only the five most recent kept scores count.
    """
    if not scores_most_recent_first:
        return None
    trimmed = remove_outliers(scores_most_recent_first, 0.1)
    weights = RECENCY_WEIGHTS[: len(trimmed)]
    weighted_sum = sum(score * weight for score, weight in zip(trimmed, weights, strict=False))
    return weighted_sum / sum(weights)


def t_critical_975(df: int) -> float:
    """Student's t(0.975, df): the two-sided 95 % critical value.

    A table for df ≤ 30; above, the Cornish–Fisher expansion of t around z = 1.959964 (four terms,
    error well below 1e-4 there).
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if df <= len(T_975):
        return T_975[df - 1]
    z = Z_975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


class MeanCI(NamedTuple):
    """A mean and its 95 % interval; ``interval`` is None from a single value."""

    mean: float
    interval: tuple[float, float] | None


def mean_ci95(values: Sequence[float]) -> MeanCI | None:
    """The mean of ``values`` and its 95 % confidence interval (Student's t, df = n - 1).

    None for no values; no interval for one value (the spread is unknown). Equal values give a
    zero-width interval.
    """
    if not values:
        return None
    import statistics  # only for repeated evals' confidence intervals

    mean = statistics.fmean(values)
    n = len(values)
    if n == 1:
        return MeanCI(mean, None)
    half = t_critical_975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return MeanCI(mean, (mean - half, mean + half))


def recency_order(scores_by_repeat: Sequence[float | None]) -> list[float]:
    """Scores of repeats 1 … N (None: no score) → the scores, most recent (highest repeat) first."""
    return [score for score in reversed(scores_by_repeat) if score is not None]
