"""Every option of the plugin: declared (``--vibe-*`` and their ``vibe_*`` ini twins) and resolved
once into a :class:`Settings`, validated, with a usage error that names the option for a bad value."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from .loading.templates import parse_assignments
from .workspace.options import DEFAULT_SUBTASK_GLOBS, SANDBOX_MODES, SandboxMode, subtask_glob

# Every pytest session imports this module, with or without evals: it imports only what declaring
# and resolving the options needs (the checks of a given option's value import theirs).

MAX_REPEATS = 1000
DEFAULT_CACHE = Path(".vibeeval") / "cache"  # under the rootdir
DEFAULT_HISTORY = Path(".vibeeval") / "history.jsonl"


@dataclass(frozen=True)
class Settings:
    """The session's resolved options: the command line over the ini file over the defaults."""

    evals: tuple[str, ...] | None = None  # --vibe-eval (None: every eval)
    configs: tuple[str, ...] | None = None  # --vibe-config (None: the defaults)
    evals_from: str = "--vibe-eval"  # where `evals` came from, for messages: the option or the ini
    configs_from: str = "--vibe-config"
    results: Path | None = None  # --vibe-results (None: .vibeeval/results/ under the rootdir)
    patterns: tuple[str, ...] = ()  # vibe_patterns: more YAML suite globs
    cli_vars: tuple[tuple[str, str], ...] = ()  # --vibe-var NAME=VALUE
    ini_vars: tuple[tuple[str, str], ...] = ()  # vibe_vars
    mcp_urls: tuple[tuple[str, str], ...] = ()  # --vibe-mcp-url NAME=URL over vibe_mcp_urls
    sandbox_mode: SandboxMode = "auto"
    sandbox_writable: tuple[Path, ...] = ()
    keep_workspaces: bool = False
    workspace_ignore: tuple[str, ...] = ()
    subtask_globs: tuple[str, ...] = DEFAULT_SUBTASK_GLOBS
    max_cost: float | None = None
    record: Path | None = None  # --vibe-record: store every provider answer here
    replay: Path | None = None  # --vibe-replay: answer from this store only
    prune_recordings: str | None = None  # --vibe-prune-recordings: "remove" or "dry-run"
    cache: Path | None = None  # --vibe-cache: the response cache's folder (None: no cache)
    repeats: int = 1  # --vibe-repeat: items per eval × configuration
    baseline: str | None = None  # --vibe-baseline PATH|latest, as given
    resume: str | None = None  # --vibe-resume PATH|latest, as given
    fail_on_regression: bool = False
    history: Path | None = None  # the JSONL history file (None: none)
    html: Path | None = None  # --vibe-html
    breakdown: bool = False  # --vibe-breakdown (-v shows it too)
    gate_only: bool = False  # --vibe-gate-only
    allow_all_skipped: bool = False  # --vibe-allow-all-skipped: a run where no eval ran may pass
    timeout_margin: float = 30.0  # seconds the timeout backstop adds to an item's own timeouts
    max_processes: int = 1024  # an agent's processes at once, where a pids cgroup can be made (0: none)
    progress_interval: float = 30.0  # seconds between live progress lines off a terminal (0: none)
    gc_freeze: bool = True  # vibe_gc_freeze: keep what collection made out of the GC's scans

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        """Resolve and check every option; a :class:`pytest.UsageError` names the bad one."""
        try:
            cli_vars = parse_assignments(config.getoption("vibe_var"), "--vibe-var")
            ini_vars = parse_assignments(config.getini("vibe_vars"), "vibe_vars (ini)")
            mcp_urls = {
                **_mcp_urls(config.getini("vibe_mcp_urls"), "vibe_mcp_urls (ini)"),
                **_mcp_urls(config.getoption("vibe_mcp_url"), "--vibe-mcp-url"),
            }
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        sandbox_mode = config.getoption("vibe_sandbox") or config.getini("vibe_sandbox")
        if sandbox_mode not in SANDBOX_MODES:
            raise pytest.UsageError(
                f"vibe_sandbox (ini): {sandbox_mode!r} is not one of {', '.join(SANDBOX_MODES)}"
            )
        record, replay = config.getoption("vibe_record"), config.getoption("vibe_replay")
        if record and replay:
            raise pytest.UsageError("--vibe-record and --vibe-replay exclude each other: record, then replay")
        if replay and not Path(replay).is_dir():
            raise pytest.UsageError(f"--vibe-replay: {replay} is not a folder of recorded answers")
        if record:  # made now: a folder it cannot be is found before any answer is lost
            folder = Path(record).absolute()
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise pytest.UsageError(
                    f"--vibe-record: cannot make the folder {folder}: {exc.strerror}"
                ) from None
            if not os.access(folder, os.W_OK | os.X_OK):
                raise pytest.UsageError(f"--vibe-record: {folder} is not writable")
        fail_on_regression = _flag(config, "vibe_fail_on_regression")
        baseline = _text(config, "vibe_baseline")
        if baseline is None and fail_on_regression:
            raise pytest.UsageError("--vibe-fail-on-regression needs --vibe-baseline PATH|latest")
        html = _text(config, "vibe_html")
        files = {"--vibe-results": _text(config, "vibe_results"), "--vibe-html": html}
        for option, value in files.items():
            if not value:
                continue
            from .atomic_files import unwritable_reason  # not the results writer: no pydantic yet

            example = "report.html" if option == "--vibe-html" else "results.json"
            problem = unwritable_reason(Path(value).absolute(), example, into_special=True)
            if problem:  # found now, not after the whole run
                raise pytest.UsageError(f"{option}: {problem}")
        _refuse_shared_outputs(config, files)
        return cls(
            evals=parse_selection(_text(config, "vibe_eval")),
            configs=parse_selection(_text(config, "vibe_config")),
            evals_from=_given_where(config, "vibe_eval"),
            configs_from=_given_where(config, "vibe_config"),
            results=_absolute(_text(config, "vibe_results")),
            patterns=tuple(config.getini("vibe_patterns")),
            cli_vars=tuple(cli_vars.items()),
            ini_vars=tuple(ini_vars.items()),
            mcp_urls=tuple(mcp_urls.items()),
            sandbox_mode=sandbox_mode,
            sandbox_writable=tuple(
                _expanded(p, "vibe_sandbox_writable (ini)") for p in config.getini("vibe_sandbox_writable")
            ),
            keep_workspaces=_flag(config, "vibe_keep_workspaces"),
            workspace_ignore=tuple(config.getini("vibe_workspace_ignore")),
            subtask_globs=_subtask_globs(config),
            max_cost=_max_cost(config),
            record=_absolute(record),
            replay=_absolute(replay),
            prune_recordings=_prune_recordings(config, record or replay),
            cache=_cache_folder(config),
            repeats=_repeats(config),
            baseline=baseline,
            resume=config.getoption("vibe_resume"),
            fail_on_regression=fail_on_regression,
            history=_history_path(config),
            html=Path(html).absolute() if html else None,
            breakdown=_flag(config, "vibe_breakdown"),
            gate_only=_flag(config, "vibe_gate_only"),
            allow_all_skipped=_flag(config, "vibe_allow_all_skipped"),
            timeout_margin=_ini_seconds(config, "vibe_timeout_margin"),
            progress_interval=_ini_seconds(config, "vibe_progress_interval"),
            max_processes=_ini_count(config, "vibe_max_processes"),
            gc_freeze=_ini_bool(config, "vibe_gc_freeze"),
        )


def add_options(parser: pytest.Parser) -> None:
    """Declare every --vibe-* option and vibe_* ini value."""
    group = parser.getgroup("vibeeval", "LLM and agent evals (pytest-vibeeval)")
    group.addoption("--vibe-eval", metavar="NAMES|ALL", help="run only these evals (comma list)")
    group.addoption(
        "--vibe-config",
        metavar="IDS|ALL",
        help="run these configurations (comma list; default: defaultConfigurations, else all)",
    )
    group.addoption(
        "--vibe-results",
        metavar="PATH",
        help="write the results JSON here "
        "(default: .vibeeval/results/<timestamp>.json and latest.json under the rootdir)",
    )
    group.addoption(
        "--vibe-var",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="value for {{var('NAME')}} templates (repeatable)",
    )
    group.addoption(
        "--vibe-mcp-url",
        metavar="NAME=URL",
        action="append",
        default=[],
        help="connect to this URL instead of the one in the suites' mcp_server named NAME, e.g. a "
        "staging or local server (repeatable)",
    )
    group.addoption(
        "--vibe-breakdown",
        action="store_true",
        default=None,
        help="show each score formula with the run's values substituted (also shown with -v)",
    )
    group.addoption(
        "--vibe-gate-only",
        action="store_true",
        default=None,
        help="failed evals of runs with a score gate (score.min/max) do not fail the session: "
        "the gate decides the exit code",
    )
    group.addoption(
        "--vibe-allow-all-skipped",
        action="store_true",
        default=None,
        help="a session in which every eval was skipped (a missing key, variable or executable) "
        "exits 0; by default it fails, so a CI job cannot go green on nothing",
    )
    group.addoption(
        "--vibe-sandbox",
        choices=SANDBOX_MODES,
        default=None,
        help="where coding agents run: bwrap (only their workspace writable), none, or auto "
        "(bwrap when it works here; the default)",
    )
    group.addoption(
        "--vibe-keep-workspaces",
        action="store_true",
        default=None,
        help="keep each coding-agent item's workspace and grading copy, and print where",
    )
    group.addoption(
        "--vibe-max-cost",
        metavar="USD",
        type=float,
        default=None,
        help="start no new eval once the run has spent this much (reported costs)",
    )
    group.addoption(
        "--vibe-record",
        metavar="DIR",
        help="store every provider answer (response, usage, cost, latency) in this folder",
    )
    group.addoption(
        "--vibe-replay",
        metavar="DIR",
        help="answer every prompt from this folder of recorded answers (a miss is an error)",
    )
    group.addoption(
        "--vibe-prune-recordings",
        metavar="dry-run",
        nargs="?",
        const="remove",
        default=None,
        help="after a run of the whole selection with --vibe-record/--vibe-replay, remove the "
        "recordings in the store that no eval used (--vibe-prune-recordings=dry-run: list them)",
    )
    group.addoption(
        "--vibe-cache",
        metavar="DIR",
        nargs="?",
        const=True,
        default=None,
        help="answer a request identical to an earlier one (configuration, model, messages, "
        "parameters) from this folder, and store new answers there (default: .vibeeval/cache under "
        "the rootdir; write --vibe-cache=DIR, or the option after the test paths); never for agent "
        "CLIs, coding-agent evals or --vibe-repeat",
    )
    group.addoption(
        "--vibe-repeat",
        metavar="N",
        type=int,
        default=None,
        help="run every eval N times, as N items (ids end in -r1 … -rN); adds pass rates, pass@k, "
        "pass^k and a score over the repeats",
    )
    group.addoption(
        "--vibe-baseline",
        metavar="PATH|latest",
        help="compare every suite × configuration with this results JSON (latest: the previous run's)",
    )
    group.addoption(
        "--vibe-html",
        metavar="PATH",
        help="also write a self-contained HTML report of the results here",
    )
    group.addoption(
        "--vibe-resume",
        metavar="PATH|latest",
        nargs="?",
        const="latest",
        default=None,
        help="reuse the finished evals of an earlier (interrupted) run's results file and run only the "
        "rest (default: latest)",
    )
    group.addoption(
        "--vibe-fail-on-regression",
        action="store_true",
        default=None,
        help="with --vibe-baseline: a score regression fails the session",
    )
    group.addoption(
        "--vibe-history",
        metavar="PATH",
        help="append one JSON line per suite × configuration to this file "
        "(default: .vibeeval/history.jsonl under the rootdir; '' for none)",
    )
    parser.addini(
        "vibe_timeout_margin",
        "seconds the timeout backstop of every eval item adds to its own command timeouts",
        default="30",
    )
    parser.addini(
        "vibe_max_processes",
        "processes a coding agent may run at once, where a pids cgroup can be made (0: no limit)",
        default="1024",
    )
    parser.addini("vibe_repeat", "default for --vibe-repeat", default="")
    parser.addini(
        "vibe_cache",
        "the response cache's folder, relative to the rootdir, as --vibe-cache (empty: no cache)",
        default="",
    )
    parser.addini("vibe_html", "default for --vibe-html", default="")
    parser.addini(
        "vibe_progress_interval",
        "seconds between the live progress lines when the output is not a terminal (0: none)",
        default="30",
    )
    parser.addini(
        "vibe_gc_freeze",
        "after collecting eval items, exempt what collection made from the garbage collector's scans "
        "(gc.freeze) until the session ends; false keeps Python's default",
        type="bool",
        default=True,
    )
    parser.addini("vibe_baseline", "default for --vibe-baseline", default="")
    parser.addini(
        "vibe_fail_on_regression", "default for --vibe-fail-on-regression", type="bool", default=False
    )
    parser.addini("vibe_history", "default for --vibe-history", default=None)
    parser.addini("vibe_max_cost", "default for --vibe-max-cost", default="")
    parser.addini("vibe_sandbox", "default for --vibe-sandbox (auto, bwrap or none)", default="auto")
    parser.addini(
        "vibe_sandbox_writable",
        "extra folders a sandboxed agent may write to (e.g. its tool's config folder, ~ expanded)",
        type="linelist",
        default=[],
    )
    parser.addini("vibe_keep_workspaces", "default for --vibe-keep-workspaces", type="bool", default=False)
    parser.addini(
        "vibe_workspace_ignore",
        "glob names left out when copying workspace templates (e.g. node_modules, .git); default: none",
        type="linelist",
        default=[],
    )
    parser.addini(
        "vibe_subtask_globs",
        "where grade steps' JUnit XML / results JSON files are looked for, relative to the grading folder",
        type="linelist",
        default=list(DEFAULT_SUBTASK_GLOBS),
    )
    parser.addini("vibe_breakdown", "default for --vibe-breakdown", type="bool", default=False)
    parser.addini("vibe_gate_only", "default for --vibe-gate-only", type="bool", default=False)
    parser.addini(
        "vibe_allow_all_skipped", "default for --vibe-allow-all-skipped", type="bool", default=False
    )
    parser.addini("vibe_patterns", "extra glob patterns of YAML suite files", type="linelist", default=[])
    parser.addini("vibe_vars", "NAME=VALUE lines for {{var('NAME')}} templates", type="linelist", default=[])
    parser.addini("vibe_mcp_urls", "NAME=URL lines, as --vibe-mcp-url", type="linelist", default=[])
    parser.addini("vibe_eval", "default for --vibe-eval", default="")
    parser.addini("vibe_config", "default for --vibe-config", default="")
    parser.addini("vibe_results", "default for --vibe-results", default="")


def _text(config: pytest.Config, name: str) -> str | None:
    """A text option: the command line, else the ini value; empty counts as not given."""
    return config.getoption(name) or config.getini(name) or None


def _expanded(value: str, option: str) -> Path:
    """``value`` with ``~`` or ``~user`` expanded, absolute; a UsageError when it cannot be."""
    try:
        return Path(value).expanduser().absolute()
    except RuntimeError as exc:  # ~user of no such user, or no home folder
        raise pytest.UsageError(f"{option}: cannot expand {value!r}: {exc}") from None


def _refuse_shared_outputs(config: pytest.Config, files: Mapping[str, str | None]) -> None:
    """A UsageError when two files the session writes are one (``--vibe-results X --vibe-html X``):
    the one written last would replace the other, found only after the run."""
    paths = {option: Path(value).absolute() for option, value in files.items() if value}
    junit = config.getoption("xmlpath", None)  # pytest's --junitxml (absent with -p no:junitxml)
    if junit:
        paths["--junitxml"] = Path(junit).expanduser().absolute()
    history = _history_path(config)
    if history is not None:
        paths["--vibe-history"] = history
    seen: dict[str, str] = {}
    for option, path in paths.items():
        real = os.path.realpath(path)  # a symlink to the other, or a folder written two ways
        if real in seen:
            raise pytest.UsageError(
                f"{seen[real]} and {option} name the same file ({path}): give each its own path, or "
                f"one of them would replace the other at the end of the run"
            )
        seen[real] = option


def _prune_recordings(config: pytest.Config, store: str | None) -> str | None:
    """--vibe-prune-recordings: ``remove`` (the option alone) or ``dry-run``; it needs a store."""
    value = config.getoption("vibe_prune_recordings")
    if value is None:
        return None
    if value not in ("remove", "dry-run"):
        raise pytest.UsageError(
            f"--vibe-prune-recordings={value}: give the option alone (remove the recordings no eval "
            "used) or as --vibe-prune-recordings=dry-run (list them); put it after the test paths, "
            "or a path right after it is read as its value"
        )
    if not store:
        raise pytest.UsageError(
            "--vibe-prune-recordings needs --vibe-record DIR or --vibe-replay DIR: the store to prune"
        )
    return str(value)


def _absolute(value: str | None) -> Path | None:
    return Path(value).absolute() if value else None


def _mcp_urls(items: list[str], source: str) -> dict[str, str]:
    """``NAME=URL`` assignments whose URLs are http(s); raises ValueError naming ``source``."""
    urls = parse_assignments(items, source)
    for name, url in urls.items():
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"{source}: {name}={url!r}: the URL must start with http:// or https://")
    return urls


def _given_where(config: pytest.Config, name: str) -> str:
    """How messages name where the text option ``name`` was set: ``--vibe-x``, or ``vibe_x (ini)``."""
    if config.getoption(name) or not config.getini(name):
        return "--" + name.replace("_", "-")
    return f"{name} (ini)"


def _ini_bool(config: pytest.Config, name: str) -> bool:
    """A boolean ini value; a usage error naming it when pytest cannot read it as one."""
    try:
        return bool(config.getini(name))
    except (pytest.UsageError, ValueError) as exc:  # "invalid truth value 'maybe'"; older pytest: ValueError
        raise pytest.UsageError(
            f"{name} (ini): {exc}; use true or false (also: yes/no, on/off, 1/0)"
        ) from None


def _flag(config: pytest.Config, name: str) -> bool:
    """A boolean option: the command line if given, else the ini value."""
    option = config.getoption(name)
    return _ini_bool(config, name) if option is None else bool(option)


def _max_cost(config: pytest.Config) -> float | None:
    max_cost: float | None = config.getoption("vibe_max_cost")
    if max_cost is None and config.getini("vibe_max_cost"):
        try:
            max_cost = float(config.getini("vibe_max_cost"))
        except ValueError:
            raise pytest.UsageError(
                f"vibe_max_cost (ini): {config.getini('vibe_max_cost')!r} is not a number"
            ) from None
    if max_cost is not None and not max_cost > 0:
        raise pytest.UsageError(f"--vibe-max-cost: {max_cost:g} is not a positive amount of USD")
    return max_cost


def _ini_count(config: pytest.Config, name: str) -> int:
    """An ini option that is a whole number >= 0; a usage error otherwise."""
    value = config.getini(name)
    if not str(value).strip().isdigit():
        raise pytest.UsageError(f"{name} (ini): {value!r} is not a whole number >= 0")
    return int(value)


def _subtask_globs(config: pytest.Config) -> tuple[str, ...]:
    """The ``vibe_subtask_globs`` patterns, each checked and read the same on every Python."""
    try:
        return tuple(subtask_glob(pattern) for pattern in config.getini("vibe_subtask_globs"))
    except ValueError as exc:
        raise pytest.UsageError(f"vibe_subtask_globs (ini): {exc}") from None


def _ini_seconds(config: pytest.Config, name: str) -> float:
    """An ini option that is a finite number of seconds >= 0; a usage error otherwise."""
    value = config.getini(name)
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise pytest.UsageError(f"{name} (ini): {value!r} is not a number of seconds >= 0")
    return seconds


def _history_path(config: pytest.Config) -> Path | None:
    """--vibe-history, else the ini value, else ``.vibeeval/history.jsonl`` under the rootdir; '' for none."""
    value = config.getoption("vibe_history")
    if value is None:
        value = config.getini("vibe_history")
    if value is None:
        return config.rootpath / DEFAULT_HISTORY
    return Path(value).absolute() if str(value).strip() else None


def _cache_folder(config: pytest.Config) -> Path | None:
    """The response cache's folder: --vibe-cache DIR (relative to the current folder; the option
    alone: ``.vibeeval/cache`` under the rootdir), else the ini value (relative to the rootdir),
    else None (no cache)."""
    value: object = config.getoption("vibe_cache")
    where = "--vibe-cache"
    if value is True:
        folder = config.rootpath / DEFAULT_CACHE
    elif value:
        folder = Path(str(value)).expanduser().absolute()
    elif value is None and str(config.getini("vibe_cache")).strip():
        where = "vibe_cache (ini)"
        folder = config.rootpath / Path(str(config.getini("vibe_cache")).strip()).expanduser()
    else:
        return None  # not given, or given empty (--vibe-cache= turns an ini cache off)
    from .cache import folder_problem

    problem = folder_problem(folder)
    if problem:
        raise pytest.UsageError(f"{where}: {problem}")
    return folder


def _repeats(config: pytest.Config) -> int:
    value: object = config.getoption("vibe_repeat")
    where = "--vibe-repeat"
    if value is None:
        value, where = config.getini("vibe_repeat") or "1", "vibe_repeat (ini)"
    try:
        repeats = int(str(value))
    except ValueError:
        raise pytest.UsageError(f"{where}: {value!r} is not a whole number") from None
    if not 1 <= repeats <= MAX_REPEATS:
        raise pytest.UsageError(f"{where}: {repeats} is not between 1 and {MAX_REPEATS}")
    return repeats


def parse_selection(raw: str | None) -> tuple[str, ...] | None:
    """``a,b`` → ``("a", "b")``; ``ALL`` → ``("ALL",)``; empty or None → None (use defaults)."""
    if raw is None:
        return None
    items = tuple(part.strip() for part in raw.split(",") if part.strip())
    return items or None
