"""Checks on the answer's structure and on what the agent did: ``json``, ``json_schema``,
``tool_called``, ``tool_not_called``, ``tool_sequence``, ``max_tool_calls``, ``max_cost`` and
``max_latency``. An unknown cost or latency, or tool calls the configuration cannot report, leave
the checks that would pass on their absence undecided, never passed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    model_validator,
)

from .check_api import SUITE_DIR_CONTEXT, CheckError, CheckType, Count, NonEmptyStr, Response, Verdict, quote
from .dotted import MISSING, lookup
from .loading.syntax_hints import json_error
from .patterns import canonical, pattern_matches
from .results import ToolCallRecord
from .schema_refs import SchemaFiles, read_schema_file, referenced_files

Limit = Annotated[float, Field(ge=0, allow_inf_nan=False)]


def suite_dir(info: ValidationInfo) -> Path:
    """The suite's folder from the validation context (the working directory outside a suite)."""
    context = info.context if isinstance(info.context, dict) else {}
    folder = context.get(SUITE_DIR_CONTEXT)
    return Path(folder) if folder is not None else Path()


def as_text(value: Any) -> str:
    """A JSON value as text for patterns and messages: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


# --------------------------------------------------------------------------- json, json_schema


def parse_answer(text: str) -> tuple[Any, str | None]:
    """The answer as JSON, or ``(None, why not)``."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        fenced = " (it is in a code fence; ask for bare JSON)" if text.lstrip().startswith("```") else ""
        return None, f"the response is not JSON: {json_error(exc)}{fenced}"


class JsonArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    path: NonEmptyStr | None = Field(
        default=None, description="dotted path that must exist, e.g. `a.b.0.c` (default: the whole answer)"
    )
    equals: Any = Field(
        default=None, description="the value at `path` equals this (text compares with the value's JSON)"
    )
    matches: NonEmptyStr | None = Field(
        default=None, description="the value at `path` (as text) matches this glob or regex, as `match`"
    )
    # Whether `equals` was written (`equals: null` is a value); kept through template filling,
    # which marks every field as set.
    _has_equals: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _note_equals(self) -> JsonArgs:
        self._has_equals = "equals" in self.model_fields_set
        return self


def _json(args: Literal[True] | JsonArgs, response: Response) -> Verdict:
    data, problem = parse_answer(response.text)
    if problem:
        return Verdict(False, problem)
    if args is True:
        return Verdict(True, "the response is JSON")
    where = f"`{args.path}`" if args.path else "the response"
    value = data if args.path is None else lookup(data, args.path)
    if value is MISSING:
        return Verdict(False, f"the JSON response has no `{args.path}`")
    if args._has_equals:
        expected = args.equals
        same = value == expected or (
            isinstance(expected, str) and canonical(as_text(value)) == canonical(expected).strip()
        )
        if not same:
            shown, wanted = quote(as_text(value)), quote(as_text(expected))
            if shown == wanted:  # the same text, of another type: "2" against 2
                shown, wanted = _typed(value), _typed(expected)
            return Verdict(False, f"{where} is {shown}, expected {wanted}")
    if args.matches is not None and not pattern_matches(args.matches, as_text(value)):
        return Verdict(
            False, f"{where} is {quote(as_text(value))}, which does not match {quote(args.matches)}"
        )
    found = f"{where} is {quote(as_text(value))}" if args.path else "the response is JSON"
    return Verdict(True, found)


_JSON_TYPES = (
    (bool, "a boolean"),
    (int | float, "a number"),
    (str, "text"),
    (list, "a list"),
    (dict, "an object"),
)


def _typed(value: Any) -> str:
    """``value`` as JSON with its JSON type: ``"2" (text)``, ``2 (a number)``."""
    kind = next((name for types, name in _JSON_TYPES if isinstance(value, types)), "null")
    return f"{json.dumps(value, ensure_ascii=False)} ({kind})"


@dataclass(frozen=True)
class LoadedSchema:
    """A ``json_schema`` check's schema, read and checked when the suite loads, with the files its
    ``$ref``s lead to (:mod:`.schema_refs`)."""

    schema: dict[str, Any]
    source: str  # the file as written in the suite, or "inline"
    files: SchemaFiles = field(default_factory=dict)


def _load_schema(value: dict[str, Any] | str, info: ValidationInfo) -> LoadedSchema:
    base = suite_dir(info)
    if isinstance(value, str):
        source = value
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError(f"{value!r} must be a file path relative to the suite's folder, without `..`")
        schema = read_schema_file(base / value, value)
        folder = (base / value).parent
    else:
        source, schema, folder = "inline", value, base
    where = "the inline schema" if source == "inline" else f"the JSON Schema {source!r}"
    if not isinstance(schema, dict):
        raise ValueError(f"{where} is not an object")
    import jsonschema  # only where a suite has a json_schema check: it costs every start ~50 ms

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        at = "".join(f"[{p!r}]" for p in exc.absolute_path)
        raise ValueError(
            f"{where} is not a valid JSON Schema: {exc.message}{f' (at {at})' if at else ''}"
        ) from None
    return LoadedSchema(schema, source, referenced_files(schema, folder, base, where))


SchemaValue = Annotated[dict[str, Any] | NonEmptyStr, AfterValidator(_load_schema)]


def _validator(loaded: LoadedSchema) -> Any:
    """A validator of ``loaded``'s schema that finds its ``$ref``-ed files in what was read."""
    import jsonschema  # imported when the schema was loaded
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012, specification_with

    cls = jsonschema.validators.validator_for(loaded.schema)
    dialect = str(cls.META_SCHEMA.get("$id") or cls.META_SCHEMA.get("id") or "")
    spec = specification_with(dialect, default=DRAFT202012)  # of a file that does not say its own
    files = loaded.files.items()
    resources = [(uri, Resource.from_contents(content, default_specification=spec)) for uri, content in files]
    return cls(loaded.schema, registry=Registry().with_resources(resources))


def _json_schema(loaded: LoadedSchema, response: Response) -> Verdict:
    data, problem = parse_answer(response.text)
    if problem:
        return Verdict(False, problem)
    import jsonschema
    from referencing.exceptions import Unresolvable

    name = "the schema" if loaded.source == "inline" else quote(loaded.source)
    try:
        errors = list(_validator(loaded).iter_errors(data))
    except Unresolvable as exc:
        raise CheckError(f"{name} has a $ref that cannot be resolved: {exc}") from None
    if not errors:
        return Verdict(True, f"the response matches {name}")
    best = jsonschema.exceptions.best_match(errors)
    more = f" (and {_plural(len(errors) - 1, 'more error')})" if len(errors) > 1 else ""
    return Verdict(False, f"the response does not match {name}: at {best.json_path}: {best.message}{more}")


# --------------------------------------------------------------------------- tool calls


class ToolCalledArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    name: NonEmptyStr = Field(description="the tool's name, or a glob such as `mcp__docs__*`")
    min: Count | None = Field(
        default=None, description="at least this many calls (default 1; 0 with `max: 0`: never called)"
    )
    max: Count | None = Field(default=None, description="at most this many calls (default: no limit)")
    args: dict[str, Any] | None = Field(
        default=None,
        description="only calls with these arguments count: text values are globs or regexes as in `match`",
    )

    @model_validator(mode="after")
    def _bounds(self) -> ToolCalledArgs:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")
        return self


def _args_match(expected: dict[str, Any], call: ToolCallRecord) -> bool:
    given = call.args or {}
    for key, want in expected.items():
        if key not in given:
            return False
        have = given[key]
        if isinstance(want, str):
            if not pattern_matches(want, as_text(have)):
                return False
        elif have != want:
            return False
    return True


def calls_of(name: str, calls: Sequence[ToolCallRecord]) -> list[ToolCallRecord]:
    """The calls of the tool ``name`` (a glob or regex, as in ``match``)."""
    return [call for call in calls if pattern_matches(name, call.tool)]


def _tool_called(spec: NonEmptyStr | ToolCalledArgs, response: Response) -> Verdict:
    args = spec if isinstance(spec, ToolCalledArgs) else ToolCalledArgs(name=spec)
    calls = calls_of(args.name, response.tool_calls)
    with_args = ""
    if args.args:
        every = len(calls)
        calls = [call for call in calls if _args_match(args.args, call)]
        with_args = f" with args {as_text(args.args)} ({_plural(every, 'call')} of it in all)"
    low = min(1, args.max if args.max is not None else 1) if args.min is None else args.min
    count = len(calls)
    said = f"tool {args.name!r} was called {_plural(count, 'time')}{with_args}"
    if count < low:
        return Verdict(False, f"{said}, expected at least {low}{_seen(response)}")
    if args.max is not None and count > args.max:
        return Verdict(False, f"{said}, expected at most {args.max}")
    if args.max is not None and not response.tool_calls_reported:
        return Verdict(None, f"tool_called {args.name!r} (max {args.max}): {UNREPORTED}")
    return Verdict(True, said)


# Why a check that passes on the absence of calls is undecided (the reason of the skipped eval).
UNREPORTED = (
    "the tool calls are unknown (the configuration does not report them: an `output.parser`, "
    "the MCP tool loop or a Python callable's `tool_calls` does)"
)


def _seen(response: Response) -> str:
    """What was called instead, for a failure message."""
    calls = response.tool_calls
    if not response.tool_calls_reported and not calls:
        return " (the configuration does not report its tool calls)"
    if not calls:
        return " (no tool calls were reported)"
    names = list(dict.fromkeys(call.tool for call in calls))
    shown = ", ".join(names[:10]) + (", …" if len(names) > 10 else "")
    return f" (called: {shown})"


def _tool_not_called(name: str, response: Response) -> Verdict:
    count = len(calls_of(name, response.tool_calls))
    if count:
        return Verdict(False, f"tool {name!r} was called {_plural(count, 'time')}, expected never")
    if not response.tool_calls_reported:
        return Verdict(None, f"tool_not_called {name!r}: {UNREPORTED}")
    return Verdict(True, f"tool {name!r} was not called{_seen(response)}")


def _tool_sequence(names: list[NonEmptyStr], response: Response) -> Verdict:
    position = 0
    calls = response.tool_calls
    for done, name in enumerate(names):
        found = next((i for i in range(position, len(calls)) if pattern_matches(name, calls[i].tool)), None)
        if found is None:
            after = f" after {names[done - 1]!r}" if done else ""
            return Verdict(
                False,
                f"tool {name!r} was not called{after}; expected the sequence {' → '.join(names)}"
                f"{_seen(response)}",
            )
        position = found + 1
    return Verdict(True, f"tools were called in the order {' → '.join(names)}")


def _max_tool_calls(limit: int, response: Response) -> Verdict:
    count = len(response.tool_calls)
    if count <= limit and not response.tool_calls_reported:
        return Verdict(None, f"max_tool_calls {limit}: {UNREPORTED}")
    return Verdict(count <= limit, f"{_plural(count, 'tool call')}; max_tool_calls is {limit}")


# --------------------------------------------------------------------------- cost, latency


def _max_cost(limit: float, response: Response) -> Verdict:
    if response.cost is None:
        return Verdict(
            None, "max_cost: the cost is unknown (the configuration reports none and has no `pricing`)"
        )
    return Verdict(response.cost <= limit, f"cost ${response.cost:.6g}; max_cost is ${limit:g}")


def _max_latency(limit: float, response: Response) -> Verdict:
    if response.latency is None:
        return Verdict(None, "max_latency: the latency is unknown")
    return Verdict(response.latency <= limit, f"latency {response.latency:.3g}s; max_latency is {limit:g}s")


STRUCTURAL_CHECKS: tuple[CheckType, ...] = (
    CheckType(
        "json",
        Literal[True] | JsonArgs,
        _json,
        "the response parses as JSON (`true`); with `path`, that path exists, and its value `equals` "
        "or `matches`",
    ),
    CheckType(
        "json_schema",
        SchemaValue,
        _json_schema,
        "the response is JSON valid against the schema: inline, or a .json/.yaml file relative to the suite",
        template_fields=False,
    ),
    CheckType(
        "tool_called",
        NonEmptyStr | ToolCalledArgs,
        _tool_called,
        "the tool was called (at least once, or `min`/`max` times, optionally with matching `args`)",
    ),
    CheckType(
        "tool_not_called",
        NonEmptyStr,
        _tool_not_called,
        "the tool was never called (tool calls not reported: undecided)",
    ),
    CheckType(
        "tool_sequence",
        Annotated[list[NonEmptyStr], Field(min_length=1)],
        _tool_sequence,
        "the tools were called in this order (other calls may come between)",
    ),
    CheckType(
        "max_tool_calls",
        Count,
        _max_tool_calls,
        "the agent made at most N tool calls (tool calls not reported: undecided)",
    ),
    CheckType("max_cost", Limit, _max_cost, "the answer cost at most this many USD (unknown: undecided)"),
    CheckType(
        "max_latency", Limit, _max_latency, "the answer took at most this many seconds (unknown: undecided)"
    ),
)
