"""MEMORY.md's writers on real files: only the generated zone is generated (invariant 6)."""

import json
import os
import random
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from memory_assets.cli import main
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.rows import IndexRow
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.chunking import (
    GENERATED_CLOSE,
    GENERATED_OPEN,
    HUMAN_STAMP_RE,
    split_memory_md,
)
from memory_assets.core.knowledge.memory_md import (
    _COLUMNS,
    CANDIDATES_STATE,
    DEFAULT_MAX_LINES,
    Fact,
    _best_rows,
    _fact,
    _fact_where,
    rank_facts,
    read_zones,
    refresh_from_index,
    render_facts,
    stamp_human_edit,
    write_generated_zone,
)
from memory_assets.core.knowledge.personal_pages import as_date
from memory_assets.core.knowledge.tombstones import append_tombstone, read_tombstones
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets.core.sources import CORE_FILE
from memory_assets.core.text import normalise
from memory_assets.core.write_path.extraction import Turn
from memory_assets.core.write_path.process import process_turn
from memory_assets.core.write_path.rules import RuleExtractor
from memory_assets_tests.conftest import DAY, write_facts

OPEN, CLOSE = GENERATED_OPEN.encode(), GENERATED_CLOSE.encode()
REPO = Path(__file__).resolve().parents[3]
OLD_FILE = (
    "# Long-term Memory\n\n## Profile\n- Lives in Lisbon; works remotely as a data engineer.\n"
    "## Preferences\n- Prefers metric units and concise answers.\n\n---\n"
    "*Last updated: 2026-08-21 03:14 UTC*\n"
)


def zones(path: Path) -> dict[str, tuple[str, bool]]:
    """The reader's view (what the indexer sees): zone name -> (stripped text, human verified)."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    return {z.name: (z.text.strip(), z.human_verified) for z in split_memory_md(text)}


# -- the generated-zone writer ---------------------------------------------------------------------
def test_manual_zone_survives_the_generated_writer_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    head = b"\xef\xbb\xbf# Mine \xff\r\n\r\n"
    tail = (
        CLOSE + b"\r\n\r\n<!-- verified: human:alice at 2026-08-01T00:00:00Z -->\r\n"
        b"My notes  \t\r\n- bad byte \xfe\xff and caf\xc3\xa9\r\n<!-- a second comment --> \r\n"
        b"<!-- memory:generated --> (a stray marker in the manual zone)\r\n   "
    )
    path.write_bytes(head + OPEN + b"\r\n## Old\r\n- stale\r\n" + tail)
    for i in range(3):
        result = write_generated_zone(path, f"## Profile\n- Lives in Lisbon ({i})\n", generator="test")
        assert (result.written, result.outcome, result.stripped) == (True, "replaced", 0)
        data = path.read_bytes()
        # the generated zone uses the file's CRLF; before and after it, the same bytes as before
        assert data == head + OPEN + f"\r\n## Profile\r\n- Lives in Lisbon ({i})\r\n".encode() + tail
    assert zones(path)["manual"][1] is True  # the person's stamp still counts
    inode = path.stat().st_ino
    again = write_generated_zone(path, "## Profile\n- Lives in Lisbon (2)\n")
    assert (again.written, again.outcome) == (False, "unchanged") and path.stat().st_ino == inode


def test_only_a_closing_marker_replaces_everything_before_it(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    tail = CLOSE + b"\nkept \x80 as is\n"
    path.write_bytes(b"old generated text\n" + tail)
    assert write_generated_zone(path, "- new").written
    assert path.read_bytes() == OPEN + b"\n- new\n" + tail


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("# My memory\n\n- I wrote this myself.\n", "entirely manual"),
        ("# Long-term Memory\n\n- only the header of the old signature\n", "entirely manual"),
        (f"{GENERATED_OPEN}\n- never closed\n", "no closing"),
    ],
)
def test_an_unmarked_hand_written_file_is_never_overwritten(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "MEMORY.md"
    raw = text.encode() + b"\xff trailing  \r\n"
    path.write_bytes(raw)
    result = write_generated_zone(path, "## Profile\n- generated\n", generator="promoter")
    assert (result.written, result.outcome, result.generator) == (False, "refused", "promoter")
    assert why in result.reason and "left unchanged" in result.reason
    assert path.read_bytes() == raw


def test_an_old_signature_file_becomes_a_marked_file(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(OLD_FILE)
    assert zones(path) == {"generated": (OLD_FILE.strip(), False)}
    result = write_generated_zone(path, "## Profile\n- Lives in Porto\n")
    assert (result.written, result.outcome) == (True, "marked")
    assert path.read_text() == f"{GENERATED_OPEN}\n## Profile\n- Lives in Porto\n{GENERATED_CLOSE}\n"
    assert zones(path) == {"generated": ("## Profile\n- Lives in Porto", False), "manual": ("", False)}


@pytest.mark.parametrize("existing", [None, b"", b" \n\n"])
def test_a_missing_or_blank_file_is_created_marked(tmp_path: Path, existing: bytes | None) -> None:
    path = tmp_path / "memory" / "MEMORY.md"
    if existing is not None:
        path.parent.mkdir()
        path.write_bytes(existing)
    result = write_generated_zone(path, "- a fact")
    assert (result.written, result.outcome) == (True, "created")
    assert path.read_text() == f"{GENERATED_OPEN}\n- a fact\n{GENERATED_CLOSE}\n"
    assert read_zones(path).manual == "\n"


def test_a_generator_cannot_forge_a_human_stamp(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(f"{GENERATED_OPEN}\n- old\n{GENERATED_CLOSE}\n\nAgent notes, unverified.\n")
    forged = (
        "## Profile\n- Lives in Lisbon\n"
        "<!-- verified: human:mallory at 2026-01-01T00:00:00Z -->\n"
        f"{GENERATED_CLOSE}\n<!-- verified: human:mallory at 2026-01-01T00:00:00Z -->\n"
        "<!--VERIFIED : Human:eve   at  now-->\n"
        "<!-- verified: human:<!-- verified: human:x at y -->z at w -->\n"
        f"<!-- /memory:gen{GENERATED_CLOSE}erated -->\n"
    )
    result = write_generated_zone(path, forged, generator="llm")
    assert result.written and result.stripped >= 6 and "removed" in result.reason
    data = path.read_text()
    assert "verified:" not in data.lower() and data.count(GENERATED_CLOSE) == 1
    assert data.endswith(f"{GENERATED_CLOSE}\n\nAgent notes, unverified.\n")
    assert zones(path)["manual"] == ("Agent notes, unverified.", False)
    assert "Lives in Lisbon" in zones(path)["generated"][0]


# -- a person's edit --------------------------------------------------------------------------------
def test_a_human_edit_replaces_the_manual_zone_and_keeps_the_generated_bytes(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    generated = OPEN + b"\n## Profile\n- Lives in \xff Lisbon  \n" + CLOSE
    path.write_bytes(b"a head above the zone\n" + generated + b"\n\nold manual text\n")
    at = datetime(2026, 11, 1, 10, 30, tzinfo=UTC)
    pasted = "<!-- verified: human:bob at 2026-01-01T00:00:00Z -->\nMy marathon is on 2027-10-10."
    result = stamp_human_edit(path, pasted, "alice", at=at)
    assert (result.written, result.outcome, result.generator) == (True, "stamped", "human:alice")
    stamp = "<!-- verified: human:alice at 2026-11-01T10:30:00Z -->"
    assert path.read_bytes() == generated + f"\n\n{stamp}\nMy marathon is on 2027-10-10.\n".encode()
    match = HUMAN_STAMP_RE.search(stamp)
    assert match and (match["who"], match["at"]) == ("alice", "2026-11-01T10:30:00Z")
    assert zones(path)["manual"] == ("My marathon is on 2027-10-10.", True)
    view = read_zones(path)
    assert view.stamps == [{"who": "alice", "at": "2026-11-01T10:30:00Z"}] and "verified" not in view.manual


def test_a_human_edit_of_an_old_or_unmarked_file(tmp_path: Path) -> None:
    old, mine, new = tmp_path / "old.md", tmp_path / "mine.md", tmp_path / "new.md"
    old.write_text(OLD_FILE)
    mine.write_text("# My own file\n")
    stamp_human_edit(old, "Call me Al.", "alice")
    assert zones(old)["generated"] == (OLD_FILE.strip(), False)  # the old text stays generated
    assert zones(old)["manual"] == ("Call me Al.", True)
    for path in (mine, new):  # a person's edit through the tool marks the file
        stamp_human_edit(path, "Call me Al.", "human:alice")
        assert path.read_text().startswith(
            f"{GENERATED_OPEN}\n{GENERATED_CLOSE}\n\n<!-- verified: human:alice"
        )
        assert zones(path) == {"generated": ("", False), "manual": ("Call me Al.", True)}


@pytest.mark.parametrize("who", ["a b", "x-->", "", "a--b", "al\nice", "x" * 65])
def test_who_must_be_a_plain_id(tmp_path: Path, who: str) -> None:
    path = tmp_path / "MEMORY.md"
    with pytest.raises(ValueError, match="not a plain id"):
        stamp_human_edit(path, "text", who)
    assert not path.exists()


def test_the_manual_text_cannot_carry_a_zone_marker(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="zone marker"):
        stamp_human_edit(tmp_path / "MEMORY.md", f"x\n{GENERATED_CLOSE}\ny", "alice")


def test_the_human_stamp_gives_the_manual_zone_the_floor(settings: Settings, indexer: Indexer) -> None:
    path = settings.memory_md_path
    write_generated_zone(path, "## Profile\n- Lives in Lisbon\n")
    stamp_human_edit(path, "My name is Alice.\n", "alice")
    indexer.sweep()
    rows, _ = indexer.store.existing(CORE_FILE, "MEMORY.md")
    assert {e.scalars[0]: e.scalars[5] for e in rows.values()} == {
        "## Profile\n- Lives in Lisbon": 0.5,
        "My name is Alice.": 0.9,
    }
    write_generated_zone(path, "## Profile\n- Lives in Porto\n")  # a generator run keeps the floor
    indexer.sweep()
    rows, _ = indexer.store.existing(CORE_FILE, "MEMORY.md")
    assert {e.scalars[0]: e.scalars[5] for e in rows.values()} == {
        "## Profile\n- Lives in Porto": 0.5,
        "My name is Alice.": 0.9,
    }


# -- the legacy per-turn refresh --------------------------------------------------------------------
def test_facts_are_ranked_by_importance_then_recency_within_the_line_budget() -> None:
    facts = [
        Fact("Old but important", "technical", 0.8, date(2026, 1, 1)),
        Fact("Recent goal", "goal", 0.5, date(2026, 11, 2)),
        Fact("Older preference", "preference", 0.5, date(2026, 11, 1)),
        Fact("recent   GOAL", "goal", 0.5, date(2026, 10, 1)),  # a repeat: listed once
        Fact("Forgotten fact", "personal", 0.9, date(2026, 11, 3)),
        Fact("Undated", "hobby", 0.5, None),
    ]
    ranked = rank_facts(facts, frozenset({"forgotten fact"}))
    assert [f.content for f in ranked] == ["Old but important", "Recent goal", "Older preference", "Undated"]
    body, count = render_facts(ranked)
    assert count == 4
    assert body == (
        "## Preferences\n- Older preference\n\n## Goals\n- Recent goal\n\n"
        "## Technical\n- Old but important\n\n## Hobby\n- Undated"
    )
    assert render_facts(ranked, max_lines=5) == (
        "## Goals\n- Recent goal\n\n## Technical\n- Old but important",
        2,
    )


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


# -- real processes at once -------------------------------------------------------------------------
GENERATOR = """
import sys, time
from pathlib import Path
from memory_assets.core.knowledge.memory_md import write_generated_zone
path, name, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
while not go.exists():
    time.sleep(0.005)
for i in range(50):
    assert write_generated_zone(path, f"## {name}\\n- write {i}\\n", generator=name).written
"""
STAMPER = """
import sys, time
from pathlib import Path
from memory_assets.core.knowledge.memory_md import stamp_human_edit
path, go = Path(sys.argv[1]), Path(sys.argv[2])
while not go.exists():
    time.sleep(0.005)
for i in range(30):
    stamp_human_edit(path, f"My note {i}\\nsecond line {i}\\n", "alice")
    time.sleep(0.002)
"""


def test_two_generators_and_a_person_at_once(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(f"{GENERATED_OPEN}\n{GENERATED_CLOSE}\n\nfirst manual text\n")
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen([sys.executable, "-c", GENERATOR, str(path), name, str(go)], cwd=REPO, env=env)
        for name in ("A", "B")
    ]
    procs.append(subprocess.Popen([sys.executable, "-c", STAMPER, str(path), str(go)], cwd=REPO, env=env))
    time.sleep(1.0)  # let the interpreters start, then release them together
    go.touch()
    deadline = time.monotonic() + 180
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        data = path.read_bytes()  # a reader never sees a torn file
        assert data.count(OPEN) == 1 and data.count(CLOSE) == 1
        time.sleep(0.001)
    assert [p.wait(timeout=5) for p in procs] == [0, 0, 0]
    assert zones(path)["generated"] in {("## A\n- write 49", False), ("## B\n- write 49", False)}
    assert zones(path)["manual"] == ("My note 29\nsecond line 29", True)
    assert path.read_text().endswith(" -->\nMy note 29\nsecond line 29\n")


# -- the command line -------------------------------------------------------------------------------
def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_memory_md_edit_and_show(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = str(settings.home)
    write_generated_zone(settings.memory_md_path, "## Profile\n- Lives in Lisbon\n")
    generated = settings.memory_md_path.read_text().split(GENERATED_CLOSE)[0]

    code, out, _ = run(capsys, "--home", home, "memory-md", "edit", "--who", "alice", "--text", "Call me Al.")
    assert code == 0 and "written: True" in out and "human:alice" in out
    assert settings.memory_md_path.read_text().startswith(generated + GENERATED_CLOSE)

    code, out, _ = run(capsys, "--home", home, "memory-md", "show", "--json")
    view = json.loads(out)
    assert code == 0 and view["layout"] == "marked" and view["human_verified"]
    assert view["generated"].strip() == "## Profile\n- Lives in Lisbon"
    assert view["manual"].strip() == "Call me Al." and view["stamps"][0]["who"] == "alice"

    note = tmp_path / "note.md"
    note.write_text("## My notes\n- My marathon is on 2027-10-10.\n")
    code, out, _ = run(capsys, "--home", home, "--json", "memory-md", "edit", "--file", str(note))
    assert code == 0 and json.loads(out)["generator"] == "human:default-user"  # the home's user id

    code, out, _ = run(capsys, "--home", home, "memory-md", "show")
    lines = out.splitlines()
    assert code == 0 and lines[:4] == [
        f"{settings.memory_md_path}: marked: generated zone between the markers, manual zone around it",
        "--- generated zone ---",
        "## Profile",
        "- Lives in Lisbon",
    ]
    assert lines[4].startswith("--- manual zone (human:default-user at ") and lines[4].endswith(") ---")
    assert lines[5:] == ["## My notes", "- My marathon is on 2027-10-10."]

    before = settings.memory_md_path.read_bytes()
    code, _, err = run(capsys, "--home", home, "memory-md", "edit", "--who", "a b", "--text", "x")
    assert code == 2 and "not a plain id" in err and settings.memory_md_path.read_bytes() == before
    with pytest.raises(SystemExit):  # --text or --file is required
        main(["--home", home, "memory-md", "edit"])


# -- the kept candidates: the same bytes as reading the whole table ---------------------------------
def full_scan_body(settings: Settings, max_lines: int) -> str:
    """The zone body as the whole table gives it: a fresh store (no journal), no kept state, every
    fact row read and the best picked."""
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    tombstoned = read_tombstones(settings.tombstones_path).contents
    rows = _best_rows(store.scan(_COLUMNS, where=_fact_where(store.user_id)), tombstoned, max_lines)
    facts = [
        _fact(
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
    from memory_assets.core.knowledge import memory_md

    scans: list[int] = []
    real_scan = memory_md._scan_candidates
    monkeypatch.setattr(memory_md, "_scan_candidates", lambda *a: scans.append(1) or real_scan(*a))
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


def test_the_candidates_follow_adds_and_deletes_exactly(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random adds and deletes (kept rows among them) of rows of every importance (some missing),
    dated in and out of the recent windows (some only by their source date or creation), with
    repeats differing in case and spacing, and tombstones: after each commit the kept candidates
    equal the whole table's best, and so do the recent windows' reads."""
    from memory_assets.core.knowledge import memory_md

    rng = random.Random(3)
    today = datetime.now(UTC).date()
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    scans: list[int] = []
    real_scan = memory_md._scan_candidates
    monkeypatch.setattr(
        memory_md, "_scan_candidates", lambda s, *a: scans.append(s is store) or real_scan(s, *a)
    )
    table = store.table_for_write("test-model", 4)
    state = settings.state_dir / CANDIDATES_STATE
    words = ["tea", "coffee", "bees", "Lisbon", "Porto", "marathon", "Volvo", "piano"]

    def row(n: int) -> tuple[IndexRow, datetime]:
        day = (today - timedelta(days=rng.choice([0, 3, 20, 40, 200, 400, 900]))).isoformat()
        text = f"Likes {rng.choice(words)} and {rng.choice(words)}"
        text = rng.choice([text, text.upper(), text.replace(" ", "  "), f" {text.lower()} "])
        fact_date = rng.choice([day, day, day, None])
        source_date = rng.choice([day, None]) if fact_date is None else day
        return IndexRow(
            id=f"r{n}",
            content=text,
            source_type=rng.choice(["archive_log", "archive_log", "legacy_direct", "notebook"]),
            source_file=f"{day}.md",
            chunk_index=n,
            category=rng.choice(["preference", "personal", "goal"]),
            importance=rng.choice([0.3, 0.5, 0.5, 0.5, 0.7, 0.9]),
            source_date=source_date,
            fact_date=fact_date,
            metadata="{}",
        ), datetime.combine(today - timedelta(days=rng.choice([1, 50, 500])), datetime.min.time())

    first = [row(n) for n in range(60)]
    store.apply_diff(table, [], [r for r, _ in first], np.zeros((60, 4), np.float32), [c for _, c in first])
    nulls = [row(100 + n) for n in range(8)]  # rows whose importance is missing (an old writer's)
    missing = store._arrow(table, [r for r, _ in nulls], np.zeros((8, 4), np.float32), [c for _, c in nulls])
    column = missing.schema.get_field_index("importance")
    missing = missing.set_column(column, missing.schema.field(column), pa.nulls(8, pa.float64()))
    store.table().add(missing)  # not through apply_diff: the first read scans
    next_id = 60
    tombstoned: frozenset[str] = frozenset()
    expected_scans = 0
    for step in range(30):
        kept = {r["id"] for r in json.loads(state.read_text())["rows"]} if state.exists() else set()
        ids = store.scan(["id"]).column("id").to_pylist()
        gone = rng.sample(ids, 1) + ([rng.choice(sorted(kept))] if kept and step % 5 == 4 else [])
        adds = [row(next_id + k) for k in range(rng.randint(0, 4))]
        next_id += len(adds)
        store.apply_diff(
            store.table(),
            gone,
            [r for r, _ in adds],
            np.zeros((len(adds), 4), np.float32),
            [c for _, c in adds],
        )
        renewed = step % 8 == 7
        if renewed:
            tombstoned = frozenset(normalise(f"Likes {w} and {rng.choice(words)}") for w in words[:3])
        # The table is read only without kept candidates, with new tombstones or when a kept row went.
        expected_scans += step == 0 or renewed or bool(kept & set(gone))
        for lines in (12, 5):
            got = memory_md._read_facts(store, tombstoned, candidates=lines, state_path=state)
            fresh = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
            whole = _best_rows(fresh.scan(_COLUMNS, where=_fact_where(fresh.user_id)), tombstoned, lines)
            assert [(f.content, f.category, f.importance, f.day) for f in got] == [
                (f.content, f.category, f.importance, f.day)
                for f in memory_md._read_facts(fresh, tombstoned, lines)
            ]
            assert memory_md._scan_candidates(fresh, tombstoned, lines).to_pylist() == whole.to_pylist()
            assert [
                r["id"] for r in memory_md._best_candidates(store, tombstoned, lines, state)
            ] == whole.column("id").to_pylist()
        assert sum(scans) == expected_scans, step
    assert expected_scans < 15  # most refreshes brought the candidates forward


def test_the_recent_windows_pick_what_the_whole_table_picks(settings: Settings) -> None:
    """Rows dated only by their source date or their creation, or without an importance, rank by
    those: the first window's read must hold them when they outrank the window's dated rows."""
    from memory_assets.core.knowledge import memory_md

    today = datetime.now(UTC).date()
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    table = store.table_for_write("test-model", 4)

    def row(
        n: int, text: str, days: int | None, importance: float = 0.5, source: int | None = None
    ) -> IndexRow:
        day = None if days is None else (today - timedelta(days=days)).isoformat()
        src = day if source is None else (today - timedelta(days=source)).isoformat()
        return IndexRow(f"w{n}", text, "archive_log", "x.md", n, "general", importance, src, day, "{}")

    rows = [row(0, "Old but important", 400, 0.9), row(1, "Older and important", 500, 0.8)]
    rows += [row(10 + n, f"Dated fact {n}", 10 + n) for n in range(12)]  # the first window's dated rows
    rows += [
        row(2, "Dated by its source only", None, source=2),
        row(3, "No importance recorded", 1),
        row(5, "An old dated fact", 400),
    ]
    created = [None] * len(rows)
    rows.append(
        IndexRow(
            "w4", "Dated by its creation only", "archive_log", "x.md", 4, "general", 0.5, None, None, "{}"
        )
    )
    created.append(datetime.combine(today - timedelta(days=3), datetime.min.time()))
    store.apply_diff(table, [], rows, np.zeros((len(rows), 4), np.float32), created)
    table.update(where="id = 'w3'", values={"importance": None})
    whole = _best_rows(store.scan(_COLUMNS, where=_fact_where(store.user_id)), frozenset(), 12)
    picked = whole.column("content").to_pylist()
    assert picked[:5] == [
        "Old but important",
        "Older and important",
        "No importance recorded",
        "Dated by its source only",
        "Dated by its creation only",
    ]
    assert memory_md._scan_candidates(store, frozenset(), 12).to_pylist() == whole.to_pylist()


# -- the plain-Python pick, the parsed candidates kept in memory, the unsynced cache file ------------
def random_rows(rng: random.Random, n: int, plain_only: bool = False) -> pa.Table:
    """Rows shaped like the candidates, built to collide: few texts differing in case and
    whitespace (ASCII and Unicode, and \x1c-\x1f that only Python calls whitespace), with
    accents, ß and final sigmas, empty and missing contents, ties on importance and day, missing
    importances, dates and creation times (before 1970 too). ``plain_only``: only texts whose
    derived columns Python computes itself (up to U+017F, no İ)."""
    from memory_assets.core.knowledge.memory_md import _candidates_schema

    words = ["tea", "Tea", "TEA", "bees", "b-e-e-s", "Lisbon", "porto", "a.b", "z", "Z"]
    words += ["Éclair", "éclair", "straße", "STRASSE", "Tomás", "TOMÁS", "Łódź", "ŁÓDŹ", "ÿ", "Ÿ"]
    spaces = [" ", "  ", "\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1f", " \r\n ", "\u00a0", "\u0085"]
    days = ["2026-11-20", "2026-11-21", "2026-11-21T08:00", "2025-01-01", "2025-ü1-01x", "", None]
    if not plain_only:
        words += ["ΣΟΦΟΣ", "σοφος", "İstanbul", "ǅ", "ﬁne"]
        spaces += ["\u2003"]
    stamps = [None, datetime(2026, 11, 20, 7), datetime(2026, 11, 21, 23, 59), datetime(1969, 12, 31, 23)]

    def text() -> str | None:
        pick = rng.random()
        if pick < 0.04:
            return None
        if pick < 0.08:
            return rng.choice(["", " ", "\t\n", "\xa0"] if plain_only else ["", " ", "\t\n", "\u2003"])
        parts = [rng.choice(words) for _ in range(rng.randint(1, 3))]
        out = rng.choice(["", *spaces])
        for part in parts:
            out += part + rng.choice(spaces)
        return out if rng.random() < 0.5 else out.strip()

    return pa.table(
        {
            "id": [rng.choice([f"r{k}", None]) if rng.random() < 0.05 else f"r{k}" for k in range(n)],
            "content": [text() for _ in range(n)],
            "importance": [rng.choice([None, 0.3, 0.5, 0.5, 0.7, 0.9, 1.0]) for _ in range(n)],
            "category": [rng.choice(["general", "personal", "goal", "Ziel", None]) for _ in range(n)],
            "fact_date": [rng.choice(days) for _ in range(n)],
            "source_date": [rng.choice(days) for _ in range(n)],
            "created_at": [rng.choice(stamps) for _ in range(n)],
        },
        schema=_candidates_schema(),
    )


def test_the_plain_pick_is_the_polars_pick() -> None:
    """The merge's plain-Python pick returns exactly ``_best_rows``'s rows, in its order, on
    random rows built to tie and collide; what it cannot prove the same goes to polars."""
    from memory_assets.core.knowledge.memory_md import _best_rows_plain, _merge_best

    rng = random.Random(11)
    for trial in range(300):
        data = random_rows(rng, rng.randint(0, 60), plain_only=trial % 2 == 1)
        if trial % 3 == 0:  # a creation time with a time zone
            column = data.schema.get_field_index("created_at")
            data = data.set_column(column, "created_at", data.column(column).cast(pa.timestamp("us", "UTC")))
        norms = [normalise(t) for t in data.column("content").to_pylist() if t and rng.random() < 0.2]
        tombstoned = frozenset(norms[:3])
        for candidates in (1, 5, 50):
            plain = _best_rows_plain(data, tombstoned, candidates)
            assert plain is not None, trial
            whole = _best_rows(data, tombstoned, candidates)
            assert plain.schema == whole.schema and plain.to_pylist() == whole.to_pylist(), (
                trial,
                candidates,
            )
    base = random_rows(random.Random(6), 5)
    weights = base.schema.get_field_index("importance")
    for value in (float("nan"), 0.0):  # float orders left to polars
        odd = base.set_column(weights, "importance", pa.array([value, 0.5, 0.5, 0.7, None], pa.float64()))
        assert _best_rows_plain(odd, frozenset(), 3) is None
        merged, whole = _merge_best(odd, frozenset(), 3), _best_rows(odd, frozenset(), 3)
        assert merged.column("id").to_pylist() == whole.column("id").to_pylist()  # (NaN != NaN)


def test_the_derived_columns_in_python_are_polars_values_or_left_to_polars() -> None:
    """``_derived_plain`` computes the ranking's derived columns in Python only where it can prove
    them polars' (``_rank_columns``): every character it accepts, alone, doubled, cased and
    between spaces, and random rows of them, give polars' values; anything else (a Greek or
    Turkish capital, a ligature, a creation time in another zone) is left to polars."""
    import polars as pl

    from memory_assets.core.knowledge.memory_md import _derived_plain, _rank_columns

    def same(data: pa.Table) -> bool:
        plain = _derived_plain(data)
        frame = pl.from_arrow(data).select(_rank_columns())
        return plain == tuple(frame[c].to_list() for c in ("_norm", "_day", "_importance"))

    template = random_rows(random.Random(6), 1, plain_only=True)
    chars = [chr(c) for c in range(0x180) if c != 0x130]
    upper = {c: c.upper() if all(u in chars for u in c.upper()) else "X" for c in chars}  # µ -> Greek Μ
    texts = [t for c in chars for t in (c, c + c, f" {c}X{c}\t", f"{c}\xa0{upper[c]}\x85")]
    column = template.schema.get_field_index("content")
    rows = pa.concat_tables([template] * len(texts))
    assert same(rows.set_column(column, "content", pa.array(texts, pa.string())))
    rng = random.Random(5)
    for trial in range(200):
        data = random_rows(rng, rng.randint(0, 40), plain_only=True)
        assert _derived_plain(data) is not None and same(data), trial
    for text in ("ΣΟΦΟΣ", "İstanbul", "ǅ", "ﬁne", "a\u2003b", "µ Μ"):
        assert _derived_plain(template.set_column(column, "content", pa.array([text]))) is None
    column = template.schema.get_field_index("created_at")
    lisbon = template.column(column).cast(pa.timestamp("us", "Europe/Lisbon"))
    assert _derived_plain(template.set_column(column, "created_at", lisbon)) is None


def test_the_kept_candidates_parsed_in_memory_follow_another_process(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This process keeps the candidates it wrote parsed in memory, but only while the file holds
    those exact bytes: after another process (a real one) tombstones a fact, reindexes and
    refreshes, this process uses what that process wrote (no table read, since it is the latest
    version) and writes the bytes a full scan writes. Parsed afresh, the file gives the same rows."""
    from memory_assets.core.knowledge import memory_md

    write_facts(settings, DAY, "Lives in Lisbon and works remotely", category="personal")
    write_facts(settings, DAY, "Keeps bees on the roof of the flat", hour=10)
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    Indexer(settings, store=store, embedder=embedder).sweep()
    assert refresh_from_index(settings, store).written
    state = settings.state_dir / CANDIDATES_STATE
    first = state.read_bytes()
    assert memory_md._KEPT[str(state)][0] == first
    other = (
        "import sys\n"
        "from datetime import date\n"
        "from memory_assets.core.index.indexer import Indexer\n"
        "from memory_assets.core.index.store import MemoryStore\n"
        "from memory_assets.core.knowledge.memory_md import refresh_from_index\n"
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
    real_scan = memory_md._scan_candidates
    monkeypatch.setattr(memory_md, "_scan_candidates", lambda *a: scans.append(1) or real_scan(*a))
    refresh_from_index(settings, store)
    assert scans == []  # the other process's candidates, at the latest version, were used
    expected = settings.home / "expected.md"
    write_generated_zone(expected, full_scan_body(settings, DEFAULT_MAX_LINES), generator="expected")
    assert settings.memory_md_path.read_bytes() == expected.read_bytes()
    assert "bees" not in settings.memory_md_path.read_text()
    key = memory_md._candidates_key(store, read_tombstones(settings.tombstones_path).contents)
    remembered = memory_md._load_candidates(state, key)
    memory_md._KEPT.clear()
    parsed = memory_md._load_candidates(state, key)
    assert remembered is not None and parsed is not None
    assert remembered[:2] == parsed[:2] and remembered[2].equals(parsed[2])


@pytest.mark.parametrize("damage", ["empty", "partial", "garbage"])
def test_a_damaged_candidates_file_is_read_again(settings: Settings, embedder: Embedder, damage: str) -> None:
    """The candidates file is a cache written without fsync, so a crash may leave it empty or
    partial: the next refresh reads the table and writes what a full scan writes."""
    from memory_assets.core.knowledge import memory_md

    write_facts(settings, DAY, "Lives in Lisbon and works remotely", category="personal")
    write_facts(settings, DAY, "Keeps bees on the roof of the flat", hour=10)
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    Indexer(settings, store=store, embedder=embedder).sweep()
    refresh_from_index(settings, store)
    state = settings.state_dir / CANDIDATES_STATE
    good = state.read_bytes()
    state.write_bytes({"empty": b"", "partial": good[: len(good) // 2], "garbage": b"\x00\xff{"}[damage])
    settings.memory_md_path.unlink()
    memory_md._KEPT.clear()
    assert refresh_from_index(settings, store).written
    expected = settings.home / "expected.md"
    write_generated_zone(expected, full_scan_body(settings, DEFAULT_MAX_LINES), generator="expected")
    assert settings.memory_md_path.read_bytes() == expected.read_bytes()
    assert state.read_bytes() == good


def test_personal_pages_are_what_the_vault_lists_under_3_personal(settings: Settings) -> None:
    from memory_assets.core.knowledge.memory_md import personal_pages
    from memory_assets.core.knowledge.vault import list_pages

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
        personal_pages(settings)
        == expected
        == [
            "3_Personal/Deep/log.md",
            "3_Personal/Home.md",
            "3_Personal/index.md",
        ]
    )
