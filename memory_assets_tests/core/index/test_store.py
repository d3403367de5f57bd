"""The LanceDB store: an assistant-era table is migrated in place, legacy rows are protected."""

import json
from datetime import datetime

import numpy as np
import pyarrow as pa
import pytest

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore, StoreError, quote
from memory_assets.settings import Settings
from memory_assets_tests.conftest import DAY, write_facts


def assistant_table(settings: Settings, dim: int = 384, vectors: np.ndarray | None = None) -> None:
    """A table as the assistant (suzent v0.9.1) wrote it: uuid ids, metadata JSON, no first-class columns."""
    import lancedb

    if vectors is None:
        vectors = np.random.default_rng(0).normal(size=(2, dim)).astype(np.float32)
    dim = vectors.shape[1]
    ts = datetime(2026, 5, 1)
    data = pa.table(
        {
            "id": ["8d3c7f0e-uuid-indexer-row", "1f2e3d4c-uuid-legacy-row"],
            "content": ["Prefers metric units in all answers", "Was born in Coimbra"],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim),
            "user_id": ["default-user"] * 2,
            "chat_id": pa.nulls(2, pa.string()),
            "metadata": [
                json.dumps(
                    {
                        "source_type": "archive_log",
                        "source_file": f"{DAY.isoformat()}.md",
                        "category": "preference",
                        "tags": [],
                    }
                ),
                json.dumps({"source_date": "2026-05-01"}),
            ],
            "importance": [0.5, 0.8],
            "created_at": [ts, ts],
            "updated_at": [ts, ts],
            "accessed_at": pa.nulls(2, pa.timestamp("us")),
            "access_count": [0, 3],
        }
    )
    lancedb.connect(settings.index_uri).create_table("archival_memories", data=data)


def test_assistant_table_is_migrated_and_its_indexer_rows_replaced(
    settings: Settings, indexer: Indexer
) -> None:
    assistant_table(settings)
    store = MemoryStore(settings.index_uri)
    assert store.is_legacy() and store.migrate() and not store.is_legacy()
    assert store.count("source_type = 'archive_log'") == 1
    assert store.count("source_type IS NULL") == 1  # the legacy row keeps no source
    assert store.table_id is not None
    write_facts(settings, DAY, "Prefers metric units in all answers")
    result = Indexer(settings, store=store, embedder=indexer.embedder).reindex_day(DAY)
    assert (result.deleted, result.inserted) == (1, 1)  # the uuid row gives way to a deterministic id
    legacy = store.scan(["id", "content", "access_count"], where="source_type IS NULL").to_pylist()
    assert legacy == [{"id": "1f2e3d4c-uuid-legacy-row", "content": "Was born in Coimbra", "access_count": 3}]


def test_rebuilding_for_a_new_model_refuses_to_drop_legacy_rows(settings: Settings) -> None:
    assistant_table(settings, dim=8)
    store = MemoryStore(settings.index_uri)
    store.migrate()
    with pytest.raises(StoreError, match="1 legacy row"):
        store.recreate("default", 384)
    assert store.count() == 2


def test_quote_escapes_single_quotes() -> None:
    assert quote("O'Brien.md") == "'O''Brien.md'"
