"""Resources: the memory home (settings, store) and the embedder."""

import dagster as dg
from pydantic import PrivateAttr

from memory_assets.core.index.embedder import Embedder, shared_embedder
from memory_assets.core.index.store import MemoryStore
from memory_assets.settings import Settings


class MemoryHomeResource(dg.ConfigurableResource):
    """Where the memory lives. Unset fields fall back to MEMORY_HOME / MEMORY_PROFILE / defaults."""

    home: str | None = None
    profile: str | None = None
    index_uri: str | None = None

    def settings(self) -> Settings:
        overrides = {"index_uri": self.index_uri} if self.index_uri else {}
        return Settings.load(self.home, self.profile, **overrides)

    def store(self, settings: Settings | None = None) -> MemoryStore:
        s = settings or self.settings()
        return MemoryStore(s.index_uri, s.table_name, s.user_id)


class EmbedderResource(dg.ConfigurableResource):
    """sentence-transformers, loaded lazily on the first text that needs embedding (a run that
    changes nothing never imports torch). ``model``: 'default' (the bundled all-MiniLM-L6-v2)
    or a local model path; unset reads MEMORY_EMBEDDING_MODEL."""

    model: str | None = None
    batch_size: int = 32
    _embedder: Embedder | None = PrivateAttr(default=None)

    def get(self) -> Embedder:
        if self._embedder is None:
            model = self.model or Settings.load().embedding_model
            self._embedder = shared_embedder(model, self.batch_size)
        return self._embedder
