"""Lone UTF-16 surrogates: JSON may escape them (``"\\ud83d"``, which Node's ``JSON.stringify``
writes for a string cut mid-emoji), Python's ``json`` decodes them, and UTF-8 cannot encode them:
a record holding one could not be written. Text read from JSON gets U+FFFD in their place."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
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


LONE_ESCAPE_HINT = (
    "write the character itself, or both halves of its pair (`\\ud83d\\ude00`): the tool that wrote "
    "the file may have cut a string in the middle of a character"
)


@dataclass(frozen=True)
class LoneEscape:
    """A ``\\uD800``-``\\uDFFF`` escape that is no character: ``escape`` as written, at ``offset``."""

    escape: str
    offset: int

    @property
    def message(self) -> str:
        return f"{self.escape} is half of a UTF-16 surrogate pair, not a character"


def lone_escape(text: str, data: Any) -> LoneEscape | None:
    """The first escape of a lone surrogate in the JSON ``text`` that :func:`json.loads` read as
    ``data`` (in people's files it is a mistake to report, not text to repair), or None."""
    if not _ESCAPE_TEXT.search(text):
        return None
    found = _first_surrogate(data)
    if found is None:
        return None
    code = ord(found)
    alone = (
        rf"\\u{code:04x}(?!\\u[dD][c-fC-F])"  # a high half without the low one after it
        if code < 0xDC00
        else rf"(?<!\\u[dD][89abAB][0-9a-fA-F]{{2}})\\u{code:04x}"  # a low half without the high one
    )
    match = re.search(alone, text, re.IGNORECASE)
    return None if match is None else LoneEscape(match[0], match.start())


def _first_surrogate(value: Any) -> str | None:
    if isinstance(value, str):
        match = _SURROGATE.search(value)
        return match[0] if match else None
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
    if isinstance(items, list):
        for item in items:
            found = _first_surrogate(item)
            if found is not None:
                return found
    return None
