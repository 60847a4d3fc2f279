"""``python -m pytest_vibeeval cache info|prune``, run as a user runs it, on a cache a real pytest
session made with --vibe-cache: what it shows, and that the next run asks exactly the answers it
pruned again (the Run Summary's ``Cache:`` line counts them); bad input is exit 2 with a message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import run, run_summary, write

APP = """
import os

def answer(prompt, context):
    with open(os.environ["APP_CALLS"], "a") as calls:
        calls.write(context.eval_id + "\\n")
    return "yes " + prompt

def verdict(prompt, context):
    return '{"pass": true, "reason": "it says yes"}'
"""
SUITE = """
metadata: {name: app, model: m}
configurations:
  app: {python: "cache_app:answer"}
  grader: {python: "cache_app:verdict"}
default_configurations: [app]
judge: grader
evals:
  - {name: a, prompt: alpha, checks: [{match: "*alpha"}]}
  - {name: b, prompt: beta, checks: [{match: "*beta"}]}
  - {name: c, prompt: gamma, checks: [{llm_judge: {criteria: "says yes"}}]}
"""


def cache_command(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "cache", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def calls(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The suite (two evals, one judged) and the file its application notes each call in."""
    path = pytester.path / "calls.txt"
    monkeypatch.setenv("APP_CALLS", str(path))
    write(pytester.path / "cache_app.py", APP)
    write(pytester.path / "app.eval.yaml", SUITE)
    return path


def asked(calls: Path) -> list[str]:
    """The evals asked since the last call (and forget them)."""
    found = sorted(calls.read_text().split()) if calls.exists() else []
    calls.unlink(missing_ok=True)
    return found


def cache_line(pytester: pytest.Pytester, *args: str) -> str:
    """A run with --vibe-cache=cache (``args`` more): its Run Summary's ``Cache:`` line."""
    result = run(pytester, "--vibe-cache=cache", "--vibe-history=", "-W", "always", *args)
    result.assert_outcomes(passed=3)
    assert "CacheNote" not in result.stdout.str()  # no entry was unusable (a warning would say so)
    [line] = [line for line in run_summary(result) if line.startswith("Cache:")]
    return line.split("; the cached")[0]


def entry_of(cache: Path, prompt: str) -> Path:
    (found,) = [path for path in cache.rglob("*.json") if json.loads(path.read_text())["prompt"] == prompt]
    return found


def table(stdout: str) -> dict[str, list[str]]:
    """``cache info``'s rows: configuration → answers, llm_judge, damaged."""
    return {line.split()[0]: line.split()[1:4] for line in stdout.splitlines()[2:] if line[:1].isalnum()}


def test_info_then_prune_by_age_configuration_and_all_and_the_next_run_asks_those_again(
    pytester: pytest.Pytester, calls: Path
) -> None:
    cache = pytester.path / "cache"
    assert (
        cache_line(pytester)
        == "Cache: 0 answers from cache, 3 asked (cache); llm_judge: 0 answers from cache, 1 asked"
    )
    assert asked(calls) == ["a", "b", "c"]

    info = cache_command("info", "cache", cwd=pytester.path)
    assert (info.returncode, info.stderr) == (0, "")
    assert info.stdout.splitlines()[0] == f"Response cache {cache}"
    # the judge's verdict is in the judge configuration's folder, shown as one
    assert table(info.stdout) == {
        "app": ["3", "0", "0"],
        "grader": ["0", "1", "0"],
        "total": ["3", "1", "0"],
    }

    old = entry_of(cache, "alpha")
    when = time.time() - 40 * 86400
    os.utime(old, (when, when))
    before = sorted(cache.rglob("*"))
    dry = cache_command("prune", "cache", "--older-than", "30d", "--dry-run", cwd=pytester.path)
    assert dry.returncode == 0 and dry.stdout.startswith(f"would remove app/{old.name} (answer, "), dry.stdout
    assert "(dry run: nothing was removed)" in dry.stdout and sorted(cache.rglob("*")) == before

    pruned = cache_command("prune", "cache", "--older-than", "30d", cwd=pytester.path)
    assert pruned.returncode == 0 and "app: removed 1 answer (" in pruned.stdout and not old.exists()
    line = cache_line(pytester)
    assert line == "Cache: 2 answers from cache, 1 asked (cache); llm_judge: 1 answer from cache, 0 asked"
    assert asked(calls) == ["a"]

    pruned = cache_command("prune", "cache", "--configuration", "grader", cwd=pytester.path)
    assert pruned.returncode == 0, pruned.stderr
    assert "grader: removed 1 llm_judge verdict (" in pruned.stdout and not (cache / "grader").exists()
    line = cache_line(pytester)
    assert line == "Cache: 3 answers from cache, 0 asked (cache); llm_judge: 0 answers from cache, 1 asked"
    assert asked(calls) == []

    pruned = cache_command("prune", "cache", "--all", cwd=pytester.path)
    assert pruned.returncode == 0 and "removed 3 answers, 1 llm_judge verdict" in pruned.stdout
    assert sorted(path.name for path in cache.iterdir()) == ["CACHEDIR.TAG"]
    line = cache_line(pytester)
    assert line == "Cache: 0 answers from cache, 3 asked (cache); llm_judge: 0 answers from cache, 1 asked"
    assert asked(calls) == ["a", "b", "c"]


def test_a_damaged_entry_is_reported_and_pruned(pytester: pytest.Pytester, calls: Path) -> None:
    cache = pytester.path / "cache"
    cache_line(pytester)
    asked(calls)
    damaged = entry_of(cache, "beta")
    damaged.write_text(damaged.read_text()[:40])
    info = cache_command("info", "cache", cwd=pytester.path)
    assert info.returncode == 0 and table(info.stdout)["app"] == ["2", "0", "1"]
    assert f"  app/{damaged.name} is unreadable: " in info.stdout
    pruned = cache_command("prune", "cache", cwd=pytester.path)  # alone: only what no run can use
    assert pruned.returncode == 0 and "app: removed 1 damaged entry (" in pruned.stdout
    assert not damaged.exists()
    line = cache_line(pytester)  # no warning about the entry: it was gone
    assert line == "Cache: 2 answers from cache, 1 asked (cache); llm_judge: 1 answer from cache, 0 asked"
    assert asked(calls) == ["b"]


def test_without_a_folder_it_is_the_cache_pytest_uses_when_started_there(
    pytester: pytest.Pytester, calls: Path
) -> None:
    sub = pytester.mkdir("sub")
    pytester.makeini("[pytest]\n")
    run(pytester, "--vibe-history=", "--vibe-cache").assert_outcomes(passed=3)
    info = cache_command("info", cwd=sub)  # the rootdir is the ini file's folder, above
    assert info.returncode == 0 and info.stdout.startswith(
        f"Response cache {pytester.path / '.vibeeval' / 'cache'}\n"
    )
    # the ini value vibe_cache, relative to the rootdir
    pytester.makeini("[pytest]\nvibe_cache = answers\n")
    run(pytester, "--vibe-history=").assert_outcomes(passed=3)
    info = cache_command("info", cwd=sub)
    assert info.returncode == 0 and info.stdout.startswith(f"Response cache {pytester.path / 'answers'}\n")
    pruned = cache_command("prune", "--all", cwd=sub)
    assert pruned.returncode == 0 and "removed 3 answers, 1 llm_judge verdict" in pruned.stdout
    assert len(list((pytester.path / ".vibeeval" / "cache").rglob("*.json"))) == 4  # the other one stays
    assert not list((pytester.path / "answers").rglob("*.json"))


def test_bad_input_is_exit_2_with_a_message_and_no_traceback(pytester: pytest.Pytester, calls: Path) -> None:
    cache_line(pytester)
    root = pytester.path
    cases: list[tuple[tuple[str, ...], Path, str]] = [
        (("info", "missing"), root, f"error: {root / 'missing'}: no such folder\n"),
        (("info", "app.eval.yaml"), root, f"error: {root / 'app.eval.yaml'} is not a folder\n"),
        (
            ("prune", ".", "--all"),  # the suites' folder is no cache: nothing in it is removed
            root,
            f"error: {root} holds files but is no response cache (it has no CACHEDIR.TAG): nothing in it is "
            "touched; give the folder --vibe-cache stores its answers in\n",
        ),
        (
            ("prune", "cache", "--configuration", "nope", "--configuration", "app"),
            root,
            f"error: the cache {root / 'cache'} holds no answers of configuration 'nope'; it holds those "
            "of: app, grader\n",
        ),
        (
            ("info",),
            root,
            f"error: no response cache at {root / '.vibeeval' / 'cache'}, where pytest --vibe-cache",
        ),
        (
            ("prune", "cache", "--older-than", "30"),
            root,
            "argument --older-than: '30' is not a duration: write",
        ),
        (
            ("prune", "cache", "--all", "--configuration", "app"),
            root,
            "error: --all removes every answer: give",
        ),
        (("prune", "cache", "--older-than", "1d", "--all"), root, "error: --all removes every answer: give"),
    ]
    files = sorted(root.rglob("*"))
    for args, cwd, message in cases:
        done = cache_command(*args, cwd=cwd)
        assert (done.returncode, done.stdout) == (2, ""), (args, done)
        assert message in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
    assert sorted(root.rglob("*")) == files


def test_the_help_lists_the_cache_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "cache" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "cache", "prune", "--help"],
        capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    text = " ".join(done.stdout.split())
    assert done.returncode == 0 and "--older-than DURATION" in text and "--dry-run" in text
    assert "A temporary file younger than a minute, another session's write in progress, stays" in text
