"""``Home``: one memory home and the parts that work on it, each built lazily, once.

The composition root. A face (the CLI, the Dagster resources, the demo, the benchmarks, and the
server that holds many homes) builds a ``Home`` from its settings and asks it for parts; nothing
else constructs a ``MemoryStore``, an embedder or an ``Indexer`` for a home:

* ``home.store``: the ``MemoryStore`` over ``settings.index_uri`` (read side; opening it touches
  nothing on disk);
* ``home.embedder``: the configured embedder (a ``HomeEmbedder``), shared per process
  (``make_embedder``), with ``embedding_batch_size`` texts per batch when one is given; building
  it loads no model and calls no endpoint, the first text does;
* ``home.indexer``: the ``Indexer`` over that store and embedder, the only writer of the table;
* ``home.language_model``: the chat client of ``MEMORY_LLM_*``, or None when none is configured.

``home.search(query, filters)`` asks this home's index (``core/search/``) with the one filters
value every face builds (``SearchFilters``); ``home.lineage(ids)`` says where each row came from,
back to what was said (``core/index/lineage.py``).

``home.ready()`` raises the settings' "not initialised" error with its fix; ``write_path_embedder()``
is the embedder loaded now, or None (with a warning) when the model cannot load, because a memory
write must never wait on, or fail for, the model (design §7 invariant 5).

Floor 4: it imports the ground, the models, the index and the search tiers, and nothing that
imports it back; the audit, the runners and the faces build their parts through it. Outside
``core/index/`` (which wires its own store and writer) nothing else builds a ``MemoryStore`` or an
``Indexer``.
"""

import logging
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.lineage import Lineage, trace_ids
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.models.batching import BatchingEmbedder
from memory_assets.core.models.embedder import Embedder, HttpEmbedder, TextEmbedder, make_embedder
from memory_assets.core.models.language_model import ChatClient, make_chat_client
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.ranking import Hit
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings

log = logging.getLogger("memory_assets")

HomeEmbedder = Embedder | HttpEmbedder | BatchingEmbedder
"""The embedder a home holds: the local sentence-transformers model's or an endpoint's, or one of
them shared by many homes whose concurrent calls are computed together (``BatchingEmbedder``)."""


class Home:
    """A memory home: its settings and its parts (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        embedder: HomeEmbedder | None = None,
        store: MemoryStore | None = None,
        *,
        embedding_batch_size: int | None = None,
    ):
        """``embedder``: one already built elsewhere (a Dagster resource's); default: the settings'.
        ``store``: one already open (a caller's, whose read caches the parts then share); default:
        the settings' index. ``embedding_batch_size``: texts per batch of the embedder this home
        builds (None: the embedder's default)."""
        self.settings = settings
        self._embedding_batch_size = embedding_batch_size
        if embedder is not None:
            self.embedder = embedder  # fills the cached property
        if store is not None:
            self.store = store  # fills the cached property

    @classmethod
    def load(cls, home: str | Path | None = None, profile: str | None = None, **overrides: str) -> "Home":
        """``Settings.load`` (arguments, then the environment, then the profile's defaults)."""
        return cls(Settings.load(home, profile, **overrides))

    def __repr__(self) -> str:
        return f"Home({str(self.settings.home)!r}, profile={self.settings.profile!r})"

    def ready(self) -> "Home":
        """This home, once it is known to be initialised; else the error that names the fix."""
        self.settings.require_initialised()
        return self

    @cached_property
    def store(self) -> MemoryStore:
        return MemoryStore.of(self.settings)

    @cached_property
    def embedder(self) -> HomeEmbedder:
        return make_embedder(self.settings, self._embedding_batch_size)

    @cached_property
    def indexer(self) -> Indexer:
        return Indexer(self.settings, self.store, self.embedder)

    def indexer_without_embedder(self) -> Indexer:
        """An indexer that plans and reads but has no embedder, so it never loads the model (a
        sensor's tick, a migrate, an optimize, a check)."""
        return Indexer(self.settings, self.store)

    def indexer_with(self, embedder: TextEmbedder | None, lock_timeout: float | None = None) -> Indexer:
        """An indexer over this home's store and ``embedder`` (None: it embeds nothing), whose
        per-file writes wait at most ``lock_timeout`` seconds for their locks (None: as long as it
        takes). The write path passes the embedder it loaded (or None) and a short wait, so a held
        lock delays its reindex, never the turn."""
        return Indexer(self.settings, self.store, embedder, lock_timeout=lock_timeout)

    @cached_property
    def language_model(self) -> ChatClient | None:
        return make_chat_client(self.settings)

    def search(self, query: str, filters: SearchFilters | None = None, *, embed: bool = True) -> list[Hit]:
        """The best hits for ``query`` among the rows ``filters`` keeps (None: the defaults), as
        ``retrieval.search`` states them, with this home's tombstones, recall log and content cap.
        ``embed=False``: full text only, so no model is loaded (the vector legs are left out)."""
        return search(
            self.store, query, filters, embedder=self.embedder if embed else None, settings=self.settings
        )

    def lineage(self, ids: Sequence[str]) -> dict[str, Lineage]:
        """The lineage of each row of this home's index with one of ``ids``; an id no row has is
        not in the result."""
        return trace_ids(self.store, self.settings, ids)

    def write_path_embedder(self) -> HomeEmbedder | None:
        """The embedder, loaded now (so the first recall is not cut short by the model's load), or
        None when it cannot load: the facts are still written, recall is keyword-only and the day
        is left to the sensor's reindex."""
        try:
            _ = self.embedder.dimension
        except Exception as exc:
            log.warning(
                f"embedding model unavailable ({exc}); recall is full-text only and the day is not reindexed"
            )
            return None
        return self.embedder
