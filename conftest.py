"""Test wiring for this repository: the plugin's own tests drive real pytest runs with pytester."""

from __future__ import annotations

import contextlib
import importlib.util

import pytest

pytest_plugins = ["pytester"]


# Imported here, before any in-process pytester run: such a run removes from ``sys.modules`` what it
# imported, and an httpcore imported again afterwards has new exception classes that the httpx
# already imported no longer maps (a timeout escapes as httpcore.ReadTimeout, not httpx's).
import httpcore  # noqa: E402, F401
import httpx  # noqa: E402, F401

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
