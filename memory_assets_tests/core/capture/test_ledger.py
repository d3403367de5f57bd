"""The daily logs' ledger: appends extend it, an edit stays visible, a bad ledger is handled."""

import json
from datetime import timedelta

import pytest

from memory_assets.core.capture.ledger import (
    HASH_HEX,
    LEDGER_VERSION,
    LedgerVersionError,
    LogChange,
    accept,
    ledger_path,
    observe,
    read_ledger,
    verify,
)
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import DAY, write_facts


def edit_line(settings: Settings, number: int, new: str) -> None:
    path = settings.archive_dir / f"{DAY.isoformat()}.md"
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[number - 1] = new
    path.write_text("\n".join(lines), encoding="utf-8")


def test_a_first_sight_records_a_baseline_and_appends_extend_it(settings: Settings) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers")
    first = observe(settings.memory_dir)
    assert first.baselined == [f"{DAY.isoformat()}.md"] and first.written
    data = json.loads(ledger_path(settings.memory_dir).read_text())
    lines = (settings.archive_dir / f"{DAY.isoformat()}.md").read_text().count("\n")
    assert data["version"] == LEDGER_VERSION
    assert len(data["logs"][f"{DAY.isoformat()}.md"]) == lines * HASH_HEX

    write_facts(settings, DAY, "Keeps bees on the roof of the flat", hour=10)
    assert verify(settings.memory_dir) == []
    second = observe(settings.memory_dir)
    assert second.extended == [f"{DAY.isoformat()}.md"] and second.refused == []
    assert read_ledger(ledger_path(settings.memory_dir)).lines(f"{DAY.isoformat()}.md") > lines

    before = ledger_path(settings.memory_dir).stat()
    third = observe(settings.memory_dir)  # nothing new: nothing written
    assert not third.written and ledger_path(settings.memory_dir).stat().st_mtime_ns == before.st_mtime_ns


def test_an_edited_earlier_line_is_reported_and_its_record_never_overwritten(settings: Settings) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers", "Drinks oat milk in coffee")
    observe(settings.memory_dir)
    recorded = ledger_path(settings.memory_dir).read_bytes()
    # Line 1 is the H1, 2 blank, 3 the block heading, 4 blank, 5 and 6 the facts.
    edit_line(settings, 5, "- [preference] Prefers imperial units")
    expected = LogChange(f"{DAY.isoformat()}.md", 5, "- [preference] Prefers imperial units", "changed")
    assert verify(settings.memory_dir) == [expected]
    assert "line 5" in expected.describe() and "2026-11-20.md" in expected.describe()

    seen = observe(settings.memory_dir)
    assert seen.refused == [expected] and not seen.written
    assert ledger_path(settings.memory_dir).read_bytes() == recorded

    write_facts(settings, DAY, "A later append does not hide the edit", hour=11)
    observe(settings.memory_dir)
    assert verify(settings.memory_dir) == [expected]
    assert ledger_path(settings.memory_dir).read_bytes() == recorded


def test_a_shorter_or_deleted_log_is_reported(settings: Settings) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers", "Drinks oat milk in coffee")
    other = DAY + timedelta(days=1)
    write_facts(settings, other, "Keeps bees on the roof of the flat")
    observe(settings.memory_dir)
    path = settings.archive_dir / f"{DAY.isoformat()}.md"
    path.write_text("\n".join(path.read_text().split("\n")[:5]) + "\n")  # drops line 6
    (settings.archive_dir / f"{other.isoformat()}.md").unlink()
    changes = verify(settings.memory_dir)
    assert changes == [
        LogChange(f"{DAY.isoformat()}.md", 6, "the file is now shorter than line 6", "shorter"),
        LogChange(f"{other.isoformat()}.md", 1, "the file was deleted", "deleted"),
    ]
    observe(settings.memory_dir)
    assert verify(settings.memory_dir) == changes  # a deleted log's record stays


def test_an_unfinished_last_line_is_recorded_only_once_complete(settings: Settings) -> None:
    path = settings.archive_dir / f"{DAY.isoformat()}.md"
    path.write_text("# Daily Log - 2026-11-20\n\n- [preference] Prefers metric")
    assert observe(settings.memory_dir).baselined == [path.name]
    assert read_ledger(ledger_path(settings.memory_dir)).lines(path.name) == 2
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(" units in all answers\n")  # the writer finishes the line: an append
    assert verify(settings.memory_dir) == []
    assert observe(settings.memory_dir).extended == [path.name]
    assert read_ledger(ledger_path(settings.memory_dir)).lines(path.name) == 3


def test_invalid_utf8_is_read_and_an_edit_of_it_is_seen(settings: Settings) -> None:
    path = settings.archive_dir / f"{DAY.isoformat()}.md"
    path.write_bytes(b"# Daily Log - 2026-11-20\n\n- [preference] caf\xe9 au lait\n")
    observe(settings.memory_dir)
    assert verify(settings.memory_dir) == []
    path.write_bytes(b"# Daily Log - 2026-11-20\n\n- [preference] tea\n")
    [change] = verify(settings.memory_dir)
    assert (change.line, change.excerpt) == (3, "- [preference] tea")


def test_a_newer_ledger_version_is_refused_naming_the_file_and_the_fix(settings: Settings) -> None:
    path = ledger_path(settings.memory_dir)
    path.write_text(json.dumps({"version": LEDGER_VERSION + 1, "logs": {}}))
    with pytest.raises(LedgerVersionError) as err:
        observe(settings.memory_dir)
    assert str(path) in str(err.value) and "Upgrade memory-assets" in str(err.value)
    assert json.loads(path.read_text())["version"] == LEDGER_VERSION + 1  # left as it was


def test_a_corrupt_ledger_is_reported_kept_aside_and_rebuilt(settings: Settings) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers")
    path = ledger_path(settings.memory_dir)
    path.write_text('{"version": 1, "logs": {"2026-11-20.md": "zz')
    assert read_ledger(path).corrupt
    seen = observe(settings.memory_dir)
    assert seen.baselined == [f"{DAY.isoformat()}.md"]
    assert len(seen.warnings) == 1 and str(path) in seen.warnings[0] and "rebuilt" in seen.warnings[0]
    assert path.with_name(path.name + ".corrupt").read_text().startswith('{"version": 1')
    ledger = read_ledger(path)
    assert not ledger.corrupt and not ledger.warnings and verify(settings.memory_dir) == []


def test_a_malformed_record_is_dropped_and_the_log_recorded_afresh(settings: Settings) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers")
    path = ledger_path(settings.memory_dir)
    path.write_text(json.dumps({"version": 1, "logs": {f"{DAY.isoformat()}.md": "not-hex", "x.md": "00"}}))
    seen = observe(settings.memory_dir)
    assert len(seen.warnings) == 2 and seen.baselined == [f"{DAY.isoformat()}.md"] and seen.written
    assert set(read_ledger(path).logs) == {f"{DAY.isoformat()}.md"}


def test_accept_takes_an_intended_edit_as_the_new_record(settings: Settings) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers")
    other = DAY + timedelta(days=1)
    write_facts(settings, other, "Keeps bees on the roof of the flat")
    observe(settings.memory_dir)
    edit_line(settings, 5, "- [preference] Prefers metric units")
    (settings.archive_dir / f"{other.isoformat()}.md").unlink()
    assert len(verify(settings.memory_dir)) == 2
    assert accept(settings.memory_dir, [f"archive/{DAY.isoformat()}.md", f"{other.isoformat()}.md"]) == [
        f"{DAY.isoformat()}.md",
        f"{other.isoformat()}.md",
    ]
    assert verify(settings.memory_dir) == []
    assert set(read_ledger(ledger_path(settings.memory_dir)).logs) == {f"{DAY.isoformat()}.md"}
    with pytest.raises(ValueError, match="neither a daily log"):
        accept(settings.memory_dir, ["2020-01-01.md"])
