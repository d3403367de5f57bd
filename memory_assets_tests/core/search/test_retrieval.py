import json
from datetime import date

import numpy as np
import pytest

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore, VectorWidthMismatch
from memory_assets.core.knowledge.recall_log import rotated
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.retrieval import EmptyIndexError, flush_recalls, keyword_search, search
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.core.index.test_store import assistant_table


def build(settings: Settings, indexer: Indexer) -> None:
    write_facts(
        settings, date(2026, 11, 1), "Is allergic to peanuts and carries an EpiPen", category="personal"
    )
    write_facts(
        settings,
        date(2026, 11, 20),
        "Deploys the side project on a Hetzner VPS with Docker Compose",
        category="technical",
    )
    (settings.notebook_dir / "3_Personal" / "Food.md").write_text(
        "---\nstatus: stable\nupdated: 2026-11-25\n---\n- Has a severe nut allergy. (confirmed 5x, last 2026-11-25)\n"
    )
    indexer.sweep()


def test_hybrid_search_ranks_semantic_matches(settings: Settings, indexer: Indexer) -> None:
    build(settings, indexer)
    hits = search(
        indexer.store, "food allergies", SearchFilters(today=date(2026, 11, 29)), embedder=indexer.embedder
    )
    assert {h.source_type for h in hits[:2]} == {"archive_log", "notebook"}
    assert "Hetzner" in hits[-1].content
    assert hits == sorted(hits, key=lambda h: -h.score)
    top = hits[0]
    assert top.score > 0 and top.semantic > 0.3


def test_filters_by_source_type_and_fact_date(settings: Settings, indexer: Indexer) -> None:
    build(settings, indexer)
    only_vault = search(
        indexer.store, "allergy", SearchFilters(source_types=["notebook"]), embedder=indexer.embedder
    )
    assert [h.source_file for h in only_vault] == ["3_Personal/Food.md"]
    recent = search(
        indexer.store,
        "allergy",
        SearchFilters(since=date(2026, 11, 10), until=date(2026, 11, 22)),
        embedder=indexer.embedder,
    )
    assert [h.source_date for h in recent] == ["2026-11-20"]


def test_full_text_fallback_without_an_embedder(settings: Settings, indexer: Indexer) -> None:
    build(settings, indexer)
    hits = search(indexer.store, "Hetzner docker?", embedder=None)
    assert hits and "Hetzner" in hits[0].content and hits[0].semantic == 0.0 and hits[0].bm25 == 1.0


def test_the_read_path_never_writes_the_index_and_logs_recalls(settings: Settings, indexer: Indexer) -> None:
    build(settings, indexer)
    version = indexer.store.version()
    hits = search(
        indexer.store, "peanuts", SearchFilters(limit=2), embedder=indexer.embedder, settings=settings
    )
    assert indexer.store.version() == version
    flush_recalls()  # the recall signal is written off the search's path
    lines = [json.loads(x) for x in settings.recall_log_path.read_text().splitlines()]
    assert [x["snippet"] for x in lines] == [h.content[:160] for h in hits]
    assert set(lines[0]) == {"ts", "snippet", "source_type"}


def test_an_empty_or_never_built_index_says_so_and_names_reindex(
    settings: Settings, indexer: Indexer
) -> None:
    with pytest.raises(EmptyIndexError, match=r"never been built .* run `memory-assets reindex`"):
        search(Indexer(settings).store, "anything")
    write_facts(settings, date(2026, 11, 1), "Keeps bees on the roof of the flat")
    indexer.sweep()
    append_tombstone(settings.tombstones_path, "Keeps bees on the roof of the flat")
    indexer.sweep()  # the only row is forgotten: the table exists and is empty
    with pytest.raises(EmptyIndexError, match=r"is empty; run `memory-assets reindex`"):
        search(indexer.store, "bees")


def test_other_users_rows_are_never_returned(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2026, 11, 1), "Keeps bees on the roof of the flat")
    alice = Settings.load(settings.home, user_id="alice")
    Indexer(alice, embedder=indexer.embedder).sweep()
    assert search(Indexer(alice).store, "bees", embedder=None)  # alice sees her row
    bob = Indexer(Settings.load(settings.home, user_id="bob")).store
    assert search(bob, "bees", embedder=indexer.embedder) == []


def test_contents_are_capped_at_the_setting(settings: Settings, indexer: Indexer) -> None:
    huge = "coffee " + "x" * 1_000_000
    write_facts(settings, date(2026, 11, 1), huge, "Drinks oat milk in coffee every morning")
    indexer.sweep()
    capped = Settings.load(settings.home, search_max_chars="300")
    hits = search(indexer.store, "coffee", embedder=indexer.embedder, settings=capped)
    by_truncation = {h.truncated: h for h in hits}
    assert len(by_truncation[True].content) == 300 and by_truncation[True].content.startswith("coffee x")
    assert by_truncation[False].content == "Drinks oat milk in coffee every morning"


def test_tombstoned_content_is_filtered_at_query_time(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2026, 11, 1), "Keeps bees on the roof of the flat", "Prefers metric units")
    indexer.sweep()
    assert any("bees" in h.content for h in search(indexer.store, "bees", settings=settings))
    version = indexer.store.version()
    append_tombstone(settings.tombstones_path, "keeps BEES on the roof of the flat")  # no reindex yet
    hits = search(indexer.store, "bees", embedder=indexer.embedder, settings=settings)
    assert hits and not any("bees" in h.content for h in hits)
    assert indexer.store.version() == version  # filtered on the way out, not deleted


def test_a_query_of_another_width_names_the_fix(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2026, 11, 1), "Keeps bees on the roof of the flat")
    indexer.sweep()
    with pytest.raises(VectorWidthMismatch, match=r"memory-assets reindex --full"):
        search(indexer.store, "bees", query_vector=np.ones(8, dtype=np.float32))


def test_an_assistant_era_table_is_searched_as_it_is(settings: Settings, embedder: Embedder) -> None:
    assistant_table(
        settings, vectors=embedder.embed(["Prefers metric units in all answers", "Was born in Coimbra"])
    )
    store = MemoryStore(settings.index_uri)
    version = store.version()
    hits = search(store, "where was I born?", SearchFilters(limit=1), embedder=embedder, settings=settings)
    assert [(h.content, h.source_type, h.source_date) for h in hits] == [
        ("Was born in Coimbra", "legacy_direct", "2026-05-01")
    ]
    assert store.version() == version and store.is_legacy()


def test_the_recall_log_rotates_at_its_size(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2026, 11, 1), "Keeps bees on the roof of the flat")
    indexer.sweep()
    small = Settings.load(settings.home, recall_log_max_bytes="400")
    for _ in range(12):
        search(indexer.store, "bees", embedder=indexer.embedder, settings=small)
    flush_recalls()
    current, previous = small.recall_log_path, rotated(small.recall_log_path)
    assert previous.exists() and current.stat().st_size <= 400 + 200
    lines = [json.loads(x) for x in (previous.read_text() + current.read_text()).splitlines()]
    assert {x["snippet"] for x in lines} == {"Keeps bees on the roof of the flat"}


# -- keyword_search: the write path's recall of known facts ----------------------------------------


def test_keyword_search_is_bm25_alone_and_keeps_near_duplicates_apart(
    settings: Settings, indexer: Indexer
) -> None:
    for day in (1, 2):  # one fact on two days: search() collapses them, keyword_search must not
        write_facts(settings, date(2026, 11, day), "Wants to be reminded to drink water every hour")
    write_facts(settings, date(2026, 11, 3), "Drinks water from a blue bottle")
    (settings.notebook_dir / "3_Personal" / "Health.md").write_text(  # a higher importance, fewer words
        "---\nstatus: stable\nupdated: 2026-11-25\n---\n- Likes water. (confirmed 20x, last 2026-11-25)\n"
    )
    indexer.sweep()
    version = indexer.store.version()
    hits = keyword_search(indexer.store, "reminded to drink water every hour", settings=settings, limit=3)
    assert {h.content for h in hits[:2]} == {"Wants to be reminded to drink water every hour"}
    assert {h.source_date for h in hits[:2]} == {"2026-11-01", "2026-11-02"}  # both copies, in BM25's order
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].bm25 == 1.0 and all(h.semantic == 0.0 and h.duplicates == 0 for h in hits)
    assert indexer.store.version() == version  # a read: nothing written, no recall logged
    assert not settings.recall_log_path.exists()


def test_keyword_search_filters_tombstones_even_when_they_fill_the_first_page(
    settings: Settings, indexer: Indexer
) -> None:
    for day in range(1, 6):  # five copies of the forgotten fact outrank the one left
        write_facts(settings, date(2026, 11, day), "Keeps bees on the roof of the flat")
    write_facts(settings, date(2026, 11, 6), "Sold the bees")
    indexer.sweep()
    append_tombstone(settings.tombstones_path, "Keeps bees on the roof of the flat")  # no reindex yet
    hits = keyword_search(indexer.store, "keeps bees on the roof", settings=settings, limit=1)
    assert [h.content for h in hits] == ["Sold the bees"]


def test_keyword_search_reads_an_assistant_era_table_as_it_is_and_says_when_empty(
    settings: Settings, embedder: Embedder
) -> None:
    with pytest.raises(EmptyIndexError, match=r"never been built .* run `memory-assets reindex`"):
        keyword_search(MemoryStore(settings.index_uri), "anything")
    assistant_table(
        settings, vectors=embedder.embed(["Prefers metric units in all answers", "Was born in Coimbra"])
    )
    store = MemoryStore(settings.index_uri)
    assert keyword_search(store, "born in Coimbra", settings=settings) == []  # no full-text index
    from lancedb.index import FTS

    store.table().create_index("content", config=FTS())  # as an assistant that searched by words
    version = store.version()
    hits = keyword_search(store, "born in Coimbra", settings=settings)
    assert [(h.content, h.source_type) for h in hits] == [("Was born in Coimbra", "legacy_direct")]
    assert store.version() == version and store.is_legacy()
