"""The indexer against a real LanceDB with the real model."""

import shutil
from datetime import date
from pathlib import Path

import pytest

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import BrokenTableError, MemoryStore, VectorWidthMismatch, quote
from memory_assets.core.index.table_writer import TableWriter
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.knowledge.watermark import append_ingest_entry
from memory_assets.core.models.embedder import Embedder, EmbedderError
from memory_assets.core.settings import Settings
from memory_assets.core.sources import ARCHIVE, CORE_FILE, NOTEBOOK
from memory_assets_tests.conftest import DAY, write_facts

FACTS = [
    "Prefers metric units in all answers",
    "Deploys the side project on a Hetzner VPS with Docker Compose",
    "Wants to finish the marathon training plan by October",
    "Lives in Lisbon and works remotely as a data engineer",
]


def contents(store: MemoryStore, source_type: str | None = None) -> list[str]:
    return sorted(c for _, c, t in store.contents() if source_type is None or t == source_type)


def test_appending_k_lines_embeds_exactly_k(settings: Settings, embedder: Embedder) -> None:
    fresh = Embedder()  # an empty cache, so the model's work is exactly what this test causes
    indexer = Indexer(settings, embedder=fresh)
    write_facts(settings, DAY, *FACTS[:2])
    assert indexer.reindex_day(DAY).computed == 2
    write_facts(settings, DAY, *FACTS[2:], hour=10)
    result = indexer.reindex_day(DAY)
    assert (result.embedded, result.computed, result.deleted, result.inserted) == (2, 2, 0, 2)
    assert fresh.computed == 4
    assert result.commits == 1
    assert contents(indexer.store) == sorted(FACTS)


def test_second_reindex_changes_nothing_and_makes_no_version(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, DAY, *FACTS)
    (settings.notebook_dir / "3_Personal" / "Health.md").write_text(
        "---\nstatus: stable\n---\n- Runs daily.\n"
    )
    first = indexer.sweep()
    assert first.embedded == 5 and first.files_updated == 2
    version = indexer.store.version()
    again = indexer.sweep()
    assert (again.embedded, again.deleted, again.files_updated) == (0, 0, 0)
    full = indexer.sweep(full=True)  # ignores the state, diffs every file against the table
    assert (full.embedded, full.deleted, full.files_updated) == (0, 0, 0)
    assert indexer.reindex_day(DAY).commits == 0
    assert indexer.store.version() == version


def test_tombstone_and_reindex_removes_that_row_and_only_it(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, DAY, *FACTS)
    write_facts(settings, date(2026, 11, 21), FACTS[0])  # same text on another day
    indexer.sweep()
    ids_before = {i for i, _, _ in indexer.store.contents()}
    append_tombstone(settings.tombstones_path, FACTS[1].upper())
    result = indexer.reindex_day(DAY)
    assert (result.deleted, result.embedded, result.tombstoned) == (1, 0, 1)
    remaining = {i for i, _, _ in indexer.store.contents()}
    assert len(ids_before - remaining) == 1 and remaining < ids_before
    assert FACTS[1] not in contents(indexer.store)
    assert contents(indexer.store).count(FACTS[0]) == 2


def test_a_home_without_a_fold_ledger_drops_the_logs_at_or_below_its_watermark(
    settings: Settings, indexer: Indexer
) -> None:
    """A home of an older version (no ``folds.jsonl``) is read as its watermark says: what older
    versions consolidated, whole days at a time, stays out of the index."""
    write_facts(settings, date(2026, 11, 18), FACTS[0])
    write_facts(settings, date(2026, 11, 19), FACTS[1])
    write_facts(settings, DAY, FACTS[2])
    indexer.sweep()
    append_ingest_entry(settings.log_md, date(2026, 11, 20), date(2026, 11, 19))
    result = indexer.sweep()
    assert result.deleted == 2
    assert contents(indexer.store) == [FACTS[2]]
    plan = indexer.plan_day(date(2026, 11, 19))
    assert plan.folded == 1 and plan.rows == []
    assert not settings.folds_path.exists()  # reading never writes the ledger


def test_deleted_page_rows_disappear_and_page_edits_diff(settings: Settings, indexer: Indexer) -> None:
    page = settings.notebook_dir / "2_Wiki" / "Concepts" / "O'Brien.md"
    page.write_text("---\ntitle: x\n---\nFirst paragraph about sailing.\n\nSecond paragraph about knots.\n")
    assert indexer.sweep().embedded == 1  # two short paragraphs merge into one chunk
    page.write_text(
        "---\ntitle: x\nstatus: deprecated\n---\nFirst paragraph about sailing.\n\n"
        "Second paragraph about knots.\n"
    )
    status_only = indexer.sweep()
    assert (status_only.embedded, status_only.deleted) == (0, 0)  # same content: vector reused
    assert [h for h in indexer.store.existing(NOTEBOOK, "2_Wiki/Concepts/O'Brien.md")[0].values()][0].scalars[
        5
    ] == 0.1
    page.unlink()
    gone = indexer.sweep()
    assert gone.deleted == 1
    assert indexer.store.existing(NOTEBOOK, "2_Wiki/Concepts/O'Brien.md") == ({}, {})


def test_memory_md_zones_are_separate_rows(settings: Settings, indexer: Indexer) -> None:
    (settings.memory_dir / "MEMORY.md").write_text(
        "<!-- memory:generated -->\n## Profile\n- Lives in Lisbon\n<!-- /memory:generated -->\n\n"
        "<!-- verified: human:alice at 2026-08-01T00:00:00Z -->\nMy name is Alice.\n"
    )
    indexer.sweep()
    rows, _ = indexer.store.existing(CORE_FILE, "MEMORY.md")
    by_content = {e.scalars[0]: e.scalars[5] for e in rows.values()}
    assert by_content == {"## Profile\n- Lives in Lisbon": 0.5, "My name is Alice.": 0.9}


def test_unparseable_lines_and_bad_bytes_are_reported_not_fatal(settings: Settings, indexer: Indexer) -> None:
    path = settings.archive_dir / f"{DAY.isoformat()}.md"
    raw = b"# Daily Log\n\n- [personal] Lives in M\xfcnchen\n- [oops no close\n- [goal] Run a marathon\n"
    path.write_bytes(raw)
    result = indexer.reindex_day(DAY)
    assert result.rows == 2 and result.skipped_lines == 1
    assert any("line 3: invalid UTF-8" in w for w in result.warnings)
    assert any("line 4: not a fact line" in w for w in result.warnings)
    assert path.read_bytes() == raw


def test_embedding_failure_leaves_the_index_untouched(
    settings: Settings, indexer: Indexer, tmp_path: Path
) -> None:
    write_facts(settings, DAY, FACTS[0])
    indexer.sweep()
    version = indexer.store.version()
    write_facts(settings, DAY, FACTS[1], hour=11)
    append_tombstone(settings.tombstones_path, FACTS[0])  # a delete is due too
    broken = Indexer(settings, embedder=Embedder(str(tmp_path / "no-such-model")))
    with pytest.raises(EmbedderError, match="cannot load embedding model"):
        broken.reindex_day(DAY)
    assert indexer.store.version() == version and contents(indexer.store) == [FACTS[0]]


def test_vector_width_mismatch_names_the_fix(
    settings: Settings, indexer: Indexer, embedder: Embedder
) -> None:
    store = MemoryStore(settings.index_uri)
    TableWriter(store).table_for_write("some-3072-model", 3072)  # an index built by another model
    write_facts(settings, DAY, FACTS[0])
    with pytest.raises(VectorWidthMismatch, match=r"memory-assets reindex --full"):
        indexer.reindex_day(DAY)
    result = Indexer(settings, embedder=embedder).sweep(full=True)
    assert result.embedded == 1 and MemoryStore(settings.index_uri).vector_width() == 384


def test_a_damaged_table_is_refused_not_overwritten_and_full_rebuilds_it(
    settings: Settings, embedder: Embedder
) -> None:
    write_facts(settings, DAY, *FACTS[:2])
    Indexer(settings, embedder=embedder).reindex_day(DAY)
    shutil.rmtree(Path(settings.index_uri) / "archival_memories.lance" / "_versions")
    write_facts(settings, DAY, FACTS[2], hour=10)
    # Writing a fresh table over the damaged one would silently drop the other files' rows.
    with pytest.raises(BrokenTableError, match=r"memory-assets reindex --full"):
        Indexer(settings, embedder=embedder).reindex_day(DAY)
    result = Indexer(settings, embedder=embedder).sweep(full=True)
    assert result.embedded == 3 and contents(MemoryStore(settings.index_uri)) == sorted(FACTS[:3])


def test_ids_are_deterministic_and_partitions_never_collide(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, DAY, FACTS[0], FACTS[0])  # a repeat within a day is a second occurrence
    write_facts(settings, date(2026, 11, 21), FACTS[0])
    a = indexer.plan_day(DAY)
    assert [r.id for r in a.rows] == [r.id for r in indexer.plan_day(DAY).rows]
    ids = [r.id for r in a.rows] + [r.id for r in indexer.plan_day(date(2026, 11, 21)).rows]
    assert len(set(ids)) == 3
    indexer.sweep()
    assert indexer.store.count(f"source_type = '{ARCHIVE}'") == 3


def test_full_reindex_drops_rows_of_files_that_no_longer_exist(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, DAY, FACTS[0])
    indexer.sweep()
    settings.index_state_path.unlink()  # state lost, and the log deleted behind our back
    (settings.archive_dir / f"{DAY.isoformat()}.md").unlink()
    result = Indexer(settings, embedder=indexer.embedder).sweep(full=True)
    assert result.deleted == 1 and indexer.store.count() == 0


@pytest.mark.parametrize("torn", [b"", b'{"version": 2, "table": "'], ids=["empty", "partial"])
def test_a_torn_index_state_is_discarded_and_costs_a_diff_not_a_row(
    settings: Settings, indexer: Indexer, torn: bytes
) -> None:
    """The state is written without fsync, so a crash may leave it empty or cut short: the next
    sweep says so, diffs every file against the table (embedding nothing, duplicating nothing)
    and records the state again."""
    write_facts(settings, DAY, *FACTS[:2])
    write_facts(settings, date(2026, 11, 21), FACTS[2])
    indexer.sweep()
    settings.index_state_path.write_bytes(torn)
    result = Indexer(settings, embedder=indexer.embedder).sweep()
    assert any("unreadable" in w and "index_state" in w for w in result.warnings)
    assert result.embedded == 0 and result.files_updated == 0 and result.deleted == 0
    assert not any(f.skipped_by_state for f in result.files)  # every file diffed
    assert indexer.store.count() == 3 and len(indexer.store.ids(ARCHIVE, f"{DAY.isoformat()}.md")) == 2
    again = Indexer(settings, embedder=indexer.embedder).sweep()
    assert not again.warnings and all(f.skipped_by_state for f in again.files if f.rows)


class DiffQueryFails(MemoryStore):
    """Fault injection: the real store, except that the per-file diff query errors out."""

    def existing(self, source_type: str, source_file: str) -> tuple:  # type: ignore[override]
        raise OSError("simulated LanceDB read failure")


def test_a_failed_diff_query_falls_back_to_a_full_replace(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, DAY, *FACTS[:3])
    indexer.reindex_day(DAY)
    append_tombstone(settings.tombstones_path, FACTS[0])
    store = DiffQueryFails(settings.index_uri)
    result = Indexer(settings, store=store, embedder=indexer.embedder).reindex_day(DAY)
    assert result.fallback and result.commits == 2 and result.inserted == 2
    assert any("diff query failed" in w for w in result.warnings)
    assert contents(indexer.store) == sorted(FACTS[1:3])
    assert indexer.reindex_day(DAY).commits == 0  # the replaced rows carry the same deterministic ids


def test_a_delete_only_reindex_does_not_load_the_model(
    settings: Settings, indexer: Indexer, tmp_path: Path
) -> None:
    write_facts(settings, DAY, *FACTS[:2])
    indexer.reindex_day(DAY)
    append_tombstone(settings.tombstones_path, FACTS[0])
    unloadable = Embedder(str(tmp_path / "no-such-model"))  # would raise if anything tried to load it
    result = Indexer(settings, embedder=unloadable).reindex_day(DAY)
    assert (result.deleted, result.embedded) == (1, 0)
    assert unloadable._model is None


def test_bulk_rebuild_of_an_empty_index_equals_the_per_file_diff(
    settings: Settings, indexer: Indexer, tmp_path: Path
) -> None:
    write_facts(settings, DAY, *FACTS)
    write_facts(settings, date(2026, 11, 21), FACTS[0], FACTS[0])
    (settings.notebook_dir / "3_Personal" / "Health.md").write_text(
        "---\nstatus: draft\n---\n- Runs daily.\n"
    )
    bulk = indexer.sweep()  # empty table: one embed call across files, no diff queries
    assert all(f.bulk for f in bulk.files) and bulk.embedded == 7
    per_file = Indexer(settings, store=MemoryStore(str(tmp_path / "other-index")), embedder=indexer.embedder)
    per_file.reindex_day(DAY)
    per_file.reindex_day(date(2026, 11, 21))
    per_file.reindex_files(labels=["notebook"])

    def rows(store: MemoryStore) -> list[dict]:
        return sorted(
            store.scan(["id", "content", "importance", "source_file"]).to_pylist(), key=lambda r: r["id"]
        )

    assert rows(indexer.store) == rows(per_file.store)
    assert indexer.sweep(full=True).embedded == 0


def crash_after_delete(self, table, delete_ids, add_rows, add_vectors, created):  # type: ignore[no-untyped-def]
    """Fault injection: the process dies between a file's delete commit and its add commit."""
    ids = sorted(set(delete_ids))
    if ids:
        table.delete("id IN (" + ", ".join(quote(i) for i in ids) + ")")
    raise KeyboardInterrupt("crashed half way through the run")


def test_a_crash_half_way_through_a_reindex_converges_on_the_next_run(
    settings: Settings, indexer: Indexer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_facts(settings, DAY, *FACTS[:2])
    indexer.sweep()
    append_tombstone(settings.tombstones_path, FACTS[0])
    write_facts(settings, DAY, FACTS[2], hour=12)
    with monkeypatch.context() as crashing, pytest.raises(KeyboardInterrupt):
        crashing.setattr(TableWriter, "apply_diff", crash_after_delete)
        Indexer(settings, store=MemoryStore(settings.index_uri), embedder=indexer.embedder).sweep()
    assert contents(indexer.store) == [FACTS[1]]  # the delete landed, the add did not
    retry = Indexer(settings, embedder=indexer.embedder).sweep()  # the state was not advanced by the crash
    assert (retry.embedded, retry.deleted) == (1, 0)
    assert contents(indexer.store) == sorted(FACTS[1:3])


def test_the_first_reindex_leaves_the_full_text_index_covering_every_row(
    settings: Settings, indexer: Indexer
) -> None:
    # The full-text index is created with the empty table; a first reindex of a small home (a bulk
    # fill far below the optimize threshold) used to leave it covering none of the rows.
    write_facts(settings, DAY, *FACTS)
    indexer.sweep()
    table = indexer.store.table()
    name = next(i.name for i in table.list_indices() if i.columns == ["content"])
    stats = table.index_stats(name)
    assert (stats.num_indexed_rows, stats.num_unindexed_rows) == (len(FACTS), 0)
