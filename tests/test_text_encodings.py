"""Text as people write it, end to end: files saved on Windows (a byte-order mark, CRLF line ends)
load as UTF-8, files in another encoding are refused naming it, what a run reads reaches the agent as
it was meant, what an agent prints is read as UTF-8, and control characters in answers leave the
JUnit XML, the results and the HTML report whole."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from chat_server import ChatServer
from helpers import (
    PYTHON,
    XDIST_MODES,
    c_locale,
    evals_by_nodeid,
    load_json,
    python_suite,
    run,
    run_of,
    write,
)
from test_workspace_evals import make_config_dir

from pytest_vibeeval.text_input import NotUtf8, decode_text

ECHO = "def answer(prompt):\n    return 'echo: ' + prompt\n"
BOM = b"\xef\xbb\xbf"


def windows(path: Path, text: str) -> Path:
    """``path`` as a Windows editor saves ``text``: UTF-8 with a byte-order mark, CRLF line ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(BOM + text.replace("\n", "\r\n").encode())
    return path


@XDIST_MODES
def test_files_saved_on_windows_load_as_their_text(pytester: pytest.Pytester, xdist: list[str]) -> None:
    windows(pytester.path / "cases.csv", 'id,q\none,"two\nlines"\n')
    # JSON strings may hold U+2028 and U+0085, which Python's splitlines() takes for line ends
    windows(pytester.path / "cases.jsonl", '{"id": "sep", "q": "a\u2028b\x85c"}\n')
    windows(pytester.path / "schema.json", '{"type": "string"}\n')
    python_suite(
        pytester.path / "windows.eval.yaml",
        [
            '{name: csv, dataset: cases.csv, prompt: "{{row.q}}", checks: [{equals: "echo: {{row.q}}"}]}',
            '{name: jsonl, dataset: cases.jsonl, prompt: "{{row.q}}", checks: [{contains: "{{row.q}}"}]}',
            '{name: schema, prompt: "x", checks: [{not_match: "x"}, {or: [{json_schema: schema.json}, '
            "{contains: echo}]}]}",
        ],
        app=ECHO,
    )
    path = pytester.path / "windows.eval.yaml"
    windows(path, path.read_text(encoding="utf-8"))
    # a suite that a vibe_patterns glob matches is one when it has `evals:`, here its first key
    write(pytester.path / "pytest.ini", "[pytest]\nvibe_patterns = first/*.yaml\n")
    windows(
        pytester.path / "first" / "suite.yaml",
        "evals: [{name: a, prompt: x, checks: [{contains: x}]}]\nmetadata: {name: first, model: m}\n"
        'configurations: {app: {python: "first_app:answer"}}\n',
    )
    write(pytester.path / "first" / "first_app.py", ECHO)
    out = pytester.path / "r.json"
    result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(passed=4)
    responses = {r["name"]: r["response"] for r in run_of(load_json(out), "app", "windows")["evals"]}
    assert responses == {
        "csv[one]": "echo: two\nlines",  # line ends as \n, as in a YAML prompt
        "jsonl[sep]": "echo: a\u2028b\x85c",
        "schema": "echo: x",
    }


UTF16_HINT = (
    'save the file as UTF-8: an editor\'s "Save with encoding", or in PowerShell `Set-Content -Encoding '
    "utf8` (`>` and `Out-File` write UTF-16 in Windows PowerShell)"
)
HALF = "is half of a UTF-16 surrogate pair, not a character"
UTF8_HINT = 'save the file as UTF-8 (an editor\'s "Save with encoding"); it may be Latin-1 or Windows-1252'


@XDIST_MODES
def test_files_in_another_encoding_are_refused_naming_it(pytester: pytest.Pytester, xdist: list[str]) -> None:
    good = python_suite(pytester.path / "good.eval.yaml", ['{name: a, prompt: "é", checks: [{contains: É}]}'])
    text = good.read_text(encoding="utf-8")
    write(pytester.path / "app.py", ECHO)
    (pytester.path / "powershell.eval.yaml").write_bytes(text.encode("utf-16"))  # what `>` writes
    (pytester.path / "nobom.eval.yaml").write_bytes(text.encode("utf-16-be"))
    (pytester.path / "latin1.csv").write_bytes("id,q\none,1\ntwo,café\n".encode("latin-1"))
    (pytester.path / "latin1.json").write_bytes('{"description": "café"}'.encode("latin-1"))
    # saved with a byte-order mark, which the line and byte of the error count as the file's
    (pytester.path / "bom.csv").write_bytes(BOM + "country,capital\nÇote,Paris\n".encode("latin-1"))
    (pytester.path / "bom.eval.yaml").write_bytes(BOM + text.encode("latin-1"))
    accent = BOM + text[: text.index("é")].encode()  # the file up to its first byte that is not UTF-8
    accent_line = accent.count(b"\n") + 1
    python_suite(
        pytester.path / "rows.eval.yaml",
        ["{name: r, dataset: latin1.csv, prompt: x, checks: [{contains: x}]}"],
    )
    python_suite(
        pytester.path / "bomrows.eval.yaml",
        ["{name: r, dataset: bom.csv, prompt: x, checks: [{contains: x}]}"],
    )
    python_suite(
        pytester.path / "schema.eval.yaml", ["{name: s, prompt: x, checks: [{json_schema: latin1.json}]}"]
    )
    write(pytester.path / "tab.eval.yaml", text.replace("evals:\n  - ", "evals:\n\t- "))
    # JSON escapes half of a character (a string cut inside an emoji by a JavaScript tool)
    write(pytester.path / "cut.jsonl", '{"id": "a", "q": "x"}\n{"id": "b", "q": "cut \\ud83d"}\n')
    python_suite(
        pytester.path / "cut.eval.yaml", ["{name: c, dataset: cut.jsonl, prompt: x, checks: [{contains: x}]}"]
    )
    write(
        pytester.path / "cfg" / "cli-config.json",
        '{"configurations": {"a": {"name": "\\ude00", "cli": "x"}}}',
    )
    write(
        pytester.path / "cfg" / "s.eval.yaml",
        "metadata: {name: s, model: m}\nevals: [{prompt: x, checks: [{contains: x}]}]\n",
    )
    result = run(pytester, xdist=xdist)
    result.assert_outcomes(passed=1, errors=9)
    result.stdout.fnmatch_lines_random(
        [
            "powershell.eval.yaml:1: the file is UTF-16 (little-endian), with a byte-order mark, not UTF-8",
            "nobom.eval.yaml:1: the file is UTF-16 (big-endian), without a byte-order mark, not UTF-8",
            f"    hint: {UTF16_HINT}",
            "latin1.csv:3: not UTF-8 text: invalid continuation byte at byte 18",
            "bom.csv:2: not UTF-8 text: invalid continuation byte at byte 19",
            f"bom.eval.yaml:{accent_line}: not UTF-8 text: invalid continuation byte at byte {len(accent)}",
            f"    hint: {UTF8_HINT}",
            "schema.eval.yaml:5: evals[0].checks[0].json_schema: the JSON Schema 'latin1.json', line 1: "
            f"not UTF-8 text: invalid continuation byte at byte 20; {UTF8_HINT}",
            f"cut.jsonl:2: row 2: invalid JSON: \\ud83d {HALF}",
            f"cfg/cli-config.json:1: invalid JSON: \\ude00 {HALF}",
            "    hint: write the character itself, or both halves of its pair (`\\ud83d\\ude00`): *",
            "tab.eval.yaml:5: invalid YAML: *",
            "    hint: the line is indented with a tab: YAML indents with spaces only; replace the tab",
        ]
    )
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("data", "line", "byte"),
    [
        (b"a\nb\n\xff", 3, 4),
        (BOM + b"a\nb\n\xff", 3, 7),
        (BOM + b"a\r\nb\r\xff", 3, 8),
        (BOM + b"\xff", 1, 3),
    ],
)
def test_a_byte_that_is_not_utf8_is_placed_in_the_file(data: bytes, line: int, byte: int) -> None:
    """Its line and byte count from the file's start, a byte-order mark included."""
    with pytest.raises(NotUtf8) as caught:
        decode_text(data)
    assert (caught.value.line, caught.value.message) == (
        line,
        f"not UTF-8 text: invalid start byte at byte {byte}",
    )


# A grade step as a .NET or Java test tool writes its results: JSON with a byte-order mark, JUnit
# XML in the encoding its declaration names.
RESULTS_STEP = """
open("results-dotnet.json", "wb").write(b"\\xef\\xbb\\xbf" + b'[{"taskId": "a", "passed": true}]')
open("junit-java.xml", "wb").write('<?xml version="1.0" encoding="ISO-8859-1"?>\\n<testsuite>'
    '<testcase name="caf\\xe9"/><testcase name="b"><failure/></testcase></testsuite>'.encode("latin-1"))
"""


@XDIST_MODES
def test_a_coding_eval_reads_files_saved_on_windows(pytester: pytest.Pytester, xdist: list[str]) -> None:
    script = write(pytester.path / "steps" / "results_step.py", RESULTS_STEP)
    config = make_config_dir(pytester.path, {"results": {"command": PYTHON, "args": [str(script)]}})
    data = load_json(config / "eval-config.json")
    data["evaluations"]["add"]["gradeSteps"].append("results")
    write(config / "eval-config.json", json.dumps(data))
    windows(pytester.path / "prompts" / "problems" / "add.md", "problem: add\n")
    windows(config.parent / "problems" / "add" / "workspace" / "problem.md", "Make f return a + b.\n")
    windows(pytester.path / "prompts" / "shared" / "evaluation-instructions.md", "Shared: do not cheat.\n")
    out = pytester.path / "r.json"
    args = ("--vibe-config", "oracle", "--vibe-eval", "add", "--vibe-keep-workspaces")
    result = run(pytester, *args, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(out))["evals/config/eval-config.json::add[oracle]"]
    prompt = Path(record["steps"][0]["cwd"], "prompt.md").read_bytes()
    assert prompt == b"problem: add\n\nMake f return a + b.\n\nShared: do not cheat.\n"
    assert (record["subtasks_passed"], record["subtasks_total"], record["message"]) == (2, 3, None)


# Answers as a macOS tool or a Windows program may write them: decomposed accents, CRLF line ends.
DECOMPOSED = """
def answer(prompt):
    return "Cafe\\u0301\\r\\ncre\\u0300me"
"""


@XDIST_MODES
def test_checks_see_an_answer_as_it_looks(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """Checks written in composed text with line feeds pass on an answer that looks the same in
    decomposed Unicode (NFD) with CRLF line ends, from an HTTP model and a Python callable; a regex
    that spells the answer's CR or combining accent as an escape is found in it too, and forbids."""
    checks = '[{equals: "Café\\ncrème"}, {contains: "é\\nc"}, {match: "café*"}, {regex: "é\\ncrème$"}]'
    escapes = "[{regex: 'e\\u0301\\r\\n'}, {match: '(?s)^cafe\\u0301.*'}, {not_match: '(?s).*\\r.*'}]"
    python_suite(
        pytester.path / "app.eval.yaml",
        [
            f"{{name: accents, prompt: x, checks: {checks}}}",
            f"{{name: escapes, prompt: x, checks: {escapes}}}",
        ],
        app=DECOMPOSED,
    )
    with ChatServer() as server:
        prompt = '"ANSWER: Cafe\\u0301 cre\\u0300me"'
        write(
            pytester.path / "http.eval.yaml",
            f"""
            metadata: {{name: http, model: ok}}
            configurations: {{model: {{http: {{base_url: "{server.url}"}}}}}}
            evals:
              - {{name: accents, prompt: {prompt}, checks: [{{equals: Café crème}}, {{match: "*é c*"}}]}}
            """,
        )
        out = pytester.path / "r.json"
        result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(passed=2, failed=1)
    records = evals_by_nodeid(load_json(out))
    verdicts = [check["passed"] for check in records["app.eval.yaml::escapes[app]"]["checks"]]
    assert verdicts == [True, True, False]  # not_match: the answer as it came holds a CR
    responses = {r["nodeid"]: r["response"] for r in records.values()}
    assert responses == {  # recorded as the model answered
        "app.eval.yaml::accents[app]": "Cafe\u0301\r\ncre\u0300me",
        "app.eval.yaml::escapes[app]": "Cafe\u0301\r\ncre\u0300me",
        "http.eval.yaml::accents[model]": "Cafe\u0301 cre\u0300me",
    }


# Prints bytes as the configuration's first argument names them.
PRINTER = """
import sys
sys.stdin.read()
sys.stdout.buffer.write({
    "windows": b"\\xef\\xbb\\xbf42\\r\\n",  # a byte-order mark, CRLF
    "latin1": "Réponse : 42 €".encode("cp1252"),
    "controls": bytes(range(32)) + b"\\x7f\\x1b[31m42\\x1b[0m",
    "utf16": "42\\r\\n".encode("utf-16"),  # a byte-order mark, little-endian
    "utf16be": "42\\n".encode("utf-16-be"),  # none
    "jsonl": '{"type": "result", "text": "42"}\\n'.encode("utf-16"),
    # each preset parser's final event, in UTF-16 with a byte-order mark and without
    "claude-code": '{"type": "result", "subtype": "success", "result": "42"}\\n'.encode("utf-16"),
    "codex": '{"type": "turn.completed", "usage": {}}\\n'.encode("utf-16-le"),
    "gemini": '{"type": "init"}\\n{"type": "result", "stats": {}}\\n'.encode("utf-16-be"),
}[sys.argv[1]])
"""


@XDIST_MODES
def test_what_an_agent_prints_is_read_as_utf8_and_every_report_stays_whole(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    script = str(write(pytester.path / "printer.py", PRINTER))
    configurations = {
        kind: {"cli": PYTHON, "args": [script, kind]} for kind in ("windows", "latin1", "controls")
    }
    write(
        pytester.path / "printed.eval.yaml",
        json.dumps(
            {
                "metadata": {"name": "printed", "model": "m"},
                "configurations": configurations,
                "evals": [{"name": "answer", "prompt": "x", "checks": [{"equals": "42"}]}],
            }
        ),
    )
    out, junit, html = (pytester.path / name for name in ("r.json", "junit.xml", "r.html"))
    args = ("--vibe-results", str(out), "--junitxml", str(junit), "--vibe-html", str(html))
    result = run(pytester, *args, xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=1, failed=2)
    responses = {r["configuration"]: r["evals"][0]["response"] for r in load_json(out)["runs"]}
    assert responses == {
        "windows": "42\n",  # no byte-order mark: `equals: "42"` passes
        "latin1": "R\ufffdponse : 42 \ufffd",  # what is not UTF-8 is U+FFFD, the eval kept
        "controls": "".join(map(chr, range(32))).replace("\r", "\n") + "\x7f\x1b[31m42\x1b[0m",
    }
    ET.parse(junit)  # control characters leave the JUnit XML well-formed
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", html.read_text(encoding="utf-8"))
    assert not re.search("[\x00\x07\x1b]", result.stdout.str() + result.stderr.str())


@XDIST_MODES
def test_row_ids_the_c_locale_cannot_hold_are_a_collection_error_saying_what_to_do(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    """pytest puts each item's node id in the environment; in the C locale without UTF-8 mode a row
    id such as café errored every phase of its item in pytest's own code."""
    c_locale(monkeypatch)
    write(pytester.path / "cities.csv", "id,q\nparis,x\ncafé,x\n")
    python_suite(
        pytester.path / "rows.eval.yaml",
        ["{name: r, dataset: cities.csv, prompt: x, checks: [{contains: x}]}"],
        app=ECHO,
    )
    python_suite(pytester.path / "ascii.eval.yaml", ["{name: a, prompt: é, checks: [{contains: é}]}"])
    result = run(pytester, xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "rows.eval.yaml: the item rows.eval.yaml::r[caf\\xe9][app] cannot run in this Python: pytest "
            "puts each item's node id in the environment, which it encodes as ascii (the C or POSIX locale "
            "without Python's UTF-8 mode), and '\\xe9' is not in it",
            "    hint: run pytest with PYTHONUTF8=1, or in a UTF-8 locale (LC_ALL=C.UTF-8)",
        ]
    )
    assert "Traceback" not in result.stdout.str()


@XDIST_MODES
def test_an_agent_that_prints_utf16_errors_naming_it(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """UTF-16 read as UTF-8 is an answer of NULs and U+FFFD that fails its checks for no visible
    reason, and JSON lines that the preset parsers do not find; it is refused as an input file in
    UTF-16 is, naming the encoding, whatever reads the output."""
    script = str(write(pytester.path / "printer.py", PRINTER))
    jsonl = {"format": "jsonl", "response": "text", "where": {"type": "result"}}
    configurations = {kind: {"cli": PYTHON, "args": [script, kind]} for kind in ("utf16", "utf16be")}
    configurations["jsonl"] = {"cli": PYTHON, "args": [script, "jsonl"], "output": jsonl}
    for parser in ("claude-code", "codex", "gemini"):
        configurations[parser] = {"cli": PYTHON, "args": [script, parser], "output": {"parser": parser}}
    write(
        pytester.path / "wide.eval.yaml",
        json.dumps(
            {
                "metadata": {"name": "wide", "model": "m"},
                "configurations": configurations,
                "evals": [{"name": "answer", "prompt": "x", "checks": [{"equals": "42"}]}],
            }
        ),
    )
    out = pytester.path / "r.json"
    result = run(pytester, "--vibe-results", str(out), xdist=xdist, subprocess=True)
    result.assert_outcomes(failed=6)
    messages = {r["configuration"]: r["evals"][0]["message"] for r in load_json(out)["runs"]}
    said = "the agent's output is UTF-16 ({}-endian), {} a byte-order mark, not UTF-8; make it print UTF-8"
    assert messages == {
        "utf16": said.format("little", "with"),
        "utf16be": said.format("big", "without"),
        "jsonl": said.format("little", "with"),
        "claude-code": said.format("little", "with"),
        "codex": said.format("little", "without"),
        "gemini": said.format("big", "without"),
    }
    assert said.format("big", "without") in result.stdout.str()


# Characters str.splitlines() breaks a line at, though the checks (and a terminal) do not: each is
# one character in its line, shown escaped; only \n (and \r\n, as the checks see it) ends a line.
SPLITLINES_ONLY = "first\x0bsecond\x0cthird\x1cfourth\x1dfifth\x1esixth\x85seventh\u2028eighth\u2029ninth"
LINE_APP = f"def answer(prompt, context=None):\n    return {SPLITLINES_ONLY + chr(13) + chr(10) + 'last'!r}\n"


@XDIST_MODES
def test_a_failed_answer_is_shown_in_the_lines_the_checks_see(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    python_suite(
        pytester.path / "lines.eval.yaml",
        [
            "{name: one, prompt: x, checks: [{equals: nope}]}",
            "{name: talk, turns: [{prompt: x, checks: [{equals: nope}]}]}",
        ],
        app=LINE_APP,
    )
    out, html = pytester.path / "r.json", pytester.path / "r.html"
    result = run(pytester, "--vibe-results", str(out), "--vibe-html", str(html), xdist=xdist)
    result.assert_outcomes(failed=2)
    messages = {r["name"]: r["message"] for r in load_json(out)["runs"][0]["evals"]}
    assert messages["one"].endswith(f"\nresponse:\n  {SPLITLINES_ONLY}\n  last"), messages["one"]
    assert messages["talk"].endswith(f"\n  response:\n    {SPLITLINES_ONLY}\n    last"), messages["talk"]
    shown = r"first\x0bsecond\x0cthird\x1cfourth\x1dfifth\x1esixth\x85seventh\u2028eighth\u2029ninth"
    lines = result.stdout.lines
    assert f"  {shown}" in lines and f"    {shown}" in lines, result.stdout.str()
    assert f"  assistant: {shown}\n  assistant: last" in html.read_text(encoding="utf-8")


ERROR_TEXT = "broke: " + SPLITLINES_ONLY + "\nthe next line"
RAISING_APP = f"def answer(prompt, context=None):\n    raise RuntimeError({ERROR_TEXT!r})\n"


@XDIST_MODES
def test_an_error_headline_is_its_whole_first_line(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """The first line of an error (the Run Summary's, a conversation's headline) ends at ``\\n``
    alone: ``str.splitlines`` cut it at the first of the other line breaks it knows."""
    python_suite(
        pytester.path / "lines.eval.yaml",
        [
            "{name: one, prompt: x, checks: [{equals: nope}]}",
            "{name: talk, turns: [{prompt: x, checks: [{equals: nope}]}]}",
        ],
        app=RAISING_APP,
    )
    out = pytester.path / "r.json"
    result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(failed=2)
    raised = "app:answer raised RuntimeError: broke: "
    talk = next(r["message"] for r in load_json(out)["runs"][0]["evals"] if r["name"] == "talk")
    assert talk.startswith(f"turn 1/1: {raised}{SPLITLINES_ONLY}\n"), talk
    assert "\n    the next line\n" in talk, talk
    shown = r"first\x0bsecond\x0cthird\x1cfourth\x1dfifth\x1esixth\x85seventh\u2028eighth\u2029ninth"
    lines = result.stdout.lines
    assert f"  ERROR  one: {raised}{shown}" in lines, result.stdout.str()
    assert f"  ERROR  talk: turn 1/1: {raised}{shown}" in lines, result.stdout.str()


# Line ends and the breaks only str.splitlines knows (text_lines keeps these in their line).
TRICKY_LINES = [
    "", "\n", "\r\n", "\r", "\n\n", "\r\r\n", "\n\r", "a", "a\n", "a\r", "a\rb", "a\r\nb", "a\n\rb",
    "a\r\rb", " \r\n x", "\ufeffa\nb", "a\u2028b\nc", "a\x85b", "a\u2029b\rc", "a\x0bb\x0cc\x1cd\x1de\x1ef",
]  # fmt: skip


@pytest.mark.parametrize("text", TRICKY_LINES)
def test_first_line_is_the_first_of_text_lines(text: str) -> None:
    from pytest_vibeeval.text_input import first_line, text_lines

    assert first_line(text) == text_lines(text)[0]


def test_first_line_agrees_with_text_lines_on_every_short_text() -> None:
    """Every text of up to five characters drawn from a letter, both line ends and two breaks
    only ``str.splitlines`` knows."""
    from itertools import product

    from pytest_vibeeval.text_input import first_line, text_lines

    texts = ["".join(chars) for size in range(6) for chars in product("a\n\r\u2028\x85", repeat=size)]
    differ = [text for text in texts if first_line(text) != text_lines(text)[0]]
    assert differ == []


def test_the_first_line_of_a_long_text_is_taken_without_copying_the_rest() -> None:
    """20 MB of lines ended with ``\\r\\n``: splitting them (after turning each ``\\r\\n`` into
    ``\\n``) allocated the text again and a list of millions of lines; the first line alone needs
    no more than itself."""
    import tracemalloc

    from pytest_vibeeval.text_input import first_line

    text = "the first line\r\n" + "x\r\n" * 7_000_000
    tracemalloc.start()
    try:
        line = first_line(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert line == "the first line"
    assert peak < 64 * 1024, f"{peak} bytes allocated to take the first line"
