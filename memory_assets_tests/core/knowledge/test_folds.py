"""The fold ledger: records read in order (later wins), a torn last line ignored, a bad line a
warning, a newer version refused, the implicit baseline of an older home, and its baseline written
once with each log's size, so lines appended afterwards are pending."""

import json
from datetime import date
from pathlib import Path

import pytest

from memory_assets.core.knowledge.folds import (
    FOLDED,
    LEFT,
    PENDING,
    FoldLedgerError,
    append_record,
    ensure_ledger,
    load_folds,
    read_folds,
    unread_fact_lines,
)
from memory_assets.core.knowledge.watermark import append_ingest_entry
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

D1, D2 = date(2026, 11, 26), date(2026, 11, 27)


def test_records_apply_in_order_and_a_torn_last_line_is_no_record(tmp_path: Path) -> None:
    path = tmp_path / "folds.jsonl"
    append_record(path, {"kind": "baseline", "read": {"a.md": [3, 30]}})
    append_record(
        path,
        {
            "kind": "run",
            "run": "r1",
            "read": {"a.md": [9, 90]},
            "folded": {"P.md": {"a.md": [5, 7]}},
            "left": {"a.md": [6]},
        },
    )
    append_record(path, {"kind": "unfold", "lines": {"a.md": [7]}})
    with path.open("a") as fh:
        fh.write('{"v": 1, "kind": "run", "folded": {"P.md": {"a.md": [8')  # a crash mid-append
    folds = read_folds(path)
    f = folds.of("a.md")
    assert folds.warnings == [] and folds.records == 3
    assert [f.state(n).kind for n in (2, 4, 5, 6, 7, 8, 10)] == [
        FOLDED,
        LEFT,
        FOLDED,
        LEFT,
        PENDING,
        LEFT,
        PENDING,
    ]
    assert f.state(5).page == "P.md" and f.state(5).run == "r1"
    assert f.explicit_pending() == [7]


def test_a_bad_line_is_a_warning_and_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "folds.jsonl"
    path.write_text('not json\n{"v": 1, "kind": "run", "read": {"a.md": "x"}}\n')
    folds = read_folds(path)
    assert len(folds.warnings) == 2 and "line 1: not a fold record" in folds.warnings[0]
    assert "line 2" in folds.warnings[1] and "count as pending" in folds.warnings[1]
    path.write_text(json.dumps({"v": 99, "kind": "run"}) + "\n")
    with pytest.raises(FoldLedgerError, match="newer version"):
        read_folds(path)


def test_an_older_home_is_read_by_its_watermark_and_its_baseline_keeps_later_appends_pending(
    settings: Settings,
) -> None:
    write_facts(settings, D1, "First fact of the first day", "Second fact of the first day")
    write_facts(settings, D2, "A fact of the second day")
    append_ingest_entry(settings.log_md, D1, D1)
    implicit = load_folds(settings)
    assert (
        implicit.implicit and implicit.of(f"{D1}.md").folded(10_000) and not implicit.of(f"{D2}.md").folded(5)
    )
    assert not settings.folds_path.exists()  # reading writes nothing
    assert ensure_ledger(settings) and not ensure_ledger(settings)  # written once
    write_facts(settings, D1, "A late fact appended to the first day", hour=11)
    folds = load_folds(settings)
    first = folds.of(f"{D1}.md")
    assert not folds.implicit and first.folded(5) and first.folded(6) and first.pending(10)
    assert unread_fact_lines(settings.archive_dir / f"{D1}.md", first) == 1
    assert unread_fact_lines(settings.archive_dir / f"{D2}.md", folds.of(f"{D2}.md")) == 1


def test_a_skipped_day_of_an_older_home_stays_out_of_its_baseline(settings: Settings) -> None:
    write_facts(settings, D1, "A fact of a day the old dream skipped")
    append_ingest_entry(settings.log_md, D2, D1, unconsolidated=[D1])
    assert not load_folds(settings).of(f"{D1}.md").folded(5)
    ensure_ledger(settings)
    assert load_folds(settings).of(f"{D1}.md").pending(5)
