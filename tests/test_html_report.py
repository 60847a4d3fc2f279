"""The HTML report: unit tests on render_html, and the bundled examples' report in a real headless
chromium (Playwright driving the system's /usr/bin/chromium; skipped, saying why, without them).

``VIBEEVAL_UPDATE_SCREENSHOT=1`` makes the browser test also write the README's docs/html-report.png.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from helpers import python_suite
from helpers import run as run_pytest
from shared_runs import SHARED_RUN_TIMEOUT, examples_run

from pytest_vibeeval.report.html import render_html, write_html
from pytest_vibeeval.report.html_text import clean
from pytest_vibeeval.results import (
    BaselineRecord,
    CheckRecord,
    EvalRecord,
    GateRecord,
    ResultsFile,
    RunRecord,
    StepRecord,
    TurnRecord,
)

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SCREENSHOT = REPO / "docs" / "html-report.png"
VOID = {"meta", "link", "br", "hr", "img", "input", "wbr", "col", "area", "base", "source"}
PAYLOAD = "<script>alert('x')</script>\"'><img src=x onerror=alert(1)>&amp;"


# -- building results ------------------------------------------------------------------------------


def record(name: str, outcome: str = "passed", **extra: Any) -> EvalRecord:
    return EvalRecord(name=name, nodeid=f"quiz.eval.yaml::{name}", outcome=outcome, **extra)  # type: ignore[arg-type]


def run(
    configuration: str,
    evals: Sequence[EvalRecord],
    *,
    source: str = "evals/quiz.eval.yaml",
    suite: str = "quiz",
    score: float | None = 100.0,
    **extra: Any,
) -> RunRecord:
    ran = [r for r in evals if r.outcome != "skipped"]
    passed = sum(1 for r in ran if r.outcome == "passed")
    metrics = {
        "success_pct": 100 * passed / len(ran) if ran else None,
        "passed": passed,
        "total": len(ran),
        "total_cost": 0.0123,
        "avg_latency": 0.25,
        "skipped": len(evals) - len(ran),
    }
    fields: dict[str, Any] = {"score_formula": "success_pct", "score_error": None, "variables": {}}
    fields.update(extra)
    return RunRecord(
        suite=suite, source=source, configuration=configuration, score=score, metrics=metrics,
        evals=list(evals), **fields,
    )  # fmt: skip


def results(*runs: RunRecord, **extra: Any) -> ResultsFile:
    times = {"started_at": "2025-01-02T03:04:05+00:00", "finished_at": "2025-01-02T03:05:00+00:00"}
    return ResultsFile(runs=list(runs), **{**times, **extra})


def step(log: Path | None, exit_code: int | None = 1, phase: str = "grade") -> StepRecord:
    return StepRecord(
        phase=phase,  # type: ignore[arg-type]
        name="test:public", argv=["make", "test"], cwd="/work", exit_code=exit_code, duration=0.5,
        timed_out=False, log=None if log is None else str(log),
    )  # fmt: skip


# -- reading the page ------------------------------------------------------------------------------


class Page(HTMLParser):
    """The page's elements, checked to nest properly, with the grids' cells."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.grids: dict[str, list[dict[str, str | None]]] = {}
        self._grid: str | None = None
        self.feed(html)
        self.close()
        if self.stack:
            self.problems.append(f"unclosed: {self.stack}")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.tags.append((tag, values))
        if tag == "table" and "vibe-grid" in (values.get("class") or "").split():
            self._grid = values.get("id") or "?"
            self.grids[self._grid] = []
        if tag == "td" and self._grid is not None and "data-outcome" in values:
            self.grids[self._grid].append(values)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._grid = None
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


def parse(html: str) -> Page:
    page = Page(html)
    assert page.problems == []
    return page


def grid_cells(results: ResultsFile) -> dict[str, int]:
    """Cells each suite's grid should have: its evals (by name) × its configurations."""
    by_source: dict[str, list[RunRecord]] = {}
    for r in results.runs:
        by_source.setdefault(r.source, []).append(r)
    return {
        source: len({e.name for r in runs for e in r.evals}) * len(runs) for source, runs in by_source.items()
    }


# -- unit tests ------------------------------------------------------------------------------------


def test_an_empty_results_file_renders_a_page_saying_so() -> None:
    html = render_html(results())
    page = parse(html)
    assert html.startswith("<!DOCTYPE html>")
    assert 'id="no-runs"' in html and "2025-01-02T03:04:05+00:00" in html
    assert page.grids == {} and 'id="interrupted"' not in html


def test_the_header_shows_interruption_and_load_errors() -> None:
    html = render_html(results(interrupted=True, load_errors=["bad.eval.yaml: line 3: <oops>"]))
    parse(html)
    assert 'id="interrupted"' in html and 'id="load-errors"' in html
    assert "bad.eval.yaml: line 3: &lt;oops&gt;" in html


def test_a_run_stopped_early_gets_a_banner_as_an_interrupted_one_does() -> None:
    html = render_html(
        results(run("app", [record("a")]), stopped_early="stopped after the first failure (-x)")
    )
    parse(html)
    assert (
        '<p class="banner warn" id="stopped-early">The session stopped after the first failure (-x): '
        "some evals did not run, so the scores are over those that did.</p>"
    ) in html
    assert 'id="interrupted"' not in html
    # a session that only failed to load a suite file says so in its own banner, once
    not_loaded = results(load_errors=["bad.eval.yaml: oops"], stopped_early="1 suite file(s) failed to load")
    html = render_html(not_loaded)
    assert 'id="load-errors"' in html and 'id="stopped-early"' not in html


def test_the_header_counts_xfail_evals_with_their_outcome() -> None:
    """ "6 error (20 expected: xfail)" read as if the errors were expected: each outcome says how
    many of its own were marked xfail."""
    evals = [
        *(record(f"p{i}") for i in range(3)),
        *(record(f"x{i}", "failed", xfail=True) for i in range(20)),
        record("f", "failed"),
        *(record(f"e{i}", "error") for i in range(6)),
        record("xe", "error", xfail=True),
    ]
    html = render_html(results(run("app", evals)))
    assert (
        "3 passed · 21 failed (20 of them xfail: expected to fail) · 7 error (1 of them xfail: "
        "expected to fail)</p>"
    ) in html
    assert "expected: xfail)</p>" not in html


def test_everything_from_the_results_is_escaped() -> None:
    failing = record(
        PAYLOAD, "failed", message=PAYLOAD, response=PAYLOAD,
        checks=[CheckRecord(type="match", passed=False, message=PAYLOAD)],
    )  # fmt: skip
    gate = GateRecord(min=50, max=None, passed=False, message=PAYLOAD)
    runs = [
        run(PAYLOAD, [failing], source=PAYLOAD, suite=PAYLOAD, configuration_name=PAYLOAD, notes=[PAYLOAD],
            score=None, score_error=PAYLOAD, score_formula=PAYLOAD, gate=gate),
    ]  # fmt: skip
    html = render_html(results(*runs, load_errors=[PAYLOAD], started_at=PAYLOAD))
    page = parse(html)
    assert "alert('x')</script>" not in html and "<img" not in html and "onerror=alert(1)>" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "&amp;amp;" in html  # an entity in the text is shown as typed, not decoded
    assert len(page.all("script")) == 1  # the report's own
    assert {tag for tag, _ in page.tags} <= {
        "html", "head", "meta", "link", "title", "style", "body", "header", "h1", "h2", "h3", "p", "time",
        "div", "pre", "b", "section", "code", "table", "thead", "tbody", "tr", "th", "td", "span", "a",
        "details", "summary", "ul", "li", "script",
    }  # fmt: skip


def test_control_characters_and_lone_surrogates_do_not_break_the_page(tmp_path: Path) -> None:
    bad = record("odd", "failed", message="a\x00b\x1bc\ud800d", response="tab\tok")
    path = tmp_path / "report.html"
    write_html(results(run("c", [bad])), path)
    text = path.read_text(encoding="utf-8")
    assert "\x00" not in text and "\x1b" not in text and "tab\tok" in text
    assert r"a\x00b\x1bc\ud800d" in text  # shown escaped, as the terminal shows them


# Characters that reorder text (Trojan source): the page shows them escaped, as the terminal does.
BIDI = "safe\u202e\u2066txt.exe\u2069\u202c\u200f\u2028end"
INVISIBLE = re.compile("[\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def test_bidi_controls_from_answers_suites_and_configurations_are_shown_escaped(tmp_path: Path) -> None:
    log = tmp_path / "02-grade-test.stdout"
    log.write_text(f"log {BIDI}\n", encoding="utf-8")
    turns = [TurnRecord(turn=1, outcome="failed", message=BIDI, prompt=BIDI, response=BIDI)]
    failing = record(
        BIDI, "failed", message=BIDI, response=BIDI, steps=[step(log)],
        checks=[CheckRecord(type="match", passed=False, message=BIDI)],
    )  # fmt: skip
    talk = record(f"talk {BIDI}", "failed", message=BIDI, turns=turns)
    base = BaselineRecord(baseline=BIDI, score=90.0, delta=-40.0, label="regression", accepted=False,
                          reason=BIDI, pass_to_fail=[BIDI])  # fmt: skip
    runs = [
        run(BIDI, [failing, talk], source=BIDI, suite=BIDI, configuration_name=BIDI, notes=[BIDI],
            score=None, score_error=BIDI, score_formula=BIDI, baseline=base,
            gate=GateRecord(min=50, max=None, passed=False, message=BIDI)),
    ]  # fmt: skip
    html = render_html(results(*runs, load_errors=[BIDI], started_at=BIDI))
    parse(html)
    assert not INVISIBLE.search(html), INVISIBLE.findall(html)
    shown = r"safe\u202e\u2066txt.exe\u2069\u202c\u200f\u2028end"
    assert html.count(shown) >= 20, html.count(shown)  # in each place the page shows it
    assert f"log {shown}" in html


def test_joiners_and_non_breaking_spaces_of_real_text_are_shown_as_they_are() -> None:
    # Persian needs the zero-width non-joiner, emoji sequences the joiner, French the no-break space:
    # they reorder nothing, so the page shows them as written, not as \u200c.
    text = (
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 \U0001f468\u200d\U0001f469"
        " prix\u00a0: 5\u00a0\u20ac soft\u00adhyphen"
    )
    html = render_html(results(run("c", [record(text, "failed", message=text, response=text)])))
    assert html.count(text) >= 3, html.count(text)
    assert "\\u200c" not in html and "\\xa0" not in html


def test_a_lone_carriage_return_ends_a_line_as_it_does_for_the_checks() -> None:
    # Progress output ("10%\r20%\r") in a response or a step log: lines, as a browser showed them.
    assert clean("10%\r20%\r\ndone") == "10%\n20%\ndone"
    assert clean("a\rb\x1b") == "a\nb\\x1b"


def test_long_texts_are_cut_with_a_note() -> None:
    huge = "R" * 2_000_000
    bad = record("big", "failed", message="M" * 100_000, response=huge)
    html = render_html(results(run("c", [bad])))
    assert len(html) < 60_000
    assert "more characters not shown" in html and "RRRR" in html


def test_many_failures_are_counted_beyond_those_shown() -> None:
    evals = [record(f"e{i}", "failed", message=f"why {i}") for i in range(130)]
    html = render_html(results(run("c", evals, score=0.0)))
    page = parse(html)
    assert len(page.all("details")) == 100 and "… and 30 more not shown." in html
    assert len(page.grids["grid-0"]) == 130


def bars(html: str) -> list[tuple[float, float]]:
    """(left, width) of each bar of the score charts, in percent."""
    return [
        (float(a), float(b))
        for a, b in re.findall(r'class="bar \w+" style="left:([-\d.]+)%;width:([-\d.]+)%"', html)
    ]


def test_null_negative_huge_and_non_finite_scores_are_charted_sanely() -> None:
    runs = [
        run("none", [record("a")], score=None, score_error="division by zero"),
        run("negative", [record("a")], score=-50.0),
        run("huge", [record("a")], score=1e15),
        run("nan", [record("a")], score=float("nan")),
        run("small", [record("a")], score=2.5),
    ]
    html = render_html(results(*runs))
    parse(html)
    drawn = bars(html)
    assert len(drawn) == 3  # null and nan: no bar
    assert all(0 <= left <= 100 and 0 <= width <= 100 and left + width <= 100.001 for left, width in drawn)
    assert "division by zero" in html and html.count(">null<") >= 2
    assert "1.000e+15" in html and "-50.00" in html


def test_scores_up_to_100_use_a_0_to_100_scale() -> None:
    html = render_html(results(run("a", [record("x")], score=100.0), run("b", [record("x")], score=25.0)))
    assert bars(html) == [(0.0, 100.0), (0.0, 25.0)]


def details_of(html: str) -> list[str]:
    return re.findall(r"<details.*?</details>", html, flags=re.S)


def test_a_failed_step_shows_the_tail_of_its_output(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    stdout = logs / "02-grade-test.stdout"
    stdout.write_text("".join(f"line {i}\n" for i in range(1, 101)))
    (logs / "02-grade-test.stderr").write_text("<boom>\n")
    steps = [step(logs / "00-agent.stdout", exit_code=0, phase="agent"), step(stdout)]
    bad = record("e", "failed", message="grade step 'test:public' exited with code 1", steps=steps)
    [block] = details_of(render_html(results(run("c", [bad], score=0.0))))
    assert "line 61\n" in block and "line 100" in block and "line 60\n" not in block
    assert "&lt;boom&gt;" in block and "exit code 1" in block


@pytest.mark.parametrize(
    "make, shown",
    [
        (lambda d: d / "gone.stdout", "no longer exists"),
        (lambda d: d, "is not a regular file"),
        (lambda d: fifo(d / "pipe.stdout"), "is not a regular file"),  # never opened: it would block
        (lambda d: written(d / "bin.stdout", bytes(range(256)) * 40), "looks binary"),
        (lambda d: written(d / "empty.stdout", b""), "no output in"),
        (lambda d: None, "no output file recorded"),
    ],
    ids=["missing", "directory", "fifo", "binary", "empty", "no-log"],
)
def test_unreadable_step_output_is_explained_not_fatal(tmp_path: Path, make: Any, shown: str) -> None:
    bad = record("e", "error", message="grade step failed", steps=[step(make(tmp_path))])
    [block] = details_of(render_html(results(run("c", [bad], score=0.0))))
    assert shown in block


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_output_the_message_already_quotes_is_not_repeated(tmp_path: Path) -> None:
    stderr = tmp_path / "x.stderr"
    stderr.write_text("unique-tail-text\n")
    message = (
        f"grade step 'test:public' exited with code 1\nlast 40 lines of stderr ({stderr}):\nunique-tail-text"
    )
    bad = record("e", "failed", message=message, steps=[step(tmp_path / "x.stdout")])
    (tmp_path / "x.stdout").write_text("")
    [block] = details_of(render_html(results(run("c", [bad], score=0.0))))
    assert block.count("unique-tail-text") == 1 and "quotes the tail" in block


def test_a_failure_shows_its_message_response_and_first_failed_check() -> None:
    bad = record(
        "capital", "failed", xfail=True, message="checks failed:\n  FAIL match", response="I do not know",
        checks=[CheckRecord(type="contains", passed=True, message="ok"),
                CheckRecord(type="match", passed=False, message="pattern '*Paris*' does not match")],
    )  # fmt: skip
    html = render_html(results(run("c", [bad], score=0.0)))
    [block] = details_of(html)
    assert "match: pattern &#x27;*Paris*&#x27; does not match" in block.split("</summary>")[0]
    assert "I do not know" in block and "checks failed:" in block and "xfail" in block
    cell = parse(html).grids["grid-0"][0]
    assert cell["data-outcome"] == "failed" and "data-xfail" in cell


def test_repeats_show_passed_over_runs_and_the_interval() -> None:
    evals = [
        record("a", "passed", repeat=1), record("a", "failed", repeat=2, message="nope"),
        record("a", "passed", repeat=3), record("b", "passed", repeat=1), record("b", "passed", repeat=2),
        record("b", "skipped", repeat=3),
    ]  # fmt: skip
    repeated = run("c", evals, score=80.0, repeats=3, repeat_scores=[100.0, 50.0, 100.0],
                   score_mean=83.33, score_ci95=[11.6, 155.06])  # fmt: skip
    html = render_html(results(repeated))
    cells = parse(html).grids["grid-0"]
    assert [c["data-outcome"] for c in cells] == ["mixed", "passed"]
    assert ">2/3<" in html and ">2/2<" in html
    assert "83.33 ± 71.73 [11.60, 155.06] ×3" in html
    assert "(repeat 2)" in details_of(html)[0]


def test_the_grid_has_one_cell_per_eval_and_configuration_of_each_suite() -> None:
    quiz = [
        run("x", [record("a"), record("b", "failed", message="m")], score=50.0),
        run("y", [record("a"), record("c", "error", message="boom")], score=50.0),
    ]
    other = run("z", [record("p"), record("q", "skipped")], source="evals/other.eval.yaml", suite="other")
    res = results(*quiz, other)
    html = render_html(res)
    page = parse(html)
    assert {g: len(c) for g, c in page.grids.items()} == {"grid-0": 6, "grid-1": 2}
    assert sorted(grid_cells(res).values()) == [2, 6]
    assert [c["data-outcome"] for c in page.grids["grid-0"]] == [
        "passed", "passed", "failed", "absent", "absent", "error"
    ]  # fmt: skip
    links = {a["href"] for a in page.all("a")}
    ids = {d["id"] for d in page.all("details")}
    assert links == {f"#{i}" for i in ids} and len(ids) == 2


def test_baseline_gate_and_configuration_names_are_shown() -> None:
    base = BaselineRecord(baseline="old.json", score=90.0, delta=-40.0, label="regression", accepted=False,
                          reason="score fell")  # fmt: skip
    gate = GateRecord(min=60, max=None, passed=False, message="score 50.00 is below min 60 (by 10.00)")
    runs = [
        run("x", [record("a")], score=50.0, baseline=base, gate=gate, configuration_name="Model X",
            score_preset="rubric", grade="D"),
        run("y", [record("a")], score=None),
    ]  # fmt: skip
    html = render_html(results(*runs))
    parse(html)
    assert "regression Δ -40.00" in html and "(was 90.00)" in html and ">FAILED<" in html
    assert "(Model X)" in html and "50.00 (D)" in html and "score 50.00 is below min 60" in html


def test_a_note_shared_by_configurations_is_listed_once() -> None:
    note = "1 of 2 evals were selected"
    html = render_html(results(run("x", [record("a")], notes=[note]), run("y", [record("a")], notes=[note])))
    assert html.count(note) == 1 and "<b>x, y</b>" in html


def test_the_page_loads_nothing_from_elsewhere(tmp_path: Path) -> None:
    html = render_html(results(run("c", [record("a", "failed", message="see https://example.com")])))
    page = parse(html)
    refs = [v for _, attrs in page.tags for k, v in attrs.items() if k in ("src", "href", "action")]
    assert all(ref is not None and ref.startswith(("#", "data:")) for ref in refs)
    assert "url(" not in html and "@import" not in html


def test_write_html_replaces_the_file_atomically(tmp_path: Path) -> None:
    path = tmp_path / "out" / "report.html"
    res = results(run("c", [record("a")]))
    write_html(results(), path)
    write_html(res, path)
    assert path.read_text(encoding="utf-8") == render_html(res)
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]


# -- in a real browser -----------------------------------------------------------------------------


def browser_problem() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (Debian's chromium package)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (the `test` extra)"
    return None


@pytest.mark.examples_run
@SHARED_RUN_TIMEOUT
def test_the_examples_report_in_a_headless_browser(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    problem = browser_problem()
    if problem:
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    update = os.environ.get("VIBEEVAL_UPDATE_SCREENSHOT") == "1"
    # the bundled examples' serial run, shared with tests/test_examples.py (its step logs stay in
    # the session's temporary folder)
    examples = examples_run(tmp_path_factory, [])
    examples.assert_ok()
    res = ResultsFile.model_validate(examples.results)
    report = tmp_path / "report.html"
    write_html(res, report)
    expected = sum(grid_cells(res).values())
    failures = sum(1 for r in res.runs for e in r.evals if e.outcome in ("failed", "error"))
    assert expected > 0 and failures > 0
    url = report.as_uri()
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url, wait_until="load")
            assert page.locator(".vibe-grid td[data-outcome]").count() == expected
            assert page.locator("details.failure").count() == failures
            first = page.locator("details.failure").first
            assert first.evaluate("d => d.open") is False
            first.locator("summary").click()
            assert first.evaluate("d => d.open") is True
            assert first.locator("pre").first.is_visible()
            # a failed cell links to its failure, and the page's script opens it
            cell = page.locator(".vibe-grid td[data-outcome=failed] a").last
            target = (cell.get_attribute("href") or "").lstrip("#")
            cell.click()
            assert page.locator(f"details#{target}").evaluate("d => d.open") is True
            shot = tmp_path / "html-report.png"
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot: {shot}")
            if update:
                update_screenshot(page)
        finally:
            browser.close()
    assert errors == []
    assert set(requests) == {url}


def update_screenshot(page: Any) -> None:
    """The README's picture: the top of the report, one failure with a response open."""
    failures = page.locator("details.failure")
    for details in failures.all():
        details.evaluate("d => { d.open = false; }")
    failures.filter(has=page.locator("p.label", has_text="response")).first.evaluate(
        "d => { d.open = true; }"
    )
    page.evaluate("window.scrollTo(0, 0)")
    SCREENSHOT.parent.mkdir(exist_ok=True)
    tmp = SCREENSHOT.with_suffix(".tmp.png")
    page.screenshot(path=str(tmp), clip={"x": 0, "y": 0, "width": 1280, "height": 1200}, full_page=True)
    shutil.move(tmp, SCREENSHOT)
    print(f"updated {SCREENSHOT}")


# The evals of the sessions below, answered by a python: callable.
ECHO = "def answer(prompt):\n    return prompt\n"
OK = '{name: ok, prompt: fine, checks: [{match: "*fine*"}]}'
BAD = '{name: bad, prompt: poor, checks: [{match: "*fine*"}]}'


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_vibe_html_writes_the_report_at_session_end(pytester: pytest.Pytester, xdist: list[str]) -> None:
    python_suite(
        pytester.path / "h.eval.yaml",
        [OK, BAD],
        app="def answer(prompt):\n    return '<b>\\u202e' + prompt\n",
    )
    report = pytester.path / "out" / "report.html"
    result = run_pytest(pytester, "--vibe-html", str(report), xdist=xdist)
    assert result.ret == 1
    assert f"report: {report}" in result.stdout.str()
    html = report.read_text(encoding="utf-8")
    cells = parse(html).grids["grid-0"]  # 2 evals × 1 configuration
    assert [cell["data-outcome"] for cell in cells] == ["passed", "failed"]
    assert r"&lt;b&gt;\u202epoor" in html and "\u202e" not in html  # the answer, its bidi control escaped


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("how", ["deselected", "empty folder", "not asked"])
def test_when_no_eval_ran_the_files_asked_for_are_said_not_written(
    pytester: pytest.Pytester, xdist: list[str], how: str
) -> None:
    """All deselected (-k) or nothing collected: no report and no results (a score over no evals
    means nothing), and one line says so, so that a CI step looking for the files knows why."""
    if how != "empty folder":
        python_suite(pytester.path / "h.eval.yaml", [OK], app=ECHO)
    report, results = pytester.path / "r.html", pytester.path / "r.json"
    asked = [] if how == "not asked" else ["--vibe-html", str(report), "--vibe-results", str(results)]
    result = run_pytest(pytester, "-k", "nomatch", "--vibe-history=", *asked, xdist=xdist)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert not report.exists() and not results.exists()
    assert not (pytester.path / ".vibeeval" / "results").exists()
    line = f"no eval ran: --vibe-results {results}, --vibe-html {report} not written"
    lines = result.stdout.lines
    assert (line in lines) == (how != "not asked"), lines
    assert not any(text.startswith("no eval ran") for text in lines if text != line)


def test_a_session_stopped_by_maxfail_has_a_banner(pytester: pytest.Pytester) -> None:
    python_suite(pytester.path / "h.eval.yaml", [BAD, OK], app=ECHO)
    report = pytester.path / "report.html"
    result = run_pytest(pytester, "-x", "--vibe-html", str(report), "--vibe-history=")
    result.assert_outcomes(failed=1)
    html = report.read_text(encoding="utf-8")
    parse(html)
    assert (
        '<p class="banner warn" id="stopped-early">The session stopped after the first failure (-x): some '
        "evals did not run, so the scores are over those that did.</p>"
    ) in html
