"""Which configurations answer a suite's prompts, and which of them are selected for this run.

A suite's own ``configurations:`` section wins; otherwise the nearest ``cli-config.json`` found
walking up from the suite's folder to the rootdir. Without either, the suite has the implicit
``openrouter`` configuration.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ..errors import InputError, Problem, did_you_mean
from ..extensions import Extensions, builtin_extensions
from ..filenames import CLI_CONFIG_NAME as CLI_CONFIG_NAME
from ..filenames import EVAL_CONFIG_NAME as EVAL_CONFIG_NAME
from ..filenames import REGISTRY_NAME as REGISTRY_NAME
from ..models import CliConfigFile, Configuration
from .suite import Suite, configuration_lines, pydantic_problems
from .yamlsource import load_document

IMPLICIT_ID = "openrouter"
ALL = "ALL"


@dataclass(frozen=True)
class ConfigurationSet:
    """The configurations available to one suite."""

    configurations: Mapping[str, Configuration]
    defaults: tuple[str, ...] | None
    source: Path | None  # the file they were read from
    implicit: bool = False  # no configuration anywhere: the built-in OpenRouter default
    lines: Mapping[str, int] = field(default_factory=dict)  # id → its line in ``source``

    def where(self, config_id: str) -> tuple[Path | None, int | None]:
        """The file and line that define ``config_id`` (for a message about it)."""
        return self.source, self.lines.get(config_id)

    def ids(self) -> list[str]:
        return [IMPLICIT_ID] if self.implicit else list(self.configurations)


class ConfigFileCache:
    """Parses each cli-config.json once per session."""

    def __init__(self, extensions: Extensions | None = None) -> None:
        self.extensions = extensions or builtin_extensions()  # the names the files are checked against
        self._files: dict[Path, CliConfigFile] = {}
        self._lines: dict[Path, dict[str, int]] = {}  # each file's configurations' lines
        self._nearest: dict[tuple[Path, Path], Path | None] = {}

    def load(self, path: Path) -> CliConfigFile:
        if path not in self._files:
            doc = load_document(path)
            try:
                parsed = CliConfigFile.model_validate(doc.data, context=self.extensions.validation_context())
            except ValidationError as exc:
                raise InputError(str(path), pydantic_problems(exc, doc)) from None
            _check_defaults(
                path,
                parsed.defaultConfigurations,
                parsed.configurations,
                doc.line_of(("defaultConfigurations",)),
            )
            self._files[path] = parsed
            self._lines[path] = configuration_lines(doc, parsed.configurations)
        return self._files[path]

    def lines(self, path: Path) -> dict[str, int]:
        """The line of each configuration of the file ``path``, once it is :meth:`load`-ed."""
        return self._lines.get(path, {})

    def nearest(self, folder: Path, rootdir: Path) -> Path | None:
        key = (folder, rootdir)
        if key not in self._nearest:
            found = None
            for candidate in (folder, *folder.parents):
                # Anything of that name counts (a folder, a broken link): reading it then says
                # what is wrong, where skipping it would run the suite on another configuration.
                if os.path.lexists(candidate / CLI_CONFIG_NAME):
                    found = candidate / CLI_CONFIG_NAME
                    break
                if candidate == rootdir or rootdir not in candidate.parents:
                    break
            self._nearest[key] = found
        return self._nearest[key]


def _check_defaults(
    path: Path, defaults: Sequence[str] | None, configs: Mapping[str, Configuration], line: int | None
) -> None:
    for config_id in defaults or ():
        if config_id not in configs:
            raise InputError.single(
                path,
                f"default configuration {config_id!r} is not defined{did_you_mean(config_id, configs)}",
                line=line,
                hint=f"defined configurations: {', '.join(configs)}",
            )


def configurations_for(suite: Suite, rootdir: Path, cache: ConfigFileCache) -> ConfigurationSet:
    if suite.configurations:
        _check_defaults(suite.path, suite.default_configurations, suite.configurations, None)
        return ConfigurationSet(
            suite.configurations, suite.default_configurations, suite.path, lines=suite.configuration_lines
        )
    found = cache.nearest(suite.path.parent, rootdir)
    if found is None:
        return ConfigurationSet({}, None, None, implicit=True)
    parsed = cache.load(found)
    if suite.default_configurations:  # the suite's own choice among the file's configurations
        _check_defaults(suite.path, suite.default_configurations, parsed.configurations, None)
        return ConfigurationSet(
            parsed.configurations, suite.default_configurations, found, lines=cache.lines(found)
        )
    defaults = tuple(parsed.defaultConfigurations) if parsed.defaultConfigurations else None
    return ConfigurationSet(parsed.configurations, defaults, found, lines=cache.lines(found))


def select(
    available: Sequence[str], defaults: Sequence[str] | None, requested: Sequence[str] | None
) -> list[str]:
    """The ids to run: the requested ones this suite has (``ALL`` = every one), else the defaults."""
    if requested is None:
        return list(defaults) if defaults else list(available)
    if ALL in requested:
        return list(available)
    return [item for item in requested if item in available]


def unknown_selection(option: str, requested: Sequence[str] | None, known: set[str]) -> Problem | None:
    """A problem when ``requested`` names ids that no collected suite has."""
    if not requested or ALL in requested:
        return None
    missing = [item for item in requested if item not in known]
    if not missing:
        return None
    names = ", ".join(repr(m) + did_you_mean(m, known) for m in missing)
    return Problem(f"{option}: unknown {names}; known: {', '.join(sorted(known)) or 'none'}")
