"""The 3_Personal/ page format: round trip, what survives a rewrite, and broken pages left alone."""

import string
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory_assets.core.knowledge.categories import normalise_category
from memory_assets.core.knowledge.chunking import parse_page
from memory_assets.core.knowledge.importance import confirmation_count
from memory_assets.core.knowledge.personal_pages import (
    Claim,
    Page,
    PageError,
    Previous,
    Section,
    list_personal_pages,
    load_page,
    one_line,
    page_rel,
    save_page,
)
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.settings import Settings

D1, D2 = date(2026, 11, 20), date(2026, 11, 21)


def sample_page() -> Page:
    page = Page.new("preference")
    page.updated = D2
    page.stale_after = "2027-11-21"
    page.sources = [{"file": "2026-11-20.md"}, {"file": "2026-11-21.md"}]
    page.generated = {"by": "dream:rules", "at": "2026-11-22"}
    page.claims = [
        Claim("Wants to be reminded to drink water hourly from 9 AM to 9 PM daily.", 3, D2),
        Claim("Likes jazz.", 1, None, [Previous("Dislikes jazz.", D2), Previous("Likes jazz.", D1)]),
        Claim("Prefers metric units."),
    ]
    page.sections = [Section("## Notes", "Written by a person.\n\n- Keep this bullet.")]
    page.extra_meta = {"verified": [{"by": "human:ana", "at": "2026-11-01"}], "tags": ["me"]}
    return page


def test_a_page_renders_the_documented_format_and_round_trips() -> None:
    page = sample_page()
    text = page.render()
    assert text.startswith(
        "---\ntitle: Preferences\ncategory: preference\nstatus: stable\nupdated: 2026-11-21\n"
    )
    assert "stale_after: 2027-11-21\n" in text and "generated:\n  by: dream:rules\n" in text
    assert (
        "\n## Key Facts\n\n- Wants to be reminded to drink water hourly from 9 AM to 9 PM daily. (confirmed 3x, last 2026-11-21)\n"
        in text
    )
    assert (
        "- Likes jazz.\n  - previously: Dislikes jazz. (until 2026-11-21)\n  - previously: Likes jazz. (until 2026-11-20)\n"
        in text
    )
    assert "- Prefers metric units.\n" in text  # confirmed once: no marker
    assert Page.parse(text) == page
    assert Page.parse(text).render() == text


def test_the_indexer_reads_the_page_and_its_marker() -> None:
    parsed = parse_page(sample_page().render(), "notebook/3_Personal/Preferences.md")
    assert not parsed.warnings
    assert parsed.category == "preference" and parsed.updated == D2
    assert parsed.lifecycle.stale_after == date(2027, 11, 21) and parsed.lifecycle.human_verified
    assert confirmation_count(parsed.body) == 3
    assert parsed.body.lstrip().startswith("## Key Facts")


@hypothesis_settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet=string.ascii_letters + string.digits + " .,'-", min_size=1, max_size=40),
            st.integers(min_value=1, max_value=500),
            st.one_of(st.none(), st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))),
            st.lists(st.text(alphabet=string.ascii_letters + " .", min_size=1, max_size=20), max_size=2),
        ),
        max_size=6,
    ),
    st.sampled_from(["never", "2027-01-31", None]),
)
def test_any_page_round_trips(
    claims: list[tuple[str, int, date | None, list[str]]], stale_after: str | None
) -> None:
    page = Page.new("goal")
    page.stale_after = stale_after
    for text, count, last, previous in claims:
        if not one_line(text) or not all(one_line(p) for p in previous):
            continue
        page.claims.append(
            Claim(one_line(text), count, last, [Previous(one_line(p), last) for p in previous])
        )
    assert Page.parse(page.render()) == page


MESSY = """---
type: note
title: About me
verified:
- by: human:ana
  at: 2026-11-01
---
# About me

Some prose a person wrote.

- A bullet before any section.

## Key Facts
A line of introduction.

- Lives in Lisbon. (confirmed 4x, last 2026-11-02)
  A note under the claim.
  - previously: Lives in Porto. (until 2026-01-01)

- Has a cat.

## My notes
- Never touch this.
```
## not a heading inside code
```
"""


def test_everything_a_person_wrote_survives_a_rewrite() -> None:
    page = Page.parse(MESSY, "3_Personal/Personal.md")
    assert [c.text for c in page.claims] == ["Lives in Lisbon.", "Has a cat."]
    lisbon = page.claims[0]
    assert (lisbon.count, lisbon.last) == (4, date(2026, 11, 2))
    assert lisbon.previously == [Previous("Lives in Porto.", date(2026, 1, 1))]
    assert lisbon.extra == ["  A note under the claim."]
    page.claims[1].count, page.claims[1].last = 2, D1
    page.updated = D1
    text = page.render()
    for kept in (
        "type: note",
        "title: About me",
        "- by: human:ana",
        "# About me\n\nSome prose a person wrote.\n\n- A bullet before any section.",
        "## Key Facts\n\nA line of introduction.",
        "  A note under the claim.",
        "## My notes\n\n- Never touch this.\n```\n## not a heading inside code\n```\n",
    ):
        assert kept in text
    assert "- Has a cat. (confirmed 2x, last 2026-11-20)" in text
    assert page.bullet_count() == 4  # two claims, the bullet before any section, the note's bullet
    assert Page.parse(text) == page


def test_a_page_without_key_facts_gets_the_section_after_its_own() -> None:
    page = Page.parse("## Food\n\n- Loves ramen.\n")
    assert page.claims == [] and page.all_bullets() == ["Loves ramen."]
    page.claims.append(Claim("Likes jazz."))
    assert page.render() == "## Food\n\n- Loves ramen.\n\n## Key Facts\n\n- Likes jazz.\n"
    untouched = Page.parse("---\nstatus: stable\n---\n## Food\n\n- Loves ramen.\n")
    untouched.stale_after = "never"
    assert "## Key Facts" not in untouched.render()  # only re-dated: no empty section appears


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("---\ntitle: Preferences\n- Likes jazz.\n", "never closed"),
        ("---\ntitle: [unclosed\n---\n- Likes jazz.\n", "invalid YAML"),
        ("---\n- a list\n- not fields\n---\n- Likes jazz.\n", "not a mapping"),
        ("## Key Facts\n\n- Likes jazz.\n```\n## Notes\n", "never closes"),
    ],
)
def test_broken_pages_raise_a_page_error_naming_the_file(text: str, says: str) -> None:
    with pytest.raises(PageError, match=says) as info:
        Page.parse(text, "notebook/3_Personal/Preferences.md")
    assert "notebook/3_Personal/Preferences.md" in str(info.value) and "left alone" in str(info.value)


def test_save_and_load(tmp_path: Path) -> None:
    path = tmp_path / "3_Personal" / "Preferences.md"
    assert load_page(path) is None
    save_page(path, sample_page())
    assert load_page(path) == sample_page()
    path.write_text("---\ntitle: [broken\n---\n")
    with pytest.raises(PageError):
        load_page(path)


def test_one_page_per_category() -> None:
    assert [
        page_rel(c) for c in ("personal", "preference", "goal", "context", "technical", "interaction")
    ] == [
        "3_Personal/Personal.md",
        "3_Personal/Preferences.md",
        "3_Personal/Goals.md",
        "3_Personal/Context.md",
        "3_Personal/Technical.md",
        "3_Personal/Interaction.md",
    ]
    assert page_rel("general") == page_rel("health") == page_rel("") == "3_Personal/General.md"
    assert normalise_category("Identity") == "personal"
    assert Page.new("preference").title == "Preferences"


def test_personal_pages_are_what_the_vault_lists_under_3_personal(settings: Settings) -> None:
    vault = settings.notebook_dir
    for rel in [
        "3_Personal/Home.md",
        "3_Personal/index.md",
        "3_Personal/Deep/log.md",
        "3_Personal/.hidden/Secret.md",
        "3_Personal/notes.txt",
        "2_Wiki/Bees.md",
        "index.md",
        "3_personal/Lower.md",
    ]:
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text("- x\n")
    (vault / "3_Personal" / "Folder.md").mkdir()
    expected = [p for p in list_pages(vault) if p.startswith("3_Personal/")]
    assert (
        list_personal_pages(settings)
        == expected
        == [
            "3_Personal/Deep/log.md",
            "3_Personal/Home.md",
            "3_Personal/index.md",
        ]
    )
