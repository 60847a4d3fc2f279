"""The parse of a suite or config file is kept in ``__pycache__`` beside it and used again only for the
same text read by the same parser; bytecode settings are honoured, and a broken, foreign or
unwritable entry costs a parse, never a wrong document, an error or a hang."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import XDIST_MODES, load_json, python_suite, run, write

from pytest_vibeeval.errors import InputError
from pytest_vibeeval.extensions import builtin_extensions
from pytest_vibeeval.loading import parse_cache, yamlsource
from pytest_vibeeval.loading.suite import load_suite
from pytest_vibeeval.loading.yamlsource import Document, load_document

SUITE = """\
metadata: {name: s, model: m}
configurations:
  app: {python: "app:answer"}
evals:
  - name: first
    prompt: "Say {{ word }} 1e3"
    checks:
      - match: "*42*"
  - {name: second, prompt: Two?, checks: [{contains: "42"}]}
"""


@pytest.fixture(autouse=True)
def writes_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache is written where bytecode is: this shell may say not to."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)


def _fields(document: Document) -> tuple[Any, ...]:
    return document.data, document.lines, document.numbers_as_text, document.templated


def test_a_second_read_takes_the_kept_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    first = load_document(suite)
    entry = tmp_path / "__pycache__" / f"s.eval.yaml.vibeeval-{sys.implementation.cache_tag}.parsed"
    assert entry.is_file()
    monkeypatch.setattr(yamlsource, "_parse_document", lambda path, text: pytest.fail("parsed again"))
    second = load_document(suite)
    assert _fields(second) == _fields(first)
    assert second.path == suite
    assert first.templated == [(("evals", 0, "prompt"), "Say {{ word }} 1e3")]
    assert first.lines[("evals", 1, "name")] == 9


def test_json_files_are_kept_with_their_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write(tmp_path / "eval-config.json", '{\n  "a": 1e3,\n  "b": [true, null]\n}\n')
    first = load_document(config)
    assert first.data == {"a": 1000.0, "b": [True, None]}
    monkeypatch.setattr(yamlsource, "_parse_document", lambda path, text: pytest.fail("parsed again"))
    assert _fields(load_document(config)) == _fields(first)
    assert first.lines[("b",)] == 3


def test_other_text_is_parsed_anew_whatever_the_files_time_and_size(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    load_document(suite)
    stat = suite.stat()
    suite.write_text(SUITE.replace("Two?", "Six?"), encoding="utf-8")  # the same size
    os.utime(suite, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert load_document(suite).data["evals"][1]["prompt"] == "Six?"


def test_nothing_is_written_where_bytecode_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    load_document(write(tmp_path / "s.eval.yaml", SUITE))
    assert not (tmp_path / "__pycache__").exists()


def test_the_pycache_prefix_holds_the_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = tmp_path / "prefix"
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    suite = write(tmp_path / "suites" / "s.eval.yaml", SUITE)
    load_document(suite)
    assert not (suite.parent / "__pycache__").exists()
    kept = list(prefix.rglob("*.parsed"))
    assert [path.name for path in kept] == [suite.name + parse_cache.SUFFIX]
    assert str(kept[0].parent).endswith(str(suite.parent))


@pytest.mark.parametrize(
    "broken",
    ["garbage", "truncated", "another tuple", "a folder", "a FIFO", "a link to nothing"],
)
def test_a_broken_entry_costs_a_parse_and_is_replaced(tmp_path: Path, broken: str) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    expected = _fields(load_document(suite))
    entry = parse_cache.entry_path(suite)
    blob = entry.read_bytes()
    entry.unlink()
    if broken == "garbage":
        entry.write_bytes(b"\x00not marshal at all")
    elif broken == "truncated":
        entry.write_bytes(blob[: len(blob) // 2])
    elif broken == "another tuple":
        import marshal

        entry.write_bytes(marshal.dumps(("x", 1, 2)))
    elif broken == "a folder":
        entry.mkdir()
    elif broken == "a FIFO":
        os.mkfifo(entry)  # read without waiting for a writer that never comes
    else:
        entry.symlink_to(tmp_path / "nowhere")
    assert _fields(load_document(suite)) == expected
    if broken != "a folder":  # a folder is not replaced by a rename; the next read parses again
        assert entry.is_file() and not entry.is_symlink()
        assert _fields(load_document(suite)) == expected


def test_an_unwritable_cache_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "__pycache__").write_text("a file where the folder goes")
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    assert load_document(suite).data["metadata"] == {"name": "s", "model": "m"}
    assert (tmp_path / "__pycache__").read_text() == "a file where the folder goes"


def test_a_date_is_not_kept_but_read(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.yaml", "when: 2024-01-01\n")
    assert str(load_document(suite).data["when"]) == "2024-01-01"
    assert not parse_cache.entry_path(suite).exists()


def test_another_parser_does_not_take_the_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver added to the loader (as a plugin may) changes what the text reads as."""
    suite = write(tmp_path / "s.yaml", "value: ~x\n")
    assert load_document(suite).data == {"value": "~x"}

    class Tilde(yamlsource._LOADER):  # type: ignore[misc,valid-type]
        pass

    Tilde.add_implicit_resolver("tag:yaml.org,2002:null", __import__("re").compile(r"^~x$"), ["~"])
    monkeypatch.setattr(yamlsource, "_LOADER", Tilde)
    assert load_document(suite).data == {"value": None}
    before = parse_cache.parser_fingerprint(Tilde)
    yaml.add_constructor("!x", lambda loader, node: 1, Loader=Tilde)
    assert parse_cache.parser_fingerprint(Tilde) != before


def test_messages_from_a_kept_parse_name_the_same_lines(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE.replace('contains: "42"', "contains: 42, oops: 1"))
    messages = []
    for _ in range(2):
        with pytest.raises(InputError) as caught:
            load_suite(suite, builtin_extensions())
        messages.append(caught.value.render(tmp_path))
    assert messages[0] == messages[1]
    assert ":9" in messages[0]


@XDIST_MODES
def test_sessions_use_the_kept_parse_and_see_an_edit(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    app = "def answer(prompt):\n    return 'The answer is 42.'\n"
    suite = python_suite(
        pytester.path / "s.eval.yaml", ["{name: a, prompt: A?, checks: [{match: '*42*'}]}"], app=app
    )
    results = pytester.path / "r.json"
    first = run(pytester, "--vibe-results", results, xdist=xdist, subprocess=True)
    first.assert_outcomes(passed=1)
    assert parse_cache.entry_path(suite).is_file()
    again = run(pytester, "--vibe-results", results, xdist=xdist, subprocess=True)
    again.assert_outcomes(passed=1)
    suite.write_text(suite.read_text() + "  - {name: b, prompt: B?, checks: [{match: '*43*'}]}\n")
    edited = run(pytester, "--vibe-results", results, xdist=xdist, subprocess=True)
    edited.assert_outcomes(passed=1, failed=1)
    evals = [record["name"] for record in load_json(results)["runs"][0]["evals"]]
    assert evals == ["a", "b"]
