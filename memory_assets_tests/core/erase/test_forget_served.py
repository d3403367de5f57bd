"""Forget reaches everything served (issue 39): a forgotten text is in no search hit, listing,
line of MEMORY.md's generated zone, turn or kept candidate, whole or inside a longer chunk; the
markdown keeps it; a later refresh or dream never brings it back; check fails when a served place
still holds it."""

import json
from datetime import date
from pathlib import Path

import pytest

from memory_assets.core.audit.checks import no_tombstoned_content
from memory_assets.core.index.best_facts import CANDIDATES_STATE
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.memory_md import read_zones, write_generated_zone
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets_tests.core.erase.test_erase import SECRET, _run, holders, planted_home

FACT = "Their passport number is XK7741239."


def applied_home(settings: Settings, capsys: pytest.CaptureFixture[str]) -> Path:
    """``planted_home`` with its legacy rows' move finished as a person finishes it: exported, then
    applied (the rows deleted from the table). Exported but not applied, a legacy row whose log
    copy the dream folded is served beside its retired twin, and check names it."""
    home = planted_home(settings, capsys)
    assert _run(home, "legacy", "apply", "--yes", capsys=capsys)[0] == 0
    return home


def test_forget_the_fact_line_hides_it_everywhere_served_and_the_markdown_keeps_it(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    home = applied_home(settings, capsys)
    zone = read_zones(settings.memory_md_path).generated or ""
    assert SECRET in zone, "the promotion put the fact in MEMORY.md's generated zone"
    # A person's own line in the manual zone holds it too: named, and left.
    text = settings.memory_md_path.read_text()
    settings.memory_md_path.write_text(
        text + f"\nMy own note: their passport number is {SECRET}, in the drawer.\n"
    )

    code, out = _run(home, "forget", FACT, capsys=capsys)
    assert code == 0, out
    assert out["memory_md_lines_removed"] >= 1
    assert [d["file"] for d in out["left_in_your_own_lines"]] == ["memory/MEMORY.md"]

    # Not served: no hit for the number (the whole fact, or inside MEMORY.md's chunk).
    code, hits = _run(home, "search", "passport number", capsys=capsys)
    assert not [h for h in hits if FACT.rstrip(".").lower() in h["content"].lower()], hits
    assert FACT.rstrip(".") not in (read_zones(settings.memory_md_path).generated or "")
    assert not (settings.state_dir / CANDIDATES_STATE).exists()
    code, listed = _run(home, "search", FACT, "--no-embed", capsys=capsys)
    assert not [h for h in listed if FACT.rstrip(".").lower() in h["content"].lower()]
    # The markdown keeps it: the daily log, the page (reversible).
    assert any(p.startswith("memory/archive/") for p in holders(home, SECRET))
    assert any(p.startswith("notebook/3_Personal/") for p in holders(home, SECRET))
    # A later turn's refresh and a dream do not bring it back; check is green.
    assert _run(home, "write-turn", "--user", "I started learning the cello.", capsys=capsys)[0] == 0
    assert _run(home, "dream", "--force", "--all", capsys=capsys)[0] == 0
    assert FACT.rstrip(".") not in (read_zones(settings.memory_md_path).generated or "")
    assert _run(home, "check", capsys=capsys)[0] == 0
    # unforget brings the rows back (the zone is the generators' to rewrite).
    assert _run(home, "unforget", FACT, capsys=capsys)[0] == 0
    code, hits = _run(home, "search", FACT, "--no-embed", capsys=capsys)
    assert any(FACT.rstrip(".").lower() in h["content"].lower() for h in hits)


def test_check_names_a_served_place_that_still_holds_a_forgotten_text(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    home = applied_home(settings, capsys)
    assert _run(home, "forget", FACT, capsys=capsys)[0] == 0
    store = MemoryStore.of(settings)
    assert no_tombstoned_content(settings, store).passed
    # A generator that ignored the tombstone, and a stale cache: both named, by file, not by text.
    write_generated_zone(settings.memory_md_path, f"## Profile\n- {FACT}\n", generator="test")
    (settings.state_dir / CANDIDATES_STATE).write_text(
        json.dumps({"key": {}, "version": 1, "candidates": 1, "rows": [{"content": FACT}]})
    )
    outcome = no_tombstoned_content(settings, store)
    assert not outcome.passed
    joined = "\n".join(outcome.problems)
    assert "memory/MEMORY.md" in joined and CANDIDATES_STATE in joined
    assert SECRET not in joined
    assert _run(home, "check", capsys=capsys)[0] == 1
    # forget again rewrites the zone at once and drops the cache: green.
    assert _run(home, "forget", FACT, capsys=capsys)[0] == 0
    assert no_tombstoned_content(settings, store).passed


def test_forget_refuses_a_short_text_and_a_text_too_much_of_the_home_holds(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory_assets.cli import main
    from memory_assets_tests.conftest import write_facts

    for day in range(1, 29):
        write_facts(settings, date(2026, 11, day), f"Went to the market on day {day}")
    home = ["--home", str(settings.home), "--json"]
    assert main([*home, "forget", "day"]) == 2
    assert "under 4 characters" in capsys.readouterr()[1]
    assert main([*home, "forget", "went to the market"]) == 2
    err = capsys.readouterr()[1]
    assert "held by 28 of the home's" in err and "--force" in err
    assert not settings.tombstones_path.exists()
    assert main([*home, "forget", "went to the market", "--force"]) == 0
    assert json.loads(capsys.readouterr()[0])["tombstoned"] is True


def test_a_legacy_row_exported_and_folded_but_not_applied_is_named_with_its_fix(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dream folded the exported copy of a legacy row and the reconcile retired it: the row
    itself (no file holds it) is served beside its retired twin until ``legacy apply``. check
    names it and that fix; a text the reconcile retired is no forgotten text in the kept
    candidates."""
    home = planted_home(settings, capsys)
    store = MemoryStore.of(settings)
    outcome = no_tombstoned_content(settings, store)
    assert not outcome.passed
    assert len(outcome.problems) == 1, outcome.problems
    assert "legacy_direct" in outcome.problems[0] and "legacy apply" in outcome.problems[0]
    assert _run(home, "legacy", "apply", "--yes", capsys=capsys)[0] == 0
    assert no_tombstoned_content(settings, store).passed
