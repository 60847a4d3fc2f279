"""The real vibecheck corpus (tests/compat/vibecheck, see its PROVENANCE.md) collects and runs unchanged.

The corpus is kept in the repository, byte for byte as the project's shared compatibility corpus
(`shared/compat/vibecheck` beside the checkout, where there is one) has it, so that these tests run
in any clone."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

CORPUS = Path(__file__).resolve().parent / "compat" / "vibecheck"
SHARED_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "compat" / "vibecheck"
FIXTURES = CORPUS / "fixtures"
VALID_FIXTURES = ("all-check-types.yaml", "multiple-not-match.yaml", "valid-eval.yaml")
INVALID_FIXTURES = ("invalid-schema.yaml", "old-format.yaml", "malformed.yaml")

BASE_ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
STAND_IN_ANSWER = "Hello! The answer is 3 (three), or 4."
CLI_CONFIG = {"configurations": {"stand-in": {"python": "standin:answer", "name": "Stand-in"}}}
STAND_IN = f"""\
def answer(prompt):
    return {STAND_IN_ANSWER!r}
"""

# No eval may reach the network: every socket connection in the pytester run fails loudly.
NO_NETWORK_CONFTEST = """\
import socket

import pytest


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
"""


def valid_files() -> list[Path]:
    return sorted(CORPUS.glob("*.yaml")) + [FIXTURES / name for name in VALID_FIXTURES]


def eval_count(path: Path) -> int:
    return len(yaml.safe_load(path.read_text(encoding="utf-8"))["evals"])


def _no_traceback(text: str) -> None:
    assert "Traceback" not in text
    assert 'File "' not in text


@pytest.fixture
def corpus(pytester: pytest.Pytester) -> Path:
    """The corpus files copied unchanged into the pytester folder, with a stand-in configuration."""
    for path in [*valid_files(), *(FIXTURES / name for name in INVALID_FIXTURES)]:
        target = pytester.path / path.name
        assert not target.exists(), f"two corpus files named {path.name}"
        target.write_bytes(path.read_bytes())
    (pytester.path / "cli-config.json").write_text(json.dumps(CLI_CONFIG), encoding="utf-8")
    (pytester.path / "standin.py").write_text(STAND_IN, encoding="utf-8")
    (pytester.path / "conftest.py").write_text(NO_NETWORK_CONFTEST, encoding="utf-8")
    return pytester.path


def test_corpus_is_present() -> None:
    assert (CORPUS / "PROVENANCE.md").is_file(), f"the compatibility corpus is missing at {CORPUS}"
    names = {path.name for path in CORPUS.glob("*.yaml")}
    assert {"strawberry.yaml", "linear-mcp.yaml", "lang.yaml", "sports.yaml"} <= names
    for name in (*VALID_FIXTURES, *INVALID_FIXTURES):
        assert (FIXTURES / name).is_file()


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_the_corpus_is_the_shared_one_byte_for_byte() -> None:
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"no shared compatibility corpus beside this checkout ({SHARED_CORPUS}) to compare with")
    assert _tree(CORPUS) == _tree(SHARED_CORPUS)


def test_copies_are_unchanged(corpus: Path) -> None:
    for path in valid_files():
        assert (corpus / path.name).read_bytes() == path.read_bytes()


def test_every_valid_file_collects_one_item_per_eval(pytester: pytest.Pytester, corpus: Path) -> None:
    files = [path.name for path in valid_files()]
    result = pytester.runpytest("--collect-only", "-q", *BASE_ARGS, *files)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out
    assert "error" not in out.lower()
    _no_traceback(out)
    items = [line for line in result.stdout.lines if "::" in line]
    per_file = Counter(line.split("::", 1)[0] for line in items)
    expected = {name: eval_count(corpus / name) for name in files}
    assert dict(per_file) == expected
    assert all(line.endswith("[stand-in]") for line in items)
    assert len(set(items)) == len(items), "item ids must be unique"
    assert f"{sum(expected.values())} tests collected" in out


def test_all_check_types_and_templates_are_understood(pytester: pytest.Pytester, corpus: Path) -> None:
    """Collecting parses every check of every eval: a spot check of what the items hold."""
    result = pytester.runpytest("--collect-only", "-q", *BASE_ARGS, "linear-mcp.yaml", "hello-world.yaml")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "linear-mcp.yaml::using-linear-list-the-most-recent-issues[[]stand-in]",
            "linear-mcp.yaml::get-the-deatils-on-linear-todo-item-1[[]stand-in]",
            "linear-mcp.yaml::create-a-new-to-do-item-in-linear-for[[]stand-in]",
            "hello-world.yaml::say-hello[[]stand-in]",
            "hello-world.yaml::how-are-you-today[[]stand-in]",
            "hello-world.yaml::what-is-2-2[[]stand-in]",
        ]
    )


def test_strawberry_runs_without_the_network(pytester: pytest.Pytester, corpus: Path) -> None:
    evals = eval_count(corpus / "strawberry.yaml")
    result = pytester.runpytest(*BASE_ARGS, "--vibe-results", "results.json", "strawberry.yaml")
    outcomes = result.parseoutcomes()
    assert set(outcomes) <= {"passed", "failed"}, outcomes
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == evals
    assert "network access attempted" not in result.stdout.str()
    (run,) = json.loads((corpus / "results.json").read_text())["runs"]
    assert (run["suite"], run["configuration"]) == ("strawberry", "stand-in")
    assert len(run["evals"]) == evals
    assert {record["response"] for record in run["evals"]} == {STAND_IN_ANSWER}
    first = run["evals"][0]  # How many Rs are in 'strawberry'? or: *3* / *three* / *Three*
    assert first["outcome"] == "passed"
    assert first["checks"][0]["type"] == "or"
    result.stdout.fnmatch_lines(["*= Run Summary =*", "strawberry * stand-in (Stand-in)*"])


def test_whole_corpus_runs_without_the_network(pytester: pytest.Pytester, corpus: Path) -> None:
    """Every eval ends passed, failed or skipped (semantic/llm_judge undecided, linear vars unset)."""
    files = [path.name for path in valid_files()]
    result = pytester.runpytest(*BASE_ARGS, "-q", *files)
    outcomes = result.parseoutcomes()
    assert set(outcomes) <= {"passed", "failed", "skipped"}, outcomes
    assert sum(outcomes.values()) == sum(eval_count(corpus / name) for name in files)
    out = result.stdout.str()
    assert "network access attempted" not in out
    assert "error" not in outcomes


@pytest.mark.parametrize(
    ("name", "line", "fragments"),
    [
        ("invalid-schema.yaml", 1, ["metadata: missing required key 'model'"]),
        ("old-format.yaml", 9, ["evals[0].checks[0]: legacy check format (`type: string_contains`)", "*X*"]),
        # libyaml says "... in this context", PyYAML's pure-Python parser "... here"
        (
            "malformed.yaml",
            1,
            ["invalid YAML: mapping values are not allowed", "hint: the value of `invalid` holds `: `"],
        ),
    ],
)
def test_invalid_fixture_is_rejected_clearly(
    pytester: pytest.Pytester, corpus: Path, name: str, line: int, fragments: list[str]
) -> None:
    result = pytester.runpytest(*BASE_ARGS, name, "valid-eval.yaml")
    result.assert_outcomes(passed=1, errors=1)  # the valid suite still ran, with no extra flag
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert f"{name}:{line}: {fragments[0]}" in out  # relative to the rootdir
    for fragment in fragments:
        assert fragment in out
    if name == "old-format.yaml":
        assert "legacy" in out and "- match:" in out
        assert "no longer supported" in out
    _no_traceback(out)


def test_invalid_schema_reports_the_legacy_object_checks_too(pytester: pytest.Pytester, corpus: Path) -> None:
    result = pytester.runpytest(*BASE_ARGS, "--collect-only", "-q", "invalid-schema.yaml")
    out = result.stdout.str()
    path = "invalid-schema.yaml"
    assert f"{path}:1: metadata: missing required key 'model'" in out
    assert f"{path}:7: evals[0].checks: object-form `checks:` is the legacy format" in out
    assert '- match: "*4*"' in out  # how to write it instead
    _no_traceback(out)


def test_invalid_files_do_not_stop_the_others(pytester: pytest.Pytester, corpus: Path) -> None:
    files = [path.name for path in valid_files()] + list(INVALID_FIXTURES)
    result = pytester.runpytest(*BASE_ARGS, "--collect-only", "-q", *files)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    total = sum(eval_count(path) for path in valid_files())
    assert f"{total} tests collected, 3 errors" in out
    for name in INVALID_FIXTURES:
        assert f"ERROR {name}" in out
    _no_traceback(out)


def test_corpus_files_collect_by_suffix_too(pytester: pytest.Pytester) -> None:
    """Renamed to *.eval.yaml the files are found without naming them."""
    for path in valid_files():
        shutil.copyfile(path, pytester.path / (path.stem + ".eval.yaml"))
    (pytester.path / "cli-config.json").write_text(json.dumps(CLI_CONFIG), encoding="utf-8")
    (pytester.path / "standin.py").write_text(STAND_IN, encoding="utf-8")
    result = pytester.runpytest("--collect-only", "-q", *BASE_ARGS)
    assert result.ret == pytest.ExitCode.OK
    total = sum(eval_count(path) for path in valid_files())
    assert f"{total} tests collected" in result.stdout.str()


def test_the_network_guard_works(pytester: pytest.Pytester, corpus: Path) -> None:
    """The guard used above really stops a configuration that reaches for the network."""
    (corpus / "standin.py").write_text(
        "import socket\n\ndef answer(prompt):\n    socket.create_connection(('example.invalid', 80))\n",
        encoding="utf-8",
    )
    result = pytester.runpytest(*BASE_ARGS, "valid-eval.yaml")
    result.assert_outcomes(failed=1)
    assert "network access attempted" in result.stdout.str()
