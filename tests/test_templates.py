"""``{{var('x')}}`` / ``{{secret('x')}}`` templates: parsing, where values come from, and redaction."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from helpers import XDIST_MODES
from hypothesis import given
from hypothesis import strategies as st

from pytest_vibeeval.loading.templates import (
    ANY_TEMPLATE,
    REDACTED,
    TEMPLATE,
    MissingValue,
    Redactor,
    Renderer,
    TemplateValues,
    env_name,
    has_templates,
    parse_assignments,
    template_problems,
)

# in-process pytest runs: no cache files, and no re-import of hypothesis's plugin (slow) per run
BASE_ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")

# --- parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "func", "name"),
    [
        ("{{var('x')}}", "var", "x"),
        ('{{var("x")}}', "var", "x"),
        ("{{ var('x') }}", "var", "x"),
        ("{{  secret (  'api.key'  )  }}", "secret", "api.key"),
        ('{{secret("linear.apiKey")}}', "secret", "linear.apiKey"),
        ("{{\n var('multi-line')\n}}", "var", "multi-line"),
    ],
)
def test_template_parsing(text: str, func: str, name: str) -> None:
    match = TEMPLATE.fullmatch(text)
    assert match is not None
    assert (match["func"], match["name"]) == (func, name)
    assert template_problems(text) == []
    assert has_templates(f"before {text} after")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{var(x)}}", "malformed template '{{var(x)}}'"),
        ("{{var('x\")}}", "malformed template"),
        ("{{ var('x' }}", "malformed template"),
        ("{{var}}", "malformed template"),
        ("{{ foo('x') }}", "unknown template function 'foo'"),
        ("{{VAR('x')}}", "unknown template function 'VAR'"),
        ("{{var('')}}", "empty name in template"),
        ("{{var('  ')}}", "empty name in template"),
        ("{{var('x')", "unclosed template \"{{var('x') b\": end it with }}"),
        ("{{ secret(", "unclosed template '{{ secret( b': end it with }}"),
        ("{{row.city", "unclosed template '{{row.city"),
    ],
)
def test_template_problems(text: str, message: str) -> None:
    problems = template_problems(f"a {text} b")
    assert len(problems) == 1
    assert message in problems[0]


@pytest.mark.parametrize("text", ["Explain {{ in Jinja", "a }} b {{", "{{var('x')}} then {{"])
def test_braces_that_start_no_template_are_text(text: str) -> None:
    assert template_problems(text) == []


def test_every_problem_in_a_text_is_reported() -> None:
    problems = template_problems("{{var(a)}} {{var('ok')}} {{x('y')}}")
    assert len(problems) == 2
    assert "malformed" in problems[0] and "unknown template function 'x'" in problems[1]


def test_text_without_templates() -> None:
    assert template_problems("plain {single} braces } {") == []
    assert not has_templates("plain text")
    assert not has_templates("{{ not a template")


def test_many_unclosed_braces_are_scanned_once() -> None:
    # megabytes of `{{` hung collection when each one scanned the rest of the text for a `}}`
    text = "{{" * 2**20
    assert template_problems(text) == []
    assert not has_templates(text)
    assert ANY_TEMPLATE.sub(" ", text) == text
    assert [m.group(0) for m in ANY_TEMPLATE.finditer(text + "}}")] == [text + "}}"]


# the lazy pattern ANY_TEMPLATE stands for, searched over the whole text
PLAIN_ANY_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.DOTALL)


@given(st.text(alphabet="{}a\n", max_size=40))
def test_any_template_finds_what_the_plain_pattern_finds(text: str) -> None:
    spans = [m.span() for m in ANY_TEMPLATE.finditer(text)]
    assert spans == [m.span() for m in PLAIN_ANY_TEMPLATE.finditer(text)]
    assert ANY_TEMPLATE.sub("<>", text) == PLAIN_ANY_TEMPLATE.sub("<>", text)
    assert ANY_TEMPLATE.sub(lambda m: m.group(0).upper(), text) == PLAIN_ANY_TEMPLATE.sub(
        lambda m: m.group(0).upper(), text
    )


# --- where values come from --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name", "env"),
    [
        ("var", "linear.projectId", "VIBE_VAR_LINEAR_PROJECTID"),
        ("var", "who", "VIBE_VAR_WHO"),
        ("secret", "linear.apiKey", "VIBE_SECRET_LINEAR_APIKEY"),
        ("secret", "my-token 2", "VIBE_SECRET_MY_TOKEN_2"),
    ],
)
def test_env_mapping(kind: str, name: str, env: str) -> None:
    assert env_name(kind, name) == env


def test_var_precedence_cli_over_env_over_ini() -> None:
    env = {"VIBE_VAR_WHO": "from-env"}
    assert TemplateValues({"who": "from-cli"}, {"who": "from-ini"}, env).lookup("var", "who") == "from-cli"
    assert TemplateValues({}, {"who": "from-ini"}, env).lookup("var", "who") == "from-env"
    assert TemplateValues({}, {"who": "from-ini"}, {}).lookup("var", "who") == "from-ini"


def test_empty_values_are_values() -> None:
    assert TemplateValues({"who": ""}, {"who": "ini"}, {}).lookup("var", "who") == ""


def test_secrets_come_from_the_environment_only() -> None:
    values = TemplateValues({"token": "cli"}, {"token": "ini"}, {"VIBE_VAR_TOKEN": "var-env"})
    with pytest.raises(MissingValue) as info:
        values.lookup("secret", "token")
    expected = "template secret 'token' has no value: set the environment variable VIBE_SECRET_TOKEN"
    assert str(info.value) == expected
    assert TemplateValues(environ={"VIBE_SECRET_TOKEN": "s"}).lookup("secret", "token") == "s"


def test_vars_do_not_read_secret_environment_variables() -> None:
    with pytest.raises(MissingValue):
        TemplateValues(environ={"VIBE_SECRET_WHO": "x"}).lookup("var", "who")


def test_missing_var_says_how_to_set_it() -> None:
    with pytest.raises(MissingValue) as info:
        TemplateValues(environ={}).lookup("var", "linear.projectId")
    err = info.value
    assert (err.kind, err.name) == ("var", "linear.projectId")
    message = str(err)
    assert message.startswith("template var 'linear.projectId' has no value")
    assert "--vibe-var linear.projectId=VALUE" in message
    assert "VIBE_VAR_LINEAR_PROJECTID" in message
    assert "vibe_vars ini option" in message


def test_default_environment_is_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIBE_VAR_FROM_OS", "yes")
    assert TemplateValues().lookup("var", "from_os") == "yes"


def test_parse_assignments() -> None:
    items = ["a=1", " b = two words ", "c=", "d=x=y", ""]
    assert parse_assignments(items, "src") == {"a": "1", "b": " two words", "c": "", "d": "x=y"}
    assert parse_assignments(["x=1", "x=2"], "src") == {"x": "2"}


@pytest.mark.parametrize("item", ["novalue", "=value"])
def test_parse_assignments_rejects_bad_items(item: str) -> None:
    with pytest.raises(ValueError, match=rf"--vibe-var: expected NAME=VALUE, got '{item}'"):
        parse_assignments([item], "--vibe-var")


# --- rendering and redaction -------------------------------------------------------------------


def test_renderer_fills_templates_and_remembers_secrets() -> None:
    values = TemplateValues({"who": "World"}, {}, {"VIBE_SECRET_TOKEN": "tok-123"})
    renderer = Renderer(values)
    assert renderer.render("Hi {{ var('who') }}, {{secret(\"token\")}}!") == "Hi World, tok-123!"
    assert renderer.used_secrets == {"tok-123"}
    assert renderer.render("no templates") == "no templates"


def test_renderer_does_not_expand_templates_inside_values() -> None:
    renderer = Renderer(TemplateValues({"who": "{{secret('token')}}"}, {}, {"VIBE_SECRET_TOKEN": "t"}))
    assert renderer.render("{{var('who')}}") == "{{secret('token')}}"
    assert renderer.used_secrets == set()


def test_renderer_raises_for_a_missing_value() -> None:
    renderer = Renderer(TemplateValues({}, {}, {}))
    with pytest.raises(MissingValue, match="VIBE_VAR_WHO"):
        renderer.render("Hi {{var('who')}}")


def test_gathering_reports_every_missing_value_at_once() -> None:
    renderer = Renderer(TemplateValues({"who": "World"}, {}, {}))
    with pytest.raises(MissingValue) as caught, renderer.gathering():
        renderer.render("{{var('team')}} and {{var('who')}}")
        renderer.render("{{secret('key')}} then {{var('team')}} again")
    assert caught.value.missing == [("var", "team"), ("secret", "key")]
    assert str(caught.value) == (
        "2 template values are missing: var 'team' (pass --vibe-var team=VALUE, set VIBE_VAR_TEAM, "
        "or add it to the vibe_vars ini option); secret 'key' (set the environment variable VIBE_SECRET_KEY)"
    )
    with renderer.gathering():  # nothing missing: nothing raised, and the values are filled in
        assert renderer.render("Hi {{var('who')}}") == "Hi World"


def test_redactor_replaces_every_occurrence() -> None:
    redact = Redactor()
    redact.add(["s3cr3t"])
    assert redact("a s3cr3t and s3cr3t again") == f"a {REDACTED} and {REDACTED} again"


def test_redactor_replaces_longest_secret_first() -> None:
    redact = Redactor()
    redact.add(["abcdef", "abcdefghi"])
    # shortest first would leave "ghi" of the longer secret behind
    assert redact("abcdefghi | abcdef") == "[secret] | [secret]"


def test_redactor_leaves_short_values_and_its_own_marks_alone() -> None:
    redact = Redactor()
    redact.add(["e", "abc12"])  # shorter than 6 characters: would mask ordinary words everywhere
    assert redact("the pattern abc12") == "the pattern abc12"
    redact.add(["secret"])
    once = redact("a secret: [secret]")
    assert once == "a [secret]: [secret]"
    assert redact(once) == once  # text masked before is never masked again


def test_redactor_ignores_empty_values_and_passes_none_through() -> None:
    redact = Redactor()
    redact.add(["", ""])
    assert redact.secrets == set()
    assert redact("text") == "text"
    redact.add(["x1"])
    assert redact(None) is None
    assert redact("") == ""


# --- end to end --------------------------------------------------------------------------------

SECRET = "s3cr3t-value-123"

SUITE = """\
metadata:
  name: templated
  model: some/model
configurations:
  echo:
    python: "echo_templates:answer"
evals:
  - name: greet
    prompt: "Hello {{var('who')}}, token {{ secret(\\"token\\") }}"
    checks:
      - match: "*World*"
      - match: "*token*"
  - name: shown
    prompt: "Hi {{var('who')}} {{secret('token')}}"
    checks:
      - match: "*never-in-the-response*"
"""

ECHO = """\
def answer(prompt):
    return "echo: " + prompt
"""


def _make_templated_suite(pytester: pytest.Pytester) -> None:
    pytester.makefile(".eval.yaml", templated=SUITE)
    pytester.makepyfile(echo_templates=ECHO)


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "xdist"])
def test_templates_end_to_end_and_secrets_never_leak(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: bool
) -> None:
    _make_templated_suite(pytester)
    monkeypatch.setenv("VIBE_SECRET_TOKEN", SECRET)
    monkeypatch.delenv("VIBE_VAR_WHO", raising=False)
    args = [*BASE_ARGS, "-rA", "-v", "--vibe-var", "who=World"]
    args += ["--junitxml", "junit.xml", "--vibe-results", "results.json"]
    if xdist:
        args += ["-n", "2"]
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str() + result.stderr.str()
    assert "PASSED" in out and "greet[echo]" in out
    assert ("[gw" in out) is xdist  # the items really ran on xdist workers
    # the failure shows the (echoed) response, with the secret redacted
    assert "echo: Hi World [secret]" in out
    assert SECRET not in out

    results = json.loads((pytester.path / "results.json").read_text())
    (run,) = results["runs"]
    records = {record["name"]: record for record in run["evals"]}
    assert records["greet"]["outcome"] == "passed"
    assert records["greet"]["response"] == "echo: Hello World, token [secret]"
    assert records["shown"]["outcome"] == "failed"
    assert records["shown"]["response"] == "echo: Hi World [secret]"
    assert SECRET not in json.dumps(results)

    xml = (pytester.path / "junit.xml").read_text()
    assert "[secret]" in xml
    assert SECRET not in xml


def test_secret_in_a_check_pattern_is_redacted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(echo_templates=ECHO)
    pytester.makefile(
        ".eval.yaml",
        pattern=textwrap.dedent(
            """\
            metadata: {name: p, model: m}
            configurations:
              echo: {python: "echo_templates:answer"}
            evals:
              - name: leaky
                prompt: plain prompt
                checks:
                  - match: "*{{secret('token')}}*"
            """
        ),
    )
    monkeypatch.setenv("VIBE_SECRET_TOKEN", SECRET)
    result = pytester.runpytest(*BASE_ARGS, "--vibe-results", "results.json")
    result.assert_outcomes(failed=1)
    assert "pattern '*[secret]*' does not match the response" in result.stdout.str()
    assert SECRET not in result.stdout.str()
    assert SECRET not in (pytester.path / "results.json").read_text()


def test_missing_var_errors_with_how_to_set_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _make_templated_suite(pytester)
    monkeypatch.setenv("VIBE_SECRET_TOKEN", SECRET)
    monkeypatch.delenv("VIBE_VAR_WHO", raising=False)
    result = pytester.runpytest(*BASE_ARGS, "--vibe-results", "results.json")
    result.assert_outcomes(failed=2)
    records = json.loads((pytester.path / "results.json").read_text())["runs"][0]["evals"]
    assert {r["outcome"] for r in records} == {"error"}
    for record in records:
        assert record["message"].startswith("template var 'who' has no value")
        assert "--vibe-var who=VALUE" in record["message"]
        assert "VIBE_VAR_WHO" in record["message"]


def test_a_missing_var_and_secret_are_reported_together(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As vibecheck's linear-mcp.yaml: a var in the prompt, a secret in the mcp_server."""
    _make_templated_suite(pytester)
    monkeypatch.delenv("VIBE_SECRET_TOKEN", raising=False)
    monkeypatch.delenv("VIBE_VAR_WHO", raising=False)
    result = pytester.runpytest(*BASE_ARGS)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*ERROR*2 template values are missing: var 'who' (*VIBE_VAR_WHO*); secret 'token' (*_TOKEN)"]
    )


def test_missing_secret_errors(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _make_templated_suite(pytester)
    monkeypatch.delenv("VIBE_SECRET_TOKEN", raising=False)
    result = pytester.runpytest(*BASE_ARGS, "--vibe-var", "who=World")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*ERROR*set the environment variable VIBE_SECRET_TOKEN*"])


@XDIST_MODES
def test_an_eval_whose_value_is_missing_counts_against_the_score(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    """vibecheck fails an evaluation whose variable or secret has no value. Skipped, it would
    leave the score: a gate of 100 passed with one of two evals never asked."""
    pytester.makepyfile(echo_templates=ECHO)
    pytester.makefile(
        ".eval.yaml",
        mixed=textwrap.dedent(
            """            metadata: {name: mixed, model: m}
            configurations:
              echo: {python: "echo_templates:answer"}
            score: {formula: success_pct, min: 100}
            evals:
              - name: plain
                prompt: say hi
                checks: [{match: "*hi*"}]
              - name: project
                prompt: "about {{var('project_name')}}"
                checks: [{match: "*about*"}]
            """
        ),
    )
    monkeypatch.delenv("VIBE_VAR_PROJECT_NAME", raising=False)
    result = pytester.runpytest(*BASE_ARGS, *xdist, "--vibe-results", "results.json")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines_random(
        ["Success Rate: 50.0% (1/2)", "Gate: FAILED: score 50.00 is below min 100*"]
    )
    (run,) = json.loads((pytester.path / "results.json").read_text())["runs"]
    assert run["score"] == 50.0


def test_values_from_env_and_ini(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """ini ``vibe_vars`` is the fallback, the environment beats it, ``--vibe-var`` beats both."""
    pytester.makepyfile(echo_templates=ECHO)
    pytester.makeini("[pytest]\nvibe_vars =\n    who=Ini\n    where=IniPlace\n")
    pytester.makefile(
        ".eval.yaml",
        where=textwrap.dedent(
            """\
            metadata: {name: w, model: m}
            configurations:
              echo: {python: "echo_templates:answer"}
            evals:
              - name: ini_only
                prompt: "{{var('where')}}"
                checks: [{equals: "echo: IniPlace"}]
              - name: who
                prompt: "{{var('who')}}"
                checks: [{match: "echo: *"}]
            """
        ),
    )
    monkeypatch.delenv("VIBE_VAR_WHERE", raising=False)
    monkeypatch.delenv("VIBE_VAR_WHO", raising=False)
    responses = {}
    for label, env, cli in [("ini", None, None), ("env", "Env", None), ("cli", "Env", "Cli")]:
        if env is None:
            monkeypatch.delenv("VIBE_VAR_WHO", raising=False)
        else:
            monkeypatch.setenv("VIBE_VAR_WHO", env)
        args = [*BASE_ARGS, "--vibe-results", f"{label}.json"]
        if cli:
            args += ["--vibe-var", f"who={cli}"]
        result = pytester.runpytest(*args)
        result.assert_outcomes(passed=2)
        (run,) = json.loads((pytester.path / f"{label}.json").read_text())["runs"]
        responses[label] = {record["name"]: record["response"] for record in run["evals"]}
    assert responses["ini"] == {"ini_only": "echo: IniPlace", "who": "echo: Ini"}
    assert responses["env"]["who"] == "echo: Env"
    assert responses["cli"]["who"] == "echo: Cli"


def test_bad_vibe_var_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*BASE_ARGS, "--vibe-var", "novalue")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--vibe-var: expected NAME=VALUE, got 'novalue'" in result.stderr.str()


TOOL_APP = """
def answer(prompt, context=None):
    word = prompt.split()[-1]
    return {"response": '{"word": "' + word + '", "tags": ["' + word + '"]}',
            "tool_calls": [{"tool": "lookup_" + word, "args": {"q": word}}]}
"""


@XDIST_MODES
def test_templates_inside_lists_and_mappings_of_checks_are_filled(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """``{{var()}}`` in a check's list or mapping (tool args, tool_sequence, a JSON value) is filled
    like any other: compared as written, ``max: 0`` with args passed though the tool was called so."""
    pytester.makepyfile(tool_templates=TOOL_APP)
    pytester.makefile(
        ".eval.yaml",
        tools=textwrap.dedent(
            """\
            metadata: {name: tools, model: m}
            configurations:
              app: {python: "tool_templates:answer"}
            evals:
              - name: never-with-that-word
                prompt: word cat
                checks: [{tool_called: {name: "lookup_*", args: {q: "{{var('w')}}"}, min: 0, max: 0}}]
              - name: sequence
                prompt: word cat
                checks: [{tool_sequence: ["lookup_{{var('w')}}"]}]
              - name: json-list
                prompt: word cat
                checks: [{json: {path: tags, equals: ["{{var('w')}}"]}}]
              - name: by-row
                rows: [{id: a, w: cat}]
                prompt: "word {{row.w}}"
                checks: [{tool_called: {name: "lookup_*", args: {q: "{{row.w}}"}}}]
            """
        ),
    )
    result = pytester.runpytest(*BASE_ARGS, *xdist, "--vibe-var", "w=cat", "--vibe-results", "r.json")
    result.assert_outcomes(passed=3, failed=1)
    (run,) = json.loads((pytester.path / "r.json").read_text())["runs"]
    outcomes = {record["name"]: record["outcome"] for record in run["evals"]}
    assert outcomes == {
        "never-with-that-word": "failed",
        "sequence": "passed",
        "json-list": "passed",
        "by-row[a]": "passed",
    }, outcomes
