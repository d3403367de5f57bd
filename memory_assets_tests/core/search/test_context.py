from dataclasses import replace
from datetime import date

import pytest

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.ranking import RANKING
from memory_assets.core.search.retrieval import search
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
    plain = replace(RANKING, neighbour=0.0)  # no lift: a context line's score is its score as a hit
    [hit] = search(
        store,
        "Marco's sister Ana",
        SearchFilters(limit=1, context=1, today=today),
        embedder=embedder,
        ranking=plain,
    )
    assert hit.content == "Marco's sister is called Ana"
    assert [(c.content, c.offset) for c in hit.context] == [
        ("Prefers metric units in all answers", -1),
        ("Ana works as a paediatric nurse in Porto", 1),
    ]
    # Each context line carries the score it has as a hit of the same query.
    wide = {
        h.content: h.score
        for h in search(store, "Marco's sister Ana", SearchFilters(limit=10, today=today), embedder=embedder)
    }
    assert all(c.score == wide[c.content] for c in hit.context)
    # Two lines: the second block's line is never context, and no line is both a hit and context.
    hits = search(
        store, "Marco's siblings", SearchFilters(limit=3, context=2, today=today), embedder=embedder
    )
    ids = [h.id for h in hits]
    shown = [c.id for h in hits for c in h.context]
    assert not set(ids) & set(shown) and len(shown) == len(set(shown))
    assert "Marco plays the cello" not in {c.content for h in hits for c in h.context}
    # Without the option, no context is fetched.
    assert all(
        h.context == []
        for h in search(store, "Marco's sister", SearchFilters(today=today), embedder=embedder)
    )


def test_neighbours_stay_within_a_page_section(settings: Settings, indexer: Indexer) -> None:
    (settings.notebook_dir / "3_Personal" / "People.md").write_text(
        "---\nstatus: stable\nupdated: 2026-11-25\n---\n"
        "## Family\n- Marco's sister is called Ana.\n- Ana works as a nurse in Porto.\n\n"
        "## Hobbies\n- Plays the cello on Sundays.\n"
    )
    indexer.sweep()
    [hit] = search(
        indexer.store, "Ana nurse Porto", SearchFilters(limit=1, context=3), embedder=indexer.embedder
    )
    assert hit.content == "- Ana works as a nurse in Porto."
    assert [c.content for c in hit.context] == ["- Marco's sister is called Ana."]


# -- the neighbour lift ------------------------------------------------------------------------------


def test_a_line_next_to_the_best_hit_is_lifted_into_the_ranked_list(
    settings: Settings, indexer: Indexer
) -> None:
    # In a conversation the line that answers often sits beside the line that matches the question.
    write_facts(
        settings,
        date(2026, 11, 1),
        "Signed up for a pottery class at the community centre",
        "The teacher is called Yuki and she fires everything in a wood kiln",
    )
    others = [
        "Took a watercolour class at the library",
        "Joined a cooking class on Tuesdays",
        "Went to a yoga class at the gym",
        "Bought clay and glazes for the studio",
        "Watched a documentary about ceramics",
        "Visited a craft fair with handmade bowls",
    ]
    for n, line in enumerate(others):
        write_facts(settings, date(2026, 11, 2 + n), line)
    indexer.sweep()
    store, embedder, today = indexer.store, indexer.embedder, date(2026, 11, 29)
    question = "Who runs the pottery class?"
    plain = search(
        store,
        question,
        SearchFilters(limit=20, today=today),
        embedder=embedder,
        ranking=replace(RANKING, neighbour=0.0),
    )
    by_content = {h.content: h for h in plain}
    anchor, answer = (
        plain[0],
        by_content["The teacher is called Yuki and she fires everything in a wood kiln"],
    )
    assert anchor.content == "Signed up for a pottery class at the community centre"
    assert plain.index(answer) >= 4  # on its own words the answer is not among the first four
    lifted = search(store, question, SearchFilters(limit=4, today=today), embedder=embedder)
    assert [h.content for h in lifted][:2] == [anchor.content, answer.content]
    [hit] = [h for h in lifted if h.id == answer.id]
    expected = answer.score + RANKING.neighbour * RANKING.semantic * (anchor.semantic - answer.semantic)
    assert hit.score == pytest.approx(expected, abs=2e-6)
    # Only lines of the same block are lifted, and only next to the best hits.
    assert all(h.score == by_content[h.content].score for h in lifted if h.id != answer.id)


def test_the_bullets_of_a_page_section_are_not_lifted(settings: Settings, indexer: Indexer) -> None:
    # A page section lists separate claims: the bullet after the best hit is no answer to it.
    (settings.notebook_dir / "3_Personal" / "Personal.md").write_text(
        "---\nstatus: stable\nupdated: 2026-11-25\n---\n"
        "## Profile\n- Drives to work.\n- Speaks two languages.\n- Keeps bees on the roof.\n"
        "- Commutes forty minutes each way.\n- Owns an old car.\n"
    )
    indexer.sweep()
    store, embedder = indexer.store, indexer.embedder
    plain = {
        h.content: h.score
        for h in search(
            store,
            "Drives to work",
            SearchFilters(limit=3),
            embedder=embedder,
            ranking=replace(RANKING, neighbour=0.0),
        )
    }
    hits = search(store, "Drives to work", SearchFilters(limit=3), embedder=embedder)
    assert hits[0].content == "- Drives to work."
    assert {h.content: h.score for h in hits} == plain
