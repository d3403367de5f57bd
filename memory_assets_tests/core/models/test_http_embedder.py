"""The OpenAI-compatible endpoint embedder against a real HTTP server in the test process.

The server speaks ``POST /v1/embeddings`` and computes its vectors with the real local model (the
session fixture ``embedder``), so the vectors the HttpEmbedder receives are real ones.
"""

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore, VectorWidthMismatch
from memory_assets.core.models.embedder import Embedder, EmbedderError, HttpEmbedder, make_embedder
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings
from memory_assets.defs.resources import EmbedderResource
from memory_assets_tests.conftest import DAY, write_facts
from memory_assets_tests.processes import free_port

REPO = Path(__file__).resolve().parents[3]


class EmbeddingServer:
    """A real ``/v1/embeddings`` server on 127.0.0.1 (an ephemeral port) in a thread.

    ``mode``: "ok", "error500" (a JSON error body), "malformed" (not JSON), "wrong_count" (one
    vector short). ``width`` truncates the real vectors (a narrower model); ``fail_first`` answers
    that many requests with 503 first; ``required_key`` answers 401 without that Bearer key."""

    def __init__(self, local: Embedder) -> None:
        self.local = local
        self.mode = "ok"
        self.width: int | None = None
        self.fail_first = 0
        self.required_key: str | None = None
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def inputs(self) -> list[list[str]]:
        return [r["body"]["input"] for r in self.requests]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes, str]:
        body = json.loads(raw or b"{}")
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
            count = len(self.requests)
        if path != "/v1/embeddings":
            return _json(404, {"error": {"message": f"no route {path}"}})
        if self.required_key and headers.get("authorization") != f"Bearer {self.required_key}":
            return _json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request"}})
        if count <= self.fail_first:
            return _json(503, {"error": {"message": "warming up"}})
        if self.mode == "error500":
            return _json(500, {"error": {"message": "CUDA out of memory", "type": "server_error"}})
        if self.mode == "malformed":
            return 200, b"<html>Bad Gateway</html>", "text/html"
        texts = body["input"]
        vectors = self.local.embed(texts)
        if self.width is not None:
            vectors = vectors[:, : self.width]
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        data.reverse()  # the client must order by "index", not by position
        if self.mode == "wrong_count":
            data = data[:-1]
        return _json(200, {"object": "list", "data": data, "model": body["model"]})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload, kind = server.answer(self.path, headers, raw)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

        return Handler


def _json(status: int, body: object) -> tuple[int, bytes, str]:
    return status, json.dumps(body).encode(), "application/json"


@pytest.fixture
def server(embedder: Embedder) -> Iterator[EmbeddingServer]:
    srv = EmbeddingServer(embedder)
    yield srv
    srv.close()


# -- (a) real vectors, batching, caching ------------------------------------------------------------
def test_vectors_equal_the_local_models_and_are_batched_and_cached(
    server: EmbeddingServer, embedder: Embedder
) -> None:
    http = HttpEmbedder(server.base_url, "all-minilm-l6-v2")
    texts = [f"Fact number {i}: prefers tea over coffee on day {i}" for i in range(150)]
    vectors = http.embed(texts)
    assert vectors.shape == (150, 384) and vectors.dtype == np.float32
    assert np.allclose(vectors, embedder.embed(texts), atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert [len(batch) for batch in server.inputs()] == [64, 64, 22]
    assert all(r["body"]["model"] == "all-minilm-l6-v2" for r in server.requests)
    assert http.computed == 150 and http.dimension == 384  # the width came with the first answer

    again = http.embed([texts[3], "a new text", texts[3], "a new text"])  # only the unseen text goes out
    assert server.inputs()[-1] == ["a new text"] and len(server.requests) == 4
    assert np.allclose(again[0], vectors[3]) and np.allclose(again[0], again[2])
    assert np.allclose(http.embed_query("a new text"), embedder.embed_query("a new text"), atol=1e-6)
    assert len(server.requests) == 4 and http.computed == 151
    assert http.model_name == f"openai:all-minilm-l6-v2@{server.base_url}"
    assert http.embed([]).shape == (0, 0) and len(server.requests) == 4


def test_dimension_probes_once_and_threads_share_the_cache(server: EmbeddingServer) -> None:
    http = HttpEmbedder(server.base_url + "/", "m")  # a trailing slash is fine
    assert http.url == server.base_url + "/embeddings"
    assert http.dimension == 384 and http.dimension == 384
    assert len(server.requests) == 1
    texts = [f"shared text {i}" for i in range(10)]
    results: list[np.ndarray] = []
    workers = [threading.Thread(target=lambda: results.append(http.embed(texts))) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(results) == 4 and all(np.array_equal(r, results[0]) for r in results)
    sent_before = len(server.requests)
    http.embed(texts)
    assert len(server.requests) == sent_before  # every text is cached now


def test_transient_503s_are_retried(server: EmbeddingServer) -> None:
    server.fail_first = 2
    http = HttpEmbedder(server.base_url, "m", backoff=0.0)
    assert http.embed(["retry me"]).shape == (1, 384)
    assert len(server.requests) == 3


# -- (b) the key ------------------------------------------------------------------------------------
def test_the_api_key_is_sent_as_a_bearer_header(server: EmbeddingServer) -> None:
    server.required_key = "sk-test-123"
    HttpEmbedder(server.base_url, "m", api_key="sk-test-123").embed(["with a key"])
    assert server.requests[-1]["headers"]["authorization"] == "Bearer sk-test-123"

    with pytest.raises(EmbedderError) as missing:
        HttpEmbedder(server.base_url, "m").embed(["without a key"])
    assert "authorization" not in server.requests[-1]["headers"]
    message = str(missing.value)
    assert server.base_url in message and "HTTP 401" in message and "Incorrect API key" in message
    assert "MEMORY_EMBEDDING_API_KEY" in message

    with pytest.raises(EmbedderError) as wrong:
        HttpEmbedder(server.base_url, "m", api_key="sk-wrong").embed(["a wrong key"])
    assert "refused" in str(wrong.value) and "sk-wrong" not in str(wrong.value)


# -- (c) failures -----------------------------------------------------------------------------------
def test_a_server_error_is_retried_then_named(server: EmbeddingServer) -> None:
    server.mode = "error500"
    http = HttpEmbedder(server.base_url, "m", max_retries=2, backoff=0.0)
    with pytest.raises(EmbedderError) as err:
        http.embed(["boom"])
    message = str(err.value)
    assert f"{server.base_url}/embeddings" in message and "'m'" in message
    assert "HTTP 500" in message and "CUDA out of memory" in message and "after 3 attempts" in message
    assert len(server.requests) == 3  # bounded: one try and two retries
    assert http.computed == 0


def test_malformed_json_is_named(server: EmbeddingServer) -> None:
    server.mode = "malformed"
    with pytest.raises(EmbedderError, match=r"not valid JSON.*Bad Gateway") as err:
        HttpEmbedder(server.base_url, "m").embed(["x"])
    assert server.base_url in str(err.value) and "OpenAI-compatible" in str(err.value)


def test_a_wrong_vector_count_is_named(server: EmbeddingServer) -> None:
    server.mode = "wrong_count"
    with pytest.raises(EmbedderError, match=r"sent 3 text\(s\) but got 2 vector\(s\)") as err:
        HttpEmbedder(server.base_url, "m").embed(["one", "two", "three"])
    assert server.base_url in str(err.value)


def test_inconsistent_widths_are_named(server: EmbeddingServer) -> None:
    http = HttpEmbedder(server.base_url, "m")
    http.embed(["first"])
    server.width = 8
    with pytest.raises(EmbedderError, match=r"inconsistent widths.*8-wide.*384-wide") as err:
        http.embed(["second"])
    assert server.base_url in str(err.value)


def test_a_refused_connection_is_named() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EmbedderError) as err:
        HttpEmbedder(url, "m", max_retries=1, backoff=0.0).embed(["nobody listens"])
    message = str(err.value)
    assert url in message and "cannot connect after 2 attempt(s)" in message
    assert "MEMORY_EMBEDDING_URL" in message


def test_a_bad_url_or_model_is_refused_up_front() -> None:
    with pytest.raises(EmbedderError, match="not an http"):
        HttpEmbedder("127.0.0.1:8080/v1", "m")
    with pytest.raises(EmbedderError, match="needs a model name"):
        HttpEmbedder("http://127.0.0.1:8080/v1", "default")


# -- (d) end to end -----------------------------------------------------------------------------------
def test_index_and_search_through_the_endpoint(settings: Settings, server: EmbeddingServer) -> None:
    write_facts(settings, DAY, "Is allergic to peanuts and carries an EpiPen", category="personal")
    write_facts(settings, DAY, "Deploys the side project on a Hetzner VPS with Docker Compose")
    http = HttpEmbedder(server.base_url, "all-minilm-l6-v2")
    result = Indexer(settings, embedder=http, today=date(2026, 11, 29)).sweep()
    assert result.rows == 2 and server.requests
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    assert store.model() == http.model_name and store.vector_width() == 384

    hits = search(store, "food allergies", SearchFilters(today=date(2026, 11, 29)), embedder=http)
    assert hits and "peanuts" in hits[0].content and hits[0].semantic > 0.3


# -- (e) a width change names the fix -----------------------------------------------------------------
def test_a_narrower_endpoint_needs_a_full_reindex(
    settings: Settings, indexer: Indexer, server: EmbeddingServer
) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers")
    indexer.sweep()  # the local 384-wide model builds the table
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    assert store.vector_width() == 384

    server.width = 8
    http = HttpEmbedder(server.base_url, "tiny-8")
    write_facts(settings, DAY, "Lives in Lisbon and works remotely as a data engineer", hour=10)
    with pytest.raises(VectorWidthMismatch) as err:
        Indexer(settings, embedder=http).sweep()
    message = str(err.value)
    assert "memory-assets reindex --full" in message and "384-wide" in message and "8-wide" in message
    assert message.startswith("index table ") and "FixedSizeList" not in message

    with pytest.raises(VectorWidthMismatch, match=r"memory-assets reindex --full"):
        store.check_query_width(http.dimension)

    rebuilt = Indexer(settings, embedder=http, today=date(2026, 11, 29)).sweep(full=True)
    assert rebuilt.rows == 2 and store.vector_width() == 8 and store.model() == http.model_name
    store.check_query_width(http.dimension)
    hits = search(store, "Lisbon data engineer", SearchFilters(today=date(2026, 11, 29)), embedder=http)
    assert hits and "Lisbon" in hits[0].content


# -- (f) the factory ----------------------------------------------------------------------------------
def test_make_embedder_follows_the_settings(
    tmp_path: Path, server: EmbeddingServer, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        "MEMORY_EMBEDDING_URL": server.base_url,
        "MEMORY_EMBEDDING_MODEL": "text-embedding-3-small",
        "MEMORY_EMBEDDING_API_KEY": "sk-abc",
    }
    chosen = make_embedder(Settings.load(tmp_path, env=env))
    assert isinstance(chosen, HttpEmbedder)
    assert chosen.base_url == server.base_url and chosen.endpoint_model == "text-embedding-3-small"
    assert chosen.api_key == "sk-abc" and "sk-abc" not in repr(chosen)
    assert make_embedder(Settings.load(tmp_path, env=env)) is chosen  # one per endpoint per process
    assert server.requests == []  # choosing calls nothing
    chosen.embed(["via the factory"])
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-abc"

    openai_key = {
        "MEMORY_EMBEDDING_URL": server.base_url,
        "MEMORY_EMBEDDING_MODEL": "m",
        "OPENAI_API_KEY": "sk-o",
    }
    with_openai_key = make_embedder(Settings.load(tmp_path, env=openai_key))
    assert isinstance(with_openai_key, HttpEmbedder) and with_openai_key.api_key == "sk-o"

    with pytest.raises(EmbedderError, match=r"MEMORY_EMBEDDING_MODEL is 'default'.*needs a model name"):
        make_embedder(Settings.load(tmp_path, env={"MEMORY_EMBEDDING_URL": server.base_url}))

    assert make_embedder(Settings.load(tmp_path, env={})) is embedder  # no URL: the shared local model

    for name in (
        "MEMORY_EMBEDDING_URL",
        "MEMORY_EMBEDDING_MODEL",
        "MEMORY_EMBEDDING_API_KEY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    resource = EmbedderResource(url=server.base_url, model="text-embedding-3-small")
    assert resource.get() is make_embedder(
        Settings.load(tmp_path, env={**env, "MEMORY_EMBEDDING_API_KEY": ""})
    )
    assert EmbedderResource().get() is embedder
    assert len(server.requests) == 1  # resources resolve lazily and call nothing


# -- (g) no progress bars -------------------------------------------------------------------------------
def test_loading_the_local_model_draws_no_progress_bar() -> None:
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    code = (
        "from memory_assets.core.models.embedder import Embedder\n"
        "print(Embedder().embed(['hello world']).shape)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "(1, 384)" in done.stdout
    assert "%|" not in done.stderr and "Loading weights" not in done.stderr, done.stderr
