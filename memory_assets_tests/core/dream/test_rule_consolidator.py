"""The rule-based consolidator on real files: the four outcomes, confirmations, the revisit queue,
the hand-off list, the index's reading of the pages, determinism and replays."""

import math
import shutil
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from memory_assets.core.dream.batch import build_batch
from memory_assets.core.dream.consolidator import Batch, ConsolidationResult
from memory_assets.core.dream.rule_consolidator import RuleConsolidator
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.chunking import parse_page
from memory_assets.core.knowledge.confirmations import Confirmation, append_confirmations, remove_first
from memory_assets.core.knowledge.importance import default_stale_after
from memory_assets.core.knowledge.personal_pages import Page, Previous, load_page
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

D1, D2, D3 = date(2026, 11, 20), date(2026, 11, 21), date(2026, 11, 22)
TODAY = date(2026, 11, 29)
RULES = RuleConsolidator()


def run(
    settings: Settings, *days: date, today: date = TODAY, rules: RuleConsolidator = RULES
) -> ConsolidationResult:
    """Build the batch, consolidate, and remove the confirmation lines shown (as the runner does)."""
    batch, warnings = build_batch(settings, list(days), today)
    assert not warnings
    result = rules.consolidate(settings, batch)
    remove_first(settings.confirmations_path, batch.confirmations_shown)
    return result


def page(settings: Settings, name: str) -> Page:
    loaded = load_page(settings.notebook_dir / "3_Personal" / name)
    assert loaded is not None
    return loaded


def claims(settings: Settings, name: str) -> list[tuple[str, int]]:
    return [(c.text, c.count) for c in page(settings, name).claims]


def personal_files(settings: Settings) -> dict[str, bytes]:
    vault = settings.notebook_dir
    files = {p.relative_to(vault).as_posix(): p.read_bytes() for p in (vault / "3_Personal").glob("*.md")}
    return {**files, "index.md": (vault / "index.md").read_bytes()}


# -- the four outcomes --------------------------------------------------------------------------


def test_a_new_fact_creates_its_category_page_and_adds_a_bullet(settings: Settings) -> None:
    write_facts(settings, D1, "Prefers metric units in all answers.")
    result = run(settings, D1)
    assert result.pages_changed == ["3_Personal/Preferences.md"]
    assert result.outcomes == Counter(add=1) and result.folded == ["Prefers metric units in all answers."]
    prefs = page(settings, "Preferences.md")
    assert (prefs.title, prefs.category, prefs.status, prefs.updated) == (
        "Preferences",
        "preference",
        "stable",
        D1,
    )
    assert prefs.stale_after == "2027-11-20" == default_stale_after("preference", D1)
    assert prefs.sources == [{"file": "2026-11-20.md"}]
    assert prefs.generated == {"by": "dream:rules", "at": TODAY.isoformat()}
    text = (settings.notebook_dir / "3_Personal" / "Preferences.md").read_text()
    assert text.endswith("## Key Facts\n\n- Prefers metric units in all answers.\n")  # once: no marker
    assert "Folded 1 of 1 fact(s)" in result.summary


def test_a_restatement_confirms_the_claim(settings: Settings) -> None:
    write_facts(settings, D1, "Prefers metric units in all answers.")
    write_facts(settings, D2, "prefers metric units in all answers")
    result = run(settings, D1, D2)
    assert result.outcomes == Counter(add=1, confirm=1)
    text = (settings.notebook_dir / "3_Personal" / "Preferences.md").read_text()
    assert "- Prefers metric units in all answers. (confirmed 2x, last 2026-11-21)\n" in text
    assert len(result.folded) == 2


def test_a_more_specific_wording_sharpens_and_keeps_the_count(settings: Settings) -> None:
    write_facts(
        settings,
        D1,
        "Wants to be reminded to drink water daily.",
        "Wants to be reminded to drink water daily.",
    )
    run(settings, D1)
    assert claims(settings, "Preferences.md") == [("Wants to be reminded to drink water daily.", 2)]
    write_facts(settings, D2, "Wants to be reminded to drink water hourly from 9 AM to 9 PM daily.")
    result = run(settings, D2)
    assert result.outcomes == Counter(sharpen=1)
    assert claims(settings, "Preferences.md") == [
        ("Wants to be reminded to drink water hourly from 9 AM to 9 PM daily.", 3)
    ]
    # The less informative wording later only confirms: it never replaces the better claim.
    write_facts(settings, D3, "User wants to be reminded to drink water daily.")
    assert run(settings, D3).outcomes == Counter(confirm=1)
    claim = page(settings, "Preferences.md").claims[0]
    assert (claim.text, claim.count, claim.last) == (
        "Wants to be reminded to drink water hourly from 9 AM to 9 PM daily.",
        4,
        D3,
    )


def test_a_contradiction_supersedes_resets_the_count_and_keeps_the_old_value(settings: Settings) -> None:
    write_facts(settings, D1, "Lives in Lisbon.", "Lives in Lisbon.", category="personal")
    write_facts(settings, D2, "Moved to Berlin.", category="personal")
    result = run(settings, D1, D2)
    assert result.outcomes == Counter(add=1, confirm=1, supersede=1)
    personal = page(settings, "Personal.md")
    assert len(personal.claims) == 1
    berlin = personal.claims[0]
    assert (berlin.text, berlin.count, berlin.last) == ("Moved to Berlin.", 1, None)
    assert berlin.previously == [Previous("Lives in Lisbon.", D2)]
    text = (settings.notebook_dir / "3_Personal" / "Personal.md").read_text()
    assert "- Moved to Berlin.\n  - previously: Lives in Lisbon. (until 2026-11-21)\n" in text
    assert personal.stale_after == "never"  # personal claims do not expire
    # Restating the new value confirms it; the old one stays in the history.
    write_facts(settings, D3, "Lives in Berlin.", category="personal")
    run(settings, D3)
    assert claims(settings, "Personal.md") == [("Moved to Berlin.", 2)]


def test_a_reversed_preference_resets_rather_than_confirms(settings: Settings) -> None:
    write_facts(settings, D1, "Likes jazz.", "Loves jazz.", "Likes jazz.")
    write_facts(settings, D2, "Does not like jazz anymore.")
    result = run(settings, D1, D2)
    assert result.outcomes == Counter(add=1, confirm=2, supersede=1)
    claim = page(settings, "Preferences.md").claims[0]
    assert (claim.text, claim.count) == ("Does not like jazz anymore.", 1)
    assert claim.previously == [Previous("Likes jazz.", D2)]
    # And back again: the reversal of the reversal is a supersede too, never a confirmation.
    write_facts(settings, D3, "Likes jazz.")
    assert run(settings, D3).outcomes == Counter(supersede=1)
    claim = page(settings, "Preferences.md").claims[0]
    assert (claim.text, claim.count) == ("Likes jazz.", 1)
    assert [p.text for p in claim.previously] == ["Does not like jazz anymore.", "Likes jazz."]


def test_another_claim_is_added(settings: Settings) -> None:
    write_facts(settings, D1, "Likes jazz.", "Likes Italian food.", "Prefers dark mode.")
    result = run(settings, D1)
    assert result.outcomes == Counter(add=3)
    assert claims(settings, "Preferences.md") == [
        ("Likes jazz.", 1),
        ("Likes Italian food.", 1),
        ("Prefers dark mode.", 1),
    ]


def test_a_fact_is_compared_with_every_claim_and_the_slot_wins(settings: Settings) -> None:
    write_facts(
        settings, D1, "Likes living in Lisbon.", "Lives in Lisbon.", "Has a cat.", category="personal"
    )
    write_facts(settings, D2, "Moved to Berlin in 2025.", category="personal")
    run(settings, D1, D2)
    assert [c.text for c in page(settings, "Personal.md").claims] == [
        "Likes living in Lisbon.",
        "Moved to Berlin in 2025.",
        "Has a cat.",
    ]


# -- confirmations ------------------------------------------------------------------------------


def confirmation(
    content: str,
    matched: str,
    ts: str,
    source_type: str = "archive_log",
    source_file: str | None = "2026-11-20.md",
) -> Confirmation:
    return Confirmation(ts, content, matched, source_type, source_file, 0.99, "c0ffee00")


def test_confirmations_fold_into_the_counts(settings: Settings) -> None:
    write_facts(settings, D1, "Prefers metric units in all answers.")
    write_facts(settings, D1, "Is vegetarian.", category="personal")
    run(settings, D1)
    append_confirmations(
        settings.confirmations_path,
        [
            confirmation(
                "prefers metric units in all answers",
                "Prefers metric units in all answers.",
                "2026-11-21T10:00:00+00:00",
            ),
            confirmation(
                "Prefers metric units in all answers.",
                "Prefers metric units in all answers.",
                "2026-11-22T09:00:00+00:00",
            ),
            confirmation(
                "Is vegetarian",
                "## Key Facts\n\n- Is vegetarian.",
                "2026-11-22T11:00:00+00:00",
                "notebook",
                "3_Personal/Personal.md",
            ),
        ],
    )
    result = run(settings, D2)  # no facts that day: only the confirmations
    assert result.confirmations_folded == 3 and result.folded == []
    assert result.outcomes == Counter(confirm=3)
    assert claims(settings, "Preferences.md") == [("Prefers metric units in all answers.", 3)]
    assert page(settings, "Preferences.md").claims[0].last == D3  # the confirmation's own day
    assert claims(settings, "Personal.md") == [("Is vegetarian.", 2)]


def test_a_confirmation_of_a_log_line_not_yet_consolidated_adds_the_claim_once(settings: Settings) -> None:
    # Today's log holds the claim; the dream does not ingest today, but the confirmation is shown now.
    write_facts(settings, TODAY, "Is training for the Lisbon marathon.", category="goal")
    append_confirmations(
        settings.confirmations_path,
        [
            confirmation(
                "Is training for the Lisbon marathon.",
                "Is training for the Lisbon marathon.",
                "2026-11-29T15:00:00+00:00",
                source_file="2026-11-29.md",
            ),
            confirmation(
                "Has a boat.", "Has a boat.", "2026-11-29T15:00:00+00:00", "notebook", "2_Wiki/Boats.md"
            ),
        ],
    )
    result = run(settings, D1)
    assert result.confirmations_folded == 1 and result.outcomes == Counter(add=1)
    assert claims(settings, "Goals.md") == [("Is training for the Lisbon marathon.", 1)]
    assert any("Has a boat." in w and "not counted" in w for w in result.warnings)
    # When the day itself is consolidated, its line confirms the claim: two mentions, counted twice.
    assert run(settings, TODAY, today=date(2026, 11, 30)).outcomes == Counter(confirm=1)
    assert claims(settings, "Goals.md") == [("Is training for the Lisbon marathon.", 2)]


# -- the revisit queue ---------------------------------------------------------------------------

STALE_CONTEXT = """---
title: Context
category: context
status: stable
updated: 2026-10-01
stale_after: 2026-10-22
---

## Key Facts

- Is preparing a talk for the Lisbon conference.
"""


def test_the_revisit_queue_reconfirms_a_stale_page(settings: Settings) -> None:
    path = settings.notebook_dir / "3_Personal" / "Context.md"
    path.write_text(STALE_CONTEXT)
    write_facts(settings, D1, "Is preparing a talk for the Lisbon conference.", category="context")
    write_facts(settings, D2, "Likes jazz.")
    batch, _ = build_batch(settings, [D1, D2], TODAY)
    assert batch.revisit == ["3_Personal/Context.md"]
    result = RULES.consolidate(settings, batch)
    assert result.revisited == ["3_Personal/Context.md"]
    context = page(settings, "Context.md")
    assert context.updated == D2  # the batch's last day
    assert context.stale_after == default_stale_after("context", D2) == "2026-12-12"
    assert context.claims[0].count == 2
    assert build_batch(settings, [D1, D2], TODAY)[0].revisit == []  # no longer stale


def test_an_undated_personal_page_gets_a_stale_after_and_nothing_else(settings: Settings) -> None:
    health = settings.notebook_dir / "3_Personal" / "Health.md"
    health.write_text("# Health\n\n## Allergies\n\n- Is allergic to peanuts.\n")
    prefs = settings.notebook_dir / "3_Personal" / "Preferences.md"
    prefs.write_text("---\ncategory: preference\nupdated: 2026-09-01\n---\n\n## Key Facts\n\n- Likes jazz.\n")
    write_facts(settings, D1, "Uses Python 3.12 at work.", category="technical")
    batch, _ = build_batch(settings, [D1], TODAY)
    assert batch.revisit == ["3_Personal/Health.md", "3_Personal/Preferences.md"]
    result = RULES.consolidate(settings, batch)
    assert result.revisited == []  # nothing confirmed them
    assert sorted(result.pages_changed) == [
        "3_Personal/Health.md",
        "3_Personal/Preferences.md",
        "3_Personal/Technical.md",
    ]
    assert (
        health.read_text()
        == "---\nstale_after: 2027-02-19\n---\n\n# Health\n\n## Allergies\n\n- Is allergic to peanuts.\n"
    )
    assert page(settings, "Preferences.md").stale_after == default_stale_after("preference", date(2026, 9, 1))
    assert page(settings, "Preferences.md").updated == date(2026, 9, 1)  # re-dated, not updated
    assert build_batch(settings, [D1], TODAY)[0].revisit == []


def test_a_page_of_another_shape_is_reconfirmed_without_its_bullets_being_edited(settings: Settings) -> None:
    health = settings.notebook_dir / "3_Personal" / "Health.md"
    health.write_text("---\ncategory: personal\n---\n## Allergies\n\n- Is allergic to peanuts.\n")
    write_facts(settings, D1, "Is allergic to peanuts.", category="personal")
    result = run(settings, D1)
    assert result.revisited == ["3_Personal/Health.md"]
    text = health.read_text()
    assert "updated: 2026-11-20" in text and "stale_after: never" in text
    assert text.endswith("## Allergies\n\n- Is allergic to peanuts.\n")
    assert claims(settings, "Personal.md") == [("Is allergic to peanuts.", 1)]  # the fact is folded as usual


@pytest.mark.parametrize(
    "category", ["personal", "preference", "goal", "context", "technical", "interaction", "general"]
)
def test_stale_after_follows_the_category(settings: Settings, category: str) -> None:
    write_facts(settings, D2, "Something worth keeping about the user.", category=category)
    result = run(settings, D2)
    (rel,) = result.pages_changed
    written = load_page(settings.notebook_dir / rel)
    assert written is not None and written.category == category and written.updated == D2
    assert written.stale_after == default_stale_after(category, D2)


# -- what is handed off, what is left alone --------------------------------------------------------


def test_folded_lists_every_consolidated_fact(settings: Settings) -> None:
    contents = ["Lives in Lisbon.", "Moved to Berlin.", "Likes jazz.", "Likes jazz.", "Is learning Japanese."]
    write_facts(settings, D1, *contents[:2], category="personal")
    write_facts(settings, D1, *contents[2:4])
    write_facts(settings, D2, contents[4], category="goal")
    result = run(settings, D1, D2)
    assert sorted(result.folded) == sorted(contents)
    assert sum(result.outcomes.values()) == len(contents)


@pytest.mark.parametrize(
    "broken",
    ["---\ntitle: [oops\n---\n\n## Key Facts\n\n- Likes tea.\n", "---\ntitle: Preferences\n\n- Likes tea.\n"],
)
def test_a_page_with_broken_frontmatter_is_left_alone_and_reported(settings: Settings, broken: str) -> None:
    path = settings.notebook_dir / "3_Personal" / "Preferences.md"
    path.write_bytes(broken.encode())
    write_facts(settings, D1, "Likes jazz.")
    write_facts(settings, D1, "Lives in Lisbon.", category="personal")
    batch, warnings = build_batch(settings, [D1], TODAY)
    result = RULES.consolidate(settings, batch)
    assert path.read_bytes() == broken.encode()
    assert result.pages_changed == ["3_Personal/Personal.md"]
    assert result.folded == ["Lives in Lisbon."]  # the preference stays in the index
    assert any("3_Personal/Preferences.md" in w and "left alone" in w for w in result.warnings)
    assert any("1 fact(s) for this page were not folded" in w for w in result.warnings)
    index = (settings.notebook_dir / "index.md").read_text()
    assert "[[3_Personal/Preferences|Preferences]]: frontmatter needs fixing" in index


def test_what_a_person_wrote_on_a_page_survives(settings: Settings) -> None:
    path = settings.notebook_dir / "3_Personal" / "Personal.md"
    path.write_text(
        "---\ntitle: Personal\ncategory: personal\nverified:\n- by: human:ana\n  at: '2026-11-01'\n---\n\n"
        "## Key Facts\n\n- Lives in Lisbon.\n\n## Family\n\n- Sister: Ana (nurse).\n- Brother: Luis.\n"
    )
    write_facts(settings, D1, "Lives in Lisbon.", "Has a dog named Rex.", category="personal")
    run(settings, D1)
    text = path.read_text()
    assert "## Family\n\n- Sister: Ana (nurse).\n- Brother: Luis.\n" in text
    assert "- by: human:ana" in text
    assert "- Lives in Lisbon. (confirmed 2x, last 2026-11-20)\n- Has a dog named Rex.\n" in text
    assert parse_page(text, "notebook/3_Personal/Personal.md").lifecycle.human_verified


def test_index_md_lists_the_personal_pages_and_keeps_its_heading(settings: Settings) -> None:
    index = settings.notebook_dir / "index.md"
    index.write_text(index.read_text() + "\n## Projects\n\n- [[1_Projects/Garden]]\n")
    write_facts(settings, D1, "Likes jazz.", "Likes Italian food.")
    write_facts(settings, D1, "Lives in Lisbon.", category="personal")
    run(settings, D1)
    text = index.read_text()
    assert text.startswith("# Notebook Index\n\nLast updated: 2026-11-20\n")
    assert "## Projects\n\n- [[1_Projects/Garden]]\n" in text
    assert (
        "## Personal pages\n\n- [[3_Personal/Personal|Personal]]: 1 claim\n"
        "- [[3_Personal/Preferences|Preferences]]: 2 claims\n"
    ) in text
    write_facts(settings, D2, "Likes jazz.")  # a confirm changes no count: index.md is not rewritten
    before = index.read_bytes()
    run(settings, D2)
    assert index.read_bytes() == before
    write_facts(settings, D3, "Likes blues.")
    run(settings, D3)
    assert "- [[3_Personal/Preferences|Preferences]]: 3 claims\n" in index.read_text()
    assert text.count("## Personal pages") == 1 == index.read_text().count("## Personal pages")


def test_an_empty_batch_changes_nothing(settings: Settings) -> None:
    write_facts(settings, D1, "Likes jazz.")
    run(settings, D1)
    before = personal_files(settings)
    result = run(settings, D2)  # no log that day, no confirmations, nothing to revisit
    assert result.pages_changed == [] and result.folded == []
    assert personal_files(settings) == before
    assert result.summary.startswith("No personal page changed")


# -- reading the pages back ------------------------------------------------------------------------


def test_the_indexer_reads_the_counts_as_importance(settings: Settings, indexer: Indexer) -> None:
    for offset in range(12):
        write_facts(
            settings,
            date(2026, 11, 1 + offset),
            "Wants to be reminded to drink water hourly from 9 AM to 9 PM.",
        )
    run(settings, *(date(2026, 11, 1 + offset) for offset in range(12)))
    assert claims(settings, "Preferences.md") == [
        ("Wants to be reminded to drink water hourly from 9 AM to 9 PM.", 12)
    ]
    indexer.reindex_files(labels=["notebook"])
    rows = indexer.store.scan(["content", "importance", "source_file", "category", "fact_date"]).to_pylist()
    (row,) = [r for r in rows if r["source_file"] == "3_Personal/Preferences.md"]
    assert "(confirmed 12x, last 2026-11-12)" in row["content"]
    assert row["importance"] == pytest.approx(0.5 + min(0.25, 0.1 * math.log(12)), abs=1e-6)
    assert (row["category"], row["fact_date"]) == ("preference", "2026-11-12")


# -- determinism and replays -----------------------------------------------------------------------


def test_the_same_batch_on_two_copies_gives_identical_bytes(settings: Settings, tmp_path: Path) -> None:
    write_facts(settings, D1, "Lives in Lisbon.", "Is 34 years old.", category="personal")
    write_facts(settings, D1, "Likes jazz.", "Wants to be reminded to drink water daily.")
    write_facts(settings, D2, "Moved to Berlin.", "Turned 35.", category="personal")
    write_facts(
        settings, D2, "Dislikes jazz.", "Wants to be reminded to drink water hourly from 9 AM to 9 PM daily."
    )
    append_confirmations(
        settings.confirmations_path, [confirmation("Likes jazz", "Likes jazz.", "2026-11-20T12:00:00+00:00")]
    )
    copy_home = tmp_path / "copy"
    shutil.copytree(settings.home, copy_home)
    other = Settings.load(copy_home)
    assert other.notebook_dir != settings.notebook_dir
    first = run(settings, D1, D2)
    second = run(other, D1, D2)
    assert personal_files(settings) == personal_files(other)
    assert (first.folded, first.outcomes, first.summary) == (second.folded, second.outcomes, second.summary)
    personal = page(settings, "Personal.md")
    assert [(c.text, c.count) for c in personal.claims] == [("Moved to Berlin.", 1), ("Turned 35.", 1)]


def test_a_replay_confirms_again_and_adds_no_bullet(settings: Settings) -> None:
    """By design: the consolidator cannot tell a replay from a repeat, so a replayed batch bumps the
    counts once more (and changes the pages, which is what makes the replay count as productive).
    The runner never replays a productive batch: the watermark moves and the folded lines are
    tombstoned, so the batch builder leaves them out."""
    write_facts(settings, D1, "Likes jazz.", "Wants to be reminded to drink water daily.")
    write_facts(settings, D1, "Lives in Lisbon.", category="personal")
    run(settings, D1)
    before = {
        name: [c.text for c in page(settings, name).claims] for name in ("Preferences.md", "Personal.md")
    }
    result = run(settings, D1)
    assert result.outcomes == Counter(confirm=3)
    assert {name: [c.text for c in page(settings, name).claims] for name in before} == before
    assert claims(settings, "Preferences.md") == [
        ("Likes jazz.", 2),
        ("Wants to be reminded to drink water daily.", 2),
    ]


# -- the semantic option ---------------------------------------------------------------------------


def test_the_semantic_option_only_turns_an_add_into_a_confirm(settings: Settings, embedder: Embedder) -> None:
    write_facts(settings, D1, "Goes hiking in the mountains on weekends.")
    write_facts(settings, D2, "Hikes in the mountains every weekend.", "Likes blues.")
    batch = build_batch(settings, [D1, D2], TODAY)[0]
    lexical = RuleConsolidator().consolidate(settings, batch)
    assert lexical.outcomes == Counter(add=3)
    for path in (settings.notebook_dir / "3_Personal").glob("*.md"):
        path.unlink()
    semantic = RuleConsolidator(embedder=embedder).consolidate(settings, batch)
    assert semantic.outcomes == Counter(add=2, confirm=1)
    assert claims(settings, "Preferences.md") == [
        ("Goes hiking in the mountains on weekends.", 2),
        ("Likes blues.", 1),
    ]


def test_a_batch_built_by_hand_works_too(settings: Settings) -> None:
    from memory_assets.core.dream.consolidator import BatchFact

    batch = Batch(
        days=[D1],
        facts=[BatchFact("Is a nurse.", "identity", (), D1, 3, "2026-11-20.md")],
        confirmations=[],
        confirmations_shown=0,
        revisit=[],
        today=datetime(2026, 11, 29, tzinfo=UTC).date(),
    )
    result = RULES.consolidate(settings, batch)
    assert result.pages_changed == ["3_Personal/Personal.md"]  # identity means personal
