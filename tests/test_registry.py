"""The registries' deferred fills: the built-ins register when a session first uses a registry,
in their place before any plugin's entries, and a plugin's built-in name is still refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vibeeval.check_api import CheckType, Verdict
from pytest_vibeeval.providers.output import ParsedOutput
from pytest_vibeeval.registry import CheckRegistry, ParserRegistry


def _parser(path: Path) -> ParsedOutput:
    raise NotImplementedError


def test_a_deferred_fill_runs_at_first_use_and_keeps_its_place() -> None:
    registry = ParserRegistry()
    filled: list[str] = []

    def fill() -> None:
        filled.append("fill")
        registry.register("first", _parser)

    registry.defer(fill)
    assert filled == []
    registry.register("second", _parser)
    assert list(registry) == ["first", "second"]
    assert filled == ["fill"]
    with pytest.raises(ValueError, match="'first' is already registered"):
        registry.register("first", _parser)


def test_a_deferred_fill_runs_before_a_read() -> None:
    registry = ParserRegistry()
    registry.defer(lambda: registry.register("only", _parser))
    assert "only" in registry
    assert len(registry) == 1


def test_a_check_type_named_like_a_deferred_built_in_is_refused() -> None:
    registry = CheckRegistry(types=())
    registry.defer(lambda: [registry.register(t) for t in CheckRegistry().as_mapping().values()])
    with pytest.raises(ValueError, match="'match' is already registered"):
        registry.register(CheckType("match", str, lambda value, response: Verdict(True, ""), "mine"))
    assert registry.names() == CheckRegistry().names()


def _kind(name: str) -> CheckType:
    return CheckType(name, str, lambda value, response: Verdict(True, "ok"), name)


def test_a_group_of_check_types_loads_at_its_first_lookup_in_its_place() -> None:
    registry = CheckRegistry(types=())
    loads: list[str] = []

    def load() -> tuple[CheckType, ...]:
        loads.append("load")
        return (_kind("b"), _kind("c"))

    registry.register(_kind("a"))
    registry.register_group(["b", "c"], load)
    registry.register(_kind("d"))
    assert registry.names() == ["a", "b", "c", "d"]
    assert registry.get("a") is not None and registry.get("nope") is None
    assert loads == []
    check_type = registry.get("c")
    assert check_type is not None and check_type.name == "c"
    assert list(registry.as_mapping()) == ["a", "b", "c", "d"]
    assert loads == ["load"]
    with pytest.raises(ValueError, match="'b' is already registered"):
        registry.register(_kind("b"))


def test_a_group_whose_module_names_other_types_is_refused() -> None:
    registry = CheckRegistry(types=())
    registry.register_group(["b", "c"], lambda: (_kind("c"), _kind("b")))
    with pytest.raises(ValueError, match=r"check types \['b', 'c'\] were registered"):
        registry.get("b")
