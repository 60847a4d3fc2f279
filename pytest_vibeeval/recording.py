"""Record and replay provider answers, for deterministic CI and cheap iteration on checks and
formulas.

A store is a folder: one JSON file per answer under ``<store>/<configuration>/``, named by a hash
of the request (configuration, model, the suite's system prompt, prompt, and in a conversation
every earlier message and answer). Each answer also holds ``sent``: the hash of what the provider
sent for it, as the response cache keys it (the request body with the configuration's own system
prompt, temperature and params, the endpoint, the configuration's settings; see
:func:`.answer_files.sent_key`). ``--vibe-record DIR`` wraps every provider in a
:class:`RecordingProvider`; ``--vibe-replay DIR`` answers from the store with a
:class:`ReplayProvider`, which fails clearly on a miss, and an answer recorded for what the
configuration would not send now is a miss. A configuration's ``replay: DIR`` has no request of its
own to compare: it answers by the request's hash alone. Stored prompts are redacted for reading; the
hashes are of the real prompt.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from .answer_files import (
    FORMAT,
    AnswerFileError,
    answer_digest,
    answer_entry,
    answer_path,
    conversation_so_far,
    read_answer,
    sent_key,
    write_answer,
)
from .loading.templates import Redactor
from .providers.base import PromptRequest, Provider, ProviderError, ProviderResponse, Wrapping


def answer_key(
    config_id: str,
    model: str,
    system_prompt: str | None,
    prompt: str,
    repeat: int = 0,
    history: tuple[tuple[str, str], ...] = (),
) -> str:
    """The hash an answer is stored under. Each repeat (--vibe-repeat) has its own answer: a repeat
    served the answer of another would not be an independent sample. A conversation's later turn
    is keyed on the whole conversation so far (``history``): a changed earlier prompt or answer
    is a miss."""
    parts: list[object] = [FORMAT, config_id, model, system_prompt, prompt]
    if repeat:
        parts.append(repeat)
    if history:
        parts.append({"history": history})
    return answer_digest(parts)


def request_key(config_id: str, model: str, request: PromptRequest, sent: str | None = None) -> str:
    """:func:`answer_key` of ``request``; with ``sent`` (the hash of what was sent for it), the key
    of that request as sent."""
    key = answer_key(config_id, model, request.system_prompt, request.prompt, request.repeat, request.history)
    return key if sent is None else answer_digest([key, {"sent": sent}])


class Store:
    """The answers of one store folder."""

    def __init__(self, folder: Path, redact: Redactor | None = None) -> None:
        self.folder = folder
        self.redact = redact or Redactor()

    def path_for(self, config_id: str, key: str) -> Path:
        return answer_path(self.folder, config_id, key)

    def save(
        self, config_id: str, model: str, request: PromptRequest, response: ProviderResponse, sent: str | None
    ) -> None:
        """Store ``response`` to ``request`` under the key of what was sent for it (``sent``; None:
        the provider does not say), and under the request's own key, where a ``replay:``
        configuration, which knows no more of the request, finds it."""
        entry = answer_entry(
            response,
            configuration=config_id,
            model=model,
            repeat=request.repeat,
            system_prompt=request.system_prompt,
            **conversation_so_far(request),
            prompt=request.prompt,
            **({"sent": sent} if sent is not None else {}),
        )
        for key in {request_key(config_id, model, request), request_key(config_id, model, request, sent)}:
            write_answer(self.path_for(config_id, key), entry, self.redact)

    def load(
        self, config_id: str, model: str, request: PromptRequest, sent: str | None = None
    ) -> ProviderResponse | str:
        """The answer to ``request``, or why there is none (empty: none was recorded). ``sent``: the
        hash of what would be sent for it now, which the recorded answer must have been sent for."""
        path = self.path_for(config_id, request_key(config_id, model, request, sent))
        try:
            return read_answer(path)[1]
        except FileNotFoundError:
            pass
        except AnswerFileError as exc:
            raise ProviderError(f"recorded answer {path} {exc}") from None
        if sent is not None and self.path_for(config_id, request_key(config_id, model, request)).is_file():
            return STALE  # the request was recorded, sent otherwise
        return ""


STALE = (
    "; this prompt was recorded, but sent with other request settings than the configuration's "
    "now (its system prompt, temperature, params, base URL or other settings changed since, or it "
    "was recorded before recordings noted what was sent)"
)


class RecordingProvider(Wrapping):
    """Answers with ``inner`` and stores every answer, with the hash of what ``source`` (the
    configuration's own provider, under any cache) sent for it."""

    def __init__(
        self, inner: Provider, store: Store, config_id: str, model: str | None, source: Provider | None = None
    ) -> None:
        self.inner, self.store, self.config_id, self.model = inner, store, config_id, model
        self.source = source if source is not None else inner

    def answer(self, request: PromptRequest) -> ProviderResponse:
        started = time.perf_counter()
        response = self.inner.answer(request)
        if response.latency is None:  # replays report the latency measured now
            response = replace(response, latency=time.perf_counter() - started)
        try:
            sent = sent_key(self.source, self.config_id, request)
            self.store.save(self.config_id, self.model or request.model, request, response, sent)
        except OSError as exc:  # the folder checked at the start is gone, full or read-only now
            raise ProviderError(f"--vibe-record: the answer could not be stored: {exc}") from None
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

    def unavailable_reason(self) -> str | None:
        if not self.store.folder.is_dir():
            return f"replay store {self.store.folder} does not exist (record one with --vibe-record)"
        return None

    def answer(self, request: PromptRequest) -> ProviderResponse:
        model = self.model or request.model
        sent = sent_key(self.source, self.config_id, request) if self.source is not None else None
        response = self.store.load(self.config_id, model, request, sent)
        if isinstance(response, str):
            key = request_key(self.config_id, model, request, sent)
            which = f"repeat {request.repeat} of " if request.repeat else ""
            if request.turn:
                which = f"turn {request.turn} of a conversation, {which}"
            how = (
                " with the same --vibe-repeat (each repeat is answered on its own, never from another's "
                "answer)"
                if request.repeat
                else ""
            )
            raise ProviderError(
                f"no recorded answer for {which}configuration {self.config_id!r}, model {model!r} and this "
                f"prompt in {self.store.folder} (expected {self.store.path_for(self.config_id, key).name})"
                f"{response}; record it with --vibe-record {self.store.folder}{how}"
            )
        return response


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
