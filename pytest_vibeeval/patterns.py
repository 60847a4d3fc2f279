"""Patterns of `match`/`not_match`: a glob where `*` is any run of characters, or a regular expression;
and the one form in which the text checks compare text."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache


def canonical(text: str) -> str:
    """``text`` as the text checks compare it: what looks the same is the same. Unicode's composed
    form (NFC: ``e`` and a combining acute accent are ``é``, as a model, a macOS tool or a copied
    file may write it) and line ends as ``\\n`` (an HTTP model's or a Python callable's ``\\r\\n``,
    as an agent's printed text is read)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text)  # returns ``text`` itself when it is composed already


# A pattern is read as a regular expression when it holds one of these; otherwise it is a glob.
REGEX_MARKERS = re.compile(r"\.[*+?]|\\[dDwWsSb]|\[[^\]]*\w-\w[^\]]*\]|\(\?|\{\d+(,\d*)?\}|^\^|(?<!\\)\$$")


@lru_cache(maxsize=4096)
def is_regex_pattern(pattern: str) -> bool:
    """Whether ``pattern`` is matched as a regular expression (see docs/checks.md, "Patterns")."""
    if not REGEX_MARKERS.search(pattern):
        return False
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


# A ``*`` that no regex construct repeats (``.*``, ``)*``, ``]*``, ``}*``): a glob's "any text".
_GLOB_STAR = re.compile(r"(?<![.)\]}\\])\*")


def broken_regex(pattern: str) -> str | None:
    """Why ``pattern``, written as a regular expression (regex constructs, no glob ``*``), does
    not compile; None when it compiles or is a glob. Read as a glob instead, such a pattern would
    match nothing, and a ``not_match`` with it would always pass."""
    if not REGEX_MARKERS.search(pattern) or _GLOB_STAR.search(pattern):
        return None
    try:
        re.compile(pattern)
    except re.error as exc:
        return str(exc)
    return None


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Case-insensitive matcher of a pattern: a glob where ``*`` is any run of characters, or a regex."""
    if is_regex_pattern(pattern):
        source = pattern
    else:
        source = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.compile(source, re.IGNORECASE | re.DOTALL)


@lru_cache(maxsize=4096)
def _glob_parts(pattern: str) -> tuple[tuple[re.Pattern[str], int], ...]:
    """The literal pieces between the ``*`` of a glob, each with its length."""
    return tuple((re.compile(re.escape(part), re.IGNORECASE), len(part)) for part in pattern.split("*"))


def _glob_matches(pattern: str, text: str) -> bool:
    """Whole-text glob match in linear time (``.*a.*a.*b`` as a regex backtracks polynomially).

    The first piece must start the text, the last end it, and the ones between are taken leftmost
    in order; for ``*``-only globs that is exact. Case-insensitive matching keeps lengths.
    """
    (first, first_len), *middle, (last, last_len) = _glob_parts(pattern)
    if first_len and first.match(text) is None:
        return False
    position = first_len
    for piece, length in middle:
        if not length:
            continue
        found = piece.search(text, position)
        if found is None:
            return False
        position = found.end()
    start = len(text) - last_len
    return start >= position and (not last_len or last.match(text, start) is not None)


def pattern_matches(pattern: str, text: str) -> bool:
    """Whether a ``match`` pattern matches ``text``, case-insensitive, both in their
    :func:`canonical` form. A glob must match the whole text; a regex is searched for, as in
    vibecheck: ``^`` and ``$`` anchor it at the answer's ends."""
    pattern, text = canonical(pattern), canonical(text)
    if is_regex_pattern(pattern):
        return compile_pattern(pattern).search(text) is not None
    if "*" in pattern:
        return _glob_matches(pattern, text)
    return compile_pattern(pattern).fullmatch(text) is not None
