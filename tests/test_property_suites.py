"""Property-based tests of suite loading and of the results a run writes.

Suites are generated with strategies mirroring ``pytest_vibeeval/schemas/suite.schema.json`` (metadata,
evals with prompts and checks of every built-in type, ``or`` groups, names, tags, score formulas over
the suite's variables), then broken in random places. ``load_suite`` must return a Suite for every
valid one and raise InputError (with a rendered ``file:line: what`` message) for every other, never
another exception. A few valid suites also run end to end, and their results file must validate
against the results schema and hold every eval with its name, node id and outcome.

Examples are derandomized (the same ones in every CI run) and few, to keep within the time budget.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import yaml
from helpers import FAST_ARGS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_vibeeval.checks import AnyOf
from pytest_vibeeval.errors import InputError
from pytest_vibeeval.loading.suite import Suite, load_suite, prompt_slug
from pytest_vibeeval.models import PROTECTED_KEYWORDS, RESERVED_MARKS
from pytest_vibeeval.registry import CheckRegistry
from pytest_vibeeval.scoring.variables import eval_variable_names, run_variable_names

SCHEMA_DIR = Path(__file__).parents[1] / "pytest_vibeeval" / "schemas"
SUITE_SCHEMA = json.loads((SCHEMA_DIR / "suite.schema.json").read_text(encoding="utf-8"))
RESULTS_SCHEMA = json.loads((SCHEMA_DIR / "results.schema.json").read_text(encoding="utf-8"))
SUITE_VALIDATOR = jsonschema.validators.validator_for(SUITE_SCHEMA)(SUITE_SCHEMA)  # built once: fast
BUILT_IN_CHECKS = tuple(SUITE_SCHEMA["$defs"]["Check"]["properties"])  # match, …, or

FAST = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- strategies mirroring the schema ------------------------------------------------------------

_RUN_WIDE = set(run_variable_names())
TEMPLATE_NAMES = ("who", "project.id")
# Text without `{` and `}` (a stray `{{` is a malformed template), any script, controls included
# (the YAML writer escapes them); without the line breaks PyYAML's writer leaves raw in a quoted
# scalar, where its reader folds them into a space (\r, NEL, U+2028, U+2029) and without BOMs.
PLAIN = st.text(
    st.characters(codec="utf-8", exclude_characters="{}\r\x85\u2028\u2029\ufeff"),
    min_size=1,
    max_size=30,
)
TEMPLATE = st.sampled_from([f"{{{{var('{n}')}}}}" for n in TEMPLATE_NAMES] + ['{{ var("who") }}'])
TEXT = st.lists(st.one_of(PLAIN, PLAIN, TEMPLATE), min_size=1, max_size=3).map("".join)


def _valid_name(name: str) -> bool:
    clashes = {name, *eval_variable_names(name)} & _RUN_WIDE
    return name not in PROTECTED_KEYWORDS and not clashes


NAMES = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,11}", fullmatch=True).filter(_valid_name)
TAGS = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True).filter(lambda t: t not in RESERVED_MARKS)
REGEXES = st.sampled_from([r"\d+", r"^[A-Z]", r"(yes|no)", r"answer\s*:", r"[a-z]{3}", "."])
REGEXES |= PLAIN.map(re.escape)
CONFIG_IDS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,10}", fullmatch=True)


THRESHOLDS = st.floats(0, 1, allow_nan=False)
# One strategy per built-in check type but `or` (test_strategies_cover_every_check_type keeps this
# in step with the schema).
LEAF_CHECKS: dict[str, st.SearchStrategy[Any]] = {
    "match": TEXT,
    "not_match": TEXT,
    "min_tokens": st.integers(0, 60),
    "max_tokens": st.integers(0, 60),
    "regex": REGEXES,
    "equals": TEXT,
    "contains": TEXT,
    "llm_judge": st.fixed_dictionaries({"criteria": TEXT}),
    "semantic": st.fixed_dictionaries({"expected": TEXT, "threshold": THRESHOLDS}),
}


def leaf_checks(semantic: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """One single-key check of a built-in type but ``or``; ``semantic`` only if asked (it needs a
    model to run)."""
    kinds = [name for name in LEAF_CHECKS if semantic or name != "semantic"]
    return st.one_of([LEAF_CHECKS[name].map(_keyed(name)) for name in kinds])


def _keyed(name: str) -> Callable[[Any], dict[str, Any]]:
    return lambda value: {name: value}


def check_nodes(semantic: bool, depth: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    """A check, or (mostly at the top) an ``or`` group of checks nested up to ``depth`` levels."""
    leaf = leaf_checks(semantic)
    if depth == 0:
        return leaf
    group = st.lists(check_nodes(semantic, depth - 1), min_size=1, max_size=3).map(lambda c: {"or": c})
    return st.one_of(leaf, leaf, group)


def check_lists(semantic: bool = True) -> st.SearchStrategy[Any]:
    """``checks``: a list (items may be ``or`` groups) or ``{or: [...]}``."""
    as_list = st.lists(check_nodes(semantic), min_size=1, max_size=4)
    grouped = st.lists(check_nodes(semantic, 2), min_size=1, max_size=3).map(lambda c: {"or": c})
    return st.one_of(as_list, as_list, grouped)


# Built once: strategies made inside a draw are validated again on every example (slow).
CHECKS = {semantic: check_lists(semantic) for semantic in (True, False)}


@st.composite
def suites(draw: st.DrawFn, e2e: bool = False) -> dict[str, Any]:
    """A valid suite as data. ``e2e``: one that runs here (a `python:` configuration that also judges,
    no `semantic` checks)."""
    count = draw(st.integers(1, 6))
    names = draw(st.lists(NAMES, min_size=count, max_size=count, unique_by=str.lower))
    metadata: dict[str, Any] = {"name": draw(PLAIN), "model": draw(PLAIN)}
    if draw(st.booleans()):
        metadata["system_prompt"] = draw(TEXT)
    if draw(st.booleans()):
        metadata["tags"] = draw(st.lists(TAGS, max_size=2))
    if draw(st.booleans()):
        metadata["threads"] = draw(st.integers(1, 8))
    if draw(st.integers(0, 3)) == 0:
        server = {"url": draw(PLAIN), "name": draw(PLAIN)}
        metadata["mcp_server"] = server | ({"authorization_token": draw(TEXT)} if draw(st.booleans()) else {})
    evals = []
    for name in names:
        case: dict[str, Any] = {"prompt": draw(TEXT), "checks": draw(CHECKS[not e2e])}
        if draw(st.integers(0, 2)) > 0:
            case["name"] = name
        if draw(st.integers(0, 3)) == 0:
            case["tags"] = draw(st.lists(TAGS, max_size=2))
        if not e2e and draw(st.integers(0, 5)) == 0:
            case["xfail"] = draw(PLAIN)
        if not e2e and draw(st.integers(0, 5)) == 0:
            case["rubric"] = {"complexity": draw(st.sampled_from(["simple", "medium", "complex"]))}
        if not e2e and draw(st.integers(0, 5)) == 0:
            case["min_pass_rate"] = draw(st.floats(0, 1))
        evals.append(case)
    suite: dict[str, Any] = {"metadata": metadata, "evals": evals}
    named = [case["name"] for case in evals if "name" in case]
    terms = ["success_pct", "passed", "failed", "total", *(f"[{n}]" for n in named)]
    if e2e or draw(st.booleans()):
        chosen = draw(st.lists(st.sampled_from(terms), min_size=1, max_size=4))
        weights = draw(st.lists(st.integers(1, 9), min_size=len(chosen), max_size=len(chosen)))
        score: dict[str, Any] = {
            "formula": " + ".join(f"{w} * {t}" for w, t in zip(weights, chosen, strict=True))
        }
        if draw(st.booleans()):
            low = draw(st.floats(-1000, 1000))
            score.update(min=low, max=low + draw(st.floats(0, 1000)))
        suite["score"] = score
    if e2e:
        suite["configurations"] = {
            "app": {"python": "prop_answer:answer"},
            "judge": {"python": "prop_answer:answer"},
        }
        suite["default_configurations"] = ["app"]
        suite["judge"] = "judge"
    elif draw(st.booleans()):
        ids = draw(st.lists(CONFIG_IDS, min_size=1, max_size=3, unique=True))
        suite["configurations"] = {cid: {"python": "app:answer"} for cid in ids}
    return suite


def dump(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=80)


# --- broken suites: a hostile value somewhere ------------------------------------------------------

HOSTILE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["", " ", "{{", "{{var(x)}}", "}}{{", "${EVAL_ROOT}", "../../etc", "\u202e", "yes"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(
        st.sampled_from(["__class__", "model_config", "or", "match", "x"]), st.integers(), max_size=2
    ),
)


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location in the data, for the mutation to pick one."""
    found = [at]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*at, index))
    return found


@st.composite
def broken_suites(draw: st.DrawFn) -> Any:
    """A valid suite with 1–3 edits: a value replaced, a key removed or an unknown key added."""
    data = draw(suites())
    if draw(st.integers(1, 20)) == 13:  # (not a bound: hypothesis draws those often)
        return draw(HOSTILE_VALUES)  # the whole document
    for _ in range(draw(st.integers(1, 3))):
        places = _paths(data)[1:]
        if not places:
            break
        at = draw(st.sampled_from(places))
        parent = data
        for part in at[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
        if action == "replace":
            parent[at[-1]] = draw(HOSTILE_VALUES)
        elif action == "remove" and isinstance(parent, dict):
            del parent[at[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["__class__", "model_config", "extra", "promt", "Checks"]))] = 1
    return data


@st.composite
def mangled_texts(draw: st.DrawFn) -> str:
    """A valid suite's YAML with characters inserted, deleted or replaced: the parser's paths."""
    text = dump(draw(suites()))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        junk = draw(st.text(alphabet=":-[]{}&*!|>'\"%@`#,?\t\n \\" + string.ascii_letters, max_size=4))
        cut = draw(st.integers(0, 3))
        text = text[:at] + junk + text[at + cut :]
    return text


# Checks of what the agent did and of structure read the record (tool calls, cost, latency, JSON),
# not only the text these suites generate: tests/test_structural_checks.py covers them.
RECORD_CHECKS = {
    "json", "json_schema", "tool_called", "tool_not_called", "tool_sequence", "max_tool_calls",
    "max_cost", "max_latency", "python",
}  # fmt: skip


def test_strategies_cover_every_check_type() -> None:
    """The generated checks are every built-in type of the schema that reads the answer's text,
    ``or`` included; the others are covered elsewhere."""
    assert {*LEAF_CHECKS, "or"} | RECORD_CHECKS == set(BUILT_IN_CHECKS) == {*CheckRegistry().names(), "or"}


# --- loading in-process ----------------------------------------------------------------------------


def load(tmp_path: Path, text: str) -> Suite | InputError:
    """``load_suite`` of ``text``: its Suite, or the InputError it raised (any other exception escapes)."""
    path = tmp_path / "generated.eval.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        return load_suite(path)
    except InputError as exc:
        return exc


def assert_rendered(err: InputError, text: str) -> None:
    """A clear error: every problem names the file, a line inside it when it has one, and what is wrong."""
    assert err.problems
    rendered = err.render()
    assert str(err) == rendered
    lines = len(re.findall(r"\r\n|[\r\n\x85\u2028\u2029]", text)) + 1  # YAML's line breaks
    for problem in err.problems:
        assert problem.message.strip()
        assert problem.line is None or 1 <= problem.line <= lines, (problem, lines)
        head = f"{err.path}:{problem.line}: " if problem.line else f"{err.path}: "
        assert problem.render(err.path).startswith(head)
        assert head in rendered
    assert "Traceback" not in rendered


@FAST
@given(data=suites())
def test_valid_generated_suites_load(tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any]) -> None:
    """Every suite built by the schema's rules is valid by the schema too, and loads, with its evals,
    names, checks and formula."""
    SUITE_VALIDATOR.validate(data)
    text = dump(data)
    loaded = load(tmp_path_factory.mktemp("valid"), text)
    assert isinstance(loaded, Suite), loaded.render() if isinstance(loaded, InputError) else loaded
    assert (loaded.name, loaded.model) == (data["metadata"]["name"], data["metadata"]["model"])
    assert len(loaded.evals) == len(data["evals"])
    ids = [case.id for case in loaded.evals]
    assert len(set(ids)) == len(ids)
    for case, raw in zip(loaded.evals, data["evals"], strict=True):
        assert case.name == raw.get("name")
        assert case.prompt == raw["prompt"]
        if "name" in raw:
            assert case.id == raw["name"]
        else:
            assert case.id.startswith(prompt_slug(raw["prompt"]))
        top = raw["checks"] if isinstance(raw["checks"], list) else [raw["checks"]]
        assert len(case.checks) == len(top)
        for node, written in zip(case.checks, top, strict=True):
            assert isinstance(node, AnyOf) == ("or" in written)
    assert loaded.formula == data.get("score", {}).get("formula", "success_pct")


@FAST
@given(data=broken_suites())
def test_broken_suites_load_or_fail_cleanly(tmp_path_factory: pytest.TempPathFactory, data: Any) -> None:
    """A suite broken anywhere is a Suite (the edit was harmless) or an InputError with a rendered
    message; never another exception."""
    text = dump(data)
    loaded = load(tmp_path_factory.mktemp("broken"), text)
    if isinstance(loaded, InputError):
        assert_rendered(loaded, text)


@FAST
@given(text=mangled_texts())
def test_mangled_yaml_loads_or_fails_cleanly(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    loaded = load(tmp_path_factory.mktemp("mangled"), text)
    if isinstance(loaded, InputError):
        assert_rendered(loaded, text)


@FAST
@given(text=st.text(max_size=200))
def test_arbitrary_text_loads_or_fails_cleanly(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    loaded = load(tmp_path_factory.mktemp("text"), text)
    if isinstance(loaded, InputError):
        assert_rendered(loaded, text)


# --- end to end: generated suites round-trip through the results JSON -----------------------------

ANSWER = '''\
import hashlib
import json


def answer(prompt, context):
    """Deterministic: a judge's verdict for judge prompts, else an answer made from the prompt."""
    digest = hashlib.sha256(prompt.encode()).hexdigest()
    if prompt.startswith("CRITERIA:\\n"):
        return json.dumps({"pass": int(digest, 16) % 2 == 0, "reason": "digest " + digest[:6]})
    return {"response": "Answer: 42 yes " + prompt[:40], "input_tokens": len(prompt), "output_tokens": 7,
            "cost": 0.001}
'''


VALUES = {"{{var('who')}}": "world", '{{ var("who") }}': "world", "{{var('project.id')}}": "P-7"}


def _render(text: str) -> str:
    for template, value in VALUES.items():
        text = text.replace(template, value)
    return text


def _verdict(kind: str, value: Any, response: str) -> bool | None:
    """What a check must decide about ``response`` (7 tokens reported), where that is plain to see;
    None for the checks left to their own tests (patterns, the judge)."""
    if kind == "min_tokens":
        return bool(value <= 7)
    if kind == "max_tokens":
        return bool(value >= 7)
    if kind == "equals":
        return response.strip() == _render(value).strip()
    if kind == "contains" and _render(value).isascii():
        return _render(value).lower() in response.lower()
    if kind == "regex":
        return re.search(_render(value), response) is not None
    return None


def _assert_checks(written: list[dict[str, Any]], recorded: list[dict[str, Any]], response: str) -> None:
    """The record's checks are the suite's, in order and nested alike, with the plain verdicts."""
    assert [next(iter(w)) for w in written] == [r["type"] for r in recorded], (written, recorded)
    for check, record in zip(written, recorded, strict=True):
        ((kind, value),) = check.items()
        if kind == "or":  # it stops at its first passing alternative: the rest are not run
            children = record["children"]
            _assert_checks(value[: len(children)], children, response)
            assert not any(child["passed"] for child in children[:-1]), record
            assert len(children) == len(value) or children[-1]["passed"], record
        else:
            expected = _verdict(kind, value, response)
            assert expected is None or record["passed"] == expected, (check, record, response)


def _score_expected(formula: str, records: list[dict[str, Any]]) -> float | None:
    """The formula's value computed from the records' outcomes alone (linear formulas of pass flags
    and counts); None when a variable has no value (a named eval skipped)."""
    ran = [r for r in records if r["outcome"] != "skipped"]
    passed = sum(r["outcome"] == "passed" and not r["xfail"] for r in ran)
    values: dict[str, float | None] = {
        "passed": passed,
        "failed": len(ran) - passed,
        "total": len(ran),
        "success_pct": 100 * passed / len(ran) if ran else None,
    }
    for record in records:
        if record["named"]:
            ok = record["outcome"] == "passed" and not record["xfail"]
            values[f"[{record['name']}]"] = None if record["outcome"] == "skipped" else float(ok)
    total = 0.0
    for term in formula.split(" + "):
        weight, _, name = term.partition(" * ")
        value = values[name]
        if value is None:
            return None
        total += int(weight) * value
    return total


@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(generated=st.lists(suites(e2e=True), min_size=4, max_size=4))
def test_generated_suites_round_trip_through_the_results(
    request: pytest.FixtureRequest, generated: list[dict[str, Any]]
) -> None:
    """Four generated suites run in one pytest subprocess: the results file validates against its
    schema, and every eval is there with its name, node id, the outcome pytest reported, its response
    and its checks (the plain verdicts recomputed here), and every score is its formula's value."""
    # pytester is taken here, not as an argument: the repository's conftest then skips loading the
    # `semantic` model, which these subprocess runs never use.
    pytester: pytest.Pytester = request.getfixturevalue("pytester")
    run = pytester.mkdir(f"run{len(list(pytester.path.glob('run*')))}")
    request.getfixturevalue("monkeypatch").chdir(run)  # the summary's node ids are relative to it
    (run / "prop_answer.py").write_text(ANSWER, encoding="utf-8")
    (run / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for index, data in enumerate(generated):
        folder = run / f"suite{index}"
        folder.mkdir()
        (folder / "generated.eval.yaml").write_text(dump(data), encoding="utf-8")
    result = pytester.runpytest_subprocess(
        *FAST_ARGS,
        f"--rootdir={run}",
        "--vibe-results", str(run / "results.json"),
        "--vibe-history", "",
        "--vibe-var", "who=world",
        "--vibe-var", "project.id=P-7",
        "-rA",
        str(run),
        timeout=120,
    )  # fmt: skip
    output = result.stdout.str()
    assert result.ret in (0, 1), output[-4000:]
    assert "Traceback" not in output and "INTERNALERROR" not in output, output[-4000:]
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert results["load_errors"] == []
    reported = {}
    for line in result.outlines:
        found = re.match(r"(PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR) (\S+::.+?)(?: - .*)?$", line)
        if found:
            reported[found.group(2)] = found.group(1)
    for index, data in enumerate(generated):
        source = f"suite{index}/generated.eval.yaml"
        (run_record,) = [r for r in results["runs"] if r["source"] == source]
        records = {record["nodeid"]: record for record in run_record["evals"]}
        loaded = load_suite(run / source)
        expected = {f"{source}::{case.id}[app]": case for case in loaded.evals}
        assert set(records) == set(expected), (sorted(records), sorted(expected))
        for (nodeid, case), written in zip(expected.items(), data["evals"], strict=True):
            record = records[nodeid]
            assert record["name"] == case.id and record["named"] == (case.name is not None)
            checks = written["checks"] if isinstance(written["checks"], list) else [written["checks"]]
            response = "Answer: 42 yes " + _render(written["prompt"])[:40]
            assert record["response"] == response, record
            _assert_checks(checks, record["checks"], response)
            status = reported[nodeid]
            outcome = {"PASSED": "passed", "FAILED": "failed", "SKIPPED": "skipped"}.get(status)
            if outcome == "failed":
                assert record["outcome"] in ("failed", "error"), (nodeid, record)
            elif outcome is not None:
                assert record["outcome"] == outcome, (nodeid, status, record)
        formula = data.get("score", {}).get("formula")
        if formula:
            value = _score_expected(formula, list(records.values()))
            if value is None:
                assert run_record["score"] is None, run_record
            else:
                assert run_record["score"] == pytest.approx(value), run_record
        passed = sum(r["outcome"] == "passed" for r in records.values())
        assert run_record["metrics"]["passed"] == passed
