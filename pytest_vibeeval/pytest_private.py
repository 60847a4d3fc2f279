"""Every use of pytest's private API in the plugin (and of xdist's and pytest-rerunfailures'), in one
place, each with why no public API does.

A pytest upgrade that changes one of these breaks this module alone; ``tests/test_pytest_private.py``
fails when an attribute used here disappears.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from queue import Empty
from types import FrameType
from typing import Any, TextIO

import pytest


def structure_node_id(item: pytest.Item) -> None:
    """Give an eval item the structured node id pytest 9.2 would parse from its node id string.

    pytest 9.2 keeps node ids as structured values (``Node.id``: path, names, params) and ``--lf``,
    ``--ff``, ``--sw`` and ``--nf`` compare the ids they stored, parsed from strings, with the
    items'. ``essay[my-app]`` parses as the name ``essay`` with the params ``my-app``, but an item
    that is not parametrized keeps ``essay[my-app]`` as its name, so no stored id ever matches.
    pytest builds the structured form only from a private ``CallSpec``; re-parsing the item's own
    string is equivalent and needs only the private ``_id`` slot. Before pytest 9.2 there is none
    and nothing needs doing."""
    node_id = getattr(item, "_id", None)
    parse = getattr(type(node_id), "parse", None)
    if node_id is not None and callable(parse):
        item._id = parse(str(node_id))


def keep_group_suffix(report: pytest.TestReport) -> None:
    """Keep xdist's ``@group`` suffix out of a report's parsed params (pytest 9.2).

    Under ``--dist loadgroup`` an item of a grouped configuration is ``essay[my-app]@my-app``
    (xdist groups by what follows the last ``@`` after the last ``]``). pytest 9.2 parses the
    id the controller receives into the params ``my-app]@my-app``, and where it rebuilds the
    string from them (the short test summary, JUnit names) shows ``essay[my-app]@my-app]``. A
    structured id with the whole last part as its name prints as it was sent; its string, which
    ``--lf`` stores, is unchanged. ``_id`` is the private slot behind ``nodeid``."""
    node_id = getattr(report, "_id", None)
    if node_id is None or getattr(node_id, "params", None) is None:
        return
    text = str(node_id)
    if text.rfind("@") > text.rfind("]") and "::" in text:
        names = tuple(text.split("::")[1:])
        report._id = type(node_id)(path=node_id.path, names=names)


def shared_fixtureinfo(collector: pytest.File, func: Callable[..., None]) -> Any:
    """The fixture closure of ``func`` for every item of ``collector``'s file.

    Items of one file share it, as pytest's own parametrized items do; computing it per item
    dominated collection time. The file node stands in for the items: the closure depends only
    on the node id (conftest visibility) and usefixtures marks. ``Function`` takes a
    ``fixtureinfo`` but only the private fixture manager makes one."""
    fixturemanager = collector.session._fixturemanager
    return fixturemanager.getfixtureinfo(node=collector, func=func, cls=None)  # type: ignore[arg-type]


def overridden_fixtures(fixtureinfo: Any, names: Iterable[str], module: str) -> list[str]:
    """Which of ``names`` a conftest or plugin overrides for the items of a fixture closure (the
    closest definition is not the one in ``module``). ``FixtureDef.func`` and ``baseid`` are not
    public; a closure without them counts as overridden, which only costs speed."""
    found = []
    for name in names:
        definitions = fixtureinfo.name2fixturedefs.get(name) or ()
        func = getattr(definitions[-1], "func", None) if definitions else None
        if getattr(func, "__module__", None) != module:
            found.append(name)
    return found


def tmp_path_factory(config: pytest.Config) -> pytest.TempPathFactory:
    """The session's ``tmp_path_factory``, for item bodies that do not go through fixtures."""
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    return factory


def node_ids_are_structured() -> bool:
    """Whether items have pytest 9.2's structured ``Node.id`` (xdist can then no longer rename an
    item, e.g. to add the ``@group`` suffix of ``--dist loadgroup``; pytest-xdist#1386)."""
    return isinstance(getattr(pytest.Item, "id", None), property)


def terminal_writer(config: pytest.Config) -> Any | None:
    """pytest's TerminalWriter, for the live status line: its file, the line pytest is writing
    and its width. The terminal reporter offers ``write``/``write_line`` but none of these."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return getattr(reporter, "_tw", None) if reporter is not None else None


def writer_file(writer: Any) -> TextIO | None:
    """The stream a TerminalWriter writes to (private ``_file``)."""
    return getattr(writer, "_file", None)


def current_line(writer: Any) -> str:
    """What the TerminalWriter has written of its current line (private ``_current_line``): the
    live status must not overwrite pytest's progress dots."""
    return str(getattr(writer, "_current_line", ""))


def real_terminal(config: pytest.Config, default: TextIO | None) -> tuple[TextIO | None, bool]:
    """Where a live status can be written while items run: the terminal itself. In a serial run the
    items' output is captured at the file-descriptor level, which would swallow pytest's own
    stream; pytest's capture keeps a duplicate of the real descriptor (private; falls back to
    ``default``). The second value says whether the caller owns (must close) the stream."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    out = getattr(getattr(capman, "_global_capturing", None), "out", None)
    saved = getattr(out, "targetfd_save", None)
    if not isinstance(saved, int):
        return default, False
    with contextlib.suppress(OSError):
        return open(os.dup(saved), "w", encoding="utf-8", errors="replace"), True
    return default, False


def junit_writer(config: pytest.Config) -> Any | None:
    """The controller's JUnit writer (``LogXML``), or None without --junitxml. Test suite properties
    go through it because ``record_testsuite_property`` fails under xdist (pytest #7767)."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - tests/test_junit_xsd.py fails if pytest moves it
        return None
    return config.stash.get(xml_key, None)


def load_conftests(config: pytest.Config, folder: Path) -> None:
    """Load the conftest.py files of ``folder`` and the folders above it, as collecting it would.

    The xdist controller collects nothing, so a conftest.py below the folders named on the command
    line is loaded only on the workers, and run variables it registers would be missing where the
    runs are scored. pytest loads conftests only through its private ``_loadconftestmodules``;
    loading is idempotent, and registering one calls its historic ``register`` hooks. pytest 8.0
    has neither the ``consider_namespace_packages`` setting nor the argument."""
    namespace: dict[str, bool] = {}
    with contextlib.suppress(ValueError):
        namespace["consider_namespace_packages"] = bool(config.getini("consider_namespace_packages"))
    config.pluginmanager._loadconftestmodules(
        folder, config.getoption("importmode"), config.rootpath, **namespace
    )


def queued_worker_reports(config: pytest.Config) -> list[pytest.TestReport]:
    """xdist controller: take the test reports its workers sent that wait unread in its event queue.

    xdist's loop reads one event at a time; once an interrupt ends it, the events still queued are
    never read, so an item that finished on its worker would count as cut short. There is no public
    API for them: xdist's ``DSession`` keeps ``("testreport", {"node": ..., "rep": ...})`` events in
    its ``queue``. Other events (scheduling, a worker's end) no longer matter and are dropped."""
    queue = getattr(config.pluginmanager.getplugin("dsession"), "queue", None)
    reports: list[pytest.TestReport] = []
    while queue is not None:
        try:
            name, kwargs = queue.get_nowait()
        except Empty:
            break
        report = kwargs.get("rep") if name == "testreport" else None
        if isinstance(report, pytest.TestReport):
            report.node = kwargs.get("node")  # type: ignore[attr-defined]  # as xdist sets it
            reports.append(report)
    return reports


def worker_pid(node: Any) -> int | None:
    """xdist controller: the pid of a worker's process, as its execnet gateway reported it (None
    when it cannot be told). xdist gives plugins no public way to it; execnet's private ``_rinfo``
    holds it, and xdist reads it (it is cached) as it sets the worker up, before
    ``pytest_configure_node``: asking costs no round trip, and a worker that dies later was
    already recorded."""
    try:
        pid = node.gateway._rinfo().pid
    except Exception:  # an execnet or xdist without it, or a gateway already gone: nothing to end
        return None
    return pid if isinstance(pid, int) else None


_PHASE_CODE = pytest.CallInfo.from_call.__func__.__code__  # type: ignore[attr-defined]
_PHASES = frozenset({"setup", "call", "teardown"})


def in_runtest_phase(frame: FrameType | None, stop: FrameType | None) -> bool:
    """Whether ``frame`` runs inside the setup, call or teardown of an item, in the function the
    phase runs, below ``stop`` (the frame that called the item's protocol): there an exception
    becomes the phase's report, anywhere else (a report hook, pytest's timing around the phase) it
    would end the session.

    No API says which phase is running. pytest runs each phase's function through
    ``CallInfo.from_call(func, when)`` (public, but that the runner does so for every phase is an
    implementation detail); ``stop`` keeps an outer test's phase (a pytest run inside a test, as
    ``pytester`` makes) out of the search."""
    while frame is not None and frame is not stop:
        caller = frame.f_back
        if caller is not None and caller.f_code is _PHASE_CODE:
            local = caller.f_locals
            func = local.get("func")
            return local.get("when") in _PHASES and getattr(func, "__code__", frame.f_code) is frame.f_code
        frame = caller
    return False


_HELD_BY_BUDGET = "vibeeval: --vibe-max-cost"  # our key among pytest-rerunfailures' flags


def reruns_left(item: pytest.Item) -> bool:
    """Whether pytest-rerunfailures will rerun ``item`` should its current attempt fail: it runs
    the item and has reruns left for it.

    pytest-rerunfailures has no API for it: it counts an item's attempts in
    ``item.execution_count`` (set by its protocol) against its public ``get_reruns_count(item)``,
    and keeps per attempt the dict ``item._terminal_errors`` (made as the attempt's setup is
    reported) whose flags end the reruns."""
    module = sys.modules.get("pytest_rerunfailures")
    count = getattr(item, "execution_count", None)
    flags = getattr(item, "_terminal_errors", None)
    if module is None or not isinstance(count, int) or not isinstance(flags, dict):
        return False
    reruns = module.get_reruns_count(item)
    return bool(reruns) and count <= reruns


def stop_reruns(item: pytest.Item) -> None:
    """Tell pytest-rerunfailures not to rerun ``item`` after its current attempt: that attempt's
    reports are its last, logged as they are (a failure stays a failure, not a rerun).

    It has no API for that. Its ``--only-rerun`` and ``--rerun-except`` filters end an item's reruns
    through ``item._terminal_errors``, a dict of flags (one per phase) that it makes afresh as
    each attempt's setup is reported and reads, after the attempt's teardown, to decide whether
    to rerun it (any flag set: not rerun) and whether to keep the higher scopes' finalizers for a
    rerun. A flag of our own there ends the reruns as those filters do."""
    terminal = getattr(item, "_terminal_errors", None)
    if isinstance(terminal, dict):
        terminal[_HELD_BY_BUDGET] = True


def rootdir_and_ini(folder: Path, name: str) -> tuple[Path, str | None]:
    """The rootdir pytest finds when started in ``folder`` without arguments, and the value there
    of its ini setting ``name`` (None where no ini file sets it), for the command line's ``cache``
    command, which runs no session.

    pytest finds both in ``_pytest.config.findpaths.determine_setup`` only (from its ini files,
    nearest first). pytest 9 gave it an ``override_ini`` argument, a fourth value and ini values
    wrapped in a ``ConfigValue`` (``.value``); both shapes are handled. A ``--rootdir`` in
    ``addopts`` or ``PYTEST_ADDOPTS`` is not seen. pytest's ``UsageError`` (an ini file it cannot
    read) becomes a ValueError with its message."""
    import inspect

    from _pytest.config.findpaths import determine_setup

    arguments: dict[str, Any] = {
        "inifile": None,
        "args": [],
        "rootdir_cmd_arg": None,
        "invocation_dir": folder,
    }
    if "override_ini" in inspect.signature(determine_setup).parameters:
        arguments["override_ini"] = None
    try:
        found = determine_setup(**arguments)
    except pytest.UsageError as exc:
        raise ValueError(f"pytest cannot read its configuration here: {exc}") from None
    value = found[2].get(name)
    value = getattr(value, "value", value)
    return Path(found[0]), None if value is None else str(value)
