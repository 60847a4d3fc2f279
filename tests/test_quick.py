"""quick_init and quick_copy: what they make is what the dataclass's own __init__ and pydantic's
model_copy make."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field

import pytest

from pytest_vibeeval.check_api import Response, Verdict
from pytest_vibeeval.checks import CheckResult
from pytest_vibeeval.providers.base import PromptRequest, ProviderResponse
from pytest_vibeeval.providers.pool import PoolKey
from pytest_vibeeval.quick import Prototype, quick_copy, quick_init
from pytest_vibeeval.results import CheckRecord, EvalRecord, RubricRecord


def _sample(quick: bool) -> type:
    @dataclass(frozen=True)
    class Sample:
        a: int
        b: str = "b"
        c: list[int] = field(default_factory=list)
        d: int = field(default=4, init=False)
        e: tuple[int, ...] = field(default_factory=tuple, init=False)
        f: int = field(default=6, kw_only=True)
        seen: list[str] = field(default_factory=list, compare=False, repr=False)

        def __post_init__(self) -> None:
            self.seen.append(f"post {self.a}")

    return quick_init(Sample) if quick else Sample


def test_quick_init_makes_what_the_generated_init_makes() -> None:
    plain, quick = _sample(False), _sample(True)
    assert str(inspect.signature(quick)) == str(inspect.signature(plain))
    for args, kwargs in [((1,), {}), ((1, "x", [2]), {"f": 7}), ((), {"a": 3, "c": [1]})]:
        want, got = plain(*args, **kwargs), quick(*args, **kwargs)
        assert repr(got) == repr(want)
        assert vars(got) == vars(want) and list(vars(got)) == list(vars(want))
        assert got == quick(*args, **kwargs) and got != plain(*args, **kwargs)
        assert got.seen == ["post " + str(got.a)]
    assert quick(1).c is not quick(1).c  # a factory's value is made for each instance
    with pytest.raises(TypeError):
        quick(1, "b", [], [], 5)  # f is keyword-only, d and e are not parameters
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick(1).a = 2  # type: ignore[misc]


@pytest.mark.parametrize("cls", [Response, Verdict, CheckResult, PromptRequest, ProviderResponse, PoolKey])
def test_the_per_item_dataclasses_stay_frozen_and_hashable(cls: type) -> None:
    assert cls.__dataclass_params__.frozen and cls.__hash__ is not None  # type: ignore[attr-defined]
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
    assert "self" not in inspect.signature(cls).parameters


def test_quick_copy_is_model_copy() -> None:
    rubric = RubricRecord(
        signals={"x": 1.0}, score=1.0, grade="A", complexity="simple", efficiency_basis="time", task="general"
    )
    record = EvalRecord(name="e", nodeid="n", outcome="skipped", check_names=["c"])
    check = CheckRecord(type="match", passed=True, message="m")
    updates = [
        {},
        {"outcome": "passed", "message": None},
        {"checks": [check], "rubric": rubric, "latency": 0.5},
    ]
    for update in updates:
        want, got = record.model_copy(update=update), quick_copy(record, update)
        assert type(got) is EvalRecord and got is not record
        assert got.__dict__ == want.__dict__ and list(got.__dict__) == list(want.__dict__)
        assert got.model_fields_set == want.model_fields_set
        for options in [{}, {"exclude_unset": True}, {"exclude_defaults": True}]:
            assert got.model_dump_json(**options) == want.model_dump_json(**options)  # type: ignore[arg-type]
    assert record.outcome == "skipped" and record.model_fields_set == {
        "name",
        "nodeid",
        "outcome",
        "check_names",
    }


def test_prototype_makes_what_validation_makes() -> None:
    blank = Prototype(EvalRecord(name="", nodeid="", outcome="skipped", check_names=[]))
    values = {"name": "e", "nodeid": "s.eval.yaml::e[c]", "outcome": "skipped", "check_names": ["c"]}
    want, got, again = EvalRecord(**values), blank.make(values), blank.make(values)
    assert got.__dict__ == want.__dict__ and got.model_fields_set == want.model_fields_set
    assert got.model_dump_json(exclude_defaults=True) == want.model_dump_json(exclude_defaults=True)
    # each made record has its own empty lists and dicts, as each validated one does
    assert got.steps is not again.steps and got.phase_durations is not again.phase_durations
    assert got.steps is not blank.model.steps
