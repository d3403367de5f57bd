import json
from datetime import date

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.retrieval import search
from memory_assets.settings import Settings
from memory_assets_tests.conftest import write_facts


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
    hits = search(indexer.store, "food allergies", embedder=indexer.embedder, today=date(2026, 11, 29))
    assert {h.source_type for h in hits[:2]} == {"archive_log", "notebook"}
    assert "Hetzner" in hits[-1].content
    assert hits == sorted(hits, key=lambda h: -h.score)
    top = hits[0]
    assert top.score > 0 and top.semantic > 0.3


def test_filters_by_source_type_and_fact_date(settings: Settings, indexer: Indexer) -> None:
    build(settings, indexer)
    only_vault = search(indexer.store, "allergy", embedder=indexer.embedder, source_types=["notebook"])
    assert [h.source_file for h in only_vault] == ["3_Personal/Food.md"]
    recent = search(
        indexer.store,
        "allergy",
        embedder=indexer.embedder,
        date_from=date(2026, 11, 10),
        date_to=date(2026, 11, 22),
    )
    assert [h.source_date for h in recent] == ["2026-11-20"]


def test_full_text_fallback_without_an_embedder(settings: Settings, indexer: Indexer) -> None:
    build(settings, indexer)
    hits = search(indexer.store, "Hetzner docker?", embedder=None)
    assert hits and "Hetzner" in hits[0].content and hits[0].semantic == 0.0 and hits[0].full_text == 1.0


def test_the_read_path_never_writes_the_index_and_logs_recalls(settings: Settings, indexer: Indexer) -> None:
    build(settings, indexer)
    version = indexer.store.version()
    hits = search(
        indexer.store, "peanuts", embedder=indexer.embedder, recall_log=settings.recall_log_path, limit=2
    )
    assert indexer.store.version() == version
    lines = [json.loads(x) for x in settings.recall_log_path.read_text().splitlines()]
    assert [x["snippet"] for x in lines] == [h.content[:160] for h in hits]
    assert set(lines[0]) == {"ts", "snippet", "source_type"}


def test_empty_index_returns_nothing(settings: Settings) -> None:
    assert search(Indexer(settings).store, "anything") == []


def test_other_users_rows_are_never_returned(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2026, 11, 1), "Keeps bees on the roof of the flat")
    alice = Settings.load(settings.home, user_id="alice")
    Indexer(alice, embedder=indexer.embedder).sweep()
    assert search(Indexer(alice).store, "bees", embedder=None)  # alice sees her row
    bob = Indexer(Settings.load(settings.home, user_id="bob")).store
    assert not bob.only_this_user()
    assert search(bob, "bees", embedder=indexer.embedder) == []
