"""A coding item's agent: the command that starts it, and the record its run leaves once what the
agent reported on stdout is read in. No pytest here."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..loading.templates import Redactor
from ..models import Configuration
from ..plan import WorkspaceWork
from ..process import resolve_executable
from ..providers import PromptRequest
from ..providers.cli import CliProvider
from ..providers.parsers import Parser
from ..results import EvalRecord
from ..runner import redact_steps
from .layout import hidden_from_agent
from .sandbox import folders_of
from .steps import INSTRUCTION, AgentCommand, agent_report


def agent_command(
    provider: CliProvider,
    work: WorkspaceWork,
    config_id: str,
    configuration: Configuration,
    suite: str,
    project: Path,
    workspace: Path,
) -> AgentCommand:
    """The configuration's CLI as :class:`CliProvider` would run it, with the fixed instruction as
    the prompt. ``project``: the rootdir, which a sandboxed agent must still see."""
    evaluation = work.evaluation
    request = PromptRequest(
        INSTRUCTION, configuration.model or "", None, suite, evaluation.id, config_id, workspace
    )
    stdin = INSTRUCTION if configuration.prompt_via == "stdin" else None
    argv = provider.argv(request)
    env = provider.request_environment(workspace)
    # What the agent needs to see in a sandbox's private /tmp: the project, Python, the config
    # folders, the executable as found on PATH, and the files its command line names.
    named = folders_of([resolve_executable(argv[0], env), *argv])
    runner = work.runner
    visible = (project, Path(sys.prefix), Path(sys.base_prefix), runner.folder, runner.eval_root)
    return AgentCommand(
        config_id,
        argv,
        env,
        configuration.timeout_s,
        stdin,
        visible=tuple(dict.fromkeys((*visible, *named))),
        hidden=hidden_from_agent(
            [e.grading for e in runner.evaluations.values()] or [evaluation.grading],
            [e.workspace for e in runner.evaluations.values()] if runner.layout == "repository" else [],
            (runner.folder, Path(sys.prefix), Path(sys.base_prefix), *named),
            workspace,
        ),
    )


def with_agent_report(
    record: EvalRecord,
    configuration: Configuration,
    redact: Redactor,
    phase_durations: dict[str, float],
    workspace_kept: Path | None,
    parsers: Mapping[str, Parser] | None = None,
) -> EvalRecord:
    """``record`` with what the agent reported (response, cost, tokens, latency, tool calls) read with its
    configuration's output parser, redacted; a parser's note joins the message. When the agent
    reported that its run failed (an API error), the item is an error and that comes first: the
    steps that failed after it are its consequence."""
    report = agent_report(record.steps, configuration.output, configuration.max_output_bytes, parsers)
    reported, note = report.fields, report.note
    parts = (note, record.message) if report.failed else (record.message, note)
    message = redact("\n".join(part for part in parts if part) or None)
    if reported:
        reported["response"] = redact(reported["response"])
        reported["tool_calls"] = [
            c.model_copy(update={"error": redact(c.error)}) for c in reported["tool_calls"]
        ]
    update: dict[str, Any] = {
        **reported,
        **({"outcome": "error"} if report.failed else {}),
        "message": message,
        "steps": redact_steps(record.steps, redact),
        "phase_durations": phase_durations,
        "workspace": str(workspace_kept) if workspace_kept is not None else None,
    }
    return record.model_copy(update=update)
