"""Tombstones, the log.md watermark, the versioned index state and the vault bootstrap."""

import json
from datetime import date
from pathlib import Path

import pytest

from memory_assets.core.index.index_state import IndexState, StateVersionError
from memory_assets.core.knowledge.tombstones import append_tombstone, read_tombstones
from memory_assets.core.knowledge.vault import ZONES, bootstrap_vault, list_pages
from memory_assets.core.knowledge.watermark import append_ingest_entry, read_last_lint_date, read_watermark


def test_tombstones_normalise_append_and_read(tmp_path: Path) -> None:
    path = tmp_path / ".state" / "tombstones.jsonl"
    assert read_tombstones(path).contents == frozenset()
    assert append_tombstone(path, "  Prefers   METRIC units ") == "prefers metric units"
    path.open("a").write('not json\n{"other": 1}\n{"content": "Second ONE"}\n')
    tombs = read_tombstones(path)
    assert tombs.contents == {"prefers metric units", "second one"}
    assert "Prefers metric UNITS" in tombs
    assert len(tombs.warnings) == 2 and "line 2" in tombs.warnings[0] and "line 3" in tombs.warnings[1]
    assert json.loads(path.read_text().splitlines()[0]) == {"content": "prefers metric units"}


def test_watermark_is_the_maximum_date_not_the_last(tmp_path: Path) -> None:
    log = tmp_path / "log.md"
    assert read_watermark(log) is None
    log.write_text(
        "# Notebook Log\n\n\n## [2026-08-20] ingest | daily logs  watermark=2026-08-19\n\n## [2026-08-21] lint\n"
    )
    append_ingest_entry(log, date(2026, 8, 22), date(2026, 8, 10))  # a stray older entry
    assert read_watermark(log) == date(2026, 8, 19)
    assert read_last_lint_date(log) == date(2026, 8, 21)
    assert log.read_text().endswith("## [2026-08-22] ingest | daily logs  watermark=2026-08-10\n")


def test_index_state_discards_pre_v2_and_foreign_table_state(tmp_path: Path) -> None:
    path = tmp_path / ".index_state.json"
    path.write_text(
        json.dumps({"/home/u/.suzent/sandbox/shared/memory/archive/2026-08-20.md": 1755733201.55})
    )
    old = IndexState.load(path, "table-a")
    assert old.files == {} and "pre-v2" in (old.discarded or "")
    state = IndexState(table="table-a", files={"archive:2026-08-20.md": "d1"})
    state.save(path)
    assert json.loads(path.read_text())["version"] == 2
    assert IndexState.load(path, "table-a").files == {"archive:2026-08-20.md": "d1"}
    other = IndexState.load(path, "table-b")
    assert other.files == {} and "another index table" in (other.discarded or "")


def test_vault_bootstrap_is_idempotent_and_never_overwrites(tmp_path: Path) -> None:
    vault = tmp_path / "notebook"
    created = bootstrap_vault(vault)
    assert (vault / "schema.md").read_text().startswith("# Notebook Schema")
    assert (vault / "log.md").read_text() == "# Notebook Log\n\n"
    assert all((vault / z).is_dir() for z in ZONES) and (vault / ".state").is_dir()
    assert vault / "index.md" in created
    (vault / "schema.md").write_text("my own schema")
    assert bootstrap_vault(vault) == []
    assert (vault / "schema.md").read_text() == "my own schema"


def test_list_pages_excludes_nav_files_and_state(tmp_path: Path) -> None:
    vault = tmp_path / "notebook"
    bootstrap_vault(vault)
    (vault / "3_Personal" / "Health.md").write_text("x")
    (vault / "0_Inbox" / "log.md").write_text("x")  # only ROOT nav files are excluded
    (vault / ".state" / "x.md").write_text("x")
    (vault / "INDEX.md").write_text("x")
    assert list_pages(vault) == ["0_Inbox/log.md", "3_Personal/Health.md"]


def test_a_tombstone_line_that_is_json_but_not_an_object_gets_a_plain_message(tmp_path: Path) -> None:
    path = tmp_path / "tombstones.jsonl"
    path.write_text('["prefers metric units"]\n"just a string"\n{"content": 3}\nnull\n{"content": "kept"}\n')
    tombs = read_tombstones(path)
    assert tombs.contents == {"kept"}
    assert [w.split(": not a tombstone ")[1].split(";")[0] for w in tombs.warnings] == [
        "(an array, not an object)",
        "(a string, not an object)",
        '(no "content" string)',
        "(null, not an object)",
    ]
    assert all("line" in w and "fix or delete the line" in w for w in tombs.warnings)
    assert not any("Traceback" in w or "indices" in w for w in tombs.warnings)


def test_a_state_file_from_a_newer_version_says_so(tmp_path: Path) -> None:
    path = tmp_path / ".index_state.json"
    written = json.dumps({"version": 3, "table": "t", "files": {"archive:2026-11-20.md": "x"}})
    path.write_text(written)
    with pytest.raises(
        StateVersionError, match=r"version 3 was written by a newer memory-assets .* delete the file"
    ):
        IndexState.load(path, "t")
    assert path.read_text() == written  # never overwritten
