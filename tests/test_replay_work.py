"""What replaying an answer costs, counted (never timed): a store's folders are listed once, not
per eval; a store of the earliest format is read once, not hashed whole per eval; an answer's key
costs its provider's ``cache_material`` and two hashes. And which answers of earlier formats a
replay can tell apart."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pytest_vibeeval import answer_keys, earlier_recordings
from pytest_vibeeval.answer_files import write_answer
from pytest_vibeeval.answer_keys import answer_key
from pytest_vibeeval.cache import CachingProvider, ResponseCache
from pytest_vibeeval.earlier_recordings import earlier_request_digest
from pytest_vibeeval.loading.templates import Redactor
from pytest_vibeeval.providers.base import PromptRequest, ProviderError, ProviderResponse
from pytest_vibeeval.recording import RecordingProvider, ReplayProvider, Store

EVALS = 40


class Provider:
    """Answers each prompt with itself (and, ``told`` which eval asks, as a Python callable and
    a plugin's provider may be, with the eval too); counts what its keys ask of it."""

    def __init__(self, told: bool = False) -> None:
        self.told, self.materials = told, 0

    def unavailable_reason(self) -> None:
        return None

    def cache_material(self, request: PromptRequest) -> dict[str, Any]:
        self.materials += 1
        return {"prompt": request.prompt, **({"eval": request.eval_id} if self.told else {})}

    def answer(self, request: PromptRequest) -> ProviderResponse:
        return ProviderResponse(f"{request.prompt}:{request.eval_id if self.told else ''}", 0.0, 1, 1)


def ask(eval_id: str, prompt: str | None = None, root: Path = Path(".")) -> PromptRequest:
    return PromptRequest(prompt or f"prompt of {eval_id}", "m", "Be brief.", "suite", eval_id, "c", root)


def record(store: Path, config_id: str, provider: Provider, requests: list[PromptRequest]) -> None:
    recording = RecordingProvider(provider, Store(store), config_id, None, provider)
    for request in requests:
        recording.answer(request)


@contextmanager
def scans_of(folder: Path) -> Iterator[Counter[str]]:
    """Counts the listings of the folders in ``folder`` (by name), whichever call lists them."""
    counted: Counter[str] = Counter()
    busy = [False]
    patch = pytest.MonkeyPatch()

    def counting(original: Any, method: bool = False) -> Any:
        def listed(*args: Any, **kwargs: Any) -> Any:
            if busy[0]:
                return original(*args, **kwargs)
            path = Path(os.fspath(args[0])) if args else Path(".")
            if path.parent == folder:
                counted[path.name] += 1
            busy[0] = True
            try:
                result = original(*args, **kwargs)
                return list(result) if method else result
            finally:
                busy[0] = False

        return listed

    patch.setattr(os, "scandir", counting(os.scandir))
    patch.setattr(os, "listdir", counting(os.listdir))
    patch.setattr(Path, "glob", counting(Path.glob, method=True))
    patch.setattr(Path, "iterdir", counting(Path.iterdir, method=True))
    try:
        yield counted
    finally:
        patch.undo()


def test_a_replay_configuration_lists_each_folder_once(tmp_path: Path) -> None:
    """Answers filed by request alone (an HTTP model's), by eval (a Python callable's) and of
    format 2: each configuration's folder is listed once, however many evals it answers; an answer
    recorded after the listing (by another xdist worker) is found by listing again."""
    store = tmp_path / "store"
    requests = [ask(f"e{n}") for n in range(EVALS)]
    record(store, "http", Provider(), requests)
    record(store, "python", Provider(told=True), requests)
    format_2(store, "old", requests)
    replays = {
        config_id: ReplayProvider(Store(store), config_id, None) for config_id in ("http", "python", "old")
    }
    with scans_of(store) as scans:
        for request in requests:
            for config_id, replay in replays.items():
                assert replay.answer(request).text.startswith(request.prompt), config_id
    assert scans == {"http": 1, "python": 1, "old": 1}
    late = ask("late")
    record(store, "http", Provider(), [late])
    with scans_of(store) as scans:
        assert replays["http"].answer(late).text == "prompt of late:"
        assert replays["http"].answer(requests[0]).text == "prompt of e0:"
    assert scans == {"http": 1}


def format_2(store: Path, config_id: str, requests: list[PromptRequest], told: bool = True) -> None:
    """Answers of a provider told which eval asks, as a store of format 2 filed them: under the
    request without the eval, without `suite` and `eval`, with no code (a plugin's provider)."""
    for request in requests:
        key = answer_key(Provider(told=told), config_id, "m", request)
        filed = key.earlier or key
        entry = {"format": 2, "key": filed.sent, "configuration": config_id, "model": "m", "repeat": 0}
        entry |= {"prompt": request.prompt, "response": f"{request.prompt}:{request.eval_id}"}
        write_answer(store / config_id / filed.file_name, entry, Redactor())


def format_1(store: Path, config_id: str, answers: list[tuple[PromptRequest, str, str]]) -> None:
    """Answers as the earliest format filed them: under the request's hash (the one recorded last)
    and again under it extended with the hash of what was sent (``sent``: each answer's)."""
    for request, sent, response in answers:
        digest = earlier_request_digest(config_id, "m", request)
        entry = {"format": 1, "configuration": config_id, "model": "m", "repeat": 0}
        entry |= {"system_prompt": request.system_prompt, "prompt": request.prompt, "sent": sent}
        entry |= {"response": response}
        extended = answer_keys.answer_digest([digest, {"sent": sent}])
        for name in (digest, extended):
            write_answer(store / config_id / f"{name[:40]}.json", entry, Redactor())


def test_a_store_of_the_earliest_format_is_not_hashed_whole_per_eval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    requests = [ask(f"e{n}") for n in range(EVALS)]
    format_1(store, "c", [(request, f"sent {request.eval_id}", request.prompt) for request in requests])
    replay = ReplayProvider(Store(store), "c", None)
    assert replay.answer(requests[0]).text == requests[0].prompt  # reads the folder
    hashes = Counter[str]()
    original = earlier_recordings.answer_digest

    def counted(parts: list[object]) -> str:
        hashes["earlier"] += 1
        return original(parts)

    monkeypatch.setattr(earlier_recordings, "answer_digest", counted)
    for request in requests[1:]:
        assert replay.answer(request).text == request.prompt
    assert hashes["earlier"] <= 2 * (EVALS - 1)  # the request's hash, not one per answer stored


@pytest.mark.parametrize("via", ["cache", "record", "replay"])
def test_a_key_costs_one_material_and_two_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via: str
) -> None:
    """For a provider told which eval asks (a Python callable), whose answers are filed by eval:
    the key of a format-2 store or cache is made only where the answer is not filed by eval."""
    provider = Provider(told=True)
    requests = [ask(f"e{n}", "shared prompt") for n in range(EVALS)]
    folder = tmp_path / "answers"
    record(folder, "c", provider, requests)  # a store, and as files a cache as well
    answering: Any = {
        "cache": lambda: CachingProvider(provider, ResponseCache(folder, Redactor()), "c", None),  # type: ignore[arg-type]
        "record": lambda: RecordingProvider(provider, Store(tmp_path / "again"), "c", None, provider),
        "replay": lambda: ReplayProvider(Store(folder), "c", None, provider),
    }[via]()
    answering.answer(requests[0])
    provider.materials = 0
    hashes = Counter[str]()
    original = answer_keys.answer_digest

    def counted(parts: list[object]) -> str:
        hashes["key"] += 1
        return original(parts)

    monkeypatch.setattr(answer_keys, "answer_digest", counted)
    for request in requests[1:]:
        assert answering.answer(request).text == f"shared prompt:{request.eval_id}"
    assert provider.materials == EVALS - 1
    assert hashes["key"] == 2 * (EVALS - 1)


@pytest.mark.filterwarnings("ignore:--vibe-replay. the answers of configuration")
def test_answers_of_the_earliest_format_sent_to_other_endpoints_replay_where_they_agree(
    tmp_path: Path,
) -> None:
    """An HTTP model's answers recorded again on another port (its `sent` held the endpoint) are
    several answers to one request: where they agree, whichever it is, they replay; where they
    differ, --vibe-replay of a model not told which eval asks replays the last one (as this
    format always did: what was sent cannot be compared), and a `replay:` configuration, which
    cannot know the model was not told, refuses them."""
    store = tmp_path / "store"
    request = ask("e")
    ports = [(request, f"http://127.0.0.1:{port}/v1", "4") for port in (40001, 40002)]
    format_1(store, "same", ports)
    format_1(store, "differ", [*ports[:1], (request, "http://127.0.0.1:40003/v1", "5")])
    for config_id in ("same", "differ"):
        assert ReplayProvider(Store(store), config_id, None, Provider()).answer(request).text != ""
    assert ReplayProvider(Store(store), "same", None).answer(request).text == "4"
    with pytest.raises(ProviderError) as refused:
        ReplayProvider(Store(store), "differ", None).answer(request)
    assert f"{store / 'differ'} holds 2 answers to this request that differ" in refused.value.message
    with pytest.raises(ProviderError, match="holds 2 answers to this request that differ"):
        ReplayProvider(Store(store), "differ", None, Provider(told=True)).answer(request)


def test_a_replay_configuration_refuses_differing_answers_of_format_2_without_code(tmp_path: Path) -> None:
    """A plugin's provider told which eval asks stored no code: its format-2 answers to a shared
    prompt are refused as a Python callable's are; recorded again, each eval replays its own.
    Answers of format 2 that agree replay."""
    store = tmp_path / "store"
    shared = [ask(eval_id, "shared prompt") for eval_id in ("first", "second")]
    format_2(store, "plugin", shared)
    replay = ReplayProvider(Store(store), "plugin", None)
    for request in shared:
        with pytest.raises(ProviderError, match="answer this prompt differently"):
            replay.answer(request)
    record(store, "plugin", Provider(told=True), shared[:1])
    assert ReplayProvider(Store(store), "plugin", None).answer(shared[0]).text == "shared prompt:first"
    format_2(store, "http", shared[:1], told=False)
    entry = json.loads(next((store / "http").glob("*.json")).read_text())
    write_answer(
        store / "http" / f"{next((store / 'http').glob('*.json')).name[:25]}{'0' * 16}.json",
        entry,
        Redactor(),
    )
    assert ReplayProvider(Store(store), "http", None).answer(shared[1]).text == "shared prompt:first"
