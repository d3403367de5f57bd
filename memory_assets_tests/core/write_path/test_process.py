"""process_turn with the real model, a real LanceDB and real files: it never loses an update, and a
search outage never blocks it."""

import json
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.confirmations import read_confirmations
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets.core.write_path.extraction import ExtractedFact, GivenFacts, Turn
from memory_assets.core.write_path.process import process_turn
from memory_assets_tests.conftest import DAY

AT = datetime(DAY.year, DAY.month, DAY.day, 10, 0, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[3]


def say(
    settings: Settings, embedder: Embedder | None, text: str, *, at: datetime = AT, importance: float = 0.5
):  # type: ignore[no-untyped-def]
    """One turn whose extraction is exactly ``text`` (the classifier and writes are what is tested)."""
    fact = ExtractedFact(text, "personal", ("test",), importance)
    return process_turn(
        Turn(f"I said: {text}", chat_id="tester00", at=at),
        settings,
        extractor=GivenFacts([fact]),
        embedder=embedder,
    )


def log_lines(settings: Settings) -> list[str]:
    path = settings.archive_dir / f"{DAY.isoformat()}.md"
    return [f.content for f in read_daily_log(path).facts] if path.exists() else []


def test_a_word_for_word_restatement_becomes_a_confirmation_and_adds_nothing_to_the_log(
    settings: Settings, embedder: Embedder
) -> None:
    first = say(settings, embedder, "Moved to Berlin with the whole family")
    assert [f.outcome for f in first.facts] == ["new"] and first.rows_embedded == 1
    again = say(settings, embedder, "Moved to Berlin with the whole family", at=AT.replace(hour=11))
    assert [(f.outcome, f.similarity, f.matched_source) for f in again.facts] == [
        ("confirmation", 1.0, "archive_log")
    ]
    assert again.lines_written == [] and again.rows_embedded == 0
    assert log_lines(settings) == ["Moved to Berlin with the whole family"]
    [confirmation], _ = read_confirmations(settings.confirmations_path)
    assert (confirmation.matched, confirmation.source_file, confirmation.chat_id) == (
        "Moved to Berlin with the whole family",
        f"{DAY.isoformat()}.md",
        "tester00",
    )


def test_an_update_is_written_and_tagged_revision(settings: Settings, embedder: Embedder) -> None:
    say(settings, embedder, "Moved to Berlin")
    revised = say(settings, embedder, "Moved to Berlin in 2024", at=AT.replace(hour=11))
    assert [f.outcome for f in revised.facts] == ["revision"]
    assert revised.lines_written == ["- [personal] Moved to Berlin in 2024 `test revision`"]
    superset = say(settings, embedder, "Moved to Berlin in 2024 at 9:30", at=AT.replace(hour=12))
    assert [f.outcome for f in superset.facts] == ["revision"]
    contradiction = say(settings, embedder, "Moved to Madrid", at=AT.replace(hour=13))
    assert [f.outcome for f in contradiction.facts] == ["new"]
    assert log_lines(settings) == [
        "Moved to Berlin",
        "Moved to Berlin in 2024",
        "Moved to Berlin in 2024 at 9:30",
        "Moved to Madrid",
    ]


def test_a_match_only_in_memory_md_is_written(settings: Settings, embedder: Embedder) -> None:
    settings.memory_md_path.write_text(
        "<!-- memory:generated -->\n- Works as a nurse at the city hospital\n<!-- /memory:generated -->\n"
    )
    Indexer(settings, embedder=embedder).sweep()
    result = say(settings, embedder, "Works as a nurse at the city hospital")
    [fact] = result.facts
    assert fact.matched_source == "core_file" and fact.outcome == "revision"  # similar, so tagged; written
    assert log_lines(settings) == ["Works as a nurse at the city hospital"]


def test_a_fact_in_both_memory_md_and_a_log_is_confirmed_against_the_log(
    settings: Settings, embedder: Embedder
) -> None:
    """MEMORY.md often repeats a logged fact word for word, and a person's verified line there
    outranks the log's copy. Recall keeps the copies apart (no collapse), so the restatement
    defers to the log's copy and is not written again."""
    fact = "Works as a nurse at the city hospital"
    settings.memory_md_path.write_text(
        "<!-- memory:generated -->\n<!-- /memory:generated -->\n"
        f"{fact}\n<!-- verified: human:alice at 2026-08-01T00:00:00Z -->\n"
    )
    say(settings, embedder, fact)
    Indexer(settings, embedder=embedder).sweep()  # MEMORY.md's rows join the log's
    again = say(settings, embedder, fact, at=AT.replace(hour=11))
    assert [(f.outcome, f.matched_source) for f in again.facts] == [("confirmation", "archive_log")]
    assert log_lines(settings) == [fact]


def test_with_the_index_missing_locked_or_broken_the_fact_is_still_written(
    settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    missing = say(settings, embedder, "Keeps bees on the roof of the flat")  # no table yet
    assert not missing.recall.ok and "never been built" in (missing.recall.error or "")
    assert log_lines(settings) == ["Keeps bees on the roof of the flat"] and missing.rows_embedded == 1

    # Locked: another process holds the index table exclusively (an optimize, say) for 15 s.
    indexer = Indexer(settings)
    name = f"index-table:{indexer._lock_base()}"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import time; from memory_assets.core.durable import named_lock\nwith named_lock({name!r}):\n print('held', flush=True); time.sleep(15)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )
    assert holder.stdout.readline().strip() == "held"
    start = time.perf_counter()
    locked = say(settings, embedder, "Grows tomatoes on the balcony", at=AT.replace(hour=11))
    assert time.perf_counter() - start < 12  # the turn did not wait for the lock's holder
    assert locked.reindex_error and "still held" in locked.reindex_error
    holder.kill()
    holder.wait()
    assert log_lines(settings)[-1] == "Grows tomatoes on the balcony"

    # Broken: the table's files are gone from under it.
    shutil.rmtree(Path(settings.index_uri) / "archival_memories.lance" / "_versions")
    broken = say(settings, embedder, "Plays the cello in an orchestra", at=AT.replace(hour=12))
    assert not broken.recall.ok and broken.reindex_error
    assert log_lines(settings)[-1] == "Plays the cello in an orchestra"


def test_two_processes_appending_500_turns_each_lose_no_line(settings: Settings) -> None:
    code = (
        "import sys\nfrom datetime import datetime, UTC\n"
        "from memory_assets.core.settings import Settings\n"
        "from memory_assets.core.write_path.extraction import ExtractedFact, GivenFacts, Turn\n"
        "from memory_assets.core.write_path.process import process_turn\n"
        "s = Settings.load(sys.argv[1], env={})\nwho = sys.argv[2]\n"
        "at = datetime(2026, 11, 20, 10, tzinfo=UTC)\n"
        "for n in range(500):\n"
        "    fact = ExtractedFact(f'Process {who} turn {n} fact ' + 'x' * (n % 200), 'context')\n"
        "    process_turn(Turn('t', chat_id=who, at=at), s, extractor=GivenFacts([fact]), reindex=False)\n"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO), "MEMORY_RECALL_TIMEOUT_S": "0.5"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(settings.home), who], env=env, stderr=subprocess.PIPE, text=True
        )
        for who in ("alpha000", "beta0000")
    ]
    for proc in procs:
        assert proc.wait(timeout=300) == 0, proc.stderr.read()
    text = (settings.archive_dir / "2026-11-20.md").read_text()
    parsed = read_daily_log(settings.archive_dir / "2026-11-20.md")
    assert parsed.skipped_lines == 0  # no partial or interleaved line
    expected = {
        (f"Process {w} turn {n} fact " + "x" * (n % 200)).strip()
        for w in ("alpha000", "beta0000")
        for n in range(500)
    }
    assert {f.content for f in parsed.facts} == expected and len(parsed.facts) == 1000
    assert text.count("# Daily Log") == 1


def test_an_important_fact_refreshes_memory_md_and_its_manual_zone_survives(
    settings: Settings, embedder: Embedder
) -> None:
    manual = b"\n## My notes\n- Call mum on Sundays.  \r\n"
    settings.memory_md_path.write_bytes(
        b"<!-- memory:generated -->\nold\n<!-- /memory:generated -->" + manual
    )
    result = say(settings, embedder, "Is allergic to peanuts", importance=0.9)
    assert result.memory_md and "not refreshed" not in result.memory_md
    data = settings.memory_md_path.read_bytes()
    assert data.endswith(b"<!-- /memory:generated -->" + manual) and b"Is allergic to peanuts" in data
    hand_written = "# My memory\n- Written by me, no markers.\n"
    settings.memory_md_path.write_text(hand_written)
    say(settings, embedder, "Is allergic to shellfish", importance=0.9, at=AT.replace(hour=11))
    assert settings.memory_md_path.read_text() == hand_written  # never overwritten


def test_bad_turns_never_crash_and_lose_nothing(settings: Settings, embedder: Embedder) -> None:
    from memory_assets.core.write_path.rule_extractor import RuleExtractor

    rules = RuleExtractor()
    for text in (
        "",
        "   ",
        "I live in Lisbon. " + "x" * 1_000_000,
        "I live in Lis\x00bon\x07 and \ud800 like tea",
    ):
        result = process_turn(Turn(text, at=AT), settings, extractor=rules, embedder=embedder)
        assert result.extractor == "rules"
    odd = ExtractedFact("Has a cat called Mi\x00lo\ud800 who is\nthree", "personal")
    result = process_turn(Turn("x", at=AT), settings, extractor=GivenFacts([odd]), embedder=embedder)
    assert [f.outcome for f in result.facts] == ["new"]
    lines = log_lines(settings)
    assert lines[-1] == "Has a cat called Mi lo? who is three"  # one clean line; nothing dropped
    assert all("\x00" not in line and "\ud800" not in line for line in lines)
    json.dumps(lines)
    store = MemoryStore(settings.index_uri)
    assert store.count("source_type = 'archive_log'") == len(lines)
    # Every turn with words is kept and indexed whole (the huge one in pieces); the blank ones are not.
    turns = store.scan(["metadata"], where="source_type = 'transcript'").column("metadata").to_pylist()
    assert len({json.loads(m)["line"] for m in turns}) == 3


class Exploding:
    name = "exploding"

    def extract(self, turn: Turn, known: object = ()) -> object:
        raise RuntimeError("the extractor broke")


def test_process_turns_writes_every_turn_in_order_and_reindexes_each_day_once(
    settings: Settings, embedder: Embedder
) -> None:
    from memory_assets.core.write_path.process import process_turns

    say(settings, embedder, "Keeps a sourdough starter named Clint")
    other_day = AT.replace(day=AT.day + 1)

    def turn(text: str, at: datetime = AT, importance: float = 0.5) -> tuple[Turn, GivenFacts]:
        return Turn(text, chat_id="batch000", at=at), GivenFacts([ExtractedFact(text, importance=importance)])

    turns = [
        turn("Plays the cello on Sundays"),
        (Turn("b", chat_id="batch000", at=AT), Exploding()),
        turn("Owns a red canoe", at=other_day, importance=0.9),
        turn("Keeps a sourdough starter named Clint", importance=0.9),
        turn("Plays the cello on Sundays"),
    ]
    results = process_turns(turns, settings, embedder=embedder)
    assert len(results) == 5
    first, failed, canoe, repeat, cello_again = results
    assert isinstance(failed, RuntimeError) and "extractor broke" in str(failed)
    assert not isinstance(first, Exception) and not isinstance(canoe, Exception)
    assert not isinstance(repeat, Exception) and not isinstance(cello_again, Exception)
    # The turns wrote in order; each day was reindexed once, its figures shared by its turns.
    assert log_lines(settings) == [
        "Keeps a sourdough starter named Clint",
        "Plays the cello on Sundays",
        "Plays the cello on Sundays",  # classified against the index before the group: written again
    ]
    assert [f.outcome for f in repeat.facts] == ["confirmation"] and repeat.lines_written == []
    assert first.rows_embedded == cello_again.rows_embedded == 2 and canoe.rows_embedded == 1
    assert first.reindex_error is None and canoe.log and canoe.log.endswith(f"{other_day.date()}.md")
    store = MemoryStore.of(settings)
    assert store.count("source_type = 'archive_log'") == 4  # the first turn's row, two cello rows, the canoe
    # Every turn written is kept as said; the one whose extractor broke is not: its line was taken
    # back when it failed (it was kept before its plan), so a caller retrying it keeps it once.
    assert store.count("source_type = 'transcript'") == 5
    kept = (settings.transcripts_dir / "captured" / "batch000.jsonl").read_text()
    assert '"content": "b"' not in kept and kept.count('"role": "user"') == 4
    assert first.transcript == "captured/batch000.jsonl" and first.turn_rows_embedded == 4
    # Only the turn with an important new fact reports the (single) MEMORY.md refresh.
    assert canoe.memory_md is not None and "memory_md" in canoe.timings
    assert repeat.memory_md is None and first.memory_md is None
    assert "total" in first.timings and "reindex" in first.timings


# A child writing one turn through process_turns with its files limited to LIMIT bytes (a real
# EFBIG from the kernel, as a full disk fails an append): the transcript fits, the day's log
# (already past the limit) does not.
_LIMITED_TURN = """
import json, resource, signal, sys
from datetime import datetime
from memory_assets.core.settings import Settings
from memory_assets.core.write_path.extraction import ExtractedFact, GivenFacts, Turn
from memory_assets.core.write_path.process import process_turns
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
settings = Settings.load(sys.argv[1], env={})
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
turn = Turn("I keep two goats called Ada and Bo.", chat_id="goats000", at=datetime.fromisoformat(sys.argv[3]))
[result] = process_turns([(turn, GivenFacts([ExtractedFact("Keeps two goats called Ada and Bo")]))], settings)
print(json.dumps({"error": type(result).__name__, "errno": getattr(result, "errno", None)}))
"""


def test_a_turn_that_fails_part_way_keeps_nothing(settings: Settings, embedder: Embedder) -> None:
    """A turn whose log append fails after its transcript was kept leaves neither (the transcript
    line taken back); a turn whose caller's record fails (``on_written``) leaves nothing either,
    and the turns beside it are written as ever."""
    from memory_assets.core.write_path.process import process_turns

    say(settings, embedder, "Keeps a sourdough starter named Clint")
    log = settings.archive_dir / f"{DAY.isoformat()}.md"
    captured = settings.transcripts_dir / "captured"
    files_before = {
        p: p.read_bytes() for p in sorted(settings.home.rglob("*")) if p.is_file() and "index" not in p.parts
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _LIMITED_TURN,
            str(settings.home),
            str(log.stat().st_size - 1),
            AT.isoformat(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"error": "OSError", "errno": 27}  # EFBIG
    assert not (captured / "goats000.jsonl").exists()  # the transcript it created is gone again
    files_after = {
        p: p.read_bytes() for p in sorted(settings.home.rglob("*")) if p.is_file() and "index" not in p.parts
    }
    assert files_after == files_before

    def refused(result: object) -> None:
        raise OSError(28, "No space left on device")  # the caller's record could not be written

    recorded: list[object] = []
    turns = [
        (Turn("I play the oboe.", chat_id="batch000", at=AT), GivenFacts([ExtractedFact("Plays the oboe")])),
        (Turn("I own a kayak.", chat_id="batch000", at=AT), GivenFacts([ExtractedFact("Owns a kayak")])),
    ]
    first, second = process_turns(turns, settings, embedder=embedder, on_written=[refused, recorded.append])
    assert isinstance(first, OSError) and not isinstance(second, Exception)
    assert log_lines(settings) == ["Keeps a sourdough starter named Clint", "Owns a kayak"]
    kept = (captured / "batch000.jsonl").read_text()
    assert "oboe" not in kept and "kayak" in kept
    # The record was made with the turn as written, before its reindex.
    [written] = recorded
    assert [f.content for f in written.facts] == ["Owns a kayak"] and written.rows_embedded == 0  # type: ignore[attr-defined]
    assert second.rows_embedded == 1


def test_a_match_found_only_in_a_transcript_never_turns_a_write_into_a_confirmation(
    settings: Settings, embedder: Embedder
) -> None:
    """The seeds' guard: what was said is no claim. A turn whose words are exactly a later fact's
    (kept as a transcript row, no fact extracted from it) must not make that fact a confirmation."""
    from memory_assets.core.search.retrieval import keyword_search

    first = process_turn(
        Turn("Loves Thai green curry with extra basil", chat_id="curry000", at=AT),
        settings,
        extractor=GivenFacts([]),
        embedder=embedder,
    )
    assert first.facts == [] and first.turn_rows_embedded == 1
    store = MemoryStore.of(settings)
    assert store.count("source_type = 'transcript'") == 1
    assert keyword_search(store, "Loves Thai green curry with extra basil", settings=settings) == []
    second = say(settings, embedder, "Loves Thai green curry with extra basil", at=AT.replace(hour=11))
    assert [f.outcome for f in second.facts] == ["new"] and second.lines_written
    # ... and once the fact is a claim, restating it is a confirmation, as ever.
    third = say(settings, embedder, "Loves Thai green curry with extra basil", at=AT.replace(hour=12))
    assert [f.outcome for f in third.facts] == ["confirmation"]
