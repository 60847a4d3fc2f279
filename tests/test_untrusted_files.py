"""Files a run reads or writes at a path it was given are checked before they cost anything: a
recorded answer that is a link to /dev/zero, huge, or of the wrong types is an error naming the file;
a --vibe-baseline that is a device or a FIFO is a usage error (no hang, no INTERNALERROR); a
--vibe-results path that cannot be written is a usage error before anything runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import XDIST_MODES, run, write

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


@pytest.mark.parametrize("where", ["folder", "under-a-file"])
def test_a_results_path_that_cannot_be_written_is_a_usage_error_before_the_run(
    pytester: pytest.Pytester, where: str
) -> None:
    write(pytester.path / "rec_app.py", APP)
    ran = pytester.path / "ran"
    write(
        pytester.path / "r.eval.yaml",
        f"""
        metadata: {{name: r, model: m}}
        configurations:
          app: {{cli: "touch", args: ["{ran}"]}}
        evals:
          - {{name: a, prompt: hi}}
        """,
    )
    (pytester.path / "out").mkdir()
    write(pytester.path / "plain", "a file\n")
    target = "out" if where == "folder" else "plain/results.json"
    result = run(pytester, "--vibe-results", target, "--vibe-history=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    expected = (
        f"*--vibe-results: {pytester.path / 'out'} is a folder; name a file in it, e.g. *"
        if where == "folder"
        else f"*--vibe-results: {pytester.path / 'plain'} is not a folder, so * cannot be created*"
    )
    result.stderr.fnmatch_lines([expected])
    assert not ran.exists()  # found before any agent ran, not after the whole run
