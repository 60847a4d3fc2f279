"""JSON Schemas of the input files, for editors: YAML suites and the unified runner's three files.

They are generated from the pydantic models that validate the files, so keys, types, defaults and
descriptions cannot drift. What the models check in code is added here: the checks (from the check
registry), the field validators (step names, tags, presets, parsers, ...) and the rules between keys
(exactly one kind of configuration, prompt evals versus coding-agent evals, ``output.parser``).

Known gaps, which only the loader reports: numbers written as strings (``timeout: "30000"``, accepted
by pydantic's lax mode, are flagged here), ``score.min`` greater than ``score.max`` (and a
``tool_called`` check's ``min`` greater than its ``max``), duplicate eval
names, Python regular expressions that do not compile (a ``regex``, or a ``match`` pattern written
as one), malformed or unclosed ``{{var()}}`` templates, misspelt ``${…}`` placeholders, score
formulas, and references to other things (configurations, steps, files and folders). The shipped
suite schema knows the built-in check types and output parsers only; :func:`suite_schema` takes a
registry with a plugin's checks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import core_schema

from .models import (
    CONFIG_ID_PATTERN,
    EVAL_NAME_PATTERN,
    PROTECTED_KEYWORDS,
    RESERVED_MARKS,
    CliConfigFile,
    Configuration,
    OutputSpec,
    SuiteFile,
    _known_parser,
    _known_preset,
    _relative_file,
    _step_name,
    _tag,
)
from .models.eval_config import REGISTRY, EvalConfigFile, _eval_id
from .presets import AGENT_PRESETS, OTHER_KINDS
from .providers.parsers import BUILTIN_PARSERS
from .pyimport import TARGET_PATTERN, python_target
from .registry import CheckRegistry
from .scoring.variables import EVAL_VARIABLES, run_variable_names

JsonSchema = dict[str, Any]
DIALECT = "https://json-schema.org/draft/2020-12/schema"
CHECKS_REF = "#/$defs/Checks"
CHECK_LIST_REF = "#/$defs/CheckList"
# `_relative_file`: not empty or blank, not absolute, no `..` segment, not ending in `/`
RELATIVE_FILE_PATTERN = r"^(?!/)(?![\s\S]*(?:^|/)\.\.(?:/|$))(?=[\s\S]*\S)[\s\S]*[^/]$"
CODING_ONLY_KEYS = ("build_steps", "grade_steps", "vybes", "requires")


def render_schema(schema: JsonSchema) -> str:
    """A schema as shipped: sorted keys, indent 2, trailing newline."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def present(key: str) -> JsonSchema:
    """Matches objects where ``key`` is set to something other than null (as the models see it)."""
    return {"required": [key], "properties": {key: {"not": {"type": "null"}}}}


def forbidden_eval_names() -> list[str]:
    """Eval names the loader refuses: protected keywords, and names that are (or whose variables
    would be) run-wide score formula variables."""
    run = run_variable_names()
    suffixes = [variable.suffix for variable in EVAL_VARIABLES]
    clashes = {name.removesuffix(suffix) for name in run for suffix in suffixes if name.endswith(suffix)}
    names = set(PROTECTED_KEYWORDS) | clashes
    return sorted(name for name in names if re.fullmatch(EVAL_NAME_PATTERN, name))


# --- field validators --------------------------------------------------------------------------


def _with(**extra: Any) -> Callable[[JsonSchema], JsonSchema]:
    return lambda schema: {**schema, **extra}


FIELD_RULES: dict[Callable[..., Any], Callable[[JsonSchema], JsonSchema]] = {
    _step_name: _with(type="string", pattern=CONFIG_ID_PATTERN),
    _tag: _with(**{"not": {"enum": sorted(RESERVED_MARKS)}}),
    _known_preset: _with(type="string", enum=list(AGENT_PRESETS)),
    _known_parser: _with(type="string", enum=list(BUILTIN_PARSERS)),
    _relative_file: _with(type="string", pattern=RELATIVE_FILE_PATTERN),
    _eval_id: _with(type="string", pattern=EVAL_NAME_PATTERN, **{"not": {"enum": forbidden_eval_names()}}),
    python_target: _with(type="string", pattern=f"^{TARGET_PATTERN}$"),
}


# --- rules between keys ------------------------------------------------------------------------


def _configuration_rules(schema: JsonSchema) -> None:
    """Exactly one of cli (or a preset, which supplies it), python, http, replay and provider; a
    preset cannot sit beside ``python``, ``http`` or ``provider`` (not even null ones)."""
    cli_or_preset = {"anyOf": [present("cli"), {**present("preset"), "not": {"required": ["cli"]}}]}
    schema["oneOf"] = [cli_or_preset, *(present(kind) for kind in ("python", "http", "replay", "provider"))]
    schema["if"] = present("preset")
    schema["then"] = {"properties": dict.fromkeys(OTHER_KINDS, False)}


def _output_rules(schema: JsonSchema) -> None:
    """A parser reads the whole output (no other keys); JSON formats need ``response``; plain text
    has no ``latency_ms`` to read."""
    others = [name for name in OutputSpec.model_fields if name != "parser"]
    json_format = {"required": ["format"], "properties": {"format": {"enum": ["json", "jsonl"]}}}
    schema["if"] = present("parser")
    schema["then"] = {"properties": dict.fromkeys(others, False)}
    schema["else"] = {
        "if": json_format,
        "then": present("response"),
        "else": {"properties": {"latency_ms": {"type": "null"}}},
    }


def _eval_rules(schema: JsonSchema) -> None:
    """``checks`` from the check registry; a coding-agent eval (``workspace`` and ``grading``) has no
    checks and no rows, a prompt eval needs them and none of the coding-agent keys, and a
    conversation has ``turns`` (at least one, and one with checks) instead of ``prompt`` and
    ``checks``; ``dataset`` or ``rows`` (one row at least), not both, and ``id`` only with one."""
    properties = schema["properties"]
    properties["rows"]["anyOf"][0]["minItems"] = 1
    schema["allOf"] = [
        {"not": {"allOf": [present("dataset"), present("rows")]}},
        {"if": present("id"), "then": {"anyOf": [present("dataset"), present("rows")]}},
    ]
    properties["checks"] = {
        "anyOf": [{"$ref": CHECKS_REF}, {"type": "null"}],
        "default": None,
        "description": properties["checks"].get("description", ""),
    }
    name = properties["name"]["anyOf"][0]
    name["not"] = {"enum": forbidden_eval_names()}
    coding = {"anyOf": [present("workspace"), present("grading")]}
    schema["if"] = coding
    schema["then"] = {
        "allOf": [present("workspace"), present("grading")],
        "properties": {
            "checks": {"type": "null"},
            "turns": False,
            "dataset": {"type": "null"},
            "rows": {"type": "null"},
        },
    }
    single = {**present("prompt"), "required": ["prompt", "checks"], "not": {"required": ["turns"]}}
    single["properties"] = {**single["properties"], "checks": {"not": {"type": "null"}}}
    conversation = {
        "required": ["turns"],
        "properties": {"turns": {"type": "array", "minItems": 1, "contains": {"required": ["checks"]}}},
        "not": {"anyOf": [{"required": ["prompt"]}, {"required": ["checks"]}]},
    }
    schema["else"] = {
        "oneOf": [single, conversation],
        "properties": dict.fromkeys(CODING_ONLY_KEYS, False),
    }


def _turn_rules(schema: JsonSchema) -> None:
    """A turn's ``checks`` from the check registry, as an eval's."""
    schema["properties"]["checks"] = {
        "$ref": CHECKS_REF,
        "description": schema["properties"]["checks"].get("description", ""),
    }


def _some(mapping: JsonSchema) -> None:
    """A mapping that, given at all, must not be empty."""
    assert mapping["type"] == "object", mapping
    mapping["minProperties"] = 1


MODEL_RULES: dict[type[BaseModel], Callable[[JsonSchema], None]] = {
    Configuration: _configuration_rules,
    OutputSpec: _output_rules,
}


def _accept_field_names(schema: JsonSchema, cls: type[BaseModel]) -> None:
    """With ``populate_by_name`` a field's own name is accepted beside its alias, not both at once."""
    if not (cls.model_config.get("validate_by_name") or cls.model_config.get("populate_by_name")):
        return
    properties = schema.get("properties", {})
    for name, field in cls.model_fields.items():
        alias = field.validation_alias if isinstance(field.validation_alias, str) else field.alias
        if alias is None or alias == name or alias not in properties:
            continue
        description = f"the same as `{alias}`"
        properties[name] = {**properties[alias], "description": description}
        schema.setdefault("dependentSchemas", {})[alias] = {"properties": {name: False}}


class InputSchemaGenerator(GenerateJsonSchema):
    """pydantic's JSON Schema, plus what the input models check in code; no titles made from field
    names (``promptsDir`` would show as "Promptsdir" above its description)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def function_after_schema(self, schema: core_schema.AfterValidatorFunctionSchema) -> JsonSchema:
        json_schema = super().function_after_schema(schema)
        rule = FIELD_RULES.get(schema["function"]["function"])
        return rule(json_schema) if rule else json_schema

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchema:
        json_schema = super().model_schema(schema)
        cls = schema["cls"]
        if issubclass(cls, BaseModel):
            _accept_field_names(json_schema, cls)
            rule = next((MODEL_RULES[base] for base in cls.__mro__ if base in MODEL_RULES), None)
            if rule is not None:
                rule(json_schema)
        return json_schema

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchema:
        """Keys with a pattern: pydantic's ``patternProperties`` alone would let other keys through."""
        json_schema = super().dict_schema(schema)
        patterns = list(json_schema.get("patternProperties", {}))
        if len(patterns) == 1 and "additionalProperties" not in json_schema:
            json_schema["propertyNames"] = {**json_schema.get("propertyNames", {}), "pattern": patterns[0]}
        return json_schema


# --- checks --------------------------------------------------------------------------------------


def check_definitions(registry: CheckRegistry) -> dict[str, JsonSchema]:
    """``$defs`` for an eval's ``checks``: each check type of ``registry`` with its value's schema,
    ``or``, and any definitions the value schemas refer to."""
    defs: dict[str, JsonSchema] = {}
    properties: dict[str, JsonSchema] = {
        "or": {"$ref": CHECK_LIST_REF, "description": "passes when any one of these checks passes"}
    }
    for name, check_type in registry.as_mapping().items():
        value = check_type.adapter.json_schema(mode="validation", schema_generator=InputSchemaGenerator)
        _merge_defs(defs, value.pop("$defs", {}))
        properties[name] = {**value, "description": check_type.description}
    or_mapping = {
        "type": "object",
        "properties": {"or": properties["or"]},
        "required": ["or"],
        "additionalProperties": False,
    }
    defs["Checks"] = {
        "description": "a list of checks (all must pass) or {or: [...]} (any may pass)",
        "anyOf": [{"$ref": CHECK_LIST_REF}, or_mapping],
    }
    defs["CheckList"] = {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/Check"}}
    defs["Check"] = {
        "description": "one check: a mapping with a single key, the check's name",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "minProperties": 1,
        "maxProperties": 1,
    }
    return defs


def _merge_defs(target: dict[str, JsonSchema], new: dict[str, JsonSchema]) -> None:
    for name, definition in new.items():
        if target.setdefault(name, definition) != definition:
            raise ValueError(f"two different schemas are named {name!r}")


# --- the files -----------------------------------------------------------------------------------


def _generated(source: Any) -> JsonSchema:
    adapter = source if isinstance(source, TypeAdapter) else TypeAdapter(source)
    return adapter.json_schema(by_alias=True, mode="validation", schema_generator=InputSchemaGenerator)


def _finish(schema: JsonSchema, title: str, description: str) -> JsonSchema:
    schema["$schema"] = DIALECT
    schema["title"] = title
    schema.setdefault("description", description)
    _tidy_descriptions(schema)
    return schema


def _tidy_descriptions(node: Any) -> None:
    """Docstring ``literals`` as Markdown `code`, the way editors show descriptions."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                node[key] = value.replace("``", "`")
            else:
                _tidy_descriptions(value)
    elif isinstance(node, list):
        for item in node:
            _tidy_descriptions(item)


def suite_schema(registry: CheckRegistry | None = None) -> JsonSchema:
    """A YAML suite (``*.eval.yaml``); checks from ``registry`` (default: the built-in checks)."""
    schema = _generated(SuiteFile)
    defs = schema["$defs"]
    _eval_rules(defs["EvalSpec"])  # after pydantic, which refuses references it did not make
    _turn_rules(defs["TurnSpec"])
    _some(schema["properties"]["configurations"]["anyOf"][0])
    _merge_defs(defs, check_definitions(registry or CheckRegistry()))
    return _finish(
        schema,
        "pytest-vibeeval suite",
        "A YAML eval suite: `metadata`, `evals` and optionally the score, configurations and the "
        "steps of coding-agent evals",
    )


def cli_config_schema() -> JsonSchema:
    """``cli-config.json``: the configurations that answer prompts."""
    return _finish(_generated(CliConfigFile), "pytest-vibeeval cli-config.json", "the configurations")


def eval_config_schema() -> JsonSchema:
    """``eval-config.json``: the coding-agent evaluations of a config folder."""
    schema = _generated(EvalConfigFile)
    _some(schema["properties"]["evaluations"])
    return _finish(schema, "pytest-vibeeval eval-config.json", "the evaluations")


def command_registry_schema() -> JsonSchema:
    """``command-registry.json``: the build and grade steps, by name."""
    return _finish(
        _generated(REGISTRY),
        "pytest-vibeeval command-registry.json",
        "The build and grade steps of coding-agent evals, by name; `timeout` in milliseconds",
    )


EDITOR_SCHEMAS: dict[str, Callable[[], JsonSchema]] = {
    "suite.schema.json": suite_schema,
    "cli-config.schema.json": cli_config_schema,
    "eval-config.schema.json": eval_config_schema,
    "command-registry.schema.json": command_registry_schema,
}
