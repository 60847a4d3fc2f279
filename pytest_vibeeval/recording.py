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
from dataclasses import dataclass, replace
from datetime import UTC, datetime
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
from .answer_keys import AnswerKey, answer_key, code_digest, request_digest, request_prefix
from .earlier_recordings import EarlierAnswers, earlier_answer_path
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


class Store:
    """The answers of one store folder."""

    def __init__(self, folder: Path, redact: Redactor | None = None) -> None:
        self.folder = folder
        self.redact = redact or Redactor()
        self._earlier_answers: dict[str, EarlierAnswers] = {}

    def path_for(self, config_id: str, key: AnswerKey) -> Path:
        return answer_path(self.folder, config_id, key)

    def save(self, config_id: str, key: AnswerKey, entry: dict[str, Any]) -> None:
        """File ``entry`` under ``key`` with when it was recorded: a ``replay:`` configuration picks
        the latest of a request's answers by it (file times do not survive a git checkout)."""
        stamped = {**entry, "recorded_at": datetime.now(UTC).isoformat(timespec="microseconds")}
        write_answer(self.path_for(config_id, key), stamped, self.redact)

    def load(
        self, config_id: str, model: str, request: PromptRequest, key: AnswerKey, exact: bool
    ) -> Recorded | str:
        """The answer filed under ``key``, or why there is none (empty: none was recorded). With
        ``exact``, only an answer sent as ``key`` says will do (or as its ``earlier`` key said,
        in a store of format 2); without, the answer to ``key``'s request, whatever was sent for
        it (the last one recorded), that of the eval that asks first. A store of the earlier
        format is read by ``model`` and ``request``."""
        if exact:
            for each in key.filed_under:
                with contextlib.suppress(FileNotFoundError):
                    return self._read(self.path_for(config_id, each))
            if self._files(config_id, key.prefix):
                return STALE
        else:
            asked = request_prefix(request_digest(config_id, model, request, asker=True))
            found = self._answers(config_id, asked) or self._answers_to_request(config_id, key)
            if found:
                return max(found, key=_recorded_at)
        return self._earlier(config_id, model, request)

    def _files(self, config_id: str, prefix: str) -> list[Path]:
        """The files of the answers whose names start with ``prefix``."""
        return list(configuration_folder(self.folder, config_id).glob(f"{prefix}*.json"))

    def _answers(self, config_id: str, prefix: str) -> list[Recorded]:
        """The answers whose file names start with ``prefix``."""
        found = map(self._read_if_there, self._files(config_id, prefix))
        return [recorded for recorded in found if recorded is not None]

    def _answers_to_request(self, config_id: str, key: AnswerKey) -> list[Recorded]:
        """The answers to ``key``'s request by a provider not told which eval asks; raises
        ProviderError where several of them a Python callable gave in a store of format 2, whose
        names do not say for which eval each was (a ``replay:`` configuration sends nothing that
        could)."""
        found = self._answers(config_id, key.prefix)
        told = [r for r in found if r.entry.get("format") == 2 and r.entry.get("code") is not None]
        if len(told) > 1:
            folder = configuration_folder(self.folder, config_id)
            names = ", ".join(sorted(recorded.path.name for recorded in told))
            raise ProviderError(
                f"the recorded answers {names} in {folder} answer this prompt for different evals of "
                "a Python callable (or different callables), and were recorded before a store noted "
                "which eval each answered: they cannot be told apart; record them again with "
                f"--vibe-record {self.folder}"
            )
        return found

    def _earlier(self, config_id: str, model: str, request: PromptRequest) -> Recorded | str:
        """The answer to ``request`` in a store of the earlier format, or "" (none)."""
        path = earlier_answer_path(self.folder, config_id, model, request)
        try:
            found = replace(self._read(path), earlier=True)
        except FileNotFoundError:
            return ""
        answers = self._earlier_sent(config_id).count(config_id, model, request)
        if answers > 1:
            raise ProviderError(
                f"{path.parent} holds {answers} answers to this request recorded in the earlier "
                "format, which does not say which eval, code or settings each was given for: they "
                f"cannot be told apart; record them again with --vibe-record {self.folder}"
            )
        return found

    def _earlier_sent(self, config_id: str) -> EarlierAnswers:
        """The answers of the earlier format in ``config_id``'s folder (read once)."""
        if config_id not in self._earlier_answers:
            folder = configuration_folder(self.folder, config_id)
            self._earlier_answers[config_id] = EarlierAnswers.read(folder)
        return self._earlier_answers[config_id]

    def _read_if_there(self, path: Path) -> Recorded | None:
        try:
            return self._read(path)
        except FileNotFoundError:  # replaced by another xdist worker meanwhile
            return None

    def _read(self, path: Path) -> Recorded:
        try:
            return Recorded(path, *read_answer(path))
        except AnswerFileError as exc:
            raise ProviderError(f"recorded answer {path} {exc}") from None


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

    def answer(self, request: PromptRequest) -> ProviderResponse:
        model = self.model or request.model
        key, code = answer_key(self.source, self.config_id, model, request), code_digest(self.source)
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
        self._noted_earlier = False

    def unavailable_reason(self) -> str | None:
        if not self.store.folder.is_dir():
            return f"replay store {self.store.folder} does not exist (record one with --vibe-record)"
        return None

    def answer(self, request: PromptRequest) -> ProviderResponse:
        model = self.model or request.model
        key = answer_key(self.source or self, self.config_id, model, request)
        found = self.store.load(self.config_id, model, request, key, exact=self.source is not None)
        if isinstance(found, str):
            raise ProviderError(self._miss(request, model, key, found))
        if self.source is not None:
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

    def _miss(self, request: PromptRequest, model: str, key: AnswerKey, reason: str) -> str:
        which = f"repeat {request.repeat} of " if request.repeat else ""
        if request.turn:
            which = f"turn {request.turn} of a conversation, {which}"
        how = (
            " with the same --vibe-repeat (each repeat is answered on its own, never from another's answer)"
            if request.repeat
            else ""
        )
        return (
            f"no recorded answer for {which}configuration {self.config_id!r}, model {model!r} and this "
            f"prompt in {self.store.folder} (expected {self.store.path_for(self.config_id, key).name})"
            f"{reason}; record it with --vibe-record {self.store.folder}{how}"
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
) -> Provider:
    """``provider`` as --vibe-record / --vibe-replay make it (unchanged without either); ``source``:
    the configuration's own provider, when ``provider`` wraps it (a cache)."""
    source = source if source is not None else provider
    if replay is not None:
        return ReplayProvider(Store(replay, redact), config_id, model, source)
    if record is not None:
        return RecordingProvider(provider, Store(record, redact), config_id, model, source)
    return provider
