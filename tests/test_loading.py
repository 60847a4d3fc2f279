"""Loading YAML suites: every bad input gets its own clear error with the file, the line and what is wrong."""

from __future__ import annotations

import hashlib
import pickle
import textwrap
from pathlib import Path

import pytest

from pytest_vibeeval.checks import AnyOf, Check
from pytest_vibeeval.errors import InputError, Problem
from pytest_vibeeval.loading.suite import Suite, load_suite, prompt_slug
from pytest_vibeeval.loading.yamlsource import MAX_NODES, load_document

# in-process pytest runs: no cache files, and no re-import of hypothesis's plugin (slow) per run
BASE_ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
HEAD = "metadata:\n  name: s\n  model: m\nevals:\n"  # evals start on line 5
PROMPT_EVAL = "  - prompt: p\n    checks: [{match: x}]\n"  # lines 5 and 6


def write(tmp_path: Path, text: str, name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(tmp_path: Path, text: str, name: str = "suite.yaml") -> Suite:
    return load_suite(write(tmp_path, text, name))


def fails(tmp_path: Path, text: str, name: str = "suite.yaml") -> InputError:
    with pytest.raises(InputError) as info:
        load(tmp_path, text, name)
    err = info.value
    assert err.path == str(tmp_path / name)
    assert str(err) == err.render()
    return err


def only(err: InputError) -> Problem:
    assert len(err.problems) == 1, err.render()
    return err.problems[0]


def assert_problem(err: InputError, line: int, *fragments: str) -> Problem:
    """``err`` has exactly one problem, on ``line``, whose rendering holds every fragment."""
    problem = only(err)
    assert problem.line == line, err.render()
    rendered = err.render()
    assert rendered.startswith(f"{err.path}:{line}: "), rendered
    for fragment in fragments:
        assert fragment in rendered, rendered
    return problem


# --- YAML syntax -----------------------------------------------------------------------------


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    err = fails(tmp_path, "metadata:\n  name: [unclosed\n  model: m\n")
    assert_problem(err, 3, "invalid YAML", "expected ',' or ']'", "hint: check indentation")


def test_tab_indentation_is_invalid_yaml(tmp_path: Path) -> None:
    err = fails(tmp_path, "metadata:\n\tname: x\n")
    assert_problem(err, 2, "invalid YAML", "cannot start any token")


def test_two_documents_are_invalid_yaml(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks: [{match: x}]\n---\nother: 1\n")
    assert_problem(err, 7, "invalid YAML", "expected a single document")


def test_duplicate_key(tmp_path: Path) -> None:
    text = """\
    metadata:
      name: a
      model: m
      name: b
    evals:
      - prompt: p
        checks: [{match: x}]
    """
    err = fails(tmp_path, text)
    assert_problem(err, 4, "duplicate key 'name' (first defined on line 2)", "each key may appear once")


def test_duplicate_key_inside_a_check(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks:\n      - match: x\n        match: y\n")
    assert_problem(err, 8, "duplicate key 'match' (first defined on line 7)")


def test_duplicate_key_with_crlf_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_bytes(b"metadata:\r\n  name: s\r\n  model: m\r\n  model: n\r\n")
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert_problem(info.value, 4, "duplicate key 'model' (first defined on line 3)")


def test_merge_keys_may_override_merged_values(tmp_path: Path) -> None:
    """``<<: *anchor`` then the same key is YAML's override, not a duplicate key."""
    text = """\
    x-defaults: &defaults
      name: base
      model: some/model
    x-check: &check
      match: "*a*"
    metadata:
      <<: *defaults
      name: overridden
    evals:
      - prompt: p
        checks:
          - <<: *check
            match: "*b*"
    """
    path = write(tmp_path, text)
    doc = load_document(path)
    assert doc.data["metadata"] == {"name": "overridden", "model": "some/model"}
    assert doc.data["evals"][0]["checks"] == [{"match": "*b*"}]
    assert doc.line_of(("metadata", "name")) == 8
    assert doc.line_of(("metadata", "model")) == 3  # where the merged value is written


def test_merge_key_sources_earlier_wins(tmp_path: Path) -> None:
    text = """\
    a: &a {k: from-a, only_a: 1}
    b: &b {k: from-b, only_b: 2}
    c:
      <<: [*a, *b]
    """
    doc = load_document(write(tmp_path, text))
    assert doc.data["c"] == {"k": "from-a", "only_a": 1, "only_b": 2}


def test_merge_key_needs_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_document(write(tmp_path, "a: 1\nb:\n  <<: 3\n"))
    assert_problem(info.value, 3, "`<<` (YAML merge key) needs a mapping")


def test_duplicate_key_still_detected_next_to_a_merge(tmp_path: Path) -> None:
    text = "a: &a {k: 1}\nb:\n  <<: *a\n  x: 1\n  x: 2\n"
    with pytest.raises(InputError) as info:
        load_document(write(tmp_path, text))
    assert_problem(info.value, 5, "duplicate key 'x' (first defined on line 4)")


BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""

MERGE_LAUGHS = """\
a: &a {k0: 0, k1: 1, k2: 2, k3: 3, k4: 4, k5: 5, k6: 6, k7: 7, k8: 8}
b: &b {<<: [*a, *a, *a, *a, *a, *a, *a, *a, *a]}
c: &c {<<: [*b, *b, *b, *b, *b, *b, *b, *b, *b]}
d: &d {<<: [*c, *c, *c, *c, *c, *c, *c, *c, *c]}
e: &e {<<: [*d, *d, *d, *d, *d, *d, *d, *d, *d]}
f: &f {<<: [*e, *e, *e, *e, *e, *e, *e, *e, *e]}
g: &g {<<: [*f, *f, *f, *f, *f, *f, *f, *f, *f]}
h: &h {<<: [*g, *g, *g, *g, *g, *g, *g, *g, *g]}
i: &i {<<: [*h, *h, *h, *h, *h, *h, *h, *h, *h]}
"""


# Unbounded, this would compose for minutes: the timeout only guards against a hang.
@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", [BILLION_LAUGHS, MERGE_LAUGHS], ids=["aliases", "merge-keys"])
def test_yaml_alias_bomb_fails_fast(tmp_path: Path, text: str) -> None:
    err = fails(tmp_path, text)
    problem = only(err)
    assert f"document expands to more than {MAX_NODES} nodes" in problem.message
    assert problem.line is not None
    assert "nesting YAML aliases" in err.render()


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    err = fails(tmp_path, "a: &a [*a]\n")
    assert_problem(err, 1, "nesting deeper than 64 levels")


def test_empty_file(tmp_path: Path) -> None:
    err = fails(tmp_path, "")
    problem = only(err)
    assert problem.message == "the file is empty"
    assert err.render().startswith(f"{err.path}: the file is empty")


def test_file_with_only_comments_is_empty(tmp_path: Path) -> None:
    assert only(fails(tmp_path, "# nothing here\n")).message == "the file is empty"


def test_file_that_is_a_list(tmp_path: Path) -> None:
    err = fails(tmp_path, "- prompt: p\n- prompt: q\n")
    assert_problem(err, 1, "a suite is a mapping with `metadata` and `evals`")


def test_file_that_is_text(tmp_path: Path) -> None:
    err = fails(tmp_path, "just some words\n")
    assert_problem(err, 1, "a suite is a mapping")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_bytes(b"metadata:\n  name: caf\xe9\n")
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert "not UTF-8 text" in info.value.render()


def test_json_that_yaml_cannot_read_falls_back_to_the_json_parser(tmp_path: Path) -> None:
    path = tmp_path / "cli-config.json"
    path.write_text(
        '{"configurations": {"a": {"cli": "http:\\/\\/x"}}}', encoding="utf-8"
    )  # `\/` is JSON only
    assert load_document(path).data == {"configurations": {"a": {"cli": "http://x"}}}


def test_json_duplicate_keys_are_not_hidden_by_the_json_fallback(tmp_path: Path) -> None:
    path = tmp_path / "cli-config.json"
    path.write_text('{\n  "configurations": {\n    "a": {"cli": "x"},\n    "a": {"cli": "y"}\n  }\n}\n')
    with pytest.raises(InputError) as info:
        load_document(path)
    assert_problem(info.value, 4, "duplicate key 'a' (first defined on line 3)")


def test_json_values_are_the_json_parsers_with_the_yaml_parsers_lines(tmp_path: Path) -> None:
    """YAML 1.1 reads ``1e3`` as text; a JSON file means the number (sent as one to a server)."""
    path = tmp_path / "cli-config.json"
    path.write_text('{\n  "http": {\n    "params": {"max_tokens": 1e3, "seed": 4.2E1, "n": 2}\n  }\n}\n')
    doc = load_document(path)
    assert doc.data == {"http": {"params": {"max_tokens": 1000.0, "seed": 42.0, "n": 2}}}
    assert doc.line_of(("http", "params", "seed")) == 3


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ('{\n  "a": 1,\n}\n', 2, "invalid JSON: a comma after the last entry (column 9)"),
        ('{"a": NaN}', None, "invalid JSON: NaN is not a JSON value"),
        ('{"a": 1,\n "a": 2}', 2, "duplicate key 'a' (first defined on line 1)"),
    ],
    ids=["trailing-comma", "nan", "duplicate-key"],
)
def test_what_json_does_not_allow_is_an_error(
    tmp_path: Path, text: str, line: int | None, problem: str
) -> None:
    path = tmp_path / "cli-config.json"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_document(path)
    [found] = info.value.problems
    assert found.line == line and problem in info.value.render(), info.value.render()


def test_a_json_file_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    """Windows editors and PowerShell write one; JSON.parse-minded parsers refuse it, we do not."""
    path = tmp_path / "cli-config.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1e3}\n')
    assert load_document(path).data == {"a": 1000.0}


def test_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "cli-config.json"
    path.write_text('{\n  "configurations": {,}\n}\n')
    with pytest.raises(InputError) as info:
        load_document(path)
    assert_problem(info.value, 2, "invalid JSON: Expecting property name")


def test_input_error_survives_pickling() -> None:
    err = InputError("suite.yaml", [Problem("bad thing", line=3, loc=("evals", 0), hint="fix it")])
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.path, list(copy.problems)) == ("suite.yaml", list(err.problems))
    assert str(copy) == str(err) == "suite.yaml:3: evals[0]: bad thing\n    hint: fix it"


# --- keys --------------------------------------------------------------------------------------


def test_unknown_eval_key_did_you_mean(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - promt: p\n    checks:\n      - match: x\n")
    problem = assert_problem(
        err, 5, "evals[0]: unknown key 'promt' (did you mean 'prompt'?)", "allowed keys: build_steps, checks"
    )
    assert problem.loc == ("evals", 0)


def test_unknown_top_level_key_did_you_mean(tmp_path: Path) -> None:
    text = "metadata:\n  name: s\n  model: m\nevals:\n  - prompt: p\n    checks: [{match: x}]\nevalz: 1\n"
    err = fails(tmp_path, text)
    assert_problem(err, 7, "unknown key 'evalz' (did you mean 'evals'?)", "allowed keys: commands")


def test_misspelled_required_top_level_key(tmp_path: Path) -> None:
    text = "metdata:\n  name: s\n  model: m\nevals:\n  - prompt: p\n    checks: [{match: x}]\n"
    err = fails(tmp_path, text)
    assert_problem(err, 1, "unknown key 'metdata' (did you mean 'metadata'?)")


def test_unknown_metadata_key_did_you_mean(tmp_path: Path) -> None:
    text = HEAD.replace("evals:", "  systm_prompt: x\nevals:") + "  - prompt: p\n    checks: [{match: x}]\n"
    err = fails(tmp_path, text)
    assert_problem(err, 4, "metadata: unknown key 'systm_prompt' (did you mean 'system_prompt'?)")


def test_unknown_key_without_close_match_has_no_did_you_mean(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    zzzzzz: 1\n    checks: [{match: x}]\n")
    problem = assert_problem(err, 6, "unknown key 'zzzzzz'; allowed keys")
    assert "did you mean" not in problem.message


def test_yes_key_stays_text(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    yes: 1\n    checks: [{match: x}]\n")
    assert_problem(err, 6, "unknown key 'yes'")


def test_missing_model(tmp_path: Path) -> None:
    err = fails(tmp_path, "metadata:\n  name: s\nevals:\n  - prompt: p\n    checks: [{match: x}]\n")
    problem = assert_problem(err, 1, "metadata: missing required key 'model'")
    assert problem.loc == ("metadata",)


def test_missing_prompt(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - checks: [{match: x}]\n")
    assert_problem(err, 5, "evals[0]: missing required key 'prompt'")


def test_metadata_must_be_a_mapping(tmp_path: Path) -> None:
    err = fails(tmp_path, "metadata:\nevals:\n  - prompt: p\n    checks: [{match: x}]\n")
    assert_problem(err, 1, "metadata: must be a mapping, not empty")


def test_eval_must_be_a_mapping(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - just a prompt\n")
    assert_problem(err, 5, "evals[0]: must be a mapping, not text")


def test_evals_empty_list(tmp_path: Path) -> None:
    err = fails(tmp_path, "metadata:\n  name: s\n  model: m\nevals: []\n")
    assert_problem(err, 4, "evals: `evals` is empty; a suite needs at least one eval")


def test_evals_not_a_list(tmp_path: Path) -> None:
    err = fails(tmp_path, "metadata:\n  name: s\n  model: m\nevals: 3\n")
    assert_problem(err, 4, "evals: must be a list, not int")


def test_legacy_conditionals(tmp_path: Path) -> None:
    text = HEAD + "  - prompt: p\n    conditionals:\n      - type: string_contains\n        value: x\n"
    err = fails(tmp_path, text)
    assert_problem(err, 5, "`conditionals:` is the legacy format", '`- match: "*4*"`')


# --- eval names --------------------------------------------------------------------------------


def test_duplicate_eval_names_name_both_lines(tmp_path: Path) -> None:
    text = HEAD + (
        "  - name: same\n    prompt: p\n    checks: [{match: x}]\n"  # name on line 5
        "  - name: other\n    prompt: p\n    checks: [{match: x}]\n"
        "  - name: same\n    prompt: q\n    checks: [{match: x}]\n"  # line 11
    )
    err = fails(tmp_path, text)
    problem = assert_problem(err, 11, "duplicate eval name 'same' (also used by evals[0] on line 5)")
    assert problem.loc == ("evals", 2, "name")
    assert problem.hint == "eval names must be unique within a suite"


@pytest.mark.parametrize("name", ["success_pct", "avg_latency", "total_cost", "max_cost"])
def test_protected_eval_name(tmp_path: Path, name: str) -> None:
    err = fails(tmp_path, HEAD + f"  - prompt: p\n    name: {name}\n    checks: [{{match: x}}]\n")
    assert_problem(err, 6, f"evals[0].name: eval name {name!r} is a protected keyword", "success_pct")


@pytest.mark.parametrize("name", ["total", "passed", "failed"])
def test_eval_name_that_is_a_run_variable(tmp_path: Path, name: str) -> None:
    """An eval's pass flag would overwrite the run-wide variable of the same name in formulas."""
    err = fails(tmp_path, HEAD + f"  - prompt: p\n    name: {name}\n    checks: [{{match: x}}]\n")
    assert_problem(err, 6, f"eval name {name!r} is a run-wide score formula variable")


def test_eval_name_whose_variables_clash_with_run_variables(tmp_path: Path) -> None:
    """``avg`` would define ``avg_latency`` and ``avg_cost``, which are run-wide variables."""
    err = fails(tmp_path, HEAD + "  - prompt: p\n    name: avg\n    checks: [{match: x}]\n")
    assert_problem(err, 6, "eval name 'avg' would define", "'avg_latency', 'avg_cost'")


def test_eval_named_like_another_evals_variable(tmp_path: Path) -> None:
    """Evals ``critical-math`` and ``critical-math_cost``: a formula's ``critical-math_cost`` would be
    both; the error is on the eval whose name is the variable, and names the other with its line."""
    text = HEAD + (
        "  - name: critical-math_cost\n    prompt: p\n    checks: [{match: x}]\n"  # name on line 5
        "  - name: critical-math\n    prompt: p\n    checks: [{match: x}]\n"  # line 8
    )
    problem = assert_problem(
        fails(tmp_path, text),
        5,
        "evals[0].name: eval name 'critical-math_cost' clashes with eval 'critical-math' (evals[1], line 8)",
        "`<name>_cost` variable; rename one of the two evals",
    )
    assert problem.loc == ("evals", 0, "name")


@pytest.mark.parametrize("name", ["has space", "dots.not.allowed", "ümlaut", "semi;colon"])
def test_eval_name_with_invalid_characters(tmp_path: Path, name: str) -> None:
    err = fails(tmp_path, HEAD + f"  - prompt: p\n    name: {name!r}\n    checks: [{{match: x}}]\n")
    assert_problem(err, 6, "evals[0].name: eval name may contain only ASCII letters, digits, '-' and '_'")


def test_every_problem_is_reported(tmp_path: Path) -> None:
    text = HEAD + (
        "  - name: a\n    prompt: p\n    checks: [{mtch: x}]\n"  # line 5-7
        "  - name: a\n    prompt: p\n    checks: []\n"  # line 8-10
    )
    err = fails(tmp_path, text)
    assert [p.line for p in err.problems] == [7, 8, 10]
    rendered = err.render()
    assert "unknown check 'mtch'" in rendered
    assert "duplicate eval name 'a'" in rendered
    assert "`checks` is empty" in rendered


def test_problems_of_every_kind_are_reported_in_line_order(tmp_path: Path) -> None:
    text = HEAD + (
        '  - prompt: "{{var(x)}}"\n    checks: [{match: x}]\n'  # template: line 5
        "  - prompt: p\n    promt: q\n    checks:\n      - mtch: x\n"  # unknown key 8, check 10
    )
    err = fails(tmp_path, text)
    assert [p.line for p in err.problems] == [5, 8, 10]
    assert "malformed template" in err.problems[0].message
    assert "unknown key 'promt'" in err.problems[1].message
    assert "unknown check 'mtch'" in err.problems[2].message


def test_problems_are_sorted_by_line(tmp_path: Path) -> None:
    text = HEAD + '  - prompt: "{{var(x)}}"\n    checks: []\n'  # template on 5, empty checks on 6
    err = fails(tmp_path, text)
    assert [p.line for p in err.problems] == [5, 6]


# --- checks ------------------------------------------------------------------------------------


def test_unknown_check_did_you_mean(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks:\n      - min_tokens: 1\n      - mtch: x\n")
    problem = assert_problem(err, 8, "evals[0].checks[1]: unknown check 'mtch' (did you mean 'match'?)")
    assert problem.hint is not None and "known checks: match, not_match" in problem.hint


def test_unknown_check_inside_or(tmp_path: Path) -> None:
    text = HEAD + "  - prompt: p\n    checks:\n      or:\n        - match: x\n        - not_mtch: y\n"
    err = fails(tmp_path, text)
    assert_problem(err, 9, "evals[0].checks.or[1]: unknown check 'not_mtch' (did you mean 'not_match'?)")


@pytest.mark.parametrize("check", ["match", "not_match"])
def test_empty_pattern(tmp_path: Path, check: str) -> None:
    err = fails(tmp_path, HEAD + f'  - prompt: p\n    checks:\n      - {check}: ""\n')
    assert_problem(err, 7, f"evals[0].checks[0].{check}: `{check}` must not be empty")


def test_check_without_value(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks:\n      - match:\n")
    assert_problem(
        err,
        7,
        "evals[0].checks[0].match: must be text, not null (an empty value)",
        'hint: write the text after the colon; to mean the word, quote it: match: "null"',
    )


def test_check_with_two_keys(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks:\n      - match: x\n        min_tokens: 3\n")
    assert_problem(
        err, 7, "a check is a mapping with exactly one key (found match, min_tokens)", "- max_tokens: 50"
    )


def test_check_that_is_text(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + '  - prompt: p\n    checks:\n      - "*x*"\n')
    assert_problem(err, 7, "a check is a mapping with exactly one key (found text)")


def test_empty_checks_list(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks: []\n")
    assert_problem(err, 6, "evals[0].checks: `checks` is empty; an eval needs at least one check")


def test_checks_without_value(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks:\n")
    assert_problem(err, 6, "`checks` must be a list or {or: [...]}, not empty")


def test_missing_checks(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n")
    assert_problem(err, 5, "evals[0]: missing required key 'checks'")


def test_object_form_checks_is_legacy(tmp_path: Path) -> None:
    text = HEAD + "  - prompt: p\n    checks:\n      match: x\n      min_tokens: 2\n"
    err = fails(tmp_path, text)
    assert_problem(err, 6, "object-form `checks:` is the legacy format", '- match: "*4*"', "{or: [...]}")


def test_legacy_type_checks(tmp_path: Path) -> None:
    text = HEAD + "  - prompt: p\n    checks:\n      - type: string_contains\n        value: '4'\n"
    err = fails(tmp_path, text)
    assert_problem(err, 7, "legacy check format (`type: string_contains`)", 'becomes `- match: "*X*"`')


@pytest.mark.parametrize("value", ["[]", "x", "{}"])
def test_or_needs_a_non_empty_list(tmp_path: Path, value: str) -> None:
    err = fails(tmp_path, HEAD + f"  - prompt: p\n    checks:\n      or: {value}\n")
    assert_problem(err, 7, "evals[0].checks.or: `or` needs a non-empty list of checks")


def test_or_inside_the_list_needs_a_non_empty_list(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks:\n      - min_tokens: 1\n      - or: []\n")
    assert_problem(err, 8, "evals[0].checks[1].or: `or` needs a non-empty list")


def test_or_item_inside_the_list_is_accepted(tmp_path: Path) -> None:
    text = HEAD + (
        "  - prompt: p\n    checks:\n"
        "      - or:\n          - match: '*x*'\n          - match: '*y*'\n"  # lines 7-9
        "      - min_tokens: 1\n"  # line 10
    )
    suite = load(tmp_path, text)
    (case,) = suite.evals
    first, second = case.checks
    assert isinstance(first, AnyOf)
    assert first.line == 7
    assert [(c.type.name, c.value, c.line) for c in first.children if isinstance(c, Check)] == [
        ("match", "*x*", 8),
        ("match", "*y*", 9),
    ]
    assert isinstance(second, Check)
    assert (second.type.name, second.value, second.line) == ("min_tokens", 1, 10)


def test_checks_or_mapping_is_accepted(tmp_path: Path) -> None:
    text = HEAD + "  - prompt: p\n    checks:\n      or:\n        - match: '*x*'\n        - max_tokens: 5\n"
    (case,) = load(tmp_path, text).evals
    (node,) = case.checks
    assert isinstance(node, AnyOf)
    assert [c.type.name for c in node.children if isinstance(c, Check)] == ["match", "max_tokens"]
    assert [c.line for c in node.children if isinstance(c, Check)] == [8, 9]


def test_nested_or_is_accepted(tmp_path: Path) -> None:
    text = HEAD + "  - prompt: p\n    checks:\n      or:\n        - or: [{match: a}, {match: b}]\n"
    (case,) = load(tmp_path, text).evals
    (outer,) = case.checks
    assert isinstance(outer, AnyOf)
    (inner,) = outer.children
    assert isinstance(inner, AnyOf) and len(inner.children) == 2


def test_semantic_missing_threshold(tmp_path: Path) -> None:
    text = HEAD + "  - prompt: p\n    checks:\n      - semantic:\n          expected: e\n"
    err = fails(tmp_path, text)
    assert_problem(err, 7, "evals[0].checks[0].semantic: missing required key 'threshold'")


@pytest.mark.parametrize(
    ("value", "message"), [("1.5", "must be 1 or less, not 1.5"), ("-0.1", "must be 0 or more, not -0.1")]
)
def test_semantic_threshold_out_of_range(tmp_path: Path, value: str, message: str) -> None:
    text = (
        HEAD
        + "  - prompt: p\n    checks:\n      - semantic:\n"
        + f"          expected: e\n          threshold: {value}\n"
    )
    err = fails(tmp_path, text)
    assert_problem(err, 9, "evals[0].checks[0].semantic.threshold:", message)


def test_semantic_unknown_key(tmp_path: Path) -> None:
    text = (
        HEAD
        + "  - prompt: p\n    checks:\n      - semantic:\n"
        + "          expected: e\n          treshold: 1\n"
    )
    err = fails(tmp_path, text)
    messages = [p.message for p in err.problems]
    assert "unknown key 'treshold' in `semantic`" in messages
    assert "missing required key 'threshold'" in messages
    assert [p.line for p in err.problems if "treshold" in p.message] == [9]


def test_llm_judge_needs_criteria(tmp_path: Path) -> None:
    text = HEAD + "  - prompt: p\n    checks:\n      - llm_judge: {}\n"
    err = fails(tmp_path, text)
    assert_problem(err, 7, "evals[0].checks[0].llm_judge: missing required key 'criteria'")


@pytest.mark.parametrize("check", ["min_tokens", "max_tokens"])
def test_negative_token_limit(tmp_path: Path, check: str) -> None:
    err = fails(tmp_path, HEAD + f"  - prompt: p\n    checks:\n      - {check}: -1\n")
    assert_problem(err, 7, f"evals[0].checks[0].{check}: must be 0 or more")


def test_fractional_token_limit(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks:\n      - min_tokens: 2.5\n")
    assert_problem(
        err, 7, "min_tokens: must be a whole number, not the number 2.5", "hint: a whole number of tokens"
    )


def test_invalid_regex(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks:\n      - regex: '(unclosed'\n")
    assert_problem(err, 7, "evals[0].checks[0].regex: not a valid regular expression")


def test_pydantic_location_maps_to_the_nested_line(tmp_path: Path) -> None:
    text = """\
    metadata:
      name: s
      model: m
    evals:
      - prompt: first
        checks:
          - match: "*a*"
      - prompt: second
        checks:
          - match: "*b*"
      - prompt: third
        checks:
          - match: "*c*"
          - semantic:
              expected: close to c
              threshold: 7
          - max_tokens: 3
    """
    err = fails(tmp_path, text)
    problem = assert_problem(err, 16, "evals[2].checks[1].semantic.threshold: must be 1 or less, not 7")
    assert problem.loc == ("evals", 2, "checks", 1, "semantic", "threshold")


def test_pydantic_model_error_maps_to_the_nested_line(tmp_path: Path) -> None:
    """Errors found by the suite model (not a check) also point at the exact node."""
    text = """\
    metadata:
      name: s
      model: m
    evals:
      - prompt: first
        checks: [{match: x}]
      - prompt: second
        tags:
          - ok
          - ""
        checks: [{match: x}]
    """
    err = fails(tmp_path, text)
    problem = assert_problem(err, 10, "evals[1].tags[1]: tag '' must start with a letter")
    assert problem.loc == ("evals", 1, "tags", 1)


def test_document_line_of_skips_segments_not_in_the_data(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "a:\n  b:\n    - x\n    - c: 1\n"))
    assert doc.line_of(("a", "b", 1, "c")) == 4
    assert doc.line_of(("a", "function-after[x]", "b", 0)) == 3  # pydantic union tags are skipped
    assert doc.line_of(("a", "b", 9)) == 2  # deepest existing node
    assert doc.line_of(("nope",)) == 1
    assert doc.clean_loc(("a", "Model", "b", 1, "c")) == ("a", "b", 1, "c")


# --- templates ---------------------------------------------------------------------------------


def test_unknown_template_function(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: \"Hi {{ foo('x') }}\"\n    checks: [{match: x}]\n")
    assert_problem(
        err, 5, "evals[0].prompt: unknown template function 'foo'", "only var('name') and secret('name')"
    )


def test_template_without_quotes(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + '  - prompt: "Hi {{var(x)}}"\n    checks: [{match: x}]\n')
    assert_problem(err, 5, "evals[0].prompt: malformed template '{{var(x)}}'", "write {{var('name')}}")


def test_an_unclosed_template_is_an_error(tmp_path: Path) -> None:
    """Left as it is, it would reach the model as written, and the eval pass or fail on that."""
    err = fails(tmp_path, HEAD + "  - prompt: \"Hi {{var('zz')\"\n    checks: [{match: x}]\n")
    assert_problem(err, 5, "evals[0].prompt: unclosed template \"{{var('zz')\": end it with }}")


def test_a_misspelt_placeholder_in_args_is_an_error(tmp_path: Path) -> None:
    """``${MODLE}`` would reach the CLI as it is; a ``${…}`` close to no placeholder may be the CLI's."""
    text = (
        HEAD
        + '  - {prompt: p, checks: [{match: x}]}\nconfigurations:\n  a: {cli: echo, args: ["${MODLE}"]}\n'
    )
    err = fails(tmp_path, text)
    assert_problem(err, 7, "configurations.a.args: unknown placeholder ${MODLE} (did you mean '${MODEL}'?)")
    fine = HEAD + '  - {prompt: p, checks: [{match: x}]}\nconfigurations:\n  a: {cli: sh, args: [-c, "%s"]}\n'
    for script in ("${HOME}", "MODE=fast; echo ${MODE} ${MODELS}", "${PROMT}"):  # a shell's, or not close
        assert load_suite(write(tmp_path, fine % script)).configurations is not None


def test_malformed_template_in_a_pattern(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: p\n    checks:\n      - match: \"*{{secret('x'}}*\"\n")
    assert_problem(err, 7, "evals[0].checks[0].match: malformed template")


def test_empty_template_name(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - prompt: \"{{var('')}}\"\n    checks: [{match: x}]\n")
    assert_problem(err, 5, "empty name in template")


def test_templates_are_accepted_where_vibecheck_uses_them(tmp_path: Path) -> None:
    text = """\
    metadata:
      name: s
      model: m
      mcp_server:
        url: https://example.invalid/mcp
        name: x
        authorization_token: "{{secret('api.key')}}"
    evals:
      - prompt: "team {{ var(\\"team\\") }}"
        checks:
          - match: "*{{var('project')}}-[0-9]+*"
    """
    suite = load(tmp_path, text)
    assert suite.mcp_server is not None
    assert suite.mcp_server.authorization_token == "{{secret('api.key')}}"
    assert suite.evals[0].prompt == 'team {{ var("team") }}'


# --- a valid suite -----------------------------------------------------------------------------


def test_valid_suite_fields(tmp_path: Path) -> None:
    text = """\
    metadata:
      name: demo
      model: some/model
      system_prompt: be brief
      tags: [smoke]
    score:
      formula: "100 * four"
    evals:
      - name: four
        prompt: What is 2 + 2?
        tags: [math]
        checks:
          - match: "*4*"
      - prompt: Say hi
        xfail: known bad
        checks:
          - max_tokens: 10
    """
    suite = load(tmp_path, text)
    assert (suite.name, suite.model, suite.system_prompt) == ("demo", "some/model", "be brief")
    assert (suite.formula, suite.formula_line) == ("100 * four", 7)
    assert suite.tags == ("smoke",)
    four, hi = suite.evals
    assert (four.id, four.name, four.index, four.line, four.tags) == ("four", "four", 0, 9, ("math",))
    assert (hi.id, hi.name, hi.index, hi.line, hi.xfail) == ("say-hi", None, 1, 14, "known bad")


def test_default_formula(tmp_path: Path) -> None:
    suite = load(tmp_path, HEAD + "  - prompt: p q r\n    checks: [{match: x}]\n")
    assert (suite.formula, suite.formula_line) == ("success_pct", None)


# --- generated eval ids ------------------------------------------------------------------------


def test_generated_ids_are_stable(tmp_path: Path) -> None:
    text = HEAD + "  - prompt: What is 2 + 2?\n    checks: [{match: x}]\n"
    first = load(tmp_path, text, "a.yaml").evals[0].id
    second = load(tmp_path, text, "b.yaml").evals[0].id
    assert first == second == "what-is-2-2"


def test_generated_ids_are_unique_within_a_suite(tmp_path: Path) -> None:
    text = HEAD + (
        "  - prompt: Say hello\n    checks: [{match: x}]\n"
        "  - prompt: Say hello\n    checks: [{match: y}]\n"
        "  - prompt: say HELLO!\n    checks: [{match: z}]\n"
    )
    ids = [case.id for case in load(tmp_path, text).evals]
    assert ids == ["say-hello", "say-hello-2", "say-hello-3"]


def test_generated_ids_avoid_explicit_names(tmp_path: Path) -> None:
    text = HEAD + (
        "  - prompt: Say hello\n    checks: [{match: x}]\n"
        "  - name: say-hello\n    prompt: something else\n    checks: [{match: y}]\n"
    )
    ids = [case.id for case in load(tmp_path, text).evals]
    assert ids == ["say-hello-2", "say-hello"]
    assert len(set(ids)) == len(ids)


def test_explicit_names_are_the_ids(tmp_path: Path) -> None:
    text = HEAD + "  - name: Four_2\n    prompt: What is 2 + 2?\n    checks: [{match: x}]\n"
    (case,) = load(tmp_path, text).evals
    assert (case.id, case.name) == ("Four_2", "Four_2")


NON_ASCII_PROMPTS = ["描述如何制作花生酱果酱三明治。", "Опишите, как приготовить бутерброд", "?!"]


@pytest.mark.parametrize("prompt", NON_ASCII_PROMPTS)
def test_non_ascii_prompts_get_a_hash_id(tmp_path: Path, prompt: str) -> None:
    text = HEAD + f'  - prompt: "{prompt}"\n    checks: [{{match: x}}]\n'
    (case,) = load(tmp_path, text).evals
    assert case.id == "eval-" + hashlib.sha1(prompt.encode()).hexdigest()[:8]
    assert case.id == prompt_slug(prompt)


def test_prompt_slug_shapes() -> None:
    assert prompt_slug("What is 2 + 2?") == "what-is-2-2"
    assert prompt_slug("Décrivez comment faire un sandwich") == "decrivez-comment-faire-un-sandwich"
    long = prompt_slug("word " * 30)
    assert len(long) <= 40 and long.startswith("word-word") and not long.endswith("-")
    # templates do not leak into ids
    assert prompt_slug("Hello {{var('who')}} there") == "hello-there"


# --- through pytest ----------------------------------------------------------------------------

PYTHON_CONFIG = "configurations:\n  stand-in:\n    python: 'standin_loading:answer'\n"


def _no_traceback(text: str) -> None:
    assert "Traceback" not in text
    assert 'File "' not in text


def test_unknown_formula_variable_via_pytest(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".eval.yaml",
        scored=HEAD.replace("evals:", "score:\n  formula: 100 * (four + sucess_pct)\nevals:")
        + "  - name: four\n    prompt: p\n    checks: [{match: x}]\n",
    )
    result = pytester.runpytest(*BASE_ARGS)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    lines = result.stdout.lines
    (index,) = [i for i, line in enumerate(lines) if "scored.eval.yaml:5: score.formula:" in line]
    assert lines[index].endswith("unknown variable 'sucess_pct' (did you mean 'success_pct'?)")
    formula_line, caret_line = lines[index + 1], lines[index + 2]
    assert formula_line.strip() == "100 * (four + sucess_pct)"
    assert caret_line.strip() == "^" * len("sucess_pct")  # under the whole name
    assert caret_line.index("^") == formula_line.index("sucess_pct")
    _no_traceback(out)


def test_formula_may_use_named_eval_variables(pytester: pytest.Pytester) -> None:
    formula = "50 * four + 50 * four_latency * 0"
    pytester.makepyfile(standin_loading="def answer(prompt):\n    return 'x'\n")
    pytester.makefile(
        ".eval.yaml",
        scored=HEAD.replace("evals:", f"score:\n  formula: {formula}\n{PYTHON_CONFIG}evals:")
        + "  - name: four\n    prompt: p\n    checks: [{match: x}]\n",
    )
    result = pytester.runpytest(*BASE_ARGS)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["Score: 50.00 (formula: 50 * four + 50 * four_latency * 0)"])


def test_each_bad_file_gets_its_own_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(standin_loading="def answer(prompt):\n    return 'the answer is x'\n")
    good = HEAD.replace("evals:", PYTHON_CONFIG + "evals:") + "  - prompt: p\n    checks: [{match: '*x*'}]\n"
    pytester.makefile(
        ".eval.yaml",
        good=good,
        dupkey="metadata:\n  name: a\n  model: m\n  name: b\n",
        bomb=BILLION_LAUGHS,
        template=HEAD + '  - prompt: "{{var(x)}}"\n    checks: [{match: x}]\n',
        typo=HEAD + "  - prompt: p\n    checks:\n      - mtch: x\n",
    )
    result = pytester.runpytest(*BASE_ARGS)
    result.assert_outcomes(passed=1, errors=4)
    out = result.stdout.str()
    for fragment in (
        "dupkey.eval.yaml:4: duplicate key 'name' (first defined on line 2)",
        f"bomb.eval.yaml:1: document expands to more than {MAX_NODES} nodes",
        "template.eval.yaml:5: evals[0].prompt: malformed template '{{var(x)}}'",
        "typo.eval.yaml:7: evals[0].checks[0]: unknown check 'mtch' (did you mean 'match'?)",
    ):
        assert fragment in out
    _no_traceback(result.stdout.str())


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        ("_wip", "tag '_wip' must start with a letter and hold only ASCII letters, digits and '_'"),
        ("bad tag", "tag 'bad tag' must start with a letter"),
        ("skip", "tag 'skip' is a pytest marker that changes how tests run; choose another name"),
        ("xfail", "tag 'xfail' is a pytest marker that changes how tests run"),
        ("flaky", "tag 'flaky' is a pytest marker that changes how tests run"),  # pytest-rerunfailures'
    ],
)
def test_tags_that_cannot_be_markers_are_rejected(tmp_path: Path, tag: str, message: str) -> None:
    err = fails(tmp_path, HEAD + f"  - prompt: p\n    tags: [{tag!r}]\n    checks: [{{match: x}}]\n")
    assert_problem(err, 6, f"evals[0].tags[0]: {message}")


def test_a_yaml_boolean_where_text_belongs_says_to_quote_it(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + "  - name: yes\n    prompt: p\n    checks: [{match: x}]\n")
    assert_problem(
        err,
        5,
        "evals[0].name: must be text, not the boolean true: YAML reads yes/no/on/off/true/false as booleans",
        'hint: quote it to make it text: name: "true"',
    )


# --- a value of the wrong kind says what was given and how to write it -----------------------------


def test_score_written_as_the_formula_says_where_the_formula_goes(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + PROMPT_EVAL + "score: success_pct\n")
    assert_problem(
        err,
        7,
        "score: must be a mapping, not text",
        "hint: the formula goes under the key `formula`: score: {formula: success_pct}",
    )


def test_an_unquoted_list_where_text_belongs_says_to_quote_it(tmp_path: Path) -> None:
    err = fails(tmp_path, HEAD + PROMPT_EVAL + "score:\n  formula: [critical-math]\n")
    assert_problem(
        err,
        8,
        "score.formula: must be text, not a list: YAML reads a value in [brackets] as a list",
        'hint: quote it to make it text: formula: "[critical-math]"',
    )


@pytest.mark.parametrize(
    ("text", "line", "message", "hint"),
    [
        ("  - name: 123\n    prompt: p\n    checks: [{match: x}]\n", 5,
         "evals[0].name: must be text, not the number 123", 'quote it to make it text: name: "123"'),
        ("  - prompt: 42\n    checks: [{match: x}]\n", 5,
         "evals[0].prompt: must be text, not the number 42", 'quote it to make it text: prompt: "42"'),
        (PROMPT_EVAL + "score: {formula: 100}\n", 7,
         "score.formula: must be text, not the number 100", 'quote it to make it text: formula: "100"'),
    ],
)  # fmt: skip
def test_a_number_where_text_belongs_says_to_quote_it(
    tmp_path: Path, text: str, line: int, message: str, hint: str
) -> None:
    assert_problem(fails(tmp_path, HEAD + text), line, message, f"hint: {hint}")


def test_a_check_mapping_with_a_wrong_key_is_not_also_told_to_be_text(tmp_path: Path) -> None:
    """``tool_called``, ``json`` and ``python`` take text (or true) or a mapping: a mapping with a
    wrong key is told what is wrong in it, not also "must be text … quote it to make it text"."""
    text = (
        HEAD
        + "  - prompt: p\n    checks:\n"
        + "      - tool_called: {nam: x}\n"
        + "      - json: {path: a, equal: 2}\n"
        + "      - python: {function: 'm:f', threshold: 2}\n"
        + "      - tool_called: [x]\n"
    )
    err = fails(tmp_path, text)
    shown = [(p.line, p.message) for p in err.problems]
    assert shown[:4] == [
        (7, "missing required key 'name'"),
        (7, "unknown key 'nam' in `tool_called`"),
        (8, "unknown key 'equal' in `json`"),
        (9, "must be 1 or less, not 2"),
    ], shown
    # a value of neither kind still hears of both
    assert shown[4:] == [
        (10, "must be text, not a list: YAML reads a value in [brackets] as a list"),
        (10, "must be a mapping, not a list"),
    ], shown
