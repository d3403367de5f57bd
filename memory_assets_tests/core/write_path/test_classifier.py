"""The classifier, exactly as design §5.6: it may recognise a repeat, never an update."""

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_assets.core.write_path.classifier import CONFIRMATION, NEW, REVISION, Known, classify

LOGGED = Known("Moved to Berlin", "archive_log", "2026-11-20.md")


def test_a_word_for_word_restatement_of_a_recorded_fact_is_a_confirmation() -> None:
    verdict = classify("moved to Berlin.", [LOGGED])
    assert verdict.outcome == CONFIRMATION and verdict.similarity == 1.0 and verdict.matched == LOGGED
    page = Known("Prefers metric units in all answers", "notebook", "3_Personal/Preferences.md")
    assert classify("Prefers metric units in all answers", [page]).outcome == CONFIRMATION


def test_a_new_specific_makes_a_revision_however_similar() -> None:
    verdict = classify("Moved to Berlin in 2024", [LOGGED])
    assert verdict.outcome == REVISION and verdict.new_specifics == ("2024",)
    timed = classify(
        "Wants to be reminded to drink water daily at 9:30",
        [Known("Wants to be reminded to drink water daily", "archive_log")],
    )
    assert timed.outcome == REVISION and "9:30" in timed.new_specifics


def test_a_similar_fact_is_a_revision_and_a_contradiction_is_new() -> None:
    known = [Known("Has a dog called Bruno who is five years old", "archive_log")]
    assert classify("Has a dog called Bruno, who is five years old now", known).outcome == REVISION
    assert classify("Lives in Porto", [Known("Lives in Lisbon", "archive_log")]).outcome == NEW
    assert classify("Lives in Porto", []).outcome == NEW


def test_a_match_only_in_a_transcript_or_the_generated_zone_never_diverts_a_write() -> None:
    for source in (
        Known("Moved to Berlin", "transcript"),
        Known("Moved to Berlin", "core_file", "MEMORY.md", zone="generated"),
        Known("Moved to Berlin", "legacy_direct"),
    ):
        verdict = classify("Moved to Berlin", [source])
        assert verdict.outcome == REVISION, source  # written, never a confirmation
    # ... but a durable record among the matches still confirms.
    both = [Known("Moved to Berlin", "transcript"), LOGGED]
    assert classify("Moved to Berlin", both).outcome == CONFIRMATION


def test_repeating_a_number_the_fact_already_has_is_still_a_new_specific() -> None:
    known = [Known("Keeps 5 plants on the balcony and waters them every morning", "archive_log")]
    assert (
        classify("Keeps 5 plants on the balcony and waters them every morning at 5", known).outcome
        == REVISION
    )


BASES = [
    "Prefers concise answers with code examples",
    "Lives in Lisbon and works remotely as a data engineer",
    "Wants to finish the marathon training plan",
    "Keeps bees on the roof of the flat",
    "Is allergic to peanuts and carries an epipen",
]
words = st.text(alphabet=string.ascii_lowercase, min_size=3, max_size=10)
SPECIFIC = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),  # a number
    st.dates().map(lambda d: d.isoformat()),  # a date
    st.tuples(st.integers(1, 28), st.sampled_from(["May", "June", "March", "October"])).map(
        lambda t: f"{t[0]} {t[1]}"
    ),
    st.tuples(st.integers(0, 23), st.integers(0, 59)).map(lambda t: f"{t[0]}:{t[1]:02d}"),  # a time
    words.map(lambda w: f'"{w} {w}"'),  # a quoted string
    st.lists(words, min_size=2, max_size=4).map(lambda p: "/" + "/".join(p)),  # a path
    words.map(lambda w: f"https://{w}.example.org/{w}"),  # a URL
    words.map(lambda w: f"{w}@{w}.org"),  # an e-mail
    st.tuples(st.integers(0, 20), st.integers(0, 99)).map(lambda t: f"v{t[0]}.{t[1]}"),  # a version
)


@settings(max_examples=300, deadline=None)
@given(base=st.sampled_from(BASES), extra=SPECIFIC, where=st.sampled_from(["end", "middle"]))
def test_any_restatement_that_adds_a_specific_is_written(base: str, extra: str, where: str) -> None:
    """Invariant 5b: a restatement carrying a new number, date, quote, path, URL or version is
    never taken for a repeat."""
    parts = base.split()
    restated = f"{base} {extra}" if where == "end" else " ".join([*parts[:2], extra, *parts[2:]])
    verdict = classify(restated, [Known(base, "archive_log")])
    assert verdict.outcome != CONFIRMATION, (restated, verdict)
