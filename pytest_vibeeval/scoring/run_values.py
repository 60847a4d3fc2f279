"""A run's variables as the controller keeps them: the per-eval ones (thirteen per eval, each a
name such as ``e7_latency`` and a value) as one tuple of values per eval, their names made when
asked for; the same mapping, in the same order, as the dict they were made from."""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView

Value = float | None


class RunValues(Mapping[str, Value]):
    """``values`` (as :func:`variables.compute_variables` made them: the run-wide variables first,
    then each eval's, then the checks' scores) with every run of consecutive entries named
    ``<eval><suffix>`` for each of ``suffixes`` in order kept as the eval's name and a tuple of
    values. What does not follow that layout stays as it is, so iterating gives the same items in
    the same order as ``values``."""

    __slots__ = ("_evals", "_head", "_index", "_suffixes", "_tail")

    def __init__(self, values: Mapping[str, Value], suffixes: Sequence[str], head: int) -> None:
        """``head``: how many of the first entries are not per-eval (the run-wide variables)."""
        self._suffixes = tuple(suffixes)
        items = list(values.items())
        self._head = dict(items[:head])
        self._evals: list[tuple[str, tuple[Value, ...]]] = []
        index, width = head, len(self._suffixes)
        while index + width <= len(items) and width:
            first = items[index][0]
            if not first.endswith(self._suffixes[0]):
                break
            name = first[: len(first) - len(self._suffixes[0])]
            block = items[index : index + width]
            if any(key != name + suffix for (key, _), suffix in zip(block, self._suffixes, strict=True)):
                break
            self._evals.append((name, tuple(value for _, value in block)))
            index += width
        self._tail = dict(items[index:])
        self._index: dict[str, int] | None = None  # eval name → its position, made at a first lookup

    @classmethod
    def from_parts(
        cls,
        head: dict[str, Value],
        evals: list[tuple[str, tuple[Value, ...]]],
        suffixes: Sequence[str],
        tail: dict[str, Value],
    ) -> RunValues:
        """The values laid out already: ``head``, each eval's name and tuple of values (one per
        suffix; every name they make distinct and none in ``head`` or ``tail``), then ``tail``."""
        kept = cls({}, suffixes, 0)
        kept._head, kept._evals, kept._tail = head, evals, tail
        return kept

    def eval_names(self) -> Iterator[str]:
        """The names of the per-eval values, in order."""
        for name, _ in self._evals:
            for suffix in self._suffixes:
                yield name + suffix

    def locate(self, key: str) -> tuple[int, int] | None:
        """Where the per-eval value named ``key`` is: its eval's position and its suffix's, or None."""
        if self._index is None:
            self._index = {name: position for position, (name, _) in enumerate(self._evals)}
        for position, suffix in enumerate(self._suffixes):
            found = self._index.get(key[: len(key) - len(suffix)]) if key.endswith(suffix) else None
            if found is not None:
                return found, position
        return None

    def __iter__(self) -> Iterator[str]:
        yield from self._head
        for name, _ in self._evals:
            for suffix in self._suffixes:
                yield name + suffix
        yield from self._tail

    def pairs(self) -> Iterator[tuple[str, Value]]:
        """The items in order, without a lookup each."""
        yield from self._head.items()
        for name, values in self._evals:
            for suffix, value in zip(self._suffixes, values, strict=True):
                yield name + suffix, value
        yield from self._tail.items()

    def items(self) -> ItemsView[str, Value]:
        return _Items(self)

    def values(self) -> ValuesView[Value]:
        return _Values(self)

    def __len__(self) -> int:
        return len(self._head) + len(self._evals) * len(self._suffixes) + len(self._tail)

    def __getitem__(self, key: str) -> Value:
        if key in self._head:
            return self._head[key]
        if key in self._tail:
            return self._tail[key]
        found = self.locate(key)
        if found is None:
            raise KeyError(key)
        return self._evals[found[0]][1][found[1]]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(self.pairs()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]  # like a dict

    def __repr__(self) -> str:
        return repr(dict(self.pairs()))


class _Items(ItemsView[str, Value]):
    def __init__(self, values: RunValues) -> None:
        super().__init__(values)
        self._run_values = values

    def __iter__(self) -> Iterator[tuple[str, Value]]:
        return self._run_values.pairs()


class _Values(ValuesView[Value]):
    def __init__(self, values: RunValues) -> None:
        super().__init__(values)
        self._run_values = values

    def __iter__(self) -> Iterator[Value]:
        return (value for _, value in self._run_values.pairs())
