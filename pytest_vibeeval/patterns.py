"""Patterns of `match`/`not_match`: a glob where `*` is any run of characters, or a regular expression;
and the one form in which the text checks compare text."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .text_input import line_feeds


def canonical(text: str) -> str:
    """``text`` as the text checks compare it: what looks the same is the same. Unicode's composed
    form (NFC: ``e`` and a combining acute accent are ``é``, as a model, a macOS tool or a copied
    file may write it) and line ends as ``\\n`` (an HTTP model's or a Python callable's ``\\r\\n``,
    as an agent's printed text is read)."""
    return unicodedata.normalize("NFC", line_feeds(text))  # ``text`` itself when it is so already


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


@lru_cache(maxsize=4096)
def _canonical_pattern(pattern: str) -> str:
    return canonical(pattern)


@lru_cache(maxsize=4096)
def _regexes(pattern: str, flags: int) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """The regular expression ``pattern`` as written, and in its :func:`canonical` form (the same
    object when that is the same text; None in the odd case where it no longer compiles)."""
    written = re.compile(pattern, flags)
    composed = _canonical_pattern(pattern)
    if composed == pattern:
        return written, written
    try:
        return written, re.compile(composed, flags)
    except re.error:
        return written, None


def regex_found(pattern: str, text: str, canonical_text: str, flags: int = 0) -> bool:
    """Whether the regular expression ``pattern`` is found in ``text`` as it came, or (in its
    :func:`canonical` form) in ``canonical_text``, ``text``'s: a regex may spell as an escape what
    that form changes (``\\r\\n``, ``e\\u0301``), which only the text as it came still has, or write
    the composed text the answer spelled otherwise. A forbidding check fails when either is found."""
    written, composed = _regexes(pattern, flags)
    if written.search(text) is not None:
        return True
    if composed is None or (composed is written and canonical_text is text):
        return False  # the same search again
    return composed.search(canonical_text) is not None


def pattern_matches(pattern: str, text: str, canonical_text: str | None = None) -> bool:
    """Whether a ``match`` pattern matches ``text``, case-insensitive (``canonical_text`` is its
    :func:`canonical` form, when the caller has it made). A glob must match the whole text, both in
    their canonical form; a regex is searched for, as in vibecheck (``^`` and ``$`` anchor it at the
    answer's ends), in the text as it came and in that form (:func:`regex_found`)."""
    if canonical_text is None:
        canonical_text = canonical(text)
    if is_regex_pattern(pattern):
        return regex_found(pattern, text, canonical_text, re.IGNORECASE | re.DOTALL)
    pattern = _canonical_pattern(pattern)
    if "*" in pattern:
        return _glob_matches(pattern, canonical_text)
    return compile_pattern(pattern).fullmatch(canonical_text) is not None
