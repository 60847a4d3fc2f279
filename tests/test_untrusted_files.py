"""Files a run reads or writes at a path it was given are checked before they cost anything: a
recorded answer that is a link to /dev/zero, huge, or of the wrong types is an error naming the file;
a --vibe-baseline that is a device or a FIFO is a usage error (no hang, no INTERNALERROR); a
--vibe-results path that cannot be written (a folder, under a file, no write permission, a read-only
mount) is a usage error before anything runs. Every other file a
run reads (suites and configs, a history file, an agent's stdout and settings, the results files
grade steps write, prompt parts, progress entries, step logs) is read only if it is a regular file,
and at most a bounded part of it: a FIFO or a link to /dev/zero in its place is refused at once with
a message, never read until memory runs out or waited on forever. (The corpus in tests/hostile/ runs
the same cases through whole pytest sessions.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers import FAST_ARGS, PYTHON, XDIST_MODES, python_suite, run, run_unprivileged, write

from pytest_vibeeval.bounded_read import UnreadableFile, read_bounded, read_end, read_start
from pytest_vibeeval.errors import InputError
from pytest_vibeeval.loading.eval_root import named_paths
from pytest_vibeeval.loading.runner_config import ResolvedEval
from pytest_vibeeval.loading.suite_files import has_evals, looks_like_suite
from pytest_vibeeval.loading.yamlsource import load_document
from pytest_vibeeval.models import OutputSpec
from pytest_vibeeval.progress import PROGRESS_DIR, read_board
from pytest_vibeeval.providers.base import ProviderError
from pytest_vibeeval.providers.cli_mcp import CliMcp, write_settings
from pytest_vibeeval.providers.output import OutputError
from pytest_vibeeval.providers.parsers import parse_agent_output
from pytest_vibeeval.report import baseline
from pytest_vibeeval.report.baseline import read_history
from pytest_vibeeval.runner_outputs import _tail
from pytest_vibeeval.workspace.sandbox import bwrap_problem
from pytest_vibeeval.workspace.steps import PromptFileError, write_prompt
from pytest_vibeeval.workspace.subtasks import collect_modules, collect_subtasks

APP = """
def answer(prompt):
    return "yes"
"""


def recorded_store(pytester: pytest.Pytester) -> Path:
    """A suite of one eval answered by a Python callable, recorded; the recorded answer's file."""
    write(pytester.path / "rec_app.py", APP)
    write(
        pytester.path / "rec.eval.yaml",
        """
        metadata: {name: rec, model: m}
        configurations:
          app: {python: "rec_app:answer"}
        evals:
          - {name: a, prompt: hi, checks: [{equals: "yes"}]}
        """,
    )
    run(pytester, "--vibe-record", "store", "--vibe-history=").assert_outcomes(passed=1)
    (answer,) = (pytester.path / "store").rglob("*.json")
    return answer


def spoil_with_link(answer: Path) -> None:
    answer.unlink()
    answer.symlink_to("/dev/zero")


def spoil_with_size(answer: Path) -> None:
    with answer.open("r+b") as handle:  # sparse: large on paper, nothing on disk
        handle.truncate(300 * 2**20)


def spoil_with_types(answer: Path) -> None:
    entry = json.loads(answer.read_text())
    answer.write_text(json.dumps({**entry, "response": 123}))


@pytest.mark.parametrize(
    ("spoil", "problem"),
    [
        (spoil_with_link, "is unreadable: cannot read it: not a regular file but a character device"),
        (spoil_with_size, "is unreadable: too large to read: 314572800 bytes, more than 268435456"),
        (spoil_with_types, "is not a stored answer: `response` must be text, not 123"),
    ],
    ids=["dev-zero-link", "huge", "response-123"],
)
@XDIST_MODES
def test_a_spoiled_recording_is_an_error_naming_its_file(
    pytester: pytest.Pytester, xdist: list[str], spoil: object, problem: str
) -> None:
    answer = recorded_store(pytester)
    spoil(answer)  # type: ignore[operator]
    result = run(pytester, *xdist, "--vibe-replay", "store", "--vibe-history=", "--vibe-results", "r.json")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert f"recorded answer {answer} {problem}" in output, output
    assert "MemoryError" not in output and "TypeError" not in output and "Traceback" not in output


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_baseline_that_is_no_file_is_a_usage_error(pytester: pytest.Pytester, kind: str) -> None:
    write(pytester.path / "rec_app.py", APP)
    write(pytester.path / "b.eval.yaml", "metadata: {name: b, model: m}\nevals: [{prompt: hi}]\n")
    target = "/dev/zero"
    if kind == "fifo":
        os.mkfifo(pytester.path / "pipe")
        target = str(pytester.path / "pipe")
    result = run(pytester, "--vibe-baseline", target, subprocess=True)  # a hang ends in its timeout
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    what = "a character device" if kind == "device" else "a FIFO"
    result.stderr.fnmatch_lines(
        [f"*--vibe-baseline: {target}: cannot read it: not a regular file but {what}*"]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def _touching_suite(pytester: pytest.Pytester) -> Path:
    """A suite whose one agent creates the file returned: it exists once any agent has run."""
    ran = pytester.path / "ran"
    write(
        pytester.path / "r.eval.yaml",
        f"""
        metadata: {{name: r, model: m}}
        configurations:
          app: {{cli: "touch", args: ["{ran}"]}}
        evals:
          - {{name: a, prompt: hi, checks: [{{match: "*"}}]}}
        """,
    )
    return ran


@pytest.mark.parametrize("where", ["folder", "under-a-file", "name-too-long", "under-a-long-name"])
@pytest.mark.parametrize("option", ["--vibe-results", "--vibe-html"])
def test_a_results_path_that_cannot_be_written_is_a_usage_error_before_the_run(
    pytester: pytest.Pytester, where: str, option: str
) -> None:
    write(pytester.path / "rec_app.py", APP)
    ran = _touching_suite(pytester)
    (pytester.path / "out").mkdir()
    write(pytester.path / "plain", "a file\n")
    long = "a" * 300
    target = {
        "folder": "out",
        "under-a-file": "plain/results.json",
        "name-too-long": f"out/{long}.json",
        "under-a-long-name": f"new/{long}/r.json",  # its folders do not exist yet
    }[where]
    result = run(pytester, option, target, "--vibe-history=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    expected = {
        "folder": f"*{option}: {pytester.path / 'out'} is a folder; name a file in it, e.g. "
        f"{pytester.path / 'out' / ('report.html' if option == '--vibe-html' else 'results.json')}",
        "under-a-file": f"*{option}: {pytester.path / 'plain'} is not a folder, so * cannot be created*",
        "name-too-long": f"*{option}: * cannot be created: a name in it has 305 bytes, at most * allowed",
        "under-a-long-name": f"*{option}: * cannot be created: a name in it has 300 bytes, at most *",
    }[where]
    result.stderr.fnmatch_lines([expected])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not ran.exists()  # found before any agent ran, not after the whole run


@XDIST_MODES
@pytest.mark.parametrize(
    ("first", "second", "spelling"),
    [
        ("--vibe-results", "--vibe-html", "r.json"),
        ("--vibe-results", "--junitxml", "./r.json"),
        ("--vibe-html", "--junitxml", "sub/../r.json"),
        ("--vibe-results", "--vibe-history", "r.json"),
    ],
)
def test_two_outputs_naming_one_file_are_a_usage_error_before_the_run(
    pytester: pytest.Pytester, xdist: list[str], first: str, second: str, spelling: str
) -> None:
    """The one written last would replace the other (the HTML report overwrote the results):
    refused before any agent runs, however the path is spelt."""
    write(pytester.path / "rec_app.py", APP)
    ran = _touching_suite(pytester)
    (pytester.path / "sub").mkdir()
    history = [] if second == "--vibe-history" else ["--vibe-history="]
    result = run(pytester, f"{first}=r.json", f"{second}={spelling}", *history, xdist=xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: {first} and {second} name the same file ({pytester.path / spelling}): give each its "
            "own path, or one of them would replace the other at the end of the run"
        ]
    )
    assert not ran.exists() and not (pytester.path / "r.json").exists()


MOVING_APP = """
import pathlib


def answer(prompt):  # the results folder named on the command line becomes a file meanwhile
    out = pathlib.Path("out")
    if out.is_dir():
        out.rmdir()
        out.write_text("in the way")
    return "hi"
"""


@XDIST_MODES
def test_results_that_cannot_be_written_at_the_end_go_to_the_default_folder(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(pytester.path / "moving_app.py", MOVING_APP)
    write(
        pytester.path / "m.eval.yaml",
        """
        metadata: {name: m, model: m}
        configurations:
          app: {python: "moving_app:answer"}
        evals:
          - {name: a, prompt: hi, checks: [{equals: hi}]}
        """,
    )
    (pytester.path / "out").mkdir()
    result = run(pytester, "--vibe-results", "out/r.json", "--vibe-history=", xdist=xdist)
    result.assert_outcomes(passed=1)
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "Run Summary" in output
    [kept] = (pytester.path / ".vibeeval" / "results").glob("2*.json")
    result.stdout.fnmatch_lines([f"results not written to {pytester.path / 'out' / 'r.json'}: * instead"])
    assert f"they are in {kept} instead" in output
    assert json.loads(kept.read_text())["runs"][0]["evals"][0]["outcome"] == "passed"
    assert not (pytester.path / ".vibeeval" / "results" / "latest.json").exists()  # asked for elsewhere


NOT_A_FOLDER = "{root}/{folder} is not a folder, so {latest} cannot be created"
IN_THE_WAY = {  # what stands where the default results folder's files go, and what is said of it
    "a-file-for-.vibeeval": (".vibeeval", NOT_A_FOLDER.replace("{folder}", ".vibeeval")),
    "a-file-for-results": (".vibeeval/results", NOT_A_FOLDER.replace("{folder}", ".vibeeval/results")),
    "a-folder-for-latest": (".vibeeval/results/latest.json/", "{latest} is a folder"),
}


@XDIST_MODES
@pytest.mark.parametrize(("obstacle", "problem"), IN_THE_WAY.values(), ids=IN_THE_WAY.keys())
def test_a_default_results_folder_that_cannot_be_written_is_a_usage_error_before_the_run(
    pytester: pytest.Pytester, xdist: list[str], obstacle: str, problem: str
) -> None:
    """Without --vibe-results the results go under .vibeeval/results: something in the way there is
    found before any agent runs, not after the whole run (whose results it would lose). A session
    that runs no eval writes nothing there, and is not stopped."""
    ran = _touching_suite(pytester)
    write(pytester.path / "test_plain.py", "def test_plain():\n    pass\n")
    if obstacle.endswith("/"):
        (pytester.path / obstacle).mkdir(parents=True)
    else:
        write(pytester.path / obstacle, "in the way\n")
    result = run(pytester, "--vibe-history=", xdist=xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    folder = pytester.path / ".vibeeval" / "results"
    said = problem.format(root=pytester.path, latest=folder / "latest.json")
    result.stderr.fnmatch_lines(
        [
            f"ERROR: the results folder {folder} cannot be written ({said}): move what is in the way, "
            "or write the results elsewhere with --vibe-results PATH"
        ]
    )
    assert not ran.exists()
    run(pytester, "--vibe-history=", "test_plain.py", xdist=xdist).assert_outcomes(passed=1)
    run(pytester, "--vibe-history=", "--collect-only", "-q").assert_outcomes()


LATEST_IN_THE_WAY_APP = """
import pathlib


def answer(prompt):  # a folder appears where latest.json, the copy of the run's results, goes
    pathlib.Path(".vibeeval/results/latest.json").mkdir(parents=True, exist_ok=True)
    return "hi"
"""


@XDIST_MODES
def test_a_latest_json_that_cannot_be_replaced_leaves_the_results_in_their_own_file(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """The results are written to their timestamped file, then copied to latest.json: when only the
    copy fails, the results are kept and named, the history line names their file, and the Run
    Summary says that latest.json is not this run's."""
    evals = ["{name: a, prompt: hi, checks: [{equals: hi}]}"]
    python_suite(pytester.path / "m.eval.yaml", evals, "latest_app:answer", LATEST_IN_THE_WAY_APP)
    result = run(pytester, xdist=xdist)
    assert result.ret == pytest.ExitCode.OK
    folder = pytester.path / ".vibeeval" / "results"
    [kept] = folder.glob("2*.json")
    output = result.stdout.str()
    assert "Traceback" not in output and "results not written" not in output, output
    result.stdout.fnmatch_lines(
        [
            f"{folder / 'latest.json'} not replaced: Is a directory; this run's results are in {kept} "
            "only (latest.json is not this run's)",
            f"results: {kept}",
        ]
    )
    assert json.loads(kept.read_text())["runs"][0]["evals"][0]["outcome"] == "passed"
    [line] = (pytester.path / ".vibeeval" / "history.jsonl").read_text().splitlines()
    assert json.loads(line)["results"] == f".vibeeval/results/{kept.name}"


@XDIST_MODES
@pytest.mark.parametrize("how", ["permissions", "read-only-mount"])
def test_a_results_folder_without_write_permission_is_a_usage_error_before_the_run(
    pytester: pytest.Pytester, how: str, xdist: list[str]
) -> None:
    """A folder made read-only by its mode (0o500), or, for root (whom modes do not stop), one
    mounted read-only (pytest run in bwrap with the folder bound read-only)."""
    if how == "permissions" and os.geteuid() == 0:
        pytest.skip("root writes whatever the mode says; the read-only-mount case covers root")
    if how == "read-only-mount" and bwrap_problem() is not None:
        pytest.skip(f"a read-only mount needs bwrap: {bwrap_problem()}")
    ran = _touching_suite(pytester)
    locked = pytester.path / "locked"
    locked.mkdir()
    prefix: list[str] = []
    if how == "permissions":
        locked.chmod(0o500)
    else:
        prefix = ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(locked), str(locked)]
    args = [*FAST_ARGS, *xdist, "--vibe-sandbox", "none", "--vibe-history="]
    try:
        done = subprocess.run(
            [*prefix, PYTHON, "-m", "pytest", *args, "--vibe-results", str(locked / "results.json")],
            cwd=pytester.path,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        locked.chmod(0o700)
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert f"--vibe-results: {locked} is not writable" in done.stderr, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    assert not ran.exists()  # found before any agent ran, not after the whole run


@XDIST_MODES
@pytest.mark.parametrize(
    "option", [[], ["--vibe-results", ".vibeeval/results/latest.json"]], ids=["default", "explicit"]
)
def test_a_read_only_results_file_in_a_writable_folder_is_replaced(
    pytester: pytest.Pytester, xdist: list[str], option: list[str]
) -> None:
    """The results are written beside their file and renamed over it, which the folder's write
    permission allows whatever the file's mode: a read-only latest.json (mode 444, as a checkout or a
    copy may leave it), or --vibe-results file, was refused as `… is not writable`, stopping every
    run. Run as a user file modes stop (for root, without the capabilities that bypass them)."""
    ran = _touching_suite(pytester)
    latest = write(pytester.path / ".vibeeval" / "results" / "latest.json", "{}\n")
    latest.chmod(0o444)
    result = run_unprivileged(pytester, *xdist, "--vibe-sandbox", "none", "--vibe-history=", *option)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert ran.exists()
    assert json.loads(latest.read_text())["runs"][0]["evals"][0]["outcome"] == "passed"


# --- every other file read: a FIFO or /dev/zero in its place ---------------------------------------


def special(path: Path, kind: str) -> Path:
    """Make ``path`` a FIFO (nobody writes to it: a plain open would wait forever) or a link to
    /dev/zero (a plain read would never end)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


SPECIAL = pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
WHAT = {"fifo": "not a regular file but a FIFO", "dev-zero": "not a regular file but a character device"}


@SPECIAL
def test_bounded_reads_refuse_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    path = special(tmp_path / "f", kind)
    for read in (lambda: read_bounded(path, 10), lambda: read_start(path, 10), lambda: read_end(path, 10)):
        with pytest.raises(UnreadableFile, match=f"^cannot read it: {WHAT[kind]}$"):
            read()


def test_bounded_reads_of_a_regular_file_keep_its_start_or_end(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    assert read_start(path, 4) == b"0123"
    assert read_end(path, 4) == (b"6789", True)
    assert read_end(path, 10) == (b"0123456789", False)
    with pytest.raises(UnreadableFile, match="too large to read: 10 bytes, more than 9"):
        read_bounded(path, 9)


@SPECIAL
def test_a_suite_or_config_that_is_not_a_regular_file_is_an_input_error(tmp_path: Path, kind: str) -> None:
    path = special(tmp_path / "command-registry.json", kind)
    with pytest.raises(InputError) as caught:
        load_document(path)
    assert str(caught.value).startswith(f"{path}: cannot read it: {WHAT[kind]}\n    hint: ")
    assert not has_evals(path) and not looks_like_suite(path)  # the uncollected-suites scan
    assert named_paths(path) == []  # its problems are reported when it is loaded (above)


def test_a_suite_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.eval.yaml"
    with path.open("wb") as handle:  # sparse: large on paper, nothing on disk
        handle.truncate(65 * 2**20)
    with pytest.raises(InputError, match="too large to read: 68157440 bytes, more than 67108864"):
        load_document(path)


@SPECIAL
def test_a_history_that_is_not_a_regular_file_is_a_listed_problem(tmp_path: Path, kind: str) -> None:
    path = special(tmp_path / "history.jsonl", kind)
    assert read_history(path) == (
        [],
        [f"{path}: cannot read it: {WHAT[kind]}; point --vibe-history at a regular file"],
    )


def test_of_a_large_history_only_the_end_is_read_and_the_problems_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps({"n": n}) + "\n" for n in range(100)) + "[1]\n", encoding="utf-8")
    monkeypatch.setattr(baseline, "MAX_HISTORY_BYTES", 2**20)
    assert read_history(path).entries == [{"n": n} for n in range(100)]  # smaller: read whole
    monkeypatch.setattr(baseline, "MAX_HISTORY_BYTES", 34)  # the last 34 bytes: 3 whole lines + [1]
    history = read_history(path)
    assert history.entries == [{"n": 97}, {"n": 98}, {"n": 99}]
    monkeypatch.setattr(baseline, "MAX_HISTORY_BYTES", 33)  # the line of 97 is cut: left out
    history = read_history(path)
    assert history.entries == [{"n": 98}, {"n": 99}]
    assert history.problems == [
        f"{path}: larger than 33 bytes; only its last 33 bytes were read",
        f"{path} (a line near its end): not a JSON object; skipped",
    ]


@SPECIAL
def test_an_agent_output_that_is_not_a_regular_file_is_an_output_error(tmp_path: Path, kind: str) -> None:
    path = special(tmp_path / "stdout", kind)
    for spec in (
        OutputSpec(),
        OutputSpec(format="json", response="r"),
        OutputSpec(format="jsonl", response="r"),
    ):
        with pytest.raises(
            OutputError, match=re.escape(f"agent output {path}: cannot read it: {WHAT[kind]}")
        ):
            parse_agent_output(path, spec)
    with pytest.raises(OutputError, match=WHAT[kind]):
        parse_agent_output(path, OutputSpec(parser="aider"))


@SPECIAL
def test_an_agent_settings_file_that_is_not_a_regular_file_is_a_provider_error(
    tmp_path: Path, kind: str
) -> None:
    special(tmp_path / ".gemini" / "settings.json", kind)
    given = CliMcp(settings=(Path(".gemini", "settings.json"), {"mcpServers": {}}))
    with pytest.raises(
        ProviderError,
        match=f"cannot add the suite's mcp_server to .*settings.json: cannot read it: {WHAT[kind]}",
    ):
        write_settings(tmp_path, given)


@SPECIAL
def test_a_results_file_a_grade_step_made_unreadable_is_ignored_with_a_note(
    tmp_path: Path, kind: str
) -> None:
    special(tmp_path / "results.json", kind)
    special(tmp_path / "module.json", kind)
    assert collect_subtasks(tmp_path, ["**/results*.json"]).notes == (
        f"results file results.json ignored: cannot read it: {WHAT[kind]}",
    )
    subtasks, modules = collect_modules(tmp_path)
    assert modules is None
    assert subtasks.notes == (f"results file module.json ignored: cannot read it: {WHAT[kind]}",)


@SPECIAL
def test_a_prompt_part_that_is_not_a_regular_file_stops_the_prompt(tmp_path: Path, kind: str) -> None:
    workspace = tmp_path / "workspace"
    special(workspace / "problem.md", kind)
    evaluation = ResolvedEval("task", workspace, tmp_path, "Solve it.", (), (), None)
    with pytest.raises(
        PromptFileError, match=f"the prompt is not written: .*problem.md: cannot read it: {WHAT[kind]}"
    ):
        write_prompt(evaluation, None, workspace)
    (workspace / "problem.md").unlink()
    instructions = special(tmp_path / "instructions.md", kind)
    with pytest.raises(PromptFileError, match=r"instructions\.md: cannot read it"):
        write_prompt(evaluation, instructions, workspace)


@SPECIAL
def test_progress_entries_and_step_logs_that_are_not_regular_files_are_passed_over(
    tmp_path: Path, kind: str
) -> None:
    special(tmp_path / PROGRESS_DIR / f"{os.getpid()}.json", kind)
    assert read_board(tmp_path) == []
    assert _tail(special(tmp_path / "step.log", kind)) == ""


def test_a_step_log_keeps_its_last_characters_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_vibeeval import runner_outputs

    log = tmp_path / "step.log"
    log.write_text("é" * 10 + "a\r\nb\rc", encoding="utf-8")
    assert _tail(log) == "é" * 10 + "a\nb\nc"
    monkeypatch.setattr(runner_outputs, "MAX_LOG_CHARS", 8)
    assert _tail(log) == "éééa\nb\nc"


def test_a_file_that_grew_after_it_was_opened_is_read_to_its_end_or_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads ask for about the size the file had when opened: what it wrote since is read too."""
    from pytest_vibeeval import bounded_read

    path = tmp_path / "grown"
    data = bytes(range(256)) * 1000  # 256 000 bytes, more than one read's least (64 KiB)
    path.write_bytes(data)
    opened = bounded_read._open_regular
    monkeypatch.setattr(bounded_read, "_open_regular", lambda p: (opened(p)[0], 10))  # as it was
    assert read_bounded(path, len(data)) == data
    assert read_start(path, 200_000) == data[:200_000]
    with pytest.raises(UnreadableFile, match="more than 100000 bytes"):
        read_bounded(path, 100_000)
