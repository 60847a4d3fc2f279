"""Stores recorded before each answer was filed once under the key of what is sent
(:mod:`.answer_keys`): read, never written. Such a store filed each answer under the hash of its
request (configuration, model, the suite's system prompt, prompt, a conversation's earlier
messages, the repeat), and in its later version again under that hash extended with the hash of
what was sent (its entry's ``sent``), which took in where it was sent and a Python callable's code,
so it cannot be compared with what the configuration sends now. Both versions are read by the
first hash, which the answer recorded last for a request holds, whichever eval asked it: where a
store holds several answers to a request (two evals of a Python callable, or other code or
settings), :class:`EarlierAnswers` counts them, and none of them can be told to be this one's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .answer_files import AnswerFileError, configuration_folder, read_answer
from .answer_keys import answer_digest
from .providers.base import PromptRequest

NAME = re.compile(r"[0-9a-f]{40}\.json")  # the file name of an answer of the earlier format


def earlier_request_digest(config_id: str, model: str, request: PromptRequest) -> str:
    """The hash a store of the earlier format files the answer to ``request`` under."""
    parts: list[object] = [1, config_id, model, request.system_prompt, request.prompt]
    if request.repeat:
        parts.append(request.repeat)
    if request.history:
        parts.append({"history": request.history})
    return answer_digest(parts)


def earlier_answer_path(folder: Path, config_id: str, model: str, request: PromptRequest) -> Path:
    """Where a store of the earlier format holds the answer to ``request``."""
    digest = earlier_request_digest(config_id, model, request)
    return configuration_folder(folder, config_id) / f"{digest[:40]}.json"


@dataclass(frozen=True)
class EarlierAnswers:
    """The answers of the earlier format in one configuration's folder: their file names, and what
    was sent for each (the later version's ``sent``)."""

    names: frozenset[str]
    sent: frozenset[str]

    @classmethod
    def read(cls, folder: Path) -> EarlierAnswers:
        names = frozenset(path.name for path in folder.glob("*.json") if NAME.fullmatch(path.name))
        sent = set()
        for name in names:
            try:
                value = read_answer(folder / name)[0].get("sent")
            except (OSError, AnswerFileError):
                continue  # replaced meanwhile, or unreadable: read as an answer, it says so
            if isinstance(value, str):
                sent.add(value)
        return cls(names, frozenset(sent))

    def count(self, config_id: str, model: str, request: PromptRequest) -> int:
        """How many answers to ``request`` were sent otherwise from each other: each was filed
        again under the request's hash extended with the hash of what was sent for it."""
        digest = earlier_request_digest(config_id, model, request)
        return sum(f"{answer_digest([digest, {'sent': sent}])[:40]}.json" in self.names for sent in self.sent)
