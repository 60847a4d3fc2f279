"""The unified runner's config folder: loading, ${VAR} substitution, and one clear error per bad input."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from pytest_vibeeval import pseudo_fs
from pytest_vibeeval.errors import InputError, Problem
from pytest_vibeeval.loading.runner_config import ConfigDirError, load_config_dir
from pytest_vibeeval.loading.substitution import MAX_EXPANSION, SubstitutionError, substitute

CLI_CONFIG: dict[str, Any] = {
    "configurations": {
        "llxprt-synthetic-glm4.6-temp1": {
            "cli": "llxprt",
            "name": "LLxprt Code/Synthetic GLM 4.6, Temp 1",
            "args": ["--profile-load", "synthetic", "--yolo"],
            "timeout": 1800000,
        },
        "cerebrasqwen3-qwen3-coder-temp1": {
            "cli": "llxprt",
            "name": "Cerebras Qwen 3 480B, Temp 1",
            "args": ["--profile-load", "cerebrasqwen3", "--yolo"],
            "timeout": 1800000,
        },
        "codex-exec-gpt5-default": {
            "cli": "codex",
            "name": "Codex/GPT-5-Codex, Default Settings",
            "args": ["exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"],
            "timeout": 600000,
        },
    },
    "defaultConfigurations": ["llxprt-synthetic-glm4.6-temp1", "codex-exec-gpt5-default"],
}
EVAL_CONFIG: dict[str, Any] = {
    "evaluations": {
        "base64-fix": {
            "workspace": "${EVAL_ROOT}/problems/base64-fix/workspace",
            "grading": "${EVAL_ROOT}/grading/base64-fix",
            "prompt": "base64-fix.md",
            "buildSteps": ["typecheck", "lint", "test:public"],
            "gradeSteps": ["lint", "typecheck", "test:hidden"],
        },
        "form-capture": {
            "workspace": "${EVAL_ROOT}/problems/form-capture/workspace",
            "grading": "${EVAL_ROOT}/grading/form-capture",
            "prompt": "form-capture.md",
            "buildSteps": ["lint", "test:public", "typecheck", "build"],
            "gradeSteps": ["workspace-install", "typecheck", "test:hidden"],
            "vybes": {"multiplier": 1.5, "timeLimitMinutes": 20},
        },
    }
}
REGISTRY: dict[str, Any] = {
    "typecheck": {"command": "npm", "args": ["run", "typecheck"], "timeout": 60000},
    "lint": {"command": "npm", "args": ["run", "lint"], "timeout": 120000},
    "test:public": {"command": "npm", "args": ["run", "test:public"], "timeout": 180000},
    "build": {"command": "npm", "args": ["run", "build"], "timeout": 120000},
    "workspace-install": {"command": "npm", "args": ["install"], "timeout": 300000},
    "test:hidden": {"command": "npm", "args": ["run", "test:hidden"], "timeout": 300000},
}


def make_tree(root: Path) -> Path:
    """The document's layout under ``root``: evals/{config,problems,grading} and prompts/; returns
    the config folder."""
    for name in ("base64-fix", "form-capture"):
        (root / "evals" / "problems" / name / "workspace").mkdir(parents=True)
        (root / "evals" / "grading" / name).mkdir(parents=True)
        (root / "prompts" / "problems").mkdir(parents=True, exist_ok=True)
        (root / "prompts" / "problems" / f"{name}.md").write_text(f"Fix {name}.\n")
    (root / "prompts" / "shared").mkdir()
    (root / "prompts" / "shared" / "evaluation-instructions.md").write_text("Be good.\n")
    config = root / "evals" / "config"
    config.mkdir()
    return config


def write_configs(
    config: Path,
    evals: dict[str, Any] | None = None,
    cli: dict[str, Any] | None = None,
    registry: dict[str, Any] | None = None,
) -> None:
    for name, data in (
        ("eval-config.json", evals or EVAL_CONFIG),
        ("cli-config.json", cli or CLI_CONFIG),
        ("command-registry.json", registry or REGISTRY),
    ):
        (config / name).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    folder = make_tree(tmp_path)
    write_configs(folder)
    return folder


def line_of(path: Path, needle: str, nth: int = 1) -> int:
    """1-based line of the ``nth`` line of ``path`` holding ``needle``."""
    hits = [i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line]
    return hits[nth - 1]


def fails(config: Path, environ: dict[str, str] | None = None) -> InputError:
    with pytest.raises(InputError) as info:
        load_config_dir(config, environ or {})
    return info.value


def assert_one(err: InputError, path: Path, line: int, *fragments: str) -> Problem:
    """``err`` is about ``path`` and has one problem, on ``line``, whose rendering holds each fragment."""
    assert err.path == str(path), err.render()
    assert len(err.problems) == 1, err.render()
    rendered = err.render()
    assert rendered.startswith(f"{path}:{line}: "), rendered
    for fragment in fragments:
        assert fragment in rendered, rendered
    return err.problems[0]


def edited(**changes: Any) -> dict[str, Any]:
    """EVAL_CONFIG with ``changes`` applied to the base64-fix entry (None removes a key)."""
    data = copy.deepcopy(EVAL_CONFIG)
    entry = data["evaluations"]["base64-fix"]
    for key, value in changes.items():
        if value is None:
            entry.pop(key)
        else:
            entry[key] = value
    return data


# --- loading ---------------------------------------------------------------------------------


def test_the_documents_layout_loads_with_absolute_paths(config: Path, tmp_path: Path) -> None:
    loaded = load_config_dir(config, {})
    evals = tmp_path / "evals"
    assert loaded.eval_root == evals
    assert list(loaded.evaluations) == ["base64-fix", "form-capture"]
    base64 = loaded.evaluations["base64-fix"]
    assert base64.workspace == evals / "problems" / "base64-fix" / "workspace"
    assert base64.grading == evals / "grading" / "base64-fix"
    assert base64.prompt_file == tmp_path / "prompts" / "problems" / "base64-fix.md"
    assert base64.build_steps == ("typecheck", "lint", "test:public")
    assert base64.grade_steps == ("lint", "typecheck", "test:hidden")
    assert base64.vybes is None
    vybes = loaded.evaluations["form-capture"].vybes
    assert vybes is not None and (vybes.multiplier, vybes.timeLimitMinutes) == (1.5, 20)
    assert list(loaded.configurations) == list(CLI_CONFIG["configurations"])
    assert loaded.configurations["codex-exec-gpt5-default"].timeout_s == 600
    assert loaded.default_configurations == ("llxprt-synthetic-glm4.6-temp1", "codex-exec-gpt5-default")
    assert loaded.registry["test:hidden"].args == ["run", "test:hidden"]
    assert loaded.registry["lint"].timeout_s == 120
    assert loaded.shared_instructions == tmp_path / "prompts" / "shared" / "evaluation-instructions.md"


def test_eval_root_comes_from_the_environment_when_set(config: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    make_tree(other)
    loaded = load_config_dir(config, {"EVAL_ROOT": str(other / "evals")})
    assert loaded.eval_root == other / "evals"
    assert (
        loaded.evaluations["base64-fix"].workspace
        == other / "evals" / "problems" / "base64-fix" / "workspace"
    )
    # the default prompts folder follows EVAL_ROOT too
    assert loaded.evaluations["base64-fix"].prompt_file == other / "prompts" / "problems" / "base64-fix.md"


def test_an_empty_eval_root_in_the_environment_means_the_default(config: Path, tmp_path: Path) -> None:
    assert load_config_dir(config, {"EVAL_ROOT": ""}).eval_root == tmp_path / "evals"


def test_other_variables_come_from_the_environment(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    write_configs(config, edited(grading="${GRADING}/base64-fix", workspace="problems/base64-fix/workspace"))
    loaded = load_config_dir(config, {"GRADING": str(tmp_path / "evals" / "grading")})
    base64 = loaded.evaluations["base64-fix"]
    assert base64.grading == tmp_path / "evals" / "grading" / "base64-fix"
    # relative paths are relative to EVAL_ROOT, as the document's paths are relative to evals/
    assert base64.workspace == tmp_path / "evals" / "problems" / "base64-fix" / "workspace"


def test_prompts_dir_and_shared_instructions_are_configurable(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    (config / "p").mkdir()
    (config / "p" / "base64-fix.md").write_text("x")
    (config / "p" / "form-capture.md").write_text("x")
    (config / "shared.md").write_text("x")
    data = {**EVAL_CONFIG, "promptsDir": "config/p", "sharedInstructions": "${EVAL_ROOT}/config/shared.md"}
    write_configs(config, data)
    loaded = load_config_dir(config, {})
    assert loaded.evaluations["base64-fix"].prompt_file == config / "p" / "base64-fix.md"
    assert loaded.shared_instructions == config / "shared.md"


def test_without_the_default_shared_instructions_there_are_none(config: Path, tmp_path: Path) -> None:
    (tmp_path / "prompts" / "shared" / "evaluation-instructions.md").unlink()
    assert load_config_dir(config, {}).shared_instructions is None


def test_yaml_spelling_of_the_steps_is_the_same_model() -> None:
    from pytest_vibeeval.loading.runner_config import WorkspaceEval

    spec = WorkspaceEval.model_validate(
        {"workspace": "w", "grading": "g", "prompt": "p.md", "build_steps": ["lint"], "grade_steps": ["t"]}
    )
    assert (spec.build_steps, spec.grade_steps) == (["lint"], ["t"])


# --- substitution ----------------------------------------------------------------------------


def test_substitution_expands_values_recursively() -> None:
    assert substitute("${A}/x", {"A": "${B}/a", "B": "/b"}) == "/b/a/x"
    assert substitute("$HOME/${A}", {"A": "a"}) == "$HOME/a"  # only ${NAME} is a reference


@pytest.mark.parametrize(
    ("text", "variables", "message"),
    [
        ("${A}", {"A": "${B}", "B": "${A}"}, "variable loop: A → B → A"),
        ("${A}", {}, "variable A is not set"),
        ("${A}", {"A": ""}, "variable A is empty"),
        ("${A B}", {}, "malformed reference ${A B}"),
        ("${A", {"A": "a"}, "'${' without a matching '}'"),
        ("${A\n}", {"A\n": "a"}, "malformed reference ${A\n}"),
    ],
)
def test_bad_substitutions(text: str, variables: dict[str, str], message: str) -> None:
    with pytest.raises(SubstitutionError) as info:
        substitute(text, variables)
    assert message in info.value.message


def doubling(levels: int) -> dict[str, str]:
    """L0 is one character and each further L twice the one before: L<n> expands to 2**n characters."""
    return {"L0": "x", **{f"L{i}": f"${{L{i - 1}}}${{L{i - 1}}}" for i in range(1, levels + 1)}}


def test_a_variable_used_many_times_is_expanded_once() -> None:
    # 2**16 references to L0 in all: expanded one at a time, this would take long
    assert substitute("${L16}", doubling(16)) == "x" * MAX_EXPANSION


def test_an_expansion_bomb_stops_at_the_limit() -> None:
    with pytest.raises(SubstitutionError) as info:
        substitute("${L40}/workspace", doubling(40))
    expected = f"variable L17 (used by ${{L40}}) expands to more than {MAX_EXPANSION} characters"
    assert info.value.message == expected
    assert "give L17 a shorter value" in info.value.hint


def test_references_together_may_not_expand_beyond_the_limit() -> None:
    half = "x" * (MAX_EXPANSION // 2)
    assert substitute("${A}/${A}", {"A": half}) == f"{half}/{half}"
    with pytest.raises(SubstitutionError) as info:
        substitute("${A}/${A}/${B}", {"A": half, "B": "b"})
    assert info.value.message == f"the ${{NAME}} references expand to more than {MAX_EXPANSION} characters"


def test_an_expansion_bomb_in_a_path_names_the_key_and_line(config: Path) -> None:
    data = edited(workspace="${L40}/workspace")
    write_configs(config, data)
    path = config / "eval-config.json"
    assert_one(
        fails(config, doubling(40)),
        path,
        line_of(path, "${L40}"),
        "evaluations.base64-fix.workspace: variable L17 (used by ${L40}) expands to more than",
    )


# --- bad configs: one clear message each, with file, key and line ------------------------------


def test_unknown_step_name_with_did_you_mean(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    write_configs(config, edited(gradeSteps=["lint", "typecheck", "test:hiden"]))
    path = config / "eval-config.json"
    assert_one(
        fails(config),
        path,
        line_of(path, '"test:hiden"'),
        "evaluations.base64-fix.gradeSteps[2]: unknown step 'test:hiden' (did you mean 'test:hidden'?)",
        "hint: steps are defined in command-registry.json",
    )


def test_missing_workspace_folder_names_the_resolved_path(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    write_configs(config, edited(workspace="${EVAL_ROOT}/problems/nope/workspace"))
    path = config / "eval-config.json"
    resolved = tmp_path / "evals" / "problems" / "nope" / "workspace"
    assert_one(
        fails(config),
        path,
        line_of(path, "nope"),
        f"evaluations.base64-fix.workspace: workspace folder {resolved} does not exist",
        f"EVAL_ROOT is {tmp_path / 'evals'}",
    )


def test_grading_that_is_a_file_is_not_a_folder(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    (tmp_path / "evals" / "grading" / "file").write_text("")
    write_configs(config, edited(grading="${EVAL_ROOT}/grading/file"))
    path = config / "eval-config.json"
    assert_one(fails(config), path, line_of(path, "grading/file"), "is not a folder")


@pytest.mark.parametrize(
    ("key", "target", "where"),
    [
        ("grading", "/sys/kernel", "under /sys"),
        ("workspace", "/dev", "under /dev"),
        ("workspace", "${EVAL_ROOT}/problems/proc-link", "under /proc"),  # a link to /proc/self
    ],
)
def test_template_on_a_pseudo_filesystem_is_refused(
    tmp_path: Path, key: str, target: str, where: str
) -> None:
    """Copying /proc/self for every item wrote gigabytes and never ended: refused at load time."""
    config = make_tree(tmp_path)
    (tmp_path / "evals" / "problems" / "proc-link").symlink_to("/proc/self")
    write_configs(config, edited(**{key: target}))
    path = config / "eval-config.json"
    shown = target.replace("${EVAL_ROOT}", str(tmp_path / "evals"))
    assert_one(
        fails(config),
        path,
        line_of(path, target),
        f"evaluations.base64-fix.{key}: {key} folder {shown} is {where}, a pseudo filesystem, "
        f"not a folder of files (from {target!r})",
        "hint: a template is copied for every item: name a folder of ordinary files, "
        "not one under /proc, /sys or /dev",
    )


MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:5 / /mnt/my\\040procs rw,nosuid - proc proc rw
24 22 0:6 / /mnt/data rw - tmpfs tmpfs rw
25 24 0:7 / /mnt/data/cg rw - cgroup2 cgroup2 rw
"""


def test_pseudo_filesystem_mounted_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A proc or cgroup filesystem mounted outside /proc, /sys, /dev is found by its mount's type."""
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(MOUNTINFO)
    monkeypatch.setattr(pseudo_fs, "MOUNTINFO", str(mountinfo))
    found = pseudo_fs.pseudo_filesystem
    assert found(Path("/mnt/my procs/self")) == "on a proc filesystem"
    assert found(Path("/mnt/data/cg/x")) == "on a cgroup2 filesystem"
    assert found(Path("/mnt/data/x")) is None  # tmpfs holds ordinary files
    assert found(Path("/mnt/my procsx")) is None
    assert found(tmp_path) is None
    assert found(Path("/proc/self/fd")) == "under /proc"


def test_missing_prompt_file(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    write_configs(config, edited(prompt="base64.md"))
    path = config / "eval-config.json"
    assert_one(
        fails(config),
        path,
        line_of(path, '"base64.md"'),
        f"prompt file {tmp_path / 'prompts' / 'problems' / 'base64.md'} does not exist",
        "set `promptsDir` in eval-config.json",
    )


def test_missing_default_prompts_folder_says_how_to_move_it(config: Path, tmp_path: Path) -> None:
    (tmp_path / "prompts" / "problems").rename(tmp_path / "prompts" / "elsewhere")
    err = fails(config)
    assert_one(
        err,
        config / "eval-config.json",
        1,
        f"promptsDir: prompts folder {tmp_path / 'prompts' / 'problems'} does not exist",
        "hint: set `promptsDir` in eval-config.json",
    )


def test_unresolvable_variable(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    write_configs(config, edited(grading="${GRADING_ROOT}/base64-fix"))
    path = config / "eval-config.json"
    assert_one(
        fails(config),
        path,
        line_of(path, "GRADING_ROOT"),
        "evaluations.base64-fix.grading: variable GRADING_ROOT is not set",
        "hint: set the environment variable GRADING_ROOT or remove ${GRADING_ROOT}",
    )


def test_variable_loop_through_the_environment(config: Path) -> None:
    path = config / "eval-config.json"
    err = fails(config, {"EVAL_ROOT": "${X}", "X": "${EVAL_ROOT}"})
    assert err.path == str(path)
    assert "environment variable EVAL_ROOT: variable loop: X → EVAL_ROOT → X" in err.render()


def test_eval_root_from_the_environment_must_exist(config: Path, tmp_path: Path) -> None:
    err = fails(config, {"EVAL_ROOT": str(tmp_path / "gone")})
    assert f"EVAL_ROOT {tmp_path / 'gone'} (from the environment) is not a folder" in err.render()


def test_invalid_evaluation_id(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    data = copy.deepcopy(EVAL_CONFIG)
    data["evaluations"]["base64 fix!"] = data["evaluations"].pop("base64-fix")
    write_configs(config, data)
    path = config / "eval-config.json"
    assert_one(
        fails(config),
        path,
        line_of(path, '"base64 fix!"'),
        "evaluation id 'base64 fix!' may contain only ASCII letters, digits, '-' and '_'",
    )


def _renamed_evaluation(tmp_path: Path, eval_id: str) -> tuple[InputError, Path]:
    """The load error of a config tree whose evaluation is renamed ``eval_id``, and its eval-config.json."""
    config = make_tree(tmp_path)
    data = copy.deepcopy(EVAL_CONFIG)
    data["evaluations"][eval_id] = data["evaluations"].pop("base64-fix")
    write_configs(config, data)
    return fails(config), config / "eval-config.json"


@pytest.mark.parametrize(
    ("eval_id", "shown"),
    [
        ("task\n", "evaluations['task\\n']: evaluation id 'task\\n' may contain only"),
        ("task\u202etxt", "evaluations['task\\u202etxt']: evaluation id 'task\\u202etxt' may contain only"),
    ],
)
def test_an_evaluation_id_with_a_newline_or_bidi_control_is_refused_and_shown_escaped(
    tmp_path: Path, eval_id: str, shown: str
) -> None:
    err, path = _renamed_evaluation(tmp_path, eval_id)
    assert_one(err, path, line_of(path, json.dumps(eval_id)), shown)
    assert err.render().isprintable()


@pytest.mark.parametrize(
    ("eval_id", "message"),
    [
        ("passed", "evaluation id 'passed' is a run-wide score formula variable"),
        ("avg", "evaluation id 'avg' would define the formula variable(s) 'avg_latency', 'avg_cost'"),
    ],
)
def test_an_evaluation_id_that_would_shadow_a_run_wide_variable_is_refused(
    tmp_path: Path, eval_id: str, message: str
) -> None:
    err, path = _renamed_evaluation(tmp_path, eval_id)
    assert_one(err, path, line_of(path, json.dumps(eval_id)), message)


def test_invalid_step_name_in_the_registry(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    write_configs(config, registry={**REGISTRY, "-bad": {"command": "x"}})
    path = config / "command-registry.json"
    assert_one(fails(config), path, line_of(path, '"-bad"'), "step name '-bad' must start with")


def test_invalid_configuration_id(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    cli = copy.deepcopy(CLI_CONFIG)
    cli["configurations"]["bad id"] = {"name": "Bad", "cli": "x"}
    write_configs(config, cli=cli)
    path = config / "cli-config.json"
    assert_one(
        fails(config),
        path,
        line_of(path, '"bad id"'),
        "configuration id 'bad id' must start with an ASCII letter or digit",
    )


def test_a_configuration_without_a_name_is_refused_with_a_hint(tmp_path: Path) -> None:
    """The unified runner requires a human-readable ``name`` for each configuration."""
    config = make_tree(tmp_path)
    cli = copy.deepcopy(CLI_CONFIG)
    del cli["configurations"]["codex-exec-gpt5-default"]["name"]
    write_configs(config, cli=cli)
    path = config / "cli-config.json"
    error = assert_one(
        fails(config),
        path,
        line_of(path, '"codex-exec-gpt5-default"'),
        "configurations.codex-exec-gpt5-default: missing required key 'name'",
    )
    assert 'e.g. "name": "Claude Code, Sonnet"' in (error.hint or "")


def test_unknown_default_configuration(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    write_configs(config, cli={**CLI_CONFIG, "defaultConfigurations": ["codex-exec-gpt5-defualt"]})
    path = config / "cli-config.json"
    assert_one(
        fails(config),
        path,
        line_of(path, '"codex-exec-gpt5-defualt"'),
        "defaultConfigurations[0]: default configuration 'codex-exec-gpt5-defualt' is not defined"
        " (did you mean 'codex-exec-gpt5-default'?)",
    )


def test_bad_json(config: Path) -> None:
    path = config / "command-registry.json"
    path.write_text('{\n  "lint": {,}\n}\n')
    assert_one(fails(config), path, 2, "invalid JSON")


def test_missing_file(config: Path) -> None:
    (config / "command-registry.json").unlink()
    assert "cannot read the file" in fails(config).render()


@pytest.mark.parametrize(
    ("file", "data", "needle", "message"),
    [
        ("eval-config.json", edited(buildStep=["lint"]), '"buildStep"', "did you mean 'buildSteps'?"),
        # closer to the Python name build_steps, but the suggestion is the documented spelling
        ("eval-config.json", edited(buildstep=["lint"]), '"buildstep"', "did you mean 'buildSteps'?"),
        ("eval-config.json", edited(grade_step=["lint"]), '"grade_step"', "did you mean 'gradeSteps'?"),
        (
            "eval-config.json",
            {**EVAL_CONFIG, "evaluation": {}},
            '"evaluation"',
            "did you mean 'evaluations'?",
        ),
        ("command-registry.json", {"lint": {"comand": "npm"}}, '"comand"', "did you mean 'command'?"),
        ("eval-config.json", edited(vybes={"multipler": 2}), '"multipler"', "did you mean 'multiplier'?"),
    ],
)
def test_unknown_key_with_did_you_mean(
    tmp_path: Path, file: str, data: dict[str, Any], needle: str, message: str
) -> None:
    config = make_tree(tmp_path)
    if file == "eval-config.json":
        write_configs(config, evals=data)
    else:
        write_configs(config, registry=data, evals={"evaluations": {}})
    path = config / file
    assert_one(fails(config), path, line_of(path, needle), "unknown key", message)


def test_every_problem_of_a_file_is_reported(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    data = copy.deepcopy(EVAL_CONFIG)
    data["evaluations"]["base64-fix"]["buildSteps"] = ["lnt"]
    data["evaluations"]["form-capture"]["prompt"] = "missing.md"
    data["evaluations"]["bad"] = {"workspace": "w", "grading": "g"}  # no prompt
    write_configs(config, data)
    err = fails(config)
    rendered = err.render()
    assert len(err.problems) == 3, rendered
    assert "unknown step 'lnt' (did you mean 'lint'?)" in rendered
    assert "missing.md does not exist" in rendered
    assert "evaluations.bad: missing required key 'prompt'" in rendered


def test_problems_in_several_files_are_all_reported_and_survive_pickling(tmp_path: Path) -> None:
    config = make_tree(tmp_path)
    write_configs(
        config,
        evals=edited(prompt="nope.md"),
        cli={**CLI_CONFIG, "defaultConfigurations": ["x"]},
    )
    err = fails(config)
    assert isinstance(err, ConfigDirError)
    assert [Path(e.path).name for e in err.errors] == ["cli-config.json", "eval-config.json"]
    rendered = err.render(tmp_path)
    assert "evals/config/cli-config.json:" in rendered and "evals/config/eval-config.json:" in rendered
    copy_ = pickle.loads(pickle.dumps(err))
    assert copy_.render() == err.render()


# --- a value of the wrong kind says what was given and how to write it -----------------------------


@pytest.mark.parametrize(
    ("step", "needle", "message", "hint"),
    [
        ({"command": "python3", "timeout": 0}, '"timeout"',
         "compile.timeout: must be greater than 0, not 0",
         "timeout is in milliseconds: a whole number above 0, e.g. 60000"),
        ({"command": "python3", "timeout": "30000"}, '"timeout"',
         "compile.timeout: must be a whole number, not the text '30000'",
         'write the number without quotes: "timeout": 30000'),
        ({"command": "python3", "args": ["-c", 1]}, "1",
         "compile.args[1]: must be text (a string in double quotes), not the number 1",
         'quote it to make it text: "1"'),
        ({"command": ""}, '"command"', "compile.command: must not be empty",
         'the executable to run: a name on PATH or a path, e.g. "python3"'),
    ],
)  # fmt: skip
def test_a_bad_registry_value_says_what_to_write(
    config: Path, step: dict[str, Any], needle: str, message: str, hint: str
) -> None:
    write_configs(config, registry={**REGISTRY, "compile": step})  # the last entry of the file
    path = config / "command-registry.json"
    line = max(i for i, text in enumerate(path.read_text().splitlines(), 1) if needle in text)
    assert_one(fails(config), path, line, message, f"\n    hint: {hint}")


NOT_A_STEP = "compile: must be an object holding the step's command"


@pytest.mark.parametrize(
    ("entry", "message", "hint"),
    [
        ("npm run build", f"{NOT_A_STEP}, not the text 'npm run build'",
         '"compile": {"command": "npm", "args": ["run", "build"]}'),
        (["python3", "-m", "compileall", "."], f"{NOT_A_STEP}, not a list",
         '"compile": {"command": "python3", "args": ["-m", "compileall", "."]}'),
        (7, f"{NOT_A_STEP}, not the number 7", '"compile": {"command": "npm", "args": ["run", "build"]}'),
    ],
)  # fmt: skip
def test_a_registry_entry_that_is_not_an_object_says_how_to_write_the_step(
    config: Path, entry: Any, message: str, hint: str
) -> None:
    write_configs(config, registry={**REGISTRY, "compile": entry})  # the last entry of the file
    path = config / "command-registry.json"
    err = assert_one(fails(config), path, line_of(path, '"compile"'), message, f"\n    hint: write {hint}")
    assert err.loc == ("compile",)


@pytest.mark.parametrize(
    ("registry", "kind", "hint"),
    [
        (["typecheck", "lint"], "a list (a list of step names: each needs its command)",
         '{"typecheck": {"command": "npm", "args": ["run", "typecheck"]}, …}'),
        ("npm test", "text", '{"build": {"command": "npm", "args": ["run", "build"]}, …}'),
    ],
)  # fmt: skip
def test_a_registry_that_is_not_an_object_says_what_it_maps(
    tmp_path: Path, registry: Any, kind: str, hint: str
) -> None:
    config = make_tree(tmp_path)
    write_configs(config)
    path = config / "command-registry.json"
    path.write_text(json.dumps(registry), encoding="utf-8")
    message = f"the registry must be an object mapping each step's name to its command, not {kind}"
    assert_one(fails(config), path, 1, message, f"\n    hint: write {hint}")


def test_a_timeout_that_is_not_a_number_says_it_is_in_milliseconds(config: Path) -> None:
    cli = copy.deepcopy(CLI_CONFIG)
    next(iter(cli["configurations"].values()))["timeout"] = "fast"
    write_configs(config, cli=cli)
    path = config / "cli-config.json"
    assert_one(
        fails(config),
        path,
        line_of(path, '"timeout"'),
        "timeout: must be a whole number, not the text 'fast'",
        "\n    hint: timeout is in milliseconds: a whole number above 0, e.g. 60000",
    )


def test_a_multiplier_that_is_not_a_number_says_what_it_is(config: Path) -> None:
    write_configs(config, evals=edited(vybes={"multiplier": "two"}))
    path = config / "eval-config.json"
    assert_one(
        fails(config),
        path,
        line_of(path, '"multiplier"'),
        "vybes.multiplier: must be a number, not the text 'two'",
        "\n    hint: the multiplier scales the eval's vybes score: a number above 0, e.g. 2",
    )
