"""Stored answers on disk, shared by the record/replay store (:mod:`.recording`) and the response
cache (:mod:`.cache`): where the answer filed under a key (:mod:`.answer_keys`) goes, and its JSON entry,
written atomically with every secret masked and read back without trusting it (a regular file of
bounded size whose values have the right types)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from .answer_keys import AnswerKey, system_prompt_sent
from .atomic_files import write_atomic
from .bounded_read import UnreadableFile, read_bounded
from .filenames import name_part
from .loading.templates import Redactor
from .providers.base import PromptRequest, Provider, ProviderResponse
from .results import ToolCallRecord

# Of an entry. 1: without `key` and `code`, filed twice in a store; 2: without `suite` and `eval`,
# a Python callable's answer filed under a request that did not hold the eval that asked.
FORMAT = 3
MAX_ANSWER_BYTES = 256 * 2**20  # a stored answer is at most max_output_bytes of text, and its tool calls


class AnswerFileError(Exception):
    """A stored answer that cannot be used; the message continues a sentence that names the file
    (``is unreadable: …`` / ``is not a stored answer: …``)."""


def answer_path(folder: Path, config_id: str, key: AnswerKey) -> Path:
    """Where the answer filed under ``key`` goes: ``<folder>/<configuration>/<key's file name>``."""
    return configuration_folder(folder, config_id) / key.file_name


def configuration_folder(folder: Path, config_id: str) -> Path:
    """The folder of ``config_id``'s answers in the store or cache at ``folder``."""
    return folder / name_part(config_id)


def answer_entry(response: ProviderResponse, **about: object) -> dict[str, Any]:
    """The JSON entry of ``response``, after the fields ``about`` it (configuration, prompt, …)."""
    return {
        "format": FORMAT,
        **about,
        "response": response.text,
        "cost": response.cost,
        "input_tokens": response.input_tokens,
        "output_tokens": response.output_tokens,
        "cached_input_tokens": response.cached_input_tokens,
        "cache_write_tokens": response.cache_write_tokens,
        "latency": response.latency,
        # null: the provider cannot report tool calls; []: it reported none
        "tool_calls": None
        if response.tool_calls is None
        else [call.model_dump() for call in response.tool_calls],
        "api_retries": response.api_retries,
        "finish_reason": response.finish_reason,
    }


def stored_answer(
    response: ProviderResponse,
    key: AnswerKey,
    config_id: str,
    model: str,
    request: PromptRequest,
    system_prompt: str | None,
    code: str | None,
) -> dict[str, Any]:
    """The entry of ``response`` to ``request`` as a store and the cache file it: its ``key``,
    what it answers (the suite and eval that asked, where the key holds them; the system prompt
    sent with it, a conversation's earlier messages for whoever reads the file, the prompt) and
    the digest of the ``code`` that answered, if any."""
    history = [{"role": role, "content": text} for role, text in request.history]
    asker = {"suite": request.suite, "eval": request.eval_id} if key.names_asker else {}
    return answer_entry(
        response,
        key=key.sent,
        configuration=config_id,
        **asker,
        model=model,
        repeat=request.repeat,
        system_prompt=system_prompt,
        **({"history": history} if history else {}),
        prompt=request.prompt,
        **({"code": code} if code is not None else {}),
    )


def answer_to_store(
    provider: Provider,
    request: PromptRequest,
    key: AnswerKey,
    config_id: str,
    model: str,
    source: Provider,
    code: str | None,
) -> tuple[ProviderResponse, dict[str, Any]]:
    """``provider``'s answer to ``request`` and the entry it is filed as under ``key``
    (:func:`stored_answer`): ``source`` is the provider whose request is sent (its system prompt is
    stored), ``code`` the digest of the code that answers. An answer that reports no latency gets
    the one measured here, which the entry keeps: a stored answer reports its original call's."""
    started = time.perf_counter()
    response = provider.answer(request)
    if response.latency is None:
        response = replace(response, latency=time.perf_counter() - started)
    system_prompt = system_prompt_sent(source, request)
    return response, stored_answer(response, key, config_id, model, request, system_prompt, code)


def write_answer(path: Path, entry: dict[str, Any], redact: Redactor) -> None:
    """Write ``entry`` to ``path`` with every secret masked (in every text it holds, tool call
    arguments too), atomically (:func:`write_atomic`): a reader, another xdist worker's included,
    sees the old file or the new one, never half of one."""
    write_atomic(path, json.dumps(_masked(entry, redact), indent=2, ensure_ascii=False) + "\n")


def _masked(value: Any, redact: Redactor) -> Any:
    """``value`` (JSON data) with every text, keys included, passed through ``redact``."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(key)): _masked(item, redact) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(item, redact) for item in value]
    return value


def read_answer(path: Path) -> tuple[dict[str, Any], ProviderResponse]:
    """The entry at ``path`` and the answer it holds. FileNotFoundError when there is none;
    :class:`AnswerFileError` when it is no readable stored answer."""
    try:
        entry: Any = json.loads(read_bounded(path, MAX_ANSWER_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise
    except (UnreadableFile, OSError, ValueError) as exc:
        raise AnswerFileError(f"is unreadable: {exc}") from None
    problem = _entry_problem(entry)
    if problem:
        raise AnswerFileError(f"is not a stored answer: {problem}")
    try:
        response = ProviderResponse(
            entry["response"],
            entry.get("cost"),
            entry.get("input_tokens"),
            entry.get("output_tokens"),
            latency=entry.get("latency"),
            cached_input_tokens=entry.get("cached_input_tokens"),
            cache_write_tokens=entry.get("cache_write_tokens"),
            tool_calls=None
            if entry.get("tool_calls") is None
            else [ToolCallRecord.model_validate(call) for call in entry["tool_calls"]],
            api_retries=entry.get("api_retries"),
            finish_reason=entry.get("finish_reason"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise AnswerFileError(f"is not a stored answer: {exc}") from None
    return entry, response


def _entry_problem(entry: Any) -> str | None:
    """What makes ``entry`` no stored answer (a value of the wrong type), or None."""
    if not isinstance(entry, dict):
        return f"expected a JSON object, found {type(entry).__name__}"
    if not isinstance(entry.get("response"), str):
        return f"`response` must be text, not {json.dumps(entry.get('response'))[:40]}"
    for key in (
        "cost",
        "latency",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "cache_write_tokens",
    ):
        value = entry.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            return f"`{key}` must be a number or null, not {json.dumps(value)[:40]}"
    for key in ("key", "code", "sent", "finish_reason", "recorded_at"):
        if not isinstance(entry.get(key) or "", str):
            return f"`{key}` must be text or null"
    if not isinstance(entry.get("tool_calls") or [], list):
        return "`tool_calls` must be a list"
    retries = entry.get("api_retries")
    if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
        return f"`api_retries` must be a whole number (0 or more) or null, not {json.dumps(retries)[:40]}"
    return None
