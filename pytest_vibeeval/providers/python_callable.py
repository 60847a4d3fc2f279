"""Answer prompts by calling a Python function in-process: how a team evals its own LLM application.

The function is named ``module:function``; the suite's folder is importable. It is called as
``function(prompt, context)`` (or ``function(prompt)`` if it takes one argument; in a conversation
``context.messages`` holds the earlier turns and this prompt as chat messages) and returns the
answer text or a dict with ``response`` and optionally ``cost``, ``input_tokens``, ``output_tokens``,
``latency`` (seconds; used instead of the measured wall time) and ``tool_calls`` (what the tool
checks read: names, or ``{tool, args, success, error, duration}``; without it they are unknown).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..check_api import users_frames
from ..errors import did_you_mean
from ..models import Configuration
from ..pyimport import ImportProblem, import_target, local_module_source
from ..results import ToolCallRecord
from .base import (
    PromptRequest,
    ProviderError,
    ProviderResponse,
    as_measure,
    missing_env_reason,
    without_token,
)

RESULT_KEYS = ("response", "cost", "input_tokens", "output_tokens", "latency", "tool_calls")
MEASURES = ("cost", "input_tokens", "output_tokens", "latency")
WHOLE_NUMBERS = ("input_tokens", "output_tokens")


class PythonProvider:
    def __init__(self, config_id: str, config: Configuration, suite_dir: Path) -> None:
        assert config.python
        self.config_id = config_id
        self.target = config.python
        self.config = config
        self.suite_dir = suite_dir
        self._function: Callable[..., Any] | None = None
        self._takes_context: bool | None = None
        self._source_digests: list[str] | None = None
        self._code: str | None = None
        self._unimportable: str | None = None  # why the module could not be imported

    def unavailable_reason(self) -> str | None:
        missing = missing_env_reason(self.config_id, self.config.requires_env)
        if missing:
            return missing
        return None

    def function(self) -> Callable[..., Any]:
        if self._function is None:
            try:
                self._function = import_target(
                    self.target, self.suite_dir, f"configuration {self.config_id!r}"
                )
            except ImportProblem as exc:
                raise ProviderError(str(exc)) from None
        return self._function

    def takes_context(self) -> bool:
        """Whether the function is called with the context (it takes two arguments); read once."""
        if self._takes_context is None:
            try:
                self._takes_context = len(inspect.signature(self.function()).parameters) >= 2
            except (TypeError, ValueError):
                self._takes_context = True
        return self._takes_context

    @property
    def uses_workdir(self) -> bool:
        """Only a function given the context can see the item's folder (``context.workdir``)."""
        try:
            return self.takes_context()
        except ProviderError:
            return False  # it cannot be imported: the item errors without calling it

    def cache_material(self, request: PromptRequest) -> dict[str, Any]:
        """What an answer depends on (its key: :mod:`..answer_keys`): the function's name and
        everything it is given but the item's private folder. Its code is not: see
        :meth:`code_digest`."""
        return {
            "kind": "python",
            "target": self.target,
            "model": request.model,
            "system_prompt": request.system_prompt,
            "prompt": request.prompt,
            "suite": request.suite,
            "eval_id": request.eval_id,
            "mcp_server": without_token(request.mcp_server),
            **({"history": request.history} if request.history else {}),
        }

    def code_digest(self) -> str:
        """The sha256 of the module the function is named in and of the file that defines it, which
        a stored answer keeps beside it: an edit there makes the answer stale (an edit in another
        module it imports is not seen). Raises ProviderError when the module cannot be imported
        (tried once per process)."""
        if self._code is None and self._unimportable is None:
            try:
                self._code = hashlib.sha256(" ".join(self.source_digests()).encode()).hexdigest()
            except ProviderError as exc:
                self._unimportable = exc.message
        if self._code is None:
            raise ProviderError(self._unimportable or "")
        return self._code

    def source_digests(self) -> list[str]:
        """The sha256 of the target's module file and of the function's own source file (read once
        per process, as the module is imported once)."""
        if self._source_digests is None:
            function = self.function()
            module = sys.modules.get(self.target.partition(":")[0])
            files = {getattr(module, "__file__", None)}
            with contextlib.suppress(TypeError):  # a builtin or a C function: no source file
                files.add(inspect.getsourcefile(function))
            digests = set()
            for name in files - {None}:
                try:
                    digests.add(hashlib.sha256(Path(str(name)).read_bytes()).hexdigest())
                except OSError:
                    digests.add(f"unreadable:{name}")
            self._source_digests = sorted(digests)
        return self._source_digests

    def answer(self, request: PromptRequest) -> ProviderResponse:
        function = self.function()
        try:
            value = function(request.prompt, request) if self.takes_context() else function(request.prompt)
        except (Exception, SystemExit) as exc:  # the user's code: sys.exit() in it is an error too
            frames = users_frames(exc)
            message = f"{self.target} raised {type(exc).__name__}: {exc}"
            raise ProviderError(f"{message}\n{frames}" if frames else message) from None
        return self._response(value)

    def _response(self, value: Any) -> ProviderResponse:
        if isinstance(value, str):
            return ProviderResponse(value)
        if not isinstance(value, dict):
            raise ProviderError(
                f"{self.target} returned {type(value).__name__}; return a str or a dict "
                f"with keys {', '.join(RESULT_KEYS)}"
            )
        unknown = set(value) - set(RESULT_KEYS)
        if unknown or not isinstance(value.get("response"), str):
            raise ProviderError(
                f"{self.target} returned a dict with keys {sorted(value)}; it needs a str "
                f"'response' and may have only {', '.join(RESULT_KEYS)}"
            )
        numbers: dict[str, Any] = {}
        for key in MEASURES:
            number = value.get(key)
            try:
                numbers[key] = None if number is None else as_measure(number, whole=key in WHOLE_NUMBERS)
            except ValueError as exc:
                raise ProviderError(f"{self.target} returned {key}={number!r}; expected {exc}") from None
        return ProviderResponse(value["response"], **numbers, tool_calls=self._tool_calls(value))

    def _tool_calls(self, value: dict[str, Any]) -> list[ToolCallRecord] | None:
        """``tool_calls``: a list of tool names or of ``{tool, args, success, error, duration}``;
        None when the callable does not report them (no ``tool_calls`` key, or null)."""
        raw = value.get("tool_calls")
        if raw is None:
            return None
        if not isinstance(raw, list):
            raise ProviderError(f"{self.target} returned tool_calls={raw!r}; expected a list")
        calls = []
        for index, call in enumerate(raw):
            try:
                calls.append(ToolCallRecord.model_validate({"tool": call} if isinstance(call, str) else call))
            except ValidationError as exc:
                problem = exc.errors(include_url=False)[0]
                where = ".".join(map(str, problem["loc"]))
                where = f"{where}: " if where else ""
                raise ProviderError(
                    f"{self.target} returned tool_calls[{index}]={call!r}; expected a tool name or "
                    f"{{tool, args, success, error, duration}} ({where}{problem['msg']})"
                ) from None
        return calls


def module_name_clash(seen: dict[str, Path], target: str, folder: Path) -> str | None:
    """Why ``target``'s module cannot be used from ``folder`` in this session, or None: it is
    nowhere to be found, or its name is another suite folder's module's.

    Python imports a module name once per process, so two suite folders that each hold their
    own ``app.py`` would be answered by whichever was imported first. Checked at collection,
    which every xdist worker does alike, so a clash fails the same file with and without ``-n``.
    ``seen`` maps module names to the file each was claimed from; it is updated.
    """
    module_name = target.partition(":")[0]
    local = local_module_source(folder, module_name)
    if local is None:
        return _not_found(target, folder)  # else an installed module: the same everywhere
    local = local.resolve()
    claimed = seen.setdefault(module_name, local)
    if claimed == local:
        return None
    return (
        f"python module {module_name!r} of {target!r} is {local}, but another suite of this "
        f"session uses a module of the same name from {claimed}; Python imports a module name "
        "once per process: give the modules distinct names"
    )


def _not_found(target: str, folder: Path) -> str | None:
    """Why ``target``'s top-level module can be found neither in ``folder`` nor on the import path,
    or None. Only looked up, never imported: collection runs no user code (a dotted name's package
    is imported when an item first runs, and its own errors are that item's)."""
    top = target.partition(":")[0].split(".")[0]
    if local_module_source(folder, top) is not None:
        return None
    try:
        if importlib.util.find_spec(top) is not None:
            return None
    except (ImportError, ValueError):
        return None  # a module object that lies about itself: leave it to the import
    stems = {p.stem for p in folder.glob("*.py")} | {p.parent.name for p in folder.glob("*/__init__.py")}
    return (
        f"python module {top!r} of {target!r} is neither in the suite's folder ({folder}) nor importable"
        f"{did_you_mean(top, sorted(stems))}: check the name, or install the package that provides it"
    )
