"""Which values are secrets, and the forms a secret takes in text, so that every output can mask
them as CI systems mask theirs.

A secret is a value of a secret-looking variable of the controller's environment (a name that
holds ``KEY``, ``TOKEN``, ``SECRET`` or ``PASSWORD``, which covers ``VIBE_SECRET_*``, or one of
the names given, such as an HTTP configuration's ``api_key_env``), at least
:data:`MIN_MASKED_LENGTH` characters long: shorter values (``1``, ``true``, ``dev``) would mask
ordinary words everywhere. Each secret is masked as it is and in its common encodings: base64
(also inside longer base64, as CI systems do), URL-encoded, upper- and lower-cased, JSON- and
HTML-escaped, and split across a line break.

An excerpt cut before it is masked (an error body's first 300 characters, a log's tail) can end or
start inside a secret; every cut is marked with :data:`CUT` (:func:`keep_start`,
:func:`keep_end`), and a part of a secret at least :data:`MIN_FRAGMENT` characters long beside
that mark is masked too.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from urllib.parse import quote, quote_plus

from .positional_io import write_all_at

SECRET_NAME_GLOBS = ("*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*")
MIN_MASKED_LENGTH = 6
MASK = "[secret]"
CUT = "…"  # where an excerpt was cut: see keep_start, keep_end
MIN_FRAGMENT = 4  # characters of a secret beside a cut that are masked
_LINE_BREAK = r"(?:\r\n?|\n)?"


def is_secret_name(name: str, names: Iterable[str] = ()) -> bool:
    """Whether the variable ``name`` holds a secret: it looks like one (case-insensitive), or is
    one of ``names``."""
    return name in names or _looks_secret(name)


@functools.lru_cache(maxsize=4096)
def _looks_secret(name: str) -> bool:
    # Cached: the environment is scanned again for every item (a conftest may export late), and
    # its names hardly change.
    upper = name.upper()
    return any(fnmatchcase(upper, glob) for glob in SECRET_NAME_GLOBS)


def environment_secrets(environ: Mapping[str, str], names: Iterable[str] = ()) -> set[str]:
    """The values of ``environ``'s secret-looking variables (and of ``names``) long enough to mask."""
    names = set(names)
    return {
        value
        for name, value in environ.items()
        if len(value) >= MIN_MASKED_LENGTH and is_secret_name(name, names)
    }


class EnvironmentWatch:
    """:func:`environment_secrets` of a live environment, scanned again only when it changed.

    The environment is looked at as every item starts (a conftest may export a secret late), and
    decoding every variable of ``os.environ`` each time costs more than an eval's own checks; its
    raw byte mapping compares in microseconds."""

    def __init__(self) -> None:
        self._seen: dict[bytes, bytes] | None = None
        self._names: frozenset[str] = frozenset()

    def secrets(self, environ: Mapping[str, str], names: Iterable[str] = ()) -> set[str] | None:
        """The secrets of ``environ`` (and of ``names``), or None when neither changed since the
        last call."""
        names = frozenset(names)
        raw = getattr(environ, "_data", None)  # os.environ's undecoded variables
        if not isinstance(raw, dict):
            return environment_secrets(environ, names)
        seen = self._seen
        if seen is not None and names == self._names:
            # pytest changes PYTEST_CURRENT_TEST for every phase of every item: not a change here
            if _CURRENT_TEST in raw:
                seen[_CURRENT_TEST] = raw[_CURRENT_TEST]
            else:
                seen.pop(_CURRENT_TEST, None)
            if raw == seen:
                return None
        self._seen, self._names = dict(raw), names
        return environment_secrets(environ, names)


_CURRENT_TEST = b"PYTEST_CURRENT_TEST"  # os.environ's raw keys are bytes on POSIX


def encoded_forms(secret: str) -> set[str]:
    """``secret`` and the forms it commonly takes in text; none when it is too short to mask."""
    if len(secret) < MIN_MASKED_LENGTH:
        return set()
    raw = secret.encode("utf-8")
    forms = {
        secret,
        secret.upper(),
        secret.lower(),
        quote(secret, safe=""),
        quote_plus(secret),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        html.escape(secret),
    }
    forms.update(_lower_hex(form) for form in (quote(secret, safe=""), quote_plus(secret)))
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        text = encode(raw).decode("ascii")
        forms.update((text, text.rstrip("=")))
        forms.update(inner for inner in _base64_inner(raw, encode) if len(inner) >= MIN_MASKED_LENGTH)
    return forms


def _lower_hex(text: str) -> str:
    """URL-encoded ``text`` with its escapes in lowercase hex (``%2f``), as some encoders write."""
    return re.sub(r"%[0-9A-F]{2}", lambda escape: escape[0].lower(), text)


def _base64_inner(raw: bytes, encode: Callable[[bytes], bytes]) -> list[str]:
    """The base64 characters that depend on ``raw`` alone when it starts 0, 1 or 2 bytes into the
    encoded data (``user:KEY`` in Basic auth, ``Bearer KEY``) and more may follow: CI masking's
    three alignments."""
    inner = []
    for offset, skip in ((0, 0), (1, 2), (2, 3)):
        size = offset + len(raw)
        end = size // 3 * 4 + (0, 1, 2)[size % 3]  # a last partial group's characters that are raw's
        inner.append(encode(bytes(offset) + raw).decode("ascii")[skip:end])
    return inner


def _form_pattern(form: str) -> str:
    """``form`` as a regular expression: it may be split by a line break anywhere."""
    return _LINE_BREAK.join(re.escape(char) for char in form)


def keep_start(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text``, and :data:`CUT` when that is not all of it."""
    return text if len(text) <= limit else text[:limit] + CUT


def keep_end(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text``, after :data:`CUT` when that is not all of it."""
    return text if len(text) <= limit else CUT + text[-limit:]


@dataclass(frozen=True)
class _Masker:
    """The compiled search for every form of the secrets to mask."""

    pattern: re.Pattern[str]
    forms: tuple[str, ...]
    starts: re.Pattern[str]  # any form's first MIN_FRAGMENT characters: a cheap test before the scan
    ends: re.Pattern[str]  # any form's last MIN_FRAGMENT characters
    reach: int  # the longest form's length less one: how far from a cut a part of one can start


@functools.lru_cache(maxsize=16)
def _masker(secrets: frozenset[str]) -> _Masker | None:
    """Every form of every secret, and one pattern of them, the longest first (None: no secrets)."""
    forms = {form for secret in secrets for form in encoded_forms(secret)}
    if not forms:
        return None
    ordered = sorted(forms, key=lambda form: (-len(form), form))
    # MASK first, replaced by itself: text masked before is never masked again ("[s[secret]cr…").
    alternatives = [re.escape(MASK), *(_form_pattern(form) for form in ordered)]
    starts = re.compile("|".join(sorted({re.escape(form[:MIN_FRAGMENT]) for form in ordered})))
    ends = re.compile("|".join(sorted({re.escape(form[-MIN_FRAGMENT:]) for form in ordered})))
    return _Masker(re.compile("|".join(alternatives)), tuple(ordered), starts, ends, len(ordered[0]) - 1)


def mask(text: str, secrets: frozenset[str]) -> str:
    """``text`` with every form of every secret replaced by :data:`MASK`, and a part of one left
    beside a :data:`CUT` too."""
    masker = _masker(secrets)
    if masker is None or not text:
        return text
    text = masker.pattern.sub(MASK, text)
    return _mask_cut_parts(text, masker) if CUT in text else text


def _mask_cut_parts(text: str, masker: _Masker) -> str:
    """``text`` with a secret's start that ends just before a :data:`CUT`, and a secret's end just
    after one, masked (a line break may stand between: ``…\n`` starts a log's tail)."""
    pieces = text.split(CUT)
    last = len(pieces) - 1
    for index, piece in enumerate(pieces):
        # An ellipsis the text wrote itself is a cut too; the pre-tests keep it cheap.
        if index < last:
            body = piece.removesuffix("\n")
            size = 0
            if masker.starts.search(body, max(0, len(body) - masker.reach)):
                size = max(_start_of_form_at_end(body, form) for form in masker.forms)
            if size:
                piece = body[:-size] + MASK + piece[len(body) :]
        if index > 0:
            body = piece.removeprefix("\n")
            size = 0
            if masker.ends.search(body, 0, masker.reach):
                size = max(_end_of_form_at_start(body, form) for form in masker.forms)
            if size:
                piece = piece[: len(piece) - len(body)] + MASK + body[size:]
        pieces[index] = piece
    return CUT.join(pieces)


def _start_of_form_at_end(text: str, form: str) -> int:
    """The length of the longest start of ``form`` (at least :data:`MIN_FRAGMENT` characters, not
    all of it) that ``text`` ends with; 0 if none."""
    window = text[-(len(form) - 1) :]
    key = form[:MIN_FRAGMENT]
    at = window.find(key)
    while at != -1:
        if form.startswith(window[at:]):
            return len(window) - at
        at = window.find(key, at + 1)
    return 0


def _end_of_form_at_start(text: str, form: str) -> int:
    """The length of the longest end of ``form`` (at least :data:`MIN_FRAGMENT` characters, not
    all of it) that ``text`` starts with; 0 if none."""
    window = text[: len(form) - 1]
    key = form[-MIN_FRAGMENT:]
    end = window.rfind(key)
    while end != -1:
        if form.endswith(window[: end + MIN_FRAGMENT]):
            return end + MIN_FRAGMENT
        end = window.rfind(key, 0, end + MIN_FRAGMENT - 1)
    return 0


MASKED_FILE_LIMIT = 1 << 26  # bytes: a prompt file larger than this is not one the plugin wrote


def mask_file(path: Path, secrets: Iterable[str]) -> None:
    """Rewrite the text file ``path`` with its secrets masked (nothing when it is not there or
    holds none): a copy kept for people once the program that needed the raw values is done.

    The agent could have replaced the file: only the regular file itself is rewritten, through
    the descriptor it was read from. A symlink (never followed), a file with other hard links, a
    FIFO or device, or a file grown past any prompt is no longer the copy the plugin wrote, and is
    left alone: rewriting it could change a file outside the workspace."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # missing, a symlink, a folder, not writable
        return
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_size > MASKED_FILE_LIMIT:
            return
        data = os.pread(fd, info.st_size + 1, 0)
        text = data.decode("utf-8", "surrogateescape")
        masked = mask(text, frozenset(secrets))
        if masked != text:
            os.ftruncate(fd, 0)
            write_all_at(fd, masked.encode("utf-8", "surrogateescape"), 0)
    except OSError:
        return
    finally:
        os.close(fd)
