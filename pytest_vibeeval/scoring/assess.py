"""Give a finished eval record its transcript (the agent's tool calls, summarised) and its
automatic rubric. Runs in the item, on whichever process ran it; the run-wide means are computed
on the controller from these records alone."""

from __future__ import annotations

from pathlib import Path

from ..excerpts import excerpt_marker
from ..loading.templates import Redactor
from ..models import Configuration, RubricSpec
from ..quick import quick_copy
from ..results import EvalRecord
from .rubric import evaluate_rubric
from .transcripts import ToolLogError, read_tool_log, summarise
from .vybes import agent_seconds

TRANSCRIPT_ENV = "VIBEEVAL_TRANSCRIPT"  # the agent's variable naming where its JSONL log goes


def transcript_path(configuration: Configuration | None, cwd: Path) -> Path | None:
    """Where the configuration's JSONL tool log is written for an agent working in ``cwd``."""
    if configuration is None or configuration.transcript is None:
        return None
    return cwd / configuration.transcript


def transcript_of(
    record: EvalRecord, configuration: Configuration | None, cwd: Path, seconds: float | None
) -> tuple[EvalRecord, str | None]:
    """The record with its transcript: from the configuration's JSONL log when it names one (its
    calls become the record's ``tool_calls``), else from the calls its output parser read (which
    carry no timestamps: the duration is the agent's run time, ``seconds``). Returns why there is
    none when a log was expected but cannot be read."""
    log = transcript_path(configuration, cwd)
    if configuration is not None and log is not None:
        if not log.is_file() and not log.is_symlink():
            return record, (
                f"no transcript: the agent wrote no tool log at {configuration.transcript} "
                f"(the path in its {TRANSCRIPT_ENV} variable)"
            )
        try:
            calls, duration, problems = read_tool_log(log)
        except ToolLogError as exc:
            return record, str(exc)
        transcript = summarise(
            calls, configuration.transcript or log.name, duration, problems, record.api_retries or 0
        )
        return quick_copy(record, {"transcript": transcript, "tool_calls": calls}), None
    parser = configuration.output.parser if configuration is not None else None
    if parser is None:
        return record, None
    retried = record.api_retries or 0
    transcript = summarise(record.tool_calls, f"output:{parser}", seconds, api_retries=retried)
    return quick_copy(record, {"transcript": transcript}), None


def _redacted(record: EvalRecord, redact: Redactor) -> EvalRecord:
    """The record's tool calls and transcript problems with secret values removed."""
    if not record.tool_calls and record.transcript is None:
        return record  # nothing to mask: no copy (a prompt eval of a plain answer, most evals)
    calls = [call.model_copy(update={"error": redact(call.error)}) for call in record.tool_calls]
    transcript = record.transcript
    if transcript is not None:
        problems = [redact(problem) or "" for problem in transcript.problems]
        transcript = transcript.model_copy(update={"problems": problems})
    return record.model_copy(update={"tool_calls": calls, "transcript": transcript})


def assess(
    record: EvalRecord,
    configuration: Configuration | None,
    cwd: Path,
    spec: RubricSpec,
    coding: bool,
    redact: Redactor | None = None,
) -> EvalRecord:
    """``record`` with its transcript and rubric; a skipped record is returned as it is. What the
    agent's own tool log says (errors, unreadable lines) passes through ``redact``."""
    if record.outcome == "skipped":
        return record
    seconds = agent_seconds(record) if coding else record.latency
    try:
        record, log_problem = transcript_of(record, configuration, cwd, seconds)
    except Exception as exc:  # what an agent leaves must never cost the eval its result
        log_problem = f"no transcript: the tool log could not be read ({type(exc).__name__}: {exc})"
    if redact is not None:
        record = _redacted(record, redact)
        log_problem = redact(log_problem)
    rubric = evaluate_rubric(
        output=record.response,
        passed=record.outcome == "passed",
        transcript=record.transcript,
        seconds=seconds,
        complexity=spec.complexity,
        basis=spec.efficiency,
        task=spec.task or ("coding" if coding else "general"),
        cut=excerpt_marker(record.response, record.response_chars),
    )
    if log_problem is not None:
        missing = {
            name: log_problem if reason.startswith("no transcript") else reason
            for name, reason in rubric.missing.items()
        }
        rubric = rubric.model_copy(update={"missing": missing})
    return quick_copy(record, {"rubric": rubric})
