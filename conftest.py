"""Test wiring for this repository: the plugin's own tests drive real pytest runs with pytester."""

from __future__ import annotations

import contextlib
import importlib.util
import signal

import pytest

pytest_plugins = ["pytester"]


# Imported here, before any in-process pytester run: such a run removes from ``sys.modules`` what it
# imported, and an httpcore imported again afterwards has new exception classes that the httpx
# already imported no longer maps (a timeout escapes as httpcore.ReadTimeout, not httpx's).
import httpcore  # noqa: E402, F401
import httpx  # noqa: E402, F401

# The same for PyYAML: its C loader, imported again, builds nodes the new yaml module does not
# resolve (every tag None), so every suite of a second in-process run failed to load. The semantic
# model's libraries import it first where that extra is installed.
import yaml  # noqa: E402, F401

# The interrupt tests send pytest runs SIGINT. A shell that starts a job in the background without
# job control (`cmd &` in a script, nohup) makes it ignore SIGINT, and every process it starts
# inherits that; the plugin rightly leaves an ignored SIGINT alone, so those tests would fail. This
# process, and so every run it starts, gets Ctrl-C's default back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

HAS_SENTENCE_TRANSFORMERS = importlib.util.find_spec("sentence_transformers") is not None


@pytest.fixture(autouse=True)
def _semantic_model_outside_pytester(request: pytest.FixtureRequest) -> None:
    """Load the `semantic` check's model before a pytester test, where the extra is installed.

    An in-process pytester run removes from ``sys.modules`` what it imported, and torch cannot be
    imported a second time in a process: a run that loaded the model would leave the next import of
    torch to crash the interpreter. Loaded here, once per process, it stays imported.
    """
    if HAS_SENTENCE_TRANSFORMERS and "pytester" in request.fixturenames:
        from pytest_vibeeval import semantic

        with contextlib.suppress(semantic.SemanticUnavailable):
            semantic.embedder()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "examples_run: the test reads the bundled examples' shared runs (tests/shared_runs.py)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that read the bundled examples' shared runs go first. Under ``-n 2`` xdist's load
    scheduling starts each worker on a chunk of consecutive tests, so they all land on one worker,
    which makes those runs (minutes of npm toolchains) while the other runs the rest; split across
    workers, one worker would sit waiting on the other's run."""
    items.sort(key=lambda item: item.get_closest_marker("examples_run") is None)
