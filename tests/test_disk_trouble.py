"""A disk that fails a session while it runs (full, or a file-size limit: ``RLIMIT_FSIZE`` in the
pytest process makes every write past it fail as a full disk does): what could not be written is
named, nothing half-written is left behind, no traceback comes from the plugin, and a session whose
results could be written nowhere does not exit as if it had passed."""

from __future__ import annotations

import pytest
from helpers import XDIST_MODES, evals_by_nodeid, load_json, python_suite, run, run_with_file_limit, write

APP = """
def answer(prompt):
    return prompt
"""

SMALL = 4096  # bytes: less than the results of two evals


def gated_suite(pytester: pytest.Pytester) -> None:
    """Two evals that pass, in a run with a score gate they pass too."""
    python_suite(
        pytester.path / "gated.eval.yaml",
        ["{name: a, prompt: hi, checks: [{equals: hi}]}", "{name: b, prompt: yo, checks: [{equals: yo}]}"],
        app=APP,
        top="score: {min: 50}",
    )


@XDIST_MODES
@pytest.mark.parametrize(
    "args",
    [[], ["--vibe-results", "out/r.json"], ["--no-summary"]],
    ids=["default", "vibe-results", "no-summary"],
)
def test_results_that_can_be_written_nowhere_fail_the_session_and_say_so(
    pytester: pytest.Pytester, xdist: list[str], args: list[str]
) -> None:
    """Every eval passed and the gate with them, but nothing records it: the session fails (exit 1),
    saying where the results could not go and why (also with --no-summary, which prints only what
    failed the session), and no partial results file is left where a later run would read it as
    results. The session's journal stays (without --vibe-results, which keeps none): it holds the
    finished evals for a later --vibe-resume."""
    gated_suite(pytester)
    result = run_with_file_limit(pytester, SMALL, "--vibe-history=", *args, xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2)
    folder = pytester.path / ".vibeeval" / "results"
    where = f"{folder}: File too large"
    if args and args[0] == "--vibe-results":
        where = f"{pytester.path / 'out' / 'r.json'}: File too large, nor to {where}"
    result.stdout.fnmatch_lines(
        [f"RESULTS NOT WRITTEN to {where}; nothing records this session's runs and score gates, so it fails"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    left = [path.name for path in folder.iterdir()]
    journals = [name for name in left if name.endswith(".journal.jsonl")]
    assert left == journals and len(journals) == (0 if args[:1] == ["--vibe-results"] else 1), left
    assert not (pytester.path / "out" / "r.json").exists()


@XDIST_MODES
@pytest.mark.parametrize("how", ["disk-full", "killed"])
def test_a_cache_folder_left_half_made_is_used_by_the_next_run(
    pytester: pytest.Pytester, xdist: list[str], how: str
) -> None:
    """A session that ran out of disk, or was killed, while it marked a new --vibe-cache folder as a
    cache left it without its CACHEDIR.TAG: the next session uses the folder (and marks it), it does
    not refuse it as a folder of other files."""
    gated_suite(pytester)
    cache = pytester.path / "cache"
    if how == "disk-full":
        full = run_with_file_limit(pytester, 64, "--vibe-cache=cache", "--vibe-history=", xdist=xdist)
        full.assert_outcomes(passed=2)
        full.stdout.fnmatch_lines([f"*answer not cached in {cache}/app/*.json: File too large*"])
        assert list(cache.iterdir()) == []  # nothing half-written left behind
    else:
        write(cache / ".CACHEDIR.TAG.4242", "Signature: 8a47")  # the temporary tag of a killed session
    first = run(pytester, "--vibe-cache=cache", "--vibe-history=", xdist=xdist)
    first.assert_outcomes(passed=2)
    assert (cache / "CACHEDIR.TAG").is_file()
    again = run(pytester, "--vibe-cache=cache", "--vibe-history=", xdist=xdist)
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(["Cache: 2 answers from cache, 0 asked (cache)*"])


@XDIST_MODES
def test_an_agent_whose_input_file_cannot_be_written_is_an_error_saying_so(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A prompt too long for a pipe reaches an agent CLI through a file in the item's folder: when
    that file cannot be written, the eval is an error naming the folder and why, not a traceback
    from the plugin's code, and the other evals run on."""
    long = "x" * 20000
    write(
        pytester.path / "cat.eval.yaml",
        f"""
        metadata: {{name: cat, model: m}}
        configurations:
          cat: {{cli: cat}}
        evals:
          - {{name: long, prompt: "{long}", checks: [{{match: "x*"}}]}}
          - {{name: short, prompt: "xyz", checks: [{{match: "x*"}}]}}
        """,
    )
    args = ("--vibe-results", "r.json", "--vibe-history=", "--basetemp", str(pytester.path / "tmp"))
    result = run_with_file_limit(pytester, 16384, *args, xdist=xdist)
    result.assert_outcomes(failed=1, passed=1)
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "OSError" not in output, output
    folder = next((pytester.path / "tmp").glob("**/*-long-cat"))
    message = f"cannot start 'cat': cannot write its input and output files in {folder}: File too large"
    assert (
        evals_by_nodeid(load_json(pytester.path / "r.json"))["cat.eval.yaml::long[cat]"]["message"] == message
    )
