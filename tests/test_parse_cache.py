"""A suite's parse is kept in pytest's cache folder and used again only for the same text read by the
same parser; a broken, foreign or unwritable entry costs a parse, never a wrong document, an error,
a crash or a hang; nothing is written beside the suites, and ``-p no:cacheprovider`` keeps nothing."""

from __future__ import annotations

import copy
import functools
import marshal
import os
import re
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import FAST_ARGS_WITH_CACHE, XDIST_MODES, load_json, python_suite, write

from pytest_vibeeval.errors import InputError
from pytest_vibeeval.extensions import builtin_extensions
from pytest_vibeeval.filenames import PARSED_SUITES_FOLDER
from pytest_vibeeval.loading import parse_cache, yamlsource
from pytest_vibeeval.loading.parse_cache import ParseStore
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
LIMITS = (yamlsource.MAX_NODES, yamlsource.MAX_DEPTH)


def _fields(document: Document) -> tuple[Any, ...]:
    return document.data, document.lines, document.numbers_as_text, document.templated


def _store(tmp_path: Path) -> ParseStore:
    folder = tmp_path / "cache"
    return ParseStore(lambda: (folder.mkdir(exist_ok=True), folder)[1])


def _never_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsource, "_parse_document", lambda path, text: pytest.fail("parsed again"))


def test_a_second_read_takes_the_kept_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write(tmp_path / "suites" / "s.eval.yaml", SUITE)
    store = _store(tmp_path)
    first = load_document(suite, store)
    entry = store.entry_path(suite)
    assert entry is not None and entry.is_file() and entry.parent == tmp_path / "cache"
    assert os.listdir(suite.parent) == ["s.eval.yaml"]  # nothing beside the suite
    _never_parsed(monkeypatch)
    second = load_document(suite, store)
    assert _fields(second) == _fields(first)
    assert second.path == suite
    assert first.templated == [(("evals", 0, "prompt"), "Say {{ word }} 1e3")]
    assert first.lines[("evals", 1, "name")] == 9


def test_without_a_store_nothing_is_kept_or_taken(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    assert load_document(suite).data["evals"][1]["name"] == "second"
    assert sorted(os.listdir(tmp_path)) == ["s.eval.yaml"]


def test_suites_of_the_same_name_in_two_folders_have_entries_of_their_own(tmp_path: Path) -> None:
    store = _store(tmp_path)
    one = write(tmp_path / "a" / "s.eval.yaml", SUITE)
    two = write(tmp_path / "b" / "s.eval.yaml", SUITE.replace("Two?", "Six?"))
    assert load_document(one, store).data["evals"][1]["prompt"] == "Two?"
    assert load_document(two, store).data["evals"][1]["prompt"] == "Six?"
    assert load_document(one, store).data["evals"][1]["prompt"] == "Two?"
    assert len(os.listdir(tmp_path / "cache")) == 2


def test_other_text_is_parsed_anew_whatever_the_files_time_and_size(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    store = _store(tmp_path)
    load_document(suite, store)
    info = suite.stat()
    suite.write_text(SUITE.replace("Two?", "Six?"), encoding="utf-8")  # the same size
    os.utime(suite, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert load_document(suite, store).data["evals"][1]["prompt"] == "Six?"


def test_an_entry_has_the_suites_permissions(tmp_path: Path) -> None:
    """A suite only its owner may read can hold a secret (an inline header): so can its entry."""
    suite = write(tmp_path / "s.eval.yaml", SUITE.replace("Two?", "Bearer sk-secret"))
    suite.chmod(0o600)
    store = _store(tmp_path)
    load_document(suite, store)
    entry = store.entry_path(suite)
    assert entry is not None and stat.S_IMODE(entry.stat().st_mode) == 0o600


def _entries(folder: Path, ages: dict[str, float], size: int = 10) -> None:
    """Files named like entries in ``folder``, each written ``ages[name]`` seconds ago."""
    now = time.time()
    for name, age in ages.items():
        (folder / name).write_bytes(b"x" * size)
        os.utime(folder / name, (now - age, now - age))


def test_a_write_keeps_the_newest_entries_that_fit_and_nothing_else_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suite renamed or deleted leaves its entry: the folder keeps the last ones written."""
    monkeypatch.setattr(parse_cache, "MAX_ENTRIES", 3)
    store = _store(tmp_path)
    folder = store.folder
    assert folder is not None
    _entries(folder, {f"old{age}.cpython-310.parsed": age for age in (10, 20, 30, 40)})
    (folder / "notes.txt").write_text("not ours", encoding="utf-8")
    (folder / "link.parsed").symlink_to(folder / "old40.cpython-310.parsed")
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    load_document(suite, store)
    entry = store.entry_path(suite)
    assert entry is not None
    assert sorted(os.listdir(folder)) == sorted(
        [entry.name, "old10.cpython-310.parsed", "old20.cpython-310.parsed", "notes.txt", "link.parsed"]
    )
    assert load_document(suite, store).data["evals"][1]["name"] == "second"  # a hit writes nothing
    assert len(os.listdir(folder)) == 5


def test_a_large_entry_goes_before_smaller_older_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    folder = store.folder
    assert folder is not None
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    load_document(suite, store)
    entry = store.entry_path(suite)
    assert entry is not None
    monkeypatch.setattr(parse_cache, "MAX_FOLDER_BYTES", entry.stat().st_size + 1000)
    _entries(folder, {"big.parsed": 10}, size=2000)
    _entries(folder, {"small.parsed": 20, "smaller.parsed": 30}, size=400)
    write(suite, SUITE.replace("Two?", "Six?"))
    load_document(suite, _store(tmp_path))  # the next session's first write
    assert sorted(os.listdir(folder)) == sorted([entry.name, "small.parsed", "smaller.parsed"])


def test_a_session_tidies_at_its_first_write_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every suite of a new checkout is a miss: a look at the whole folder for each would cost their
    square. What a session writes after its first entry is counted by the next session."""
    monkeypatch.setattr(parse_cache, "MAX_ENTRIES", 2)
    suites = [write(tmp_path / f"s{n}.eval.yaml", SUITE.replace("Two?", f"Two {n}?")) for n in range(4)]
    store = _store(tmp_path)
    looks: list[tuple[Any, ...]] = []
    tidy = parse_cache.tidy
    monkeypatch.setattr(parse_cache, "tidy", lambda *args, **kw: looks.append(args) or tidy(*args, **kw))
    for suite in suites:
        load_document(suite, store)
    assert len(looks) == 1
    folder = store.folder
    assert folder is not None and len(os.listdir(folder)) == 4
    entries = [store.entry_path(suite) for suite in suites]
    for age, entry in zip((300, 200, 100), entries, strict=False):
        assert entry is not None
        os.utime(entry, (time.time() - age,) * 2)
    write(suites[3], SUITE)
    load_document(suites[3], _store(tmp_path))
    assert len(looks) == 2
    assert sorted(os.listdir(folder)) == sorted(entry.name for entry in entries[2:] if entry)


def test_a_killed_writers_temporary_files_are_removed_once_old(tmp_path: Path) -> None:
    store = _store(tmp_path)
    folder = store.folder
    assert folder is not None
    hour = parse_cache.LEFT_BEHIND_SECONDS
    _entries(
        folder,
        {
            ".s.eval.yaml-0a1b.cpython-311.parsed.k2jd8x": hour + 60,  # a writer killed long ago
            ".t.eval.yaml-9f8e.cpython-311.parsed.a_9z01": 5,  # maybe writing now
            ".latest.json.q1w2e3": hour + 60,  # not ours
        },
    )
    load_document(write(tmp_path / "s.eval.yaml", SUITE), store)
    left = sorted(name for name in os.listdir(folder) if name.startswith("."))
    assert left == [".latest.json.q1w2e3", ".t.eval.yaml-9f8e.cpython-311.parsed.a_9z01"]


def _flip_last_byte(blob: bytes) -> bytes:
    return blob[:-1] + bytes([blob[-1] ^ 0x01])


@pytest.mark.parametrize(
    "broken",
    [
        "garbage",
        "truncated",
        "a payload byte changed",
        "a header of another text",
        "marshal data of another shape",
        "a folder",
        "a FIFO",
        "a link to nothing",
    ],
)
def test_a_broken_entry_costs_a_parse_and_is_replaced(tmp_path: Path, broken: str) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    store = _store(tmp_path)
    expected = _fields(load_document(suite, store))
    entry = store.entry_path(suite)
    assert entry is not None
    blob = entry.read_bytes()
    entry.unlink()
    header_bytes = parse_cache._HEADER_BYTES
    if broken == "garbage":
        entry.write_bytes(b"\x00not an entry at all")
    elif broken == "truncated":
        entry.write_bytes(blob[: len(blob) // 2])
    elif broken == "a payload byte changed":
        entry.write_bytes(_flip_last_byte(blob))
    elif broken == "a header of another text":
        digest_at = len(parse_cache._MAGIC) + parse_cache._FINGERPRINT_BYTES
        entry.write_bytes(blob[:digest_at] + bytes(20) + blob[digest_at + 20 :])
    elif broken == "marshal data of another shape":
        payload = marshal.dumps(("x", 1, 2))
        entry.write_bytes(blob[: header_bytes - 32] + parse_cache._payload_digest(payload) + payload)
    elif broken == "a folder":
        entry.mkdir()
    elif broken == "a FIFO":
        os.mkfifo(entry)  # read without waiting for a writer that never comes
    else:
        entry.symlink_to(tmp_path / "nowhere")
    assert _fields(load_document(suite, store)) == expected
    if broken != "a folder":  # a folder is not replaced by a rename; the next read parses again
        assert entry.is_file() and not entry.is_symlink()
        assert entry.read_bytes() == blob


def test_marshal_never_sees_a_payload_its_header_does_not_vouch_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Damaged marshal data can crash the interpreter: it is checked whole before it is unpacked."""
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    store = _store(tmp_path)
    load_document(suite, store)
    entry = store.entry_path(suite)
    assert entry is not None
    entry.write_bytes(_flip_last_byte(entry.read_bytes()))
    monkeypatch.setattr(parse_cache.marshal, "loads", lambda data: pytest.fail("unpacked unchecked data"))
    assert load_document(suite, store).data["metadata"]["name"] == "s"


@pytest.mark.parametrize("where", ["a file where the folder goes", "a folder that cannot be made"])
def test_an_unusable_folder_is_left_alone(tmp_path: Path, where: str) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    if where == "a file where the folder goes":
        write(tmp_path / "cache", "a file")
        store = _store(tmp_path)
    else:

        def refuse() -> Path:
            raise PermissionError(13, "Permission denied")

        store = ParseStore(refuse)
    for _ in range(2):
        assert load_document(suite, store).data["metadata"] == {"name": "s", "model": "m"}
    assert sorted(os.listdir(tmp_path)) == sorted(["s.eval.yaml", *(["cache"] if "file" in where else [])])


def test_a_date_is_not_kept_but_read(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.yaml", "when: 2024-01-01\n")
    store = _store(tmp_path)
    assert str(load_document(suite, store).data["when"]) == "2024-01-01"
    entry = store.entry_path(suite)
    assert entry is not None and not entry.exists()


def test_another_parser_does_not_take_the_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver added to the loader (as a plugin may) changes what the text reads as."""
    suite = write(tmp_path / "s.yaml", "value: ~x\n")
    store = _store(tmp_path)
    assert load_document(suite, store).data == {"value": "~x"}

    class Tilde(yamlsource._LOADER):  # type: ignore[misc,valid-type]
        pass

    Tilde.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^~x$"), ["~"])
    monkeypatch.setattr(yamlsource, "_LOADER", Tilde)
    assert load_document(suite, store).data == {"value": None}


def test_the_fingerprint_follows_constructors_patterns_and_limits() -> None:
    class Loader(yamlsource._LOADER):  # type: ignore[misc,valid-type]
        pass

    seen = {parse_cache.parser_fingerprint(Loader, LIMITS)}

    def changed() -> bool:
        value = parse_cache.parser_fingerprint(Loader, LIMITS)
        new = value not in seen
        seen.add(value)
        return new

    Loader.add_constructor("!x", lambda loader, node: 1)
    assert changed()
    Loader.add_constructor("!x", lambda loader, node: 2)  # another lambda, another line
    assert changed()
    Loader.add_constructor("!x", functools.partial(print, 3))
    assert changed()
    Loader.add_constructor("!x", functools.partial(print, 4))
    assert changed()
    Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^nil$"), ["n"])
    assert changed()
    Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^nil$", re.IGNORECASE), ["n"])
    assert changed()
    assert parse_cache.parser_fingerprint(Loader, (10, 64)) != parse_cache.parser_fingerprint(Loader, LIMITS)
    assert parse_cache.parser_fingerprint(Loader, (10, 64)) != parse_cache.parser_fingerprint(Loader, (10, 8))


def test_the_fingerprint_is_made_again_only_when_the_parser_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    class Loader(yamlsource._LOADER):  # type: ignore[misc,valid-type]
        pass

    made = []
    make = parse_cache._fingerprint
    monkeypatch.setattr(parse_cache, "_fingerprint", lambda *args: made.append(args) or make(*args))
    first = parse_cache.parser_fingerprint(Loader, LIMITS)
    assert parse_cache.parser_fingerprint(Loader, LIMITS) == first
    assert len(made) == 1  # one suite file after another: made once

    class Raising:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no comparing me")

        __hash__ = object.__hash__

        def __call__(self, loader: Any, node: Any) -> None:
            return None

    Loader.add_constructor("!r", Raising())
    second = parse_cache.parser_fingerprint(Loader, LIMITS)
    assert second != first and len(made) == 2
    Loader.add_constructor("!r", Raising())  # its == is asked, and raises: made again, no error
    assert parse_cache.parser_fingerprint(Loader, LIMITS) not in (first, second)
    assert len(made) == 3
    monkeypatch.setattr(sys, "get_int_max_str_digits", lambda: 640)  # what an int may read as
    parse_cache.parser_fingerprint(Loader, LIMITS)
    assert len(made) == 4


def test_a_lowered_node_limit_refuses_what_a_kept_parse_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write(tmp_path / "s.yaml", "a: &x [1, 2, 3, 4]\nb: [*x, *x, *x, *x, *x, *x]\n")
    store = _store(tmp_path)
    assert len(load_document(suite, store).data["b"]) == 6
    monkeypatch.setattr(yamlsource, "MAX_NODES", 5)
    with pytest.raises(InputError, match="more than 5 nodes"):
        load_document(suite, store)


def test_messages_from_a_kept_parse_name_the_same_lines(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE.replace('contains: "42"', "contains: 42, oops: 1"))
    store = _store(tmp_path)
    messages = []
    for _ in range(2):
        with pytest.raises(InputError) as caught:
            load_suite(suite, builtin_extensions(), store)
        messages.append(caught.value.render(tmp_path))
    entry = store.entry_path(suite)
    assert entry is not None and entry.is_file()
    assert messages[0] == messages[1]
    assert ":9" in messages[0]


APP = "def answer(prompt):\n    return 'The answer is 42.'\n"


@XDIST_MODES
def test_sessions_keep_the_parse_in_pytests_cache_take_it_and_see_an_edit(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    suite = python_suite(
        pytester.path / "evals" / "s.eval.yaml", ["{name: a, prompt: A?, checks: [{match: '*42*'}]}"], app=APP
    )
    results = pytester.path / "r.json"

    def session() -> list[str]:
        args = (*FAST_ARGS_WITH_CACHE, *xdist, "--vibe-results", results)
        outcome = pytester.runpytest_subprocess(*args, timeout=180)
        assert outcome.ret in (0, 1), outcome.stdout.str()
        return [record["name"] for record in load_json(results)["runs"][0]["evals"]]

    assert session() == ["a"]
    folder = pytester.path / ".pytest_cache" / "d" / PARSED_SUITES_FOLDER
    entries = list(folder.iterdir())
    assert len(entries) == 1
    assert not [path for path in suite.parent.rglob("*") if path.suffix == ".parsed"]  # none beside

    # An entry for the suite's very text whose eval has another name: a session that shows that
    # name took the kept parse rather than the file's.
    text = suite.read_text(encoding="utf-8")
    kept = load_document(suite)
    data = copy.deepcopy(kept.data)
    data["evals"][0]["name"] = "from-the-cache"
    store = ParseStore(lambda: folder)
    fingerprint = parse_cache.parser_fingerprint(yamlsource._loader_class(), LIMITS)
    entries[0].unlink()
    store.write(suite, fingerprint, parse_cache.text_digest(text), (data, kept.lines, set(), kept.templated))
    assert entries[0].is_file()
    assert session() == ["from-the-cache"]

    suite.write_text(text + "  - {name: b, prompt: B?, checks: [{match: '*43*'}]}\n", encoding="utf-8")
    assert session() == ["a", "b"]


def test_without_pytests_cache_nothing_is_kept(pytester: pytest.Pytester) -> None:
    python_suite(pytester.path / "s.eval.yaml", ["{name: a, prompt: A?, checks: [{match: '*42*'}]}"], app=APP)
    outcome = pytester.runpytest_subprocess(*FAST_ARGS_WITH_CACHE, "-p", "no:cacheprovider", timeout=180)
    outcome.assert_outcomes(passed=1)
    assert not (pytester.path / ".pytest_cache").exists()
