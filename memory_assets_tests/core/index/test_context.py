from datetime import date

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.retrieval import search
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

# -- context ---------------------------------------------------------------------------------------------


def test_neighbours_come_from_the_same_block_scored_and_never_duplicate_a_hit(
    settings: Settings, indexer: Indexer
) -> None:
    write_facts(
        settings,
        date(2026, 11, 1),
        "Prefers metric units in all answers",
        "Marco's sister is called Ana",
        "Ana works as a paediatric nurse in Porto",
        "Marco's brother is called Rui",
        "Rui repairs bicycles in Braga",
    )
    write_facts(
        settings, date(2026, 11, 1), "Marco plays the cello", hour=15, chat="beef0000"
    )  # another block
    indexer.sweep()
    store, embedder, today = indexer.store, indexer.embedder, date(2026, 11, 29)
    [hit] = search(store, "Marco's sister Ana", embedder=embedder, limit=1, context=1, today=today)
    assert hit.content == "Marco's sister is called Ana"
    assert [(c.content, c.offset) for c in hit.context] == [
        ("Prefers metric units in all answers", -1),
        ("Ana works as a paediatric nurse in Porto", 1),
    ]
    # Each context line carries the score it has as a hit of the same query.
    wide = {
        h.content: h.score
        for h in search(store, "Marco's sister Ana", embedder=embedder, limit=10, today=today)
    }
    assert all(c.score == wide[c.content] for c in hit.context)
    # Two lines: the second block's line is never context, and no line is both a hit and context.
    hits = search(store, "Marco's siblings", embedder=embedder, limit=3, context=2, today=today)
    ids = [h.id for h in hits]
    shown = [c.id for h in hits for c in h.context]
    assert not set(ids) & set(shown) and len(shown) == len(set(shown))
    assert "Marco plays the cello" not in {c.content for h in hits for c in h.context}
    # Without the option, no context is fetched.
    assert all(h.context == [] for h in search(store, "Marco's sister", embedder=embedder, today=today))


def test_neighbours_stay_within_a_page_section(settings: Settings, indexer: Indexer) -> None:
    (settings.notebook_dir / "3_Personal" / "People.md").write_text(
        "---\nstatus: stable\nupdated: 2026-11-25\n---\n"
        "## Family\n- Marco's sister is called Ana.\n- Ana works as a nurse in Porto.\n\n"
        "## Hobbies\n- Plays the cello on Sundays.\n"
    )
    indexer.sweep()
    [hit] = search(indexer.store, "Ana nurse Porto", embedder=indexer.embedder, limit=1, context=3)
    assert hit.content == "- Ana works as a nurse in Porto."
    assert [c.content for c in hit.context] == ["- Marco's sister is called Ana."]
