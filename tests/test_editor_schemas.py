"""The JSON Schemas shipped for editors accept every valid input file and reject what the loader rejects.

Each case is checked against both the shipped schema and the real loader (``load_suite``, the
cli-config.json cache, and the models ``load_config_dir`` validates eval-config.json and
command-registry.json with), so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from jsonschema.exceptions import ValidationError as SchemaError
from pydantic import TypeAdapter, ValidationError
from test_compat import FIXTURES, INVALID_FIXTURES, valid_files

from pytest_vibeeval import __main__ as cli
from pytest_vibeeval.checks import BUILTIN_CHECKS, CheckType, Verdict
from pytest_vibeeval.editor_schemas import (
    EDITOR_SCHEMAS,
    RELATIVE_FILE_PATTERN,
    forbidden_eval_names,
    render_schema,
    suite_schema,
)
from pytest_vibeeval.errors import InputError
from pytest_vibeeval.loading.command_registry import load_registry
from pytest_vibeeval.loading.configurations import ConfigFileCache
from pytest_vibeeval.loading.runner_config import EvalConfigFile
from pytest_vibeeval.loading.suite import load_suite, pydantic_problems
from pytest_vibeeval.loading.yamlsource import load_document
from pytest_vibeeval.models import _relative_file
from pytest_vibeeval.registry import CheckRegistry

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
INVALID_INPUTS = Path(__file__).parent / "invalid_inputs"
JSON_KINDS = ("cli-config", "eval-config", "command-registry")
META = "metadata: {name: s, model: m}\n"
HEAD = META + "evals:\n"
PROMPT_EVAL = "  - prompt: What is 2 + 2?\n    checks: [{match: '*4*'}]\n"

# --- helpers -------------------------------------------------------------------------------------


def kind_of(path: Path) -> str:
    """``suite`` for YAML files, else the config file it is (by the start of its name)."""
    if path.suffix in (".yaml", ".yml"):
        return "suite"
    return next(kind for kind in JSON_KINDS if path.name.startswith(kind))


@cache
def shipped(kind: str) -> dict[str, Any]:
    return json.loads((cli.SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8"))


def read(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    return yaml.safe_load(text) if kind_of(path) == "suite" else json.loads(text)


def _flatten(errors: Iterator[SchemaError]) -> Iterator[SchemaError]:
    for error in errors:
        yield error
        yield from _flatten(iter(error.context or ()))


def schema_errors(path: Path, schema: dict[str, Any] | None = None) -> list[SchemaError]:
    """Every error of the file against its shipped schema (or ``schema``), with those under anyOf/oneOf."""
    validator = jsonschema.Draft202012Validator(schema or shipped(kind_of(path)))
    return list(_flatten(validator.iter_errors(read(path))))


def schema_summary(errors: list[SchemaError]) -> str:
    return "\n".join(f"{error.json_path}: {error.message}" for error in errors)


def loader_problem(path: Path) -> str | None:
    """The loader's rendered error for the file, or None when it loads."""
    kind = kind_of(path)
    try:
        if kind == "suite":
            load_suite(path)
        elif kind == "cli-config":
            ConfigFileCache().load(path)
        elif kind == "eval-config":
            doc = load_document(path)
            try:
                TypeAdapter(EvalConfigFile).validate_python(doc.data)
            except ValidationError as exc:
                raise InputError(str(path), pydantic_problems(exc, doc)) from None
        else:
            _, problems = load_registry(load_document(path))
            if problems:
                raise InputError(str(path), problems)
    except InputError as exc:
        return exc.render()
    return None


def write(tmp_path: Path, kind: str, text: str) -> Path:
    path = tmp_path / (f"{kind}.yaml" if kind == "suite" else f"{kind}.json")
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def assert_both_accept(path: Path) -> None:
    assert loader_problem(path) is None, loader_problem(path)
    errors = schema_errors(path)
    assert not errors, schema_summary(errors)


def assert_both_reject(path: Path, where: str | None = None, fragment: str = "") -> None:
    """Rejected by the loader (its message holding ``fragment``) and by the schema (at ``where``)."""
    problem = loader_problem(path)
    assert problem is not None, f"the loader accepts {path.name}"
    assert fragment in problem, problem
    errors = schema_errors(path)
    assert errors, f"the schema accepts {path.name}; the loader says: {problem}"
    if where is not None:
        assert where in {error.json_path for error in errors}, schema_summary(errors)


# --- the shipped files ---------------------------------------------------------------------------


def test_shipped_schemas_are_json_schemas_and_current() -> None:
    for kind in ("suite", *JSON_KINDS):
        schema = shipped(kind)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["title"].startswith("pytest-vibeeval ")
    assert set(EDITOR_SCHEMAS) == {f"{kind}.schema.json" for kind in ("suite", *JSON_KINDS)}
    stale = cli.stale_schemas(cli.SCHEMA_DIR)
    assert not [line for line in stale if Path(line.split()[0]).name in EDITOR_SCHEMAS], stale


def test_descriptions_come_from_the_models() -> None:
    defs = shipped("suite")["$defs"]
    assert defs["Configuration"]["properties"]["replay"]["description"].startswith("a store of recorded")
    assert defs["Check"]["properties"]["semantic"]["description"].startswith("embedding similarity")
    assert "``" not in json.dumps(shipped("suite"))


def test_check_names_follow_the_registry() -> None:
    names = set(shipped("suite")["$defs"]["Check"]["properties"])
    assert names == {*CheckRegistry().names(), "or"}


# --- valid files -----------------------------------------------------------------------------------


def example_files() -> list[Path]:
    names = ("cli-config.json", "eval-config.json", "command-registry.json")
    found = [*EXAMPLES.rglob("*.eval.yaml"), *(path for name in names for path in EXAMPLES.rglob(name))]
    return sorted(found)


def test_examples_have_every_kind_of_file() -> None:
    assert {kind_of(path) for path in example_files()} == {"suite", *JSON_KINDS}


@pytest.mark.parametrize("path", example_files(), ids=lambda path: str(path.relative_to(EXAMPLES)))
def test_examples_are_accepted(path: Path) -> None:
    assert_both_accept(path)


def test_compat_corpus_is_accepted() -> None:
    files = valid_files()
    assert len(files) >= 10
    failures = {path.name: schema_summary(errors) for path in files if (errors := schema_errors(path))}
    assert not failures, failures


def test_compat_invalid_fixtures_are_rejected() -> None:
    """The corpus's invalid files: legacy forms both reject; malformed.yaml is not YAML at all."""
    assert set(INVALID_FIXTURES) == {"invalid-schema.yaml", "old-format.yaml", "malformed.yaml"}
    assert_both_reject(FIXTURES / "invalid-schema.yaml", "$.metadata", "missing required key 'model'")
    assert_both_reject(FIXTURES / "invalid-schema.yaml", "$.evals[0].checks", "object-form `checks:`")
    assert_both_reject(FIXTURES / "old-format.yaml", "$.evals[0].checks[0]", "legacy check format")
    with pytest.raises(yaml.YAMLError):
        read(FIXTURES / "malformed.yaml")
    assert loader_problem(FIXTURES / "malformed.yaml") is not None


ACCEPTED = {
    "or item in a list, nested or": """\
        evals:
          - prompt: p
            checks:
              - or:
                  - match: "*x*"
                  - or: [{contains: y}, {max_tokens: 5}]
              - min_tokens: 1
        """,
    "or mapping": "evals:\n  - prompt: p\n    checks:\n      or: [{match: a}, {or: [{match: b}]}]\n",
    "every check type": """\
        evals:
          - prompt: p
            checks:
              - match: "*{{var('project')}}-[0-9]+*"
              - not_match: "*Lyon*"
              - min_tokens: 0
              - max_tokens: 100
              - regex: "ORD-\\\\d{5}"
              - equals: ""
              - contains: Nile
              - semantic: {expected: Paris, threshold: 0.8}
              - llm_judge: {criteria: names Paris}
        """,
    "coding-agent evals beside a prompt eval": """\
        instructions: prompts/shared.md
        commands:
          compile: {command: python3, args: [-m, py_compile, calc.py], timeout: 30000}
          "test:hidden": {command: python3}
        evals:
          - name: add
            prompt: Make f return a + b.
            workspace: problems/add/workspace
            grading: grading/add
            build_steps: [compile]
            grade_steps: ["test:hidden"]
            vybes: {multiplier: 2, timeLimitMinutes: 10}
            requires: [python3]
            rubric: {complexity: complex, efficiency: tools, task: coding}
          - prompt: p
            workspace: w
            grading: g
            checks:
          - prompt: q
            checks: [{match: x}]
        """,
    "dataset evals and python checks": """\
        evals:
          - name: inline
            rows: [{a: 1}, {a: 2}]
            dataset: null
            id: "{{row.a}}"
            prompt: "{{row.a}}"
            checks: [{python: my.checks:ok}, {python: {function: checks:ok, threshold: 0.8}}]
          - name: coding
            prompt: p
            workspace: w
            grading: g
            rows: null
            dataset: null
            id: null
        """,
    "every kind of configuration": """\
        evals:
          - prompt: p
            checks: [{match: x}]
        configurations:
          claude: {preset: claude-code, model: sonnet, transcript: logs/executions.jsonl}
          aider-own: {preset: aider, cli: /opt/aider, replay: null, args: [--yes]}
          app: {python: "app:answer", cli: null, xfail: known bad}
          router:
            http: {temperature: 0.2, params: {max_tokens: 50}, max_retries: 0}
            pricing: {input_per_mtok: 3, output_per_mtok: 15}
          local: {http: {base_url: "http://localhost:8000/v1", api_key_env: ""}}
          recorded: {replay: recordings}
          jsonl-agent:
            cli: agent
            env: {MODE: test}
            requires_env: [API_KEY]
            prompt_via: argument
            output:
              format: jsonl
              response: result.text
              latency_ms: duration_ms
              where: {type: result, final: true}
          text-agent: {cli: agent, output: {format: text}}
          parsed: {cli: codex, output: {parser: codex}}
        default_configurations: [claude, app]
        judge: router
        """,
    "scoring, metadata and eval extras": """\
        metadata:
          name: s
          model: m
          system_prompt: be brief
          threads: 2
          tags: [smoke]
          mcp_server: {url: "https://mcp.example/mcp", name: x, authorization_token: "{{secret('k')}}"}
        score: {formula: "success_pct / (total_cost * 1000)", min: 100, max: 1000.5}
        evals:
          - name: four_2
            prompt: What is 2 + 2?
            tags: [math]
            xfail: known bad
            min_pass_rate: 1
            rubric: {}
            checks: [{match: "*4*"}]
          - prompt: again
            min_pass_rate: 0
            checks: [{match: "*4*"}]
        """,
}

ACCEPTED_JSON = {
    "eval-config with snake_case steps": (
        "eval-config",
        {
            "evaluations": {
                "slugify": {
                    "workspace": "${EVAL_ROOT}/problems/slugify/workspace",
                    "grading": "g",
                    "prompt": "slugify.md",
                    "build_steps": ["compile"],
                    "gradeSteps": ["test:hidden"],
                    "vybes": {"timeLimitMinutes": 5},
                    "rubric": {"complexity": "simple"},
                    "min_pass_rate": 0.5,
                }
            },
            "promptsDir": "prompts",
            "sharedInstructions": "shared.md",
            "score": {"formula": "vybes", "min": 0},
        },
    ),
    "cli-config with defaults": (
        "cli-config",
        {
            "configurations": {"a": {"name": "A", "cli": "x"}, "b.2": {"name": "Gemini", "preset": "gemini"}},
            "defaultConfigurations": ["a"],
        },
    ),
    "registry with the default timeout": ("command-registry", {"npm-ci": {"command": "npm", "args": ["ci"]}}),
}


@pytest.mark.parametrize("text", ACCEPTED.values(), ids=list(ACCEPTED))
def test_forms_the_loader_accepts_are_accepted(tmp_path: Path, text: str) -> None:
    text = textwrap.dedent(text)
    assert_both_accept(write(tmp_path, "suite", text if "metadata:" in text else META + text))


@pytest.mark.parametrize(("kind", "data"), ACCEPTED_JSON.values(), ids=list(ACCEPTED_JSON))
def test_config_files_the_loader_accepts_are_accepted(tmp_path: Path, kind: str, data: Any) -> None:
    assert_both_accept(write(tmp_path, kind, json.dumps(data)))


# --- invalid files ---------------------------------------------------------------------------------

# file in tests/invalid_inputs -> (where the schema reports it, what the loader says)
INVALID = {
    "suite-unknown-top-level-key.yaml": ("$", "unknown key 'evalz'"),
    "suite-unknown-check.yaml": ("$.evals[0].checks[0]", "unknown check 'mtch'"),
    "suite-legacy-checks-mapping.yaml": ("$.evals[0].checks", "object-form `checks:` is the legacy format"),
    "suite-legacy-type-check.yaml": ("$.evals[0].checks[0]", "legacy check format"),
    "suite-conditionals.yaml": ("$.evals[0]", "`conditionals:` is the legacy format"),
    "suite-missing-prompt.yaml": ("$.evals[0]", "missing required key 'prompt'"),
    "suite-missing-model.yaml": ("$.metadata", "missing required key 'model'"),
    "suite-max-tokens-not-a-number.yaml": ("$.evals[0].checks[0].max_tokens", "must be a whole number"),
    "suite-tags-not-a-list.yaml": ("$.metadata.tags", "must be a list"),
    "suite-min-pass-rate-above-one.yaml": ("$.evals[0].min_pass_rate", "must be 1 or less"),
    "suite-rubric-unknown-complexity.yaml": (
        "$.evals[0].rubric.complexity",
        "'simple', 'medium' or 'complex'",
    ),
    "suite-configuration-cli-and-python.yaml": ("$.configurations.app", "found cli and python"),
    "suite-python-configuration-without-colon.yaml": (
        "$.configurations.app.python",
        "'app.answer' is not `package.module:function` (did you mean 'app:answer'?)",
    ),
    "suite-empty-or.yaml": ("$.evals[0].checks[1].or", "`or` needs a non-empty list"),
    "suite-check-with-two-keys.yaml": ("$.evals[0].checks[0]", "exactly one key (found match, max_tokens)"),
    "suite-semantic-missing-threshold.yaml": (
        "$.evals[0].checks[0].semantic",
        "missing required key 'threshold'",
    ),
    "suite-empty-checks.yaml": ("$.evals[0].checks", "`checks` is empty"),
    "suite-empty-configurations.yaml": ("$.configurations", "`configurations` is empty"),
    "suite-conversation-without-checks.yaml": ("$.evals[0]", "no turn has `checks`"),
    "suite-coding-eval-with-checks.yaml": ("$.evals[0].checks", "remove `checks`"),
    "suite-coding-keys-on-prompt-eval.yaml": ("$.evals[0]", "`build_steps` belong to coding-agent evals"),
    "suite-reserved-tag.yaml": ("$.evals[0].tags[0]", "tag 'skip' is a pytest marker"),
    "suite-protected-eval-name.yaml": ("$.evals[0].name", "protected keyword"),
    "cli-config-zero-timeout.json": ("$.configurations.agent.timeout", "greater than 0"),
    "cli-config-without-name.json": ("$.configurations.agent", "missing required key 'name'"),
    "cli-config-unknown-configuration-key.json": ("$.configurations.agent", "unknown key 'timout'"),
    "cli-config-unknown-preset.json": ("$.configurations.agent.preset", "unknown preset 'claude'"),
    "cli-config-preset-and-python.json": ("$.configurations.agent", "cannot be combined with `python`"),
    "cli-config-parser-and-format.json": ("$.configurations.agent.output", "remove `format`"),
    "cli-config-json-without-response.json": ("$.configurations.agent.output", "needs `response`"),
    "eval-config-missing-workspace.json": ("$.evaluations.slugify", "missing required key 'workspace'"),
    "eval-config-no-evaluations.json": ("$.evaluations", "`evaluations` is empty"),
    "eval-config-both-step-spellings.json": ("$.evaluations.slugify", "build_steps: Extra inputs"),
    "eval-config-protected-id.json": ("$.evaluations", "protected keyword"),
    "eval-config-id-shadows-variables.json": ("$.evaluations", "which are run-wide variables"),
    "command-registry-missing-command.json": ("$.compile", "missing required key 'command'"),
    "command-registry-negative-timeout.json": ("$.compile.timeout", "greater than 0"),
    "command-registry-bad-step-name.json": ("$", "step name '-compile' must start with a letter or digit"),
}


def test_every_invalid_input_is_listed() -> None:
    assert sorted(path.name for path in INVALID_INPUTS.iterdir()) == sorted(INVALID)
    assert {kind_of(INVALID_INPUTS / name) for name in INVALID} == {"suite", *JSON_KINDS}


@pytest.mark.parametrize(("name", "expected"), INVALID.items(), ids=list(INVALID))
def test_invalid_inputs_are_rejected_by_both(name: str, expected: tuple[str, str]) -> None:
    where, fragment = expected
    assert_both_reject(INVALID_INPUTS / name, where, fragment)


REJECTED = {
    "preset with a null cli": ("configurations: {a: {preset: codex, cli: null}}", "found neither"),
    "preset with a null python": ("configurations: {a: {preset: codex, python: null}}", "cannot be combined"),
    "preset with replay": ("configurations: {a: {preset: codex, replay: r}}", "found cli and replay"),
    "configuration of no kind": ("configurations: {a: {name: x}}", "found neither"),
    "unknown parser": ("configurations: {a: {cli: x, output: {parser: claude}}}", "unknown output parser"),
    "latency from text": ("configurations: {a: {cli: x, output: {latency_ms: ms}}}", "needs `format: json`"),
    "absolute transcript": ("configurations: {a: {cli: x, transcript: /tmp/t.jsonl}}", "relative"),
    "transcript outside": ("configurations: {a: {cli: x, transcript: logs/../../t.jsonl}}", "relative"),
    "transcript folder": ("configurations: {a: {cli: x, transcript: logs/}}", "relative"),
    "bad configuration id": ("configurations: {-a: {cli: x}}", "must start with an ASCII letter or digit"),
    "python configuration without a colon": (
        "configurations: {a: {python: nocolon}}",
        "is not `package.module:function`",
    ),
    "temperature too high": ("configurations: {a: {http: {temperature: 3}}}", "must be 2 or less"),
    "score bound as text": ("score: {min: '1'}", "must be a number, not the text '1'"),
    "zero threads": ("metadata: {name: s, model: m, threads: 0}", "must be 1 or more"),
    "mcp server without url": ("metadata: {name: s, model: m, mcp_server: {name: x}}", "'url'"),
}

REJECTED_EVALS = {
    "eval name that is a variable prefix": ("- {name: avg, prompt: p, checks: [{match: x}]}", "run-wide"),
    "eval name with a space": ("- {name: a b, prompt: p, checks: [{match: x}]}", "letters, digits"),
    "null checks": ("- {prompt: p, checks: null}", "not empty"),
    "no checks": ("- {prompt: p}", "missing required key 'checks'"),
    "or of text": ("- {prompt: p, checks: {or: x}}", "`or` needs a non-empty list"),
    "or beside a check": ("- {prompt: p, checks: {or: [{match: x}], match: y}}", "object-form"),
    "checks as text": ("- {prompt: p, checks: '*x*'}", "must be a list or {or: [...]}"),
    "check as text": ("- {prompt: p, checks: ['*x*']}", "exactly one key (found text)"),
    "empty pattern": ("- {prompt: p, checks: [{match: ''}]}", "must not be empty"),
    "count given as yes": ("- {prompt: p, checks: [{max_tokens: yes}]}", "a count is a whole number"),
    "check without value": ("- {prompt: p, checks: [{match: null}]}", "must be text, not null"),
    "threshold above one": (
        "- {prompt: p, checks: [{semantic: {expected: e, threshold: 1.5}}]}",
        "must be 1 or less",
    ),
    "unknown semantic key": (
        "- {prompt: p, checks: [{semantic: {expected: e, threshold: 0.5, model: x}}]}",
        "unknown key 'model'",
    ),
    "empty llm_judge": ("- {prompt: p, checks: [{llm_judge: {}}]}", "missing required key 'criteria'"),
    "negative token limit": ("- {prompt: p, checks: [{min_tokens: -1}]}", "must be 0 or more"),
    "fractional token limit": ("- {prompt: p, checks: [{min_tokens: 2.5}]}", "a whole number, not"),
    "equals a number": ("- {prompt: p, checks: [{equals: 4}]}", "must be text, not the number 4"),
    "coding eval without grading": ("- {prompt: p, workspace: w}", "`grading` is missing"),
    "bad step name": ("- {prompt: p, workspace: w, grading: g, build_steps: [-x]}", "step name '-x'"),
    "empty rows": ("- {prompt: p, rows: [], checks: [{match: x}]}", "`rows` is empty"),
    "id without rows": ("- {prompt: p, id: x, checks: [{match: x}]}", "`id` names the rows"),
    "dataset beside rows": (
        "- {prompt: p, dataset: d.csv, rows: [{a: 1}], checks: [{match: x}]}",
        "`dataset` and `rows` exclude each other",
    ),
    "rows of a coding eval": ("- {prompt: p, workspace: w, grading: g, rows: [{a: 1}]}", "for prompt evals"),
    "python check without a colon": (
        "- {prompt: p, checks: [{python: nocolon}]}",
        "is not `package.module:function`",
    ),
    "python check function without a colon": (
        "- {prompt: p, checks: [{python: {function: nocolon}}]}",
        "is not `package.module:function`",
    ),
}


@pytest.mark.parametrize(("extra", "fragment"), REJECTED.values(), ids=list(REJECTED))
def test_suite_keys_the_loader_rejects_are_rejected(tmp_path: Path, extra: str, fragment: str) -> None:
    text = extra + "\nevals:\n" + PROMPT_EVAL if extra.startswith("metadata") else HEAD + PROMPT_EVAL + extra
    assert_both_reject(write(tmp_path, "suite", text), fragment=fragment)


@pytest.mark.parametrize(("item", "fragment"), REJECTED_EVALS.values(), ids=list(REJECTED_EVALS))
def test_evals_the_loader_rejects_are_rejected(tmp_path: Path, item: str, fragment: str) -> None:
    assert_both_reject(write(tmp_path, "suite", HEAD + "  " + item + "\n"), fragment=fragment)


def test_forbidden_eval_names_are_those_the_loader_refuses(tmp_path: Path) -> None:
    names = forbidden_eval_names()
    assert {"success_pct", "max_cost", "avg", "total_input", "rubric_score"} <= set(names)
    for name in [*names, "four", "avg_2", "total_input_x"]:
        path = write(tmp_path, "suite", HEAD + f"  - {{name: {name}, prompt: p, checks: [{{match: x}}]}}\n")
        loader_ok, schema_ok = loader_problem(path) is None, not schema_errors(path)
        assert loader_ok == schema_ok == (name not in names), name


@pytest.mark.parametrize(
    "value",
    ["t.jsonl", "logs/t.jsonl", "./t", "a..b", "..a/b", "a/..b", " x", "", " ", "/t", "../t", "a/../b",
     "a/..", "..", "logs/", "a\nb", "\n"],
)  # fmt: skip
def test_relative_file_pattern_agrees_with_the_validator(value: str) -> None:
    try:
        _relative_file(value)
    except ValueError:
        accepted = False
    else:
        accepted = True
    assert jsonschema.Draft202012Validator({"pattern": RELATIVE_FILE_PATTERN}).is_valid(value) == accepted


# --- known differences -------------------------------------------------------------------------


GAPS = {
    # what only the loader (or the run) can know: the schema accepts these, the loader does not
    "score bounds out of order": ("suite", HEAD + PROMPT_EVAL + "score: {min: 2, max: 1}\n"),
    "duplicate eval names": ("suite", HEAD + PROMPT_EVAL.replace("- ", "- name: a\n    ") * 2),
    "regex that does not compile": ("suite", HEAD + "  - prompt: p\n    checks: [{regex: '(x'}]\n"),
    "pattern that is a broken regex": ("suite", HEAD + "  - prompt: p\n    checks: [{not_match: '^(x'}]\n"),
    "unclosed template": ("suite", HEAD + "  - prompt: \"{{var('x')\"\n    checks: [{match: x}]\n"),
    "placeholder typo": ("suite", HEAD + PROMPT_EVAL + 'configurations: {a: {cli: x, args: ["${MODLE}"]}}'),
    "malformed template": ("suite", HEAD + "  - prompt: \"{{var(x)}}\"\n    checks: [{match: x}]\n"),
    "tool count bounds out of order": (
        "suite", HEAD + "  - prompt: p\n    checks: [{tool_called: {name: t, min: 3, max: 2}}]\n"
    ),
    "undefined default configuration": ("cli-config", '{"configurations": {"a": {"name": "A", "cli": "x"}}, '
                                                       '"defaultConfigurations": ["b"]}'),
}  # fmt: skip


@pytest.mark.parametrize(("kind", "text"), GAPS.values(), ids=list(GAPS))
def test_documented_gaps_only_the_loader_reports(tmp_path: Path, kind: str, text: str) -> None:
    path = write(tmp_path, kind, text)
    assert loader_problem(path) is not None
    assert not schema_errors(path)


def test_a_timeout_written_as_text_is_refused_by_both(tmp_path: Path) -> None:
    path = write(
        tmp_path, "cli-config", '{"configurations": {"a": {"name": "A", "cli": "x", "timeout": "30000"}}}'
    )
    assert loader_problem(path) == (
        f"{path}:1: configurations.a.timeout: must be a whole number, not the text '30000'\n"
        '    hint: write the number without quotes: "timeout": 30000'
    )
    assert [error.json_path for error in schema_errors(path)] == ["$.configurations.a.timeout"]


EXAMPLE = "; e.g. `my_app.chat:answer` is answer() in my_app/chat.py"
PYTHON_TARGETS = {
    "suite": (
        HEAD + PROMPT_EVAL + "configurations:\n  a:\n    python: app/chat.py:answer\n",
        "7: configurations.a.python: 'app/chat.py:answer' is not `package.module:function` (did you "
        "mean 'app.chat:answer'?): 'app/chat.py' is no module name (letters, digits, _ and dots, not "
        "starting with a digit)" + EXAMPLE,
    ),
    "cli-config": (
        '{"configurations": {"a": {"name": "A", "python": "app:"}}}',
        "1: configurations.a.python: 'app:' is not `package.module:function`: it names no function "
        "after the colon" + EXAMPLE,
    ),
    # a file named: its function cannot be known, so no "did you mean 'app:py'", and an example in it
    "suite, a file": (
        HEAD + PROMPT_EVAL + "configurations:\n  a:\n    python: app.py\n",
        "7: configurations.a.python: 'app.py' is not `package.module:function`: it names a file, not a "
        "module and a function; write the module without .py and the function after a colon, e.g. "
        "`app:answer` for answer() in app.py",
    ),
    "cli-config, a file in a package": (
        '{"configurations": {"a": {"name": "A", "python": "app/chat.py"}}}',
        "1: configurations.a.python: 'app/chat.py' is not `package.module:function`: it names a file, "
        "not a module and a function; write the module without .py and the function after a colon, "
        "e.g. `app.chat:answer` for answer() in app/chat.py",
    ),
}


@pytest.mark.parametrize(
    ("kind", "text", "said"),
    [(k.split(",")[0], *v) for k, v in PYTHON_TARGETS.items()],
    ids=list(PYTHON_TARGETS),
)
def test_a_python_target_of_another_form_is_refused_in_the_plugins_words(
    tmp_path: Path, kind: str, text: str, said: str
) -> None:
    """Not pydantic's "String should match pattern": what is wrong, the form, and an example."""
    path = write(tmp_path, kind, text)
    assert loader_problem(path) == f"{path}:{said}"
    assert "$.configurations.a.python" in {error.json_path for error in schema_errors(path)}


TEXT_NUMBERS = {
    # docs/running.md (Editor support): the editor flags every number written as text; the loader
    # accepts these, and refuses a timeout or a score bound written so (the tests above and below)
    "max_output_bytes": ("cli-config", '{"configurations": {"a": {"name": "A", "cli": "x", '
                                       '"max_output_bytes": "100"}}}'),
    "min_pass_rate": ("suite", HEAD + "  - prompt: p\n    min_pass_rate: '0.5'\n    checks: [{match: x}]\n"),
}  # fmt: skip


@pytest.mark.parametrize(("kind", "text"), TEXT_NUMBERS.values(), ids=list(TEXT_NUMBERS))
def test_numbers_written_as_text_that_the_loader_accepts_are_flagged_by_the_editor(
    tmp_path: Path, kind: str, text: str
) -> None:
    path = write(tmp_path, kind, text)
    assert loader_problem(path) is None
    assert schema_errors(path)


EXPONENT = " (in YAML a number in exponent form needs a dot and a signed exponent)"
BOUNDS_AS_TEXT = {
    # written -> the hint, whose `min: …` is what YAML reads as that number
    "quoted": ("'50'", "write the number without quotes: min: 50"),
    "quoted exponent": ("'1e305'", "write the number without quotes: min: 1.0e+305"),
    "exponent": ("1e305", f"YAML reads 1e305 as text, not a number{EXPONENT}: write min: 1.0e+305"),
    "exponent with a dot": ("2.5E3", f"YAML reads 2.5E3 as text, not a number{EXPONENT}: write min: 2.5e+3"),
    "quoted exponent YAML reads": ("-1.0e-5", "write the number without quotes: min: -1.0e-5"),
    "leading dot and sign": ("-.5", "YAML reads -.5 as text, not a number: write min: -0.5"),
}


@pytest.mark.parametrize(("written", "hint"), BOUNDS_AS_TEXT.values(), ids=list(BOUNDS_AS_TEXT))
def test_a_score_bound_written_as_text_is_refused_by_both_saying_how_to_write_it(
    tmp_path: Path, written: str, hint: str
) -> None:
    """A bound YAML read as text gets a hint that fits how it was written: a quoted one "without
    quotes", one YAML reads as text unquoted (1e305: YAML 1.1's exponent needs a dot and a sign)
    what YAML made of it, never "without quotes"; each hint's form loads."""
    if "without quotes" in hint and not written.startswith("'"):
        written = f"'{written}'"
    path = write(tmp_path, "suite", HEAD + PROMPT_EVAL + f"score: {{min: {written}}}\n")
    assert loader_problem(path) == (
        f"{path}:5: score.min: must be a number, not the text {written.strip(chr(39))!r}\n    hint: {hint}"
    )
    assert schema_errors(path)
    path.write_text(HEAD + PROMPT_EVAL + f"score: {{{hint[hint.rindex('min: ') :]}}}\n", encoding="utf-8")
    assert loader_problem(path) is None


def test_a_score_bound_yaml_reads_as_text_that_is_no_finite_number_gets_no_hint(tmp_path: Path) -> None:
    path = write(tmp_path, "suite", HEAD + PROMPT_EVAL + "score: {min: inf}\n")
    assert loader_problem(path) == f"{path}:5: score.min: must be a number, not the text 'inf'"


# --- check types from plugins --------------------------------------------------------------------


def test_a_registry_with_plugin_checks_gives_their_schema(tmp_path: Path) -> None:
    plugin = CheckType("word_count", int, lambda value, response: Verdict(True, "ok"), "N words")
    registry = CheckRegistry([*BUILTIN_CHECKS, plugin])
    path = write(tmp_path, "suite", HEAD + "  - prompt: p\n    checks: [{word_count: 3}]\n")
    assert schema_errors(path)  # the shipped schema knows only the built-in checks
    schema = suite_schema(registry)
    assert not schema_errors(path, schema)
    bad = write(tmp_path, "suite", HEAD + "  - prompt: p\n    checks: [{word_count: many}]\n")
    assert "$.evals[0].checks[0].word_count" in {error.json_path for error in schema_errors(bad, schema)}


# --- python -m pytest_vibeeval schema ------------------------------------------------------------


def test_schema_writes_copies_that_check_as_current(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "editor" / "schemas"
    assert cli.main(["schema", "--dir", str(target)]) == 0
    written = sorted(path.name for path in target.iterdir())
    assert written == sorted(["results.schema.json", *EDITOR_SCHEMAS])
    for name in EDITOR_SCHEMAS:
        assert (target / name).read_bytes() == (cli.SCHEMA_DIR / name).read_bytes()
    assert cli.main(["schema", "--check", "--dir", str(target)]) == 0
    assert capsys.readouterr().err == ""


def test_schema_check_names_a_stale_or_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["schema", "--dir", str(tmp_path)]) == 0
    capsys.readouterr()
    stale = tmp_path / "suite.schema.json"
    stale.write_text(stale.read_text(encoding="utf-8").replace('"match"', '"mtch"'), encoding="utf-8")
    (tmp_path / "command-registry.schema.json").unlink()
    assert cli.main(["schema", "--check", "--dir", str(tmp_path)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"{stale} is out of date: run `python -m pytest_vibeeval schema --dir {tmp_path}`",
        f"{tmp_path / 'command-registry.schema.json'} is missing: run "
        f"`python -m pytest_vibeeval schema --dir {tmp_path}`",
    ]


def test_schema_check_of_the_package_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "SCHEMA_DIR", tmp_path)
    assert cli.main(["schema", "--check"]) == 1  # nothing there yet
    assert cli.main(["schema", "--package"]) == 0
    assert cli.main(["schema", "--check"]) == 0
    capsys.readouterr()
    (tmp_path / "eval-config.schema.json").write_text("{}\n", encoding="utf-8")
    assert cli.main(["schema", "--check"]) == 1
    message = capsys.readouterr().err
    assert message == (
        f"{tmp_path / 'eval-config.schema.json'} is out of date: run "
        "`python -m pytest_vibeeval schema --package`\n"
    )
    assert cli.main(["schema", "--package"]) == 0
    assert cli.main(["schema", "--check"]) == 0


def test_schema_without_a_target_writes_nothing_and_says_where_it_could(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "SCHEMA_DIR", tmp_path / "pkg")
    assert cli.main(["schema"]) == 2
    assert not (tmp_path / "pkg").exists()
    err = capsys.readouterr().err
    assert err.startswith("error: say where to write the schemas: --dir DIR")
    assert "--package" in err


def test_schema_refuses_to_write_into_an_installed_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    installed = tmp_path / "lib" / "python3.11" / "site-packages" / "pytest_vibeeval" / "schemas"
    installed.mkdir(parents=True)
    monkeypatch.setattr(cli, "SCHEMA_DIR", installed)
    assert cli.main(["schema", "--package"]) == 2
    assert list(installed.iterdir()) == []
    assert "is an installed package's folder, which pip owns: write copies with --dir DIR" in (
        capsys.readouterr().err
    )
    assert cli.main(["schema", "--check"]) == 1  # checking it is fine: it names what is missing


def test_print_dir(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schema", "--print-dir"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder == cli.SCHEMA_DIR and (folder / "suite.schema.json").is_file()


def schema_command(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pytest_vibeeval schema ARGS`` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "schema", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("check", [False, True], ids=["write", "check"])
def test_schema_dir_that_is_a_file_is_said_so(tmp_path: Path, check: bool) -> None:
    """Writing into (or checking) a --dir that is a file: one line, no traceback, and no advice to
    run a command that cannot work."""
    afile = tmp_path / "afile"
    afile.write_text("")
    proc = schema_command(*(["--check"] if check else []), "--dir", str(afile))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"error: {afile} is not a folder: give --dir a folder (it is made if missing)\n"


def test_schema_dir_under_a_file_is_said_so(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    target = tmp_path / "afile" / "schemas"
    proc = schema_command("--dir", str(target))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"error: cannot write {target}: Not a directory; give --dir a folder you can write\n"
    )


def test_print_dir_and_dir_exclude_each_other(tmp_path: Path) -> None:
    proc = schema_command("--print-dir", "--dir", str(tmp_path / "x"))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines()[-1] == (
        "python -m pytest_vibeeval: error: --print-dir and --dir exclude each other: --print-dir prints "
        "the package's own folder"
    )
    assert not (tmp_path / "x").exists()


def test_render_is_stable() -> None:
    text = render_schema(suite_schema())
    assert text.endswith("}\n") and text == render_schema(json.loads(text))
    assert text.splitlines()[1].startswith('  "$defs"')
