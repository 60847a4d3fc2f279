"""The peers benchmark's own logic (bench/peers.py, bench/peer_install.py, bench/common.py): how it
reads promptfoo's and inspect_ai's results files to make sure each peer really ran and passed all N
evals, the Node version check, and the median. Offline: nothing is installed or run here. The
results files are shaped like those promptfoo 0.123.1 (``-o results.json``) and inspect_ai 0.3.285
(``--log-format json``) write, cut down to the fields read."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from bench.common import Run, median, median_of
from bench.peer_install import NODE_MINIMUM, parse_node_version
from bench.peers import INSPECT_TASK, Counts, check_counts, inspect_counts, promptfoo_counts


def _pf_result(
    i: int, output: str = "The answer is 42.", success: bool = True, cached: bool = False
) -> dict[str, Any]:
    response: dict[str, Any] = {"output": output}
    if cached:
        response["cached"] = True
    return {"testIdx": i, "vars": {"i": i}, "response": response, "success": success, "score": float(success)}


def _promptfoo(results: list[dict[str, Any]], **stats: int) -> dict[str, Any]:
    passed = sum(r["success"] for r in results)
    counts = {"successes": passed, "failures": len(results) - passed, "errors": 0, **stats}
    return {"evalId": "eval-1", "results": {"version": 3, "results": results, "stats": counts}}


def _sample(i: int, completion: str | None = "The answer is 42.", value: str = "C") -> dict[str, Any]:
    sample: dict[str, Any] = {"id": i, "scores": {"includes": {"value": value}}}
    if completion is not None:
        sample["output"] = {"model": "mockllm/model", "completion": completion}
    return sample


def _inspect(
    samples: list[dict[str, Any]], status: str = "success", completed: int | None = None
) -> dict[str, Any]:
    done = len(samples) if completed is None else completed
    return {
        "status": status,
        "results": {"total_samples": len(samples), "completed_samples": done},
        "samples": samples,
    }


def test_promptfoo_all_evals_ran_and_passed() -> None:
    assert promptfoo_counts(_promptfoo([_pf_result(i) for i in range(3)])) == Counts(3, 3)


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        pytest.param(
            [_pf_result(0), _pf_result(1, cached=True)], Counts(1, 1), id="a cached answer did not run"
        ),
        pytest.param(
            [_pf_result(0), {"testIdx": 1, "success": True}], Counts(1, 1), id="no response did not run"
        ),
        pytest.param([_pf_result(0), _pf_result(1, output="no idea")], Counts(2, 1), id="answer without 42"),
        pytest.param(
            [_pf_result(0), _pf_result(1, success=False)], Counts(2, 0), id="a failure: none passed"
        ),
    ],
)
def test_promptfoo_counts_only_real_passing_answers(results: list[dict[str, Any]], expected: Counts) -> None:
    assert promptfoo_counts(_promptfoo(results)) == expected


def test_promptfoo_stats_are_believed_only_when_they_say_less() -> None:
    results = [_pf_result(i) for i in range(3)]
    assert promptfoo_counts(_promptfoo(results, successes=2)) == Counts(3, 2)
    assert promptfoo_counts(_promptfoo(results, errors=1)) == Counts(3, 0)
    assert promptfoo_counts(_promptfoo(results, failures=1)) == Counts(3, 0)


@pytest.mark.parametrize(
    "output",
    [{}, {"results": []}, {"results": {"results": "x", "stats": None}}, {"results": {"results": [1, None]}}],
    ids=["empty", "results a list", "wrong types", "results not objects"],
)
def test_promptfoo_malformed_file_counts_nothing(output: dict[str, Any]) -> None:
    assert promptfoo_counts(output) == Counts(0, 0)


def test_inspect_all_samples_ran_and_passed() -> None:
    assert inspect_counts(_inspect([_sample(i) for i in range(3)])) == Counts(3, 3)


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        pytest.param(
            _inspect([_sample(0), _sample(1)], status="error"), Counts(0, 0), id="eval not a success"
        ),
        pytest.param(_inspect([_sample(0), _sample(1, value="I")]), Counts(2, 1), id="scored incorrect"),
        pytest.param(
            _inspect([_sample(0), _sample(1, completion="no idea")]), Counts(2, 1), id="answer without 42"
        ),
        pytest.param(_inspect([_sample(0), _sample(1, completion=None)]), Counts(1, 1), id="no model output"),
        pytest.param(_inspect([_sample(0), _sample(1)], completed=1), Counts(1, 1), id="fewer completed"),
        pytest.param({"status": "success"}, Counts(0, 0), id="no results, no samples"),
    ],
)
def test_inspect_counts_only_completed_correct_samples(log: dict[str, Any], expected: Counts) -> None:
    assert inspect_counts(log) == expected


def test_check_counts_names_the_tool_the_counts_and_the_file(tmp_path: Path) -> None:
    check_counts("promptfoo", Counts(5, 5), 5, tmp_path)
    with pytest.raises(SystemExit, match=rf"promptfoo ran 5 and passed 4 of 5 evals \(see {tmp_path}\)"):
        check_counts("promptfoo", Counts(5, 4), 5, tmp_path)
    with pytest.raises(SystemExit, match="ran 4 and passed 4 of 5"):
        check_counts("inspect_ai", Counts(4, 4), 5, tmp_path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v20.20.2\n", (20, 20, 2)),
        ("v22.23.3", (22, 23, 3)),
        ("v23.0.0-nightly2026", (23, 0, 0)),
        ("node: not found", None),
    ],
)
def test_parse_node_version(text: str, expected: tuple[int, int, int] | None) -> None:
    assert parse_node_version(text) == expected


def test_node_20_is_too_old_for_promptfoo_and_22_22_is_enough() -> None:
    assert (20, 20, 2) < NODE_MINIMUM <= (22, 22, 0) < (22, 23, 3)


def test_median_is_a_measured_run() -> None:
    runs = [Run(wall, cpu=wall / 2, output=str(wall)) for wall in (3.0, 1.0, 9.0, 2.0)]
    assert median(runs[:3]).output == "3.0"
    assert median(runs).output == "2.0"  # of an even number, the lower middle run
    assert median_of([5.0, 1.0, 3.0]) == 3.0
    assert median_of([4.0, 1.0]) == 1.0


def test_inspect_task_is_valid_python_with_explicit_usage() -> None:
    source = INSPECT_TASK.format(evals=7, needle="42")
    tree = ast.parse(source)
    assert "range(7)" in source
    assert "ModelUsage(" in source
    assert {node.name for node in tree.body if isinstance(node, ast.FunctionDef)} == {"respond", "bench"}
