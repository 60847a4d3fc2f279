"""Run one prompt eval against one configuration and produce its :class:`EvalRecord`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .answering import (
    Exchange,
    JudgeSource,
    answer_fields,
    answer_note,
    ask,
    check_answer,
    check_lines,
    check_record,
    judge_maker,
    redact_steps,
    undecided_message,
    with_note,
)
from .checks import AnyOf, CheckNode, ChecksError, named_checks
from .loading.suite import EvalCase, Suite
from .loading.templates import MissingValue, Redactor, Renderer
from .models import Configuration
from .phases import Progress
from .providers import PromptRequest, Provider, ProviderError
from .quick import Prototype, quick_copy
from .results import EvalRecord, Outcome
from .spending import spent_measures
from .text_input import first_line, text_lines

if TYPE_CHECKING:
    from .judge import Judge


@dataclass(frozen=True)
class ItemVerdict:
    """What pytest should do with the item."""

    outcome: Outcome
    message: str | None


def render_value(value: Any, renderer: Renderer) -> Any:
    """Fill templates in every string inside a check value: a str, a list, tuple or mapping (its
    values), a pydantic model or a dataclass, however nested. A value without templates is returned
    as it is, except a model, which is always a copy (with every field marked as set, which check
    types may rely on)."""
    if isinstance(value, str):
        return renderer.render(value)
    if isinstance(value, BaseModel):
        return value.model_copy(update={k: render_value(v, renderer) for k, v in value.__dict__.items()})
    if type(value) in (list, tuple):  # exactly: a named tuple is built otherwise
        items = [render_value(item, renderer) for item in value]
        changed = any(new is not old for new, old in zip(items, value, strict=True))
        return type(value)(items) if changed else value
    if type(value) is dict:
        rendered = {key: render_value(item, renderer) for key, item in value.items()}
        return rendered if any(rendered[key] is not value[key] for key in value) else value
    if is_dataclass(value) and not isinstance(value, type):
        values = {f.name: getattr(value, f.name) for f in fields(value)}
        rendered = {name: render_value(field, renderer) for name, field in values.items()}
        changed = any(rendered[name] is not values[name] for name in values)
        return replace(value, **rendered) if changed else value
    return value


def render_checks(checks: tuple[CheckNode, ...], renderer: Renderer) -> tuple[CheckNode, ...]:
    out: list[CheckNode] = []
    for node in checks:
        if isinstance(node, AnyOf):
            out.append(replace(node, children=render_checks(node.children, renderer)))
        elif node.type.template_fields:
            value = render_value(node.value, renderer)
            out.append(node if value is node.value else replace(node, value=value))
        else:
            out.append(node)
    return tuple(out)


def mcp_unsupported_reason(
    configuration: Configuration | None, config_id: str, mcp: dict[str, Any] | None = None
) -> str | None:
    """Why a configuration cannot give its model the suite's ``mcp_server`` (rendered: ``mcp``),
    or None; its evals skip rather than run without the tools they are about. HTTP configurations
    run the tool loop, the agent presets that take MCP servers are given it
    (:mod:`.providers.cli_mcp`), Python callables get ``context.mcp_server``, replays and
    plugins' providers get the request."""
    if configuration is None or configuration.kind != "cli":
        return None
    from .providers.cli_mcp import unsupported_reason as cli_unsupported_reason  # an MCP suite's only
    from .providers.mcp_tools import McpTarget

    return cli_unsupported_reason(configuration, config_id, McpTarget.from_request(mcp) if mcp else None)


def run_prompt_eval(
    suite: Suite,
    case: EvalCase,
    config_id: str,
    provider: Provider,
    renderer: Renderer,
    workdir: Path,
    nodeid: str,
    configuration: Configuration | None = None,
    judge_source: JudgeSource | None = None,
    repeat: int = 0,
    on_phase: Callable[[str, str], None] | None = None,
    progress: Progress | None = None,
) -> tuple[EvalRecord, ItemVerdict]:
    """Ask the provider, run the checks (for each turn of a conversation, see
    :mod:`.conversation`). Never raises for a problem of the eval itself.

    ``configuration`` (None: the implicit HTTP one) supplies prices for an unreported cost;
    ``judge_source`` (the judge configuration) answers the llm_judge checks;
    ``on_phase(phase, detail)`` is told when the agent phase and the checks phase begin;
    ``progress`` what the eval has spent so far (the answer, the judge's calls), for the record
    the item leaves if its backstop stops it before the end."""
    entered = on_phase or (lambda phase, detail: None)
    # Shares the renderer's set: secrets the provider renders later (args, env) are redacted too.
    redact = Redactor(renderer.used_secrets)
    base = _blank_record().make(
        {
            "name": case.id,
            "named": case.name is not None,
            "nodeid": nodeid,
            "outcome": "skipped",
            "xfail": case.xfail is not None,
            "repeat": repeat,
            "check_names": sorted({check.name for check in named_checks(case.checks) if check.name}),
        }
    )
    reason = provider.unavailable_reason()
    if reason:
        return base.model_copy(update={"message": reason}), ItemVerdict("skipped", reason)
    if case.turns:  # a conversation's machinery: imported by a suite that has one
        from .conversation import run_conversation
        from .providers.sessions import unsupported_reason as no_conversation_reason

        cannot = no_conversation_reason(configuration, config_id)
        if cannot:
            return base.model_copy(update={"message": cannot}), ItemVerdict("skipped", cannot)
    turn_prompts: tuple[str, ...] = ()
    turn_checks: tuple[tuple[CheckNode, ...], ...] = ()
    checks: tuple[CheckNode, ...]
    try:
        with renderer.gathering():  # every missing value of the eval in one message
            if case.turns:
                turn_prompts = tuple(renderer.render(turn.prompt) for turn in case.turns)
                turn_checks = tuple(render_checks(turn.checks, renderer) for turn in case.turns)
                prompt, checks = turn_prompts[0], ()
            else:
                prompt = renderer.render(case.prompt)
                checks = render_checks(case.checks, renderer)
            system_prompt = renderer.render(suite.system_prompt) if suite.system_prompt else None
            model = renderer.render(suite.model)
            mcp = suite.mcp_server.model_dump() if suite.mcp_server else None
            if mcp:
                mcp = {k: renderer.render(v) if isinstance(v, str) else v for k, v in mcp.items()}
    except MissingValue as exc:
        # The eval itself cannot be asked: an error, as in vibecheck, so that it counts against
        # the score instead of leaving it (a configuration's own missing values skip, above).
        message = str(exc)
        return base.model_copy(update={"outcome": "error", "message": message}), ItemVerdict("error", message)
    if mcp:
        if mcp.get("authorization_token"):
            renderer.used_secrets.add(mcp["authorization_token"])  # a literal token is a secret too
        unsupported = mcp_unsupported_reason(configuration, config_id, mcp)
        if unsupported:
            return base.model_copy(update={"message": unsupported}), ItemVerdict("skipped", unsupported)
    request = PromptRequest(
        prompt, model, system_prompt, suite.name, case.id, config_id, workdir, mcp, repeat
    )
    judge_of = judge_maker(judge_source, model, suite.name, case.id, workdir)
    if case.turns:
        exchange = Exchange(provider, request, configuration, judge_of, redact, entered, progress)
        record = run_conversation(base, exchange, turn_prompts, turn_checks)
        return record, ItemVerdict(record.outcome, None if record.outcome == "passed" else record.message)
    entered("agent", config_id)
    try:
        response, latency = ask(provider, request)
    except ProviderError as exc:
        message = redact(exc.message) or ""
        record = base.model_copy(
            update={
                "outcome": "error",
                "message": message,
                "latency": exc.latency,
                "steps": redact_steps(exc.steps, redact),
                **spent_measures(exc, configuration, model),
            }
        )
        return record, ItemVerdict("error", message)
    judge = judge_of(prompt)
    # The record is copied once with everything: each copy of its many fields costs.
    answered = answer_fields(response, latency, configuration, model, redact)
    if progress is not None:
        progress.so_far = functools.partial(_stopped_checking, base, answered, judge)
    entered("checks", "")
    try:
        verdict, results = check_answer(checks, response, answered, judge, prompt, workdir)
    except ChecksError as exc:
        message = redact(str(exc)) or ""
        judge_cost = judge.cost if judge else None
        kept = [check_record(r, redact) for r in exc.results]
        update = {
            **answered,
            "outcome": "error",
            "message": message,
            "judge_cost": judge_cost,
            "checks": kept,
        }
        return base.model_copy(update=update), ItemVerdict("error", message)
    checked: dict[str, Any] = {
        **answered,
        "judge_cost": judge.cost if judge else None,
        "checks": [check_record(r, redact) for r in results],
    }
    outcome: Outcome
    if verdict is None:
        outcome, note = "skipped", undecided_message(results)
    elif verdict:
        outcome, note = "passed", None
    else:  # the message reads the checked record: made twice only for a failure
        outcome, note = "failed", failure_message(quick_copy(base, checked))
    note = with_note(note, answer_note(response))
    record = quick_copy(base, {**checked, "outcome": outcome, "message": note})
    return record, ItemVerdict(outcome, note)


@functools.cache
def _blank_record() -> Prototype[EvalRecord]:
    """Every eval's first record, made without validating it again per item (its values are the
    loaded eval's and the item's)."""
    blank = EvalRecord(
        name="", named=False, nodeid="", outcome="skipped", xfail=False, repeat=0, check_names=[]
    )
    return Prototype(blank)


def _stopped_checking(
    base: EvalRecord, answered: dict[str, Any], judge: Judge | None, message: str
) -> EvalRecord:
    """The record of an eval stopped while its answer was being checked: the answer's measures and
    what its judge's calls cost until then."""
    spent = {"judge_cost": judge.cost if judge else None}
    return base.model_copy(update={**answered, **spent, "outcome": "error", "message": message})


def failure_message(record: EvalRecord, response_chars: int = 600) -> str:
    """The failure report: the first failed check on the first line (pytest's short test summary
    shows only that line), every check with its verdict, then the start of the response."""
    failed = [check for check in record.checks if check.passed is False]
    headline = "checks failed:"
    if failed:  # the check first: pytest cuts that line to the terminal's width
        headline = f"{failed[0].type}: {first_line(failed[0].message or '')}"
        headline += f" (and {len(failed) - 1} more failed checks)" if len(failed) > 1 else ""
    lines = [headline, "checks:", *check_lines(record.checks)]
    text = record.response or ""
    whole = record.response_chars or len(text)
    shown = text if len(text) <= response_chars else text[:response_chars] + f"… [{whole} chars]"
    lines.append("response:")
    lines.extend("  " + line for line in text_lines(shown))
    return "\n".join(lines)


__all__ = [  # and, for the modules that import them from here, what .answering holds
    "ItemVerdict",
    "failure_message",
    "mcp_unsupported_reason",
    "redact_steps",
    "render_checks",
    "run_prompt_eval",
]
