"""Stores recorded before each answer was filed once under the key of what is sent
(:mod:`.answer_keys`): read, never written. Such a store filed each answer under the hash of its
request (configuration, model, the suite's system prompt, prompt, a conversation's earlier
messages, the repeat), and in its later version again under that hash extended with the hash of
what was sent, which took in where it was sent and a Python callable's code, so it cannot be
compared with what the configuration sends now. Both versions are read by the first hash."""

from __future__ import annotations

from pathlib import Path

from .answer_files import configuration_folder
from .answer_keys import answer_digest
from .providers.base import PromptRequest


def earlier_answer_path(folder: Path, config_id: str, model: str, request: PromptRequest) -> Path:
    """Where a store of the earlier format holds the answer to ``request``."""
    parts: list[object] = [1, config_id, model, request.system_prompt, request.prompt]
    if request.repeat:
        parts.append(request.repeat)
    if request.history:
        parts.append({"history": request.history})
    return configuration_folder(folder, config_id) / f"{answer_digest(parts)[:40]}.json"
