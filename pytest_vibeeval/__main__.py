"""The command line.

``python -m pytest_vibeeval schema --dir DIR | --check [--dir DIR] | --print-dir | --package``: write
or check the JSON Schemas of the results file and of the input files (for editors); ``--package``
rewrites the copies shipped in the package, in a source checkout.
``python -m pytest_vibeeval compare BASELINE NEW [--fail-on-regression]``: compare two results files.
``python -m pytest_vibeeval outputs RESULTS [--dir DIR]``: write the unified runner's
``<eval>-<time>/<config>/results.json`` tree from a results file.
``python -m pytest_vibeeval cache info [DIR]`` and ``cache prune [DIR] [--older-than DURATION]
[--configuration ID]... [--all] [--dry-run]``: what the response cache (--vibe-cache) holds, and
removing answers from it (:mod:`.cache_admin`).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import Any

from .editor_schemas import EDITOR_SCHEMAS, render_schema
from .report.baseline import (
    BaselineError,
    ReadResults,
    compare_results,
    comparison_lines,
    read_results,
    resolve_baseline,
)
from .results import ResultsFile
from .runner_outputs import OutputsNotWritten, not_a_folder, write_runner_outputs
from .scoring.variables import BUILTIN_RUN_VARIABLES

SCHEMA_DIR = Path(__file__).parent / "schemas"


def _type_metrics(schema: dict[str, Any]) -> None:
    """Give a run's built-in ``metrics`` their types and meanings (the model has a plain mapping, since
    plugins add metrics of their own: other keys stay allowed)."""
    metrics = schema["$defs"]["RunRecord"]["properties"]["metrics"]
    properties: dict[str, Any] = {
        variable.name: {
            "type": ["number", "null"],
            "description": f"{variable.unit}: {variable.meaning}; null where unknown",
        }
        for variable in BUILTIN_RUN_VARIABLES
        if variable.metric
    }
    properties["errors"] = {"type": "integer", "minimum": 0, "description": "count: evals that errored"}
    properties["skipped"] = {"type": "integer", "minimum": 0, "description": "count: evals skipped"}
    metrics["properties"] = properties


def results_schema() -> str:
    """The JSON Schema of the results file, as shipped in ``schemas/results.schema.json``."""
    schema = ResultsFile.model_json_schema()
    _type_metrics(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "pytest-vibeeval results"
    return render_schema(schema)


def shipped_schemas() -> dict[str, str]:
    """Each shipped schema's file name and text: the results file's, then the input files'."""
    texts = {"results.schema.json": results_schema()}
    texts.update((name, render_schema(build())) for name, build in EDITOR_SCHEMAS.items())
    return texts


def stale_schemas(folder: Path) -> list[str]:
    """What is wrong with the schema files in ``folder``, one line per missing or outdated file."""
    problems = []
    for name, text in shipped_schemas().items():
        target = folder / name
        if not target.is_file():
            problems.append(f"{target} is missing")
        elif target.read_text(encoding="utf-8") != text:
            problems.append(f"{target} is out of date")
    return problems


def installed(folder: Path) -> bool:
    """Whether ``folder`` is inside an installed distribution (not a source checkout)."""
    return any(part in ("site-packages", "dist-packages") for part in folder.parts)


def schema_command(check: bool, folder: Path | None = None, package: bool = False) -> int:
    """Write the schemas into ``folder`` (``package``: the package's own, in a source checkout), or
    (``check``) fail when one there (default: the package's) is missing or out of date."""
    target = folder or SCHEMA_DIR
    problem = not_a_folder(target)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if check:
        problems = stale_schemas(target)
        rerun = "python -m pytest_vibeeval schema " + (f"--dir {folder}" if folder else "--package")
        for problem in problems:
            print(f"{problem}: run `{rerun}`", file=sys.stderr)
        return 1 if problems else 0
    if folder is None and not package:
        print(
            "error: say where to write the schemas: --dir DIR (copies for your editor, e.g. "
            ".vscode/schemas), or --package (the copies shipped in the package, when developing "
            "pytest-vibeeval); --check checks them, --print-dir prints the package's folder",
            file=sys.stderr,
        )
        return 2
    if folder is None and installed(SCHEMA_DIR):
        print(
            f"error: {SCHEMA_DIR} is an installed package's folder, which pip owns: write copies with "
            "--dir DIR instead (--package is for a source checkout of pytest-vibeeval)",
            file=sys.stderr,
        )
        return 2
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in shipped_schemas().items():
            path = target / name
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    except OSError as exc:
        where = exc.filename or target
        print(
            f"error: cannot write {where}: {exc.strerror or exc}; give --dir a folder you can write",
            file=sys.stderr,
        )
        return 2
    return 0


def print_notes(*files: tuple[ReadResults, str | Path]) -> None:
    """Say on stderr which fields of the files read were ignored (stdout stays the command's output)."""
    for read, path in files:
        note = read.note(str(path))
        if note:
            print(f"note: {note}", file=sys.stderr)


def _load_for_compare(path: Path, role: str, problems: list[str]) -> ReadResults | None:
    """The results file at ``path``, or None with what is wrong with it added to ``problems``; a
    partial run is no baseline (``role`` "baseline")."""
    try:
        read = read_results(path)
    except BaselineError as exc:
        problems.append(str(exc))
        return None
    if role == "baseline" and read.results.partial:
        reason = read.results.stopped_early or "interrupted"
        problems.append(f"{path} holds a partial run ({reason}): it is no baseline")
        return None
    return read


def compare_command(baseline: str, new: str, fail_on_regression: bool) -> int:
    """Print the comparison; with ``fail_on_regression`` 1 when a run regressed (see
    :func:`~.report.baseline.regressed`) or no run is in both files; 2 for an unusable file (each one
    is named)."""
    cwd = Path.cwd()
    base_path, new_path = resolve_baseline(baseline, cwd), resolve_baseline(new, cwd)
    problems: list[str] = []
    base_read = _load_for_compare(base_path, "baseline", problems)
    new_read = _load_for_compare(new_path, "new", problems)
    if base_read is None or new_read is None:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    print_notes((base_read, base_path), (new_read, new_path))
    base_results, new_results = base_read.results, new_read.results
    if new_results.partial:
        reason = new_results.stopped_early or "interrupted"
        print(
            f"warning: {new_path} holds a partial run ({reason}): its scores are over the evals that ran",
            file=sys.stderr,
        )
    comparison = compare_results(new_results, base_results, str(base_path))
    print("\n".join(comparison_lines(comparison)))
    if not fail_on_regression:
        return 0
    if not any(record.label != "new" for _, record in comparison.pairs):
        print("--fail-on-regression: no run is in both files, so nothing was compared", file=sys.stderr)
        return 1
    return 1 if comparison.regressions else 0


def outputs_command(results: str, folder: Path) -> int:
    """Write the unified runner's output tree for the results file ``results`` into ``folder``."""
    try:
        read = read_results(Path(results))
    except BaselineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_notes((read, results))
    try:
        written = write_runner_outputs(read.results, folder)
    except OutputsNotWritten as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in written.files:
        print(path)
    for line in written.renamed:
        print(f"note: {line}", file=sys.stderr)
    if not written.files:
        print(f"{results}: no coding-agent eval ran, nothing written", file=sys.stderr)
    if written.missing_logs:
        print(
            f'warning: {written.missing_logs} step log(s) not found, written as "[log not found: <path>]" '
            "in stdout/stderr: pytest removes the temporary folders of all but its last 3 runs "
            "(tmp_path_retention_count); write the outputs sooner, or give each run its own --basetemp",
            file=sys.stderr,
        )
    return 0


def default_cache_folder(folder: Path) -> Path:
    """The cache ``pytest --vibe-cache`` uses when started in ``folder``: the ini value
    ``vibe_cache`` (relative to the rootdir) where one is set, else ``.vibeeval/cache`` under the
    rootdir, the rootdir being the one pytest finds there."""
    from .cache_admin import CacheAdminError
    from .pytest_private import rootdir_and_ini
    from .settings import DEFAULT_CACHE

    try:
        rootdir, value = rootdir_and_ini(folder, "vibe_cache")
    except ValueError as exc:
        raise CacheAdminError(f"{exc}; give the cache's folder") from None
    if value is not None and value.strip():
        return rootdir / Path(value.strip()).expanduser()
    return rootdir / DEFAULT_CACHE


def cache_command(
    action: str,
    folder: Path | None,
    older_than: float | None = None,
    configurations: list[str] | None = None,
    everything: bool = False,
    dry_run: bool = False,
) -> int:
    """``cache info``: print what the cache at ``folder`` (default: :func:`default_cache_folder`)
    holds; ``cache prune``: remove what :func:`~.cache_admin.choose` chooses (``dry_run``: only
    say what). 2 for a folder that is no cache or an unknown configuration, 1 when a file could
    not be removed (each is named)."""
    from .cache_admin import CacheAdminError, choose, read_cache, remove
    from .report.cache_text import info_lines, prune_lines

    try:
        target = folder if folder is not None else default_cache_folder(Path.cwd())
        if folder is None and not target.exists():
            raise CacheAdminError(
                f"no response cache at {target}, where pytest --vibe-cache started here stores its "
                "answers; give the cache's folder as DIR"
            )
        contents = read_cache(target.absolute())
        pruning = None if action == "info" else choose(contents, configurations or (), older_than, everything)
    except CacheAdminError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if pruning is None:
        print("\n".join(info_lines(contents)))
        return 0
    done = None if dry_run else remove(pruning)
    print("\n".join(prune_lines(pruning, done)))
    for problem in done.failed if done is not None else ():
        print(f"error: cannot remove {problem}", file=sys.stderr)
    return 1 if done is not None and done.failed else 0


def _duration(text: str) -> float:
    from .cache_admin import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_cache_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``cache`` command's parser, with its ``info`` and ``prune``; returns ``prune``'s."""
    cache = sub.add_parser(
        "cache",
        help="show what the response cache (--vibe-cache) holds, or remove answers from it",
        description="Look after the response cache of --vibe-cache: `info` shows what it holds, `prune` "
        "removes answers, which the next run with --vibe-cache asks again. DIR defaults to the cache "
        "`pytest --vibe-cache` uses when started here: the ini value vibe_cache, else .vibeeval/cache, "
        "under the rootdir pytest finds from the current folder.",
    )
    actions = cache.add_subparsers(dest="cache_action", required=True, metavar="{info,prune}")
    folder_help = "the cache's folder (default: the one pytest --vibe-cache uses when started here)"
    info = actions.add_parser(
        "info",
        help="per configuration: answers, llm_judge verdicts, damaged entries, size, oldest and newest",
        description="Per configuration folder and in all: its answers, its llm_judge verdicts (a "
        "judge's answers are cached in its configuration's folder), damaged entries (no run can use "
        "them), bytes, and when the oldest and newest entry were stored (its file's time).",
    )
    info.add_argument("folder", nargs="?", type=Path, metavar="DIR", help=folder_help)
    info.set_defaults(older_than=None, configuration=[], all=False, dry_run=False)
    prune: argparse.ArgumentParser = actions.add_parser(
        "prune",
        help="remove answers by age (--older-than), configuration (--configuration) or all (--all)",
        description="Remove the answers stored more than DURATION ago (--older-than), those of the "
        "configurations named (--configuration; with --older-than, only their older ones), or all "
        "(--all); the folders of configurations left empty go too. Damaged entries and temporary "
        "files left by killed sessions go with any prune of their configuration (alone, prune removes "
        "only those). A temporary file younger than a minute, another session's write in progress, "
        "stays; links and files of other names are never touched. Exit 1 when a file cannot be removed.",
    )
    prune.add_argument("folder", nargs="?", type=Path, metavar="DIR", help=folder_help)
    prune.add_argument(
        "--older-than",
        type=_duration,
        metavar="DURATION",
        help="answers stored more than DURATION ago: 30d, 12h, 90m, 45s, 2w, or a sum such as 1d12h",
    )
    prune.add_argument(
        "--configuration",
        action="append",
        default=[],
        metavar="ID",
        help="the answers of configuration ID (its llm_judge verdicts if it judges); repeatable",
    )
    prune.add_argument(
        "--all", action="store_true", help="every answer (the folder stays a cache, with its CACHEDIR.TAG)"
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    return prune


def _escape_what_the_terminal_cannot_show() -> None:
    """Print a character the output's encoding lacks as its escape (``\\xd7``), as pytest's own
    output does: in the C locale without Python's UTF-8 mode that encoding is ASCII, and a run
    title's ``×`` or a row id's ``é`` ended the command in UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> int:
    _escape_what_the_terminal_cannot_show()
    parser = argparse.ArgumentParser(prog="python -m pytest_vibeeval")
    sub = parser.add_subparsers(dest="command", required=True)
    schema = sub.add_parser(
        "schema",
        help="write the JSON Schemas shipped in the package",
        description="Write the JSON Schemas of the results file, YAML suites (suite.schema.json), "
        "cli-config.json, eval-config.json and command-registry.json into DIR, or check them.",
    )
    action = schema.add_mutually_exclusive_group()
    action.add_argument(
        "--package",
        action="store_true",
        help="rewrite the schemas shipped in the package (in a source checkout of pytest-vibeeval)",
    )
    action.add_argument("--check", action="store_true", help="fail if a schema is missing or out of date")
    action.add_argument("--print-dir", action="store_true", help="print the package's schema folder")
    schema.add_argument(
        "--dir", type=Path, help="write (or check) the schemas in DIR instead, e.g. for editor settings"
    )
    compare = sub.add_parser(
        "compare",
        help="compare a results file with a baseline results file",
        description="Pair the runs of NEW with BASELINE's by suite file and configuration, and label each "
        "by its score delta. `latest` stands for .vibeeval/results/latest.json under the current folder.",
    )
    compare.add_argument("baseline", help="the baseline results file (or `latest`)")
    compare.add_argument("new", help="the new results file (or `latest`)")
    compare.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when a run regressed (labelled regression, or incomparable with an eval that "
        "passed in BASELINE and fails in NEW), or when no run is in both files (nothing compared)",
    )
    outputs = sub.add_parser(
        "outputs",
        help="write the unified runner's outputs/<eval>-<time>/<config>/results.json tree",
        description="Write one results.json per coding-agent eval of RESULTS in the unified runner's "
        "shape (commands, vybes score with its breakdown by module), under DIR. When two suites ran an "
        "eval of one name against one configuration, the later one's folder gets -2 (-3, …) and a note "
        "on stderr says whose is whose.",
    )
    outputs.add_argument("results", help="a results file written with --vibe-results")
    outputs.add_argument(
        "--dir", type=Path, default=Path("outputs"), help="where to write (default: outputs)"
    )
    prune = _add_cache_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "cache":
        if args.all and (args.older_than is not None or args.configuration):
            prune.error(
                "--all removes every answer: give it alone, or --older-than and --configuration without it"
            )
        return cache_command(
            args.cache_action, args.folder, args.older_than, args.configuration, args.all, args.dry_run
        )
    if args.command == "outputs":
        return outputs_command(args.results, args.dir)
    if args.command == "compare":
        return compare_command(args.baseline, args.new, args.fail_on_regression)
    if args.print_dir:
        if args.dir:
            parser.error(
                "--print-dir and --dir exclude each other: --print-dir prints the package's own folder"
            )
        print(SCHEMA_DIR)
        return 0
    if args.package and args.dir:
        parser.error("--package and --dir exclude each other: --package writes the package's own copies")
    return schema_command(args.check, args.dir, args.package)


def run(argv: list[str] | None = None) -> int:
    """:func:`main`, stopping quietly when the reader of its output goes away (``… | head``), as
    command-line tools do: Python printed a BrokenPipeError traceback, and another at exit."""
    try:
        try:
            return main(argv)
        finally:  # also after argparse's --help, which ends in SystemExit
            sys.stdout.flush()
    except BrokenPipeError:
        # Nothing more can be written; point stdout at /dev/null so that the flush at exit is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(run())
