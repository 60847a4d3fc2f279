"""The registries of what plugins can add to a session (check types, output parsers, formula
presets, run variables): filled by the built-ins and by plugins through pytest-vibeeval's hooks.

They import nothing of what they hold: every pytest process makes them at configure, and the
built-ins fill them only when a session first reads or adds to them (:meth:`Registry.defer`), so a
run without evals loads no check, parser or formula machinery."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from .check_api import CheckType
    from .providers.parsers import Parser
    from .scoring.variables import RunVariable

T = TypeVar("T")


class Deferred:
    """Fills that run once, when the registry is first used."""

    def __init__(self) -> None:
        self._fills: list[Callable[[], object]] = []

    def defer(self, fill: Callable[[], object]) -> None:
        """Run ``fill`` (it registers entries) when the registry is first read or added to, before
        that read or addition: the entries keep their order, and what they need is imported only
        by a session that uses them."""
        self._fills.append(fill)

    def _fill(self) -> None:
        if self._fills:
            fills, self._fills = self._fills, []
            for fill in fills:
                fill()


class Registry(Deferred, Mapping[str, T], Generic[T]):
    """Names to items; a name can be registered once (a second time is a ValueError)."""

    kind = "entry"  # what the items are, for messages

    def __init__(self) -> None:
        super().__init__()
        self._items: dict[str, T] = {}

    def _add(self, name: str, item: T) -> None:
        self._fill()
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item

    def __getitem__(self, name: str) -> T:
        self._fill()
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        self._fill()
        return iter(self._items)

    def __len__(self) -> int:
        self._fill()
        return len(self._items)


class _CheckGroup:
    """Check types registered by name, imported at the first use of one of them."""

    def __init__(self, load: Callable[[], Sequence[CheckType]]) -> None:
        self.load = load


class CheckRegistry(Deferred):
    """The check types known to a session (built-ins plus those plugins register); by default
    the built-ins alone."""

    def __init__(self, types: Sequence[CheckType] | None = None) -> None:
        super().__init__()
        self._types: dict[str, CheckType | _CheckGroup] = {}
        if types is None:
            from .checks import register_builtin_checks

            register_builtin_checks(self)
            return
        for check_type in types:
            self.register(check_type)

    def register(self, check_type: CheckType) -> None:
        if check_type.name == "or":
            raise ValueError("'or' is reserved: it combines checks and cannot be a check type")
        self._fill()
        if check_type.name in self._types:
            raise ValueError(f"check type {check_type.name!r} is already registered")
        self._types[check_type.name] = check_type

    def register_group(self, names: Sequence[str], load: Callable[[], Sequence[CheckType]]) -> None:
        """Register the check types ``load`` returns under ``names`` (theirs, in its order) now, and
        call ``load`` only when one of them is first looked up: a session whose suites use none of
        them never imports their module."""
        self._fill()
        group = _CheckGroup(load)
        for name in names:
            if name in self._types:
                raise ValueError(f"check type {name!r} is already registered")
            self._types[name] = group

    def _loaded(self, name: str, entry: CheckType | _CheckGroup) -> CheckType:
        if not isinstance(entry, _CheckGroup):
            return entry
        types = entry.load()
        names = [name for name, held in self._types.items() if held is entry]
        if [check_type.name for check_type in types] != names:
            raise ValueError(
                f"check types {names} were registered, their module has {[t.name for t in types]}"
            )
        for check_type in types:
            self._types[check_type.name] = check_type  # keeps its place in the order
        return self._loaded(name, self._types[name])

    def get(self, name: str) -> CheckType | None:
        self._fill()
        entry = self._types.get(name)
        return None if entry is None else self._loaded(name, entry)

    def names(self) -> list[str]:
        self._fill()
        return list(self._types)

    def as_mapping(self) -> Mapping[str, CheckType]:
        self._fill()
        return {name: self._loaded(name, self._types[name]) for name in list(self._types)}


class ParserRegistry(Registry["Parser"]):
    """Output parsers by name: what ``output.parser: NAME`` reads an agent's stdout with (see
    :func:`~pytest_vibeeval.providers.parsers.builtin_parsers`; plugins add theirs with
    ``pytest_vibeeval_register_parsers``)."""

    kind = "output parser"

    def register(self, name: str, parser: Parser) -> None:
        """Make ``output.parser: name`` read stdout with ``parser(path) -> ParsedOutput``."""
        self._add(name, parser)


class FormulaPresets(Registry[str]):
    """Preset names a whole formula may be, each standing for its formula text (see
    :func:`builtin_presets`; plugins add theirs with ``pytest_vibeeval_register_formula_presets``)."""

    kind = "formula preset"

    def register(self, name: str, text: str) -> None:
        """Add a preset: ``name`` written as the whole formula stands for ``text``.

        ``text`` is read without knowing any eval names: write a hyphenated name as ``[name]``. It
        must be a formula, not another preset's name."""
        from .scoring.formula import parse_formula

        if not name.isidentifier():
            raise ValueError(f"preset name {name!r} is not an identifier")
        if name in self:
            raise ValueError(f"formula preset {name!r} is already registered")
        if text.strip() in self:
            raise ValueError(f"preset {name!r}: write the formula of {text.strip()!r}, not its name")
        parse_formula(text, None, presets=self)  # raises FormulaError for a text that is not a formula
        self._add(name, text)


def builtin_presets() -> FormulaPresets:
    """A registry holding the built-in presets only."""
    from .scoring.formula import BUILTIN_PRESETS

    presets = FormulaPresets()
    for name, text in BUILTIN_PRESETS.items():
        presets.register(name, text)
    return presets


class RunVariables(Registry["RunVariable"]):
    """The run-wide formula variables of a session (see
    :data:`~pytest_vibeeval.scoring.variables.BUILTIN_RUN_VARIABLES`; plugins add theirs with
    ``pytest_vibeeval_register_run_variables``)."""

    kind = "run variable"

    def register(self, variable: RunVariable) -> None:
        if not variable.name.isidentifier():
            raise ValueError(f"run variable name {variable.name!r} is not an identifier")
        self._add(variable.name, variable)
