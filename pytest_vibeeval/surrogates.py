"""Lone UTF-16 surrogates: JSON may escape them (``"\\ud83d"``, which Node's ``JSON.stringify``
writes for a string cut mid-emoji), Python's ``json`` decodes them, and UTF-8 cannot encode them:
a record holding one could not be written. Text read from JSON gets U+FFFD in their place."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic is not imported by a session without evals
    from pydantic import BaseModel

# A \uD800-\uDFFF escape; json.loads joins a valid pair into one character, so one left over is lone.
_ESCAPE_TEXT = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Not one of the surrogates Python's "surrogateescape" makes of a byte it could not decode.
_UNESCAPED_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def replaced(value: Any) -> Any:
    """``value`` (JSON data: strings, lists, dicts) with every surrogate, in keys too, made U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [replaced(item) for item in value]
    if isinstance(value, tuple):
        return tuple(replaced(item) for item in value)
    if isinstance(value, dict):
        return {replaced(key): replaced(item) for key, item in value.items()}
    return value


def loads(raw: str | bytes | bytearray) -> Any:
    """:func:`json.loads` without lone surrogates in the strings it returns; only text that holds
    a surrogate escape is walked again."""
    data = json.loads(raw)
    escaped = _ESCAPE_TEXT.search(raw) if isinstance(raw, str) else _ESCAPE_BYTES.search(raw)
    return replaced(data) if escaped else data


def model_json(model: BaseModel, **options: Any) -> str:
    """``model.model_dump_json(**options)``; a model that holds a surrogate anyway (a string from
    elsewhere than JSON) is dumped with U+FFFD in its place instead of failing."""
    try:
        return model.model_dump_json(**options)
    except ValueError:  # pydantic_core.PydanticSerializationError
        clean = type(model).model_validate(replaced(model.model_dump()))
        return clean.model_dump_json(**options)


def utf8_bytes(text: str) -> bytes:
    """``text`` as UTF-8, whatever the locale: a surrogate that stands for a byte Python could not
    decode (in a command-line argument, the environment, a file name) as that byte again, any other
    lone surrogate as U+FFFD."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return _UNESCAPED_SURROGATE.sub("\ufffd", text).encode("utf-8", "surrogateescape")
