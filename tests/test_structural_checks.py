"""The checks on structure and behaviour: json, json_schema, the tool checks, max_cost, max_latency
and python custom checks; unit tests, then real runs against a Python callable (serial and -n 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, write
from pydantic import ValidationError

from pytest_vibeeval.answer_files import answer_entry, read_answer, write_answer
from pytest_vibeeval.check_api import Response, Verdict
from pytest_vibeeval.checks import Check, CheckResult, run_checks
from pytest_vibeeval.providers.base import ProviderResponse
from pytest_vibeeval.registry import CheckRegistry
from pytest_vibeeval.results import ToolCallRecord
from pytest_vibeeval.structural_checks import SUITE_DIR_CONTEXT

REGISTRY = CheckRegistry()


def check(name: str, value: Any, folder: Path | None = None) -> Check:
    check_type = REGISTRY.get(name)
    assert check_type is not None, name
    context = {SUITE_DIR_CONTEXT: folder} if folder else None
    return Check(check_type, check_type.adapter.validate_python(value, context=context))


def calls(*names: str | tuple[str, dict[str, Any]]) -> tuple[ToolCallRecord, ...]:
    return tuple(
        ToolCallRecord(tool=n) if isinstance(n, str) else ToolCallRecord(tool=n[0], args=n[1]) for n in names
    )


def run_one(name: str, value: Any, response: Response | str, folder: Path | None = None) -> CheckResult:
    seen = Response(response) if isinstance(response, str) else response
    return check(name, value, folder).run(seen)


# --------------------------------------------------------------------------- json


ORDER = json.dumps({"order": {"items": [{"sku": "A-1", "qty": 2}], "total": 9.5, "status": "shipped"}})


@pytest.mark.parametrize(
    ("value", "text", "passed", "message"),
    [
        (True, ORDER, True, "the response is JSON"),
        (True, "```json\n{}\n```", False, "the response is not JSON: Expecting value: line 1 column 1"),
        # the same on every Python (3.13 words a trailing comma otherwise, and at another column)
        (
            True,
            '{"ok": true,}',
            False,
            "the response is not JSON: a comma after the last entry: line 1 column 12",
        ),
        ({"path": "order.items.0.sku"}, ORDER, True, "`order.items.0.sku` is 'A-1'"),
        ({"path": "order.items.1.sku"}, ORDER, False, "the JSON response has no `order.items.1.sku`"),
        ({"path": "order.items.-1.qty", "equals": 2}, ORDER, True, "`order.items.-1.qty` is '2'"),
        ({"path": "order.total", "equals": "9.5"}, ORDER, True, "`order.total` is '9.5'"),
        ({"path": "order.status", "equals": "sent"}, ORDER, False, "`order.status` is 'shipped', expected"),
        (
            {"path": "order.items.0.sku", "equals": {"a": 1}},
            ORDER,
            False,
            "`order.items.0.sku` is 'A-1', expected '{\"a\": 1}'",
        ),
        (
            {"path": "code", "equals": 2},
            '{"code": "2"}',
            False,
            '`code` is "2" (text), expected 2 (a number)',
        ),
        (
            {"path": "ok", "equals": True},
            '{"ok": "true"}',
            False,
            '`ok` is "true" (text), expected true (a boolean)',
        ),
        ({"path": "order.status", "matches": "ship*"}, ORDER, True, "`order.status` is 'shipped'"),
        ({"path": "order.status", "matches": "^sent$"}, ORDER, False, "which does not match '^sent$'"),
        ({"equals": {"a": None}}, '{"a": null}', True, "the response is JSON"),
    ],
)
def test_json(value: Any, text: str, passed: bool, message: str) -> None:
    result = run_one("json", value, text)
    assert result.passed is passed
    assert message in result.message


def test_json_rejects_false_and_unknown_keys() -> None:
    for value in (False, {"path": "a", "equal": 1}, {"path": ""}):
        with pytest.raises(ValidationError):
            check("json", value)


# --------------------------------------------------------------------------- json_schema

SCHEMA = {
    "type": "object",
    "required": ["name", "price"],
    "properties": {"name": {"type": "string"}, "price": {"type": "number", "minimum": 0}},
}


def test_json_schema_inline() -> None:
    assert run_one("json_schema", SCHEMA, '{"name": "pen", "price": 1.5}').passed is True
    result = run_one("json_schema", SCHEMA, '{"name": "pen", "price": "cheap"}')
    assert result.passed is False
    assert (
        result.message
        == "the response does not match the schema: at $.price: 'cheap' is not of type 'number'"
    )
    result = run_one("json_schema", SCHEMA, '{"price": -1}')
    assert result.message.startswith("the response does not match the schema: at $")
    assert result.message.endswith("(and 1 more error)")
    assert run_one("json_schema", SCHEMA, "pen, 1.5").message.startswith("the response is not JSON")


def test_json_schema_from_a_file_relative_to_the_suite(tmp_path: Path) -> None:
    write(tmp_path / "schemas" / "item.json", json.dumps(SCHEMA))
    write(tmp_path / "schemas" / "item.yaml", "type: array\n")
    result = run_one("json_schema", "schemas/item.json", '{"name": "pen", "price": 1}', tmp_path)
    assert (result.passed, result.message) == (True, "the response matches 'schemas/item.json'")
    assert run_one("json_schema", "schemas/item.yaml", "[1]", tmp_path).passed is True


def test_json_schema_refs_to_other_files_resolve_relative_to_the_schema(tmp_path: Path) -> None:
    """``$ref``s lead from file to file (JSON and YAML, with fragments), each relative to the one
    that holds it; they are read when the suite loads, and the check reads no file later."""
    write(
        tmp_path / "schemas" / "order.json",
        '{"type": "object", "properties": {"item": {"$ref": "defs/item.json"}}}',
    )
    write(
        tmp_path / "schemas" / "defs" / "item.json",
        '{"type": "object", "properties": {"price": {"$ref": "common.yaml#/price"}}}',
    )
    write(tmp_path / "schemas" / "defs" / "common.yaml", "price: {type: number, minimum: 0}\n")
    loaded = check("json_schema", "schemas/order.json", tmp_path)
    for file in (tmp_path / "schemas").rglob("*.*"):
        file.unlink()
    assert loaded.run(Response('{"item": {"price": 2}}')).passed is True
    failed = loaded.run(Response('{"item": {"price": -1}}'))
    assert (failed.passed, failed.message) == (
        False,
        "the response does not match 'schemas/order.json': at $.item.price: -1 is less than the minimum of 0",
    )


def test_json_schema_ref_to_a_missing_fragment_errors_the_eval(tmp_path: Path) -> None:
    write(tmp_path / "main.json", '{"$ref": "defs.json#/nowhere"}')
    write(tmp_path / "defs.json", "{}")
    result = run_one("json_schema", "main.json", "{}", tmp_path)
    assert result.error and result.passed is None, result
    assert result.message.startswith("'main.json' has a $ref that cannot be resolved:"), result.message


@pytest.mark.parametrize(
    ("value", "files", "message"),
    [
        ({"type": "nope"}, {}, "the inline schema is not a valid JSON Schema: 'nope' is not valid"),
        ("missing.json", {}, "cannot read the JSON Schema 'missing.json': No such file or directory"),
        ("bad.json", {"bad.json": "{"}, "the JSON Schema 'bad.json' cannot be parsed: Expecting"),
        ("list.json", {"list.json": "[]"}, "the JSON Schema 'list.json' is not an object"),
        ("../up.json", {}, "'../up.json' must be a file path relative to the suite's folder"),
        (
            "main.json",
            {"main.json": '{"$ref": "gone.json"}'},
            "the JSON Schema 'main.json' refers to 'gone.json': cannot read the JSON Schema 'gone.json': "
            "No such file or directory",
        ),
        (
            "main.json",
            {"main.json": '{"$ref": "https://example.com/item.json"}'},
            "the JSON Schema 'main.json' refers to 'https://example.com/item.json': only files relative to "
            "the schema can be referred to (remote schemas are not fetched)",
        ),
        (
            {"$ref": "../outside.json"},
            {},
            "the inline schema refers to '../outside.json', outside the suite's folder",
        ),
    ],
)
def test_json_schema_problems_are_load_errors(
    tmp_path: Path, value: Any, files: dict[str, str], message: str
) -> None:
    for name, text in files.items():
        write(tmp_path / name, text)
    with pytest.raises(ValidationError) as info:
        check("json_schema", value, tmp_path)
    assert message in str(info.value)


# --------------------------------------------------------------------------- tool calls

CALLS = calls("search", ("fetch", {"url": "https://docs.example/a", "depth": 1}), "search", "answer")


def tools(name: str, value: Any, made: tuple[ToolCallRecord, ...] = CALLS) -> CheckResult:
    return run_one(name, value, Response("ok", tool_calls=made))


@pytest.mark.parametrize(
    ("value", "passed", "message"),
    [
        ("search", True, "tool 'search' was called 2 times"),
        ("SEARCH", True, "tool 'SEARCH' was called 2 times"),
        (
            "delete",
            False,
            "tool 'delete' was called 0 times, expected at least 1 (called: search, fetch, answer)",
        ),
        ({"name": "search", "min": 3}, False, "tool 'search' was called 2 times, expected at least 3"),
        ({"name": "search", "max": 1}, False, "tool 'search' was called 2 times, expected at most 1"),
        ({"name": "search", "min": 0, "max": 2}, True, "tool 'search' was called 2 times"),
        (
            {"name": "fetch", "args": {"url": "*docs.example*"}},
            True,
            "tool 'fetch' was called 1 time with args",
        ),
        ({"name": "fetch", "args": {"depth": 1}}, True, "tool 'fetch' was called 1 time with args"),
        (
            {"name": "fetch", "args": {"depth": 2}},
            False,
            "tool 'fetch' was called 0 times with args {\"depth\": 2} (1 call of it in all), "
            "expected at least 1",
        ),
        ({"name": "fetch", "args": {"missing": "*"}}, False, "tool 'fetch' was called 0 times with args"),
        ("se*", True, "tool 'se*' was called 2 times"),
        ({"name": "delete", "max": 0}, True, "tool 'delete' was called 0 times"),  # min 0: never called
        ({"name": "search", "max": 0}, False, "tool 'search' was called 2 times, expected at most 0"),
    ],
)
def test_tool_called(value: Any, passed: bool, message: str) -> None:
    result = tools("tool_called", value)
    assert result.passed is passed
    assert result.message.startswith(message), result.message


def test_tool_called_without_reported_calls_says_so() -> None:
    result = tools("tool_called", "search", ())
    assert (
        result.message
        == "tool 'search' was called 0 times, expected at least 1 (no tool calls were reported)"
    )


def test_tool_called_rejects_min_above_max() -> None:
    with pytest.raises(ValidationError, match=r"min \(3\) is above max \(1\)"):
        check("tool_called", {"name": "a", "min": 3, "max": 1})


def test_tool_not_called() -> None:
    assert tools("tool_not_called", "delete").passed is True
    result = tools("tool_not_called", "search")
    assert (result.passed, result.message) == (False, "tool 'search' was called 2 times, expected never")


@pytest.mark.parametrize(
    ("sequence", "passed", "message"),
    [
        (["search", "answer"], True, "tools were called in the order search → answer"),
        (["search", "fetch", "search", "answer"], True, "tools were called in the order"),
        (["fetch", "search"], True, "tools were called in the order"),
        (["answer", "search"], False, "tool 'search' was not called after 'answer'; expected the sequence"),
        (["delete"], False, "tool 'delete' was not called; expected the sequence delete (called: "),
    ],
)
def test_tool_sequence_in_order_with_gaps(sequence: list[str], passed: bool, message: str) -> None:
    result = tools("tool_sequence", sequence)
    assert result.passed is passed
    assert result.message.startswith(message), result.message


def test_max_tool_calls() -> None:
    assert tools("max_tool_calls", 4).passed is True
    result = tools("max_tool_calls", 3)
    assert (result.passed, result.message) == (False, "4 tool calls; max_tool_calls is 3")
    assert tools("max_tool_calls", 0, ()).message == "0 tool calls; max_tool_calls is 0"


UNKNOWN_CALLS = (
    "the tool calls are unknown (the configuration does not report them: an `output.parser`, the MCP "
    "tool loop or a Python callable's `tool_calls` does)"
)


def test_unreported_tool_calls_leave_the_checks_on_their_absence_undecided() -> None:
    """A configuration that cannot report tool calls has not shown that a tool was never called."""
    unknown = Response("ok", tool_calls_reported=False)
    for name, value, message in [
        ("tool_not_called", "refund", f"tool_not_called 'refund': {UNKNOWN_CALLS}"),
        ("max_tool_calls", 3, f"max_tool_calls 3: {UNKNOWN_CALLS}"),
        (
            "tool_called",
            {"name": "search", "min": 0, "max": 2},
            f"tool_called 'search' (max 2): {UNKNOWN_CALLS}",
        ),
    ]:
        result = run_one(name, value, unknown)
        assert (result.passed, result.message) == (None, message)
    missing = run_one("tool_called", "search", unknown)
    assert (missing.passed, missing.message) == (
        False,
        "tool 'search' was called 0 times, expected at least 1 (the configuration does not report its "
        "tool calls)",
    )
    verdict, _ = run_checks([check("tool_not_called", "refund"), check("max_tool_calls", 3)], unknown)
    assert verdict is None  # the eval is skipped with the reason
    verdict, _ = run_checks([check("tool_not_called", "refund"), check("contains", "nope")], unknown)
    assert verdict is False  # a failing check beside it still decides


def test_reported_zero_tool_calls_pass_the_checks_on_their_absence() -> None:
    none_made = Response("ok", tool_calls=())
    result = run_one("tool_not_called", "refund", none_made)
    assert (result.passed, result.message) == (
        True,
        "tool 'refund' was not called (no tool calls were reported)",
    )
    assert run_one("max_tool_calls", 0, none_made).passed is True
    assert run_one("tool_called", {"name": "search", "min": 0, "max": 2}, none_made).passed is True


def test_calls_seen_still_fail_when_the_rest_is_unreported() -> None:
    """Calls that were seen are evidence even when the list may be incomplete: they fail a check."""
    partial = Response("ok", tool_calls=calls("search", "search"), tool_calls_reported=False)
    assert run_one("tool_not_called", "search", partial).passed is False
    assert run_one("max_tool_calls", 1, partial).message == "2 tool calls; max_tool_calls is 1"
    assert run_one("tool_called", {"name": "search", "max": 1}, partial).passed is False
    assert run_one("tool_called", "search", partial).passed is True
    assert run_one("max_tool_calls", 2, partial).passed is None


@pytest.mark.parametrize(("reported", "stored"), [(None, None), ([], [])])
def test_stored_answers_keep_unreported_apart_from_none_made(
    tmp_path: Path, reported: list[ToolCallRecord] | None, stored: list[Any] | None
) -> None:
    path = tmp_path / "answer.json"
    write_answer(path, answer_entry(ProviderResponse("ok", tool_calls=reported)), lambda text: text)
    entry, response = read_answer(path)
    assert entry["tool_calls"] == stored
    assert response.tool_calls == reported


# --------------------------------------------------------------------------- cost, latency


def test_max_cost_and_max_latency() -> None:
    cheap = Response("ok", cost=0.0123, latency=1.25)
    assert run_one("max_cost", 0.05, cheap).message == "cost $0.0123; max_cost is $0.05"
    assert run_one("max_cost", 0.01, cheap).passed is False
    assert run_one("max_latency", 2, cheap).message == "latency 1.25s; max_latency is 2s"
    assert run_one("max_latency", 1, cheap).passed is False


def test_unknown_cost_or_latency_is_undecided_not_passed() -> None:
    unknown = Response("ok")
    verdict, results = run_checks([check("max_cost", 1), check("max_latency", 1)], unknown)
    assert verdict is None
    assert [r.passed for r in results] == [None, None]
    assert "the cost is unknown" in results[0].message
    # a failing check beside it still decides the eval
    verdict, _ = run_checks([check("max_cost", 1), check("contains", "nope")], unknown)
    assert verdict is False


# --------------------------------------------------------------------------- python


CHECKS_MODULE = """
from pytest_vibeeval import Verdict

def polite(response):
    return "please" in response.text, "asked nicely" if "please" in response.text else "no please"

def score(response):
    return {"score": len(response.tool_calls) / 4, "reason": f"{len(response.tool_calls)} calls"}

def flag(response):
    return response.cost is not None and response.cost < 1

def verdict(response):
    return Verdict(None, "cannot tell")

def boom(response):
    raise ValueError("no answer to grade")

def wrong(response):
    return "yes"

def too_high(response):
    return 1.5

def overruled(response):
    return {"pass": True, "score": 0.2, "reason": "good enough for a draft"}

def reason_only(response):
    return {"reason": "hmm"}
"""


@pytest.fixture(scope="module")
def checks_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the module: Python imports a module name once per process."""
    folder = tmp_path_factory.mktemp("custom_checks")
    write(folder / "vibe_sc_checks.py", CHECKS_MODULE)
    return folder


def custom(folder: Path, value: Any, response: Response) -> CheckResult:
    return run_one("python", value, response, folder)


def test_python_check_verdicts(checks_folder: Path) -> None:
    polite = custom(checks_folder, "vibe_sc_checks:polite", Response("yes please"))
    assert (polite.passed, polite.message, polite.score) == (True, "asked nicely", None)
    assert custom(checks_folder, "vibe_sc_checks:polite", Response("no")).passed is False
    flag = custom(checks_folder, "vibe_sc_checks:flag", Response("x", cost=0.5))
    assert (flag.passed, flag.message) == (True, "vibe_sc_checks:flag returned True")
    undecided = custom(checks_folder, "vibe_sc_checks:verdict", Response("x"))
    assert (undecided.passed, undecided.message) == (None, "cannot tell")


def test_python_check_scores_pass_at_the_threshold(checks_folder: Path) -> None:
    three = Response("x", tool_calls=calls("a", "b", "c"))
    result = custom(checks_folder, "vibe_sc_checks:score", three)
    assert (result.passed, result.score) == (True, 0.75)
    assert result.message == "score 0.75 >= threshold 0.50: 3 calls"
    strict = custom(checks_folder, {"function": "vibe_sc_checks:score", "threshold": 0.8}, three)
    assert (strict.passed, strict.message) == (False, "score 0.75 < threshold 0.80: 3 calls")
    assert strict.to_json()["score"] == 0.75


def test_python_check_pass_beside_a_score_decides_and_says_so(checks_folder: Path) -> None:
    """Its own ``pass`` wins over the threshold; the message does not compare with a threshold it ignored."""
    result = custom(checks_folder, "vibe_sc_checks:overruled", Response("x"))
    assert (result.passed, result.score) == (True, 0.2)
    assert result.message == "score 0.20, passed by the check itself (pass: True): good enough for a draft"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("vibe_sc_checks:boom", "python check vibe_sc_checks:boom raised ValueError: no answer to grade"),
        ("vibe_sc_checks:wrong", "python check vibe_sc_checks:wrong returned 'yes'; return a bool"),
        ("vibe_sc_checks:too_high", "returned the score 1.5; a score is 0–1"),
        (
            "vibe_sc_checks:reason_only",
            "python check vibe_sc_checks:reason_only returned {'reason': 'hmm'}, without `pass` or `score`",
        ),
        ("vibe_sc_checks:nothing", "'vibe_sc_checks' has no callable 'nothing' (a python check)"),
        ("vibe_sc_missing:f", "cannot import 'vibe_sc_missing' for a python check"),
        # A file's name before the colon passes the pattern (a module may be named `py`) and fails
        # only on import, where the message says how it is written.
        ("vibe_sc_checks.py:boom", "a module is written without .py: `vibe_sc_checks:boom`"),
    ],
)
def test_python_check_problems_are_check_errors(checks_folder: Path, target: str, message: str) -> None:
    result = custom(checks_folder, target, Response("x"))
    assert result.error and result.passed is None
    assert message in result.message
    assert "Traceback" not in result.message


def test_python_check_error_names_the_line_in_the_users_code(checks_folder: Path) -> None:
    result = custom(checks_folder, "vibe_sc_checks:boom", Response("x"))
    assert re.search(r"\(at vibe_sc_checks\.py:\d+\)$", result.message)


@pytest.mark.parametrize("value", ["no_colon", "a:b:c", {"function": "m:f", "threshold": 2}, {"fn": "m:f"}])
def test_python_check_rejects_bad_values(value: Any) -> None:
    with pytest.raises(ValidationError):
        check("python", value)


def test_a_verdict_carries_a_score() -> None:
    assert Verdict(True, "ok", 0.9).score == 0.9


# --------------------------------------------------------------------------- real runs

APP = """
import json
import re

def answer(prompt, context):
    if "order" in prompt:
        return {
            "response": json.dumps({"order": {"id": 7, "status": "shipped"}}),
            "cost": 0.002,
            "latency": 0.4,
            "tool_calls": ["lookup_customer", {"tool": "get_order", "args": {"id": 7}}],
        }
    return {"response": "Sorry, I cannot help with that.", "tool_calls": []}
"""

CHECKS = """
def used_tools(response):
    names = [call.tool for call in response.tool_calls]
    return {"score": 1.0 if "get_order" in names else 0.0, "reason": ", ".join(names) or "no tools"}

def crash(response):
    raise RuntimeError("grader broke")
"""

SUITE = """
metadata: {name: structural, model: none}
evals:
  - name: order
    prompt: Where is order 7?
    checks:
      - json: {path: order.status, equals: shipped}
      - json_schema: schemas/order.json
      - tool_called: {name: get_order, args: {id: 7}}
      - tool_sequence: [lookup_customer, get_order]
      - tool_not_called: refund
      - max_tool_calls: 3
      - max_cost: 0.01
      - max_latency: 5
      - python: vibe_sc_grader:used_tools
  - name: refusal
    prompt: Delete my account
    checks:
      - tool_called: get_order
  - name: unknown_cost
    prompt: Anything else?
    checks:
      - max_cost: 0.01
  - name: broken_grader
    prompt: order status
    checks:
      - python: vibe_sc_grader:crash
configurations:
  app: {python: "vibe_sc_app:answer"}
"""

ORDER_SCHEMA = {"type": "object", "required": ["order"], "properties": {"order": {"type": "object"}}}


def write_suite(folder: Path, suite: str = SUITE) -> None:
    write(folder / "vibe_sc_app.py", APP)
    write(folder / "vibe_sc_grader.py", CHECKS)
    write(folder / "schemas" / "order.json", json.dumps(ORDER_SCHEMA))
    write(folder / "structural.eval.yaml", suite)


@XDIST_MODES
def test_a_run_with_structural_and_custom_checks(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write_suite(pytester.path)
    path = pytester.path / "results.json"
    result = run(pytester, "-rA", "--vibe-results", str(path), xdist=xdist)
    result.assert_outcomes(passed=1, failed=2, skipped=1)  # an eval that errors fails its item
    records = evals_by_nodeid(load_json(path))
    order = records["structural.eval.yaml::order[app]"]
    assert order["outcome"] == "passed"
    assert order["tool_calls"][1] == {
        "tool": "get_order", "success": None, "error": None, "duration": None, "retry": False, "batch": None,
        "args": {"id": 7},
    }  # fmt: skip
    by_type = {c["type"]: c for c in order["checks"]}
    assert (
        by_type["tool_called"]["message"]
        == "tool 'get_order' was called 1 time with args {\"id\": 7} (1 call of it in all)"
    )
    assert by_type["max_cost"]["message"] == "cost $0.002; max_cost is $0.01"
    assert by_type["max_latency"]["message"] == "latency 0.4s; max_latency is 5s"
    assert by_type["python"]["score"] == 1.0
    refusal = records["structural.eval.yaml::refusal[app]"]
    assert refusal["message"].startswith(
        "tool_called: tool 'get_order' was called 0 times, expected at least 1 (no tool calls were reported)"
    )
    unknown = records["structural.eval.yaml::unknown_cost[app]"]
    assert unknown["outcome"] == "skipped"
    assert "could not be decided: max_cost: the cost is unknown" in unknown["message"]
    broken = records["structural.eval.yaml::broken_grader[app]"]
    assert broken["outcome"] == "error"
    assert broken["message"].startswith(
        "python check vibe_sc_grader:crash raised RuntimeError: grader broke (at vibe_sc_grader.py:"
    )
    output = result.stdout.str()
    assert "grader broke" in output
    assert "custom_checks.py" not in output  # no traceback from the plugin's code


def test_a_bad_schema_is_a_load_error_naming_file_and_line(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path)
    write(pytester.path / "schemas" / "order.json", '{"type": "objekt"}')
    result = run(pytester)
    assert result.ret != 0
    assert (
        "structural.eval.yaml:7: evals[0].checks[1].json_schema: the JSON Schema 'schemas/order.json' is "
        "not a valid JSON Schema: 'objekt' is not valid under any of the given schemas (at ['type'])"
    ) in result.stdout.str()


def test_json_without_equals_stays_so_after_template_filling() -> None:
    """Filling templates copies the value with every field set; `equals` must not appear set."""
    parsed = check("json", {"path": "a", "matches": "x*"})
    filled = parsed.value.model_copy(update=dict(parsed.value.__dict__))
    assert Check(parsed.type, filled).run(Response('{"a": "xy"}')).passed is True


TOOLLESS_APP = """
def bare(prompt):
    return "Your order has shipped."

def quiet(prompt):
    return {"response": "Your order has shipped."}

def none_made(prompt):
    return {"response": "Your order has shipped.", "tool_calls": []}

def refunded(prompt):
    return {"response": "Your order has shipped.", "tool_calls": ["refund"]}
"""

TOOLLESS_SUITE = """
metadata: {name: toolless, model: none}
evals:
  - name: careful
    prompt: Where is my order?
    checks:
      - tool_not_called: refund
      - max_tool_calls: 0
  - name: wrong_answer
    prompt: Where is my order?
    checks:
      - tool_not_called: refund
      - contains: delivered
configurations:
  bare: {python: "vibe_toolless_app:bare"}
  quiet: {python: "vibe_toolless_app:quiet"}
  none_made: {python: "vibe_toolless_app:none_made"}
  refunded: {python: "vibe_toolless_app:refunded"}
"""


@XDIST_MODES
def test_a_callable_that_reports_no_tool_calls_leaves_tool_checks_undecided(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A bare string or a dict without `tool_calls` reports nothing about tools: the evals that
    only tool_not_called / max_tool_calls could pass are skipped with the reason, not passed; a
    reported empty list passes them; a reported call fails them; --vibe-record keeps the
    difference, so that --vibe-replay decides the same."""
    write(pytester.path / "vibe_toolless_app.py", TOOLLESS_APP)
    write(pytester.path / "toolless.eval.yaml", TOOLLESS_SUITE)
    store = pytester.path / "answers"
    for extra in (["--vibe-record", str(store)], ["--vibe-replay", str(store)]):
        path = pytester.path / "results.json"
        result = run(pytester, "-rA", "--vibe-results", str(path), *extra, xdist=xdist)
        result.assert_outcomes(passed=1, failed=5, skipped=2)
        records = evals_by_nodeid(load_json(path))
        for config in ("bare", "quiet"):
            careful = records[f"toolless.eval.yaml::careful[{config}]"]
            assert careful["outcome"] == "skipped", careful
            assert careful["message"] == (
                f"could not be decided: max_tool_calls 0: {UNKNOWN_CALLS}; "
                f"tool_not_called 'refund': {UNKNOWN_CALLS}"
            )
            assert [c["passed"] for c in careful["checks"]] == [None, None]
            assert records[f"toolless.eval.yaml::wrong_answer[{config}]"]["outcome"] == "failed"
        assert records["toolless.eval.yaml::careful[none_made]"]["outcome"] == "passed"
        refunded = records["toolless.eval.yaml::careful[refunded]"]
        assert refunded["outcome"] == "failed"
        assert "tool 'refund' was called 1 time, expected never" in refunded["message"]


NAMED_TOOL_APP = """
def answer(prompt, context=None):
    return {"response": "ok", "tool_calls": [
        {"tool": "search", "args": {"q": "refund policy"}},
        {"tool": "search", "args": {"q": "shipping times"}},
        {"tool": "rubric", "args": {}},
    ]}
"""


@XDIST_MODES
def test_a_tool_calleds_name_is_the_tool_not_the_checks(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """``tool_called: {name: search}`` names the tool: two such checks of one eval, an eval named
    like its tool and a tool named like a run-wide variable load, and no ``search_score`` appears."""
    write(pytester.path / "vibe_named_tool_app.py", NAMED_TOOL_APP)
    write(
        pytester.path / "tools.eval.yaml",
        """
        metadata: {name: tools, model: m}
        configurations: {app: {python: "vibe_named_tool_app:answer"}}
        evals:
          - name: twice
            prompt: hi
            checks:
              - tool_called: {name: search, args: {q: "*refund*"}}
              - tool_called: {name: search, args: {q: "*shipping*"}}
          - name: search
            prompt: hi
            checks: [{tool_called: {name: search, min: 2}}, {tool_called: {name: rubric}}]
        """,
    )
    result = run(pytester, "--vibe-results", "r.json", xdist=xdist)
    result.assert_outcomes(passed=2)
    assert "Check scores" not in result.stdout.str()
    (run_record,) = load_json(pytester.path / "r.json")["runs"]
    assert all(record["check_names"] == [] for record in run_record["evals"]), run_record["evals"]
