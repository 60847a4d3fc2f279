"""The README and the documentation pages: every relative link leads to a file and heading that exist
(MkDocs checks the pages' links between each other but never reads the README), every ``--vibe-*``
option they name is one the plugin has, the README stays a front page whose test command is the
one CI runs, and the CI recipes of docs/ci.md run as written: their YAML parses, and their eval
commands, executed by the shell against a small suite, gate on the score, write the JUnit XML, the
HTML report and the results, and compare with the main branch's results (for GitLab fetched from
a local stand-in of its artifacts API). docs/security.md backs each paragraph with tests: every
test it cites exists, and the number of hostile cases it states is the corpus's."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from helpers import http_server, load_json, write

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]

FENCE = re.compile(r"^ *```.*?^ *```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
OPTION = re.compile(r"--vibe-[a-z][a-z-]*")


def _prose(text: str) -> str:
    """The Markdown without its fenced code blocks (whose brackets and hashes are code)."""
    return FENCE.sub("", text)


def _slug(heading: str) -> str:
    """The anchor GitHub and MkDocs give a heading (for the ASCII headings these pages have)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^\w\- ]", "", text).strip().lower().replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#{1,6} (.+?) *$", _prose(page.read_text(encoding="utf-8")), re.M)
    return {_slug(heading) for heading in headings}


def _broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not ours to check offline
        path_part, _, anchor = target.partition("#")
        resolved = page.parent / path_part if path_part else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target}: {resolved.name} has no heading with the anchor #{anchor}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_every_relative_link_leads_to_an_existing_file_and_heading(page: Path) -> None:
    assert _broken_links(page) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    write(tmp_path / "b.md", "# B\n\n## Part two\n")
    page = write(
        tmp_path / "a.md",
        "# Top\n\n## The `c` part\n\n```\n[code](skipped.md)\n```\n\n[ok](#the-c-part) [ok](b.md#part-two) "
        "[ok](b.md) [gone](nope.md) [miss](#other) [miss](b.md#part-three) [web](https://example.com/x#y)\n",
    )
    assert _broken_links(page) == [
        "nope.md: no such file",
        "#other: a.md has no heading with the anchor #other",
        "b.md#part-three: b.md has no heading with the anchor #part-three",
    ]


@cache
def _registered_options() -> frozenset[str]:
    """The --vibe-* options of the installed plugin, as ``pytest --help`` lists them."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return frozenset(OPTION.findall(done.stdout))


def test_every_option_the_docs_name_is_an_option_of_the_plugin() -> None:
    registered = _registered_options()
    assert {"--vibe-html", "--vibe-baseline", "--vibe-gate-only"} <= registered
    named = {(page.name, option) for page in PAGES for option in OPTION.findall(page.read_text("utf-8"))}
    unknown = sorted(f"{name}: {option}" for name, option in named if option not in registered)
    assert not unknown, f"options that pytest --help does not list: {unknown}"


def test_the_option_table_of_the_running_page_lists_every_option() -> None:
    """docs/running.md is where the README sends readers for "every option"."""
    table = (DOCS / "running.md").read_text(encoding="utf-8").split("\n\n", 2)[1]
    listed = set(OPTION.findall(table))
    missing = sorted(_registered_options() - listed)
    assert not missing, f"options missing from docs/running.md's table: {missing}"


def test_the_results_format_names_every_field_a_results_file_has() -> None:
    """Every field of every record in the results file appears in docs/results-format.md's outline."""
    from pytest_vibeeval import results

    text = (DOCS / "results-format.md").read_text(encoding="utf-8")
    outline = set(re.findall(r'"([a-z_0-9]+)"', FENCE.findall(text)[0]))
    models = [m for m in vars(results).values() if isinstance(m, type) and issubclass(m, results.Record)]
    assert results.ResultsFile in models and results.TurnRecord in models
    fields = [f"{model.__name__}.{field}" for model in models for field in model.model_fields]
    missing = sorted(name for name in fields if name.split(".")[1] not in outline)
    assert not missing, f"fields missing from docs/results-format.md: {missing}"


def test_the_readme_is_a_front_page_whose_test_command_is_what_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    quick_start = text[text.index("## Quick start\n") : text.index("\n## ", text.index("## Quick start\n"))]
    commands = re.findall(r"```bash\n(.*?)\n```", quick_start, re.S)
    assert commands[0] == (
        "python3 -m venv .venv && .venv/bin/pip install -e '.[examples]' && "
        ".venv/bin/python -m pytest examples"
    )
    assert commands[1] == (
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest -n 2"
    )
    assert f'step tests bash -c "{commands[1]}"' in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_page_is_in_the_mkdocs_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = {page for entry in config["nav"] for page in entry.values()}
    assert in_nav == {page.name for page in DOCS.glob("*.md")}
    assert config["validation"]["links"] == {
        "not_found": "warn",
        "anchors": "warn",
        "absolute_links": "warn",
        "unrecognized_links": "warn",
    }


def test_the_docs_build_with_warnings_as_errors(tmp_path: Path) -> None:
    """What CI's docs step runs; it needs the `docs` extra."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]'")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "ci" / "index.html").is_file()


# --- the CI recipes -----------------------------------------------------------------------------


def _recipe(heading: str) -> dict[str, Any]:
    text = (DOCS / "ci.md").read_text(encoding="utf-8")
    section = text[text.index(f"\n## {heading}\n") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, f"docs/ci.md: no YAML block under '## {heading}'"
    data = yaml.safe_load(block.group(1))
    assert isinstance(data, dict)
    return data


def _github_eval_script() -> str:
    steps = _recipe("GitHub Actions")["jobs"]["evals"]["steps"]
    (script,) = [step["run"] for step in steps if "pytest" in step.get("run", "")]
    return str(script)


def _gitlab_eval_script() -> list[str]:
    job = _recipe("GitLab CI")["evals"]
    return [str(line) for line in job["script"] if not line.startswith("pip install")]


def test_the_recipes_upload_the_reports_and_cache_pip() -> None:
    github = _recipe("GitHub Actions")
    steps = github["jobs"]["evals"]["steps"]
    uses = {step.get("uses", "").split("@")[0]: step for step in steps}
    assert uses["actions/setup-python"]["with"]["cache"] == "pip"
    assert set(uses["actions/upload-artifact"]["with"]["path"].split()) == {
        "report.html",
        "report.xml",
        "results.json",
    }
    assert uses["actions/cache/save"]["with"]["path"] == uses["actions/cache/restore"]["with"]["path"]
    gitlab = _recipe("GitLab CI")["evals"]
    assert gitlab["variables"]["PIP_CACHE_DIR"] == "$CI_PROJECT_DIR/.cache/pip"
    assert gitlab["cache"]["paths"] == [".cache/pip"]
    assert gitlab["artifacts"]["reports"]["junit"] == "report.xml"
    assert set(gitlab["artifacts"]["paths"]) == {"report.html", "report.xml", "results.json"}
    for script in (_github_eval_script(), "\n".join(_gitlab_eval_script())):
        for needed in ("-n auto", "--junitxml=report.xml", "--vibe-html report.html", "--vibe-gate-only"):
            assert needed in script
        assert "--vibe-baseline" in script and "--vibe-fail-on-regression" in script
        assert set(OPTION.findall(script)) <= _registered_options()


APP = """
import os

def answer(prompt):
    quality = int(os.environ.get("APP_QUALITY", "2"))
    known = {"one": "1", "two": "2", "three": "3"}
    if list(known).index(prompt) < quality:
        return known[prompt]
    return "no idea"
"""

SUITE = """
metadata: {name: counting, model: none}
configurations: {app: {python: "app:answer"}}
evals:
  - {name: one, prompt: one, checks: [{equals: "1"}]}
  - {name: two, prompt: two, checks: [{equals: "2"}]}
  - {name: three, prompt: three, checks: [{equals: "3"}]}
score: {formula: success_pct, min: 30}
"""


def _project(tmp_path: Path) -> Path:
    write(tmp_path / "evals" / "app.py", APP)
    write(tmp_path / "evals" / "counting.eval.yaml", SUITE)
    return tmp_path


def _shell(script: str, cwd: Path, workers: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The recipe's script in bash, with this venv's pytest first on PATH; ``-n auto`` becomes
    ``-n <workers>`` (0: serial), so the run is the same on any machine."""
    assert "-n auto" in script
    script = script.replace("-n auto", f"-n {workers}")
    bin_dir = str(Path(sys.executable).parent)
    environ = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env}
    environ["PYTEST_ADDOPTS"] = "-p no:cacheprovider -p no:hypothesispytest"
    return subprocess.run(
        ["bash", "-c", f"set -e\n{script}"], cwd=cwd, env=environ, capture_output=True, text=True, timeout=300
    )


def _gate_case(report: Path) -> str:
    text = report.read_text(encoding="utf-8")
    case = re.search(r'<testcase [^>]*name="score-gate\[[^"]*\]"[^>]*(/>|>.*?</testcase>)', text, re.S)
    assert case, text
    return case.group(0)


WORKERS = pytest.mark.parametrize("workers", ["0", "2"], ids=["serial", "xdist"])


@WORKERS
def test_the_github_recipe_gates_reports_and_compares_with_main(tmp_path: Path, workers: str) -> None:
    project = _project(tmp_path)
    script = _github_eval_script()

    # main's first run: no baseline yet; one eval fails, the gate (min 30) decides: exit 0
    first = _shell(script, project, workers)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "GATE FAILED" not in first.stdout and "Baseline:" not in first.stdout
    assert (project / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert "<failure" not in _gate_case(project / "report.xml")
    results = load_json(project / "results.json")
    assert results["runs"][0]["score"] == pytest.approx(66.67, abs=0.01)
    (project / "baseline").mkdir()
    shutil.copy(project / "results.json", project / "baseline" / "results.json")  # the save steps

    # a pull request that makes the app worse: the gate still passes, the regression fails the job
    worse = _shell(script, project, workers, APP_QUALITY="1")
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "Baseline: 66.67 → 33.33 (Δ -33.33) regression; pass→fail: two" in worse.stdout
    assert "GATE FAILED" not in worse.stdout
    assert load_json(project / "results.json")["runs"][0]["baseline"]["label"] == "regression"

    # one that makes it worse than the gate allows: the gate fails the job, as the JUnit XML says
    broken = _shell(script, project, workers, APP_QUALITY="0")
    assert broken.returncode == 1
    assert "GATE FAILED: counting × app: score 0.00 is below min 30" in broken.stdout
    assert "<failure" in _gate_case(project / "report.xml")


class _Artifacts(http.server.BaseHTTPRequestHandler):
    """GitLab's "download a single artifact file from a branch" endpoint, for one project."""

    results: bytes | None = None
    requests: ClassVar[list[tuple[str, str | None]]] = []  # each test's subclass has its own

    def do_GET(self) -> None:
        self.requests.append((self.path, self.headers.get("JOB-TOKEN")))
        wanted = "/api/v4/projects/42/jobs/artifacts/main/raw/results.json?job=evals"
        if self.path != wanted or self.headers.get("JOB-TOKEN") != "job-token" or self.results is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.results)))
        self.end_headers()
        self.wfile.write(self.results)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def gitlab_api() -> Iterator[tuple[str, type[_Artifacts]]]:
    handler = type("Artifacts", (_Artifacts,), {"results": None, "requests": []})
    with http_server(handler) as port:
        yield f"http://127.0.0.1:{port}/api/v4", handler


@WORKERS
def test_the_gitlab_recipe_fetches_mains_results_as_its_baseline(
    tmp_path: Path, workers: str, gitlab_api: tuple[str, type[_Artifacts]]
) -> None:
    url, api = gitlab_api
    project = _project(tmp_path)
    script = "\n".join(_gitlab_eval_script())
    ci = {
        "CI_API_V4_URL": url,
        "CI_PROJECT_ID": "42",
        "CI_JOB_TOKEN": "job-token",
        "CI_JOB_NAME": "evals",
        "CI_DEFAULT_BRANCH": "main",
    }

    # on the default branch: no baseline is fetched
    main = _shell(script, project, workers, CI_COMMIT_BRANCH="main", **ci)
    assert main.returncode == 0, main.stdout + main.stderr
    assert api.requests == [] and "Baseline:" not in main.stdout
    assert "<failure" not in _gate_case(project / "report.xml")

    # a branch before main has results (the API answers 404): runs without a baseline
    first = _shell(script, project, workers, CI_COMMIT_BRANCH="feature", **ci)
    assert first.returncode == 0, first.stdout + first.stderr
    assert len(api.requests) == 1 and "Baseline:" not in first.stdout

    # a branch that makes the app worse, compared with main's results: a regression fails it
    api.results = json.dumps(load_json(project / "results.json")).encode()
    worse = _shell(script, project, workers, CI_COMMIT_BRANCH="feature", APP_QUALITY="1", **ci)
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert api.requests[-1] == (
        "/api/v4/projects/42/jobs/artifacts/main/raw/results.json?job=evals",
        "job-token",
    )
    assert "Baseline: 66.67 → 33.33 (Δ -33.33) regression; pass→fail: two" in worse.stdout
    assert (project / "report.html").is_file()


# --- docs/security.md: every claim names its test -----------------------------------------------

SECURITY = DOCS / "security.md"
TESTS = ROOT / "tests"
CODE_SPAN = re.compile(r"`([^`\n]+)`")
TEST_FILE = re.compile(r"(?:tests/)?(test_\w+\.py)(?:::(test_\w+))?")
TEST_NAME = re.compile(r"test_\w+")


def _test_functions(path: Path) -> set[str]:
    return set(re.findall(r"^(?:async )?def (test_\w+)\(", path.read_text(encoding="utf-8"), re.M))


def cited_tests(text: str) -> list[str]:
    """The tests a page cites in code spans: `tests/test_x.py`, `test_x.py::test_y`, `test_y`."""
    return [
        span for span in CODE_SPAN.findall(text) if TEST_FILE.fullmatch(span) or TEST_NAME.fullmatch(span)
    ]


def missing_tests(text: str, tests: Path) -> list[str]:
    """The tests ``text`` cites that ``tests`` does not have (a file, or a test function in it or,
    for a bare name, in any of its files)."""
    everywhere = {name for path in tests.rglob("test_*.py") for name in _test_functions(path)}
    missing = []
    for span in cited_tests(text):
        found = TEST_FILE.fullmatch(span)
        if found is None:
            if span not in everywhere:
                missing.append(span)
            continue
        path = tests / found[1]
        if not path.is_file() or (found[2] is not None and found[2] not in _test_functions(path)):
            missing.append(span)
    return missing


def test_every_test_the_security_model_cites_exists() -> None:
    text = SECURITY.read_text(encoding="utf-8")
    assert len(cited_tests(text)) >= 20
    assert missing_tests(text, TESTS) == []
    paragraphs = re.findall(r"^\*\*([^*]+)\*\*(.*?)(?=^\*\*|\Z)", text, re.M | re.S)
    assert len(paragraphs) >= 10
    unbacked = [title for title, body in paragraphs if not cited_tests(body)]
    assert unbacked == [], "paragraphs of docs/security.md that name no test"


def test_the_citation_check_finds_a_missing_file_and_a_missing_test(tmp_path: Path) -> None:
    write(tmp_path / "test_here.py", "def test_there():\n    pass\n")
    text = (
        "`tests/test_here.py`, `test_here.py::test_there`, `test_there` hold; `test_gone.py`,"
        " `test_here.py::test_nowhere` and `test_nowhere` do not; `--vibe-x` and `a test` are no tests"
    )
    assert missing_tests(text, tmp_path) == ["test_gone.py", "test_here.py::test_nowhere", "test_nowhere"]


def test_the_security_model_states_the_number_of_hostile_cases() -> None:
    stated = re.findall(r"runs (\d+) (?:such |hostile )?cases", SECURITY.read_text(encoding="utf-8"))
    manifest = yaml.safe_load((TESTS / "hostile" / "MANIFEST.yaml").read_text(encoding="utf-8"))
    assert stated == [str(len(manifest["cases"]))]
