"""The pytest entry point of pytest-vibeeval: declarations and wiring only.

Options live in :mod:`.settings`, the collectors in :mod:`.collect`, the fixtures in
:mod:`.fixtures`. ``pytest_configure`` builds the session state and registers the objects of this
process's role: :class:`~.controller.ControllerSession` only where results are gathered (the xdist
controller, or a serial run); :class:`~.itemhooks.CollectionHooks` and :class:`~.itemhooks.ItemHooks`
in every process (idle where nothing is collected or run)."""

from __future__ import annotations

import os
import reprlib
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# Only what registration and the hooks of every session need: the suites' loading, scoring and
# running machinery is imported when an eval file is collected (or an option asks for it).
from . import builtins
from .budget import Budget
from .collection_gc import pause, thaw
from .filenames import PARSED_SUITES_FOLDER, YAML_SUFFIXES
from .itemhooks import ITEMS_PLUGIN, LOCK_DIR_INPUT, RESUME_INPUT, CollectionHooks, ItemHooks
from .loading.link_cycles import is_link_cycle
from .loading.named_folders import is_named_folder
from .loading.suite_files import collected_kind
from .loading.templates import Renderer, TemplateValues
from .notes import note
from .settings import Settings, add_options
from .stash import STATE_KEY, get_state, rootdir_relative
from .state import VibeState
from .workspace.layout import is_temporary

pytest_plugins = ("pytest_vibeeval.fixtures",)

BUILTINS_PLUGIN = "vibeeval-builtins"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vibeeval: an eval item of pytest-vibeeval")
    settings = Settings.from_config(config)
    state = VibeState(settings, Renderer(TemplateValues(dict(settings.cli_vars), dict(settings.ini_vars))))
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get(LOCK_DIR_INPUT):
        state.lock_dir = Path(workerinput[LOCK_DIR_INPUT])
    else:
        state.lock_dir = Path(tempfile.mkdtemp(prefix="pytest-vibeeval-locks-"))
        state.owns_lock_dir = True
    if workerinput is not None and workerinput.get(RESUME_INPUT):
        from .resume import ResumeIndex

        state.resume = ResumeIndex.from_json(workerinput[RESUME_INPUT])
    state.budget = Budget(state.lock_dir, settings.max_cost)
    if config.pluginmanager.has_plugin("cacheprovider"):
        state.parse_folder = lambda: config.cache.mkdir(PARSED_SUITES_FOLDER)
    if settings.sandbox_mode == "bwrap":  # fail now rather than at every item
        from .execute import session_sandbox
        from .workspace.sandbox import SandboxUnavailable

        try:
            session_sandbox(state)
        except SandboxUnavailable as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[STATE_KEY] = state
    # Thaw what collection froze (vibe_gc_freeze) only in the last cleanups, after pytest's own
    # final garbage collections (the unraisable-exception plugin's): they need not rescan it.
    config.add_cleanup(lambda: thaw(state))
    # SIGTERM as Ctrl-C; see interrupts. The controller holds a second signal only once it has
    # results to write; a worker, running evals, always.
    controller = workerinput is None
    state.interrupts.install(announce=controller, has_results=state.aggregated if controller else None)
    config.pluginmanager.register(CollectionHooks(config), "vibeeval-collection")
    if workerinput is None:
        # the controller's side (results, scoring, journal, live status): an xdist worker never imports it
        from .controller import ControllerSession

        config.pluginmanager.register(ControllerSession(config), "vibeeval-controller")
    config.pluginmanager.register(ItemHooks(config), ITEMS_PLUGIN)  # leaves an xdist controller at its start
    if not config.pluginmanager.has_plugin(BUILTINS_PLUGIN):
        config.pluginmanager.register(builtins, BUILTINS_PLUGIN)
    extensions = state.extensions
    for hook, registry in (
        (config.hook.pytest_vibeeval_register_checks, extensions.checks),
        (config.hook.pytest_vibeeval_register_parsers, extensions.parsers),
        (config.hook.pytest_vibeeval_register_formula_presets, extensions.formula_presets),
        (config.hook.pytest_vibeeval_register_run_variables, extensions.run_variables),
    ):
        try:
            hook.call_historic(result_callback=_refuse_returned(hook.name), kwargs={"registry": registry})
        except RegistrationError as exc:
            raise pytest.UsageError(str(exc)) from None
        except ValueError as exc:  # a name registered twice, a preset that is no formula (FormulaError)
            raise pytest.UsageError(f"{hook.name}: {exc}") from None


class RegistrationError(ValueError, pytest.Collector.CollectError):
    """A register hook's mistake: a usage error at start-up; from a conftest.py met during
    collection (pluggy calls historic hooks as it registers), that folder's collection error,
    shown without a traceback."""


def _refuse_returned(hook_name: str) -> Callable[[object], None]:
    """A register hook adds by calling ``registry.register``; pluggy discards what an
    implementation returns, so a return value means entries that were meant but not registered."""

    def refuse(returned: object) -> None:
        raise RegistrationError(
            f"{hook_name}: an implementation returned {reprlib.repr(returned)}, which is ignored:"
            " call registry.register(...) for each entry inside the hook, and return nothing"
        )

    return refuse


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None and not hasattr(config, "workerinput"):
        # an xdist worker keeps holding a second Ctrl-C until it exits: one arriving in execnet's
        # shutdown would crash it with a traceback and make the controller wait for it
        state.interrupts.uninstall()
    if state is not None and state.lock_dir is not None and state.owns_lock_dir:
        shutil.rmtree(state.lock_dir, ignore_errors=True)


# xdist's controller: the marker (pid:start time) of each worker running on this machine, by its
# gateway's id, recorded as it is set up: all that a worker that dies may have left is scanned for.
WORKER_MARKERS_KEY = pytest.StashKey[dict[str, str]]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's controller: record the worker's marker (see :func:`pytest_testnodedown`)."""
    if not sys.platform.startswith("linux"):  # nothing is scanned elsewhere
        return
    from .pytest_private import worker_pid
    from .reaping import child_marker  # ctypes and the reaper: only where they are used

    pid = worker_pid(node)
    marker = None if pid is None else child_marker(pid)
    if marker is not None:
        node.config.stash.setdefault(WORKER_MARKERS_KEY, {})[node.gateway.id] = marker


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    """xdist's controller: a worker is down. One that died may have left an agent running and its
    pids cgroup behind: end them (see reaping), and only them: the agents of other sessions,
    containers and sandboxes carry markers of their own."""
    marker = node.config.stash.get(WORKER_MARKERS_KEY, {}).pop(node.gateway.id, None)
    if error is not None and marker is not None:
        from .reaping import end_lost_workers_processes

        end_lost_workers_processes(marker)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Skip a symlinked folder that leads back to a folder above it (e.g. a workspace template's
    link to an ancestor): pytest would collect the tree again through it, link after link. Skip
    the folders an eval-config.json names (workspace templates, grading folders) and the items'
    temporary copies: their tests are the agents' and the graders'."""
    if is_link_cycle(collection_path):
        return True
    if collection_path.is_dir() and (
        is_temporary(collection_path) or is_named_folder(collection_path, os.environ)
    ):
        return True
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    config = parent.config
    rel = rootdir_relative(file_path, config.rootpath)
    given = file_path.name.endswith(YAML_SUFFIXES) and parent.session.isinitpath(file_path)
    state = get_state(config)
    kind = collected_kind(file_path, rel, state.settings.patterns, given)
    if kind == "no-evals":  # a broad pattern's docker-compose.yaml: not a suite, not an error
        text = f"{rel} matches vibe_patterns but has no top-level `evals:`: not a suite, not collected"
        note(VibeevalNote(text), stacklevel=1)
        return None
    if kind is None:
        return None
    # An eval file: the collector pauses until the end of collection (see collection_gc), before
    # the first one imports the machinery of loading and running evals, which lives as long.
    pause(state)
    if kind == "config":
        from .collect import EvalConfigCollector

        return EvalConfigCollector.from_parent(parent, path=file_path)
    from .collect import SuiteCollector

    return SuiteCollector.from_parent(parent, path=file_path)


class VibeevalNote(pytest.PytestWarning):
    """Something pytest-vibeeval left out, shown in pytest's warnings summary."""
