"""Objects made several times per item, made quickly: frozen dataclasses and copies of records.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``, which
costs about six times what a plain class's assignment does (a 14-field one: ~22 000 instructions
against ~3 700). :func:`quick_init` gives the class an ``__init__`` of the same parameters that fills
the instance's ``__dict__`` in one step; the class stays frozen (assignment raises, instances hash
and compare as before). :func:`quick_copy` is pydantic's ``model_copy(update=...)`` without its
generic steps (copying the extra and private values a record does not have)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

T = TypeVar("T")
M = TypeVar("M", bound="BaseModel")


class _Factory:
    """A parameter's default where the field has a ``default_factory`` (shown as dataclasses do)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def quick_init(cls: type[T]) -> type[T]:
    """Replace frozen dataclass ``cls``'s ``__init__`` with one that stores every field at once.
    Same parameters, defaults (factories called per instance), keyword-only fields and
    ``__post_init__`` call; for classes with neither ``__slots__`` nor ``InitVar`` fields."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen and "__slots__" not in cls.__dict__, (
        f"{cls.__name__}: not a frozen dataclass with a __dict__"
    )
    names: dict[str, Any] = {"_setattr": object.__setattr__, "_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    values: list[str] = []
    fields: tuple[dataclasses.Field[Any], ...] = dataclasses.fields(cls)  # type: ignore[arg-type]
    for field in fields:
        name = field.name
        if field.default is not dataclasses.MISSING:
            names[f"_default_{name}"] = field.default
            default = f"=_default_{name}"
        elif field.default_factory is not dataclasses.MISSING:
            names[f"_factory_{name}"] = field.default_factory
            default = "=_FACTORY"
            if field.init:
                body.append(f"    if {name} is _FACTORY: {name} = _factory_{name}()")
        else:
            default = ""
        if not field.init:  # as the generated __init__: a factory's value is set, a default is the class's
            if field.default_factory is not dataclasses.MISSING:
                values.append(f"{name!r}: _factory_{name}()")
            continue
        (keyword if field.kw_only else positional).append(f"{name}{default}")
        values.append(f"{name!r}: {name}")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    body.append(f"    _setattr(self, '__dict__', {{{', '.join(values)}}})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    exec(f"def __init__({signature}):\n" + "\n".join(body), names)
    init = names["__init__"]
    init.__annotations__ = {f.name: f.type for f in fields if f.init} | {"return": None}
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


def quick_copy(model: M, update: Mapping[str, Any]) -> M:
    """``model.model_copy(update=update)``: a shallow copy with ``update``'s fields replaced (not
    validated) and marked as set."""
    if model.__pydantic_extra__ is not None or getattr(model, "__pydantic_private__", None) is not None:
        return model.model_copy(update=update)  # what records never have: pydantic's own copy
    cls = type(model)
    copied = cls.__new__(cls)
    values = model.__dict__.copy()
    values.update(update)
    _setattr(copied, "__dict__", values)
    _setattr(copied, "__pydantic_extra__", None)
    _setattr(copied, "__pydantic_fields_set__", model.__pydantic_fields_set__ | update.keys())
    _setattr(copied, "__pydantic_private__", None)
    return copied


_setattr = object.__setattr__


class Prototype(Generic[M]):
    """Makes models as validating the same fields would, by copying one validated ``model``: for
    models made per item from the plugin's own values (of the fields' types, not read from input:
    those are validated where they are read). Every :meth:`make` sets the fields that ``model`` was
    validated with; each empty list, dict or set ``model`` holds is made anew, as validation does."""

    def __init__(self, model: M) -> None:
        self.model = model
        self.fresh = {
            name: type(value)
            for name, value in model.__dict__.items()
            if type(value) in (list, dict, set) and not value
        }

    def make(self, values: Mapping[str, Any]) -> M:
        made = quick_copy(self.model, values)
        fields = made.__dict__
        for name, kind in self.fresh.items():
            if name not in values:
                fields[name] = kind()
        return made
