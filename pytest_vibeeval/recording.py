"""Record and replay provider answers, for deterministic CI and cheap iteration on checks and
formulas.

A store is a folder: one JSON file per answer under ``<store>/<configuration>/``, named by the
answer's key (:mod:`.answer_keys`, the response cache's too): the hash of its request and of what
was sent for it. ``--vibe-record DIR`` wraps every provider in a :class:`RecordingProvider`, which
files each answer once, stamped with when it was recorded (an answer to the same request sent
otherwise stays beside it);
``--vibe-replay DIR`` answers from the store with a :class:`ReplayProvider`, which fails clearly
on a miss: an answer recorded for what the configuration would not send now is one, and so is one
a Python callable's code gave before it changed (where that code can be imported). A
configuration's ``replay: DIR`` sends nothing to compare: it answers by the request alone (a
Python callable's answer to the eval that asks, else any provider's; the answer recorded last,
when it was sent in several ways). Stores of earlier versions are read too, where they can say
which answer is this eval's (format 2 here, the earliest in :mod:`.earlier_recordings`). Stored
prompts are redacted for reading; the hashes are of the real prompt.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from .answer_files import (
    AnswerFileError,
    answer_path,
    answer_to_store,
    configuration_folder,
    read_answer,
    write_answer,
)
from .answer_keys import AnswerKey, AnswerKeys, code_digest, request_digest, request_prefix
from .earlier_recordings import EarlierAnswers, earlier_answer_name, earlier_request_digest
from .loading.templates import Redactor
from .notes import note
from .providers.base import PromptRequest, Provider, ProviderError, ProviderResponse, Wrapping


class ReplayNote(UserWarning):
    """What --vibe-replay could not check (shown in pytest's warnings summary)."""


@dataclass(frozen=True)
class Recorded:
    """An answer found in a store: its file, its entry and the answer, and whether the store is of
    the earlier format."""

    path: Path
    entry: dict[str, Any]
    response: ProviderResponse
    earlier: bool = False


@dataclass(frozen=True)
class Listing:
    """The answer files of one configuration's folder as listed at one time: those of the current
    formats by the request their names start with (:func:`.answer_keys.request_prefix`), and the
    names of all of them."""

    by_request: dict[str, tuple[str, ...]]
    names: frozenset[str]

    @classmethod
    def of(cls, folder: Path) -> Listing:
        """The files in ``folder`` (none where it is not there, or cannot be listed)."""
        try:
            with os.scandir(folder) as entries:
                names = frozenset(entry.name for entry in entries if entry.name.endswith(".json"))
        except OSError:
            names = frozenset()
        by_request: dict[str, list[str]] = {}
        for name in sorted(names):
            if name[PREFIX - 1 : PREFIX] == "-":
                by_request.setdefault(name[:PREFIX], []).append(name)
        return cls({prefix: tuple(found) for prefix, found in by_request.items()}, names)

    def under(self, prefix: str) -> tuple[str, ...]:
        """The names of the files that start with ``prefix``, a request's."""
        return self.by_request.get(prefix, ())


PREFIX = len(request_prefix("0" * 64))


@dataclass
class Earliest:
    """Where a store of the earliest format holds the answer to ``request``: the hash of the
    request it is filed under, made when first read."""

    config_id: str
    model: str
    request: PromptRequest

    @cached_property
    def digest(self) -> str:
        return earlier_request_digest(self.config_id, self.model, self.request)

    @property
    def name(self) -> str:
        return earlier_answer_name(self.digest)


class Store:
    """The answers of one store folder. Each configuration's folder is listed once (and again
    when an answer is not in the listing: another xdist worker may have recorded it since), so
    that finding an answer by its request costs no scan of a folder that grows with the store."""

    def __init__(self, folder: Path, redact: Redactor | None = None, used: set[str] | None = None) -> None:
        self.folder = folder
        self.redact = redact or Redactor()
        # the files it replayed or recorded, relative to it (``<configuration folder>/<name>``): the
        # session's end tells the obsolete ones by them (:mod:`.recording_prune`)
        self.used_files: set[str] = set() if used is None else used
        self._listings: dict[str, Listing] = {}
        self._earlier_answers: dict[str, EarlierAnswers] = {}

    def path_for(self, config_id: str, key: AnswerKey) -> Path:
        return answer_path(self.folder, config_id, key)

    def save(self, config_id: str, key: AnswerKey, entry: dict[str, Any]) -> None:
        """File ``entry`` under ``key`` with when it was recorded: a ``replay:`` configuration picks
        the latest of a request's answers by it (file times do not survive a git checkout)."""
        stamped = {**entry, "recorded_at": datetime.now(UTC).isoformat(timespec="microseconds")}
        path = self.path_for(config_id, key)
        write_answer(path, stamped, self.redact)
        self.used(path)

    def used(self, path: Path) -> None:
        """Note that the answer in ``path`` was replayed or recorded (:attr:`used_files`)."""
        self.used_files.add(path.relative_to(self.folder).as_posix())

    def load(self, config_id: str, model: str, request: PromptRequest, key: AnswerKey) -> Recorded | str:
        """The answer sent as ``key`` says (or as its ``earlier`` key said, in a store of format
        2), or why there is none (empty: none was recorded). A store of the earliest format is
        read by ``model`` and ``request``: any answer to the request for a provider not told which
        eval asks (what was sent for it cannot be compared), for one told it only where its
        answers to the request do not differ."""
        for each in key.filed_under():
            with contextlib.suppress(FileNotFoundError):
                return self._read(self.path_for(config_id, each), used=True)
        prefixes = [each.prefix for each in key.filed_under()]
        earlier = Earliest(config_id, model, request)
        if any(self._listed(config_id, prefixes, earlier)):
            return STALE
        return self._earlier(config_id, earlier, key.names_asker, record_hint(self.folder))

    def load_latest(self, config_id: str, model: str, request: PromptRequest) -> Recorded | str:
        """The answer to ``request`` whatever was sent for it (the last one recorded), for a
        ``replay:`` configuration, which sends nothing: a Python callable's answer to the eval
        that asks, else another provider's (:meth:`_answers_to_request`), else one of a store of
        the earliest format where its answers to the request do not differ; or "" (none)."""
        hint = record_hint(self.folder, config_id)
        prefixes = [
            request_prefix(request_digest(config_id, model, request, asker)) for asker in (True, False)
        ]
        earlier = Earliest(config_id, model, request)
        asked, others = self._listed(config_id, prefixes, earlier)
        found = self._answers(config_id, asked) or self._answers_to_request(config_id, others, hint)
        if found:
            latest = max(found, key=_recorded_at)
            self.used(latest.path)
            return latest
        return self._earlier(config_id, earlier, None, hint)

    def _listing(self, config_id: str, again: bool = False) -> Listing:
        """The files of ``config_id``'s folder, as listed first (``again``: as listed now)."""
        if again or config_id not in self._listings:
            self._listings[config_id] = Listing.of(configuration_folder(self.folder, config_id))
        return self._listings[config_id]

    def _listed(self, config_id: str, prefixes: list[str], earlier: Earliest) -> list[tuple[str, ...]]:
        """The names of the files of the answers under each of ``prefixes``; listed again where
        the listing has none, nor an answer of the earliest format (``earlier``'s)."""
        listing = self._listing(config_id)
        found = [listing.under(prefix) for prefix in prefixes]
        if not any(found) and earlier.name not in listing.names:
            listing = self._listing(config_id, again=True)
            found = [listing.under(prefix) for prefix in prefixes]
        return found

    def _answers(self, config_id: str, names: Iterable[str]) -> list[Recorded]:
        """The answers in the files of ``config_id``'s folder named ``names`` (those still there)."""
        folder = configuration_folder(self.folder, config_id)
        found = (self._read_if_there(folder / name) for name in names)
        return [recorded for recorded in found if recorded is not None]

    def _answers_to_request(self, config_id: str, names: Iterable[str], hint: str) -> list[Recorded]:
        """The answers in the files ``names``, to a request by a provider not told which eval asks;
        raises ProviderError where several of them are of format 2 and differ, with none of a
        later format: their names do not say for which eval each was (a Python callable's or a
        plugin's provider's, which is told it, or other settings), and a ``replay:`` configuration
        sends nothing that could. (A provider of those records its answers by eval now: one whose
        answers are filed by the request alone is not told it.)"""
        found = self._answers(config_id, names)
        earlier = [recorded for recorded in found if recorded.entry.get("format") == 2]
        if len(found) == len(earlier) and len({_answer(recorded) for recorded in earlier}) > 1:
            folder = configuration_folder(self.folder, config_id)
            listed = ", ".join(sorted(recorded.path.name for recorded in earlier))
            raise ProviderError(
                f"the recorded answers {listed} in {folder} answer this prompt differently, and were "
                "recorded before a store noted which eval each answered (for different evals of a "
                "Python callable or of a plugin's provider, or with other settings): they cannot be "
                f"told apart; record them again with {hint}"
            )
        return found

    def _earlier(self, config_id: str, earlier: Earliest, told: bool | None, hint: str) -> Recorded | str:
        """The answer to ``earlier``'s request in a store of the earliest format, or "" (none). ``told``:
        whether the provider that asks is told which eval asks (None: not known, a ``replay:``
        configuration); unless it is not, several answers to the request that differ are an
        error (none of them can be told to be this eval's)."""
        if earlier.name not in self._listing(config_id).names:
            return ""
        path = configuration_folder(self.folder, config_id) / earlier.name
        try:
            found = replace(self._read(path, used=True), earlier=True)
        except FileNotFoundError:
            return ""
        if told is False:
            return found  # any answer to the request is this eval's
        names = self._earlier_sent(config_id).answers_to(earlier.digest)
        answers = self._answers(config_id, names) if len(names) > 1 else []
        for each in answers:  # compared with: none of them is obsolete while this request is asked
            self.used(each.path)
        if len({_answer(recorded) for recorded in answers}) > 1:
            raise ProviderError(
                f"{path.parent} holds {len(answers)} answers to this request that differ, recorded "
                "in the earlier format, which does not say which eval, code, settings or endpoint "
                f"each was given for: they cannot be told apart; record them again with {hint}"
            )
        return found

    def _earlier_sent(self, config_id: str) -> EarlierAnswers:
        """The answers of the earliest format in ``config_id``'s folder (read once)."""
        if config_id not in self._earlier_answers:
            folder = configuration_folder(self.folder, config_id)
            self._earlier_answers[config_id] = EarlierAnswers.read(folder, self._listing(config_id).names)
        return self._earlier_answers[config_id]

    def _read_if_there(self, path: Path) -> Recorded | None:
        try:
            return self._read(path)
        except FileNotFoundError:  # replaced by another xdist worker meanwhile, or removed
            return None

    def _read(self, path: Path, used: bool = False) -> Recorded:
        """The answer in ``path`` (``used``: noted as used, also where it cannot be read: a
        damaged file an eval asks for is not obsolete)."""
        try:
            found = Recorded(path, *read_answer(path))
        except AnswerFileError as exc:
            if used:
                self.used(path)
            raise ProviderError(f"recorded answer {path} {exc}") from None
        if used:
            self.used(path)
        return found


def _answer(recorded: Recorded) -> str:
    """What ``recorded`` answers: its text and tool calls (not what it cost nor how long it took)."""
    entry = recorded.entry
    return json.dumps([entry.get("response"), entry.get("tool_calls")], sort_keys=True)


def record_hint(store: Path, config_id: str | None = None) -> str:
    """How to record an answer into ``store``: for a ``replay:`` configuration (``config_id``), by
    running the configuration its answers come from under that id."""
    if config_id is None:
        return f"--vibe-record {store}"
    return (
        f"--vibe-record {store}, running configuration {config_id!r} with the provider its answers "
        "come from (a `replay:` configuration only reads them)"
    )


def _recorded_at(recorded: Recorded) -> tuple[str, int, str]:
    """When ``recorded`` was recorded: its stamp (an answer of the earlier format has none, and is
    older than any that has one), then its file's time, then its name (never a tie)."""
    try:
        mtime = recorded.path.stat().st_mtime_ns
    except OSError:
        mtime = 0
    return str(recorded.entry.get("recorded_at") or ""), mtime, recorded.path.name


STALE = (
    "; this prompt was recorded, but sent with other request settings than the configuration's "
    "now (its system prompt, temperature, params, headers or other settings changed since)"
)


class RecordingProvider(Wrapping):
    """Answers with ``inner`` and stores every answer under the key of what ``source`` (the
    configuration's own provider, under any cache) sent for it, with the digest of its code."""

    def __init__(
        self, inner: Provider, store: Store, config_id: str, model: str | None, source: Provider | None = None
    ) -> None:
        self.inner, self.store, self.config_id, self.model = inner, store, config_id, model
        self.source = source if source is not None else inner
        self.keys = AnswerKeys(self.source, config_id)

    def answer(self, request: PromptRequest) -> ProviderResponse:
        model = self.model or request.model
        key, code = self.keys.key(model, request), code_digest(self.source)
        response, entry = answer_to_store(self.inner, request, key, self.config_id, model, self.source, code)
        try:
            self.store.save(self.config_id, key, entry)
        except OSError as exc:  # the folder checked at the start is gone, full or read-only now
            where = self.store.path_for(self.config_id, key)
            raise ProviderError(
                f"--vibe-record: the answer could not be stored in {where}: {exc.strerror or exc}"
            ) from None
        return response


class ReplayProvider:
    """Answers from ``store`` only; a prompt it has no answer for is an error saying how to record
    it. ``source``: the configuration's own provider (--vibe-replay), whose request now the
    recorded answer must have been sent for; None for a ``replay:`` configuration."""

    uses_workdir = False

    def __init__(
        self, store: Store, config_id: str, model: str | None, source: Provider | None = None
    ) -> None:
        self.store, self.config_id, self.model, self.source = store, config_id, model, source
        self.keys = AnswerKeys(source, config_id) if source is not None else None
        self._noted_earlier = False

    def unavailable_reason(self) -> str | None:
        if not self.store.folder.is_dir():
            return f"replay store {self.store.folder} does not exist (record one with --vibe-record)"
        return None

    def answer(self, request: PromptRequest) -> ProviderResponse:
        model = self.model or request.model
        if self.keys is None:  # a `replay:` configuration
            found = self.store.load_latest(self.config_id, model, request)
            if isinstance(found, str):
                raise ProviderError(self._miss(request, model, None, found))
            return found.response
        key = self.keys.key(model, request)
        found = self.store.load(self.config_id, model, request, key)
        if isinstance(found, str):
            raise ProviderError(self._miss(request, model, key, found))
        self._check(found)
        return found.response

    def _check(self, found: Recorded) -> None:
        """Refuse an answer the configuration's code gave before it changed; note (once) a store of
        the earlier format, whose answers cannot be checked."""
        if found.earlier:
            if not self._noted_earlier:
                self._noted_earlier = True
                note(ReplayNote(earlier_note(self.config_id, self.store.folder)), stacklevel=3)
            return
        recorded_code = found.entry.get("code")
        if recorded_code is None:
            return
        try:
            code = code_digest(self.source)
        except ProviderError:
            return  # its code cannot be imported here: the recording is what there is
        if code != recorded_code:
            raise ProviderError(
                f"recorded answer {found.path} was given by other code than configuration "
                f"{self.config_id!r} runs now (its Python module, or the file that defines its "
                f"function, changed since); record it again with --vibe-record {self.store.folder}"
            )

    def _miss(self, request: PromptRequest, model: str, key: AnswerKey | None, reason: str) -> str:
        """Why there is no answer to ``request`` (``reason`` says more), which file was expected
        (``key``'s; None: a ``replay:`` configuration's, any answer to the request) and how to
        record it."""
        which = f"repeat {request.repeat} of " if request.repeat else ""
        if request.turn:
            which = f"turn {request.turn} of a conversation, {which}"
        how = (
            " with the same --vibe-repeat (each repeat is answered on its own, never from another's answer)"
            if request.repeat
            else ""
        )
        if key is not None:
            expected = self.store.path_for(self.config_id, key).name
            hint = record_hint(self.store.folder)
        else:
            asked, other = (
                request_prefix(request_digest(self.config_id, model, request, asker))
                for asker in (True, False)
            )
            expected = (
                f"a file named {asked}*.json, a Python callable's answer to this eval, or {other}*.json, "
                "another provider's"
            )
            hint = record_hint(self.store.folder, self.config_id)
        return (
            f"no recorded answer for {which}configuration {self.config_id!r}, model {model!r} and this "
            f"prompt in {self.store.folder} (expected {expected}){reason}; record it with {hint}{how}"
        )


def earlier_note(config_id: str, store: Path) -> str:
    """What --vibe-replay says of the answers of ``config_id`` in a store of the earlier format."""
    return (
        f"--vibe-replay: the answers of configuration {config_id!r} in {store} were recorded in an "
        "earlier format, which does not say what was sent for them: they are replayed without "
        "checking that the configuration would send the same requests now (or run the same code); "
        "record them again with --vibe-record to have them checked"
    )


def recorded(
    provider: Provider,
    config_id: str,
    model: str | None,
    record: Path | None,
    replay: Path | None,
    redact: Redactor,
    source: Provider | None = None,
    used: set[str] | None = None,
) -> Provider:
    """``provider`` as --vibe-record / --vibe-replay make it (unchanged without either); ``source``:
    the configuration's own provider, when ``provider`` wraps it (a cache); ``used``: where the
    store notes the files it replays or records (:attr:`Store.used_files`)."""
    source = source if source is not None else provider
    if replay is not None:
        return ReplayProvider(Store(replay, redact, used), config_id, model, source)
    if record is not None:
        return RecordingProvider(provider, Store(record, redact, used), config_id, model, source)
    return provider
