"""Text for the HTML report: escaping, cutting long text and numbering, shared by its parts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from typing import Any

from ..text_input import first_line as text_first_line
from ..text_input import line_feeds
from .format import decimal, number

TEXT_LIMIT = 4000  # characters of a message or a response
LOG_LINES = 40  # lines of a step's output
LOG_BYTES = 16384  # read at most this much from the end of a log file
LOG_LIMIT = 6000  # characters of a log tail shown
FAILURES_SHOWN = 100  # failure blocks per suite; the rest are counted
OUTCOME_LABEL = {"passed": "pass", "failed": "fail", "error": "error", "skipped": "skip"}


@dataclass
class Counter:
    """Numbers the failure blocks across the page, so their ids are unique."""

    value: int = 0

    def next(self) -> int:
        self.value += 1
        return self.value


# -- text ------------------------------------------------------------------------------------------


# What a page must not show as it is: control characters but tab and newline (after line_feeds), lone
# surrogates (not UTF-8), line and paragraph separators, and the Unicode Bidi_Control characters
# that reorder what the page shows (Trojan source). Joiners, non-breaking and zero-width spaces stay:
# Persian, Indic and emoji text needs them, and they reorder nothing.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def _shown_escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def clean(text: str) -> str:
    """``text`` safe to write as UTF-8 HTML and shown as it is: its lines and tabs kept; controls,
    lone surrogates, line separators and the bidi controls that could reorder what the page shows
    escaped as the terminal shows them: ``a\\u202eb``."""
    if text.isprintable():  # most texts: nothing to escape
        return text
    return _UNSAFE.sub(_shown_escaped, line_feeds(text))  # \r\n and a lone \r end a line, as for the checks


def h(value: object) -> str:
    """HTML-escaped text (quotes too, so it is safe in attributes)."""
    return escape(clean(str(value)), quote=True)


def cut(text: str, limit: int = TEXT_LIMIT) -> str:
    """The start of ``text``, with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [{len(text) - limit} more characters not shown]"


def cut_start(text: str, limit: int) -> str:
    """The end of ``text`` (a log's tail), with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"[{len(text) - limit} earlier characters not shown] …\n{text[-limit:]}"


def first_line(text: str | None, limit: int = 160) -> str:
    line = text_first_line((text or "").strip())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- numbers ---------------------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 2) -> str:
    return decimal(value, digits, grouped=True)


def count(value: Any) -> str:
    found = number(value)
    return "?" if found is None else f"{found:.0f}"


# -- page parts ------------------------------------------------------------------------------------
