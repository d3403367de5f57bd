"""BatchingEmbedder with the real model: concurrent calls share model calls, every caller gets
exactly its own rows, and a failing batch fails each of its calls."""

import threading

import numpy as np
import pytest

from memory_assets.core.models.batching import BatchingEmbedder
from memory_assets.core.models.embedder import Embedder, EmbedderError, HttpEmbedder


def test_concurrent_calls_are_computed_together_and_each_gets_its_rows(embedder: Embedder) -> None:
    batching = BatchingEmbedder(embedder)
    texts = [[f"Batching probe sentence number {i} about {w}"] for i, w in enumerate("abcdefghijklmnop")]
    texts[3] = ["two texts in one call", "the second of them"]
    out: dict[int, np.ndarray] = {}
    start = threading.Barrier(len(texts))

    def work(i: int) -> None:
        start.wait()
        out[i] = batching.embed(texts[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, group in enumerate(texts):
        assert out[i].shape == (len(group), embedder.dimension)
        assert np.allclose(out[i], embedder.embed(group), atol=1e-6)
    assert batching.calls == len(texts)
    assert batching.batches < len(texts)  # at least two calls shared a model call
    assert batching.model_name == embedder.model_name and batching.dimension == embedder.dimension
    assert np.allclose(batching.embed_query("a lone call"), embedder.embed_query("a lone call"), atol=1e-6)


def test_a_batch_that_fails_fails_every_call_in_it() -> None:
    unreachable = HttpEmbedder("http://127.0.0.1:9/v1", "some-model", max_retries=0, timeout=2)
    batching = BatchingEmbedder(unreachable)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            batching.embed(["x"])
        except EmbedderError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 4 and all("cannot connect" in str(e) for e in errors)
    with pytest.raises(EmbedderError):
        batching.embed_query("again")


def test_calls_are_kept_whole_and_the_batch_size_is_bounded(embedder: Embedder) -> None:
    batching = BatchingEmbedder(embedder, max_texts=3)
    rows = batching.embed([f"line {i}" for i in range(7)])  # one call larger than the bound: still whole
    assert rows.shape == (7, embedder.dimension) and batching.batches == 1
