"""JSON with ``//`` and ``/* */`` comments, as Gemini CLI reads its ``settings.json``: the comments
(outside strings) are dropped before the JSON is parsed. Trailing commas stay refused, as there."""

from __future__ import annotations

import re

# A string (kept whole: a `//` inside it is text; one not closed runs to the end of the text, so
# that a cut-off file is scanned once), or a comment: `//` to the end of its line, `/*` to `*/`
# (or to the end of the text, where it is not closed).
_STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"?|//[^\n]*|/\*.*?(?:\*/|\Z)', re.DOTALL)
_NOT_LINE_END = re.compile(r"[^\n]")  # every character of a comment but its line ends becomes a space


def _blanked(match: re.Match[str]) -> str:
    text = match.group()
    return text if text.startswith('"') else _NOT_LINE_END.sub(" ", text)


def strip_json_comments(text: str) -> str:
    """``text`` with each comment outside a string replaced by spaces (its line ends kept): a JSON
    syntax error in the rest is at the line and column it has in ``text``."""
    return _STRING_OR_COMMENT.sub(_blanked, text) if "/" in text else text
