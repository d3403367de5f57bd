"""The LanceDB store: an assistant-era table is migrated in place, legacy rows are protected."""

import json
import threading
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.rows import IndexRow
from memory_assets.core.index.store import MemoryStore, StoreError, quote
from memory_assets.core.index.table_writer import Pruned, TableWriter
from memory_assets.core.settings import Settings
from memory_assets.core.sources import ARCHIVE
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
    assert store.is_legacy() and TableWriter(store).migrate() and not store.is_legacy()
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
    TableWriter(store).migrate()
    with pytest.raises(StoreError, match="1 legacy row"):
        TableWriter(store).recreate("default", 384)
    assert store.count() == 2


def test_quote_escapes_single_quotes() -> None:
    assert quote("O'Brien.md") == "'O''Brien.md'"


# -- caches brought forward through the store's own commits ---------------------------------------
def _row(n: int, source_file: str, content: str | None = None, importance: float = 0.5) -> IndexRow:
    day = source_file.removesuffix(".md")
    return IndexRow(
        id=f"row-{source_file}-{n}",
        content=content or f"Fact number {n} of {source_file}",
        source_type=ARCHIVE,
        source_file=source_file,
        chunk_index=n,
        category="general",
        importance=importance,
        source_date=day,
        fact_date=day,
        metadata=json.dumps({"n": n}),
    )


def _vectors(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 4)).astype(np.float32)


def _same_existing(a: tuple[dict, dict], b: tuple[dict, dict]) -> None:
    (rows_a, copies_a), (rows_b, copies_b) = a, b
    assert copies_a == copies_b and set(rows_a) == set(rows_b)
    for row_id, row in rows_a.items():
        other = rows_b[row_id]
        assert row.scalars == other.scalars and row.created_at == other.created_at, row_id
        assert np.array_equal(row.vector, other.vector), row_id


def test_a_files_rows_and_the_read_facts_carried_through_own_commits_equal_a_fresh_read(
    settings: Settings,
) -> None:
    """The diff's rows of a file and the read facts, cached at one version and brought forward
    through the store's own adds and deletes, are exactly what a fresh store reads; a commit made
    by anyone else breaks the chain, and the next read goes to the table."""
    rng = np.random.default_rng(7)
    store = MemoryStore(settings.index_uri)
    table = TableWriter(store).table_for_write("test-model", 4)
    files = ["2026-11-01.md", "2026-11-02.md"]
    TableWriter(store).apply_diff(
        table, [], [_row(n, f) for f in files for n in range(5)], _vectors(10, 1), [None] * 10
    )
    store.existing(ARCHIVE, files[0])
    store.read_facts()
    scans = 0
    original = store._existing_forward

    def counting(source: tuple[str, str], version: int) -> object:
        nonlocal scans
        found = original(source, version)
        scans += found is None
        return found

    store._existing_forward = counting  # type: ignore[method-assign]
    next_n = 5
    for step in range(12):
        present = sorted(store.existing(ARCHIVE, files[0])[0])
        gone = [i for i in present if rng.random() < 0.3]
        changed = [i for i in present if i not in gone and rng.random() < 0.2]
        adds = [_row(next_n + k, files[step % 2]) for k in range(int(rng.integers(0, 3)))]
        next_n += len(adds)
        kept = [_row(int(i.rsplit("-", 1)[1]), files[0], importance=0.6 + step / 100) for i in changed]
        rows = adds + kept
        TableWriter(store).apply_diff(
            store.table(), gone + changed, rows, _vectors(len(rows), step), [None] * len(rows)
        )
        fresh = MemoryStore(settings.index_uri)
        for source in files:
            _same_existing(store.existing(ARCHIVE, source), fresh.existing(ARCHIVE, source))
        mine, theirs = store.read_facts(), fresh.read_facts()
        assert (mine.version, mine.rows, mine.single_user, mine.fts) == (
            theirs.version,
            theirs.rows,
            theirs.single_user,
            theirs.fts,
        )
    assert scans == 1  # files[1]'s first read; files[0] was carried forward every time

    version = store.current_version()
    other = MemoryStore(settings.index_uri)  # another writer (another process, say)
    TableWriter(other).apply_diff(other.table(), [], [_row(99, files[0])], _vectors(1, 99), [None])
    assert store.changes_since(version) is None
    _same_existing(
        store.existing(ARCHIVE, files[0]), MemoryStore(settings.index_uri).existing(ARCHIVE, files[0])
    )
    assert scans == 2
    assert "row-2026-11-01.md-99" in store.existing(ARCHIVE, files[0])[0]
    assert store.read_facts().rows == MemoryStore(settings.index_uri).count()


def test_a_snapshot_reads_one_version_and_its_own_commits_move_it(settings: Settings) -> None:
    store = MemoryStore(settings.index_uri)
    table = TableWriter(store).table_for_write("test-model", 4)
    TableWriter(store).apply_diff(table, [], [_row(0, "2026-11-01.md")], _vectors(1, 0), [None])
    other = MemoryStore(settings.index_uri)
    with store.snapshot():
        start = store.current_version()
        TableWriter(other).apply_diff(other.table(), [], [_row(1, "2026-11-01.md")], _vectors(1, 1), [None])
        assert store.current_version() == start and set(store.existing(ARCHIVE, "2026-11-01.md")[0]) == {
            "row-2026-11-01.md-0"
        }
        TableWriter(store).apply_diff(store.table(), [], [_row(2, "2026-11-01.md")], _vectors(1, 2), [None])
        assert store.current_version() == start + 2  # on top of the other writer's commit
        assert store.changes_since(start) is None  # ... so not a delta of this store's alone
    assert set(store.existing(ARCHIVE, "2026-11-01.md")[0]) == {f"row-2026-11-01.md-{n}" for n in range(3)}


# -- a version pruned under a read -------------------------------------------------------------
def _three_fragments(settings: Settings) -> MemoryStore:
    """A table of three fragments (three commits, none compacted), as the turns of a day leave it."""
    store = MemoryStore(settings.index_uri)
    writer = TableWriter(store)
    table = writer.table_for_write("test-model", 4)
    for n in range(3):
        writer.apply_diff(
            table, [], [_row(n, "2026-11-01.md", f"Grows basil number {n}")], _vectors(1, n), [None]
        )
    return store


def _prune_under_the_next_read(
    reader: MemoryStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next read of ``reader`` has the version it opened pruned under it: right after it opens
    the latest version and before it reads a byte of its data, a writer on another handle commits,
    compacts, and prunes every version but the latest (what an erase does). That version's data
    files are then gone, as when a writer in another process pruned it."""
    look = reader._guard
    armed = [True]
    pruned: list[Pruned] = []

    def prune() -> None:  # on a thread of its own, as another process would
        other = MemoryStore(settings.index_uri)
        writer = TableWriter(other)
        writer.apply_diff(
            other.table(), [], [_row(9, "2026-11-02.md", "Grows thyme too")], _vectors(1, 9), [None]
        )
        writer.optimize(retention=timedelta(0))
        pruned.append(writer.prune_versions(timedelta(0), keep_latest_only=True))

    def look_then_prune() -> None:
        look()
        if armed.pop() if armed else False:
            elsewhere = threading.Thread(target=prune)
            elsewhere.start()
            elsewhere.join()
            assert pruned and pruned[0].done

    monkeypatch.setattr(reader, "_guard", look_then_prune)


@pytest.mark.parametrize("read", ["count", "scan", "search", "keyword_search"])
def test_a_read_whose_version_is_pruned_under_it_reads_the_latest_version_instead(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, read: str
) -> None:
    """Design §8.6: a reader in another process holds no lock a prune waits for. A read that meets
    a file of its version gone opens the table afresh and reads once more, at the latest version:
    it answers (with the newer rows) instead of calling the table damaged."""
    from memory_assets.core.search.filters import SearchFilters
    from memory_assets.core.search.retrieval import keyword_search, search

    store = _three_fragments(settings)
    query = np.ones(4, dtype=np.float32)
    search(store, "basil", query_vector=query, log_recall=False)  # the handles are open, as served
    other = MemoryStore(settings.index_uri)  # two more fragments, which this store has not read yet
    TableWriter(other).apply_diff(other.table(), [], [_row(3, "2026-11-01.md")], _vectors(1, 3), [None])
    TableWriter(other).apply_diff(other.table(), [], [_row(4, "2026-11-01.md")], _vectors(1, 4), [None])
    _prune_under_the_next_read(store, settings, monkeypatch)
    if read == "count":  # with a filter (a count alone reads only the version's manifest)
        assert store.count("content IS NOT NULL") == 6
    elif read == "scan":
        assert len(store.scan(["id", "content"])) == 6
    elif read == "search":
        assert (
            len(search(store, "basil thyme", SearchFilters(limit=10), query_vector=query, log_recall=False))
            == 6
        )
    else:
        assert {h.content for h in keyword_search(store, "thyme")} == {"Grows thyme too"}
    assert store.reread == 1


def test_a_file_gone_from_the_latest_version_too_is_damage(settings: Settings) -> None:
    """Read again at the latest version, a file still missing is the table's damage: said with the
    fix (``reindex --rebuild``), never as a raw LanceDB error."""
    from memory_assets.core.index.store import DamagedTableError, VersionGoneError

    store = _three_fragments(settings)
    assert store.count() == 3
    data = Path(settings.index_uri) / "archival_memories.lance" / "data"
    next(data.iterdir()).unlink()  # deleted by hand: no prune did it
    with pytest.raises(DamagedTableError, match="is missing .*reindex --rebuild") as raised:
        store.scan(["id", "content"])
    assert not isinstance(raised.value, VersionGoneError) and store.reread == 1
