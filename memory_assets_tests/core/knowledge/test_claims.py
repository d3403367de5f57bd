"""How two claims compare (``knowledge/claims.py``): the specifics a text carries, and the rules
table that relates a statement to a claim (slots, polarity, words and specifics)."""

import pytest

from memory_assets.core.knowledge.claims import CONFIRM, SHARPEN, SUPERSEDE, analyse, relate, specifics


def test_specifics_are_found() -> None:
    found = specifics(
        'Uses Python 3.11 at /home/u/x and "Deep Work" v2, mail a@b.com, see https://x.io, on 12 May, since March'
    )
    assert {"3.11", "/home/u/x", "deep work", "v2", "a@b.com", "https://x.io", "12", "may", "march"} <= set(
        found
    )


SLOT_CASES = [
    # A habit reversed reverses the preference; one value swapped in the same sentence is a change.
    ("Likes coffee in the morning.", "No longer drinks coffee.", "supersede"),
    ("Prefers dark mode in every editor.", "Prefers light mode in every editor.", "supersede"),
    # (claim on the page, new statement, outcome; None = another claim, added)
    ("Lives in Lisbon.", "Moved to Berlin.", SUPERSEDE),
    ("Lives in Lisbon.", "The user lives in Berlin.", SUPERSEDE),
    ("Lives in Berlin.", "Moved to Berlin in 2024.", SHARPEN),
    ("Moved to Berlin.", "Lives in Berlin now.", CONFIRM),
    ("Lives in Lisbon.", "Moved to a new apartment.", None),  # not a place: the rules cannot tell
    ("Lives in Oslo.", "Lives in a two-bedroom flat in Oslo.", SHARPEN),
    ("Lives in a two-bedroom flat in Oslo.", "Lives in a two-bedroom flat in Osaka.", SUPERSEDE),
    ("Works as a nurse.", "Is a nurse.", CONFIRM),
    ("Is a software engineer.", "Is a senior software engineer at Google.", SHARPEN),
    ("Is a software engineer.", "Is a data scientist.", SUPERSEDE),
    ("Works at Google.", "Got a job at Meta.", SUPERSEDE),
    ("Their wife is Maria.", "Is married to Maria.", CONFIRM),
    ("Is married.", "Their husband is Tom.", SHARPEN),
    ("Their girlfriend is Sofia.", "Is single.", SUPERSEDE),
    ("Their wife is Maria.", "Their girlfriend is Brazilian.", None),  # a nationality is not a name
    ("Their name is Ana.", "Their name is Ana Silva.", SHARPEN),
    ("Their name is Ana.", "The user's name is Marta.", SUPERSEDE),
    ("Is 34 years old.", "Turned 35.", SUPERSEDE),
    # The way to work holds one value at a time (bench_consolidation's planted reversal).
    ("Drives to work.", "Cycles to work every day.", SUPERSEDE),
    ("Drives to work.", "Still drives to work.", CONFIRM),
    ("Is 34 years old.", "Is 34.", CONFIRM),
    ("Is vegetarian.", "Is vegan now.", SUPERSEDE),
    ("Is vegetarian.", "Eats meat again.", SUPERSEDE),
    ("Their favorite color is blue.", "Their favourite color is green.", SUPERSEDE),
    (
        "Wants the assistant to answer in German.",
        "Wants the assistant to always answer in French.",
        SUPERSEDE,
    ),
    # polarity
    ("Likes jazz.", "Dislikes jazz.", SUPERSEDE),
    ("Likes jazz.", "No longer likes jazz.", SUPERSEDE),
    ("Likes jazz.", "Loves jazz.", CONFIRM),
    ("Is vegetarian.", "Is no longer vegetarian.", SUPERSEDE),
    ("Drinks coffee every morning.", "Stopped drinking coffee.", SUPERSEDE),
    ("Wants the assistant to use emojis.", "Does not want the assistant to use emojis.", SUPERSEDE),
    # words and specifics
    ("Wakes up at 6 AM.", "Wakes up at 7 AM.", SUPERSEDE),
    ("Uses Python 3.11.", "Uses Python 3.12.", SUPERSEDE),
    ("Runs 5 km every morning.", "Runs every morning.", CONFIRM),
    ("Drinks water daily.", "Drinks 2 liters of water daily.", SHARPEN),
    ("Likes jazz.", "Likes blues.", None),
    ("Prefers dark mode.", "Prefers light mode.", None),  # a contradiction that needs understanding
    ("Has a sister named Ana.", "Has a sister named Maria.", None),
    (
        "Has a best friend, Tom, who is getting married in November.",
        "Has a best friend, Ana, who is getting married in July.",
        None,
    ),
    ("Has a sister named Ana who is a nurse.", "Is a nurse.", None),
    ("Is learning Japanese.", "Is learning Spanish.", None),
    ("Likes cooking.", "Their mother likes cooking.", None),
]


@pytest.mark.parametrize(("old", "new", "outcome"), SLOT_CASES)
def test_the_rules_table(old: str, new: str, outcome: str | None) -> None:
    relation = relate(analyse(new), analyse(old))
    assert (relation.outcome if relation else None) == outcome
