"""What a pydantic validation error of an input file says to its user: what was given instead of
what, and how to write it."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import date
from typing import Any

import yaml
from pydantic_core import ErrorDetails

from .yamlsource import yaml_kind

# how to write a value of these keys, wherever they are
FIELD_HINTS = {
    "timeout": "timeout is in milliseconds: a whole number above 0, e.g. 60000",
    "multiplier": "the multiplier scales the eval's vybes score: a number above 0, e.g. 2",
    "timeLimitMinutes": "the time limit is in minutes: a number above 0, e.g. 10 (null: no time penalty)",
    "command": 'the executable to run: a name on PATH or a path, e.g. "python3"',
    "min_tokens": "a whole number of tokens, e.g. 10",
    "max_tokens": "a whole number of tokens, e.g. 500",
}
_NUMBER_KINDS = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
}
_EXPONENT = re.compile(r"([-+]?)(\d*)(?:\.(\d*))?[eE]([-+]?)(\d+)")
_BOUNDS = {  # pydantic's bound errors: the bound's key in the error's ctx, and how it is said
    "greater_than": ("gt", "must be greater than {}"),
    "greater_than_equal": ("ge", "must be {} or more"),
    "less_than": ("lt", "must be less than {}"),
    "less_than_equal": ("le", "must be {} or less"),
}


def given(value: Any) -> str:
    """How a message names the value a file gave: ``the number 5``, ``the text 'fast'``, ``null``."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if value is None:
        return "null (an empty value)"
    return yaml_kind(value)


def _written(value: Any) -> str:
    """``value`` as a YAML flow scalar or collection, as the user most likely wrote it."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, int | float | str):
        return str(value)
    if isinstance(value, date):  # YAML's timestamps: shown as written, not as a dumped document
        return value.isoformat()
    return str(yaml.safe_dump(value, default_flow_style=True, width=10_000, allow_unicode=True)).strip()


def _entry(key: str | int | None, value: str, json_file: bool) -> str:
    """``key: value`` as the file would hold it (JSON: ``"key": value``); a list item without key."""
    if not isinstance(key, str):
        return value
    return f"{json.dumps(key)}: {value}" if json_file else f"{key}: {value}"


def _text_problem(value: Any, key: str | int | None, json_file: bool) -> tuple[str, str]:
    quoted = json.dumps(_written(value), ensure_ascii=False)
    hint = f"quote it to make it text: {_entry(key, quoted, json_file)}"
    if json_file:
        return f"must be text (a string in double quotes), not {given(value)}", hint
    why = ""
    if isinstance(value, bool):
        why = ": YAML reads yes/no/on/off/true/false as booleans"
    elif value is None:
        hint = f"write the text after the colon; to mean the word, quote it: {_entry(key, quoted, False)}"
    elif isinstance(value, list):
        why = ": YAML reads a value in [brackets] as a list"
    elif isinstance(value, dict):
        why = ": YAML reads a value in {braces}, or `key: value` below the key, as a mapping"
    return f"must be text, not {given(value)}{why}", hint


def _number_hint(kind: str, value: Any, key: str | int | None, json_file: bool, unquoted: bool) -> str | None:
    """How to write a number that was read as text: without quotes, or, where YAML reads it as text
    unquoted (``unquoted``) or would without the quotes (``1e305``), as YAML writes a number."""
    if not isinstance(value, str):
        return None
    written = value.strip()
    try:
        number = float(written)
    except ValueError:
        return None  # no number at all
    whole = re.fullmatch(r"[+-]?\d+", written) is not None
    if not (kind.startswith("float") or whole) or not math.isfinite(number):
        return None
    meant = written
    if not json_file and not isinstance(yaml.safe_load(written), int | float):
        meant = str(int(written)) if whole else _yaml_number(written, number)
    if not unquoted:
        return f"write the number without quotes: {_entry(key, meant, json_file)}"
    why = " (in YAML a number in exponent form needs a dot and a signed exponent)"
    why = why if _EXPONENT.fullmatch(written) else ""
    return f"YAML reads {written} as text, not a number{why}: write {_entry(key, meant, False)}"


def _yaml_number(text: str, number: float) -> str:
    """``number``, written ``text``, as YAML 1.1 reads a number: an exponent form with a dot and a
    signed exponent (``1e305``: ``1.0e+305``), else as Python writes it (``-.5``: ``-0.5``)."""
    match = _EXPONENT.fullmatch(text) or _EXPONENT.fullmatch(repr(number))
    if match is None:
        return repr(number)
    sign, whole, fraction, exponent_sign, exponent = match.groups()
    return f"{sign}{whole or '0'}.{fraction or '0'}e{exponent_sign or '+'}{exponent}"


def _mapping_hint(value: Any, key: str | int | None, json_file: bool) -> str | None:
    if key != "score" or not isinstance(value, str):
        if json_file:
            return 'write an object: {"key": value, …}'
        return "write its keys on the lines below it, indented, or as {key: value, …}"
    formula = _entry("formula", json.dumps(value) if json_file else value, json_file)
    return f"the formula goes under the key `formula`: {_entry(key, '{' + formula + '}', json_file)}"


def _list_hint(value: Any, key: str | int | None, json_file: bool) -> str | None:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    item = json.dumps(value) if json_file else _written(value)
    return f"write a list, e.g. {_entry(key, f'[{item}]', json_file)}"


def describe(
    error: Any, key: str | int | None, json_file: bool, unquoted: bool = False
) -> tuple[str, str | None] | None:
    """The message and hint for one pydantic error about the value of ``key`` (the last key of its
    location: a list index for an item), or None to keep pydantic's message. ``json_file``: the
    file is JSON, where strings are in double quotes; ``unquoted``: the value is text YAML read
    from a number written without quotes (:attr:`.yamlsource.Document.numbers_as_text`)."""
    kind = error["type"]
    value = error.get("input")
    field_hint = FIELD_HINTS.get(key) if isinstance(key, str) else None
    if kind == "string_type":
        return _text_problem(value, key, json_file)
    if kind in _NUMBER_KINDS:
        hint = _number_hint(kind, value, key, json_file, unquoted)
        return f"must be {_NUMBER_KINDS[kind]}, not {given(value)}", hint or field_hint
    if kind in _BOUNDS:
        name, said = _BOUNDS[kind]
        bound = (error.get("ctx") or {}).get(name)
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)  # 1, as a file would write it, not 1.0
        return f"{said.format(bound) if bound is not None else error['msg']}, not {value!r}", field_hint
    if kind == "string_too_short" and (error.get("ctx") or {}).get("min_length") == 1:
        return "must not be empty", field_hint or "give it a value that is not empty"
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false, not {given(value)}", None
    if kind in ("model_type", "dict_type"):
        return f"must be a mapping, not {yaml_kind(value)}", _mapping_hint(value, key, json_file)
    if kind == "list_type":
        return f"must be a list, not {yaml_kind(value)}", _list_hint(value, key, json_file)
    return None


def _is_kind_error(error: ErrorDetails) -> bool:
    """An error that says the value is of another kind (text, not a mapping), not what is wrong in it."""
    return error["type"].endswith("_type") or error["type"] == "literal_error"


def other_kinds_left_out(
    errors: list[ErrorDetails],
    clean_loc: Callable[[tuple[Any, ...]], tuple[Any, ...]],
    prefix: tuple[Any, ...] = (),
) -> list[ErrorDetails]:
    """``errors`` without those of a union's members that take another kind of value, where a
    member that takes this kind found what is wrong in it: ``tool_called: {nam: x}`` is "unknown
    key 'nam'", not also "must be text, not a mapping" with a hint to quote it. ``clean_loc``
    drops the union members' tags from a location; ``prefix``: where the validated value is."""

    def where(error: ErrorDetails) -> tuple[tuple[Any, ...], bool]:
        loc = (*prefix, *error["loc"])
        clean = clean_loc(loc)
        return clean, len(clean) < len(loc)  # the location, and whether a union member's

    located = [(where(error), error) for error in errors]
    content = [clean for (clean, member), error in located if member and not _is_kind_error(error)]

    def noise(error: ErrorDetails) -> bool:
        clean, member = where(error)
        return member and _is_kind_error(error) and any(other[: len(clean)] == clean for other in content)

    return [error for error in errors if not noise(error)]
