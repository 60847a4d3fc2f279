"""Pydantic models of the input files: YAML suites and the unified runner's cli-config.json.

Checks are kept raw here and parsed by :mod:`pytest_vibeeval.suite` against the check registry,
so plugins can add check types.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .errors import did_you_mean
from .presets import AGENT_PRESETS, OTHER_KINDS, with_preset

PROTECTED_KEYWORDS = (
    "max_latency", "min_latency", "avg_latency", "total_latency",
    "max_cost", "min_cost", "avg_cost", "total_cost",
    "success_pct",
)  # fmt: skip
EVAL_NAME_PATTERN = r"^[A-Za-z0-9_-]+$"
CONFIG_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:+-]*$"
DEFAULT_TIMEOUT_MS = 300_000
MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000  # one week; a longer timeout counts as one week

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
EvalName = Annotated[str, StringConstraints(pattern=EVAL_NAME_PATTERN)]
ConfigId = Annotated[str, StringConstraints(pattern=CONFIG_ID_PATTERN)]
DottedPath = Annotated[str, StringConstraints(pattern=r"^[^.\s]+(\.[^.\s]+)*$")]


# Marks that change how pytest runs an item; a tag must not silently become one of them.
RESERVED_MARKS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "timeout",
     "xdist_group", "vibeeval", "tryfirst", "trylast"}
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
            known = {name for name in cls.model_fields} | {
                f.alias for f in cls.model_fields.values() if f.alias
            }
            for key in data:
                if key not in known:
                    raise PydanticCustomError(
                        "unknown_key",
                        "unknown key {key}{hint}; allowed keys: {allowed}",
                        {
                            "key": repr(key),
                            "hint": did_you_mean(str(key), known),
                            "allowed": ", ".join(sorted(f.alias or n for n, f in cls.model_fields.items())),
                            "bad_key": key,
                        },
                    )
        return data


class McpServer(StrictModel):
    url: NonEmptyStr = Field(description="the MCP server's URL")
    name: NonEmptyStr = Field(description="the MCP server's name")
    authorization_token: str | None = Field(
        default=None,
        description="the server's authorization token, if it needs one (e.g. {{secret('name')}})",
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
    (``poll``, ``setitimer``, the pytest-timeout backstop) receives a number it cannot hold."""
    return min(value, MAX_TIMEOUT_MS)


TimeoutMs = Annotated[int, Field(gt=0), AfterValidator(_cap_timeout)]
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


class RubricSpec(StrictModel):
    """How the automatic rubric reads one eval (see the README's "Automatic rubric")."""

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
        description="registry steps run in the workspace after the agent, in order; a failing one stops "
        "the eval",
    )
    grade_steps: list[StepName] = Field(
        default_factory=list,
        description="registry steps run after the build in a copy of the workspace with the grading "
        "folder over it; all run, and each must exit 0",
    )
    vybes: Vybes | None = Field(
        default=None,
        description="multiplier and time limit of the eval's `<name>_vybes` score (preset `vybes`); "
        "null: multiplier 1, no time penalty",
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
        description="vibecheck's MCP server: given to Python callables as context.mcp_server (templates "
        "filled in); other configurations do not use it",
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


def _known_parser(value: str, info: ValidationInfo) -> str:
    """An output parser the session knows. The loaders pass the names in the validation context
    (the parsers live with the providers, which import this module); without one, the built-in
    parsers are those of the agent presets."""
    known = (info.context or {}).get(PARSERS_CONTEXT)
    if known is None:
        known = {preset.parser for preset in AGENT_PRESETS.values()}
    if value not in known:
        raise PydanticCustomError(
            "unknown_parser",
            "unknown output parser {name}{hint}; known parsers: {known}",
            {"name": repr(value), "hint": did_you_mean(value, known), "known": ", ".join(sorted(known))},
        )
    return value


class OutputSpec(StrictModel):
    """How to read a CLI's stdout: plain text, one JSON document, JSON lines (last matching event),
    or a named parser of an agent CLI's own output format."""

    parser: Annotated[str, AfterValidator(_known_parser)] | None = Field(
        default=None,
        description="read the output with a built-in parser (claude-code, codex, gemini, llxprt, aider): "
        "the response, cost, tokens, latency and tool calls; instead of `format` and the paths",
    )
    format: Literal["text", "json", "jsonl"] = Field(
        default="text",
        description="text: all of stdout is the response; json: one JSON document; jsonl: the last "
        "line that has `response` (and matches `where`)",
    )
    response: DottedPath | None = Field(
        default=None,
        description="dotted path of the answer (e.g. `result`, `content.0.text`); needed for json and jsonl",
    )
    cost: DottedPath | None = Field(
        default=None, description="dotted path of the cost in USD (e.g. `total_cost_usd`)"
    )
    input_tokens: DottedPath | None = Field(
        default=None, description="dotted path of the input (prompt) token count (e.g. `usage.input_tokens`)"
    )
    output_tokens: DottedPath | None = Field(
        default=None,
        description="dotted path of the output token count (e.g. `usage.output_tokens`); min_tokens and "
        "max_tokens use it",
    )
    latency_ms: DottedPath | None = Field(
        default=None,
        description="the agent's own latency in milliseconds (e.g. `duration_ms`); "
        "used instead of the measured wall time when present",
    )
    where: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="jsonl: only events whose fields equal these values"
    )

    @model_validator(mode="after")
    def _needs_response_path(self) -> OutputSpec:
        if self.parser is not None:
            others = sorted(self.model_fields_set - {"parser"})
            if others:
                raise PydanticCustomError(
                    "parser_and_paths",
                    "output.parser {name} reads the whole output; remove {keys} (or the parser)",
                    {"name": repr(self.parser), "keys": ", ".join(f"`{key}`" for key in others)},
                )
            return self
        if self.format != "text" and not self.response:
            raise PydanticCustomError(
                "missing_response_path",
                "output.format {fmt} needs `response`: the dotted path of the answer, e.g. `result`",
                {"fmt": repr(self.format)},
            )
        if self.format == "text" and self.latency_ms:
            raise PydanticCustomError(
                "latency_needs_json",
                "output.latency_ms ({path}) needs `format: json` or `format: jsonl`: "
                "plain text output has no fields to read it from",
                {"path": repr(self.latency_ms)},
            )
        return self


Money = Annotated[float, Field(ge=0, allow_inf_nan=False)]
# No model costs this much; a larger price is a typo, and its products overflow to infinity.
MAX_PRICE_PER_MTOK = 1_000_000.0
Price = Annotated[float, Field(ge=0, le=MAX_PRICE_PER_MTOK, allow_inf_nan=False)]


class Pricing(StrictModel):
    """USD per million tokens, for a cost the provider does not report."""

    input_per_mtok: Price = Field(description="USD per million input tokens (at most 1 000 000)")
    output_per_mtok: Price = Field(description="USD per million output tokens (at most 1 000 000)")


class HttpSpec(StrictModel):
    """An OpenAI-compatible chat-completions endpoint (OpenRouter, OpenAI, vLLM, Ollama, LM Studio)."""

    base_url: NonEmptyStr | None = Field(
        default=None, description="default: $OPENROUTER_BASE_URL, else https://openrouter.ai/api/v1"
    )
    api_key_env: str | None = Field(
        default=None,
        description="the environment variable holding the API key; default OPENROUTER_API_KEY when "
        "base_url is not set, else none (a local server); an empty string sends no key",
    )
    temperature: Annotated[float, Field(ge=0, le=2)] | None = Field(
        default=None, description="sampling temperature sent with each request; default: the server's"
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="more request body fields, passed through (max_tokens, top_p, …)"
    )
    headers: dict[str, str] = Field(default_factory=dict, description="extra request headers")
    max_retries: Annotated[int, Field(ge=0, le=20)] = Field(
        default=4,
        description="retries after a 429, a 5xx, a timeout or a connection error, with exponential "
        "backoff and jitter (or Retry-After)",
    )
    max_concurrency: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="requests in flight at once for this configuration, across xdist workers"
    )


def _known_preset(value: str) -> str:
    if value not in AGENT_PRESETS:
        raise PydanticCustomError(
            "unknown_preset",
            "unknown preset {name}{hint}; known presets: {known}",
            {
                "name": repr(value),
                "hint": did_you_mean(value, AGENT_PRESETS),
                "known": ", ".join(AGENT_PRESETS),
            },
        )
    return value


def _relative_file(value: str) -> str:
    path = PurePosixPath(value)
    if not value.strip() or path.is_absolute() or ".." in path.parts or value.endswith("/"):
        raise PydanticCustomError(
            "relative_file",
            "{value} must be a file path relative to the agent's working directory, without `..` "
            "(each item has its own folder; point the agent's log at $VIBEEVAL_TRANSCRIPT)",
            {"value": repr(value)},
        )
    return value


class Configuration(StrictModel):
    """How prompts are answered: an executable (``cli``) or a Python callable (``python``).

    A superset of the unified runner's cli-config.json entries (``cli``, ``name``,
    ``description``, ``args``, ``timeout`` in milliseconds).
    """

    preset: Annotated[str, AfterValidator(_known_preset)] | None = Field(
        default=None,
        description="an agent CLI's ready configuration (claude-code, codex, gemini, llxprt, aider): "
        "its cli, args, prompt_via, output and max_output_bytes, under the configuration's own keys",
    )
    cli: NonEmptyStr | None = Field(
        default=None,
        description="the executable: a name on PATH, or a path (a relative one from the folder of the "
        "file that defines the configuration)",
    )
    python: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")] | None = Field(
        default=None,
        description="`module:function`, called in-process as function(prompt, context) or "
        "function(prompt); the suite's folder is importable",
    )
    http: HttpSpec | None = Field(
        default=None,
        description="an OpenAI-compatible chat-completions endpoint (OpenRouter, OpenAI, vLLM, Ollama, …)",
    )
    replay: NonEmptyStr | None = Field(
        default=None, description="a store of recorded answers (--vibe-record) to answer from"
    )
    provider: NonEmptyStr | None = Field(
        default=None,
        description="a provider a plugin adds (pytest_vibeeval_make_provider), by the name it answers to",
    )
    name: str | None = Field(
        default=None,
        description="a human-readable label, shown beside the id in the Run Summary and reports",
    )
    description: str | None = Field(default=None, description="a human-readable note; informational only")
    args: list[str] = Field(
        default_factory=list,
        description="the executable's arguments; `${MODEL}`, `${SYSTEM_PROMPT}`, `${PROMPT}` and "
        "`${CONFIG_DIR}` (the defining file's folder) are replaced",
    )
    timeout: TimeoutMs = Field(default=DEFAULT_TIMEOUT_MS, description=TIMEOUT_DESCRIPTION)
    model: NonEmptyStr | None = Field(
        default=None,
        description="the model for `${MODEL}` in args and for HTTP requests; default: metadata.model "
        "(in coding-agent evals, empty)",
    )
    system_prompt: str | None = Field(default=None, description="overrides metadata.system_prompt")
    pricing: Pricing | None = Field(
        default=None,
        description="USD per million tokens: the cost when the provider reports tokens but no cost",
    )
    prompt_via: Literal["stdin", "argument"] = Field(
        default="stdin",
        description="how the CLI gets the prompt: on stdin, or as an argument (appended unless an "
        "argument holds `${PROMPT}`)",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="extra environment variables for the CLI; templates and `${CONFIG_DIR}` are filled in",
    )
    requires_env: list[NonEmptyStr] = Field(
        default_factory=list,
        description="environment variables that must be set and non-empty, else the evals are skipped "
        "(cli and python configurations)",
    )
    output: OutputSpec = Field(
        default_factory=OutputSpec,
        description="how to read the CLI's stdout: `format` with dotted paths, or a `parser`; default: "
        "all of stdout is the response",
    )
    max_output_bytes: Annotated[int, Field(gt=0)] = Field(
        default=8 * 2**20,
        description="a CLI stdout larger than this many bytes (default 8 MiB) is an error instead of "
        "being read",
    )
    transcript: Annotated[str, AfterValidator(_relative_file)] | None = Field(
        default=None,
        description="a JSONL tool log the agent writes ({ts, tool, exit, success, …} per line), relative "
        "to its working directory; its absolute path is in the agent's VIBEEVAL_TRANSCRIPT variable",
    )
    xdist_group: Annotated[str, StringConstraints(min_length=1)] | bool | None = Field(
        default=None,
        description="with `--dist loadgroup`, one xdist worker runs this configuration's evals one at "
        "a time (a rate-limited API): true for a group named after the configuration, or a group "
        "name shared with other configurations",
    )
    xfail: NonEmptyStr | None = Field(
        default=None,
        description="every eval of this configuration is expected to fail, with the reason "
        "(reported as xfailed, strict: a pass fails the run)",
    )

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("preset") is None:
            return data
        clash = [key for key in OTHER_KINDS if key in data]
        if clash:
            raise PydanticCustomError(
                "preset_kind",
                "preset {name} runs an agent CLI; it cannot be combined with `{key}`",
                {"name": repr(data["preset"]), "key": clash[0]},
            )
        return with_preset(data)

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Configuration:
        kinds = [k for k in ("cli", "python", "http", "replay", "provider") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise PydanticCustomError(
                "configuration_kind",
                "a configuration needs exactly one of `cli: <executable>`, `python: module:function`, "
                "`http: {base_url: …}`, `replay: <store folder>` or `provider: <a plugin's provider>` "
                "(found {found})",
                {"found": " and ".join(kinds) or "neither"},
            )
        return self

    @property
    def kind(self) -> str:
        for kind in ("cli", "python", "replay", "provider"):
            if getattr(self, kind) is not None:
                return kind
        return "http"

    @property
    def timeout_s(self) -> float:
        return self.timeout / 1000

    def group_name(self, config_id: str) -> str | None:
        """The xdist_group of this configuration's items (None: no group)."""
        if self.xdist_group is True:
            return config_id
        return self.xdist_group or None


class CliConfigFile(StrictModel):
    """``cli-config.json`` of the unified runner."""

    configurations: dict[ConfigId, Configuration] = Field(
        description="how prompts are answered, by configuration id"
    )
    defaultConfigurations: list[ConfigId] | None = Field(
        default=None,
        description="the ids run without --vibe-config (a suite's default_configurations wins); null: all",
    )


class EvalSpec(CodingFields):
    """One eval of a YAML suite: a prompt with checks, or (with ``workspace`` and ``grading``) a
    coding-agent eval whose build and grade steps decide it."""

    name: EvalName | None = Field(
        default=None,
        description="the eval's id and formula variable: letters, digits, - and _, unique in the suite; "
        "default: an id made from the prompt",
    )
    prompt: NonEmptyStr = Field(
        description="the prompt (templates filled in); in a coding-agent eval, the problem prompt that "
        "starts prompt.md"
    )
    checks: Any = Field(
        default=None, description="a list of checks (all must pass) or {or: [...]} (any may pass)"
    )
    workspace: NonEmptyStr | None = Field(default=None, description="the template folder the agent works in")
    grading: NonEmptyStr | None = Field(default=None, description="the hidden tests' folder")
    tags: list[Tag] = Field(
        default_factory=list, description="pytest markers for this eval, besides metadata.tags"
    )
    xfail: NonEmptyStr | None = Field(
        default=None, description="expected to fail, with the reason: reported as xfailed, strict"
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_conditionals(cls, data: Any) -> Any:
        if isinstance(data, dict) and "conditionals" in data:
            raise PydanticCustomError(
                "legacy_format",
                "`conditionals:` is the legacy format and is no longer supported; rename it to "
                '`checks:` and write each condition as a single-key check, e.g. `- match: "*4*"`',
                {},
            )
        return data

    @model_validator(mode="after")
    def _prompt_or_coding(self) -> EvalSpec:
        coding = self.workspace is not None or self.grading is not None
        if coding and (self.workspace is None or self.grading is None):
            missing = "grading" if self.grading is None else "workspace"
            raise PydanticCustomError(
                "coding_eval",
                "a coding-agent eval needs both `workspace` and `grading`; `{missing}` is missing",
                {"missing": missing},
            )
        if not coding:
            used = [
                key
                for key in ("build_steps", "grade_steps", "vybes", "requires")
                if key in self.model_fields_set
            ]
            if used:
                raise PydanticCustomError(
                    "coding_keys",
                    "{keys} belong to coding-agent evals, which also set `workspace` and `grading`",
                    {"keys": ", ".join(f"`{key}`" for key in used)},
                )
            if (
                self.checks is None and "checks" not in self.model_fields_set
            ):  # `checks:` empty: see parse_checks
                raise PydanticCustomError(
                    "missing_checks",
                    "missing required key 'checks' "
                    "(a coding-agent eval sets `workspace` and `grading` instead)",
                    {},
                )
        elif self.checks is not None:
            raise PydanticCustomError(
                "coding_checks",
                "a coding-agent eval is decided by its build and grade steps; remove `checks`",
                {},
            )
        return self

    @property
    def is_coding(self) -> bool:
        return self.workspace is not None


class SuiteFile(StrictModel):
    metadata: Metadata = Field(
        description="the suite's name and model, and what every eval shares (system_prompt, tags, …)"
    )
    evals: Annotated[list[EvalSpec], Field(min_length=1)] = Field(
        description="at least one eval: a prompt with checks, or a coding-agent eval (workspace, grading)"
    )
    commands: dict[StepName, CommandDefinition] | None = Field(
        default=None,
        description="the steps of coding-agent evals (default: the nearest command-registry.json)",
    )
    instructions: NonEmptyStr | None = Field(
        default=None, description="a file appended to every coding-agent eval's prompt.md"
    )
    judge: ConfigId | None = Field(
        default=None,
        description="the configuration that answers llm_judge checks "
        "(default: metadata.model through OpenRouter)",
    )
    score: ScoreSpec | None = Field(
        default=None, description="the score formula (default success_pct) and an optional gate"
    )
    configurations: dict[ConfigId, Configuration] | None = Field(
        default=None,
        description="how prompts are answered, by configuration id; default: the nearest cli-config.json, "
        "else OpenRouter with metadata.model",
    )
    default_configurations: list[ConfigId] | None = Field(
        default=None,
        description="the configuration ids run without --vibe-config, the suite's own or a "
        "cli-config.json's; default: that file's defaultConfigurations, else all",
    )


def protected_name_problem(name: str) -> str | None:
    if name in PROTECTED_KEYWORDS:
        return (
            f"eval name {name!r} is a protected keyword (run-wide metric); "
            f"protected: {', '.join(PROTECTED_KEYWORDS)}"
        )
    return None
