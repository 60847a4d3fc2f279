"""The recorded excerpt of a long answer: its head and tail joined by a marker line."""

from __future__ import annotations

# A longer answer is recorded as its head and tail: the record travels to the controller and into
# the results file and reports, and the rubric reads it, none of which should hold 200 MB.
RESPONSE_EXCERPT_CHARS = 64 * 1024


def response_excerpt(text: str, log: str | None = None) -> tuple[str, int | None]:
    """``text`` itself, or when longer than :data:`RESPONSE_EXCERPT_CHARS` its head and tail joined
    by a marker saying how much is left out and where the whole is (``log``); with the whole
    length in characters (None when nothing is left out)."""
    if len(text) <= RESPONSE_EXCERPT_CHARS:
        return text, None
    half = RESPONSE_EXCERPT_CHARS // 2
    where = f": the whole answer is in {log}" if log else ""
    marker = f"\n[… {len(text) - 2 * half:,} characters not shown{where} …]\n"
    return text[:half] + marker + text[-half:], len(text)


def excerpt_marker(excerpt: str | None, whole_chars: int | None) -> str | None:
    """The marker line :func:`response_excerpt` put in ``excerpt`` (``whole_chars`` being the length
    it recorded), or None when nothing was left out."""
    half = RESPONSE_EXCERPT_CHARS // 2
    if excerpt is None or whole_chars is None or len(excerpt) <= 2 * half:
        return None
    return excerpt[half : len(excerpt) - half].strip("\n")
