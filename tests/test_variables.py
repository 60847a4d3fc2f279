"""The formula variables: the token variables, per-eval tokens, and the Scores page's table listing
every variable of the registry with its unit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import XDIST_MODES, load_json, run, run_of, run_summary, write

from pytest_vibeeval.results import EvalRecord
from pytest_vibeeval.scoring.variables import (
    BUILTIN_RUN_VARIABLES,
    EVAL_VARIABLES,
    compute_variables,
    eval_name_clash,
    eval_name_clashes,
    run_variable_names,
    variable_clash,
)

SCORES = Path(__file__).resolve().parent.parent / "docs" / "scores.md"


def record(name: str, outcome: str = "passed", *, named: bool = True, **extra: Any) -> EvalRecord:
    return EvalRecord(name=name, named=named, nodeid=f"s.eval.yaml::{name}[c]", outcome=outcome, **extra)  # type: ignore[arg-type]


def test_token_totals_when_every_eval_reported_them() -> None:
    values, reasons = compute_variables(
        [
            record("a", input_tokens=10, output_tokens=3),
            record("b", "failed", input_tokens=5, output_tokens=4),
            record("c", "skipped"),  # skipped evals are not counted
        ]
    )
    assert values["total_input_tokens"] == 15.0
    assert values["total_output_tokens"] == 7.0
    assert "total_input_tokens" not in reasons and "total_output_tokens" not in reasons


def test_token_totals_are_null_with_a_reason_unless_every_eval_reported_them() -> None:
    values, reasons = compute_variables(
        [
            record("a", input_tokens=10, output_tokens=3),
            record("b", output_tokens=4),
        ]
    )
    assert values["total_output_tokens"] == 7.0
    assert values["total_input_tokens"] is None
    assert reasons["total_input_tokens"] == "input tokens unknown for 1 of 2 evals (b)"

    values, reasons = compute_variables([record("a"), record("b", "error")])
    assert values["total_input_tokens"] is None and values["total_output_tokens"] is None
    assert reasons["total_output_tokens"] == "no eval reported output tokens"

    values, reasons = compute_variables([record("a", "skipped")])
    assert reasons["total_input_tokens"] == "no eval ran"


def test_per_eval_tokens_are_its_output_tokens() -> None:
    values, reasons = compute_variables(
        [
            record("critical-eval", input_tokens=100, output_tokens=12),
            record("quiet"),
            record("gone", "skipped"),
            record("unnamed-1", named=False, output_tokens=5),
        ]
    )
    assert values["critical-eval_tokens"] == 12.0
    assert values["quiet_tokens"] is None
    assert reasons["quiet_tokens"] == "eval 'quiet' reported no output tokens"
    assert values["gone_tokens"] is None
    assert reasons["gone_tokens"] == "eval 'gone' was skipped"
    assert "unnamed-1_tokens" not in values  # only named evals have per-eval variables


def test_every_variable_of_the_run_is_in_the_map() -> None:
    values, _ = compute_variables([record("a", output_tokens=1), record("b", named=False)])
    assert set(values) == {v.name for v in BUILTIN_RUN_VARIABLES} | {"a" + v.suffix for v in EVAL_VARIABLES}


def test_eval_name_that_would_define_a_run_wide_token_variable_is_rejected(pytester: pytest.Pytester) -> None:
    suite = {
        "metadata": {"name": "clash", "model": "m"},
        "evals": [{"name": "total_output", "prompt": "hi", "checks": [{"match": "*"}]}],
    }
    write(pytester.path / "clash.eval.yaml", yaml.safe_dump(suite))
    result = run(pytester)
    assert "would define the formula variable(s) 'total_output_tokens'" in "\n".join(result.outlines)


def test_eval_name_clashes_cover_every_suffix() -> None:
    """An eval named ``<other eval><suffix>`` for any per-eval variable's suffix clashes; the pass
    flag's empty suffix is a duplicate name, reported as such elsewhere."""
    for variable in EVAL_VARIABLES:
        if variable.suffix:
            named = ["run-a", f"run-a{variable.suffix}"]
            assert eval_name_clashes(named) == [(f"run-a{variable.suffix}", "run-a", variable)]
            assert eval_name_clashes(reversed(named)) == [(f"run-a{variable.suffix}", "run-a", variable)]
    assert eval_name_clashes(["x", "y_cost", "x-cost", "x_costs", "_cost"]) == []


def test_a_suites_eval_name_clash_check_finds_what_the_general_one_does() -> None:
    """A suite checks its eval names against the stems of its run-wide variables (a frozenset,
    cached): every name the check over each name's own variables finds, it finds too, with the
    same message; extension-registered variables, case and non-ASCII names included."""
    run = [*run_variable_names(), "my_metric_cost", "Ünï_score", "x_tokens_tokens"]
    suffixes = [variable.suffix for variable in EVAL_VARIABLES]
    names = {r.removesuffix(s) for r in run for s in suffixes} | {
        *run,
        "MY_METRIC",
        "ünï",
        "x",
        "x_tokens",
        "other",
    }
    clashing = [name for name in sorted(names) if variable_clash(name, run)]
    assert len(clashing) > len(run)
    for name in sorted(names):
        assert variable_clash(name, frozenset(run)) == variable_clash(name, run), name


def test_eval_name_clash_message() -> None:
    ((name, owner, variable),) = eval_name_clashes(["x", "x_tokens"])
    assert eval_name_clash(name, owner, variable, where=" (line 3)") == (
        "eval name 'x_tokens' clashes with eval 'x' (line 3): in a score formula 'x_tokens' would be "
        "both this eval's pass flag and that eval's `<name>_tokens` variable; rename one of the two evals"
    )
    assert eval_name_clash(name, owner, variable, noun="evaluation", label="id").startswith(
        "evaluation id 'x_tokens' clashes with evaluation 'x': "
    )


# --- the documentation ----------------------------------------------------------------------------


def _documented_variable_rows() -> dict[str, tuple[str, str]]:
    """Each variable named in the first column of the Scores page's first section → (unit, meaning)."""
    text = SCORES.read_text(encoding="utf-8")
    section = text[: text.index("\n## ")]
    rows: dict[str, tuple[str, str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("variable", "---"):
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = (cells[1], cells[2])
    return rows


def test_the_docs_list_every_variable_with_its_unit_and_meaning() -> None:
    rows = _documented_variable_rows()
    expected = {v.name: v.unit for v in BUILTIN_RUN_VARIABLES}
    expected |= {f"<name>{v.suffix}": v.unit for v in EVAL_VARIABLES}
    missing = sorted(set(expected) - set(rows))
    assert not missing, f"variables missing from the table of docs/scores.md: {missing}"
    for name, unit in expected.items():
        assert rows[name][0] == unit, f"docs unit of {name!r}: {rows[name][0]!r}, registry: {unit!r}"
        assert rows[name][1], f"docs meaning of {name!r} is empty"
    unknown = sorted(set(rows) - set(expected))
    assert not unknown, f"docs/scores.md lists variables that do not exist: {unknown}"


# --- end to end ---------------------------------------------------------------------------------

APP = """
def answer(prompt, context):
    if "silent" in prompt:
        return {"response": "4"}
    return {"response": "4", "input_tokens": 7, "output_tokens": 3 if "short" in prompt else 11}
"""


def token_suite(root: Path, *, silent: bool = False) -> None:
    write(root / "vibe_tok_app.py", APP)
    evals: list[dict[str, Any]] = [
        {"name": "short-one", "prompt": "short: 2 + 2?", "checks": [{"match": "*4*"}]},
        {"name": "long", "prompt": "long: 2 + 2?", "checks": [{"match": "*4*"}]},
    ]
    if silent:
        evals.append({"name": "mute", "prompt": "silent: 2 + 2?", "checks": [{"match": "*4*"}]})
    suite = {
        "metadata": {"name": "tok", "model": "m"},
        "evals": evals,
        "score": {"formula": "total_output_tokens / total_input_tokens + short-one_tokens"},
        "configurations": {"app": {"python": "vibe_tok_app:answer"}},
    }
    write(root / "tok.eval.yaml", yaml.safe_dump(suite, sort_keys=False))


@XDIST_MODES
def test_token_variables_in_the_results_and_the_score(pytester: pytest.Pytester, xdist: list[str]) -> None:
    token_suite(pytester.path)
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path), xdist=xdist)
    assert result.ret == 0
    run_record = run_of(load_json(path), "app")
    variables = run_record["variables"]
    assert variables["total_input_tokens"] == 14.0
    assert variables["total_output_tokens"] == 14.0
    assert variables["short-one_tokens"] == 3.0 and variables["long_tokens"] == 11.0
    assert run_record["score"] == pytest.approx(14 / 14 + 3)
    assert run_record["score_breakdown"] == "14 / 14 + 3"


def test_token_total_null_when_an_eval_reported_none(pytester: pytest.Pytester) -> None:
    token_suite(pytester.path, silent=True)
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path))
    run_record = run_of(load_json(path), "app")
    assert run_record["variables"]["total_input_tokens"] is None
    assert run_record["variables"]["mute_tokens"] is None
    assert run_record["score"] is None
    assert run_record["score_error"] == (
        "no value for total_input_tokens: input tokens unknown for 1 of 3 evals (mute); "
        "total_output_tokens: output tokens unknown for 1 of 3 evals (mute)"
    )
    assert (
        "Score: null (formula: total_output_tokens / total_input_tokens + short-one_tokens)"
        in run_summary(result)
    )


def test_costs_that_add_up_to_infinity_are_no_value() -> None:
    records = [EvalRecord(name=n, nodeid=f"s::{n}[c]", outcome="passed", cost=1.5e308) for n in "ab"]
    values, reasons = compute_variables(records)
    assert values["total_cost"] is None and values["avg_cost"] is None
    assert reasons["total_cost"] == "the evals' costs add up to more than the largest number a float holds"
    assert values["max_cost"] == 1.5e308
