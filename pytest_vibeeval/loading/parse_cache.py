"""Parsed suites kept for the next session: the data and line numbers of a suite file, written to a
folder of pytest's cache (``.pytest_cache/d/vibeeval-parsed``, wherever ``cache_dir`` puts it) and
taken instead of parsing again when the same text is read by the same parser. YAML parsing is
about half of what reading a suite costs, paid by every session and every xdist worker.

The folder is pytest's: ``--cache-clear`` empties it, ``-p no:cacheprovider`` turns the kept
parses off, and nothing is ever written beside the suites (a run leaves the evals tree as it was).
One entry per suite file (named by a digest of its absolute path), replaced when its text changes.

An entry is used only when its header says it was made from the very text just read (a digest)
by the same parser (:func:`parser_fingerprint`), and its payload's digest, checked before the
payload is unpacked, matches: ``marshal`` is never handed bytes this module did not write whole.
Anything else is a miss, parsed anew and replaced; a folder that cannot be written is left alone
without a word. An entry has the permission bits of its suite (a suite only its owner may read
can hold a secret).

The folder is kept bounded (a suite renamed, moved or deleted leaves its entry behind): the first
write of a session (a miss) keeps the most recently written entries that fit in
:data:`MAX_ENTRIES` and :data:`MAX_FOLDER_BYTES`, removes the others, and removes the temporary
files of writers killed mid-write (older than :data:`LEFT_BEHIND_SECONDS`). Once a session: a look
at every entry for each of a session's many misses (a new checkout) would cost their square."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import marshal
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .. import __version__
from ..atomic_files import temporary_target, write_atomic
from ..bounded_read import UnreadableFile, read_bounded
from ..filenames import name_part

_ENTRY_END = ".parsed"  # every entry's, whatever Python made it (SUFFIX names this one's)
SUFFIX = f".{sys.implementation.cache_tag}{_ENTRY_END}"
MAX_ENTRY_BYTES = 512 * 2**20  # an entry larger than this is neither written nor read
MAX_ENTRIES = 4096  # entries kept in the folder at most (the one just written always stays)
MAX_FOLDER_BYTES = 512 * 2**20  # bytes of entries kept in the folder at most (the same)
LEFT_BEHIND_SECONDS = 3600.0  # a temporary file this old was left by a writer that was killed
_MAGIC = b"vibeeval-parsed\x01"
_FINGERPRINT_BYTES = 16
_TEXT_DIGEST_BYTES = 20
_PAYLOAD_DIGEST_BYTES = 32
_HEADER_BYTES = len(_MAGIC) + _FINGERPRINT_BYTES + _TEXT_DIGEST_BYTES + _PAYLOAD_DIGEST_BYTES

Parsed = tuple[Any, dict[Any, int], set[Any], list[tuple[Any, str]] | None]
"""A document's data, lines, numbers read as text and templated values (see ``Document``)."""


def _module_stamp() -> str:
    """This package's version and the size and time of the parsing modules' files: an editable
    install whose parsing code changed makes entries of its own."""
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
    """A constructor's identity that holds across processes: its module, name and code location
    (two lambdas of one module differ by their line)."""
    code = getattr(function, "__code__", None)
    where = f"@{code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    inner = getattr(function, "func", None)  # a functools.partial
    if inner is not None:
        return f"partial({_callable_name(inner)}, {function.args!r}, {function.keywords!r})"
    name = getattr(function, "__qualname__", repr(function))
    return f"{getattr(function, '__module__', '?')}.{name}{where}"


_last_fingerprint: tuple[tuple[Any, ...], bytes] | None = None  # the parser's state and its fingerprint


def parser_fingerprint(loader: type[Any], limits: tuple[int, ...]) -> bytes:
    """What the parse of a text depends on besides the text: the code that parses, PyYAML and
    libyaml, ``loader``'s implicit resolvers (patterns and flags) and constructors (a plugin may add
    its own to PyYAML's safe loader), the parser's ``limits`` (nodes, depth: a lowered limit must
    refuse what an entry made under a higher one holds) and the digits Python accepts in an int.

    Made again only when the loader's tables or the limits differ from the last call's (a session
    reads many suites with one parser; making it costs about as much as reading a small entry)."""
    global _last_fingerprint
    state = _parser_state(loader, limits)
    try:
        same = _last_fingerprint is not None and _last_fingerprint[0] == state
    except Exception:  # a plugin's constructor whose == raises: made again
        same = False
    if same and _last_fingerprint is not None:
        return _last_fingerprint[1]
    value = _fingerprint(loader, limits)
    _last_fingerprint = (state, value)
    return value


def _parser_state(loader: type[Any], limits: tuple[int, ...]) -> tuple[Any, ...]:
    """A snapshot of what :func:`_fingerprint` reads that may change while a session runs (a
    plugin adds a constructor or a resolver to the loader in place): equal snapshots, equal
    fingerprints. It holds the tables' callables themselves, so none can be replaced by another
    at the same address."""
    return (
        loader,
        loader.__mro__,
        limits,
        sys.get_int_max_str_digits(),
        bool(getattr(loader, "yaml_path_resolvers", None)),
        {first: tuple(entries) for first, entries in loader.yaml_implicit_resolvers.items()},
        dict(loader.yaml_constructors),
        dict(loader.yaml_multi_constructors),
    )


def _fingerprint(loader: type[Any], limits: tuple[int, ...]) -> bytes:
    resolvers = sorted(
        (first or "", tag, getattr(pattern, "pattern", repr(pattern)), getattr(pattern, "flags", 0))
        for first, entries in loader.yaml_implicit_resolvers.items()
        for tag, pattern in entries
    )
    constructors = sorted(
        (kind, str(tag), _callable_name(function))
        for kind, table in (("one", loader.yaml_constructors), ("multi", loader.yaml_multi_constructors))
        for tag, function in table.items()
    )
    parts = (
        _STAMP,
        yaml.__version__,
        getattr(yaml, "__with_libyaml__", False),
        getattr(yaml, "_yaml", None) and getattr(yaml._yaml, "get_version_string", lambda: "")(),
        [_callable_name(base) for base in loader.__mro__],
        bool(getattr(loader, "yaml_path_resolvers", None)),
        resolvers,
        constructors,
        limits,
        sys.get_int_max_str_digits(),
    )
    text = repr(parts).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=_FINGERPRINT_BYTES).digest()


def text_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=_TEXT_DIGEST_BYTES).digest()


def _payload_digest(payload: bytes) -> bytes:
    return hashlib.blake2b(payload, digest_size=_PAYLOAD_DIGEST_BYTES).digest()


class ParseStore:
    """The folder parsed suites are kept in, made when first used: ``folder`` returns it (making it,
    as ``config.cache.mkdir`` does) or raises OSError, and then nothing is kept this session."""

    def __init__(self, folder: Callable[[], Path]) -> None:
        self._make_folder = folder
        self._tidied = False  # by this session's first write (see tidy)

    @functools.cached_property
    def folder(self) -> Path | None:
        try:
            return self._make_folder()
        except (OSError, ValueError):
            return None

    def entry_path(self, path: Path) -> Path | None:
        """Where the parse of the suite at ``path`` is kept (None: nowhere this session)."""
        if self.folder is None:
            return None
        key = hashlib.blake2b(os.fsencode(os.path.abspath(path)), digest_size=16).hexdigest()
        return self.folder / f"{name_part(path.name, 100)}-{key}{SUFFIX}"

    def read(self, path: Path, fingerprint: bytes, digest: bytes) -> Parsed | None:
        """The parse kept for ``path`` from the text of ``digest`` by the parser of ``fingerprint``,
        or None (a miss, whatever the reason)."""
        entry = self.entry_path(path)
        if entry is None:
            return None
        try:
            blob = read_bounded(entry, MAX_ENTRY_BYTES)
        except (OSError, UnreadableFile):
            return None
        header, payload = blob[:_HEADER_BYTES], blob[_HEADER_BYTES:]
        if header != _MAGIC + fingerprint + digest + _payload_digest(payload):
            return None
        try:
            kept = marshal.loads(payload)
        except (ValueError, EOFError, TypeError, MemoryError):  # whole, yet not what this module wrote
            return None
        if not (isinstance(kept, tuple) and len(kept) == 4):
            return None
        data, lines, numbers, templated = kept
        if not isinstance(lines, dict) or not isinstance(numbers, set):
            return None
        if templated is not None and not isinstance(templated, list):
            return None
        return data, lines, numbers, templated

    def write(self, path: Path, fingerprint: bytes, digest: bytes, parsed: Parsed) -> None:
        """Keep ``parsed`` for ``path``, with the suite's permission bits; nothing where the data holds
        what ``marshal`` cannot write (a YAML date) or the folder cannot be written."""
        entry = self.entry_path(path)
        if entry is None:
            return
        try:
            payload = marshal.dumps(parsed)
        except ValueError:  # a date or another value marshal does not know
            return
        if len(payload) + _HEADER_BYTES > MAX_ENTRY_BYTES:
            return
        blob = _MAGIC + fingerprint + digest + _payload_digest(payload) + payload
        with contextlib.suppress(OSError, ValueError):
            mode = stat.S_IMODE(os.stat(path).st_mode) & 0o666
            write_atomic(entry, blob, mode=mode)
            if not self._tidied:
                self._tidied = True
                tidy(entry.parent, keep=entry.name)


def tidy(folder: Path, keep: str, now: float | None = None) -> None:
    """Bound ``folder``: keep ``keep`` (the entry just written) and the most recently written other
    entries that fit in :data:`MAX_ENTRIES` and :data:`MAX_FOLDER_BYTES`, remove the others and
    the temporary files of killed writers. Other files, links, and anything that changes meanwhile
    are left alone: another session may be tidying too, and a removed entry costs a parse only."""
    now = time.time() if now is None else now
    entries: list[tuple[float, int, str]] = []
    with contextlib.suppress(OSError), os.scandir(folder) as found:
        for item in found:
            with contextlib.suppress(OSError):
                if not item.is_file(follow_symlinks=False):
                    continue
                if item.name.endswith(_ENTRY_END):
                    if item.name != keep:
                        info = item.stat(follow_symlinks=False)
                        entries.append((info.st_mtime, info.st_size, item.name))
                elif (temporary_target(item.name) or "").endswith(_ENTRY_END) and (
                    now - item.stat(follow_symlinks=False).st_mtime > LEFT_BEHIND_SECONDS
                ):
                    os.unlink(item.path)
    with contextlib.suppress(OSError):
        count, size = 1, os.stat(folder / keep).st_size
        for _, entry_size, name in sorted(entries, reverse=True):  # the newest first, each kept if it fits
            if count < MAX_ENTRIES and size + entry_size <= MAX_FOLDER_BYTES:
                count, size = count + 1, size + entry_size
                continue
            with contextlib.suppress(OSError):
                os.unlink(folder / name)
