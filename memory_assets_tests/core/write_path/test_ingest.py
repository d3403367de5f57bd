"""Transcript ingestion: oldest turn first, each turn's day, bad lines reported, and exactly once
across a SIGKILL at any step (a crashed-and-resumed run writes what an uninterrupted one writes)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_assets.core.capture.daily_log import list_logs, read_daily_log
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.status import init_home
from memory_assets.core.settings import Settings
from memory_assets.core.write_path.ingest import ingest_transcripts
from memory_assets.core.write_path.rule_extractor import RuleExtractor

REPO = Path(__file__).resolve().parents[3]

SESSION_A = [
    ("2026-10-01T09:00:00Z", "user", "I live in Lisbon and I work as a data engineer."),
    ("2026-10-01T09:00:05Z", "assistant", "Nice! I'll remember that you live in Paris."),  # never a source
    ("2026-10-02T18:30:00Z", "user", "My sister Ana is a nurse in Porto."),
    ("2026-10-02T18:30:04Z", "assistant", "Noted."),
    ("2026-10-05T08:10:00Z", "user", "I live in Lisbon and I work as a data engineer."),
    ("2026-10-06T08:10:00Z", "user", "I moved to Berlin in 2024."),
]
SESSION_B = [
    ("2026-10-01T12:00:00Z", "user", "I'm allergic to peanuts."),
    ("2026-10-03T12:00:00Z", "user", "What's the weather like?"),
    ("2026-10-04T12:00:00Z", "user", "I prefer metric units."),
]


def write_transcripts(settings: Settings) -> None:
    settings.transcripts_dir.mkdir(parents=True, exist_ok=True)
    for name, rows in (("sessA", SESSION_A), ("sessB", SESSION_B)):
        lines = [json.dumps({"ts": ts, "role": role, "content": text}) for ts, role, text in rows]
        (settings.transcripts_dir / f"{name}.jsonl").write_text("\n".join(lines) + "\n")


def snapshot(settings: Settings) -> dict[str, str]:
    files = {p.name: p.read_text() for _, p in list_logs(settings.archive_dir)}
    if settings.confirmations_path.exists():
        files["confirmations.jsonl"] = settings.confirmations_path.read_text()
    return files


def test_turns_are_ingested_oldest_first_into_their_days_once(settings: Settings, embedder: Embedder) -> None:
    write_transcripts(settings)
    result = ingest_transcripts(settings, RuleExtractor(), embedder=embedder)
    assert result.turns == 7 and result.skipped_lines == 0
    assert result.days == ["2026-10-01", "2026-10-02", "2026-10-04", "2026-10-06"]
    assert result.counts["confirmation"] >= 1  # the restatement of 1 October
    oct1 = [f.content for f in read_daily_log(settings.archive_dir / "2026-10-01.md").facts]
    assert any("Lisbon" in c for c in oct1) and any("peanut" in c for c in oct1)
    assert not any("Paris" in f for f in snapshot(settings).values())  # the assistant's words
    before = snapshot(settings)
    again = ingest_transcripts(settings, RuleExtractor(), embedder=embedder)
    assert again.turns == 0 and snapshot(settings) == before


def test_bad_transcript_lines_are_skipped_and_reported_once(settings: Settings, embedder: Embedder) -> None:
    settings.transcripts_dir.mkdir(parents=True, exist_ok=True)
    path = settings.transcripts_dir / "bad.jsonl"
    path.write_bytes(
        b'{"ts": "2026-10-01T09:00:00Z", "role": "user", "content": "I live in Lisbon."}\n'
        b"this is not json\n"
        b'{"ts": "2026-10-01T09:01:00Z", "content": "no role here"}\n'
        b'["an", "array"]\n'
        b'{"ts": "2026-10-01T09:02:00Z", "role": "user", "content": "I have a dog called \\u0000Rex\\ud800."}\n'
        b'{"ts": "2026-10-01T09:03:00Z", "role": "user", "content": "I prefer tea'  # still being written
    )
    result = ingest_transcripts(settings, RuleExtractor(), embedder=embedder)
    assert result.turns == 2 and result.skipped_lines == 3
    assert [w.split(": ")[0] for w in result.warnings] == [f"{path} line {n}" for n in (2, 3, 4)]
    facts = [f.content for f in read_daily_log(settings.archive_dir / "2026-10-01.md").facts]
    assert any("Lisbon" in f for f in facts) and all("\x00" not in f for f in facts)
    with open(path, "ab") as fh:
        fh.write(b' with milk."}\n')  # the last line completes
    later = ingest_transcripts(settings, RuleExtractor(), embedder=embedder)
    assert later.turns == 1 and later.skipped_lines == 0  # the bad lines are reported once, not again


@pytest.mark.parametrize("ts", ["9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+05:00"])
def test_an_out_of_range_timestamp_blocks_no_session(settings: Settings, embedder: Embedder, ts: str) -> None:
    """One line whose ts leaves the years 1-9999 in UTC is reported, its turn is ingested (dated
    when ingested), and every other session goes through."""
    settings.transcripts_dir.mkdir(parents=True, exist_ok=True)
    (settings.transcripts_dir / "good.jsonl").write_text(
        json.dumps({"ts": "2026-11-30T10:00:00Z", "role": "user", "content": "I own a kayak called Pellam."})
        + "\n"
    )
    poison = settings.transcripts_dir / "poison.jsonl"
    poison.write_text(json.dumps({"ts": ts, "role": "user", "content": "I own a raft called Skerry."}) + "\n")
    result = ingest_transcripts(settings, RuleExtractor(), embedder=embedder)
    assert result.turns == 2 and result.skipped_lines == 0
    (warning,) = result.warnings
    assert warning.startswith(f"{poison} line 1: ts {ts!r} is outside the years 1-9999 in UTC")
    facts = {
        path.name: [f.content for f in read_daily_log(path).facts]
        for _, path in list_logs(settings.archive_dir)
    }
    assert any("Pellam" in f for f in facts.pop("2026-11-30.md"))
    (today,) = facts.values()  # the poisoned turn: dated when it was ingested, not lost
    assert any("Skerry" in f for f in today)
    again = ingest_transcripts(settings, RuleExtractor(), embedder=embedder)
    assert again.turns == 0 and again.warnings == []  # reported once


def ingest_process(home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_assets.cli", "--home", str(home), "--json", "ingest-transcripts"],
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("point", ["write_path.intent@2", "write_path.appended@2", "write_path.appended@5"])
def test_a_sigkill_at_any_step_neither_loses_nor_repeats_a_turn(tmp_path: Path, point: str) -> None:
    """A real process killed at a step boundary, then run again, leaves exactly the logs and the
    confirmations an uninterrupted run leaves."""
    clean, crashed = (Settings.load(tmp_path / name, env={}) for name in ("clean", "crashed"))
    for home in (clean, crashed):
        init_home(home)
        write_transcripts(home)
    assert ingest_process(clean.home).returncode == 0
    name, nth = point.split("@")
    killed = ingest_process(crashed.home, MEMORY_FAILPOINTS=f"{name}=kill@{nth}")
    assert killed.returncode == -9, killed.stderr[-2000:]
    state = json.loads(crashed.write_path_state_path.read_text())
    assert state["pending"] is not None  # the kill left a turn in flight
    resumed = ingest_process(crashed.home)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads(resumed.stdout)
    assert summary["recovered"] and f"turn {state['pending']['turn']}" in summary["recovered"]
    assert snapshot(crashed) == snapshot(clean)
    assert (
        json.loads(crashed.write_path_state_path.read_text())["sessions"]
        == json.loads(clean.write_path_state_path.read_text())["sessions"]
    )


def pending_state(log: object, **changes: object) -> dict:
    """A write_path.json whose pending turn a crashed run left, appending ``PAYLOAD`` to ``log``."""
    pending = {
        "turn": "s:0",
        "session": "s",
        "end": 0,
        "next_line": 1,
        "log": log,
        "log_size": 0,
        "header": "# hdr\n",
        "block": "PAYLOAD appended by recovery\n",
        "confirmations_size": 0,
        "confirmations": "",
    }
    return {"version": 1, "sessions": {}, "pending": {**pending, **changes}}


def home_files(settings: Settings) -> dict[str, bytes]:
    return {
        str(p.relative_to(settings.home)): p.read_bytes()
        for p in sorted(settings.home.rglob("*"))
        if p.is_file() and "index" not in p.relative_to(settings.home).parts
    }


@pytest.mark.parametrize(
    "where", ["absolute", "../../../escape.md", "../escape.md", "sub/2026-07-01.md", "x.md"]
)
def test_a_pending_log_outside_the_archive_is_refused_and_nothing_appended(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    from memory_assets.cli import main

    outside = tmp_path / "outside.md"
    outside.write_text("# a file that is not the home's\n")
    log = str(outside) if where == "absolute" else where
    settings.write_path_state_path.write_text(json.dumps(pending_state(log)))
    before = home_files(settings)
    code = main(["--home", str(settings.home), "--json", "ingest-transcripts"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"{settings.write_path_state_path}: pending.log is {json.dumps(log)}" in err
    assert "a daily log's file name (YYYY-MM-DD.md" in err and "set pending to null" in err
    assert "Nothing was written" in err
    assert outside.read_text() == "# a file that is not the home's\n"
    assert not any(p.name == "escape.md" for p in tmp_path.rglob("escape.md"))
    assert home_files(settings) == before


def test_a_pending_log_in_the_archive_is_recovered(settings: Settings, embedder: Embedder) -> None:
    settings.write_path_state_path.write_text(
        json.dumps(pending_state("2026-07-01.md", header="# Daily Log - 2026-07-01\n"))
    )
    result = ingest_transcripts(settings, RuleExtractor(), embedder=embedder)
    assert result.recovered == "turn s:0 was interrupted: its log block was appended now"
    assert (settings.archive_dir / "2026-07-01.md").read_text() == (
        "# Daily Log - 2026-07-01\nPAYLOAD appended by recovery\n"
    )


@pytest.mark.parametrize(
    ("state", "field"),
    [
        ({"version": 1, "sessions": "x"}, 'sessions is "x", expected an object'),
        ({"version": 1, "sessions": {"chat": 3}}, 'sessions["chat"] is 3, expected an object'),
        ({"version": 1, "sessions": {"chat": {"offset": "abc"}}}, 'sessions["chat"].offset is "abc"'),
        ({"version": 1, "sessions": {"chat": {"offset": -50}}}, 'sessions["chat"].offset is -50'),
        ({"version": 1, "sessions": {"chat": {"offset": 5, "line": 0}}}, 'sessions["chat"].line is 0'),
        ({"version": 1, "sessions": {}, "pending": {}}, "pending has no 'turn'"),
        ({"version": 1, "sessions": {}, "pending": []}, "pending is [], expected null or an object"),
        (pending_state("2026-07-01.md", end="5"), 'pending.end is "5", expected an integer >= 0'),
        (pending_state("2026-07-01.md", block=None), "pending.block is null, expected a string"),
        (pending_state("2026-07-01.md", header="# hdr\n"), "pending.header is"),
        (pending_state(7), "pending.log is 7, expected a daily log's file name"),
    ],
)
def test_a_state_file_with_wrong_types_names_the_file_and_the_field(
    settings: Settings, capsys: pytest.CaptureFixture[str], state: dict, field: str
) -> None:
    from memory_assets.cli import main

    settings.transcripts_dir.mkdir(parents=True, exist_ok=True)
    (settings.transcripts_dir / "chat.jsonl").write_text(
        json.dumps({"ts": "2026-10-01T09:00:00Z", "role": "user", "content": "I live in Lisbon."}) + "\n"
    )
    settings.write_path_state_path.write_text(json.dumps(state))
    before = home_files(settings)
    code = main(["--home", str(settings.home), "--json", "ingest-transcripts"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert f"memory-assets: error: {settings.write_path_state_path}: {field}" in err
    assert "correct the field" in err and "Nothing was written" in err
    assert home_files(settings) == before
