"""A named registry of one kind of extension (output parsers, formula presets, run variables):
filled by the built-ins and by plugins through pytest-vibeeval's hooks, read as a mapping."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Names to items; a name can be registered once (a second time is a ValueError)."""

    kind = "entry"  # what the items are, for messages

    def __init__(self) -> None:
        self._items: dict[str, T] = {}

    def _add(self, name: str, item: T) -> None:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)
