from datetime import date

import numpy as np
import pytest

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.index.table_writer import TableWriter
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.ranking import Ranking
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

# -- the weights ---------------------------------------------------------------------------------------


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


# -- near-duplicates ----------------------------------------------------------------------------------


def test_near_duplicate_hits_collapse_into_the_best_with_a_count(
    settings: Settings, indexer: Indexer
) -> None:
    for day in range(1, 6):  # the same fact extracted on five days, one paraphrase
        write_facts(settings, date(2026, 11, day), "Wants to be reminded to drink water every hour")
    write_facts(settings, date(2026, 11, 6), "Wants to be reminded to drink water every hour.")
    write_facts(settings, date(2026, 11, 7), "Keeps bees on the roof of the flat")
    indexer.sweep()
    hits = search(indexer.store, "water reminders", SearchFilters(limit=2), embedder=indexer.embedder)
    assert [h.content.rstrip(".") for h in hits] == [
        "Wants to be reminded to drink water every hour",
        "Keeps bees on the roof of the flat",
    ]
    assert hits[0].duplicates == 5 and hits[1].duplicates == 0


# -- both legs for every candidate ------------------------------------------------------------------


def _row_vector(store: MemoryStore, content: str) -> np.ndarray:
    data = store.scan(["content", "vector"], where=f"content = '{content}'")
    return np.asarray(data.column("vector").to_pylist()[0], dtype=np.float32)


def _collapse_one_at_a_time(
    ids: list[str], vectors: dict[str, np.ndarray], limit: int
) -> list[tuple[str, int]]:
    """The collapse's rule stated plainly, one row at a time (the arithmetic of the collapse before
    it counted the remaining rows at once): each row, best first, is counted on the most similar
    kept row when that is at least 0.95 similar, else kept while there is room."""
    matrix = np.stack([vectors[i] for i in ids])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms > 0, norms, 1.0)
    kept: list[int] = []
    counts: list[int] = []
    for i in range(len(ids)):
        if kept:
            similar = matrix[kept] @ matrix[i]
            j = int(np.argmax(similar))
            if similar[j] >= 0.95:
                counts[j] += 1
                continue
        if len(kept) < limit:
            kept.append(i)
            counts.append(0)
    return [(ids[k], n) for k, n in zip(kept, counts, strict=True)]


def test_the_collapse_counts_as_one_row_at_a_time_would(embedder: Embedder) -> None:
    """Once its places are taken the collapse counts the remaining rows all at once; near the 0.95
    threshold (rows planted at cosines around it) it must still decide as one row at a time."""
    from memory_assets.core.search.ranking import Scored, collapse

    rng = np.random.default_rng(7)
    base = embedder.embed([f"Fact number {k} about the garden, the bikes and the kitchen" for k in range(12)])
    for trial in range(200):
        vectors: dict[str, np.ndarray] = {}
        for n in range(int(rng.integers(5, 120))):
            b = base[rng.integers(len(base))]
            spread = rng.choice([0.0, 0.005, 0.015, 0.016, 0.017, 0.05])  # 0.016: cosine about 0.95
            vectors[f"r{n}"] = (b + rng.normal(0.0, spread, b.shape)).astype(np.float32)
        ids = list(vectors)
        scored = [Scored({"id": i}, 0.0, 0.0, 0.5, 0.0, False, 0.0) for i in ids]
        limit = int(rng.integers(1, 12))
        got = [(s.id, n) for s, n in collapse(scored, vectors, limit)]
        assert got == _collapse_one_at_a_time(ids, vectors, limit), trial


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
    hits = search(store, "Zanzibar", SearchFilters(limit=40, today=date(2026, 11, 29)), query_vector=bees)
    [coffee] = [h for h in hits if "Zanzibar" in h.content]
    cosine = float(bees @ _row_vector(store, coffee.content)) / float(np.linalg.norm(bees))
    assert coffee.bm25 == 1.0
    assert coffee.semantic != 0.0 and coffee.semantic == pytest.approx(cosine, abs=1e-5)


def test_a_fact_found_only_by_vector_still_has_its_bm25_score(settings: Settings, indexer: Indexer) -> None:
    # 60 short lines outrank the long one on BM25 for "coffee", so the full-text leg (50 rows deep
    # at limit 1) is cut before it; the vector leg finds it, and it is scored on its words too.
    short = [f"Coffee number {n}: coffee" for n in range(60)]
    long_line = (
        "Usually drinks a small coffee with oat milk while reading long novels on quiet Sunday "
        "afternoons in the garden under the old walnut tree"
    )
    write_facts(settings, date(2026, 11, 1), *short, long_line)
    indexer.sweep()
    store, embedder = indexer.store, indexer.embedder
    assert embedder is not None
    leg = store.table().search("coffee", query_type="fts").limit(50).select(["content", "_score"]).to_list()
    assert long_line not in {r["content"] for r in leg}
    semantic_first = Ranking(semantic=1.0, bm25=0.01)  # the long line is the hit: its scores are the point
    [hit] = search(
        store,
        "coffee",
        SearchFilters(limit=1),
        query_vector=embedder.embed_query(long_line),
        ranking=semantic_first,
    )
    assert hit.content == long_line
    # One "coffee" in 23 words, against the short lines' two in 4: a fraction of the best, not zero.
    assert 0 < hit.bm25 < 0.5


def test_a_rows_score_is_the_same_before_and_after_an_optimize(settings: Settings, indexer: Indexer) -> None:
    # After the first reindex the full-text index covers every row; then a day is appended (rows the
    # index does not cover until an optimize) and a fact is tombstoned (a row the index still counts).
    # LanceDB's own BM25 scores differ across the optimize; the score search hands out must not.
    write_facts(settings, date(2026, 11, 1), *(f"Coffee number {n}: coffee" for n in range(60)))
    write_facts(
        settings, date(2026, 11, 2), "Drinks coffee black, never with sugar", "Keeps bees in the garden"
    )
    indexer.sweep()
    long_line = (
        "Usually drinks a small coffee with oat milk while reading long novels on quiet Sunday "
        "afternoons in the garden under the old walnut tree"
    )
    write_facts(settings, date(2026, 11, 3), long_line, "Roasts coffee beans at home on Saturdays")
    indexer.reindex_day(date(2026, 11, 3))
    write_facts(settings, date(2026, 11, 2), "Grows tomatoes and coffee plants in the greenhouse", hour=10)
    append_tombstone(settings.tombstones_path, "Coffee number 7: coffee")
    indexer.reindex_day(date(2026, 11, 2))
    indexer.reindex_day(date(2026, 11, 1))
    store, embedder = indexer.store, indexer.embedder
    assert embedder is not None
    table = store.table()
    name = next(i.name for i in table.list_indices() if i.columns == ["content"])
    assert table.index_stats(name).num_unindexed_rows > 0  # the optimize below has work to do

    def leg_scores() -> dict[str, float]:
        rows = store.table().search("coffee garden", query_type="fts").limit(100).select(["id", "_score"])
        return {r["id"]: r["_score"] for r in rows.to_list()}

    questions = [("coffee", long_line), ("coffee in the garden", "Keeps bees in the garden")]
    vectors = [embedder.embed_query(text) for _, text in questions]

    def scores() -> list[list[tuple[str, float, float, float]]]:
        return [
            [
                (h.id, h.score, h.bm25, h.semantic)
                for h in search(store, q, SearchFilters(limit=8, today=date(2026, 11, 29)), query_vector=v)
            ]
            for (q, _), v in zip(questions, vectors, strict=True)
        ]

    before, lance_before = scores(), leg_scores()
    TableWriter(store).optimize()
    assert table.index_stats(name).num_unindexed_rows == 0
    after, lance_after = scores(), leg_scores()
    assert lance_before != lance_after  # LanceDB's scores moved with the index statistics
    assert before == after
    assert long_line in {
        h.content for h in search(store, "coffee", SearchFilters(limit=8), query_vector=vectors[0])
    }


# -- dates in questions --------------------------------------------------------------------------------


def test_a_question_naming_a_day_favours_the_facts_of_that_day(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2026, 5, 11), "Went to a jazz concert at the old theatre")
    write_facts(settings, date(2026, 5, 12), "Took a pottery workshop and made a wonky bowl")
    write_facts(settings, date(2026, 5, 13), "Went to the cinema to see a Korean thriller")
    write_facts(settings, date(2026, 4, 2), "Has a dentist appointment on 12 May at 9 AM", category="goal")
    indexer.sweep()
    today = date(2026, 11, 29)
    hits = search(
        indexer.store, "What did I do on 12 May?", SearchFilters(today=today), embedder=indexer.embedder
    )
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
    may = search(
        indexer.store, "What did I do in May 2026?", SearchFilters(today=today), embedder=indexer.embedder
    )
    assert {h.source_date for h in may[:4]} == {"2026-05-11", "2026-05-12", "2026-05-13", "2026-04-02"}
    assert [h.date_match for h in may] == [True] * 4 + [False] * 2
    # Without a date in the question, no fact is favoured for its date.
    assert not any(
        h.date_match
        for h in search(indexer.store, "pottery", SearchFilters(today=today), embedder=indexer.embedder)
    )


def test_a_leap_day_question_finds_the_leap_day(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2028, 2, 28), "Went bird watching at the estuary at dawn")
    write_facts(settings, date(2028, 2, 29), "Went swimming in the lake with Ana")
    write_facts(settings, date(2028, 3, 1), "Went to a board game café with Ana")
    indexer.sweep()
    hits = search(
        indexer.store,
        "what did I do on 29 February?",
        SearchFilters(today=date(2028, 11, 1)),
        embedder=indexer.embedder,
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
    soon = search(store, history, SearchFilters(today=date(2026, 11, 21)), embedder=embedder)
    later = search(store, history, SearchFilters(today=date(2031, 1, 1)), embedder=embedder)
    # The newer fact is 1 day old in one search and years old in the other: nothing moves, and
    # the closer match stays first although it is eight months older.
    assert [(h.content, h.score) for h in soon] == [(h.content, h.score) for h in later]
    assert soon[0].content == "Drinks black coffee every morning" and soon[1].recency > soon[0].recency
    # A question about the current state does count recency: the newer fact wins.
    now = search(
        store,
        "What does the user drink every morning now?",
        SearchFilters(today=date(2026, 11, 21)),
        embedder=embedder,
    )
    assert now[0].content == "Drinks green tea every morning"
    now_later = search(
        store,
        "What does the user drink every morning now?",
        SearchFilters(today=date(2031, 1, 1)),
        embedder=embedder,
    )
    assert now[0].score > now_later[0].score


def test_recency_breaks_ties(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, date(2026, 3, 1), "Keeps bees on the roof of the flat")
    write_facts(settings, date(2026, 9, 1), "Keeps bees on the roof of the flat")
    indexer.sweep()
    [hit] = search(indexer.store, "bees", SearchFilters(today=date(2026, 11, 29)), embedder=indexer.embedder)
    assert hit.source_date == "2026-09-01" and hit.duplicates == 1  # equal scores: the newer one


def test_a_turns_full_text_weight_is_its_own(
    settings: Settings, indexer: Indexer, embedder: Embedder
) -> None:
    """``Ranking.turn_bm25`` weighs a turn's words (a transcript row) and nothing else: a fact's
    score is the same whatever it is, a turn's moves with it; ``Ranking.turn`` is added to turns
    only."""
    from datetime import UTC, datetime

    from memory_assets.core.capture.transcripts import keep_turn

    write_facts(settings, date(2026, 11, 20), "Deploys the side project on a Hetzner VPS")
    at = datetime(2026, 11, 21, 9, tzinfo=UTC)
    keep_turn(settings.transcripts_dir, "ops", "We moved the Hetzner box to a bigger plan last night", "", at)
    indexer.sweep()

    def scores(ranking: Ranking) -> dict[str, float]:
        hits = search(indexer.store, "Hetzner", embedder=embedder, ranking=ranking, log_recall=False)
        return {h.source_type: h.score for h in hits}

    low = scores(Ranking(turn_bm25=0.0, turn=0.0))
    high = scores(Ranking(turn_bm25=1.0, turn=0.0))
    lifted = scores(Ranking(turn_bm25=0.0, turn=0.5))
    assert set(low) == {"archive_log", "transcript"}
    assert high["archive_log"] == pytest.approx(low["archive_log"]) == pytest.approx(lifted["archive_log"])
    assert high["transcript"] > low["transcript"] + 0.1  # the turn matches "Hetzner" by its words
    assert lifted["transcript"] == pytest.approx(low["transcript"] + 0.5)
