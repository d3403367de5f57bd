"""One table of categories: every spelling reads as one name, and each name has one title."""

from datetime import date

import pytest

from memory_assets.core.knowledge.categories import (
    BY_NAME,
    CATEGORIES,
    EXTRACTED,
    category_named,
    normalise_category,
    title_of,
)
from memory_assets.core.knowledge.importance import default_stale_after


@pytest.mark.parametrize(
    ("spelling", "name"),
    [
        ("personal", "personal"),
        ("Identity", "personal"),
        ("Profile", "personal"),
        ("Personal", "personal"),
        (" Preferences ", "preference"),
        ("goals", "goal"),
        ("Technical", "technical"),
        ("general", "general"),
    ],
)
def test_every_spelling_reads_as_one_name(spelling: str, name: str) -> None:
    assert category_named(spelling) == name
    assert normalise_category(spelling) == name


def test_anything_else_is_general_and_names_nothing() -> None:
    assert category_named("hobbies") is None and category_named(None) is None
    assert normalise_category("hobbies") == "general" and title_of("hobbies") == "General"


def test_one_title_each_and_the_extractor_never_gets_the_fallback() -> None:
    titles = [c.title for c in CATEGORIES]
    assert len(set(titles)) == len(titles) == len(BY_NAME)
    assert title_of("identity") == "Personal"
    # MEMORY.md keeps the heading the assistant's file already has (existing-formats §1.3)
    assert BY_NAME["personal"].memory_md_heading == "Profile"
    assert BY_NAME["goal"].memory_md_heading == "Goals"
    assert "general" not in EXTRACTED and set(EXTRACTED) == set(BY_NAME) - {"general"}


def test_stale_after_follows_the_table() -> None:
    day = date(2026, 1, 1)
    assert default_stale_after("identity", day) == "never"
    assert default_stale_after("Preferences", day) == "2027-01-01"
    assert default_stale_after("something else", day) == "2026-04-02"  # general: 91 days
