"""The one key an answer is filed under, by the response cache (--vibe-cache), --vibe-record,
--vibe-replay and ``replay:`` configurations alike: the hash of what is sent for it, never of
where it is sent (an endpoint on a new port each session must still find its answers).

The key has two parts. ``request`` is the hash of what any configuration of that id is asked:
its model, the suite's system prompt, the prompt, a conversation's earlier messages, the repeat
and the suite's MCP server (its name and settings); for a provider that is told which eval asks (a
Python callable is given the suite and the eval id), that too: two evals with one prompt ask it
different things. ``sent`` adds what the provider says the answer depends on (its
``cache_material``: an HTTP request's body, with the configuration's own system prompt,
temperature and params, and its headers; a Python callable's name and what it is given). An
answer's file is named by both, so a ``replay:`` configuration, which sends nothing, finds an
answer by its request alone.

The code that answers (a ``python:`` configuration's source files) is no part of the key: its
digest is stored beside the answer (:func:`code_digest`), so a recording replays where the code
cannot be imported, and a cache or replay that can import it compares the two."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import Any

from .providers.base import PromptRequest, without_token

KEY_FORMAT = 2  # 1: answers filed under the request's key and again under the key of what was sent


@dataclass(frozen=True)
class AnswerKey:
    """An answer's key: the hash of its request, and of everything sent for it. ``names_asker``:
    whether the request holds the eval that asks (and its suite), for a provider told them."""

    request: str
    sent: str
    names_asker: bool = False
    # makes the ``earlier`` key, when it is first read (most answers are found without it)
    earlier_of: Callable[[], AnswerKey] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def earlier(self) -> AnswerKey | None:
        """The key the same answer had in a store or cache written before the eval that asks was
        part of the request (format 2; there ``sent`` held it), for a key that ``names_asker``."""
        return None if self.earlier_of is None else self.earlier_of()

    def filed_under(self) -> Iterator[AnswerKey]:
        """The keys its answer may be filed under: this one, then the ``earlier`` one (made when
        it is reached)."""
        yield self
        if self.earlier is not None:
            yield self.earlier

    @property
    def prefix(self) -> str:
        """The start of the file name of every answer to this request, whatever was sent."""
        return request_prefix(self.request)

    @property
    def file_name(self) -> str:
        return f"{self.prefix}{self.sent[:16]}.json"


def request_prefix(digest: str) -> str:
    """The start of the file name of every answer to the request whose hash is ``digest``."""
    return f"{digest[:24]}-"


def answer_digest(parts: list[object]) -> str:
    """The sha256 (hex) of ``parts`` as JSON."""
    material = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def request_digest(config_id: str, model: str, request: PromptRequest, asker: bool = False) -> str:
    """The hash of ``request`` as configuration ``config_id`` (whose model is ``model``) is asked
    it; with ``asker``, of the eval that asks it too. Each repeat (--vibe-repeat) has its own
    answer: a repeat served the answer of another would not be an independent sample. A
    conversation's later turn is keyed on the whole conversation so far: a changed earlier prompt
    or answer is a miss."""
    asked: dict[str, object] = {
        "model": model,
        "system_prompt": request.system_prompt,
        "prompt": request.prompt,
    }
    if request.history:
        asked["history"] = request.history
    if request.repeat:
        asked["repeat"] = request.repeat
    if request.mcp_server:
        asked["mcp_server"] = without_token(request.mcp_server)
    if asker:
        asked["asker"] = {"suite": request.suite, "eval": request.eval_id}
    return answer_digest([KEY_FORMAT, config_id, asked])


class AnswerKeys:
    """The keys of ``provider``'s answers for configuration ``config_id``. Whether what it sends
    says which eval asks is a matter of the provider, not of the request: it is asked once, with
    its first request, so that a key costs what the provider's ``cache_material`` and two hashes
    cost."""

    def __init__(self, provider: object, config_id: str) -> None:
        material = getattr(provider, "cache_material", None)
        self.material: Callable[[PromptRequest], Any] | None = material if callable(material) else None
        self.config_id = config_id
        self.told_asker: bool | None = None  # not asked yet

    def key(self, model: str, request: PromptRequest) -> AnswerKey:
        """The key of the answer to ``request`` (:func:`request_digest`, with the eval that asks
        when what the provider sends depends on it), whose model is ``model``."""
        sent = self.material(request) if self.material is not None else None
        if self.material is not None and self.told_asker is None:
            self.told_asker = _told_asker(self.material, request, sent)
        if not self.told_asker:
            return _key(self.config_id, model, request, sent)
        digest = request_digest(self.config_id, model, request, asker=True)
        return AnswerKey(
            digest,
            answer_digest([KEY_FORMAT, digest, sent]),
            names_asker=True,
            earlier_of=partial(_key, self.config_id, model, request, sent),
        )


def _key(config_id: str, model: str, request: PromptRequest, sent: object) -> AnswerKey:
    """The key of the answer to ``request`` by a provider not told which eval asks (``sent``: what
    it says it sends)."""
    digest = request_digest(config_id, model, request)
    return AnswerKey(digest, answer_digest([KEY_FORMAT, digest, sent]))


def answer_key(provider: object, config_id: str, model: str, request: PromptRequest) -> AnswerKey:
    """The key of ``provider``'s answer to ``request`` for configuration ``config_id``, whose model
    is ``model`` (:meth:`AnswerKeys.key`; a provider asked many times keeps an :class:`AnswerKeys`)."""
    return AnswerKeys(provider, config_id).key(model, request)


def _told_asker(material: Callable[[PromptRequest], Any], request: PromptRequest, sent: object) -> bool:
    """Whether what is sent for ``request`` (``sent``, by ``material``) says which eval asks."""
    other = replace(request, suite=f"{request.suite}\0", eval_id=f"{request.eval_id}\0")
    return bool(material(other) != sent)


def system_prompt_sent(provider: object, request: PromptRequest) -> str | None:
    """The system prompt ``provider`` sends with ``request``: its ``sent_system_prompt`` (a
    configuration's own one, for providers that send it), else the suite's."""
    sent = getattr(provider, "sent_system_prompt", None)
    return sent(request) if callable(sent) else request.system_prompt


def code_digest(provider: object) -> str | None:
    """The digest of the code that answers for ``provider`` (a Python callable's source files), or
    None for a provider whose answers come from elsewhere. Raises ProviderError when the code
    cannot be imported."""
    digest = getattr(provider, "code_digest", None)
    return digest() if callable(digest) else None
