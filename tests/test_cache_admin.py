"""Looking after the response cache (``pytest_vibeeval.cache_admin``): what a cache folder holds
(answers, llm_judge verdicts, damaged entries, temporary files, what is not the cache's), what a
prune chooses and removes, and what it never touches: a folder that is no cache, a link, a file of
another name, a write in progress, an answer stored anew since it was read."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_vibeeval.cache import TAG_NAME, CachingProvider, ResponseCache
from pytest_vibeeval.cache_admin import (
    BUSY_SECONDS,
    CacheAdminError,
    CacheContents,
    cache_problem,
    choose,
    parse_duration,
    read_cache,
    remove,
)
from pytest_vibeeval.checks import JudgeArgs
from pytest_vibeeval.judge import Judge
from pytest_vibeeval.loading.templates import Redactor
from pytest_vibeeval.providers import PromptRequest, ProviderResponse
from pytest_vibeeval.report.cache_text import info_lines, prune_lines

DAY = 86400.0


class Scripted:
    """A cacheable provider answering every request with ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def unavailable_reason(self) -> str | None:
        return None

    def cache_material(self, request: PromptRequest) -> dict[str, Any]:
        return {"scripted": True}

    def answer(self, request: PromptRequest) -> ProviderResponse:
        return ProviderResponse(self.text, cost=0.01)


def ask(cache: ResponseCache, config_id: str, prompt: str, workdir: Path) -> None:
    """Store the answer of ``config_id`` to ``prompt`` as a run does."""
    request = PromptRequest(prompt, "m", None, "suite", prompt, config_id, workdir)
    CachingProvider(Scripted(f"yes {prompt}"), cache, config_id, None).answer(request)


def judge(cache: ResponseCache, config_id: str, response: str, workdir: Path) -> None:
    """Store an llm_judge verdict of ``config_id`` as a run does."""
    provider = CachingProvider(Scripted('{"pass": true, "reason": "fine"}'), cache, config_id, None)
    Judge(provider, config_id, "m", "prompt", "suite", "e", workdir).decide(JudgeArgs(criteria="c"), response)


def entries(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def age(path: Path, days: float) -> None:
    when = time.time() - days * DAY
    os.utime(path, (when, when), follow_symlinks=False)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache of three answers of `app` (one 40 days old) and two of `both`, which also judges
    (one verdict)."""
    folder = tmp_path / "cache"
    store = ResponseCache(folder, Redactor())
    for prompt in ("alpha", "beta", "gamma"):
        ask(store, "app", prompt, tmp_path)
    for prompt in ("one", "two"):
        ask(store, "both", prompt, tmp_path)
    judge(store, "both", "yes alpha", tmp_path)
    age(answer_of(folder, "alpha"), 40)
    return folder


def answer_of(folder: Path, prompt: str) -> Path:
    (found,) = [path for path in folder.rglob("*.json") if json.loads(path.read_text())["prompt"] == prompt]
    return found


def counts(contents: CacheContents) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for configuration in contents.configurations:
        mine = found.setdefault(configuration.name, {})
        for file in configuration.files:
            mine[file.kind] = mine.get(file.kind, 0) + 1
    return found


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30d", 30 * DAY), ("12h", 43200), ("90m", 5400), ("45s", 45), ("2w", 14 * DAY), ("1d12h", 1.5 * DAY),
     ("1.5h", 5400), (" 30D ", 30 * DAY), ("0s", 0)],
)  # fmt: skip
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["30", "d", "", "-1d", "1x", "1d 2h", "1e3s", "one day"])
def test_a_duration_without_a_unit_or_with_another_says_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a duration: write a number and a unit, e\.g\. 30d, 12h"):
        parse_duration(text)


def test_info_counts_answers_and_judge_verdicts_per_configuration(cache: Path) -> None:
    contents = read_cache(cache)
    assert counts(contents) == {"app": {"answer": 3}, "both": {"answer": 2, "judge": 1}}
    lines = info_lines(contents)
    assert lines[0] == f"Response cache {cache}"
    assert lines[1].split() == [
        "configuration",
        "answers",
        "llm_judge",
        "damaged",
        "size",
        "oldest",
        "newest",
    ]
    assert [line.split()[:4] for line in lines[2:5]] == [
        ["app", "3", "0", "0"],
        ["both", "2", "1", "0"],
        ["total", "5", "1", "0"],
    ]
    old = time.strftime("%Y-%m-%d", time.localtime(answer_of(cache, "alpha").stat().st_mtime))
    assert lines[2].split()[6] == old and lines[4].split()[6] == old  # app's oldest, and the total's
    size = sum(path.stat().st_size for path in cache.rglob("*.json"))
    assert f"{size / 1024:.1f} KiB" in lines[4]
    assert len(lines) == 5  # nothing damaged, left behind or foreign to say


def test_an_empty_cache_says_so(tmp_path: Path) -> None:
    (tmp_path / TAG_NAME).write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    assert info_lines(read_cache(tmp_path)) == [f"Response cache {tmp_path}", "no answers stored"]


def test_damaged_entries_are_counted_named_and_pruned(cache: Path) -> None:
    alpha, truncated, copied, wrong = (answer_of(cache, p) for p in ("alpha", "beta", "gamma", "one"))
    truncated.write_text(truncated.read_text()[:30])
    copied.write_bytes(alpha.read_bytes())  # another answer's entry under its name: every run misses it
    wrong.write_text(json.dumps({**json.loads(wrong.read_text()), "response": 123}))
    contents = read_cache(cache)
    assert counts(contents) == {
        "app": {"answer": 1, "damaged": 2},
        "both": {"answer": 1, "damaged": 1, "judge": 1},
    }
    text = "\n".join(info_lines(contents))
    assert "3 damaged entries, which no run can use" in text
    assert f"  app/{truncated.name} is unreadable: " in text
    assert f"  app/{copied.name} is not the answer its name says" in text
    assert f"  both/{wrong.name} is not a stored answer: `response` must be text, not 123" in text
    pruning = choose(contents)  # alone, prune removes only what no run can use
    assert sorted(file.path for file in pruning.going()) == sorted([truncated, copied, wrong])
    remove(pruning)
    assert counts(read_cache(cache)) == {"app": {"answer": 1}, "both": {"answer": 1, "judge": 1}}


def test_older_than_removes_the_old_answers_of_every_configuration(cache: Path) -> None:
    old = answer_of(cache, "alpha")
    pruning = choose(read_cache(cache), older_than=30 * DAY)
    assert [file.path for file in pruning.going()] == [old]
    stored = time.strftime("%Y-%m-%d %H:%M", time.localtime(old.stat().st_mtime))
    assert prune_lines(pruning, None) == [
        f"would remove app/{old.name} (answer, {stored})",
        f"app: would remove 1 answer ({old.stat().st_size} B); 2 kept",
        f"would remove 1 answer ({old.stat().st_size} B) from {cache}; 5 entries kept",
        "(dry run: nothing was removed)",
    ]
    assert old.exists()
    done = remove(pruning)
    assert not old.exists() and [file.path for file in done.removed] == [old] and not done.folders
    assert prune_lines(pruning, done)[-1] == "the next run with --vibe-cache asks the removed answers again"
    assert counts(read_cache(cache)) == {"app": {"answer": 2}, "both": {"answer": 2, "judge": 1}}


def test_a_configuration_goes_whole_with_its_judge_verdicts_and_its_emptied_folder(cache: Path) -> None:
    pruning = choose(read_cache(cache), configurations=["both"])
    done = remove(pruning)
    assert done.folders == [cache / "both"] and not (cache / "both").exists()
    assert prune_lines(pruning, done)[0] == (
        f"both: removed 2 answers, 1 llm_judge verdict ({_size(done)}); 0 kept; its emptied folder removed"
    )
    assert counts(read_cache(cache)) == {"app": {"answer": 3}}


def _size(done: Any) -> str:
    total = sum(file.size for file in done.removed)
    return f"{total / 1024:.1f} KiB" if total >= 1024 else f"{total} B"


def test_a_configuration_and_an_age_take_its_old_answers_only(cache: Path) -> None:
    for prompt in ("alpha", "one"):
        age(answer_of(cache, prompt), 40)
    pruning = choose(read_cache(cache), configurations=["both"], older_than=30 * DAY)
    assert [file.path for file in pruning.going()] == [answer_of(cache, "one")]


def test_all_removes_every_answer_and_keeps_the_tag(cache: Path) -> None:
    done = remove(choose(read_cache(cache), everything=True))
    assert len(done.removed) == 6 and sorted(done.folders) == [cache / "app", cache / "both"]
    assert entries(cache) == [TAG_NAME]
    assert cache_problem(cache) is None  # still a cache


def test_an_unknown_configuration_is_an_error_naming_those_there_are(cache: Path) -> None:
    with pytest.raises(CacheAdminError) as raised:
        choose(read_cache(cache), configurations=["app", "nope", "other"])
    assert str(raised.value) == (
        f"the cache {cache} holds no answers of configuration 'nope', 'other'; it holds those of: app, both"
    )


def test_a_configuration_id_is_found_by_its_folder_name(tmp_path: Path) -> None:
    store = ResponseCache(tmp_path / "cache", Redactor())
    ask(store, "openai/gpt 5", "alpha", tmp_path)  # filed under openai_gpt_5
    contents = read_cache(tmp_path / "cache")
    assert [configuration.name for configuration in contents.configurations] == ["openai/gpt 5"]
    for name in ("openai/gpt 5", "openai_gpt_5"):
        assert len(choose(contents, configurations=[name]).going()) == 1


def test_a_temporary_file_is_left_alone_while_it_may_be_written_and_removed_after(cache: Path) -> None:
    entry = answer_of(cache, "beta")
    busy = cache / "app" / f".{entry.name}.abcd1234"  # as write_atomic names its temporary files
    left = cache / "app" / ".0123-4567.json.x_y9z8w7"
    tag_left = cache / f".{TAG_NAME}.k3j4h5g6"
    for path in (busy, left, tag_left):
        path.write_text("{")
    age(left, (BUSY_SECONDS + 5) / DAY)
    age(tag_left, 1)
    contents = read_cache(cache)
    assert counts(contents)["app"] == {"answer": 3, "temporary": 1}
    text = "\n".join(info_lines(contents))
    assert "2 temporary files left by killed sessions; `cache prune` removes such files" in text
    assert "1 temporary file being written now (younger than 60 s): left alone" in text
    remove(choose(contents))
    assert busy.exists() and not left.exists() and not tag_left.exists()
    assert entry.exists()


def test_links_and_files_of_other_names_are_never_followed_nor_removed(cache: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.json").write_text("{}")
    kept_file = outside / "kept.json"
    kept_file.write_text("{}")
    (cache / "elsewhere").symlink_to(outside)  # a configuration folder that is a link
    (cache / "app" / "link.json").symlink_to(kept_file)  # an entry that is a link
    (cache / "app" / "notes.txt").write_text("mine")
    (cache / "app" / "sub").mkdir()
    (cache / "README").write_text("mine")
    contents = read_cache(cache)
    assert [configuration.name for configuration in contents.configurations] == ["app", "both"]
    text = "\n".join(info_lines(contents))
    assert "not the cache's own, left alone by `cache prune`:" in text
    for line in (
        "  README (a file of another name)",
        "  elsewhere (a symbolic link)",
        "  app/link.json (a symbolic link)",
        "  app/notes.txt (a file of another name)",
        "  app/sub (a folder)",
    ):
        assert line in text.splitlines()
    pruning = choose(contents, everything=True)
    done = remove(pruning)
    assert done.folders == [cache / "both"]  # app still holds what is not the cache's
    assert sorted(os.listdir(cache / "app")) == ["link.json", "notes.txt", "sub"]
    assert sorted(os.listdir(outside)) == ["kept.json", "precious.json"]
    assert "app: removed 3 answers" in prune_lines(pruning, done)[0]
    assert prune_lines(pruning, done)[0].endswith("; its folder stays: it holds what is not the cache's own")


def test_a_configuration_folder_replaced_by_a_link_after_reading_is_not_entered(
    cache: Path, tmp_path: Path
) -> None:
    pruning = choose(read_cache(cache), configurations=["app"])
    moved = tmp_path / "moved"
    (cache / "app").rename(moved)
    (cache / "app").symlink_to(moved)
    done = remove(pruning)
    assert not done.removed and len(done.failed) == 1 and done.failed[0].startswith(f"{cache / 'app'}: ")
    assert len(list(moved.glob("*.json"))) == 3


def test_an_answer_stored_anew_since_it_was_read_stays(cache: Path) -> None:
    pruning = choose(read_cache(cache), older_than=30 * DAY)
    old = answer_of(cache, "alpha")
    os.utime(old)  # a session stored the answer again meanwhile
    done = remove(pruning)
    assert old.exists() and not done.removed and [file.path for file in done.rewritten] == [old]
    assert prune_lines(pruning, done)[-1] == "1 file(s) written again since they were read: kept"


def test_a_folder_that_is_no_cache_is_refused(tmp_path: Path, cache: Path) -> None:
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "quiz.eval.yaml").write_text("evals: []\n")
    (tmp_path / "afile").write_text("x")
    assert cache_problem(tmp_path / "missing") == f"{tmp_path / 'missing'}: no such folder"
    assert cache_problem(tmp_path / "afile") == f"{tmp_path / 'afile'} is not a folder"
    assert cache_problem(tmp_path / "suites") == (
        f"{tmp_path / 'suites'} holds files but is no response cache (it has no CACHEDIR.TAG): nothing in "
        "it is touched; give the folder --vibe-cache stores its answers in"
    )
    assert cache_problem(cache / "app") == (
        f"{cache / 'app'} holds files but is no response cache (it has no CACHEDIR.TAG): it is the folder "
        f"of one configuration in the cache {cache}; give that folder, and --configuration to choose a "
        "configuration"
    )
    with pytest.raises(CacheAdminError, match="no response cache"):
        read_cache(tmp_path / "suites")
    assert entries(tmp_path / "suites") == ["quiz.eval.yaml"]
