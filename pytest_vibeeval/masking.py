"""Which values are secrets, and the forms a secret takes in text, so that every output can mask
them as CI systems mask theirs.

A secret is a value of a secret-looking variable of the controller's environment (a name that
holds ``KEY``, ``TOKEN``, ``SECRET`` or ``PASSWORD``, which covers ``VIBE_SECRET_*``, or one of
the names given, such as an HTTP configuration's ``api_key_env``), at least
:data:`MIN_MASKED_LENGTH` characters long: shorter values (``1``, ``true``, ``dev``) would mask
ordinary words everywhere. Each secret is masked as it is and in its common encodings: base64,
URL-encoded, upper- and lower-cased, JSON- and HTML-escaped, and split across a line break.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from urllib.parse import quote, quote_plus

from .positional_io import write_all_at

SECRET_NAME_GLOBS = ("*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*")
MIN_MASKED_LENGTH = 6
MASK = "[secret]"
_LINE_BREAK = r"(?:\r?\n)?"


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
    """``secret`` and, when it is long enough to mask, the forms it commonly takes in text."""
    if len(secret) < MIN_MASKED_LENGTH:
        return {secret} if secret else set()
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
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        text = encode(raw).decode("ascii")
        forms.update((text, text.rstrip("=")))
    return forms


def _form_pattern(form: str) -> str:
    """``form`` as a regular expression; a long one may be split by a line break anywhere."""
    if len(form) < MIN_MASKED_LENGTH:
        return re.escape(form)
    return _LINE_BREAK.join(re.escape(char) for char in form)


@functools.lru_cache(maxsize=16)
def secrets_pattern(secrets: frozenset[str]) -> re.Pattern[str] | None:
    """One pattern for every form of every secret, the longest forms first (None: no secrets)."""
    forms = {form for secret in secrets for form in encoded_forms(secret)}
    if not forms:
        return None
    ordered = sorted(forms, key=lambda form: (-len(form), form))
    return re.compile("|".join(_form_pattern(form) for form in ordered))


def mask(text: str, secrets: frozenset[str]) -> str:
    """``text`` with every form of every secret replaced by :data:`MASK`."""
    pattern = secrets_pattern(secrets)
    if pattern is None or not text:
        return text
    return pattern.sub(MASK, text)


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
