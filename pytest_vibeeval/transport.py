"""What travels from an item to the controller on its reports' ``user_properties``: the item's
:class:`RunInfo` (attached at collection; an xdist worker makes its text only for the setup report
of an item it runs) and its finished record (attached by its body). Workers need only this module,
not the scoring code that reads the records on the controller."""

from __future__ import annotations

import functools
import json
import operator
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from .surrogates import model_json

T = TypeVar("T")

RUN_PROPERTY = "vibeeval_run"
RESULT_PROPERTY = "vibeeval_result"


@dataclass(slots=True)
class RunInfo:
    """What an item knows about its run; attached at collection so every report carries it. The
    controller keeps one per item: slots, and strings shared between the items of a run."""

    suite: str
    source: str
    configuration: str
    configuration_name: str | None
    score_formula: str
    eval_id: str
    named: bool
    suite_evals: int  # evals in the suite, selected or not
    eval_index: int = -1  # position in the suite; -1 when unknown (a crashed item)
    score_min: float | None = None  # the score gate; None: no bound
    score_max: float | None = None
    # The formula as collection read it (Formula.canonical: hyphenated names bracketed, a preset
    # expanded), which parse_formula(text, None) reads the same way whichever evals ran. None only
    # for a RunInfo made without one; then score_formula is re-read against the run's variables.
    score_canonical: str | None = None
    score_preset: str | None = None  # the preset's name when the formula is one
    repeat: int = 0  # 1…repeats with --vibe-repeat; 0 when not repeated
    repeats: int = 1
    min_pass_rate: float | None = None  # the eval's
    input_digest: str | None = None  # the suite file(s) and the configuration's settings (resume)

    def key(self) -> tuple[str, str]:
        return (self.source, self.configuration)

    def to_json(self) -> str:
        """Two JSON arrays of values, one a line: :data:`RUN_INFO_FORMAT` and the fields an item
        shares with the other items of its run (:data:`_RUN_FIELDS`, the same text for all of
        them), then its own. No keys travel, and the controller parses the run's line once
        (:func:`_run_values`), not once per item."""
        # Every field is a str, a number, a bool or None: no deep copy (asdict) is needed.
        run = _dumps([RUN_INFO_FORMAT, *(getattr(self, name) for name in _RUN_FIELDS)])
        return run + "\n" + _dumps([getattr(self, name) for name in _ITEM_FIELDS])

    @classmethod
    def from_json(cls, text: str) -> RunInfo:
        """The info ``to_json`` wrote, its strings interned: the items of a run share their suite,
        source, formula and digest strings instead of holding a copy each."""
        run, _, own = text.partition("\n")
        return cls(*_in_field_order((*_run_values(run), *_values(own, len(_ITEM_FIELDS)))))


# The version of RunInfo's text, first on its run line: a worker and a controller of releases whose
# fields differ (added, removed, reordered, or meaning another thing) must not read each other's
# values shifted, even where their counts match. A change of the fields takes a new number
# (tests/test_aggregate.py pins it to them). 2: the first tagged; earlier releases sent the same
# two lines untagged, and before that a keyed object.
RUN_INFO_FORMAT = 2
_dumps = json.JSONEncoder(separators=(",", ":")).encode  # no spaces: it travels with every item

_RUN_INFO_FIELDS = tuple(f.name for f in fields(RunInfo))
# The fields that differ between the items of a run; the others (_RUN_FIELDS) are the run's.
_ITEM_FIELDS = ("eval_id", "named", "eval_index", "repeat", "min_pass_rate")
_RUN_FIELDS = tuple(name for name in _RUN_INFO_FIELDS if name not in _ITEM_FIELDS)
# The run's values then the item's, in the order of RunInfo's fields (its positional arguments).
_in_field_order = operator.itemgetter(
    *((*_RUN_FIELDS, *_ITEM_FIELDS).index(name) for name in _RUN_INFO_FIELDS)
)


@functools.lru_cache(maxsize=256)
def _run_values(text: str) -> tuple[Any, ...]:
    """The run's line of :meth:`RunInfo.to_json`, parsed, its strings interned: once per run (a
    session has a few runs; the cache holds their texts, never one per item). Another format's
    (another release's) is a ValueError."""
    return _values(text, 1 + len(_RUN_FIELDS), tagged=True)[1:]


def _values(text: str, count: int, tagged: bool = False) -> tuple[Any, ...]:
    """A line of :meth:`RunInfo.to_json`: an array of ``count`` values, its strings interned; if
    ``tagged``, the first is :data:`RUN_INFO_FORMAT`. Any other text (an object's keys would pass
    for values) is a ValueError, never a RunInfo with its fields shifted."""
    values = _loads(text)
    if not isinstance(values, list):
        raise ValueError("not an array of run info values")
    if tagged and not (values and type(values[0]) is int and values[0] == RUN_INFO_FORMAT):
        found = f"format {values[0]}" if values and type(values[0]) is int else "an untagged format"
        raise ValueError(f"{found}, where this release reads format {RUN_INFO_FORMAT}")
    if len(values) != count:
        raise ValueError(f"not {count} run info values")
    return tuple([sys.intern(value) if isinstance(value, str) else value for value in values])


# The decoder's scanner (an attribute the typeshed stubs leave out): (value, end) from an index on.
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _loads(text: str) -> Any:
    """``json.loads(text)`` for the text :meth:`RunInfo.to_json` writes (a value with nothing
    around it), read by the decoder's C scanner directly: the controller reads an item's line per
    item, and ``json.loads``'s own checks and whitespace matching cost more than the scan. Any other
    text goes to ``json.loads``, which reads it (spaces around it) or raises its usual error."""
    try:
        value, end = _scan_once(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


class Attached:
    """A ``user_properties`` value in a run without xdist, where the controller is this process:
    the object itself, so that nothing is serialized to be parsed again; its JSON text,
    ``text(value)``, is made only if something else asks for it (``str``). ``text`` is a plain
    function, not a bound method or closure made per item: every item keeps its Attached values
    until the session ends, and each object more is one more for the garbage collector to scan."""

    __slots__ = ("_text", "value")

    def __init__(self, value: T, text: Callable[[T], str]) -> None:
        self.value: Any = value
        self._text: Callable[[Any], str] = text

    def __str__(self) -> str:
        return self._text(self.value)


def attach(config: Any, value: T, text: Callable[[T], str]) -> Attached | str:
    """What an item puts on its reports for ``value``: the object itself in a run without xdist,
    its JSON ``text(value)`` in an xdist worker (reports travel to the controller as JSON)."""
    return text(value) if hasattr(config, "workerinput") else Attached(value, text)


def as_sent(properties: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """A report's ``user_properties`` as an xdist worker sends them: each :class:`Attached` value
    as its text (what :func:`attach` would have made at once)."""
    return [(key, str(value) if isinstance(value, Attached) else value) for key, value in properties]


def attach_record(config: Any, record: Any) -> Attached | str:
    """:func:`attach` for an item's finished record (a ``results.EvalRecord``): its JSON leaves out
    the fields at their defaults, so it travels at about half the size and the controller's parsed
    copy remembers fewer set fields (it keeps one per item until the session ends)."""
    return attach(config, record, _record_json)


def _record_json(record: Any) -> str:
    return model_json(record, exclude_defaults=True)


def received(value: object, parse: Callable[[str], T]) -> T:
    """The object a report's property carries: attached in this process, or parsed from JSON."""
    return value.value if isinstance(value, Attached) else parse(str(value))


def longrepr_text(report: Any) -> str | None:
    """A report's failure text, led by the exception line (e.g. the backstop's ``Failed: Timeout``)."""
    if report.longrepr is None:
        return None
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None)
    text = str(report.longrepr)
    return f"{crash}\n{text}" if crash else text
