"""What the input models share: names and their patterns, timeouts, scoring fields, the
registry's commands, score bounds, and the validation context's keys."""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..errors import closest

PROTECTED_KEYWORDS = (
    "max_latency", "min_latency", "avg_latency", "total_latency",
    "max_cost", "min_cost", "avg_cost", "total_cost",
    "success_pct",
)  # fmt: skip
_PROTECTED = frozenset(PROTECTED_KEYWORDS)  # checked for every eval name


EVAL_NAME_PATTERN = r"^[A-Za-z0-9_-]+$"


CONFIG_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:+-]*$"


DEFAULT_TIMEOUT_MS = 300_000


MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000  # one week; a longer timeout counts as one week


NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]


EvalName = Annotated[str, StringConstraints(pattern=EVAL_NAME_PATTERN)]


ConfigId = Annotated[str, StringConstraints(pattern=CONFIG_ID_PATTERN)]


DottedPath = Annotated[str, StringConstraints(pattern=r"^[^.\s]+(\.[^.\s]+)*$")]


# Marks that change how pytest runs an item; a tag must not silently become one of them
# (`flaky`: pytest-rerunfailures reruns an item so marked).
RESERVED_MARKS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "timeout",
     "xdist_group", "vibeeval", "tryfirst", "trylast", "flaky"}
)  # fmt: skip


def _tag(value: str) -> str:
    if value in RESERVED_MARKS:
        raise PydanticCustomError(
            "reserved_tag",
            "tag {tag} is a pytest marker that changes how tests run; choose another name",
            {"tag": repr(value)},
        )
    return value


Tag = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]*$"),
    AfterValidator(_tag),
]


class StrictModel(BaseModel):
    """Unknown keys are errors, with a "did you mean" when a known key is close."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            documented, spelled = _known_keys(cls)
            for key in data:
                if key not in spelled:
                    match = closest(str(key), spelled)
                    raise PydanticCustomError(
                        "unknown_key",
                        "unknown key {key}{hint}; allowed keys: {allowed}",
                        {
                            "key": repr(key),
                            "hint": f" (did you mean {spelled[match]!r}?)" if match else "",
                            "allowed": ", ".join(sorted(documented.values())),
                            "bad_key": key,
                        },
                    )
        return data


@functools.cache
def _known_keys(model: type[BaseModel]) -> tuple[dict[str, str], dict[str, str]]:
    """A model's keys: each field's documented spelling, and every accepted spelling → the
    documented one (either is accepted; a suggestion, like the list, gives the documented one).
    Made once per model, not for each mapping validated."""
    documented = {name: field.alias or name for name, field in model.model_fields.items()}
    return documented, {**documented, **{alias: alias for alias in documented.values()}}


class McpServer(StrictModel):
    """vibecheck's ``mcp_server``: its tools are offered to the model (see the docs:
    docs/configurations.md#mcp-tools-mcp_server)."""

    url: NonEmptyStr = Field(description="the MCP server's URL (Streamable HTTP, or SSE for older servers)")
    name: NonEmptyStr = Field(
        description="the MCP server's name; tool calls are recorded as mcp__<name>__<tool>"
    )
    authorization_token: str | None = Field(
        default=None,
        description="sent as `Authorization: Bearer <token>`, if the server needs one (e.g. "
        "{{secret('name')}}); redacted from every output",
    )
    transport: Literal["auto", "streamable-http", "sse"] = Field(
        default="auto",
        description="how to connect: auto (Streamable HTTP, then SSE if the server does not speak it)",
    )
    max_steps: Annotated[int, Field(ge=1, le=100)] = Field(
        default=10, description="the model's rounds of tool calls before it must give its final answer"
    )


def _step_name(value: str) -> str:
    if not re.fullmatch(CONFIG_ID_PATTERN, value):
        raise PydanticCustomError(
            "step_name",
            "step name {name} must start with a letter or digit and hold only letters, digits and _.:+-",
            {"name": repr(value)},
        )
    return value


StepName = Annotated[str, AfterValidator(_step_name)]


def _cap_timeout(value: int) -> int:
    """A timeout beyond :data:`MAX_TIMEOUT_MS` means "no practical limit": capped, so that no wait
    (``poll``, ``setitimer``, the item's timeout backstop) receives a number it cannot hold."""
    return min(value, MAX_TIMEOUT_MS)


def _not_text(value: object) -> object:
    """A timeout in quotes ("30000") is refused in every file, as a timeout that is not a number is;
    a whole number written as a float (60000.0) stays a timeout."""
    if isinstance(value, str):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


TimeoutMs = Annotated[int, Field(gt=0), BeforeValidator(_not_text), AfterValidator(_cap_timeout)]


TIMEOUT_DESCRIPTION = f"in milliseconds; more than one week ({MAX_TIMEOUT_MS}) counts as one week"


Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class Vybes(StrictModel):
    """The document's project's scoring block, kept under its name for compatibility."""

    multiplier: Positive = Field(
        default=1.0,
        description="scales the eval's `<name>_vybes` score (100 × multiplier × subtask fraction × …)",
    )
    timeLimitMinutes: Positive | None = Field(
        default=None,
        description="agent minutes before the vybes score is penalised: × clamp(limit / agent minutes, "
        "0.2, 1); null: no time penalty",
    )
    description: str | None = Field(default=None, description="what the task is, as shown on a scoreboard")
    category: str | None = Field(default=None, description="the task's group on a scoreboard, e.g. utilities")


class RubricSpec(StrictModel):
    """How the automatic rubric reads one eval (see the docs: docs/scores.md#automatic-rubric)."""

    complexity: Literal["simple", "medium", "complex"] = Field(
        default="medium",
        description="sets max_expected for efficiency: simple 30 s / 5 tools, medium 120 s / 15, "
        "complex 300 s / 30",
    )
    efficiency: Literal["time", "tools"] = Field(
        default="time", description="efficiency from the agent's time or from its tool-call count"
    )
    task: Literal["coding", "general"] | None = Field(
        default=None,
        description="coding tasks earn completeness for a code block; default: coding for coding-agent "
        "evals, general otherwise",
    )


class ScoringFields(StrictModel):
    """What any eval may set about how it is scored, in eval-config.json and YAML suites alike."""

    rubric: RubricSpec = Field(
        default_factory=RubricSpec,
        description="how the automatic rubric reads this eval: complexity, efficiency basis, task",
    )
    min_pass_rate: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = Field(
        default=None,
        description="with --vibe-repeat: the eval counts as passed when this share of its runs pass "
        "(0–1); reported with its rate",
    )


class CodingFields(ScoringFields):
    """What a coding-agent eval adds, in eval-config.json and in YAML suites alike."""

    build_steps: list[StepName] = Field(
        default_factory=list,
        description="registry steps run in the workspace after the agent, in order; a failing one fails "
        "the eval, and the grade steps still run (as in the unified runner)",
    )
    grade_steps: list[StepName] = Field(
        default_factory=list,
        description="registry steps run after the build in a copy of the workspace with the grading "
        "folder over it; all run, and each must exit 0",
    )
    vybes: Vybes | None = Field(
        default=None,
        description="multiplier and time limit of the eval's `<name>_vybes` score (preset `vybes`); "
        "null: the unified runner's defaults for the eval's name, else multiplier 3 and 6 minutes",
    )
    requires: list[NonEmptyStr] = Field(
        default_factory=list, description="commands that must be on PATH, else the eval is skipped"
    )


class CommandDefinition(StrictModel):
    """One ``command-registry.json`` entry; ``timeout`` in milliseconds."""

    command: NonEmptyStr = Field(
        description="the executable, run without a shell: a name on PATH, or a path (a relative one "
        "from the step's working folder)"
    )
    args: list[str] = Field(default_factory=list, description="its arguments, passed as written")
    timeout: TimeoutMs = Field(default=DEFAULT_TIMEOUT_MS, description=TIMEOUT_DESCRIPTION)
    network: bool | None = Field(
        default=None,
        description="in the bwrap sandbox, whether the step may use the network (and write the package "
        "caches in the home folder); without it the step has only a loopback of its own. Unset: only "
        "a step that installs packages (`npm ci`, `npm install`, `pip install`, …) has it",
    )
    env_passthrough: list[NonEmptyStr] = Field(
        default_factory=list,
        description="in the bwrap sandbox, variables of the environment the step is given beside its "
        "base set (PATH, HOME, LANG, LC_*, TMPDIR, the proxy and CA variables, …): names or globs",
    )

    @property
    def timeout_s(self) -> float:
        return self.timeout / 1000


class Metadata(StrictModel):
    name: NonEmptyStr = Field(
        description="the suite's name, shown in the Run Summary and as `suite` in the results"
    )
    model: NonEmptyStr = Field(
        description="the model id of prompt evals (`${MODEL}` in CLI args, the HTTP model) unless a "
        "configuration sets `model`; also the default llm_judge model"
    )
    system_prompt: str | None = Field(
        default=None,
        description="`${SYSTEM_PROMPT}` in CLI args, the system message of HTTP requests, a Python "
        "callable's context.system_prompt",
    )
    threads: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="accepted for vibecheck compatibility and ignored; run in parallel with -n"
    )
    mcp_server: McpServer | None = Field(
        default=None,
        description="vibecheck's MCP server: its tools are offered to the model of HTTP configurations "
        "and of agent presets that take MCP servers; Python callables get it as context.mcp_server",
    )
    tags: list[Tag] = Field(default_factory=list, description="pytest markers for every eval")


Bound = Annotated[float, Field(strict=True, allow_inf_nan=False)]


class ScoreSpec(StrictModel):
    """``score:``: the formula and an optional gate; a run whose score is outside [min, max] (or
    null while a bound is set) fails the session."""

    formula: NonEmptyStr = Field(
        default="success_pct",
        description="an arithmetic expression over the run's variables, or a preset: success_pct, "
        "price_performance, vybes, rubric",
    )
    min: Bound | None = Field(default=None, description="the lowest passing score (inclusive)")
    max: Bound | None = Field(default=None, description="the highest passing score (inclusive)")

    @model_validator(mode="after")
    def _bounds_in_order(self) -> ScoreSpec:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise PydanticCustomError(
                "score_bounds",
                "min ({min}) is greater than max ({max}); no score could pass the gate",
                {"min": f"{self.min:g}", "max": f"{self.max:g}"},
            )
        return self


PARSERS_CONTEXT = "parsers"  # the validation context's key for the session's output parser names


RUN_VARIABLES_CONTEXT = "run_variables"  # … and for its run-wide formula variables


def protected_name_problem(name: str) -> str | None:
    if name in _PROTECTED:
        return (
            f"eval name {name!r} is a protected keyword (run-wide metric); "
            f"protected: {', '.join(PROTECTED_KEYWORDS)}"
        )
    return None
