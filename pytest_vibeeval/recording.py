"""Record and replay provider answers, for deterministic CI and cheap iteration on checks and
formulas.

A store is a folder: one JSON file per answer under ``<store>/<configuration>/``, named by a hash
of what the answer depends on (configuration, model, system prompt, prompt). ``--vibe-record DIR``
wraps every provider in a :class:`RecordingProvider`; ``--vibe-replay DIR`` (or a configuration's
``replay: DIR``) answers from the store with a :class:`ReplayProvider`, which fails clearly on a
miss. Stored prompts are redacted for reading; the hash is of the real prompt.
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
    read_answer,
    write_answer,
)
from .loading.templates import Redactor
from .providers.base import PromptRequest, Provider, ProviderError, ProviderResponse


def answer_key(config_id: str, model: str, system_prompt: str | None, prompt: str, repeat: int = 0) -> str:
    """The hash an answer is stored under. Each repeat (--vibe-repeat) has its own answer: a repeat
    served the answer of another would not be an independent sample."""
    parts: list[object] = [FORMAT, config_id, model, system_prompt, prompt]
    if repeat:
        parts.append(repeat)
    return answer_digest(parts)


class Store:
    """The answers of one store folder."""

    def __init__(self, folder: Path, redact: Redactor | None = None) -> None:
        self.folder = folder
        self.redact = redact or Redactor()

    def path_for(self, config_id: str, key: str) -> Path:
        return answer_path(self.folder, config_id, key)

    def save(self, config_id: str, model: str, request: PromptRequest, response: ProviderResponse) -> None:
        key = answer_key(config_id, model, request.system_prompt, request.prompt, request.repeat)
        entry = answer_entry(
            response,
            configuration=config_id,
            model=model,
            repeat=request.repeat,
            system_prompt=request.system_prompt,
            prompt=request.prompt,
        )
        write_answer(self.path_for(config_id, key), entry, self.redact)

    def load(self, config_id: str, model: str, request: PromptRequest) -> ProviderResponse | None:
        key = answer_key(config_id, model, request.system_prompt, request.prompt, request.repeat)
        path = self.path_for(config_id, key)
        try:
            return read_answer(path)[1]
        except FileNotFoundError:
            return None
        except AnswerFileError as exc:
            raise ProviderError(f"recorded answer {path} {exc}") from None


class RecordingProvider:
    """Answers with ``inner`` and stores every answer."""

    def __init__(self, inner: Provider, store: Store, config_id: str, model: str | None) -> None:
        self.inner, self.store, self.config_id, self.model = inner, store, config_id, model

    def unavailable_reason(self) -> str | None:
        return self.inner.unavailable_reason()

    def answer(self, request: PromptRequest) -> ProviderResponse:
        started = time.perf_counter()
        response = self.inner.answer(request)
        if response.latency is None:  # replays report the latency measured now
            response = replace(response, latency=time.perf_counter() - started)
        self.store.save(self.config_id, self.model or request.model, request, response)
        return response


class ReplayProvider:
    """Answers from ``store`` only; a prompt it has no answer for is an error saying how to record it."""

    def __init__(self, store: Store, config_id: str, model: str | None) -> None:
        self.store, self.config_id, self.model = store, config_id, model

    def unavailable_reason(self) -> str | None:
        if not self.store.folder.is_dir():
            return f"replay store {self.store.folder} does not exist (record one with --vibe-record)"
        return None

    def answer(self, request: PromptRequest) -> ProviderResponse:
        model = self.model or request.model
        response = self.store.load(self.config_id, model, request)
        if response is None:
            key = answer_key(self.config_id, model, request.system_prompt, request.prompt, request.repeat)
            which = f"repeat {request.repeat} of " if request.repeat else ""
            how = (
                " with the same --vibe-repeat (each repeat is answered on its own, never from another's "
                "answer)"
                if request.repeat
                else ""
            )
            raise ProviderError(
                f"no recorded answer for {which}configuration {self.config_id!r}, model {model!r} and this "
                f"prompt in {self.store.folder} (expected {self.store.path_for(self.config_id, key).name}); "
                f"record it with --vibe-record {self.store.folder}{how}"
            )
        return response


def recorded(
    provider: Provider,
    config_id: str,
    model: str | None,
    record: Path | None,
    replay: Path | None,
    redact: Redactor,
) -> Provider:
    """``provider`` as --vibe-record / --vibe-replay make it (unchanged without either)."""
    if replay is not None:
        return ReplayProvider(Store(replay, redact), config_id, model)
    if record is not None:
        return RecordingProvider(provider, Store(record, redact), config_id, model)
    return provider
