"""What collecting an eval costs: the work a suite, a configuration or a parser does once is not
done again for each eval, and every shortcut gives what the long way gave."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import yaml

from pytest_vibeeval import check_api
from pytest_vibeeval.extensions import builtin_extensions
from pytest_vibeeval.loading import suite as suite_module
from pytest_vibeeval.loading import yamlsource
from pytest_vibeeval.loading.configurations import configurations_for, select
from pytest_vibeeval.loading.suite import check_formula, load_suite, suite_formula
from pytest_vibeeval.plan import selected_evals, suite_plans

SCALARS = [
    "text", "Question 1?", "e0", "", "'quoted'", '"42"', "yes", "No", "on", "OFF", "y", "n", "true",
    "null", "~", "Null", "1", "-1", "+7", "0x1f", "0o17", "1_000", "1e3", "1.0e+3", ".5", ".inf",
    "-.Inf", "2024-01-01", "2024-01-01 10:00:00", "<<x", "!!str 5", "{a: b}", "[1, x]",
]  # fmt: skip


class _PurePythonFastLoader(yamlsource.FastResolving, yaml.SafeLoader):
    """The loader a PyYAML built without libyaml reads with."""


@pytest.fixture(params=["libyaml", "pure-python"])
def fast_loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs with the loader of this process and with the one of a PyYAML without libyaml
    (whose composer calls the resolver methods as bound methods, not from C)."""
    if request.param == "pure-python":
        monkeypatch.setattr(yamlsource, "_LOADER", _PurePythonFastLoader)


@pytest.mark.usefixtures("fast_loader")
def test_the_fast_loader_reads_every_scalar_as_pyyaml_does(tmp_path: Path) -> None:
    """Each value, plain and in a mapping and a list, reads as PyYAML's safe loader reads it."""
    for scalar in SCALARS:
        text = f"k: {scalar}\nl:\n  - {scalar}\n"
        path = tmp_path / "doc.yaml"
        path.write_text(text, encoding="utf-8")
        assert yamlsource.load_document(path).data == yaml.safe_load(text), scalar


def _resolver_calls(run: Any) -> int:
    """How often ``run`` calls into a resolver method of PyYAML written in Python."""
    calls = 0
    names = {"resolve", "descend_resolver", "ascend_resolver"}

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        code = frame.f_code
        if event == "call" and code.co_filename == yaml.resolver.__file__ and code.co_name in names:
            calls += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.usefixtures("fast_loader")
def test_composing_plain_nodes_calls_no_resolver_in_python(tmp_path: Path) -> None:
    """The composer called three of PyYAML's resolver methods in Python around every node (a value
    one of YAML's implicit types may claim, such as ``no`` or ``1e3``, still takes PyYAML's way)."""
    path = tmp_path / "suite.yaml"
    path.write_text("evals:\n  - prompt: e0\n    checks: [{match: '*42*'}]\n", encoding="utf-8")
    assert _resolver_calls(lambda: yamlsource.load_document(path)) == 0


def test_a_path_resolver_takes_pyyaml_s_own_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shortcuts hold only without path resolvers; with one, PyYAML's loader reads the file."""
    assert yamlsource._loader_class() is yamlsource._LOADER
    monkeypatch.setattr(yamlsource._BASE_LOADER, "yaml_path_resolvers", {("x",): "tag"})
    assert yamlsource._loader_class() is yamlsource._BASE_LOADER


def test_a_check_types_validator_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Looking the shared validator up by the value type hashed that type for every check."""
    check_type = builtin_extensions().checks.get("match")
    assert check_type is not None
    check_type.__dict__.pop("adapter", None)
    looked_up: list[object] = []
    real = check_api._adapter
    monkeypatch.setattr(
        check_api, "_adapter", lambda value_type: looked_up.append(value_type) or real(value_type)
    )
    first = check_type.adapter
    assert check_type.adapter is first is real(check_type.value_type)
    assert len(looked_up) == 1


NAMES = ["e1", "my-eval", "x_cost", "a-b-c"]


def _old_known(names: list[str], checks: list[str]) -> set[str]:
    """The set check_formula made before it looked names up lazily."""
    from pytest_vibeeval.scoring.variables import check_variable_names, eval_variable_names

    known = set(builtin_extensions().run_variables)
    for suffix in eval_variable_names(""):
        known.update(name + suffix for name in names)
    known.update(check_variable_names(checks))
    return known


def test_a_formulas_names_are_looked_up_without_every_evals_variables() -> None:
    known = suite_module._KnownNames(builtin_extensions().run_variables, NAMES, ["c1_score"])
    old = _old_known(NAMES, ["c1"])
    probes = [*old, "e1_cots", "e2", "my", "eval_cost", "x", "_cost", "", "a-b", "c1", "passed_x", 3]
    assert [probe in known for probe in probes] == [probe in old for probe in probes]
    assert "_all" not in vars(known)  # looked up, not listed
    assert list(known) == list(old) and len(known) == len(old) and bool(known)


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("e1_cots + 1", "unknown variable 'e1_cots' (did you mean 'e1_cost'?)"),
        ("my-evl + 1", "unknown variable 'my-evl' (did you mean 'my-eval'?)"),
        ("a-b-c_cost + x_cost_cost", None),
    ],
)
def test_formula_checks_read_as_before(tmp_path: Path, formula: str, message: str | None) -> None:
    from pytest_vibeeval.errors import InputError

    path = tmp_path / "suite.eval.yaml"
    if message is None:
        assert check_formula(path, formula, 1, NAMES).names
        return
    with pytest.raises(InputError) as info:
        check_formula(path, formula, 1, NAMES)
    assert message in info.value.render()


def test_a_prompt_eval_s_work_is_shared_by_its_configurations(tmp_path: Path) -> None:
    path = tmp_path / "suite.eval.yaml"
    path.write_text(
        "metadata: {name: s, model: m/x}\n"
        "configurations:\n  a: {name: A, python: 'app:answer'}\n  b: {name: B, python: 'app:answer'}\n"
        "evals:\n"
        + "".join(f"  - name: e{i}\n    prompt: Q{i}\n    checks: [{{match: '*'}}]\n" for i in range(3)),
        encoding="utf-8",
    )
    suite = load_suite(path)
    configs = configurations_for(suite, tmp_path, [])
    config_ids = select(configs.ids(), configs.defaults, None)
    plans = suite_plans(
        suite,
        configs,
        suite_formula(suite),
        config_ids,
        selected_evals(suite, None),
        source="suite.eval.yaml",
        variables={},
        repeats=1,
        group_of=lambda configuration, cid: None,
    )
    assert [plan.name for plan in plans] == ["e0[a]", "e0[b]", "e1[a]", "e1[b]", "e2[a]", "e2[b]"]
    assert plans[0].work is plans[1].work and plans[0].work is not plans[2].work
    assert [(plan.info.configuration, plan.info.eval_id, plan.info.eval_index) for plan in plans[:3]] == [
        ("a", "e0", 0),
        ("b", "e0", 0),
        ("a", "e1", 1),
    ]
    assert plans[0].info.configuration_name == "A" and plans[0].info.score_formula == "success_pct"
