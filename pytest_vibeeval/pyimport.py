"""What names a Python callable (``module:function``) and importing it from a suite's folder (Python
configurations, ``python`` checks)."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

# What names a callable: ``module:function``, the module dotted (Python configurations, ``python`` checks).
TARGET_PATTERN = r"[A-Za-z_][\w.]*:[A-Za-z_]\w*"
_TARGET = re.compile(TARGET_PATTERN)
_MODULE = re.compile(r"[A-Za-z_][\w.]*")
_FUNCTION = re.compile(r"[A-Za-z_]\w*")


def python_target(value: str) -> str:
    """``value`` if it names a callable (``module:function``); else an error saying what is wrong
    with it, the form, and the target meant where it is clear (``app.answer``: ``app:answer``)."""
    if _TARGET.fullmatch(value):
        return value
    module = _file_module(value) if ":" not in value else None
    if module is not None:  # a file named: the likeliest form of the mistake, its function unknown
        raise PydanticCustomError(
            "python_target",
            "{target} is not `package.module:function`: it names a file, not a module and a function; "
            "write the module without .py and the function after a colon, e.g. `{module}:answer` for "
            "answer() in {file}",
            {"target": repr(value), "module": module, "file": value},
        )
    meant = _meant(value)
    raise PydanticCustomError(
        "python_target",
        "{target} is not `package.module:function`{meant}: {problem}; e.g. `my_app.chat:answer` is "
        "answer() in my_app/chat.py",
        {
            "target": repr(value),
            "problem": _target_problem(value),
            "meant": f" (did you mean {meant!r}?)" if meant else "",
        },
    )


def _target_problem(value: str) -> str:
    """What is wrong with ``value``, which is no ``module:function``."""
    if ":" not in value:
        return "it has no colon between the module and the function"
    if value.count(":") > 1:
        return "it has more than one colon"
    module, _, function = value.partition(":")
    if not module:
        return "it names no module before the colon"
    if not function:
        return "it names no function after the colon"
    if not _MODULE.fullmatch(module):
        return f"{module!r} is no module name (letters, digits, _ and dots, not starting with a digit)"
    return f"{function!r} is no function name (letters, digits and _, not starting with a digit)"


def _file_module(value: str) -> str | None:
    """The module a Python file's path names (``app/chat.py``: ``app.chat``), or None when ``value``
    is no such path."""
    if not value.endswith(".py"):
        return None
    module = value.removeprefix("./").removesuffix(".py").replace("/", ".")
    return module if _MODULE.fullmatch(module) else None


def _meant(value: str) -> str | None:
    """The target ``value`` most likely means: its last dot a colon (``app.answer``), a file path
    a module (``app/chat.py:answer``), no call parentheses; None when that is no target either."""
    module, _, function = value.rpartition(":" if ":" in value else ".")
    candidate = f"{_file_module(module) or module}:{function.strip().removesuffix('()')}"
    return candidate if _TARGET.fullmatch(candidate) else None


PythonTarget = Annotated[str, AfterValidator(python_target)]


class ImportProblem(Exception):
    """The target cannot be imported or is not callable; the message says why."""


def local_module_source(folder: Path, module_name: str) -> Path | None:
    """The file in the suite's folder that ``module_name`` names, if there is one."""
    base = folder.joinpath(*module_name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def import_target(target: str, folder: Path, used_by: str) -> Callable[..., Any]:
    """The callable ``module:function`` names, the suite's ``folder`` importable; ``used_by`` (e.g.
    "configuration 'app'") ends the messages of :class:`ImportProblem`."""
    module_name, _, attr = target.partition(":")
    where = str(folder)
    if where not in sys.path:
        sys.path.insert(0, where)
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:
        as_file = _file_module(module_name)
        hint = f"; a module is written without .py: `{as_file}:{attr}`" if as_file else ""
        raise ImportProblem(
            f"cannot import {module_name!r} for {used_by} (looked in {where} and sys.path): "
            f"{type(exc).__name__}: {exc}{hint}"
        ) from None
    local = local_module_source(folder, module_name)
    loaded = getattr(module, "__file__", None)
    if local is not None and loaded is not None and Path(loaded).resolve() != local.resolve():
        # Python imports a module name once per process: without this check the suite would
        # silently be answered by another folder's module of the same name.
        raise ImportProblem(
            f"cannot use {module_name!r} from {local} for {used_by}: a different module of that "
            f"name is already imported from {loaded} (by another suite?); give the modules distinct names"
        )
    function: Callable[..., Any] | None = getattr(module, attr, None)
    if not callable(function):
        raise ImportProblem(f"{module_name!r} has no callable {attr!r} ({used_by})")
    return function
