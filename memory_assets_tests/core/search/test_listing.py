"""Listing memories with their provenance: every row once across pages, newest fact first,
filters as search's, tombstones honoured, provenance read from the row and the home."""

from datetime import date

import pytest

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.confirmations import Confirmation, append_confirmations
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.search.listing import CursorError, get_memory, list_memories
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts


def build(settings: Settings, indexer: Indexer) -> None:
    write_facts(
        settings, date(2026, 11, 1), "Is allergic to peanuts", "Carries an EpiPen", category="personal"
    )
    write_facts(
        settings,
        date(2026, 11, 20),
        "Deploys on a Hetzner VPS",
        category="technical",
        hour=14,
        chat="feed0001",
    )
    write_facts(settings, date(2026, 11, 20), "Uses Docker Compose for the side project", hour=15)
    (settings.notebook_dir / "3_Personal" / "Food.md").write_text(
        "---\nstatus: draft\nupdated: 2026-11-25\n---\n## Allergies\n\n"
        "- Has a severe nut allergy. (confirmed 5x, last 2026-11-25)\n"
    )
    indexer.sweep()


def test_pages_list_every_row_once_newest_fact_first(settings: Settings, indexer: Indexer) -> None:
    build(settings, indexer)
    seen, cursor, pages = [], None, 0
    while True:
        page = list_memories(indexer.store, settings, cursor=cursor, limit=2)
        seen += page.memories
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 3 and len(seen) == 5 == len({m.id for m in seen})
    assert [m.provenance.date for m in seen] == [
        "2026-11-25",
        "2026-11-20",
        "2026-11-20",
        "2026-11-01",
        "2026-11-01",
    ]
    assert [m.content for m in seen[3:]] == ["Is allergic to peanuts", "Carries an EpiPen"]  # file order
    everything = list_memories(indexer.store, settings, limit=100)
    assert [m.id for m in everything.memories] == [m.id for m in seen] and everything.next_cursor is None


def test_provenance_names_the_file_the_block_and_the_confirmations(
    settings: Settings, indexer: Indexer
) -> None:
    build(settings, indexer)
    rows = {m.content: m for m in list_memories(indexer.store, settings, limit=100).memories}
    hetzner = rows["Deploys on a Hetzner VPS"]
    assert hetzner.provenance.file == "memory/archive/2026-11-20.md"
    assert hetzner.provenance.block == {"time": "14:00", "chat": "feed0001"}
    assert (hetzner.category, hetzner.source_type, hetzner.provenance.confirmations) == (
        "technical",
        "archive_log",
        1,
    )
    claim = rows["- Has a severe nut allergy. (confirmed 5x, last 2026-11-25)"]
    assert claim.provenance.file == "notebook/3_Personal/Food.md"
    assert claim.provenance.block == {"section": "Allergies"} and claim.provenance.status == "draft"
    assert claim.provenance.confirmations == 5 and claim.provenance.indexed_at
    append_confirmations(
        settings.confirmations_path,
        [
            Confirmation(
                "2026-11-21T10:00:00+00:00",
                "Deploys on a Hetzner VPS",
                "Deploys on a Hetzner VPS",
                "archive_log",
                "2026-11-20.md",
                1.0,
                "c1",
            )
        ]
        * 2,
    )
    again = get_memory(indexer.store, settings, hetzner.id)
    assert again is not None and again.provenance.confirmations == 3


def test_filters_and_tombstones(settings: Settings, indexer: Indexer) -> None:
    build(settings, indexer)
    vault = list_memories(indexer.store, settings, source_types=["notebook"])
    assert [m.source_file for m in vault.memories] == ["3_Personal/Food.md"]
    november_20 = list_memories(indexer.store, settings, since=date(2026, 11, 10), until=date(2026, 11, 22))
    assert {m.provenance.date for m in november_20.memories} == {"2026-11-20"}
    [epipen] = [
        m for m in list_memories(indexer.store, settings).memories if m.content == "Carries an EpiPen"
    ]
    append_tombstone(settings.tombstones_path, "Carries an EpiPen")  # hidden at once, before any reindex
    assert "Carries an EpiPen" not in [m.content for m in list_memories(indexer.store, settings).memories]
    assert get_memory(indexer.store, settings, epipen.id) is None
    assert get_memory(indexer.store, settings, "no-such-id") is None


@pytest.mark.parametrize("cursor", ["garbage", "W10", "WzEsMl0", "eyJhIjogMX0"])
def test_a_cursor_this_listing_did_not_hand_out_is_refused(
    settings: Settings, indexer: Indexer, cursor: str
) -> None:
    build(settings, indexer)
    with pytest.raises(CursorError, match="next_cursor"):
        list_memories(indexer.store, settings, cursor=cursor)


def test_an_empty_index_lists_nothing(settings: Settings, indexer: Indexer) -> None:
    page = list_memories(indexer.store, settings)
    assert page.memories == [] and page.next_cursor is None
    assert get_memory(indexer.store, settings, "x") is None
