"""The controller's records kept as their JSON in an unnamed temporary file (the spool) until the
session's end, and read back one at a time: a parsed record costs several times its JSON, and the
controller would otherwise hold one per item for the whole session (about 4.5 KB each)."""

from __future__ import annotations

import tempfile
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, TypeVar, overload

from ..positional_io import read_exactly_at, write_all_at
from ..results import EvalRecord

T = TypeVar("T")
E = Any  # what an OnDemand sequence keeps per item


class RecordSpool:
    """Records' JSON texts, appended to an unnamed temporary file (made at the first write, gone
    with the process) and read back by the index :meth:`add` returned.

    Texts are gathered in memory and written a chunk at a time: a write on the controller releases
    the interpreter lock, and getting it back from xdist's receiving threads cost more than the
    write itself. Where no file can be made or written (a full or read-only temporary folder), the
    texts stay in memory from there on: still a fraction of the parsed records, and none is lost."""

    CHUNK = 1 << 16  # bytes gathered before a write

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._ends = array("q")  # where each text ends; the next one starts there
        self._written = 0  # bytes in the file, always whole texts; the rest are in _pending
        self._pending = bytearray()
        self._in_memory = False  # the file failed: everything from _written on stays in _pending
        self._parsed: dict[int, EvalRecord] = {}  # records kept parsed (see keep_read), by index
        self._block = b""  # the file's bytes read last, from _block_start on (see _from_file)
        self._block_start = 0
        # Keep each record read from now on, parsed: set where they would otherwise be parsed
        # several times over (see Aggregator.runs).
        self.keep_read = False

    def add(self, text: str) -> int:
        """Append one record's JSON (as :meth:`EvalRecord.model_dump_json` wrote it); its index."""
        self._pending += text.encode()
        self._ends.append(self._written + len(self._pending))
        if len(self._pending) >= self.CHUNK and not self._in_memory:
            self._write_pending()
        return len(self._ends) - 1

    def _write_pending(self) -> None:
        try:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="vibeeval-records-", buffering=0)  # noqa: SIM115 (kept open)
            write_all_at(self._file.fileno(), self._pending, self._written)
        except OSError:
            self._in_memory = True
            return
        self._written += len(self._pending)
        self._pending.clear()

    def read(self, index: int) -> EvalRecord:
        """The record at ``index``, parsed anew, or as parsed before since :attr:`keep_read` was set."""
        kept = self._parsed.get(index)
        if kept is not None:
            return kept
        start = self._ends[index - 1] if index else 0
        end = self._ends[index]
        if start >= self._written:
            data = bytes(self._pending[start - self._written : end - self._written])
        else:
            data = self._from_file(start, end)
        record = EvalRecord.model_validate_json(data)
        if self.keep_read:
            self._parsed[index] = record
        return record

    def _from_file(self, start: int, end: int) -> bytes:
        """The file's bytes from ``start`` to ``end``, out of a block of at least :attr:`CHUNK`
        bytes read at once: the session's end reads the records about in the order they came, and
        a read per record was a system call per eval."""
        block, at = self._block, self._block_start
        if not (at <= start and end <= at + len(block)):
            assert self._file is not None
            size = min(max(end - start, self.CHUNK), self._written - start)
            block = self._block = read_exactly_at(self._file.fileno(), start, size)
            at = self._block_start = start
        return block[start - at : end - at]

    def resolve(self, entry: EvalRecord | int) -> EvalRecord:
        """``entry`` itself, or the record at that index."""
        return self.read(entry) if isinstance(entry, int) else entry


class OnDemand(Sequence[T]):
    """A sequence of models each made from a small entry when it is asked for, never kept: what a
    ``RunRecord``'s ``evals`` (records, or their indexes in a :class:`RecordSpool`) and
    ``eval_stats`` (their counts) hold on the controller, so that the session's records and stats
    are never all in memory at once. Compares equal to a list of the same items."""

    __slots__ = ("_entries", "_make", "_text")

    def __init__(
        self, entries: list[E], make: Callable[[E], T], text: Callable[[E], str] | None = None
    ) -> None:
        """``text`` (optional): an entry's item as ``model_json(item, indent=2)`` writes it, made
        without the item (see :meth:`texts`)."""
        self._entries = entries
        self._make = make
        self._text = text

    def texts(self) -> Iterator[str] | None:
        """Each item's JSON (indented by 2), where the sequence can make it without the item; else None."""
        return None if self._text is None else map(self._text, self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._make(entry) for entry in self._entries[index]]
        return self._make(self._entries[index])

    def __iter__(self) -> Iterator[T]:
        return map(self._make, self._entries)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # like a list

    def __repr__(self) -> str:
        return repr(list(self))
