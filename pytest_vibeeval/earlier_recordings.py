"""Stores recorded before each answer was filed once under the key of what is sent
(:mod:`.answer_keys`): read, never written. Such a store filed each answer under the hash of its
request (configuration, model, the suite's system prompt, prompt, a conversation's earlier
messages, the repeat), and in its later version again under that hash extended with the hash of
what was sent (its entry's ``sent``), which took in where it was sent and a Python callable's code,
so it cannot be compared with what the configuration sends now. Both versions are read by the
first hash, which the answer recorded last for a request holds, whichever eval asked it: where a
store holds several answers to a request (two evals of a Python callable, or other code,
settings or endpoint), :class:`EarlierAnswers` finds them (indexed once per folder), and where
they differ none of them can be told to be this one's."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .answer_files import AnswerFileError, read_answer
from .answer_keys import answer_digest
from .providers.base import PromptRequest

NAME = re.compile(r"[0-9a-f]{40}\.json")  # the file name of an answer of the earlier format


def earlier_request_digest(config_id: str, model: str, request: PromptRequest) -> str:
    """The hash a store of the earlier format files the answer to ``request`` under."""
    return _request_digest(
        config_id, model, request.system_prompt, request.prompt, request.repeat, request.history
    )


def _request_digest(
    config_id: str, model: str, system_prompt: str | None, prompt: str, repeat: int, history: Iterable[Any]
) -> str:
    parts: list[object] = [1, config_id, model, system_prompt, prompt]
    if repeat:
        parts.append(repeat)
    history = list(history)
    if history:
        parts.append({"history": history})
    return answer_digest(parts)


def earlier_answer_name(digest: str) -> str:
    """The name of the file a store of the earlier format holds the answer to the request whose
    hash is ``digest`` (:func:`earlier_request_digest`) in."""
    return f"{digest[:40]}.json"


_name = earlier_answer_name


def _sent_name(request: str, sent: str) -> str:
    """The name of the file the later version filed the answer to the request whose hash is
    ``request`` under again, by the hash of what was sent for it (``sent``)."""
    return _name(answer_digest([request, {"sent": sent}]))


@dataclass(frozen=True)
class EarlierAnswers:
    """The answers of the earlier format in one configuration's folder, read once: the files each
    request's answers were filed under again by what was sent (one per way it was sent), found by
    the request their entries hold; and what was sent for the answers whose entries do not say
    their request (a prompt stored redacted), whose files are found by trying each request."""

    by_request: dict[str, frozenset[str]]
    names: frozenset[str]
    unplaced: frozenset[str]  # the ``sent`` of the answers not found by their entries

    @classmethod
    def read(cls, folder: Path, names: Iterable[str]) -> EarlierAnswers:
        """The answers in ``folder``, whose files are ``names`` (of every format)."""
        ours = frozenset(name for name in names if NAME.fullmatch(name))
        by_request: dict[str, set[str]] = {}
        unplaced: set[str] = set()
        for name in ours:
            try:
                entry = read_answer(folder / name)[0]
            except (OSError, AnswerFileError):
                continue  # replaced meanwhile, or unreadable: read as an answer, it says so
            sent = entry.get("sent")
            if not isinstance(sent, str):
                continue  # of the first version, which filed each answer once
            request = _entry_request(entry)
            if request is not None and name == _name(request):
                continue  # filed under the request's hash: the answer recorded last, filed again
            if request is not None and name == _sent_name(request, sent):
                by_request.setdefault(request, set()).add(name)
            else:
                unplaced.add(sent)
        frozen = {request: frozenset(found) for request, found in by_request.items()}
        return cls(frozen, ours, frozenset(unplaced))

    def answers_to(self, digest: str) -> list[str]:
        """The names of the files of the answers to the request whose hash is ``digest``
        (:func:`earlier_request_digest`) that were sent otherwise from each other: each was filed
        again under the request's hash extended with the hash of what was sent for it."""
        found = set(self.by_request.get(digest, ()))
        found.update(
            name for name in (_sent_name(digest, sent) for sent in self.unplaced) if name in self.names
        )
        return sorted(found)


def _entry_request(entry: dict[str, Any]) -> str | None:
    """The hash of the request an entry of the earlier format answers, from what it holds; None
    where it does not hold it whole."""
    config_id, model, prompt = entry.get("configuration"), entry.get("model"), entry.get("prompt")
    system_prompt, repeat, history = (
        entry.get("system_prompt"),
        entry.get("repeat") or 0,
        entry.get("history") or [],
    )
    if not (isinstance(config_id, str) and isinstance(model, str) and isinstance(prompt, str)):
        return None
    if not (isinstance(system_prompt, str | None) and isinstance(repeat, int) and isinstance(history, list)):
        return None
    messages = []
    for message in history:
        if not isinstance(message, dict):
            return None
        messages.append([message.get("role"), message.get("content")])
    return _request_digest(config_id, model, system_prompt, prompt, repeat, messages)
