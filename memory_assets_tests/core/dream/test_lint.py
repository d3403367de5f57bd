"""The dream's lint pass on a crafted vault, and log.md's lint entry."""

from datetime import date
from pathlib import Path

import pytest

from memory_assets.core.dream.lint import (
    BROKEN_FRONTMATTER,
    BROKEN_LINK,
    CALLOUT,
    CONTRADICTION,
    KINDS,
    ORPHAN,
    STALE,
    LintResult,
    conflicting,
    lint_vault,
)
from memory_assets.core.dream.promote import Claim
from memory_assets.core.knowledge.chunking import parse_page
from memory_assets.core.knowledge.watermark import (
    append_ingest_entry,
    append_lint_entry,
    read_last_lint_date,
    read_watermark,
)
from memory_assets.core.settings import Settings

TODAY = date(2026, 11, 20)

HOME = """---
title: Home
category: personal
updated: 2026-08-01
stale_after: never
---
## Key Facts
- Lives in Lisbon (confirmed 3x, last 2026-08-01)
- Works as a data engineer
- Lives in Berlin
- Prefers metric units
- Prefers metric units in all answers
## Related
- [Routines](/3_Personal/Routines.md)
- [Missing](/2_Wiki/Concepts/Nowhere.md)
"""
ROUTINES = """---
title: Routines
updated: 2026-01-01
stale_after: 2026-06-01
---
- Runs every morning at 7
- See [[Home]] and [[Lakes|the lakes page]] and [[Ghost Page]]
"""
LAKES = "# Lakes\n\n- Lakes are wet\n- Link in code: `[x](/nope.md)`\n\n```\n[[Not A Link]]\n```\n"
ORPHANED = "---\ntitle: Alone\n---\nNobody links here.\n"
BROKEN = "---\ntitle: [never closed\nreview: current\n---\n- Has 2 cats\n- Has 3 cats\n"
INBOX = "- unsorted note, nobody links here\n"
INDEX = "# Notebook Index\n\n- [Home](/3_Personal/Home.md)\n- 2_Wiki/Concepts/Lakes.md\n- [Gone](/5_Archives/Gone.md)\n"


def write(vault: Path, rel: str, text: str | bytes) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def vault(settings: Settings) -> Path:
    v = settings.notebook_dir
    write(v, "index.md", INDEX)
    write(v, "3_Personal/Home.md", HOME)
    write(v, "3_Personal/Routines.md", ROUTINES)
    write(v, "2_Wiki/Concepts/Lakes.md", LAKES)
    write(v, "1_Projects/Alone.md", ORPHANED)
    write(v, "2_Wiki/Entities/Broken.md", BROKEN)
    write(v, "0_Inbox/note.md", INBOX)
    return v


def snapshot(vault: Path) -> dict[str, bytes]:
    return {p.relative_to(vault).as_posix(): p.read_bytes() for p in sorted(vault.rglob("*")) if p.is_file()}


def kinds(result: LintResult, kind: str) -> list[tuple[str, str]]:
    return [(f.page, f.detail) for f in result.findings if f.kind == kind]


def test_lint_finds_each_kind_of_finding(settings: Settings, vault: Path) -> None:
    result = lint_vault(settings, TODAY)
    assert set(result.counts) == set(KINDS)
    assert result.pages_checked == 6
    broken = kinds(result, BROKEN_LINK)
    assert sorted(page for page, _ in broken) == ["3_Personal/Home.md", "3_Personal/Routines.md", "index.md"]
    assert any("Nowhere.md" in d for _, d in broken) and any("Ghost Page" in d for _, d in broken)
    assert any("Gone.md" in d for _, d in broken)
    assert not any("nope.md" in d or "Not A Link" in d for _, d in broken)  # code is not linked
    # Home is in index.md, Routines is linked from Home, Lakes is named in index.md and linked from
    # Routines; the inbox is exempt; the broken-frontmatter page and Alone have no inbound link.
    assert sorted(page for page, _ in kinds(result, ORPHAN)) == [
        "1_Projects/Alone.md",
        "2_Wiki/Entities/Broken.md",
    ]
    contradictions = kinds(result, CONTRADICTION)
    assert [page for page, _ in contradictions] == ["2_Wiki/Entities/Broken.md", "3_Personal/Home.md"]
    assert '"Lives in Lisbon" vs "Lives in Berlin"' in contradictions[1][1]
    assert kinds(result, STALE) == [("3_Personal/Routines.md", "stale_after 2026-06-01 has passed")]
    assert result.revisit == ["3_Personal/Routines.md"]
    assert [page for page, _ in kinds(result, BROKEN_FRONTMATTER)] == ["2_Wiki/Entities/Broken.md"]
    assert result.counts == {
        BROKEN_LINK: 3,
        ORPHAN: 2,
        CONTRADICTION: 2,
        STALE: 1,
        BROKEN_FRONTMATTER: 1,
    }
    assert all(f.action for f in result.findings)
    assert result.summary.startswith("lint 2026-11-20: 6 pages checked; 3 broken links, 2 orphans")
    assert "\n" not in result.summary
    assert result.to_dict()["counts"][CONTRADICTION] == 2


def test_the_callout_is_added_once_and_review_is_set(settings: Settings, vault: Path) -> None:
    home = vault / "3_Personal/Home.md"
    first = lint_vault(settings, TODAY)
    assert first.pages_changed == ["3_Personal/Home.md"]
    text = home.read_text(encoding="utf-8")
    lines = text.splitlines()
    at = lines.index("- Lives in Lisbon (confirmed 3x, last 2026-08-01)")
    assert lines[at - 1].startswith(CALLOUT + ': "Lives in Lisbon" vs "Lives in Berlin"')
    assert text.count(CALLOUT) == 1
    assert parse_page(text, "Home.md").meta["review"] == "needs-review"
    assert parse_page(text, "Home.md").meta["title"] == "Home"  # the rest of the frontmatter kept
    # Nothing deleted: every original line is still there, in order.
    assert [line for line in lines if not line.startswith(CALLOUT) and line != "review: needs-review"] == (
        HOME.splitlines()
    )
    after_first = snapshot(vault)
    second = lint_vault(settings, TODAY)
    assert second.pages_changed == []
    assert snapshot(vault) == after_first
    assert second.counts == first.counts  # still reported until a person resolves it


def test_lint_never_deletes_and_leaves_a_broken_frontmatter_page_byte_for_byte(
    settings: Settings, vault: Path
) -> None:
    odd = b"---\r\ntitle: [x\r\n---\r\n- Has 2 cats\r\n- Has 3 cats \xff\r\n"
    write(vault, "3_Personal/Odd.md", odd)
    before = snapshot(vault)
    lint_vault(settings, TODAY)
    after = snapshot(vault)
    assert set(after) == set(before)  # no page deleted (and none created)
    changed = {rel for rel in before if before[rel] != after[rel]}
    assert changed == {"3_Personal/Home.md"}
    assert after["2_Wiki/Entities/Broken.md"] == before["2_Wiki/Entities/Broken.md"] == BROKEN.encode()
    assert after["3_Personal/Odd.md"] == odd
    assert after["3_Personal/Routines.md"] == ROUTINES.encode()  # stale: queued, never rewritten
    assert after["log.md"] == before["log.md"]  # the runner writes the lint entry, not lint


def test_a_page_without_frontmatter_gets_one_and_crlf_is_kept(settings: Settings) -> None:
    v = settings.notebook_dir
    path = write(v, "3_Personal/Pets.md", b"## Pets\r\n- Has 2 cats\r\n- Has a dog\r\n- Has 3 cats\r\n")
    write(v, "index.md", "- [Pets](/3_Personal/Pets.md)\n")
    result = lint_vault(settings, TODAY)
    assert result.pages_changed == ["3_Personal/Pets.md"]
    data = path.read_bytes()
    assert data.startswith(
        b"---\r\nreview: needs-review\r\n---\r\n## Pets\r\n> [!warning] Conflicting claims"
    )
    assert data.endswith(b"\r\n- Has 2 cats\r\n- Has a dog\r\n- Has 3 cats\r\n")
    assert lint_vault(settings, TODAY).pages_changed == [] and path.read_bytes() == data


def test_an_existing_review_value_is_replaced_not_duplicated(settings: Settings) -> None:
    v = settings.notebook_dir
    path = write(
        v, "3_Personal/Diet.md", "---\nreview: current\nconfidence: high\n---\n- Is vegetarian\n- Is vegan\n"
    )
    lint_vault(settings, TODAY)
    text = path.read_text()
    assert text.startswith(
        "---\nreview: needs-review\nconfidence: high\n---\n> [!warning] Conflicting claims"
    )
    assert text.count("review:") == 1


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("Lives in Lisbon", "Lives in Berlin", True),
        ("Has 2 cats", "Has 3 cats (confirmed 4x, last 2026-08-01)", True),
        ("Lives in Porto", "Lives in Berlin", True),  # one word swapped
        ("Lives in Lisbon", "Currently lives in Berlin (since 2026-09-01); previously Porto", True),
        ("Has a dog named Rex", "Has a cat named Tom", False),
        ("Prefers metric units", "Prefers metric units in all answers", False),  # a sharpening
        ("Prefers metric units", "prefers metric units.", False),  # the same claim
        ("Likes tea", "Likes coffee", False),  # too different to be one claim
        ("Prefers metric units", "Prefers concise answers", False),
        # Numbered things are separate claims (claims.identifiers), as the dream keeps them.
        ("Finished reading book number 2 of the year", "Finished reading book number 3 of the year", False),
        ("Ticket #12 is blocked", "Ticket #13 is blocked", False),
        ("Ticket #12 is blocked", "Ticket #12 is closed", True),  # one numbered thing, two values
        ("The locker is number 3", "The locker is number 4", True),  # the number is the value
    ],
)
def test_the_contradiction_rule(a: str, b: str, expected: bool) -> None:
    assert conflicting(Claim("p", 0, a, False), Claim("p", 1, b, False)) is expected


def test_deprecated_claims_and_pages_are_not_contradictions(settings: Settings) -> None:
    v = settings.notebook_dir
    write(v, "index.md", "3_Personal/A.md 3_Personal/B.md\n")
    write(v, "3_Personal/A.md", "- ~~Lives in Lisbon~~\n- Lives in Berlin\n")
    write(
        v,
        "3_Personal/B.md",
        "---\nstatus: deprecated\nstale_after: 2020-01-01\n---\n- Has 2 cats\n- Has 3 cats\n",
    )
    result = lint_vault(settings, TODAY)
    assert result.counts[CONTRADICTION] == 0 and result.counts[STALE] == 0 and result.counts[ORPHAN] == 0
    assert result.pages_changed == []


def test_append_lint_entry_writes_the_existing_format(settings: Settings) -> None:
    log = settings.log_md
    assert read_last_lint_date(log) is None
    append_ingest_entry(log, date(2026, 8, 20), date(2026, 8, 19))
    append_lint_entry(log, date(2026, 8, 21))
    append_lint_entry(
        log, date(2026, 8, 28), "lint 2026-08-28: 3 pages\nchecked; watermark=2099-01-01 ## [2099-01-01] lint"
    )
    text = log.read_text()
    assert text.startswith("# Notebook Log\n\n")
    assert "\n## [2026-08-21] lint\n\n## [2026-08-28] lint\nlint 2026-08-28: 3 pages checked; " in text
    assert text.endswith("\n")
    assert read_last_lint_date(log) == date(2026, 8, 28)
    assert read_watermark(log) == date(2026, 8, 19)  # a summary can never move the watermark
