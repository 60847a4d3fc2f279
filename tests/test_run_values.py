"""A run's variables as the controller keeps them (a tuple of values per eval) read as the dict they
were made from: the same items in the same order, whatever their layout."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from test_spool import record

from pytest_vibeeval.results import EvalRecord, RunRecord
from pytest_vibeeval.scoring.run_values import RunValues
from pytest_vibeeval.scoring.variables import (
    BUILTIN_RUN_VARIABLES,
    EVAL_VARIABLES,
    compute_run_values,
    compute_variables,
)

SUFFIXES = ["", "_latency", "_cost"]

LAYOUTS = {
    "regular": {"success_pct": 50.0, "passed": 1.0, "a": 1.0, "a_latency": 0.5, "a_cost": None,
                "b": 0.0, "b_latency": 0.25, "b_cost": 0.1, "x_score": 0.5},
    "no evals": {"success_pct": None, "passed": 0.0},
    "an eval without one of its names": {"success_pct": 50.0, "passed": 1.0, "a": 1.0, "a_cost": None,
                                         "b": 0.0, "b_latency": 0.25, "b_cost": 0.1},
    "names that end like suffixes": {"success_pct": 1.0, "passed": 1.0, "a_cost": 1.0,
                                     "a_cost_latency": 2.0, "a_cost_cost": 3.0, "a": 0.0},
}  # fmt: skip


@pytest.mark.parametrize("values", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_it_reads_as_the_dict_it_was_made_from(values: dict[str, float | None]) -> None:
    kept = RunValues(values, SUFFIXES, 2)
    assert list(kept) == list(values) and list(kept.items()) == list(values.items())
    assert list(kept.values()) == list(values.values()) and len(kept) == len(values)
    assert all(kept[name] == value and name in kept for name, value in values.items())
    assert kept.get("nope") is None and "a_tokens" not in kept and "c" not in kept
    assert kept == values and dict(kept) == values and repr(kept) == repr(values)
    with pytest.raises(KeyError):
        kept["zz_latency"]


def test_each_eval_is_one_tuple() -> None:
    kept = RunValues(LAYOUTS["regular"], SUFFIXES, 2)
    assert kept._evals == [("a", (1.0, 0.5, None)), ("b", (0.0, 0.25, 0.1))]
    assert kept._tail == {"x_score": 0.5}


def test_a_run_dumps_its_kept_variables_as_the_dict() -> None:
    records = [record("a"), record("b", "failed"), record("c", "skipped")]
    values, _ = compute_variables(records)
    assert len(values) > len(EVAL_VARIABLES) * 3
    kept = RunValues(values, [v.suffix for v in EVAL_VARIABLES], len(values) - len(EVAL_VARIABLES) * 3)
    assert len(kept._evals) == 3
    run = RunRecord(
        suite="s",
        source="s.eval.yaml",
        configuration="a",
        score=None,
        score_formula="success_pct",
        score_error=None,
        metrics={},
        variables=values,
        evals=[],
    )
    assert run.model_copy(update={"variables": kept}).model_dump_json(indent=2) == run.model_dump_json(
        indent=2
    )


NAME_SETS = {
    "distinct": ["a", "b", "c"],
    "x_cost beside x": ["x", "x_cost"],
    "a_structure beside a (a_structure_score twice)": ["a", "a_structure"],
    "an eval named like a run-wide variable": ["total", "b"],
    "an eval whose variable is a run-wide one": ["avg", "b"],
    "one eval twice (repeats)": ["a", "a", "b"],
}


@pytest.mark.parametrize("names", NAME_SETS.values(), ids=NAME_SETS.keys())
def test_the_controllers_values_are_the_dict_of_compute_variables(names: list[str]) -> None:
    outcomes = ["passed", "failed", "skipped", "error"]
    records = [record(name, outcomes[i % 4]) for i, name in enumerate(names)]
    records[0] = records[0].model_copy(update={"check_names": ["q"], "cost": 0.25})
    values, reasons = compute_variables(records)
    kept, all_reasons = compute_run_values(records, BUILTIN_RUN_VARIABLES, None, None)
    assert list(kept.items()) == list(values.items()) and all_reasons == reasons
    wanted = [*values][::3]
    _, some = compute_run_values(records, BUILTIN_RUN_VARIABLES, None, wanted)
    assert all(reasons[name] == reason for name, reason in some.items())
    assert all(some[name] == reasons[name] for name in wanted if name in reasons)


def test_each_records_per_eval_values_are_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run-wide means of per-eval variables (vybes_score, the rubric's) take the values of the
    evals' rows: each record's vybes is computed once, and the values are those computed anew."""
    from pytest_vibeeval.scoring import record_values

    records = [
        record(name, outcome) for name, outcome in (("a", "passed"), ("b", "failed"), ("c", "skipped"))
    ]
    records += [record("d", "passed", repeat=1), record("d", "failed", repeat=2)]  # an eval run twice
    records.append(record("e").model_copy(update={"named": False}))  # in the means, in no row
    values, reasons = compute_variables(records)
    calls: list[str] = []
    points = record_values.vybes_points

    def counted(one: EvalRecord) -> float:
        calls.append(one.name)
        return points(one)

    monkeypatch.setattr(record_values, "vybes_points", counted)
    kept, all_reasons = compute_run_values(records, BUILTIN_RUN_VARIABLES, None, None)
    assert list(kept.items()) == list(values.items()) and all_reasons == reasons
    # d ran twice: its row's mean, then the run's mean, read each of its records
    assert sorted(calls) == ["a", "b", "d", "d", "d", "d", "e"]


class Unhashable:
    """A plugin's run variable whose function is an object that is not hashable."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unhashable)

    def __call__(self, records: Sequence[EvalRecord]) -> tuple[float, None]:
        return float(len(records)), None


def test_a_plugins_run_variable_need_not_be_hashable() -> None:
    from pytest_vibeeval.scoring.variables import RunVariable

    ours = (*BUILTIN_RUN_VARIABLES, RunVariable("mine", "count", "records", Unhashable()))
    kept, _ = compute_run_values([record("a"), record("b")], ours, None, None)
    assert (
        kept["mine"] == 2.0
        and kept["vybes_score"] == compute_variables([record("a"), record("b")])[0]["vybes_score"]
    )
