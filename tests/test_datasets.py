"""Dataset evals: ``dataset: cases.csv`` (or .jsonl, .yaml, inline ``rows:``) runs an eval once per
row with ``{{row.column}}`` filled in its prompt and checks; row ids in node ids; ``-k``,
``--vibe-eval`` and ``--lf`` on rows; every bad row a collection error naming its file and line."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, run_of, write

from pytest_vibeeval.loading.rows import sanitized_id

AGENT = """
CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima", "Chad": "N'Djamena"}


def answer(prompt, context=None):
    for country, capital in CAPITALS.items():
        if country in prompt:
            return f"The capital is {capital}."
    return "I do not know."
"""

ROWS = [
    {"id": "paris", "country": "France", "answer": "Paris"},
    {"id": "tokyo", "country": "Japan", "answer": "Tokyo"},
    {"id": "lima", "country": "Peru", "answer": "Lima"},
]

ECHO = "def answer(prompt, context=None):\n    return prompt\n"  # answers with the prompt


def echo_suite(folder: Path, evals: str) -> None:
    """``s.eval.yaml`` in ``folder`` with the YAML list ``evals``, answered by a Python agent that
    returns the prompt (configuration ``c``)."""
    write(folder / "agent.py", ECHO)
    head = 'metadata: {name: s, model: m}\nconfigurations: {c: {name: C, python: "agent:answer"}}\nevals:\n'
    write(folder / "s.eval.yaml", head + textwrap.dedent(evals).lstrip("\n"))


def suite(eval_keys: str, configurations: str = '  my-app: {name: App, python: "agent:answer"}') -> str:
    return f"""
metadata: {{name: capitals, model: m}}
configurations:
{configurations}
evals:
  - name: capital
{eval_keys}
    prompt: "What is the capital of {{{{row.country}}}}?"
    checks:
      - contains: "{{{{row.answer}}}}"
"""


def dataset_files(folder: Path) -> dict[str, str]:
    """The ROWS as each file format writes them."""
    csv_text = "id,country,answer\n" + "".join(f"{r['id']},{r['country']},{r['answer']}\n" for r in ROWS)
    jsonl = "".join(json.dumps(r) + "\n" for r in ROWS)
    yaml_text = "".join(
        f"- {{id: {r['id']}, country: {r['country']}, answer: {r['answer']}}}\n" for r in ROWS
    )
    return {"cases.csv": csv_text, "cases.jsonl": jsonl, "cases.yaml": yaml_text, "cases.yml": yaml_text}


def glob_literal(pattern: str) -> str:
    """``pattern`` for fnmatch_lines with its brackets literal (``*`` still matches anything)."""
    return "".join({"[": "[[]", "]": "[]]"}.get(char, char) for char in pattern)


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    with ChatServer() as chat:
        yield chat


@pytest.mark.parametrize("source", ["cases.csv", "cases.jsonl", "cases.yaml", "cases.yml", "inline"])
def test_each_format_runs_one_item_per_row(pytester: pytest.Pytester, source: str) -> None:
    write(pytester.path / "agent.py", AGENT)
    if source == "inline":
        rows = "".join(f"      - {json.dumps(r)}\n" for r in ROWS)
        keys = "    rows:\n" + rows
    else:
        write(pytester.path / "data" / source, dataset_files(pytester.path)[source])
        keys = f"    dataset: data/{source}"
    write(pytester.path / "s.eval.yaml", suite(keys))
    result = run(pytester, "--vibe-results", "r.json", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*s.eval.yaml::capital[[]paris[]][[]my-app[]] PASSED*"])
    records = evals_by_nodeid(load_json(pytester.path / "r.json"))
    assert list(records) == [f"s.eval.yaml::capital[{r['id']}][my-app]" for r in ROWS]  # in row order
    paris = records["s.eval.yaml::capital[paris][my-app]"]
    assert (paris["name"], paris["eval_name"], paris["row_id"]) == ("capital[paris]", "capital", "paris")
    assert paris["row"] == ROWS[0]
    assert paris["response"] == "The capital is Paris."


def test_yaml_rows_keep_their_types_and_fill_templates_as_text(pytester: pytest.Pytester) -> None:
    echo_suite(
        pytester.path,
        """
          - name: typed
            rows:
              - {n: 3, ok: true, ratio: 0.5, empty: null, list: [1, "a"], when: 2024-02-29}
            prompt: "{{row.n}}|{{row.ok}}|{{row.ratio}}|{{row.empty}}|{{row.list}}|{{row.when}}"
            checks:
              - equals: '3|true|0.5||[1, "a"]|2024-02-29'
        """,
    )
    result = run(pytester, "--vibe-results", "r.json")
    result.assert_outcomes(passed=1)
    (record,) = evals_by_nodeid(load_json(pytester.path / "r.json")).values()
    assert record["row"] == {
        "n": 3,
        "ok": True,
        "ratio": 0.5,
        "empty": None,
        "list": [1, "a"],
        "when": "2024-02-29",
    }
    assert record["row_id"] == "1"  # no id column: the row number


@XDIST_MODES
def test_numbers_json_cannot_hold_are_their_text_in_the_results(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """YAML's ``.inf``, ``-.inf`` and ``.nan`` and a JSONL number too large for a float read as
    ``inf``, ``-inf`` and ``nan`` in the prompt, and the results' ``row`` says so as that text
    (JSON has no such numbers: they were written as null); a CSV cell is text already."""
    write(pytester.path / "big.jsonl", '{"id": "big", "x": 1e999, "y": [-1e999]}\n')
    write(pytester.path / "cells.csv", "id,x,y\ncell,inf,nan\n")
    echo_suite(
        pytester.path,
        """
          - name: yaml
            rows: [{id: y, x: .inf, y: [-.inf, .nan, 1.5]}]
            prompt: "{{row.x}}|{{row.y}}"
            checks: [{equals: 'inf|["-inf", "nan", 1.5]'}]
          - name: jsonl
            dataset: big.jsonl
            prompt: "{{row.x}}|{{row.y}}"
            checks: [{equals: 'inf|["-inf"]'}]
          - name: csv
            dataset: cells.csv
            prompt: "{{row.x}}|{{row.y}}"
            checks: [{equals: "inf|nan"}]
        """,
    )
    result = run(pytester, "--vibe-results", "r.json", xdist=xdist)
    result.assert_outcomes(passed=3)
    rows = {r["eval_name"]: r["row"] for r in evals_by_nodeid(load_json(pytester.path / "r.json")).values()}
    assert rows == {
        "yaml": {"id": "y", "x": "inf", "y": ["-inf", "nan", 1.5]},
        "jsonl": {"id": "big", "x": "inf", "y": ["-inf"]},
        "csv": {"id": "cell", "x": "inf", "y": "nan"},
    }


@XDIST_MODES
def test_rows_over_http_fill_prompt_and_every_check(
    pytester: pytest.Pytester, server: ChatServer, xdist: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local server answers a prompt's ``ANSWER:`` line: each row's prompt reaches it filled, and
    equals/contains/regex/match/not_match/or/llm_judge-free checks use the row's values."""
    monkeypatch.setenv("DS_KEY", "k")
    write(
        pytester.path / "cases.csv",
        """
        city,reply,pattern
        Paris,Paris is lovely,^Paris
        New York,New York is big,York
        Lima,I forgot,^Lima
        """,
    )
    write(
        pytester.path / "s.eval.yaml",
        f"""
        metadata: {{name: cities, model: ok}}
        configurations:
          srv: {{name: Server, http: {{base_url: "{server.url}", api_key_env: DS_KEY}}}}
        evals:
          - name: city
            dataset: cases.csv
            id: city
            prompt: "Talk about {{{{row.city}}}}.\\nANSWER: {{{{row.reply}}}}"
            checks:
              - equals: "{{{{row.reply}}}}"
              - contains: "{{{{row.city}}}}"
              - regex: "{{{{row.pattern}}}}"
              - match: "*{{{{row.city}}}}*"
              - not_match: "*not {{{{row.city}}}}*"
              - or: [{{contains: "{{{{row.city}}}}"}}, {{equals: "never"}}]
        score:
          formula: "passed * 10 + total"
        """,
    )
    result = run(pytester, "--vibe-results", "r.json", "-rA", xdist=xdist)
    result.assert_outcomes(passed=2, failed=1)
    for line in (
        "PASSED s.eval.yaml::city[[]Paris[]][[]srv[]]",
        "PASSED s.eval.yaml::city[[]New-York[]][[]srv[]]",
        "FAILED s.eval.yaml::city[[]Lima[]][[]srv[]]*contains*",
    ):
        result.stdout.fnmatch_lines([line])
    prompts = {r["body"]["messages"][-1]["content"] for r in server.requests}
    assert "Talk about New York.\nANSWER: New York is big" in prompts
    results = load_json(pytester.path / "r.json")
    run_record = run_of(results, "srv")
    assert run_record["metrics"]["total"] == 3 and run_record["metrics"]["passed"] == 2
    assert run_record["score"] == 23  # each row counts in the run-wide variables
    lima = evals_by_nodeid(results)["s.eval.yaml::city[Lima][srv]"]
    assert lima["outcome"] == "failed"
    assert lima["row"] == {"city": "Lima", "reply": "I forgot", "pattern": "^Lima"}
    failed = [c for c in lima["checks"] if c["passed"] is False]
    assert [c["type"] for c in failed] == ["contains", "regex", "match", "or"]


def test_row_values_are_literal_text_never_templates(
    pytester: pytest.Pytester, server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dataset holding ``{{secret('x')}}`` sends those characters, not the secret."""
    monkeypatch.setenv("DS_KEY", "k")
    monkeypatch.setenv("VIBE_SECRET_TOKEN", "s3cret-value-123")
    write(
        pytester.path / "rows.jsonl",
        """
        {"id": "sneaky", "text": "{{secret('token')}} and {{row.id}}"}
        """,
    )
    write(
        pytester.path / "s.eval.yaml",
        f"""
        metadata: {{name: literal, model: ok}}
        configurations:
          srv: {{name: Server, http: {{base_url: "{server.url}", api_key_env: DS_KEY}}}}
        evals:
          - name: lit
            dataset: rows.jsonl
            prompt: "ANSWER: {{{{row.text}}}}"
            checks: [{{equals: "{{{{row.text}}}}"}}]
        """,
    )
    run(pytester).assert_outcomes(passed=1)
    sent = [r["body"]["messages"][-1]["content"] for r in server.requests]
    assert "ANSWER: {{secret('token')}} and {{row.id}}" in sent
    assert not any("s3cret-value-123" in text for text in sent)


@pytest.mark.parametrize(
    ("id_key", "expected"),
    [
        ("id: country", ["France", "Japan", "Peru"]),
        ('id: "{{row.country}}-{{row.answer}}"', ["France-Paris", "Japan-Tokyo", "Peru-Lima"]),
        ("", ["paris", "tokyo", "lima"]),  # the `id` column
    ],
)
def test_row_ids(pytester: pytest.Pytester, id_key: str, expected: list[str]) -> None:
    write(pytester.path / "agent.py", AGENT)
    write(pytester.path / "cases.csv", dataset_files(pytester.path)["cases.csv"])
    write(pytester.path / "s.eval.yaml", suite(f"    dataset: cases.csv\n    {id_key}"))
    result = run(pytester, "--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"s.eval.yaml::capital[[]{row_id}[]][[]my-app[]]" for row_id in expected])


def test_unsafe_id_characters_are_replaced() -> None:
    assert sanitized_id("New York") == "New-York"
    assert sanitized_id("a::b/c[d]@x") == "a-b-c-d-x"
    assert sanitized_id("  São Paulo! ") == "São-Paulo"
    assert sanitized_id("v1.2_rc-3") == "v1.2_rc-3"
    assert sanitized_id("東京") == "東京"
    assert sanitized_id("?!") == ""


def test_unsafe_ids_run_and_select(pytester: pytest.Pytester) -> None:
    echo_suite(
        pytester.path,
        """
          - name: odd
            rows:
              - {id: "a::b/c [d]", q: one}
              - {id: "São Paulo", q: two}
            prompt: "{{row.q}}"
            checks: [{equals: "{{row.q}}"}]
        """,
    )
    result = run(pytester, "-v", "-k", "Paulo")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*s.eval.yaml::odd[[]São-Paulo[]][[]c[]] PASSED*"])
    run(pytester, "-k", "a-b-c-d").assert_outcomes(passed=1)


def test_k_and_vibe_eval_select_rows(pytester: pytest.Pytester) -> None:
    write(pytester.path / "agent.py", AGENT)
    write(pytester.path / "cases.csv", dataset_files(pytester.path)["cases.csv"])
    write(pytester.path / "s.eval.yaml", suite("    dataset: cases.csv"))
    run(pytester, "-k", "paris").assert_outcomes(passed=1)
    run(pytester, "-k", "capital and not tokyo").assert_outcomes(passed=2)
    run(pytester, "--vibe-eval", "capital").assert_outcomes(passed=3)


def test_markers_and_last_failed_work_with_row_ids(pytester: pytest.Pytester) -> None:
    write(pytester.path / "agent.py", AGENT)
    rows = [*ROWS, {"id": "nowhere", "country": "Atlantis", "answer": "Poseidonia"}]
    write(pytester.path / "cases.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    write(pytester.path / "s.eval.yaml", suite("    dataset: cases.jsonl\n    tags: [geo]"))
    pytester.runpytest_inprocess("-p", "no:hypothesispytest", "-m", "geo").assert_outcomes(passed=3, failed=1)
    again = pytester.runpytest_inprocess("-p", "no:hypothesispytest", "--lf", "-v")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*capital[[]nowhere[]][[]my-app[]] FAILED*"])


def test_a_formula_naming_a_dataset_eval_says_why(pytester: pytest.Pytester) -> None:
    write(pytester.path / "agent.py", AGENT)
    write(pytester.path / "cases.csv", dataset_files(pytester.path)["cases.csv"])
    write(
        pytester.path / "s.eval.yaml", suite("    dataset: cases.csv") + "score: {formula: 'capital * 100'}\n"
    )
    result = run(pytester)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*'capital' is a dataset eval: each of its rows is an eval of its own*"])
    result.stdout.fnmatch_lines([glob_literal("*(capital[paris], …)*")])
    assert "Traceback" not in result.stdout.str()


def test_a_formula_naming_a_dataset_evals_variable_says_why(pytester: pytest.Pytester) -> None:
    """``capital_cost`` was answered with "did you mean 'min_cost'?", as if it were a typo."""
    write(pytester.path / "agent.py", AGENT)
    write(pytester.path / "cases.csv", dataset_files(pytester.path)["cases.csv"])
    formula = "score: {formula: 'success_pct - capital_cost'}\n"
    write(pytester.path / "s.eval.yaml", suite("    dataset: cases.csv") + formula)
    result = run(pytester)
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*'capital' is a dataset eval: each of its rows is an eval of its own"
            "*no per-eval variables such as 'capital_cost'"
        ]
    )
    assert "did you mean" not in result.stdout.str()


BAD_INPUTS = {
    "csv field count": (
        "cases.csv",
        "id,country,answer\nparis,France,Paris\ntokyo,Japan\n",
        ["cases.csv:3: row 2: 2 fields, but the header has 3 (id, country, answer)", "*hint: quote a field*"],
    ),
    "csv bad quoting": ("cases.csv", 'id,country,answer\nparis,"France,Paris\n', ["cases.csv:*invalid CSV*"]),
    "csv repeated column": (
        "cases.csv",
        "id,id,answer\n1,2,3\n",
        ["cases.csv:1: the header line: repeated*id*"],
    ),
    "jsonl not an object": (
        "cases.jsonl",
        '{"id": "a", "country": "France", "answer": "Paris"}\n\n["x"]\n',
        ["cases.jsonl:3: row 2: a row is a JSON object, not a list"],
    ),
    "jsonl invalid": ("cases.jsonl", '{"id": "a",\n', ["cases.jsonl:1: row 1: invalid JSON*"]),
    "jsonl trailing comma": (
        "cases.jsonl",
        '{"id": "a", "answer": "4",}\n',
        [
            "cases.jsonl:1: row 1: invalid JSON: a comma after the last entry (column 26)",
            "*hint: remove the comma after the last entry: JSON allows no trailing comma",
        ],
    ),
    "jsonl integer too long": (
        "cases.jsonl",
        '{"id": "a", "answer": ' + "9" * 5000 + "}\n",
        ["cases.jsonl:1: row 1: invalid JSON: Exceeds the limit (4300 digits)*"],
    ),
    "jsonl duplicate key": (
        "cases.jsonl",
        '{"id": "a", "answer": "4"}\n{"id": "b", "answer": "4", "answer": "5"}\n',
        ["cases.jsonl:2: row 2: invalid JSON: duplicate key 'answer'"],
    ),
    "yaml row not a mapping": (
        "cases.yaml",
        "- {id: a, country: France, answer: Paris}\n- just text\n",
        ["cases.yaml:2: row 2: a row is a mapping of column: value, not text"],
    ),
    "yaml not a list": ("cases.yaml", "id: a\n", ["cases.yaml:1: a YAML dataset is a list of mappings*"]),
    "missing column": (
        "cases.jsonl",
        (
            '{"id": "a", "country": "France", "answer": "Paris"}\n'
            '{"id": "b", "contry": "Peru", "answer": "Lima"}\n'
        ),
        [
            "cases.jsonl:2: row 2: evals[0] (capital) uses the column 'country' in `prompt` (line 7 of "
            "s.eval.yaml), which the row does not have (did you mean 'contry'?); "
            "its columns: id, contry, answer"
        ],
    ),
    "duplicate ids": (
        "cases.csv",
        "id,country,answer\nparis,France,Paris\nx,Peru,Lima\nparis,France,Paris\n",
        ["cases.csv:4: row 3: evals[0] (capital): duplicate row id 'paris', also the id of row 1 (line 2)"],
    ),
    "empty value makes a check invalid": (
        "cases.csv",
        "id,country,answer\nparis,France,\n",
        ["cases.csv:2: row 1: evals[0] (capital): with this row's values, `contains` must not be empty"],
    ),
    "id without letters": (
        "cases.csv",
        "id,country,answer\n?!,France,Paris\n",
        ["cases.csv:2: row 1: evals[0] (capital): the row's id '?!' has no letter or digit"],
    ),
    "no rows": ("cases.csv", "id,country,answer\n", ["cases.csv: the dataset has no rows"]),
    "unknown format": ("cases.txt", "x\n", ["cases.txt: unknown dataset format '.txt'"]),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS), ids=lambda case: case.replace(" ", "-"))
def test_bad_datasets_are_collection_errors_naming_file_and_line(
    pytester: pytest.Pytester, case: str
) -> None:
    name, text, expected = BAD_INPUTS[case]
    expected = [glob_literal(line) for line in expected]
    write(pytester.path / "agent.py", AGENT)
    (pytester.path / name).write_text(text, encoding="utf-8")
    write(pytester.path / "s.eval.yaml", suite(f"    dataset: {name}"))
    result = run(pytester)
    result.stdout.fnmatch_lines(["*ERROR collecting s.eval.yaml*"])
    result.stdout.fnmatch_lines(expected)
    assert "Traceback" not in result.stdout.str()


BAD_SUITES = {
    "dataset and rows": (
        "    dataset: cases.csv\n    rows: [{a: 1}]",
        ["*s.eval.yaml:5: evals[0]: `dataset` and `rows` exclude each other*"],
    ),
    "file not found": (
        "    dataset: nowhere.csv",
        [
            "*s.eval.yaml:6: evals[0].dataset: dataset file 'nowhere.csv' not found",
            "*relative to the suite file*",
        ],
    ),
    "inline row not a mapping": (
        "    rows:\n      - {id: a, country: France, answer: Paris}\n      - 7",
        ["*s.eval.yaml:8: row 2: a row is a mapping of column: value, not int"],
    ),
    "inline missing column": (
        "    rows:\n      - {id: a, answer: Paris}",
        ["*s.eval.yaml:7: row 1: evals[0] (capital) uses the column 'country'*its columns: id, answer"],
    ),
    "id column unknown": (
        "    rows:\n      - {id: a, country: France, answer: Paris}\n    id: nation",
        ["*s.eval.yaml:7: row 1: evals[0] (capital) uses the column 'nation' in `id`*"],
    ),
    "id template unknown column": (
        '    rows:\n      - {id: a, country: France, answer: Paris}\n    id: "{{row.contry}}-x"',
        [
            "*s.eval.yaml:7: row 1: evals[0] (capital) uses the column 'contry' in `id`*"
            "(did you mean 'country'?)*"
        ],
    ),
    "id without rows": ("    id: country", ["*`id` names the rows of a `dataset` or `rows`*"]),
    "row template without rows": ("", ["*s.eval.yaml:7: evals[0].prompt: {{row.country}} has no row here*"]),
}


@pytest.mark.parametrize("case", list(BAD_SUITES), ids=lambda case: case.replace(" ", "-"))
def test_bad_dataset_keys_are_collection_errors(pytester: pytest.Pytester, case: str) -> None:
    keys, expected = BAD_SUITES[case]
    expected = [glob_literal(line) for line in expected]
    write(pytester.path / "agent.py", AGENT)
    write(pytester.path / "cases.csv", dataset_files(pytester.path)["cases.csv"])
    write(pytester.path / "s.eval.yaml", suite(keys))
    result = run(pytester)
    result.stdout.fnmatch_lines(["*ERROR collecting s.eval.yaml*"])
    result.stdout.fnmatch_lines(expected)
    assert "Traceback" not in result.stdout.str()


def test_a_check_that_does_not_fill_templates_refuses_row_templates(pytester: pytest.Pytester) -> None:
    write(pytester.path / "cases.csv", dataset_files(pytester.path)["cases.csv"])
    text = suite("    dataset: cases.csv").replace(
        '- contains: "{{row.answer}}"', "- or: [{json_schema: {type: object, title: '{{row.id}}'}}]"
    )
    write(pytester.path / "s.eval.yaml", text)
    result = run(pytester)
    result.stdout.fnmatch_lines(
        [
            glob_literal(
                "s.eval.yaml:9: evals[0].checks[0].or[0].json_schema: `json_schema` does not fill templates*"
            )
        ]
    )


def test_llm_judge_criteria_are_filled_per_row(pytester: pytest.Pytester) -> None:
    """The judge (a python: callable here) is asked with the row's criteria."""
    write(
        pytester.path / "agent.py",
        """
        import json

        def answer(prompt, context=None):
            return "The capital is Paris."

        def judge(prompt, context=None):
            return json.dumps({"pass": "mention Paris" in prompt, "reason": "judged"})
        """,
    )
    write(
        pytester.path / "s.eval.yaml",
        """
        metadata: {name: judged, model: m}
        configurations:
          app: {name: App, python: "agent:answer"}
          grader: {name: Grader, python: "agent:judge"}
        default_configurations: [app]
        judge: grader
        evals:
          - name: judged
            rows: [{id: hit, city: Paris}, {id: miss, city: Rome}]
            prompt: "Capital of France?"
            checks:
              - llm_judge: {criteria: "must mention {{row.city}}"}
        """,
    )
    result = run(pytester, "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["PASSED s.eval.yaml::judged[[]hit[]][[]app[]]"])


def test_row_templates_outside_an_eval_are_errors(pytester: pytest.Pytester) -> None:
    write(pytester.path / "cases.csv", dataset_files(pytester.path)["cases.csv"])
    text = suite("    dataset: cases.csv").replace(
        "metadata: {name: capitals, model: m}",
        "metadata: {name: capitals, model: m, system_prompt: '{{row.id}}'}",
    )
    write(pytester.path / "s.eval.yaml", text)
    result = run(pytester)
    result.stdout.fnmatch_lines([glob_literal("*metadata.system_prompt: {{row.id}} has no row here*")])


def test_a_changed_dataset_is_not_resumed(pytester: pytest.Pytester) -> None:
    """--vibe-resume reuses a row's result only while the dataset file is unchanged."""
    write(pytester.path / "agent.py", AGENT)
    write(pytester.path / "cases.csv", dataset_files(pytester.path)["cases.csv"])
    write(pytester.path / "s.eval.yaml", suite("    dataset: cases.csv"))
    run(pytester, "--vibe-results", "first.json").assert_outcomes(passed=3)
    resumed = run(pytester, "--vibe-results", "second.json", "--vibe-resume", "first.json")
    resumed.assert_outcomes(passed=3)
    assert all(
        r.get("reused_from") for r in evals_by_nodeid(load_json(pytester.path / "second.json")).values()
    )
    with (pytester.path / "cases.csv").open("a", encoding="utf-8") as out:
        out.write("chad,Chad,N'Djamena\n")
    third = run(pytester, "--vibe-results", "third.json", "--vibe-resume", "first.json")
    third.assert_outcomes(passed=4)
    assert not any(
        r.get("reused_from") for r in evals_by_nodeid(load_json(pytester.path / "third.json")).values()
    )
