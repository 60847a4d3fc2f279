"""The public fixtures of eval items. Each can be overridden in a conftest (a different provider,
workspaces made as git worktrees, commands run another way); the item bodies take them by name."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# The item machinery is imported when an eval item asks for a fixture (every session imports this
# module); the coding-agent machinery when a coding-agent item uses it.
if TYPE_CHECKING:
    from .loading.runner_config import ResolvedEval
    from .providers import Provider
    from .workspace.steps import RegistryCommands


@pytest.fixture
def vibe_provider(request: pytest.FixtureRequest) -> Provider:
    """The provider answering the current eval item; override it in a conftest to substitute one."""
    from .execute import eval_item, provider_for

    return provider_for(eval_item(request, "vibe_provider"))


@pytest.fixture
def vibe_workdir(request: pytest.FixtureRequest) -> Path:
    """A fresh directory for the current eval item's files: the agent's working directory and output."""
    from .execute import item_workdir

    return item_workdir(request.node)


@pytest.fixture
def vibe_evaluation(request: pytest.FixtureRequest) -> ResolvedEval:
    """The current coding-agent item's evaluation: template, grading folder, prompt, steps."""
    from .execute import eval_item

    work = eval_item(request, "vibe_evaluation", coding=True).workspace_work
    assert work is not None
    return work.evaluation


@pytest.fixture
def vibe_workspace(request: pytest.FixtureRequest, vibe_workdir: Path) -> Generator[Path]:
    """The coding-agent item's workspace, ready for the agent: by default ``vibe_workdir/workspace``,
    a copy of the evaluation's template (removed afterwards unless --vibe-keep-workspaces).
    Override it in a conftest to prepare workspaces another way, e.g. as git worktrees."""
    from .coding_items import discard, prepare_workspace
    from .execute import eval_item
    from .workspace.layout import temporary_root

    item = eval_item(request, "vibe_workspace", coding=True)
    workspace = prepare_workspace(item, vibe_workdir)
    yield workspace
    discard(temporary_root(workspace), request.config)


@pytest.fixture
def vibe_commands(request: pytest.FixtureRequest, vibe_workdir: Path) -> RegistryCommands:
    """Runs the coding-agent item's agent and registry steps by name and records them
    (:class:`pytest_vibeeval.workspace.steps.RegistryCommands`); override it to run them another way."""
    from .coding_items import registry_commands
    from .execute import eval_item

    return registry_commands(eval_item(request, "vibe_commands", coding=True), vibe_workdir)
