"""Resources: the memory home (a ``Home``) and the embedder it hands its indexer."""

import dagster as dg
from pydantic import PrivateAttr

from memory_assets.core.home import Home
from memory_assets.core.models.embedder import Embedder, HttpEmbedder, make_embedder
from memory_assets.core.settings import Settings


class MemoryHomeResource(dg.ConfigurableResource):
    """Where the memory lives. Unset fields fall back to MEMORY_HOME / MEMORY_PROFILE / defaults."""

    home: str | None = None
    profile: str | None = None
    index_uri: str | None = None

    def settings(self) -> Settings:
        overrides = {"index_uri": self.index_uri} if self.index_uri else {}
        return Settings.load(self.home, self.profile, **overrides)

    def open(self, embedder: "EmbedderResource | None" = None) -> Home:
        """The home (a fresh ``Home`` each call: a run's steps may run in separate processes),
        with the run's embedder when one is given."""
        return Home(self.settings(), embedder.get() if embedder is not None else None)


class EmbedderResource(dg.ConfigurableResource):
    """The embedder, built on the first text that needs embedding (constructing it loads no model
    and calls no endpoint, so a run that changes nothing never imports torch).

    Unset fields read the environment (``Settings.load``): ``url`` MEMORY_EMBEDDING_URL (an
    OpenAI-compatible ``.../v1`` endpoint; unset = the local sentence-transformers model),
    ``model`` MEMORY_EMBEDDING_MODEL ('default' = the bundled all-MiniLM-L6-v2, or a local model
    path; with ``url``, the endpoint's model name), the key MEMORY_EMBEDDING_API_KEY or
    OPENAI_API_KEY. ``batch_size`` unset: 32 texts per local batch, 64 per request."""

    model: str | None = None
    url: str | None = None
    batch_size: int | None = None
    _embedder: Embedder | HttpEmbedder | None = PrivateAttr(default=None)

    def get(self) -> Embedder | HttpEmbedder:
        if self._embedder is None:
            overrides = {k: v for k, v in (("embedding_model", self.model), ("embedding_url", self.url)) if v}
            self._embedder = make_embedder(Settings.load(**overrides), self.batch_size)
        return self._embedder
