"""Reading ``transcripts/*.jsonl``: every bad line is reported with its file and line, and what
can be read of it is kept; real files in a temp dir."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_assets.core.capture.transcripts import read_turns

GOOD_TS = "2026-10-01T09:00:00Z"


def transcript(tmp_path: Path, *lines: bytes | dict) -> Path:
    path = tmp_path / "chat.jsonl"
    path.write_bytes(b"".join((json.dumps(x).encode() if isinstance(x, dict) else x) + b"\n" for x in lines))
    return path


def test_good_lines_give_turns_and_no_warning(tmp_path: Path) -> None:
    path = transcript(
        tmp_path,
        {"ts": GOOD_TS, "role": "user", "content": "I live in Lisbon."},
        {"ts": GOOD_TS, "role": "assistant", "content": "Noted."},
    )
    read = read_turns(path)
    assert read.warnings == [] and read.skipped == 0
    assert [(t.user, t.assistant, t.at) for t in read.turns] == [
        ("I live in Lisbon.", "Noted.", datetime(2026, 10, 1, 9, tzinfo=UTC))
    ]


@pytest.mark.parametrize("ts", ["9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+05:00"])
def test_an_out_of_range_ts_is_reported_and_its_turn_kept(tmp_path: Path, ts: str) -> None:
    path = transcript(
        tmp_path,
        {"ts": GOOD_TS, "role": "user", "content": "I own a kayak called Pellam."},
        {"ts": ts, "role": "user", "content": "I own a raft."},
        {"ts": GOOD_TS, "role": "user", "content": "I prefer tea."},
    )
    read = read_turns(path)
    assert [t.user for t in read.turns] == ["I own a kayak called Pellam.", "I own a raft.", "I prefer tea."]
    assert read.turns[1].at is None  # dated when ingested, like any unreadable ts
    assert read.skipped == 0
    (warning,) = read.warnings
    assert warning.startswith(f"{path} line 2: ts {ts!r} is outside the years 1-9999 in UTC")
    assert "ISO 8601" in warning and "2026-07-01T09:12:00Z" in warning


@pytest.mark.parametrize(
    ("ts", "problem"),
    [
        (12345, "ts 12345 is a number, not a string"),
        (True, "ts true is a bool, not a string"),
        ("yesterday", "ts 'yesterday' is not an ISO date-time"),
        ("2026-02-30", "ts '2026-02-30' is not an ISO date-time"),
        ("2026-10-01T25:00:00Z", "ts '2026-10-01T25:00:00Z' is not an ISO date-time"),
        ("2099-01-01T10:00:00Z", "ts '2099-01-01T10:00:00Z' is in the future"),
        (None, "no ts"),
    ],
)
def test_an_unreadable_ts_is_reported_and_its_turn_kept(tmp_path: Path, ts: object, problem: str) -> None:
    line: dict = {"role": "user", "content": "I own a raft."}
    if ts is not None:
        line["ts"] = ts
    path = transcript(tmp_path, line)
    read = read_turns(path)
    assert [(t.user, t.at) for t in read.turns] == [("I own a raft.", None)]
    (warning,) = read.warnings
    assert warning.startswith(f"{path} line 1: {problem}; the turn is dated when it is ingested")
    assert "ISO 8601" in warning and "the file was not modified" in warning


@pytest.mark.parametrize(
    ("content", "kept", "kind"),
    [
        ([{"type": "text", "text": "I own a raft."}, {"type": "image_url"}], "I own a raft.", "list"),
        (["I own a raft.", "It is red."], "I own a raft.\nIt is red.", "list"),
        ({"text": "I own a raft."}, "I own a raft.", "object"),
        (42, "42", "number"),
        (None, "", "null"),
        ({"type": "image_url"}, "", "object"),
    ],
)
def test_content_that_is_not_a_string_is_read_as_far_as_it_can_be_and_reported(
    tmp_path: Path, content: object, kept: str, kind: str
) -> None:
    path = transcript(tmp_path, {"ts": GOOD_TS, "role": "user", "content": content})
    read = read_turns(path)
    assert [t.user for t in read.turns] == [kept]
    (warning,) = read.warnings
    assert warning.startswith(f"{path} line 1: content is a {kind}, not a string: ")
    assert ("its text was read" if kept else "it holds no text") in warning
    assert "write content as a JSON string" in warning


def test_an_assistant_line_without_text_is_normal(tmp_path: Path) -> None:
    path = transcript(
        tmp_path,
        {"ts": GOOD_TS, "role": "user", "content": "I own a raft."},
        {"ts": GOOD_TS, "role": "assistant", "content": None, "actions": ["search"]},
        {"ts": GOOD_TS, "role": "assistant", "content": [{"type": "text", "text": "Nice."}]},
    )
    read = read_turns(path)
    assert read.warnings == []
    assert [(t.user, t.assistant) for t in read.turns] == [("I own a raft.", "\nNice.")]


def test_invalid_utf8_is_replaced_and_reported(tmp_path: Path) -> None:
    path = transcript(
        tmp_path,
        b'{"ts": "2026-10-01T09:00:00Z", "role": "user", "content": "My cat is Gl\xff\xfeinda."}',
    )
    read = read_turns(path)
    assert [t.user for t in read.turns] == ["My cat is Gl\ufffd\ufffdinda."]
    assert read.skipped == 0
    (warning,) = read.warnings
    assert warning.startswith(f"{path} line 1: not valid UTF-8 (byte 72 of the line)")
    assert "U+FFFD" in warning and "Re-save the file as UTF-8" in warning


def test_a_line_nested_too_deep_is_skipped_and_reported(tmp_path: Path) -> None:
    path = transcript(
        tmp_path,
        b"[" * 100_000,
        {"ts": GOOD_TS, "role": "user", "content": "I own a raft."},
    )
    read = read_turns(path)
    assert [t.user for t in read.turns] == ["I own a raft."]
    assert read.skipped == 1 and read.warnings == [
        f"{path} line 1: not JSON; skipped (the file was not modified)"
    ]
