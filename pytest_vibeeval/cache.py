"""``--vibe-cache``: answer a request identical to an earlier one from disk, so iterating on checks
and formulas asks no model twice.

A provider takes part by saying what its answer depends on: ``cache_material(request)`` returns
JSON-able data (the HTTP request body and headers, a Python callable's name and what it is given);
the answer is filed under the key of that and of the request (:mod:`.answer_keys`, shared with
--vibe-record and --vibe-replay), with the digest of a Python callable's code beside it: an answer
its code gave before it changed is a miss. Agent CLIs and coding-agent evals never take part: an
agent acts on its environment, and each run must see what it does. Nor does a run with
--vibe-repeat N > 1 (each repeat must be a real, independent call) or with --vibe-replay (already
answered from disk).

An entry that cannot be read, or that belongs to another request, is a miss with a warning and is
replaced; failed calls are never stored, nor kept are answers their asker could not use (a judge's
that is no verdict: :func:`forget`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .answer_files import AnswerFileError, answer_path, answer_to_store, read_answer, write_answer
from .answer_keys import AnswerKey, AnswerKeys, code_digest
from .atomic_files import temporary_prefix, write_atomic
from .loading.templates import Redactor
from .notes import note
from .providers.base import PromptRequest, Provider, ProviderResponse, Unavailable, Wrapping
from .providers.factory import UnclaimedProvider
from .recording import ReplayProvider
from .report.format import money
from .results import EvalRecord, attempt_of

TAG_NAME = "CACHEDIR.TAG"
# https://bford.info/cachedir/: backup tools skip a folder holding this file.
TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This folder is a response cache of pytest-vibeeval (--vibe-cache): it may be deleted.\n"
)


class CacheNote(UserWarning):
    """What --vibe-cache left out or could not use (shown in pytest's warnings summary)."""


@runtime_checkable
class Cacheable(Provider, Protocol):
    """A provider whose answers may be cached: it says what an answer to ``request`` depends on."""

    def cache_material(self, request: PromptRequest) -> dict[str, Any]:
        """Everything that shapes the answer to ``request``, as JSON-able data (it is hashed, never
        stored): a change in any of it must give other material."""


def unused_reason(repeats: int, replay: Path | None) -> str | None:
    """Why --vibe-cache is not used in this session at all, or None."""
    if repeats > 1:
        return f"with --vibe-repeat {repeats} every repeat is a real call, never a cached answer"
    if replay is not None:
        return "--vibe-replay answers every prompt from its store already"
    return None


def session_cache(
    folder: Path | None, repeats: int, replay: Path | None, redact: Redactor
) -> ResponseCache | None:
    """The session's response cache: at ``folder`` (--vibe-cache) unless the session does not use
    one (:func:`unused_reason`)."""
    if folder is None or unused_reason(repeats, replay) is not None:
        return None
    return ResponseCache(folder, redact)


def note_coding_eval(cache: ResponseCache | None, config_id: str) -> None:
    """Say (a :class:`CacheNote`) that the coding-agent evals of ``config_id`` are not cached."""
    if cache is not None:
        note(CacheNote(coding_note(config_id)), stacklevel=2)


def folder_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot be the response cache, or None. A folder that holds files but is no
    cache is refused: ``pytest --vibe-cache tests`` takes ``tests`` as the cache's folder."""
    if not folder.exists():
        return None
    if not folder.is_dir():
        return f"{folder} is not a folder"
    problem = not_a_cache(folder)
    if problem is None:
        return None
    return (
        f"{problem}; the folder is the option's value: write --vibe-cache=DIR, or put --vibe-cache "
        "after the test paths"
    )


def not_a_cache(folder: Path) -> str | None:
    """Why the existing folder ``folder`` is no response cache (it holds files but no
    ``CACHEDIR.TAG``), or None. Nothing may be written, nor removed, in such a folder."""
    # A session killed while it wrote the tag left only its temporary file: the folder is a cache.
    if (folder / TAG_NAME).is_file() or all(
        path.name.startswith(temporary_prefix(TAG_NAME)) for path in folder.iterdir()
    ):
        return None
    return f"{folder} holds files but is no response cache (it has no {TAG_NAME})"


class ResponseCache:
    """The answers of one cache folder; entries are masked with ``redact`` as they are written."""

    def __init__(self, folder: Path, redact: Redactor) -> None:
        self.folder = folder
        self.redact = redact

    def load(self, config_id: str, key: AnswerKey, code: str | None) -> ProviderResponse | None:
        """The answer filed under ``key``, or None (a miss): an answer ``code`` did not give (the
        code changed since) is one. An entry that cannot be read or is not ``key``'s is a miss with
        a :class:`CacheNote`, never an error and never another answer. Where ``key`` has no
        file, its ``earlier`` one (a cache of format 2) is read."""
        for each in key.filed_under():
            path = answer_path(self.folder, config_id, each)
            try:
                entry, response = read_answer(path)
            except FileNotFoundError:
                continue
            except AnswerFileError as exc:
                note(CacheNote(f"cached answer {path} {exc}; asked again"), stacklevel=2)
                return None
            if entry.get("key") != each.sent or entry.get("configuration") != config_id:
                note(
                    CacheNote(f"cached answer {path} is not this request's (its key differs); asked again"),
                    stacklevel=2,
                )
                return None
            if entry.get("code") != code:
                return None
            return replace(response, cached=True)
        return None

    def save(self, config_id: str, key: AnswerKey, entry: dict[str, Any]) -> None:
        """Store ``entry`` under ``key``; a folder that cannot be written is a warning (the answer
        is still used), never a failed eval."""
        path = answer_path(self.folder, config_id, key)
        try:
            self._tag()
            write_answer(path, entry, self.redact)
        except OSError as exc:
            note(CacheNote(f"answer not cached in {path}: {exc.strerror or exc}"), stacklevel=2)

    def drop(self, config_id: str, key: AnswerKey) -> None:
        """Remove the answer filed under ``key`` (and under its ``earlier`` key), if there is one
        (one that cannot be removed is a warning: the next run answers from it again)."""
        for each in key.filed_under():
            path = answer_path(self.folder, config_id, each)
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                note(CacheNote(f"cached answer {path} not removed: {exc.strerror or exc}"), stacklevel=2)

    def _tag(self) -> None:
        """Mark the folder as a cache (before its first entry, so that no worker sees it without)."""
        tag = self.folder / TAG_NAME
        if not tag.is_file():
            write_atomic(tag, TAG_TEXT)


class CachingProvider(Wrapping):
    """Answers from ``cache`` when it holds the answer to an identical request; otherwise asks
    ``inner`` and stores what it answered (failures are not stored)."""

    inner: Cacheable

    def __init__(self, inner: Cacheable, cache: ResponseCache, config_id: str, model: str | None) -> None:
        self.inner, self.cache, self.config_id, self.model = inner, cache, config_id, model
        self.keys = AnswerKeys(inner, config_id)

    def key(self, request: PromptRequest) -> AnswerKey:
        return self.keys.key(self.model or request.model, request)

    def answer(self, request: PromptRequest) -> ProviderResponse:
        key, code = self.key(request), code_digest(self.inner)
        cached = self.cache.load(self.config_id, key, code)
        if cached is not None:
            return cached
        model = self.model or request.model
        response, entry = answer_to_store(self.inner, request, key, self.config_id, model, self.inner, code)
        self.cache.save(self.config_id, key, entry)
        return response

    def forget(self, request: PromptRequest) -> None:
        """Drop the cached answer to ``request``."""
        self.cache.drop(self.config_id, self.key(request))


def forget(provider: Provider, request: PromptRequest) -> None:
    """Drop the answer to ``request`` from the response cache ``provider`` answers through (itself,
    or under wrappers such as a recording), if any: an answer its asker could not use (a judge's
    that is no verdict) must be asked again by the next run, not repeated from the cache."""
    while isinstance(provider, Wrapping):
        if isinstance(provider, CachingProvider):
            provider.forget(request)
            return
        provider = provider.inner


def with_cache(
    provider: Provider, cache: ResponseCache | None, config_id: str, model: str | None = None
) -> Provider:
    """``provider`` answering through ``cache`` (unchanged without one). A provider that cannot be
    cached is left as it is, with a :class:`CacheNote` saying so (none for a replay, already
    answered from disk, nor for a provider that cannot run at all)."""
    if cache is None:
        return provider
    if isinstance(provider, Cacheable):
        return CachingProvider(provider, cache, config_id, model)
    if not isinstance(provider, ReplayProvider | Unavailable | UnclaimedProvider):
        note(CacheNote(uncached_note(provider, config_id)), stacklevel=2)
    return provider


def _answers(count: int) -> str:
    return f"{count} answer{'' if count == 1 else 's'}"


def uncached_note(provider: object, config_id: str) -> str:
    """Why the answers of ``config_id`` are not cached."""
    from .providers.cli import CliProvider  # imported when used: see providers.factory

    if isinstance(provider, CliProvider):
        return (
            f"--vibe-cache: configuration {config_id!r} runs an agent CLI; its answers are not cached "
            "(an agent acts on its environment: every run asks it)"
        )
    kind = f"{type(provider).__module__}.{type(provider).__qualname__}"
    return (
        f"--vibe-cache: configuration {config_id!r}: its provider ({kind}) does not say what its answers "
        "depend on (no cache_material method), so they are not cached"
    )


def coding_note(config_id: str) -> str:
    """Why the coding-agent evals of ``config_id`` are not cached."""
    return (
        f"--vibe-cache: coding-agent evals are never cached: configuration {config_id!r} works in a "
        "workspace, and its build and grade steps judge what it did there"
    )


def summary_lines(records: Iterable[EvalRecord], shown: str, unused: str | None) -> list[str]:
    """The Run Summary's line about the cache: how many answers (the evals', then the llm_judge
    judges') came from it and what their cost and latency are (``records`` are read once, one at
    a time)."""
    if unused is not None:
        return [f"Cache: not used ({unused})"]
    hits = asked = judge_hits = judges = 0
    cost = 0.0
    for r in records:
        if r.reused_from is not None or r.outcome == "skipped":
            continue
        # a rerun eval: each attempt (its record's `cached` is the last one's, its cost all of theirs)
        for attempt in r.rerun_attempts or (attempt_of(r),):
            hits += attempt.cached
            asked += not attempt.cached
            judges += attempt.judges
            judge_hits += attempt.judges_cached
            cost += attempt.cached_cost
    line = f"Cache: {_answers(hits)} from cache, {asked} asked ({shown})"
    if judges:
        line += f"; llm_judge: {_answers(judge_hits)} from cache, {judges - judge_hits} asked"
    if hits or judge_hits:
        line += "; the cached answers' cost and latency are their original calls'"
        line += f" ({money(cost)}, not spent again)" if cost else ""
    return [line]
