"""One model call for many concurrent embedding calls (a server's requests, many homes).

``BatchingEmbedder`` wraps an embedder (``Embedder`` or ``HttpEmbedder``) that many threads share.
A call that arrives while the model is busy queues; when the model is free, one of the waiting
threads computes the texts of every queued call in one batch (at most ``max_texts`` texts, whole
calls), and each caller gets its own rows, in its order. A lone call runs at once: nothing waits
for a timer or for company (the group commit of a database log). On two cores the model runs one
batch at a time anyway, so queueing costs a caller nothing it would not have waited for, and a
batch of short texts costs far less than as many single calls.

It has the embedders' interface (``model_name``, ``dimension``, ``computed``, ``embed``,
``embed_query``), so the indexer, the write path and search take it in place of the one it wraps,
and the wrapped embedder's cache still means no text is computed twice. An exception raised by a
batch is raised to every call that was in it. ``batches`` and ``calls`` count what happened.
"""

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memory_assets.core.models.embedder import Embedder, HttpEmbedder

MAX_BATCH_TEXTS = 256


@dataclass
class _Call:
    texts: list[str]
    rows: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False
    size: int = field(init=False)

    def __post_init__(self) -> None:
        self.size = len(self.texts)


class BatchingEmbedder:
    """An embedder whose concurrent calls are computed together (see the module docstring)."""

    def __init__(self, inner: Embedder | HttpEmbedder, max_texts: int = MAX_BATCH_TEXTS) -> None:
        self.inner = inner
        self.max_texts = max(1, max_texts)
        self._cond = threading.Condition()
        self._queue: list[_Call] = []
        self._busy = False
        self.batches = 0  # model calls made
        self.calls = 0  # embed calls served

    def __repr__(self) -> str:
        return f"BatchingEmbedder({self.inner!r})"

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def computed(self) -> int:
        return self.inner.computed

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, in order (as the wrapped embedder's ``embed``)."""
        if not texts:
            return self.inner.embed(texts)
        call = _Call(list(texts))
        with self._cond:
            self._queue.append(call)
            while not call.done and self._busy:
                self._cond.wait()
            if call.done:
                return self._result(call)
            self._busy = True
        try:
            while not call.done:  # lead batches until this call's own is done
                with self._cond:
                    batch = self._take()
                self._run(batch)
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
        return self._result(call)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def _take(self) -> list[_Call]:
        """Whole calls from the front of the queue, up to ``max_texts`` texts (at least one call)."""
        taken, size = [], 0
        while self._queue and (not taken or size + self._queue[0].size <= self.max_texts):
            call = self._queue.pop(0)
            taken.append(call)
            size += call.size
        return taken

    def _run(self, batch: list[_Call]) -> None:
        try:
            rows = self.inner.embed([text for call in batch for text in call.texts])
        except BaseException as exc:  # every call of the batch gets the error
            for call in batch:
                call.error = exc
        else:
            start = 0
            for call in batch:
                call.rows = rows[start : start + call.size]
                start += call.size
        with self._cond:
            self.batches += 1
            self.calls += len(batch)
            for call in batch:
                call.done = True
            self._cond.notify_all()

    @staticmethod
    def _result(call: _Call) -> np.ndarray:
        if call.error is not None:
            raise call.error
        assert call.rows is not None
        return call.rows
