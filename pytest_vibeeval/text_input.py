"""Text files people write (suites, configurations, datasets, prompt files, schemas) are UTF-8: the
byte-order mark some editors put first is dropped, line ends become ``\\n``, and a file in another
encoding is refused, saying where, and naming UTF-16 and UTF-32 (what Windows tools call
"Unicode") when it is one of them."""

from __future__ import annotations

import codecs
from pathlib import Path

from .bounded_read import read_bounded

UTF8_HINT = 'save the file as UTF-8 (an editor\'s "Save with encoding"); it may be Latin-1 or Windows-1252'
WIDE_HINT = (
    'save the file as UTF-8: an editor\'s "Save with encoding", or in PowerShell '
    "`Set-Content -Encoding utf8` (`>` and `Out-File` write UTF-16 in Windows PowerShell)"
)
_BOMS = (  # the UTF-32 marks first: UTF-32LE's starts with UTF-16LE's
    (codecs.BOM_UTF32_LE, "UTF-32 (little-endian)"),
    (codecs.BOM_UTF32_BE, "UTF-32 (big-endian)"),
    (codecs.BOM_UTF16_LE, "UTF-16 (little-endian)"),
    (codecs.BOM_UTF16_BE, "UTF-16 (big-endian)"),
)
WIDE_PEEK = 64  # the bytes of its start wide_encoding looks at (for UTF-16 without a byte-order mark)


class NotUtf8(ValueError):
    """The bytes are not UTF-8 text: ``message`` says how, ``line`` (1-based) where, ``hint`` what to do."""

    def __init__(self, message: str, line: int, hint: str) -> None:
        super().__init__(message, line, hint)
        self.message, self.line, self.hint = message, line, hint

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def wide_encoding(data: bytes) -> str | None:
    """``UTF-16 (little-endian)`` and the like when ``data`` (or its first :data:`WIDE_PEEK` bytes)
    is UTF-16 or UTF-32 text: it starts with their byte-order mark, or (UTF-16 without one) every
    other byte of its start is NUL."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return f"{name}, with a byte-order mark"
    head = data[:WIDE_PEEK]
    if len(head) < 4:
        return None
    for zeros, text, endian in ((head[1::2], head[0::2], "little"), (head[0::2], head[1::2], "big")):
        if not zeros.strip(b"\0") and b"\0" not in text:
            return f"UTF-16 ({endian}-endian), without a byte-order mark"
    return None


def decode_text(data: bytes, errors: str = "strict") -> str:
    """``data`` as text: UTF-8 without its byte-order mark, line ends ``\\n`` (``\\r\\n`` and a lone
    ``\\r`` as ``Path.read_text`` reads them); :class:`NotUtf8` when it is not UTF-8, unless
    ``errors`` is ``"replace"`` (what an agent printed): then each byte that is not becomes U+FFFD."""
    if errors != "strict":
        return line_feeds(data.decode("utf-8-sig", errors))
    wide = wide_encoding(data)
    if wide is not None:
        raise NotUtf8(f"the file is {wide}, not UTF-8", 1, WIDE_HINT)
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = str(memoryview(data)[bom:], "utf-8")
    except UnicodeDecodeError as exc:
        at = bom + exc.start  # of the file: the decoder counted from after the byte-order mark
        raise NotUtf8(f"not UTF-8 text: {exc.reason} at byte {at}", _line_at(data, at), UTF8_HINT) from None
    return line_feeds(text)


def line_feeds(text: str) -> str:
    """``text`` with its line ends as ``\\n``: ``\\r\\n`` and a lone ``\\r`` as ``Path.read_text``
    reads them."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def text_lines(text: str) -> list[str]:
    """``text``'s lines as the checks see them: split at ``\\n`` alone, after :func:`line_feeds`
    (a last line end ends the last line, as with ``str.splitlines``). The other characters
    ``str.splitlines`` breaks at (``\\x0b``, ``\\x0c``, ``\\x1c``–``\\x1e``, U+0085, U+2028, U+2029)
    stay in their line, where the terminal and the HTML report show them escaped."""
    return line_feeds(text).removesuffix("\n").split("\n")


def first_line(text: str) -> str:
    """``text_lines(text)[0]`` without splitting (or copying) the rest of ``text``: what comes
    before its first ``\\n`` or ``\\r``."""
    end = text.find("\n")
    if end < 0:
        end = len(text)
    carriage = text.find("\r", 0, end)
    return text[: end if carriage < 0 else carriage]


def read_input_text(path: Path, limit: int) -> str:
    """The text (:func:`decode_text`) of the regular file at ``path`` of at most ``limit`` bytes;
    :class:`NotUtf8`, or what :func:`~pytest_vibeeval.bounded_read.read_bounded` raises."""
    return decode_text(read_bounded(path, limit))


def _line_at(data: bytes, offset: int) -> int:
    """The 1-based line of the byte at ``offset``, line ends counted as ``\\n``, ``\\r\\n`` or ``\\r``."""
    before = data[:offset]
    return before.count(b"\n") + before.count(b"\r") - before.count(b"\r\n") + 1
