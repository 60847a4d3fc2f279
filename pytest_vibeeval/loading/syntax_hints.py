"""How to fix a YAML or JSON syntax error: hints from the parser's problem and the text around it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# characters that start something else than plain text when a YAML value begins with them
YAML_INDICATORS = "*&[{!|>%@`"
_INDICATOR_MEANING = {
    "*": "an alias (a reference to an `&anchor`)",
    "&": "an anchor",
    "[": "a list",
    "{": "a mapping",
    "!": "a tag",
    "|": "a block of text on the following lines",
    ">": "a folded block of text on the following lines",
    "%": "a directive",
    "@": "a reserved character",
    "`": "a reserved character",
}
# `key: value` or `- key: value` on one line; the key plain text, the value whatever follows
_KEY_VALUE = re.compile(r"^\s*(?:-\s+)*(?P<key>[^\s\"'#:\[\]{}][^:#]*?):\s+(?P<value>\S.*?)\s*$")
GENERIC_YAML_HINT = "check indentation, quoting and brackets near this line"
TAB_INDENT_HINT = "the line is indented with a tab: YAML indents with spaces only; replace the tab"


def _quoted(key: str, value: str) -> str:
    """``key: "value"``, the value as a double-quoted YAML (and JSON) string."""
    return f"{key}: {json.dumps(value, ensure_ascii=False)}"


def yaml_syntax_hint(line_text: str) -> str:
    """The hint for a YAML syntax error on the line ``line_text``: a value that starts with an
    indicator character, or holds ``: ``, must be quoted; a tab in its indentation must be spaces;
    otherwise the general advice."""
    if "\t" in line_text[: len(line_text) - len(line_text.lstrip())]:
        return TAB_INDENT_HINT
    match = _KEY_VALUE.match(line_text)
    if match is None:
        return GENERIC_YAML_HINT
    key, value = match["key"], match["value"]
    if value[0] in YAML_INDICATORS:
        if value[0] in "[{" and value.rstrip()[-1:] == {"[": "]", "{": "}"}[value[0]]:
            return GENERIC_YAML_HINT  # a whole list or mapping: the error is inside it
        return (
            f"a value starting with `{value[0]}` is read by YAML as {_INDICATOR_MEANING[value[0]]}, "
            f"not as text: quote it, e.g. {_quoted(key, value)}"
        )
    if ": " in value and value[0] not in "\"'":
        return (
            f"the value of `{key}` holds `: `, which YAML reads as the start of another key: quote it, "
            f"e.g. {_quoted(key, value)} (or write the text as a `|` block on the next lines)"
        )
    return GENERIC_YAML_HINT


# The JSON parser's message (its start) and what to do about it.
_JSON_HINTS = (
    (
        "Expecting property name",
        'a key must be text in double quotes, e.g. "name": …; single quotes are not JSON',
    ),
    (
        "Expecting value",
        "a value is missing or is not JSON: text in double quotes, numbers, true, false, null, "
        "[lists] or {objects}",
    ),
    (
        "Expecting ',' delimiter",
        'a comma is missing between two entries, or a string holds a double quote: write it as \\"',
    ),
    ("Expecting ':' delimiter", 'each key is followed by a colon: "key": value'),
    ("Invalid control character", "a string holds a line break or tab: write it as \\n or \\t"),
    (
        "Invalid \\escape",
        "a backslash in a string starts an escape: write a backslash as \\\\ (e.g. C:\\\\path)",
    ),
    ("Unterminated string", "a string has no closing double quote"),
    ("Extra data", "the file holds more than one JSON value: wrap them in one object or list"),
)


TRAILING_COMMA_HINT = "remove the comma after the last entry: JSON allows no trailing comma"


@dataclass(frozen=True)
class JsonSyntax:
    """A JSON syntax error as the plugin reports it: ``message`` (with its column), its line, how to
    fix it."""

    message: str
    line: int
    hint: str


TRAILING_COMMA = "a comma after the last entry"


@dataclass(frozen=True)
class JsonError:
    """A :class:`json.JSONDecodeError` in the same words and at the same place on every Python: a
    comma before a closing bracket is :data:`TRAILING_COMMA`, at the comma (Python 3.13 says
    "Illegal trailing comma before end of object" there; earlier versions "Expecting property name
    enclosed in double quotes" or "Expecting value", at the bracket). ``str()`` is worded as the
    exception's: ``msg: line 1 column 8 (char 7)``."""

    msg: str
    lineno: int
    colno: int
    pos: int

    def __str__(self) -> str:
        return f"{self.msg}: line {self.lineno} column {self.colno} (char {self.pos})"


def json_error(exc: json.JSONDecodeError) -> JsonError:
    """``exc`` as :class:`JsonError` words it."""
    text, pos = exc.doc, exc.pos
    before = text[:pos].rstrip()
    if exc.msg.startswith("Illegal trailing comma"):
        comma = pos
    elif exc.msg.startswith(("Expecting property name", "Expecting value")) and (
        text[pos : pos + 1] in ("}", "]") and before.endswith(",")
    ):
        comma = len(before) - 1
    else:
        return JsonError(exc.msg, exc.lineno, exc.colno, pos)
    line_start = text.rfind("\n", 0, comma)
    return JsonError(TRAILING_COMMA, text.count("\n", 0, comma) + 1, comma - line_start, comma)


def json_syntax(exc: json.JSONDecodeError) -> JsonSyntax:
    """The JSON parser's error, the same on every Python (see :class:`JsonError`)."""
    error = json_error(exc)
    if error.msg == TRAILING_COMMA:
        return JsonSyntax(f"{TRAILING_COMMA} (column {error.colno})", error.lineno, TRAILING_COMMA_HINT)
    return JsonSyntax(
        f"{exc.msg} (column {exc.colno})", exc.lineno, json_syntax_hint(exc.msg, exc.doc, exc.pos)
    )


def json_syntax_hint(message: str, text: str, pos: int) -> str:
    """The hint for the JSON parser's ``message`` about the character at ``pos`` of ``text``."""
    if message.startswith(("Expecting property name", "Expecting value")) and text[:pos].rstrip()[-1:] == ",":
        return TRAILING_COMMA_HINT
    return next(
        (hint for start, hint in _JSON_HINTS if message.startswith(start)),
        "check commas, brackets and double quotes near this column",
    )
