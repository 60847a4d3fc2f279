"""The benchmark's targets (bench/targets.py) and the rows that carry them: each row names issue #21's
target where the issue sets one, at the sizes it names, and says whether the figure meets it. Pure
logic on made-up figures: nothing is run or timed here."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.collection import collection_row, memory_row
from bench.common import Row, Run, clean_env
from bench.output import idle_floor, output_rows
from bench.overhead import Point, python_rows, total_rows
from bench.run import _table, summary
from bench.targets import (
    KEPT_FACTOR,
    extra_verdict,
    kept_mb,
    kept_verdict,
    met_cell,
    ratio_verdict,
)
from pytest_vibeeval.excerpts import RESPONSE_EXCERPT_CHARS


def _point(evals: int, ours: float, plain: float, repeat: int = 3) -> Point:
    return Point(evals, repeat, Run(ours, ours, ""), Run(plain, plain, ""))


@pytest.mark.parametrize(
    ("ratio", "size", "expected"),
    [
        pytest.param(1.2, 100, ("≤ 1.20×", True), id="at-the-limit-meets"),
        pytest.param(1.21, 500, ("≤ 1.20×", False), id="above-misses"),
        pytest.param(0.9, 2000, ("≤ 1.20×", True), id="below-meets"),
        pytest.param(3.0, 50, ("—", None), id="size-the-issue-does-not-name"),
    ],
)
def test_ratio_verdict_applies_at_the_named_sizes(
    ratio: float, size: int, expected: tuple[str, bool | None]
) -> None:
    assert ratio_verdict(ratio, 1.2, size, (100, 500, 2000)) == expected


def test_ratio_verdict_without_sizes_always_applies() -> None:
    assert ratio_verdict(2.5, 2.0) == ("≤ 2.00×", False)


def test_extra_verdict_is_an_allowance_above_the_floor() -> None:
    assert extra_verdict(130.0, 100.0, 30.0) == ("≤ floor + 30 MB", True)
    assert extra_verdict(130.5, 100.0, 30.0) == ("≤ floor + 30 MB", False)
    assert extra_verdict(54.0, 53.0, 5.0, "idle")[0] == "≤ idle + 5 MB"


def test_what_is_kept_is_the_answer_and_its_excerpt() -> None:
    assert kept_mb(0) == RESPONSE_EXCERPT_CHARS / 2**20
    assert kept_mb(200_000_000) == (200_000_000 + RESPONSE_EXCERPT_CHARS) / 2**20
    assert kept_mb(1000, 3) == 3 * kept_mb(1000)
    allowance = KEPT_FACTOR * kept_mb(200_000_000)
    text, met = kept_verdict(53.6 + allowance, 53.6, 200_000_000)
    assert met is True and f"{allowance:.4g} MB" in text
    assert kept_verdict(53.6 + allowance + 0.01, 53.6, 200_000_000)[1] is False
    # the answer held three times over (e.g. a copy of it made for the record) misses
    assert kept_verdict(53.6 + 3 * 190.8, 53.6, 200_000_000)[1] is False


def test_met_cell() -> None:
    assert [met_cell(m) for m in (True, False, None)] == ["meets", "**misses**", "—"]


def test_total_rows_carry_the_overhead_target_per_n() -> None:
    points = [_point(50, 2.0, 1.0), _point(100, 1.1, 1.0), _point(500, 1.3, 1.0)]
    rows = total_rows("prompt-eval overhead", "sh agent", points, "-n 2")
    assert [r.case for r in rows] == [
        "sh agent, N=50, -n 2",
        "sh agent, N=100, -n 2",
        "sh agent, N=500, -n 2",
    ]
    assert [(r.target, r.met) for r in rows] == [("—", None), ("≤ 1.20×", True), ("≤ 1.20×", False)]
    assert rows[1].ratio == pytest.approx(1.1)


def test_python_rows_keep_the_marginal_cost_as_a_note() -> None:
    # ours: 1.0 s at 100, 5.0 s at 2000 -> 4.0 s / 1900 evals; plain: 0.5 s -> 2.4 s.
    rows = python_rows([_point(100, 1.0, 0.5), _point(2000, 5.0, 2.4)], "serial")
    assert [r.case for r in rows] == ["python: callable, N=100, serial", "python: callable, N=2000, serial"]
    assert "marginal" not in rows[0].note
    ours, plain = 4.0 / 1900 * 1000, 1.9 / 1900 * 1000
    assert f"marginal N=100→2000: {ours:.3f} vs {plain:.3f} ms/eval ({ours - plain:+.3f})" in rows[1].note
    assert rows[1].met is False  # 5.0 / 2.4 > 1.2


def test_collection_target_only_at_10000_items() -> None:
    assert collection_row(1000, 0.2, 0.04, 1.5, 0.6).met is None
    row = collection_row(10_000, 1.0, 0.58, 3.0, 1.7)
    assert (row.target, row.met) == ("≤ 2.00×", True)
    assert collection_row(10_000, 1.93, 0.58, 4.1, 1.7).met is False


def test_memory_target_only_at_10000_items_and_two_workers() -> None:
    ours = {"controller": 120.0, "gw0": 90.0, "gw1": 95.0}
    plain = {"controller": 100.0, "gw0": 70.0, "gw1": 71.0}
    row = memory_row(10_000, 2, ours, plain)
    assert (row.target, row.met) == ("≤ floor + 30 MB", True)
    assert "+20.0 MB" in row.note and "95.0 MB vs 71.0 MB" in row.note
    assert memory_row(10_000, 2, {**ours, "controller": 131.0}, plain).met is False
    assert memory_row(2000, 2, ours, plain).met is None
    assert memory_row(10_000, 3, ours, plain).met is None


def test_idle_floor_is_the_higher_idle_run() -> None:
    floor, spread = idle_floor({"controller": 53.2, "gw0": 53.6}, {"controller": 53.4, "gw0": 53.5})
    assert floor == {"controller": 53.4, "gw0": 53.6}
    assert spread == pytest.approx(0.2)


def test_output_rows_hold_a_reading_worker_to_what_it_keeps() -> None:
    idle = {"controller": 53.0, "gw0": 53.5, "gw1": 53.6}
    raised = {"controller": 54.0, "gw0": 53.6, "gw1": 434.5}  # the answer's bytes and its text
    controller, workers = output_rows("raised", raised, idle, 0.2, read=True)
    assert controller.target == "≤ idle + 5 MB" and controller.met is True
    assert workers.target.startswith("≤ idle + 2× kept") and workers.met is True
    assert workers.ours == "434.5 MB" and workers.floor == "53.6 MB (idle)"
    _, copied = output_rows("raised", {**raised, "gw1": 53.6 + 3 * 190.8}, idle, 0.2, read=True)
    assert copied.met is False  # a third copy of the answer
    _, not_read = output_rows("default", {**raised, "gw1": 53.7}, idle, 0.2, read=False)
    assert not_read.target == "≤ idle + 5 MB" and not_read.met is True


def test_table_and_summary_name_the_verdicts() -> None:
    rows = [
        Row("b", "meets", "1 s", "1 s", 1.0, "≤ 1.20×", True),
        Row("b", "misses", "2 s", "1 s", 2.0, "≤ 1.20×", False),
        Row("b", "no target", "1 s", "1 s", None),
    ]
    lines = _table(rows).splitlines()
    assert "verdict" in lines[0]
    assert "| meets |" in lines[2] and "| **misses** |" in lines[3] and "| — | — |" in lines[4]
    assert summary(rows).splitlines() == ["targets: 1 met, 1 missed", "  misses: b, misses (≤ 1.20×)"]


def test_clean_env_lets_python_write_bytecode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x")
    env = clean_env(tmp_path / "tmp", {"EXTRA": "1"})
    assert "PYTHONDONTWRITEBYTECODE" not in env and "PYTEST_ADDOPTS" not in env
    assert Path(env["PYTEST_DEBUG_TEMPROOT"]).parent == tmp_path / "tmp" and env["EXTRA"] == "1"
    assert Path(env["PYTEST_DEBUG_TEMPROOT"]).is_dir()
