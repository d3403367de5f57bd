"""Which page holds a fact: verbatim (markers and ``previously:`` set aside), restated (a claim
that says at least as much without contradicting it), never a contradiction."""

from memory_assets.core.knowledge.page_index import PageIndex, clean_line

PAGE = """---
title: General
---

## Key Facts

- Lives in Berlin with two cats and a balcony garden. (confirmed 3x, last 2026-11-20)
  - previously: Lives in Lisbon. (until 2026-11-20)
- Likes jazz, especially Coltrane.
- Prefers light mode in every editor.
"""


def test_clean_line_sets_the_page_markup_aside() -> None:
    assert clean_line("  - previously: Lives in Lisbon. (until 2026-11-20)") == "Lives in Lisbon."
    assert clean_line("- [preference] Likes tea (confirmed 2x, last 2026-11-01)") == "Likes tea"


def test_verbatim_restated_and_contradicted() -> None:
    index = PageIndex({"3_Personal/General.md": PAGE, "2_Wiki/Other.md": "# Other\n\nNothing here.\n"})
    held = index.holder("lives in lisbon.")
    assert held is not None and held.how == "verbatim" and held.page == "3_Personal/General.md"
    assert index.holder("Likes jazz").how == "restated"  # a less specific restatement
    assert index.holder("Prefers dark mode in every editor") is None  # a contradiction holds nothing
    assert index.holder("Owns a red kayak") is None
    assert index.holder("Lives in Berlin with two cats and a balcony garden") is not None
    assert index.has_line("prefers light mode in every editor.")


def test_a_preferred_page_wins_and_text_inside_a_paragraph_is_found() -> None:
    index = PageIndex(
        {
            "a.md": "- Keeps bees on the roof",
            "b.md": "Notes: the user keeps bees on the roof, since 2019, with Ana.",
        }
    )
    assert index.holder("Keeps bees on the roof", prefer=["b.md"]).page == "b.md"
    assert index.holder("the user keeps bees on the roof, since 2019").page == "b.md"
