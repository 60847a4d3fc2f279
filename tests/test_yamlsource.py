"""yamlsource: hostile YAML (deep nesting, characters YAML refuses, values Python cannot make, alias
bombs) fails with the file, the line and what to do, never a traceback or a crash; plain data of any
size loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_vibeeval.errors import InputError
from pytest_vibeeval.loading import yamlsource
from pytest_vibeeval.loading.syntax_hints import json_error
from pytest_vibeeval.loading.yamlsource import MAX_DEPTH, load_document


@pytest.fixture(params=["libyaml", "pyyaml"])
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both parsers: libyaml reports byte offsets and composes in C, PyYAML character offsets."""
    if request.param == "pyyaml":
        monkeypatch.setattr(yamlsource, "_LOADER", yaml.SafeLoader)


def error(tmp_path: Path, text: str) -> InputError:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_document(path)
    return info.value


def assert_error(err: InputError, line: int, message: str, hint: str) -> None:
    """``err`` is one problem on ``line``, rendered ``file:line: message`` with ``hint``."""
    assert len(err.problems) == 1, err.render()
    rendered = err.render()
    assert rendered.startswith(f"{err.path}:{line}: {message}"), rendered
    assert f"\n    hint: {hint}" in rendered, rendered


# --- nesting ---------------------------------------------------------------------------------------


# Unbounded, this would compose for minutes: the timeout only guards against a hang.
@pytest.mark.timeout(60)
@pytest.mark.usefixtures("loader")
def test_100k_nested_lists_are_refused_before_composing(tmp_path: Path) -> None:
    err = error(tmp_path, "a: 1\nb: " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert_error(err, 2, f"nesting deeper than {MAX_DEPTH} levels", "flatten the data")
    assert "alias" not in err.render()


@pytest.mark.usefixtures("loader")
def test_depth_error_names_the_line_of_the_first_collection_too_deep(tmp_path: Path) -> None:
    # the root mapping is level 0 and `[` number k (line k + 1) level k
    err = error(tmp_path, "a:\n" + " [\n" * 100 + " " + "]" * 100 + "\n")
    assert_error(err, MAX_DEPTH + 2, f"nesting deeper than {MAX_DEPTH} levels", "flatten the data")


@pytest.mark.usefixtures("loader")
def test_nesting_up_to_max_depth_loads(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), encoding="utf-8")
    data = load_document(path).data
    for _ in range(MAX_DEPTH):
        data = data[0]
    assert data == []
    path.write_text("[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2), encoding="utf-8")
    with pytest.raises(InputError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        load_document(path)


def test_a_deep_second_document_is_reported_as_a_second_document(tmp_path: Path) -> None:
    err = error(tmp_path, "a: 1\n---\nb: " + "[" * 1000 + "]" * 1000 + "\n")
    assert err.render().startswith(f"{err.path}:2: invalid YAML: "), err.render()
    assert "expected a single document" in err.render()


# --- characters YAML refuses -----------------------------------------------------------------------


@pytest.mark.usefixtures("loader")
@pytest.mark.parametrize(
    ("char", "escape"), [("\x00", "\\x00"), ("\x07", "\\x07"), ("\x1b", "\\x1b"), ("\ufffe", "\\ufffe")]
)
def test_refused_character_names_its_line_and_column(tmp_path: Path, char: str, escape: str) -> None:
    # multi-byte characters before it (libyaml counts bytes) and CRLF line breaks (one break each)
    err = error(tmp_path, f"a: 'é€😀'\r\nb: x\r\nc: 'zz{char}'\n")
    code = ord(char)
    assert_error(
        err,
        3,
        f"invalid YAML: unacceptable character #x{code:04x} (U+{code:04X}) in column 7: ",
        f'remove it, or write it as the escape "{escape}" inside a double-quoted string',
    )
    assert "position" not in err.render() and "<unicode string>" not in err.render()


def test_refused_character_counts_every_yaml_line_break(tmp_path: Path) -> None:
    err = error(tmp_path, "a: 1\rb: 2\x85c: 3\u2028d: 4\r\ne: \x00\n")
    assert err.render().startswith(f"{err.path}:5: invalid YAML: unacceptable character #x0000"), err.render()


def test_escaped_character_in_double_quotes_loads(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text('a: "x\\x00y\\x07"\n', encoding="utf-8")
    assert load_document(path).data == {"a": "x\x00y\x07"}


# --- values Python cannot make ---------------------------------------------------------------------


@pytest.mark.parametrize("sign", ["", "-", "+"])
def test_integer_of_5000_digits(tmp_path: Path, sign: str) -> None:
    err = error(tmp_path, f"a: 1\nb:\n  c: {sign}{'9' * 5000}\n")
    assert_error(
        err,
        3,
        "an integer of 5000 digits is too long (at most 4300 digits)",
        "quote the value to keep it as text",
    )
    assert "set_int_max_str_digits" not in err.render()


def test_integer_key_of_5000_digits(tmp_path: Path) -> None:
    err = error(tmp_path, f"a: 1\n? {'9' * 5000}\n: x\n")
    assert_error(err, 2, "an integer of 5000 digits is too long", "quote the value to keep it as text")


def test_quoted_long_number_loads_as_text(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(f"a: '{'9' * 5000}'\n", encoding="utf-8")
    assert load_document(path).data == {"a": "9" * 5000}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2024-02-30", "not a valid timestamp value: day is out of range for month"),
        ("!!int abc", "not a valid int value: invalid literal for int()"),
        ("!!bool maybe", "not a valid bool value"),
        ("!!timestamp soon", "not a valid timestamp value"),
    ],
)
def test_value_python_cannot_make(tmp_path: Path, value: str, message: str) -> None:
    err = error(tmp_path, f"a: 1\nb: {value}\n")
    assert_error(err, 2, message, "quote the value to keep it as text")


# --- alias expansion -------------------------------------------------------------------------------


def test_plain_document_larger_than_max_nodes_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsource, "MAX_NODES", 100)
    path = tmp_path / "suite.yaml"
    path.write_text("evals:\n" + "".join(f"  - {{name: e{i}, checks: [{{match: x}}]}}\n" for i in range(500)))
    assert len(load_document(path).data["evals"]) == 500


def test_only_nodes_reached_through_aliases_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsource, "MAX_NODES", 10)
    plain = "".join(f"k{i}: {i}\n" for i in range(50))
    path = tmp_path / "suite.yaml"
    path.write_text(plain + "a: &a [1, 2, 3, 4]\nb: *a\nc: *a\n")  # 2 × 5 nodes again
    assert load_document(path).data["c"] == [1, 2, 3, 4]
    err = error(tmp_path, plain + "a: &a [1, 2, 3, 4]\nb: *a\nc: *a\nd: *a\n")
    assert_error(
        err,
        51,
        "document expands to more than 10 nodes (aliases referring to aliases?)",
        "write the data out plainly instead of nesting YAML aliases",
    )


def test_merge_keys_count_as_aliases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsource, "MAX_NODES", 10)
    base = "base: &b {x: 1, y: 2, z: 3}\n"
    merges = "".join(f"m{i}: {{<<: *b}}\n" for i in range(3))  # 6 nodes (3 keys, 3 values) each
    err = error(tmp_path, base + merges)
    assert "document expands to more than 10 nodes" in err.render()


def test_an_error_at_the_end_of_a_text_without_a_final_line_break_is_on_its_last_line(tmp_path: Path) -> None:
    """libyaml marks the end of such a text one line past it; found by test_property_suites."""
    path = tmp_path / "suite.eval.yaml"
    path.write_text("metadata:\n  name: x\nevals: []\nA", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_document(path)
    assert [problem.line for problem in info.value.problems] == [4]


# --- syntax errors say how to fix them -------------------------------------------------------------


@pytest.mark.usefixtures("loader")
@pytest.mark.parametrize(
    ("line", "start", "hint"),
    [
        (
            "  formula: [critical-math] * 3",
            "`[` is read by YAML as a list",
            'quote it, e.g. formula: "[critical-math] * 3"',
        ),
        (
            "  - match: *x*",
            "`*` is read by YAML as an alias (a reference to an `&anchor`)",
            'quote it, e.g. match: "*x*"',
        ),
        ("  - match: @home", "`@` is read by YAML as a reserved character", 'quote it, e.g. match: "@home"'),
    ],
)
def test_a_value_starting_with_an_indicator_must_be_quoted(
    tmp_path: Path, line: str, start: str, hint: str
) -> None:
    err = error(tmp_path, "a: 1\nb:\n" + line + "\n")
    assert_error(err, 3, "invalid YAML: ", f"a value starting with {start}, not as text: {hint}")


@pytest.mark.usefixtures("loader")
def test_a_value_holding_colon_space_must_be_quoted(tmp_path: Path) -> None:
    err = error(tmp_path, "evals:\n  - prompt: Solve: 2x + 5 = 15\n")
    assert_error(
        err,
        2,
        "invalid YAML: mapping values are not allowed",
        "the value of `prompt` holds `: `, which YAML reads as the start of another key: quote it, "
        'e.g. prompt: "Solve: 2x + 5 = 15" (or write the text as a `|` block on the next lines)',
    )


@pytest.mark.usefixtures("loader")
def test_other_syntax_errors_keep_the_general_hint(tmp_path: Path) -> None:
    err = error(tmp_path, "a: [1, 2\nb: 3\n")
    assert "hint: check indentation, quoting and brackets near this line" in err.render()


@pytest.mark.usefixtures("loader")
def test_python_tags_are_refused_on_their_line(tmp_path: Path) -> None:
    err = error(tmp_path, 'a: 1\nb: !!python/object/apply:os.system ["echo PWNED"]\n')
    assert_error(
        err,
        2,
        "the YAML tag `!!python/object/apply:os.system` is not accepted",
        "remove the tag: inputs hold plain data (text, numbers, booleans, lists and mappings)",
    )


@pytest.mark.usefixtures("loader")
def test_a_local_tag_is_refused(tmp_path: Path) -> None:
    err = error(tmp_path, "a: !include other.yaml\n")
    assert_error(err, 1, "the YAML tag `!include` is not accepted", "remove the tag")


@pytest.mark.usefixtures("loader")
def test_a_plain_equals_sign_is_text_not_a_tag(tmp_path: Path) -> None:
    """YAML 1.1 resolves a bare `=` to its own `!!value` tag: the user wrote no tag, only text."""
    path = tmp_path / "suite.yaml"
    path.write_text("a: =\nb: '='\n", encoding="utf-8")
    assert load_document(path).data == {"a": "=", "b": "="}


def test_latin1_text_names_its_line_and_says_to_save_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_bytes("a: 1\nb: 2\nc: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError) as info:
        load_document(path)
    assert_error(
        info.value,
        3,
        "not UTF-8 text: invalid continuation byte at byte 16",
        "save the file as UTF-8",
    )


@pytest.mark.parametrize(
    ("text", "line", "message", "hint"),
    [
        ('{"a": 1,\n "b": 2,\n}\n', 2, "a comma after the last entry (column 8)",
         "remove the comma after the last entry: JSON allows no trailing comma"),
        ("{'a': 1}", 1, "Expecting property name enclosed in double quotes (column 2)",
         'a key must be text in double quotes, e.g. "name": …; single quotes are not JSON'),
        ('{"a": [1,]}', 1, "a comma after the last entry (column 9)", "remove the comma after"),
        ('{"a": [1, ]}', 1, "a comma after the last entry (column 9)", "remove the comma after"),
        ('{"a": 1 "b": 2}', 1, "Expecting ',' delimiter (column 9)", "a comma is missing between two"),
        ('{"a": "C:\\x"}', 1, "Invalid \\escape (column 10)", "a backslash in a string starts an escape"),
    ],
)  # fmt: skip
def test_invalid_json_names_line_column_and_fix(
    tmp_path: Path, text: str, line: int, message: str, hint: str
) -> None:
    path = tmp_path / "cli-config.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_document(path)
    assert_error(info.value, line, f"invalid JSON: {message}", hint)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"ok": true,}', "a comma after the last entry: line 1 column 12 (char 11)"),
        ("[1, 2 ,\n\n]", "a comma after the last entry: line 1 column 7 (char 6)"),
        ('{"a": [1,],}', "a comma after the last entry: line 1 column 9 (char 8)"),
        ("[1,,2]", "Expecting value: line 1 column 4 (char 3)"),
        ("{'a': 1}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ],
)
def test_a_json_error_is_worded_the_same_on_every_python(text: str, said: str) -> None:
    """Where JSON that is not the plugin's own input is reported (a model's answer, an agent's
    output, a grade step's results file): Python 3.13 says "Illegal trailing comma before end of
    object" at the comma, earlier versions "Expecting property name enclosed in double quotes" or
    "Expecting value" at the bracket."""
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    assert str(json_error(caught.value)) == said


def _templated_in(node: object, loc: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    """The text values of parsed data that hold ``{{``, with their paths, as a walk finds them."""
    if isinstance(node, str):
        return [(loc, node)] if "{{" in node else []
    if isinstance(node, dict):
        return [found for key, value in node.items() for found in _templated_in(value, (*loc, key))]
    if isinstance(node, list):
        return [found for i, value in enumerate(node) for found in _templated_in(value, (*loc, i))]
    return []


TEMPLATED_DOCUMENTS = {
    "aliases": 'x: &a "{{row.q}}"\nevals:\n  - prompt: *a\n  - {prompt: hi, rows: [{q: *a}]}\n',
    "merge keys": (
        'base: &b {prompt: "{{row.x}}", other: "{{ bad"}\n'
        "evals:\n  - <<: *b\n    prompt: plain\n  - <<: [*b]\n"
    ),
    "folded and literal": (
        "evals:\n  - prompt: >\n      a {\n      {row.x}} and {{\n      row.y}}\n"
        "  - prompt: |\n      {{row.z}\n"
    ),
    "flow": 'evals: [{prompt: "{{row.a}}", checks: [{contains: "{{row.b}}"}, "{{ x"]}]\n',
    "tags and keys": 'evals:\n  - prompt: !!str "{{row.a}}"\n    "{{key}}": "{{v}}"\n    n: !!str 1{{x}}\n',
    "aliased rows": (
        'evals:\n  - rows: &r [{a: "{{row.q}}"}]\n    prompt: "{{row.a}}"\n  - {prompt: x, extra: *r}\n'
    ),
}


@pytest.mark.usefixtures("loader")
@pytest.mark.parametrize("text", TEMPLATED_DOCUMENTS.values(), ids=TEMPLATED_DOCUMENTS.keys())
def test_the_parser_notes_every_templated_value_a_walk_of_the_data_finds(tmp_path: Path, text: str) -> None:
    """The `{{row.…}}` placement check reads the values the parser noted instead of walking the
    file: through aliases, merge keys, folded lines, flow collections and tags, the same values at
    the same paths in the same order."""
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    doc = load_document(path)
    assert doc.templated == _templated_in(doc.data)
    assert doc.templated
