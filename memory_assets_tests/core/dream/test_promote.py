"""MEMORY.md promotion from the 3_Personal/ pages, on real files in a temp home."""

import json
from datetime import date
from pathlib import Path

from memory_assets.core.dream.promote import PROMOTE_GENERATOR, page_claims, promote_memory_md
from memory_assets.core.knowledge.chunking import GENERATED_CLOSE, GENERATED_OPEN
from memory_assets.core.knowledge.memory_md import read_zones, write_generated_zone
from memory_assets.core.knowledge.recall_log import rotated
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.settings import Settings

TODAY = date(2026, 11, 20)


def page(settings: Settings, rel: str, text: str) -> Path:
    path = settings.notebook_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def recall(settings: Settings, *entries: tuple[str, str], rotated_file: bool = False) -> None:
    path = settings.recall_log_path
    target = rotated(path) if rotated_file else path
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "a", encoding="utf-8") as fh:
        for ts, snippet in entries:
            fh.write(json.dumps({"ts": ts, "snippet": snippet, "source_type": "notebook"}) + "\n")


def generated(settings: Settings) -> list[str]:
    view = read_zones(settings.memory_md_path)
    assert view.generated is not None
    return [line for line in view.generated.splitlines() if line.strip()]


PREFS = """---
title: Preferences
category: preference
status: stable
updated: 2026-08-20
stale_after: 2027-08-20
---
## Key Facts
- Likes jazz records
- Prefers metric units in all answers (confirmed 5x, last 2026-08-20)
- Drinks green tea in the afternoon
- Wants water reminders hourly from 9 AM to 9 PM (confirmed 2x)
- ~~Prefers imperial units~~
- Uses a standing desk (deprecated 2026-09-01)
## Related
- [Profile](/3_Personal/Profile.md)
"""


def test_claims_are_ranked_by_confirmations_then_recall_then_updated(settings: Settings) -> None:
    page(settings, "3_Personal/Preferences.md", PREFS)
    recall(settings, ("2026-11-18T10:00:00+00:00", "Drinks green tea in the afternoon"))
    result = promote_memory_md(settings, today=TODAY)
    assert result.written and result.outcome == "created" and result.generator == PROMOTE_GENERATOR
    assert result.facts == 4
    assert generated(settings) == [
        "## Preferences",
        "- Prefers metric units in all answers",  # 5x, marker dropped
        "- Wants water reminders hourly from 9 AM to 9 PM",  # 2x
        "- Drinks green tea in the afternoon",  # recalled
        "- Likes jazz records",
    ]
    text = settings.memory_md_path.read_text()
    assert "imperial" not in text and "standing desk" not in text and "Profile" not in text
    assert "(confirmed" not in text


def test_the_more_recent_recall_wins_and_the_rotated_log_is_read(settings: Settings) -> None:
    page(
        settings,
        "3_Personal/Hobbies.md",
        "---\ncategory: preference\nupdated: 2026-08-01\n---\n- Likes jazz records\n"
        "- Collects vintage fountain pens\n- Plays chess online on weekends\n",
    )
    # The older recall sits in the rotated file; the newer one is a vault chunk cut at 160 chars.
    recall(settings, ("2026-10-01T08:00:00+00:00", "- [preference] Likes jazz records"), rotated_file=True)
    recall(
        settings,
        ("2026-11-19T08:00:00Z", "## Key Facts\n- Plays chess online on weekends (confirmed 1x)\n- Other"),
        ("not a date", "Collects vintage fountain pens"),
    )
    recall(settings)  # nothing
    settings.recall_log_path.open("a").write("not json\n")
    promote_memory_md(settings, today=TODAY)
    assert generated(settings) == [
        "## Preferences",
        "- Plays chess online on weekends",
        "- Likes jazz records",
        "- Collects vintage fountain pens",
    ]


def test_a_more_recently_updated_page_ranks_first_and_the_line_limit_drops_the_rest(
    settings: Settings,
) -> None:
    page(settings, "3_Personal/Old.md", "---\nupdated: 2026-01-01\n---\n- Owned a red bicycle as a child\n")
    page(settings, "3_Personal/New.md", "---\nupdated: 2026-10-01\n---\n- Owns a blue cargo bike now\n")
    result = promote_memory_md(settings, max_lines=2, today=TODAY)
    assert result.facts == 1
    assert generated(settings) == ["## New", "- Owns a blue cargo bike now"]


def test_sections_follow_the_page_category_and_deprecated_or_tombstoned_claims_stay_out(
    settings: Settings,
) -> None:
    page(settings, "3_Personal/Profile.md", "## Key Facts\n- Lives in Lisbon\n- Works as a data engineer\n")
    page(settings, "3_Personal/Goals.md", "---\nstatus: active\n---\n- Wants to run a marathon in October\n")
    page(settings, "3_Personal/Retired.md", "---\nstatus: deprecated\n---\n- Lives in Porto\n")
    page(settings, "3_Personal/Health & fitness.md", "---\ntitle: Health\n---\n- Trains five days a week\n")
    append_tombstone(settings.tombstones_path, "Works as a data engineer")
    result = promote_memory_md(settings, today=TODAY)
    assert "1 deprecated page(s) left out" in result.reason
    assert generated(settings) == [
        "## Profile",
        "- Lives in Lisbon",
        "## Goals",
        "- Wants to run a marathon in October",
        "## Health",
        "- Trains five days a week",
    ]


def test_the_manual_zone_is_left_byte_for_byte(settings: Settings) -> None:
    path = settings.memory_md_path
    manual = (
        b"\r\n\r\n<!-- verified: human:alice at 2026-11-01T09:00:00Z -->\r\n## My notes\r\n- mine \xff\r\n"
    )
    path.write_bytes(
        b"# Top note\r\n" + GENERATED_OPEN.encode() + b"\r\n- old\r\n" + GENERATED_CLOSE.encode() + manual
    )
    page(settings, "3_Personal/Profile.md", "- Lives in Lisbon\n")
    result = promote_memory_md(settings, today=TODAY)
    assert result.written and result.outcome == "replaced"
    data = path.read_bytes()
    assert data.startswith(b"# Top note\r\n" + GENERATED_OPEN.encode())
    assert data.endswith(GENERATED_CLOSE.encode() + manual)
    assert b"- Lives in Lisbon" in data and b"- old" not in data
    again = promote_memory_md(settings, today=TODAY)
    assert not again.written and again.outcome == "unchanged" and path.read_bytes() == data


def test_a_hand_written_file_is_refused_not_overwritten(settings: Settings) -> None:
    path = settings.memory_md_path
    path.write_text("# My own memory\n- I wrote this myself\n", encoding="utf-8")
    before = path.read_bytes()
    page(settings, "3_Personal/Profile.md", "- Lives in Lisbon\n")
    result = promote_memory_md(settings, today=TODAY)
    assert not result.written and result.outcome == "refused"
    assert path.read_bytes() == before


def test_nothing_is_written_without_personal_pages(settings: Settings) -> None:
    page(settings, "2_Wiki/Concepts/Lakes.md", "- Lakes are wet\n")
    result = promote_memory_md(settings, today=TODAY)
    assert not result.written and result.outcome == "no_pages"
    assert "3_Personal/" in result.reason
    assert not settings.memory_md_path.exists()
    write_generated_zone(settings.memory_md_path, "## Profile\n- from the per-turn refresh")
    before = settings.memory_md_path.read_bytes()
    assert promote_memory_md(settings, today=TODAY).outcome == "no_pages"
    assert settings.memory_md_path.read_bytes() == before


def test_page_claims_skip_frontmatter_code_links_and_navigation_sections() -> None:
    text = (
        "---\ntags:\n- not a claim\n---\n# Title\n- Claim one\n  - a nested detail\n```\n- in code\n```\n"
        "- [A link](/x.md) first\n- [[Wiki]] first\n* Claim two (confirmed 3X)\n## Sources\n- a source\n"
        "## More\n+ Claim three\n"
    )
    claims = page_claims("p.md", text)
    assert [(c.content, c.confirmations) for c in claims] == [
        ("Claim one", 1),
        ("Claim two", 3),
        ("Claim three", 1),
    ]
    assert claims[0].line == 5
    assert page_claims("p.md", "---\ntitle: never closed\n- x\n") == []
