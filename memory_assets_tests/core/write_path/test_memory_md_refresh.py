"""The per-turn MEMORY.md writer: the stand-down rule, and MEMORY.md byte for byte what reading the
whole table writes, through the kept candidates, another process and a damaged cache file."""

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_assets.core.index import best_facts
from memory_assets.core.index.best_facts import _COLUMNS, CANDIDATES_STATE, _best_rows, _fact_where
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.chunking import GENERATED_CLOSE, GENERATED_OPEN
from memory_assets.core.knowledge.memory_md import (
    DEFAULT_MAX_LINES,
    Fact,
    rank_facts,
    read_zones,
    render_facts,
    write_generated_zone,
)
from memory_assets.core.knowledge.tombstones import append_tombstone, read_tombstones
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets.core.text import as_date
from memory_assets.core.write_path.extraction import Turn
from memory_assets.core.write_path.memory_md_refresh import refresh_from_index
from memory_assets.core.write_path.process import process_turn
from memory_assets.core.write_path.rule_extractor import RuleExtractor
from memory_assets_tests.conftest import DAY, write_facts

OPEN, CLOSE = GENERATED_OPEN.encode(), GENERATED_CLOSE.encode()
REPO = Path(__file__).resolve().parents[3]


# -- the stand-down rule, then read, render, write --------------------------------------------------
def test_refresh_writes_the_top_facts_and_stands_down_for_the_vault(
    settings: Settings, indexer: Indexer
) -> None:
    later = DAY.replace(day=DAY.day + 1)
    write_facts(settings, DAY, "Lives in Lisbon and works remotely", category="personal")
    write_facts(settings, DAY, "Prefers metric units in all answers", hour=10)
    write_facts(settings, later, "Prefers metric units in all answers")
    write_facts(settings, later, "Wants to finish the marathon plan by October", category="goal", hour=10)
    wiki = settings.notebook_dir / "2_Wiki" / "Concepts" / "Bees.md"
    wiki.write_text("A wiki paragraph about bees is no fact for the list.\n")
    path = settings.memory_md_path
    path.write_bytes(OPEN + b"\n" + CLOSE + b"\n\nHand notes stay \xff.\n")
    indexer.sweep()

    result = refresh_from_index(settings, indexer.store)
    assert (result.written, result.outcome, result.facts, result.generator) == (
        True,
        "replaced",
        3,
        "refresh_from_index",
    )
    assert path.read_bytes() == (
        OPEN + b"\n## Profile\n- Lives in Lisbon and works remotely\n\n## Preferences\n"
        b"- Prefers metric units in all answers\n\n## Goals\n- Wants to finish the marathon plan by "
        b"October\n" + CLOSE + b"\n\nHand notes stay \xff.\n"
    )
    indexer.sweep()  # MEMORY.md's own rows are never listed back into it
    assert not refresh_from_index(settings, indexer.store).written  # unchanged
    small = refresh_from_index(settings, indexer.store, max_lines=5)  # the two most recent facts
    assert small.facts == 2 and "Lives in Lisbon" not in read_zones(path).generated

    append_tombstone(settings.tombstones_path, "Prefers metric units in all answers")
    refresh_from_index(settings, indexer.store)  # forgotten at once, before any reindex
    assert "metric" not in path.read_text(errors="replace")

    before = path.read_bytes()
    (settings.notebook_dir / "3_Personal" / "Home.md").write_text("---\ncategory: personal\n---\n- Lisbon\n")
    result = refresh_from_index(settings, indexer.store)
    assert (result.written, result.outcome) == (False, "stood_down")
    assert "3_Personal/Home.md" in result.reason and path.read_bytes() == before


def test_refresh_without_an_index_writes_nothing(settings: Settings) -> None:
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    result = refresh_from_index(settings, store)
    assert (result.written, result.outcome) == (False, "no_index") and "reindex" in result.reason
    assert not settings.memory_md_path.exists() and not store.exists()


def test_refresh_leaves_a_hand_written_file_alone(settings: Settings, indexer: Indexer) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers")
    indexer.sweep()
    settings.memory_md_path.write_text("# Mine\n")
    result = refresh_from_index(settings, indexer.store)
    assert result.outcome == "refused" and settings.memory_md_path.read_text() == "# Mine\n"


# -- the kept candidates: the same bytes as reading the whole table ---------------------------------
def full_scan_body(settings: Settings, max_lines: int) -> str:
    """The zone body as the whole table gives it: a fresh store (no journal), no kept state, every
    fact row read and the best picked."""
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    tombstoned = read_tombstones(settings.tombstones_path).contents
    rows = _best_rows(store.scan(_COLUMNS, where=_fact_where(store.user_id)), tombstoned, max_lines)
    facts = [
        Fact.of(
            r["content"],
            r["category"],
            r["importance"],
            as_date(r["fact_date"]) or as_date(r["source_date"]) or as_date(r["created_at"]),
        )
        for r in rows.to_pylist()
    ]
    return render_facts(rank_facts([f for f in facts if f.content], tombstoned), max_lines)[0]


def test_the_kept_candidates_write_the_bytes_a_full_scan_writes(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turns through the write path, each followed by a refresh: MEMORY.md is byte for byte what
    reading the whole table writes, through a tombstone and a reindex by another writer. Only the
    first refresh, the one after the tombstone and the one after the other writer read the table;
    every other refresh brings the kept candidates forward through the turn's own commit."""
    scans: list[int] = []
    real_scan = best_facts._scan_candidates
    monkeypatch.setattr(best_facts, "_scan_candidates", lambda *a: scans.append(1) or real_scan(*a))
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    extractor = RuleExtractor()
    write_facts(settings, DAY, "Lives in Lisbon and works remotely", category="personal")
    write_facts(settings, DAY, "Keeps bees on the roof of the flat", hour=10)
    Indexer(settings, store=store, embedder=embedder).sweep()
    expected = settings.home / "expected.md"
    statements = [
        "I moved to Berlin in 2024.",
        "My sister Ana lives in Porto.",
        "I prefer tea over coffee in the morning.",
        "I want to run a marathon next year.",
        "I work as a data engineer at a bank.",
        "My daughter is called Mia.",
        "I am allergic to peanuts.",
        "I prefer tea over coffee in the morning.",
        "I drive a blue Volvo.",
        "I want to learn Portuguese.",
    ]
    at = datetime(2026, 11, 21, 9, tzinfo=UTC)
    reads: list[int] = []
    listed: dict[int, str] = {}
    for n, text in enumerate(statements):
        if n == 4:  # a tombstone: the kept candidates no longer apply
            append_tombstone(settings.tombstones_path, "Keeps bees on the roof of the flat")
        if n == 7:  # another writer (its own store) reindexes a day: this store's journal has a gap
            write_facts(settings, DAY, "Has a cat called Miso", hour=11)
            Indexer(settings, embedder=embedder).reindex_day(DAY)
        before = len(scans)
        process_turn(
            Turn(text, chat_id="t", at=at + timedelta(hours=n)),
            settings,
            extractor=extractor,
            store=store,
            embedder=embedder,
        )
        for max_lines in (DEFAULT_MAX_LINES, 4):
            result = refresh_from_index(settings, store, max_lines=max_lines)
            assert "not refreshed" not in result.reason
            write_generated_zone(expected, full_scan_body(settings, max_lines), generator="expected")
            assert settings.memory_md_path.read_bytes() == expected.read_bytes(), (n, max_lines)
            listed[max_lines] = settings.memory_md_path.read_text()
        reads.append(len(scans) - before)
    assert "Has a cat called Miso" in listed[DEFAULT_MAX_LINES] and "Volvo" in listed[DEFAULT_MAX_LINES]
    assert "bees" not in listed[DEFAULT_MAX_LINES]
    assert reads[0] == 1 and reads[4] == 1 and reads[7] == 1, reads  # the first, tombstone, other writer
    assert sum(reads) == 3, reads  # every other turn brought the candidates forward


def test_the_kept_candidates_parsed_in_memory_follow_another_process(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This process keeps the candidates it wrote parsed in memory, but only while the file holds
    those exact bytes: after another process (a real one) tombstones a fact, reindexes and
    refreshes, this process uses what that process wrote (no table read, since it is the latest
    version) and writes the bytes a full scan writes. Parsed afresh, the file gives the same rows."""
    write_facts(settings, DAY, "Lives in Lisbon and works remotely", category="personal")
    write_facts(settings, DAY, "Keeps bees on the roof of the flat", hour=10)
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    Indexer(settings, store=store, embedder=embedder).sweep()
    assert refresh_from_index(settings, store).written
    state = settings.state_dir / CANDIDATES_STATE
    first = state.read_bytes()
    assert best_facts._KEPT[str(state)][0] == first
    other = (
        "import sys\n"
        "from datetime import date\n"
        "from memory_assets.core.index.indexer import Indexer\n"
        "from memory_assets.core.index.store import MemoryStore\n"
        "from memory_assets.core.write_path.memory_md_refresh import refresh_from_index\n"
        "from memory_assets.core.knowledge.tombstones import append_tombstone\n"
        "from memory_assets.core.settings import Settings\n"
        "s = Settings.load(sys.argv[1])\n"
        "append_tombstone(s.tombstones_path, 'Keeps bees on the roof of the flat')\n"
        "Indexer(s).reindex_day(date.fromisoformat(sys.argv[2]))  # a delete: no model needed\n"
        "print(refresh_from_index(s, MemoryStore(s.index_uri, s.table_name, s.user_id)).reason)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", other, str(settings.home), DAY.isoformat()],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert state.read_bytes() != first
    scans: list[int] = []
    real_scan = best_facts._scan_candidates
    monkeypatch.setattr(best_facts, "_scan_candidates", lambda *a: scans.append(1) or real_scan(*a))
    refresh_from_index(settings, store)
    assert scans == []  # the other process's candidates, at the latest version, were used
    expected = settings.home / "expected.md"
    write_generated_zone(expected, full_scan_body(settings, DEFAULT_MAX_LINES), generator="expected")
    assert settings.memory_md_path.read_bytes() == expected.read_bytes()
    assert "bees" not in settings.memory_md_path.read_text()
    key = best_facts._candidates_key(store, read_tombstones(settings.tombstones_path).contents)
    remembered = best_facts._load_candidates(state, key)
    best_facts._KEPT.clear()
    parsed = best_facts._load_candidates(state, key)
    assert remembered is not None and parsed is not None
    assert remembered[:2] == parsed[:2] and remembered[2].equals(parsed[2])


@pytest.mark.parametrize("damage", ["empty", "partial", "garbage"])
def test_a_damaged_candidates_file_is_read_again(settings: Settings, embedder: Embedder, damage: str) -> None:
    """The candidates file is a cache written without fsync, so a crash may leave it empty or
    partial: the next refresh reads the table and writes what a full scan writes."""
    write_facts(settings, DAY, "Lives in Lisbon and works remotely", category="personal")
    write_facts(settings, DAY, "Keeps bees on the roof of the flat", hour=10)
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    Indexer(settings, store=store, embedder=embedder).sweep()
    refresh_from_index(settings, store)
    state = settings.state_dir / CANDIDATES_STATE
    good = state.read_bytes()
    state.write_bytes({"empty": b"", "partial": good[: len(good) // 2], "garbage": b"\x00\xff{"}[damage])
    settings.memory_md_path.unlink()
    best_facts._KEPT.clear()
    assert refresh_from_index(settings, store).written
    expected = settings.home / "expected.md"
    write_generated_zone(expected, full_scan_body(settings, DEFAULT_MAX_LINES), generator="expected")
    assert settings.memory_md_path.read_bytes() == expected.read_bytes()
    assert state.read_bytes() == good
