"""Run one prompt eval against one configuration and produce its :class:`EvalRecord`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .checks import AnyOf, CheckError, CheckNode, CheckResult, Response, named_checks, run_checks
from .judge import Judge, JudgeError
from .loading.suite import EvalCase, Suite
from .loading.templates import MissingValue, Redactor, Renderer
from .models import Configuration
from .pricing import CostSource, cost_of, price_for
from .providers import PromptRequest, Provider, ProviderError, ProviderResponse
from .providers.cli_mcp import unsupported_reason as cli_unsupported_reason
from .providers.mcp_tools import McpTarget
from .results import CheckRecord, EvalRecord, Outcome, StepRecord

# A longer answer is recorded as its head and tail: the record travels to the controller and into
# the results file and reports, and the rubric reads it, none of which should hold 200 MB.
RESPONSE_EXCERPT_CHARS = 64 * 1024


def response_excerpt(text: str, log: str | None = None) -> tuple[str, int | None]:
    """``text`` itself, or when longer than :data:`RESPONSE_EXCERPT_CHARS` its head and tail joined
    by a marker saying how much is left out and where the whole is (``log``); with the whole
    length in characters (None when nothing is left out)."""
    if len(text) <= RESPONSE_EXCERPT_CHARS:
        return text, None
    half = RESPONSE_EXCERPT_CHARS // 2
    where = f": the whole answer is in {log}" if log else ""
    marker = f"\n[… {len(text) - 2 * half:,} characters not shown{where} …]\n"
    return text[:half] + marker + text[-half:], len(text)


@dataclass(frozen=True)
class ItemVerdict:
    """What pytest should do with the item."""

    outcome: Outcome
    message: str | None


def render_value(value: Any, renderer: Renderer) -> Any:
    """Fill templates in every string inside a check value (str, pydantic model, or dataclass)."""
    if isinstance(value, str):
        return renderer.render(value)
    if isinstance(value, BaseModel):
        return value.model_copy(update={k: render_value(v, renderer) for k, v in value.__dict__.items()})
    if is_dataclass(value) and not isinstance(value, type):
        return replace(
            value, **{f.name: render_value(getattr(value, f.name), renderer) for f in fields(value)}
        )
    return value


def render_checks(checks: tuple[CheckNode, ...], renderer: Renderer) -> tuple[CheckNode, ...]:
    out: list[CheckNode] = []
    for node in checks:
        if isinstance(node, AnyOf):
            out.append(replace(node, children=render_checks(node.children, renderer)))
        elif node.type.template_fields:
            out.append(replace(node, value=render_value(node.value, renderer)))
        else:
            out.append(node)
    return tuple(out)


def redact_steps(steps: list[StepRecord], redact: Redactor) -> list[StepRecord]:
    """The steps with secret values removed from their command lines."""
    return [step.model_copy(update={"argv": [redact(a) or "" for a in step.argv]}) for step in steps]


def _check_record(result: CheckResult, redact: Redactor) -> CheckRecord:
    judges = [
        judge.model_copy(
            update={
                "prompt": response_excerpt(redact(judge.prompt) or "")[0],
                "reasoning": redact(judge.reasoning) or "",
            }
        )
        for judge in result.judges
    ]
    return CheckRecord(
        type=result.type,
        passed=result.passed,
        message=redact(result.message) or "",
        score=result.score,
        name=result.name,
        judges=judges,
        children=[_check_record(child, redact) for child in result.children],
    )


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
    judge_provider: tuple[str, Provider] | None = None,
    repeat: int = 0,
    on_phase: Callable[[str, str], None] | None = None,
) -> tuple[EvalRecord, ItemVerdict]:
    """Ask the provider, run the checks. Never raises for a problem of the eval itself.

    ``configuration`` (None: the implicit HTTP one) supplies prices for an unreported cost;
    ``judge_provider`` (its configuration id and provider) answers the llm_judge checks;
    ``on_phase(phase, detail)`` is told when the agent phase and the checks phase begin."""
    entered = on_phase or (lambda phase, detail: None)
    # Shares the renderer's set: secrets the provider renders later (args, env) are redacted too.
    redact = Redactor(renderer.used_secrets)
    base = EvalRecord(
        name=case.id,
        named=case.name is not None,
        nodeid=nodeid,
        outcome="skipped",
        xfail=case.xfail is not None,
        repeat=repeat,
        check_names=sorted({check.name for check in named_checks(case.checks) if check.name}),
    )
    reason = provider.unavailable_reason()
    if reason:
        return base.model_copy(update={"message": reason}), ItemVerdict("skipped", reason)
    try:
        with renderer.gathering():  # every missing value of the eval in one message
            prompt = renderer.render(case.prompt)
            system_prompt = renderer.render(suite.system_prompt) if suite.system_prompt else None
            model = renderer.render(suite.model)
            checks = render_checks(case.checks, renderer)
            mcp = suite.mcp_server.model_dump() if suite.mcp_server else None
            if mcp:
                mcp = {k: renderer.render(v) if isinstance(v, str) else v for k, v in mcp.items()}
    except MissingValue as exc:
        return base.model_copy(update={"message": str(exc)}), ItemVerdict("skipped", str(exc))
    if mcp:
        if mcp.get("authorization_token"):
            renderer.used_secrets.add(mcp["authorization_token"])  # a literal token is a secret too
        unsupported = mcp_unsupported_reason(configuration, config_id, mcp)
        if unsupported:
            return base.model_copy(update={"message": unsupported}), ItemVerdict("skipped", unsupported)
    request = PromptRequest(
        prompt, model, system_prompt, suite.name, case.id, config_id, workdir, mcp, repeat
    )
    entered("agent", config_id)
    started = time.perf_counter()
    try:
        response = provider.answer(request)
    except ProviderError as exc:
        latency = time.perf_counter() - started
        message = redact(exc.message) or ""
        record = base.model_copy(
            update={
                "outcome": "error",
                "message": message,
                "latency": latency,
                "steps": redact_steps(exc.steps, redact),
            }
        )
        return record, ItemVerdict("error", message)
    measured = time.perf_counter() - started
    # The agent's own figure (output.latency_ms, or a callable's `latency`) wins over wall time,
    # which also counts process start-up; the steps keep the measured duration either way.
    latency = measured if response.latency is None else response.latency
    judge = None
    if judge_provider is not None:
        judge_id, provider_of_judge = judge_provider
        judge = Judge(provider_of_judge, judge_id, model, prompt, suite.name, case.id, workdir)
    cost, cost_source = estimated_cost(response, configuration, model)
    agent_log = next((step.log for step in response.steps if step.phase == "agent" and step.log), None)
    # Redacted before it is cut, so that no cut can leave part of a secret showing.
    kept, whole_chars = response_excerpt(redact(response.text) or "", agent_log)
    answered = base.model_copy(
        update={
            "latency": latency,
            "cost": cost,
            "cost_source": cost_source,
            "input_tokens": response.input_tokens,
            "output_tokens": response.output_tokens,
            "response": kept,
            "response_chars": whole_chars,
            "cached": response.cached,
            "steps": redact_steps(response.steps, redact),
            "tool_calls": [
                call.model_copy(update={"error": redact(call.error)}) for call in response.tool_calls or ()
            ],
        }
    )
    entered("checks", "")
    try:
        seen = Response(
            response.text,
            response.output_tokens,
            judge.decide if judge else None,
            tool_calls=tuple(response.tool_calls or ()),
            tool_calls_reported=response.tool_calls is not None,
            cost=cost,
            latency=latency,
            input_tokens=response.input_tokens,
            prompt=prompt,
            workdir=workdir,
        )
        verdict, results = run_checks(checks, seen)
    except (JudgeError, CheckError) as exc:
        message = redact(str(exc)) or ""
        judge_cost = judge.cost if judge else None
        update = {"outcome": "error", "message": message, "judge_cost": judge_cost}
        return answered.model_copy(update=update), ItemVerdict("error", message)
    record = answered.model_copy(
        update={
            "judge_cost": judge.cost if judge else None,
            "checks": [_check_record(r, redact) for r in results],
        }
    )
    if verdict is None:
        reasons = sorted({r for result in results for r in result.undecided_reasons()})
        message = "could not be decided: " + "; ".join(reasons)
        return record.model_copy(update={"outcome": "skipped", "message": message}), ItemVerdict(
            "skipped", message
        )
    if verdict:
        return record.model_copy(update={"outcome": "passed"}), ItemVerdict("passed", None)
    message = failure_message(record)
    return record.model_copy(update={"outcome": "failed", "message": message}), ItemVerdict("failed", message)


def estimated_cost(
    response: ProviderResponse, configuration: Configuration | None, suite_model: str
) -> tuple[float | None, CostSource | None]:
    """The reported cost, else one from prices: the configuration's own ``pricing``, or for HTTP
    configurations (whose model is known to be the one that answered) the shipped table."""
    if response.cost is not None:
        return response.cost, "reported"
    http = configuration is None or configuration.kind == "http"
    model = (configuration.model if configuration else None) or suite_model
    prices, source = price_for(configuration.pricing if configuration else None, model if http else None)
    if prices is None:
        return None, None
    cost = cost_of(response.input_tokens, response.output_tokens, prices)
    return (cost, source) if cost is not None else (None, None)


def failure_message(record: EvalRecord, response_chars: int = 600) -> str:
    """The failure report: the first failed check on the first line (pytest's short test summary
    shows only that line), every check with its verdict, then the start of the response."""
    failed = [check for check in record.checks if check.passed is False]
    headline = "checks failed:"
    if failed:  # the check first: pytest cuts that line to the terminal's width
        headline = f"{failed[0].type}: {((failed[0].message or '').splitlines() or [''])[0]}"
        headline += f" (and {len(failed) - 1} more failed checks)" if len(failed) > 1 else ""
    lines = [headline, "checks:"]

    def walk(checks: list[CheckRecord], depth: int) -> None:
        for check in checks:
            mark = {True: "PASS", False: "FAIL", None: "SKIP"}[check.passed]
            lines.append(f"{'  ' * depth}  {mark} {check.type}: {check.message}")
            walk(check.children, depth + 1)

    walk(record.checks, 0)
    text = record.response or ""
    whole = record.response_chars or len(text)
    shown = text if len(text) <= response_chars else text[:response_chars] + f"… [{whole} chars]"
    lines.append("response:")
    lines.extend("  " + line for line in (shown.splitlines() or [""]))
    return "\n".join(lines)
