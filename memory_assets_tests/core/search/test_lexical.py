"""The lexical score: BM25 over a query's candidates, computed from their text alone."""

import math

import pytest

from memory_assets.core.search.lexical import K1, B, Lexical, tokens

POOL = [
    "Teodora signed up for a pottery class",
    "Teodora took her nephews to the zoo",
    "Teodora repainted the garden bench last year",
    "Bartosz went to a chess club",
]


def test_tokens_are_stemmed_words_without_stop_words_or_question_words() -> None:
    assert tokens("What did Teodora's nephews like painting?") == ("teodora", "nephew", "lik", "paint")
    assert tokens("Moved to Lisbon in 2024") == ("mov", "lisbon", "2024")


def test_a_word_rare_among_the_candidates_counts_more_than_a_common_one() -> None:
    lex = Lexical("Did Teodora go to a pottery class?", POOL)
    pottery, zoo = lex.pool_scores[0], lex.pool_scores[1]
    assert pottery > zoo > 0 and lex.best == pottery
    assert lex.pool_scores[3] == 0.0  # shares no word with the question


def test_the_score_is_okapi_bm25_over_the_pool() -> None:
    lex = Lexical("pottery", POOL)
    n, df = len(POOL), 1
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    lengths = [len(tokens(t)) for t in POOL]
    mean = sum(lengths) / n
    expected = idf * (K1 + 1) / (1 + K1 * (1 - B + B * lengths[0] / mean))
    assert lex.pool_scores[0] == pytest.approx(expected)
    assert lex.score(POOL[0]) == pytest.approx(expected)
    assert lex.fraction(lex.pool_scores[0]) == 1.0


def test_a_text_outside_the_pool_is_scored_against_it_and_its_fraction_capped() -> None:
    lex = Lexical("pottery class", POOL)
    outside = lex.score("Pottery class, pottery class, every pottery class")
    assert outside > lex.best and lex.fraction(outside) == 1.0
    assert Lexical("the of what", POOL).score(POOL[0]) == 0.0  # only stop words: no terms
    assert Lexical("pottery", []).fraction(1.0) == 0.0  # an empty pool has no best


def test_a_question_naming_a_date_leaves_its_date_words_to_the_date_term() -> None:
    pool = ["Plans to finish the kitchen by mid July", "Visited the botanical garden"]
    assert Lexical("What did I do in July?", pool).pool_scores[0] > 0
    dated = Lexical("What did I do in July?", pool, dated=True)
    assert dated.terms == frozenset() and dated.pool_scores == [0.0, 0.0]
    assert Lexical("Where did I go on 3 May last year with Ana?", pool, dated=True).terms == {"go", "ana"}
