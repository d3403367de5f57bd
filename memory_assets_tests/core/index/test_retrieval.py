import json
from datetime import date

import numpy as np
import pytest

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.ranking import Ranking
from memory_assets.core.index.retrieval import EmptyIndexError, flush_recalls, keyword_search, search
from memory_assets.core.index.store import MemoryStore, VectorWidthMismatch
from memory_assets.core.index.table_writer import TableWriter
from memory_assets.core.knowledge.recall_log import rotated
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.models.embedder import Embedder
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
    assert hits and "Hetzner" in hits[0].content and hits[0].semantic == 0.0 and hits[0].bm25 == 1.0


def test_without_an_embedder_the_words_outrank_the_lifecycle_prior(
    settings: Settings, indexer: Indexer
) -> None:
    write_facts(settings, date(2026, 11, 20), "Deploys the side project on a Hetzner VPS with Docker Compose")
    (settings.notebook_dir / "3_Personal" / "Hosting.md").write_text(
        "---\nstatus: stable\nupdated: 2026-11-25\n---\n- Once looked at Hetzner prices. (confirmed 20x, last 2026-11-25)\n"
    )
    indexer.sweep()
    hits = search(indexer.store, "Hetzner VPS Docker Compose", embedder=None)
    assert hits[0].source_type == "archive_log" and hits[1].importance > hits[0].importance


def test_the_read_path_never_writes_the_index_and_logs_recalls(settings: Settings, indexer: Indexer) -> None:
    build(settings, indexer)
    version = indexer.store.version()
    hits = search(indexer.store, "peanuts", embedder=indexer.embedder, settings=settings, limit=2)
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


def test_near_duplicate_hits_collapse_into_the_best_with_a_count(
    settings: Settings, indexer: Indexer
) -> None:
    for day in range(1, 6):  # the same fact extracted on five days, one paraphrase
        write_facts(settings, date(2026, 11, day), "Wants to be reminded to drink water every hour")
    write_facts(settings, date(2026, 11, 6), "Wants to be reminded to drink water every hour.")
    write_facts(settings, date(2026, 11, 7), "Keeps bees on the roof of the flat")
    indexer.sweep()
    hits = search(indexer.store, "water reminders", embedder=indexer.embedder, limit=2)
    assert [h.content.rstrip(".") for h in hits] == [
        "Wants to be reminded to drink water every hour",
        "Keeps bees on the roof of the flat",
    ]
    assert hits[0].duplicates == 5 and hits[1].duplicates == 0


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
    hits = search(store, "where was I born?", embedder=embedder, settings=settings, limit=1)
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


# -- both legs for every candidate ------------------------------------------------------------------


def _row_vector(store: MemoryStore, content: str) -> np.ndarray:
    data = store.scan(["content", "vector"], where=f"content = '{content}'")
    return np.asarray(data.column("vector").to_pylist()[0], dtype=np.float32)


def test_a_fact_found_only_by_full_text_still_has_its_semantic_score(
    settings: Settings, indexer: Indexer
) -> None:
    garden = [f"Planted {n} rows of lettuce beside the bee hives in the back garden" for n in range(2, 32)]
    write_facts(settings, date(2026, 11, 1), *garden, "Ordered the Zanzibar blend from the roastery")
    indexer.sweep()
    store, embedder = indexer.store, indexer.embedder
    assert embedder is not None
    bees = embedder.embed_query("keeping bees in the garden")
    # The vector leg (its depth is 20 rows) does not reach the coffee fact: only full text finds it.
    nearest = store.table().search(bees).distance_type("cosine").limit(20).select(["content", "_distance"])
    assert "Ordered the Zanzibar blend from the roastery" not in {r["content"] for r in nearest.to_list()}
    hits = search(store, "Zanzibar", query_vector=bees, limit=40, today=date(2026, 11, 29))
    [coffee] = [h for h in hits if "Zanzibar" in h.content]
    cosine = float(bees @ _row_vector(store, coffee.content)) / float(np.linalg.norm(bees))
    assert coffee.bm25 == 1.0
    assert coffee.semantic != 0.0 and coffee.semantic == pytest.approx(cosine, abs=1e-5)


def test_a_fact_found_only_by_vector_still_has_its_bm25_score(settings: Settings, indexer: Indexer) -> None:
    # 60 short lines outrank the long one on BM25 for "coffee", so the full-text leg (50 rows deep
    # at limit 1) is cut before it; the vector leg finds it, and its BM25 is looked up.
    short = [f"Coffee number {n}: coffee" for n in range(60)]
    long_line = (
        "Usually drinks a small coffee with oat milk while reading long novels on quiet Sunday "
        "afternoons in the garden under the old walnut tree"
    )
    write_facts(settings, date(2026, 11, 1), *short, long_line)
    indexer.sweep()
    store, embedder = indexer.store, indexer.embedder
    assert embedder is not None
    semantic_first = Ranking(semantic=1.0, bm25=0.01)  # the long line is the hit: its scores are the point
    query_vector = embedder.embed_query(long_line)
    # Before optimize the rows are not in the full-text index yet: the lookup is bounded by the
    # leg's last score (the row was not among its 50), and not zero.
    [fresh] = search(store, "coffee", query_vector=query_vector, limit=1, ranking=semantic_first)
    assert fresh.content == long_line and 0 < fresh.bm25 < 1
    TableWriter(store).optimize()  # folded into the index: the lookup is exact
    leg = store.table().search("coffee", query_type="fts").limit(50).select(["content", "_score"]).to_list()
    assert long_line not in {r["content"] for r in leg}
    every = (
        store.table().search("coffee", query_type="fts").limit(100).select(["content", "_score"]).to_list()
    )
    best = max(r["_score"] for r in every)
    expected = next(r["_score"] for r in every if r["content"] == long_line) / best
    hits = search(store, "coffee", query_vector=query_vector, limit=1, ranking=semantic_first)
    assert hits[0].content == long_line
    assert hits[0].bm25 == pytest.approx(expected, abs=1e-5) and hits[0].bm25 > 0


# -- dates in questions --------------------------------------------------------------------------------


def test_a_question_naming_a_day_favours_the_facts_of_that_day(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2026, 5, 11), "Went to a jazz concert at the old theatre")
    write_facts(settings, date(2026, 5, 12), "Took a pottery workshop and made a wonky bowl")
    write_facts(settings, date(2026, 5, 13), "Went to the cinema to see a Korean thriller")
    write_facts(settings, date(2026, 4, 2), "Has a dentist appointment on 12 May at 9 AM", category="goal")
    indexer.sweep()
    today = date(2026, 11, 29)
    hits = search(indexer.store, "What did I do on 12 May?", embedder=indexer.embedder, today=today)
    # The fact of that day, and the one logged earlier that states the day, come first; the days
    # around it do not match.
    assert {h.content for h in hits[:2]} == {
        "Took a pottery workshop and made a wonky bowl",
        "Has a dentist appointment on 12 May at 9 AM",
    }
    assert [h.date_match for h in hits] == [True, True, False, False]
    # Month windows end on the month's last day: 30 April and 1 June are out of "in May".
    write_facts(settings, date(2026, 4, 30), "Repainted the bedroom walls in a pale green")
    write_facts(settings, date(2026, 6, 1), "Spent the afternoon kayaking on the river")
    indexer.sweep()
    may = search(indexer.store, "What did I do in May 2026?", embedder=indexer.embedder, today=today)
    assert {h.source_date for h in may[:4]} == {"2026-05-11", "2026-05-12", "2026-05-13", "2026-04-02"}
    assert [h.date_match for h in may] == [True] * 4 + [False] * 2
    # Without a date in the question, no fact is favoured for its date.
    assert not any(
        h.date_match for h in search(indexer.store, "pottery", embedder=indexer.embedder, today=today)
    )


def test_a_leap_day_question_finds_the_leap_day(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2028, 2, 28), "Went bird watching at the estuary at dawn")
    write_facts(settings, date(2028, 2, 29), "Went swimming in the lake with Ana")
    write_facts(settings, date(2028, 3, 1), "Went to a board game café with Ana")
    indexer.sweep()
    hits = search(
        indexer.store, "what did I do on 29 February?", embedder=indexer.embedder, today=date(2028, 11, 1)
    )
    assert hits[0].content == "Went swimming in the lake with Ana"
    assert [h.date_match for h in hits] == [True, False, False]


# -- recency -------------------------------------------------------------------------------------------


def test_recency_does_not_reorder_a_history_question(settings: Settings, indexer: Indexer) -> None:
    # The older fact is the closer match; the newer one is what holds now.
    write_facts(settings, date(2026, 3, 1), "Drinks black coffee every morning")
    write_facts(settings, date(2026, 11, 20), "Drinks green tea every morning")
    indexer.sweep()
    store, embedder = indexer.store, indexer.embedder
    history = "What does the user drink every morning?"
    soon = search(store, history, embedder=embedder, today=date(2026, 11, 21))
    later = search(store, history, embedder=embedder, today=date(2031, 1, 1))
    # The newer fact is 1 day old in one search and years old in the other: nothing moves, and
    # the closer match stays first although it is eight months older.
    assert [(h.content, h.score) for h in soon] == [(h.content, h.score) for h in later]
    assert soon[0].content == "Drinks black coffee every morning" and soon[1].recency > soon[0].recency
    # A question about the current state does count recency: the newer fact wins.
    now = search(
        store, "What does the user drink every morning now?", embedder=embedder, today=date(2026, 11, 21)
    )
    assert now[0].content == "Drinks green tea every morning"
    now_later = search(
        store, "What does the user drink every morning now?", embedder=embedder, today=date(2031, 1, 1)
    )
    assert now[0].score > now_later[0].score


def test_recency_breaks_ties(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2026, 3, 1), "Keeps bees on the roof of the flat")
    write_facts(settings, date(2026, 9, 1), "Keeps bees on the roof of the flat")
    indexer.sweep()
    [hit] = search(indexer.store, "bees", embedder=indexer.embedder, today=date(2026, 11, 29))
    assert hit.source_date == "2026-09-01" and hit.duplicates == 1  # equal scores: the newer one


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
