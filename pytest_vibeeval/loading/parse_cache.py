"""Parsed input files kept beside them, as Python keeps compiled modules: the data and line numbers
of a suite or config file are written to ``__pycache__/<name>.vibeeval-<python>.parsed`` next to it
(under ``sys.pycache_prefix`` where that is set), and a later session that reads the same text with
the same parser takes them from there instead of parsing again (YAML parsing is most of what
reading a suite costs). Like bytecode, nothing is written where ``sys.dont_write_bytecode`` is set
(``PYTHONDONTWRITEBYTECODE``, ``-B``), and the file may be deleted at any time.

An entry is used only when it was made from the very text just read (its digest) by the same
parser: this module's file, the package, PyYAML and libyaml versions, and the YAML loader's
resolvers and constructors as this process has them. Anything else is a miss: an entry that is
missing, unreadable, of another text or parser, or not what this module writes is parsed anew
and replaced; a cache that cannot be written is left alone without a word, as Python leaves a
bytecode file it cannot write."""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from .. import __version__
from ..atomic_files import write_atomic
from ..bounded_read import UnreadableFile, read_bounded

FOLDER = "__pycache__"
SUFFIX = f".vibeeval-{sys.implementation.cache_tag}.parsed"
MAX_ENTRY_BYTES = 512 * 2**20  # an entry larger than this is neither written nor read
_MAGIC = "pytest-vibeeval parsed input 1"


def _module_stamp() -> str:
    """This package's version and the size and time of this module's file: an editable install
    whose parsing code changed makes other entries (the loader is in the same folder)."""
    folder = Path(__file__).parent
    stamps = []
    for name in ("yamlsource.py", "parse_cache.py"):
        try:
            info = os.stat(folder / name)
        except OSError:
            stamps.append(f"{name}:?")
            continue
        stamps.append(f"{name}:{info.st_size}:{info.st_mtime_ns}")
    return f"{__version__} {' '.join(stamps)}"


_STAMP = _module_stamp()


def _callable_name(function: Any) -> str:
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"


def parser_fingerprint(loader: type[Any]) -> str:
    """What the parse of a text depends on besides the text: the code that parses, PyYAML and
    libyaml, and ``loader``'s implicit resolvers and constructors (a plugin may add its own to
    PyYAML's safe loader); the digits Python accepts in an integer."""
    resolvers = sorted(
        (first or "", tag, getattr(pattern, "pattern", repr(pattern)))
        for first, entries in loader.yaml_implicit_resolvers.items()
        for tag, pattern in entries
    )
    constructors = sorted(
        (kind, str(tag), _callable_name(function))
        for kind, table in (
            ("one", loader.yaml_constructors),
            ("multi", loader.yaml_multi_constructors),
        )
        for tag, function in table.items()
    )
    parts = (
        _STAMP,
        yaml.__version__,
        getattr(yaml, "__with_libyaml__", False),
        getattr(yaml, "_yaml", None) and getattr(yaml._yaml, "get_version_string", lambda: "")(),
        _callable_name(loader),
        [_callable_name(base) for base in loader.__mro__],
        bool(getattr(loader, "yaml_path_resolvers", None)),
        resolvers,
        constructors,
        sys.get_int_max_str_digits(),
    )
    return hashlib.blake2b(repr(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def text_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()


def entry_path(path: Path) -> Path:
    """Where the entry of the input file ``path`` goes: ``__pycache__`` beside it, or the folder
    ``sys.pycache_prefix`` keeps for the file's folder (as Python places bytecode)."""
    name = path.name + SUFFIX
    prefix = sys.pycache_prefix
    if prefix:
        folder = os.path.abspath(path.parent)
        return Path(prefix, os.path.splitdrive(folder)[1].lstrip(os.sep), name)
    return path.parent / FOLDER / name


Parsed = tuple[Any, dict[Any, int], set[Any], list[tuple[Any, str]] | None]
"""A document's data, lines, numbers read as text and templated values (see ``Document``)."""


def read_entry(path: Path, fingerprint: str, digest: bytes) -> Parsed | None:
    """The parse kept for ``path`` from the text of ``digest`` by the parser of ``fingerprint``,
    or None (a miss, whatever the reason)."""
    try:
        blob = read_bounded(entry_path(path), MAX_ENTRY_BYTES)
        entry = marshal.loads(blob)
    except (OSError, UnreadableFile, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(entry, tuple) and len(entry) == 7):
        return None
    magic, kept_fingerprint, kept_digest, data, lines, numbers, templated = entry
    if (magic, kept_fingerprint, kept_digest) != (_MAGIC, fingerprint, digest):
        return None
    if not (
        isinstance(lines, dict)
        and isinstance(numbers, set)
        and (templated is None or isinstance(templated, list))
    ):
        return None
    return data, lines, numbers, templated


def write_entry(path: Path, fingerprint: str, digest: bytes, parsed: Parsed) -> None:
    """Keep ``parsed`` for ``path``; nothing where bytecode is not written, where the data holds what
    ``marshal`` cannot write (a YAML date), or where the folder cannot be written."""
    if sys.dont_write_bytecode:
        return
    try:
        blob = marshal.dumps((_MAGIC, fingerprint, digest, *parsed))
    except ValueError:  # a date or another value marshal does not know
        return
    if len(blob) > MAX_ENTRY_BYTES:
        return
    with contextlib.suppress(OSError, ValueError):  # as Python leaves bytecode it cannot write
        write_atomic(entry_path(path), blob)
