"""Lineage, both ways (issue 39, item 4), on real homes: turns through the write path (the rule
extractor), a dream that folds them into a page (the rule consolidator), the real model and
LanceDB. Backwards from each kind of row to the turn it was said in; forwards from log lines to
the vault lines folded from them and the turns they came from, and from a turn to its log lines."""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.capture.transcripts import read_turns
from memory_assets.core.dream.promote import PROMOTE_GENERATOR
from memory_assets.core.dream.rule_consolidator import RuleConsolidator
from memory_assets.core.dream.runner import run_dream
from memory_assets.core.durable import append_durable
from memory_assets.core.index.best_facts import CANDIDATES_STATE
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.lineage import (
    CANDIDATES_FILE,
    PERSON,
    PROMOTER,
    REFRESHER,
    BulletSource,
    Lineage,
    LineageError,
    PageLine,
    log_lines_of_turn,
    trace_id,
    trace_ids,
    trace_log_lines,
    trace_page_lines,
    trace_row,
)
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.memory_md import stamp_human_edit
from memory_assets.core.knowledge.tombstones import tombstone_line
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets.core.write_path.extraction import Turn
from memory_assets.core.write_path.memory_md_refresh import REFRESH_GENERATOR
from memory_assets.core.write_path.process import process_turn
from memory_assets.core.write_path.rule_extractor import RuleExtractor

DAY = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
LOG = "2026-11-20.md"
BERLIN = "I moved to Berlin in 2024 and I have a dog named Rex."
PEANUTS = "By the way, I am allergic to peanuts."
WEATHER = "The weather was lovely this morning, nothing else."


def say(settings: Settings, embedder: Embedder, user: str, at: datetime, chat: str) -> list[str]:
    """One turn through the write path (the rule extractor); the facts it wrote."""
    result = process_turn(
        Turn(user, "Noted.", chat_id=chat, at=at), settings, extractor=RuleExtractor(), embedder=embedder
    )
    assert result.reindex_error is None, result.reindex_error
    return [f.content for f in result.facts if f.outcome != "confirmation"]


def rows(settings: Settings, kind: str) -> list[dict[str, Any]]:
    where = f"source_type = '{kind}'"
    columns = ["id", "content", "source_type", "source_file", "chunk_index", "metadata"]
    return MemoryStore.of(settings).scan(columns, where=where).to_pylist()


def row_of(settings: Settings, kind: str, holding: str) -> dict[str, Any]:
    [row] = [r for r in rows(settings, kind) if holding in r["content"]]
    return row


def log_line_of(settings: Settings, text: str) -> int:
    [fact] = [f for f in read_daily_log(settings.archive_dir / LOG).facts if f.content == text]
    return fact.line


def turn_offsets(settings: Settings, rel: str) -> dict[str, int]:
    read = read_turns(settings.transcripts_dir / rel, cap=None)
    return {t.user: t.offset for t in read.turns}


def dreamed(settings: Settings, embedder: Embedder) -> Settings:
    """A dream over the home (every day before NOW), then the index brought in line with it."""
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0")
    result = run_dream(s, RuleConsolidator(), now=NOW)
    assert result.ok and result.folded >= 3, result
    Indexer(s, embedder=embedder).sweep()
    return s


@pytest.fixture
def home(settings: Settings, embedder: Embedder) -> Settings:
    """Three turns of 2026-11-20: two in chat-a, the second in the same minute as the first (so
    the marks alone cannot tell them apart), and one in chat-b."""
    assert say(settings, embedder, BERLIN, DAY, "chat-a") == [
        "Moved to Berlin in 2024.",
        "Has a dog named Rex.",
    ]
    assert say(settings, embedder, PEANUTS, DAY.replace(second=30), "chat-a") == ["Is allergic to peanuts."]
    assert say(settings, embedder, WEATHER, DAY.replace(hour=11), "chat-b") == []
    return settings


def test_a_log_row_names_its_line_and_the_turn_it_was_said_in(home: Settings) -> None:
    offsets = turn_offsets(home, "captured/chat-a.jsonl")
    store = MemoryStore.of(home)
    found = trace_ids(
        store,
        home,
        [
            row_of(home, "archive_log", "Rex")["id"],
            row_of(home, "archive_log", "peanuts")["id"],
            "no-such-id",
        ],
    )
    assert len(found) == 2 and "no-such-id" not in found
    rex = found[row_of(home, "archive_log", "Rex")["id"]]
    [line] = rex.log_lines
    assert (line.file, line.line, line.text) == (
        LOG,
        log_line_of(home, "Has a dog named Rex."),
        "Has a dog named Rex.",
    )
    assert (line.time, line.chat, line.fold, line.page) == ("09:00", "chat-a", "pending", None)
    [turn] = line.turns
    assert (turn.transcript, turn.offset, turn.said) == ("captured/chat-a.jsonl", offsets[BERLIN], BERLIN)
    assert turn.chat == "chat-a" and turn.at == "2026-11-20T09:00:00+00:00"
    # Same chat, same minute: the fact goes with the turn whose words it shares.
    [peanut_turn] = found[row_of(home, "archive_log", "peanuts")["id"]].log_lines[0].turns
    assert peanut_turn.offset == offsets[PEANUTS] != offsets[BERLIN]
    assert rex.notes == () and rex.bullets == () and rex.zone is None


def test_a_transcript_row_names_its_turn(home: Settings) -> None:
    row = row_of(home, "transcript", "lovely")
    lineage = trace_id(MemoryStore.of(home), home, row["id"])
    assert lineage is not None
    [turn] = lineage.turns
    assert (turn.transcript, turn.offset, turn.line) == ("captured/chat-b.jsonl", 0, 1)
    assert turn.said == WEATHER and turn.chat == "chat-b"
    assert lineage.turns_back() == [turn]


def test_a_folded_page_line_names_its_log_lines_and_their_turns(home: Settings, embedder: Embedder) -> None:
    offsets = turn_offsets(home, "captured/chat-a.jsonl")
    lines = {t: log_line_of(home, t) for t in ("Moved to Berlin in 2024.", "Has a dog named Rex.")}
    s = dreamed(home, embedder)
    assert not [r for r in rows(s, "archive_log") if "Rex" in r["content"]]  # folded: out of the index
    page_row = row_of(s, "notebook", "Rex")
    lineage = trace_id(MemoryStore.of(s), s, page_row["id"])
    assert lineage is not None and lineage.source_type == "notebook"
    [bullet] = lineage.bullets
    page_lines = (s.notebook_dir / bullet.page).read_text().splitlines()
    assert bullet.page.startswith("3_Personal/") and bullet.page == page_row["source_file"]
    assert page_lines[bullet.line - 1] == bullet.text and "Has a dog named Rex" in bullet.text
    [log_line] = bullet.log_lines
    assert (log_line.file, log_line.line, log_line.fold, log_line.page) == (
        LOG,
        lines["Has a dog named Rex."],
        "folded",
        bullet.page,
    )
    [turn] = log_line.turns
    assert (turn.transcript, turn.offset, turn.said) == ("captured/chat-a.jsonl", offsets[BERLIN], BERLIN)
    assert [t.offset for t in lineage.turns_back()] == [offsets[BERLIN]]
    json.dumps(lineage.to_dict())  # plain data all the way down

    # Forwards, for erasure: from the log lines to the page lines and the turns.
    forward = trace_log_lines(
        s, [(LOG, lines["Has a dog named Rex."]), (LOG, lines["Moved to Berlin in 2024."])]
    )
    assert [t.log_line.text for t in forward] == ["Has a dog named Rex.", "Moved to Berlin in 2024."]
    for trace in forward:
        [page_line] = trace.bullets
        text = (s.notebook_dir / page_line.page).read_text().splitlines()[page_line.line - 1]
        assert page_line.text == text and trace.log_line.text.rstrip(".") in text
        assert [(t.transcript, t.offset) for t in trace.log_line.turns] == [
            ("captured/chat-a.jsonl", offsets[BERLIN])
        ]
    assert forward[0].bullets[0] == bullet_line(bullet)
    # ... and from a turn to the log lines extracted from it.
    assert sorted(ll.line for ll in log_lines_of_turn(s, "captured/chat-a.jsonl", offsets[BERLIN])) == sorted(
        lines.values()
    )
    assert [ll.text for ll in log_lines_of_turn(s, "captured/chat-a.jsonl", offsets[PEANUTS])] == [
        "Is allergic to peanuts."
    ]
    assert log_lines_of_turn(s, "captured/chat-b.jsonl", 0) == []  # a turn no fact came from
    # ... and from page lines to the log lines folded into them.
    [back] = trace_page_lines(s, bullet.page, [bullet.line])
    assert back == bullet
    with pytest.raises(LineageError, match="no such page"):
        trace_page_lines(s, "../outside.md", [1])
    with pytest.raises(LineageError, match="no such line"):
        trace_page_lines(s, bullet.page, [len(page_lines) + 5])

    # A claim a person moved to another page since the fold: forwards finds it there.
    page = s.notebook_dir / bullet.page
    page.write_text("\n".join(line for line in page_lines if line != bullet.text) + "\n")
    moved = s.notebook_dir / "2_Wiki" / "Entities" / "Pets.md"
    moved.write_text("# Pets\n\n- Has a dog named Rex.\n")
    [trace] = trace_log_lines(s, [(LOG, lines["Has a dog named Rex."])])
    assert trace.bullets == (PageLine("2_Wiki/Entities/Pets.md", 3, "- Has a dog named Rex."),)


def bullet_line(bullet: BulletSource) -> PageLine:
    return PageLine(bullet.page, bullet.line, bullet.text)


def test_memory_md_zones_say_who_wrote_them_and_from_what(home: Settings, embedder: Embedder) -> None:
    offsets = turn_offsets(home, "captured/chat-a.jsonl")
    store = MemoryStore.of(home)
    # Before any page: the per-turn writer listed the index's facts (the sensor indexes the file).
    Indexer(home, embedder=embedder).sweep()
    generated = [r for r in rows(home, "core_file") if '"zone": "generated"' in r["metadata"]]
    peanuts = [r for r in generated if "peanuts" in r["content"]]
    assert peanuts, generated
    before = trace_id(store, home, peanuts[0]["id"])
    assert before is not None and before.zone is not None
    assert before.zone.zone == "generated" and before.zone.written_by == REFRESHER
    [line] = [z for z in before.zone.lines if "peanuts" in z.text]
    assert line.rows and [f.text for f in line.facts] == ["Is allergic to peanuts."]
    assert [t.offset for t in line.facts[0].turns] == [offsets[PEANUTS]]

    # After a dream: the promoter wrote it from the pages' claims.
    s = dreamed(home, embedder)
    store = MemoryStore.of(s)
    [row] = [r for r in rows(s, "core_file") if "Rex" in r["content"] and '"generated"' in r["metadata"]]
    after = trace_id(store, s, row["id"])
    assert after is not None and after.zone is not None and after.zone.written_by == PROMOTER
    md = s.memory_md_path.read_text().splitlines()
    [rex] = [z for z in after.zone.lines if "Rex" in z.text]
    assert md[rex.line - 1] == rex.text == "- Has a dog named Rex."
    [claim] = rex.claims
    assert claim.page.startswith("3_Personal/") and "Has a dog named Rex" in claim.text
    assert [t.offset for ll in claim.log_lines for t in ll.turns] == [offsets[BERLIN]]
    assert offsets[BERLIN] in [t.offset for t in after.turns_back()]

    # The manual zone is a person's own.
    stamp_human_edit(s.memory_md_path, "Call me Sam.\n", "alice")
    Indexer(s, embedder=embedder).sweep()
    [manual] = [r for r in rows(s, "core_file") if "Call me Sam" in r["content"]]
    mine = trace_id(MemoryStore.of(s), s, manual["id"])
    assert mine is not None and mine.zone is not None
    assert (mine.zone.zone, mine.zone.written_by) == ("manual", PERSON)
    assert mine.zone.verified_by[0].startswith("human:alice at ")
    [own] = mine.zone.lines
    assert own.text == "Call me Sam." and s.memory_md_path.read_text().splitlines()[own.line - 1] == own.text


def test_what_a_person_forgot_is_left_out_and_counted(home: Settings) -> None:
    append_durable(home.tombstones_path, tombstone_line(BERLIN, turn=True, with_="chat chat-a"))
    lineage = trace_id(MemoryStore.of(home), home, row_of(home, "archive_log", "Rex")["id"])
    assert lineage is not None
    [line] = lineage.log_lines
    assert line.turns == ()  # the turn is forgotten: not served, not even as a source
    assert lineage.notes == ("1 source(s) a person forgot are left out",)
    assert BERLIN not in json.dumps(lineage.to_dict())
    # Forwards hides nothing: an erase reaches a forgotten turn too.
    [trace] = trace_log_lines(home, [(LOG, line.line)])
    assert [t.said for t in trace.log_line.turns] == [BERLIN]


def test_a_line_forgotten_since_the_row_was_read_is_not_named(home: Settings, embedder: Embedder) -> None:
    s = dreamed(home, embedder)
    [zone] = [r for r in rows(s, "core_file") if "Rex" in r["content"] and '"generated"' in r["metadata"]]
    assert "peanuts" in zone["content"]
    append_durable(s.tombstones_path, tombstone_line("dog named Rex"))  # a person's forgetting
    lineage = trace_row(s, zone)  # the row as it was read before the forget
    shown = json.dumps(lineage.to_dict())
    assert "Rex" not in shown and BERLIN not in shown and "peanuts" in shown
    assert lineage.notes[-1].endswith("source(s) a person forgot are left out")


def test_a_fact_given_directly_has_no_turn(settings: Settings, embedder: Embedder) -> None:
    from memory_assets.core.write_path.extraction import ExtractedFact, GivenFacts

    process_turn(
        Turn("Speaks Portuguese at home", "", chat_id="default", at=DAY, keep=False),
        settings,
        extractor=GivenFacts([ExtractedFact("Speaks Portuguese at home", "personal")]),
        embedder=embedder,
    )
    lineage = trace_id(
        MemoryStore.of(settings), settings, row_of(settings, "archive_log", "Portuguese")["id"]
    )
    assert lineage is not None and lineage.log_lines[0].turns == ()
    assert "no kept turn" in lineage.notes[0]


def test_forward_questions_about_lines_that_are_not_there_are_refused(home: Settings) -> None:
    with pytest.raises(LineageError, match="not a daily log's name"):
        trace_log_lines(home, [("../secrets.md", 1)])
    with pytest.raises(LineageError, match="no such log"):
        trace_log_lines(home, [("2020-01-01.md", 1)])
    with pytest.raises(LineageError, match="line 1: not a fact line"):
        trace_log_lines(home, [(LOG, 1)])
    with pytest.raises(LineageError, match="no such transcript"):
        log_lines_of_turn(home, "../../etc/passwd", 0)
    with pytest.raises(LineageError, match="no turn starts at byte 3"):
        log_lines_of_turn(home, "captured/chat-a.jsonl", 3)


def test_a_row_is_read_by_its_id_never_by_a_scan(home: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    wheres: list[str | None] = []
    real = MemoryStore.scan

    def scan(self: MemoryStore, columns: Any, where: str | None = None) -> Any:
        wheres.append(where)
        return real(self, columns, where=where)

    row_id = row_of(home, "archive_log", "Rex")["id"]
    monkeypatch.setattr(MemoryStore, "scan", scan)
    assert isinstance(trace_id(MemoryStore.of(home), home, row_id), Lineage)
    assert wheres and all(w is not None and row_id in w for w in wheres)


def test_core_files_and_legacy_rows_say_why_the_chain_stops(home: Settings) -> None:
    persona = trace_row(
        home, {"id": "x", "content": "Helpful.", "source_type": "core_file", "source_file": "persona.md"}
    )
    assert persona.notes == ("memory/persona.md is a core file a person (or the assistant) writes",)
    legacy = trace_row(home, {"id": "y", "content": "Old fact", "source_type": None})
    assert legacy.source_type == "legacy_direct" and "assistant-era" in legacy.notes[0]


def test_the_generators_are_named_as_their_writers_name_themselves() -> None:
    assert (PROMOTER, REFRESHER, CANDIDATES_FILE) == (PROMOTE_GENERATOR, REFRESH_GENERATOR, CANDIDATES_STATE)
    assert Path(CANDIDATES_FILE).suffix == ".json"
