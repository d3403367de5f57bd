"""The watermark reader refuses an entry that cannot be right, and no command drops log rows on it."""

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from memory_assets.cli import main
from memory_assets.core.knowledge.watermark import WatermarkError, append_ingest_entry, read_watermark
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

TODAY = datetime.now(UTC).date()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_watermark_dated_today_or_later_or_after_every_log_is_refused_naming_the_line(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.md"
    append_ingest_entry(log, date(2026, 8, 20), date(2026, 8, 19))
    assert read_watermark(log, today=date(2026, 8, 21)) == date(2026, 8, 19)
    assert read_watermark(log, today=date(2026, 8, 21), newest_log=date(2026, 8, 19)) == date(2026, 8, 19)
    for today, newest, said in (
        (date(2026, 8, 19), None, "is today (2026-08-19)"),
        (date(2026, 8, 10), None, "is later than today (2026-08-10)"),
        (date(2026, 8, 30), date(2026, 8, 18), "is later than the newest daily log (2026-08-18.md)"),
    ):
        with pytest.raises(WatermarkError) as refused:
            read_watermark(log, today=today, newest_log=newest)
        message = str(refused.value)
        assert f"{log} line 2: watermark=2026-08-19 {said}" in message
        assert "correct the date on that line" in message and "or delete the line" in message


def test_a_future_watermark_line_drops_no_log_row_and_every_command_says_which_line(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    home = str(settings.home)
    code, out, _ = run(capsys, "--home", home, "--json", "remember", "Charlie fact written today and indexed")
    assert code == 0 and json.loads(out)["rows_embedded"] == 1
    with settings.log_md.open("a", encoding="utf-8") as fh:
        fh.write(f"\n## [{TODAY}] ingest | daily logs  watermark=2099-01-01\n")
    line = (
        settings.log_md.read_text(encoding="utf-8")
        .splitlines()
        .index(f"## [{TODAY}] ingest | daily logs  watermark=2099-01-01")
    )
    where = f"{settings.log_md} line {line + 1}: watermark=2099-01-01 is later than today"

    # The index follows the fold ledger, not the watermark: the bad line drops nothing.
    assert settings.folds_path.exists()
    code, out, _ = run(capsys, "--home", home, "--json", "reindex")
    assert code == 0 and json.loads(out)["rows"] == 1
    code, out, _ = run(capsys, "--home", home, "--json", "search", "Charlie fact", "--no-embed")
    assert [h["content"] for h in json.loads(out)] == ["Charlie fact written today and indexed"]

    # A fact written meanwhile is written and indexed.
    code, out, _ = run(capsys, "--home", home, "--json", "remember", "Delta fact written after the bad line")
    turn = json.loads(out)
    assert code == 0 and turn["rows_embedded"] == 1
    assert "Delta fact written after the bad line" in (settings.archive_dir / f"{TODAY}.md").read_text()

    # check refuses the line, naming it and the fix.
    code, out, _ = run(capsys, "--home", home, "--json", "check")
    outcomes = {o["name"]: o for o in json.loads(out)}
    accounted = outcomes["facts_accounted_for"]
    assert code == 1 and not accounted["passed"] and where in accounted["problems"][0]
    assert "correct the date on that line" in accounted["problems"][0]
    assert outcomes["rows_match_logs"]["passed"]

    code, out, _ = run(capsys, "--home", home, "--json", "status")
    status = json.loads(out)
    assert code == 0 and status["watermark"] is None and where in status["watermark_error"]
    assert status["next_dream"]["kind"] == "refused" and status["index_rows"] == 2

    code, _, err = run(capsys, "--home", home, "--json", "dream", "--force")
    assert code == 2 and where in err

    # Fixed by hand: the line corrected, both facts come back to the index.
    text = settings.log_md.read_text(encoding="utf-8")
    yesterday = (TODAY - timedelta(days=1)).isoformat()
    settings.log_md.write_text(text.replace("watermark=2099-01-01", f"watermark={yesterday}"))
    code, out, _ = run(capsys, "--home", home, "--json", "reindex")
    assert code == 0 and json.loads(out)["rows"] == 2
    code, out, _ = run(capsys, "--home", home, "--json", "check")
    assert code == 0, out


def test_a_home_without_a_fold_ledger_refuses_a_future_watermark_before_dropping_a_row(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """A home of an older version reads its watermark to know what is consolidated: there, one bad
    line would drop every log's rows, so reindex stops before changing anything and names the line."""
    home = str(settings.home)
    write_facts(settings, TODAY, "Charlie fact written today and indexed")
    code, out, _ = run(capsys, "--home", home, "--json", "reindex")
    assert code == 0 and json.loads(out)["rows"] == 1 and not settings.folds_path.exists()
    with settings.log_md.open("a", encoding="utf-8") as fh:
        fh.write(f"\n## [{TODAY}] ingest | daily logs  watermark=2099-01-01\n")
    code, _, err = run(capsys, "--home", home, "--json", "reindex")
    assert code == 2 and "watermark=2099-01-01 is later than today" in err and "correct the date" in err
    code, out, _ = run(capsys, "--home", home, "--json", "search", "Charlie fact", "--no-embed")
    assert [h["content"] for h in json.loads(out)] == ["Charlie fact written today and indexed"]
