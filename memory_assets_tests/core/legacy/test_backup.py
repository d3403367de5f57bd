"""Deleting legacy rows behind a backup, and undoing it (``core/legacy/backup.py``): apply refuses
anything that would lose data, backs up, deletes and verifies; restore brings the table back
exactly; a table that is not local is backed up by its tag; the CLI round trip.
"""

import json
import shutil
import time
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from memory_assets.cli import main
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore, StoreError
from memory_assets.core.legacy import backup
from memory_assets.core.legacy.backup import apply, forget_backup, list_backups, restore
from memory_assets.core.legacy.export import export
from memory_assets.core.legacy.find import LEGACY_TABLE, LegacyError, find_legacy
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings
from memory_assets_tests.core.legacy.test_export import legacy_log_facts
from memory_assets_tests.core.legacy.test_find import (
    TODAY,
    WATERMARK,
    Row,
    Scenario,
    at,
    build_home,
    sentences,
    table_rows,
    write_assistant_db,
)


# -- apply refuses ---------------------------------------------------------------------------------------
def test_apply_refuses_before_export(
    settings: Settings, scenario: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    version = MemoryStore(settings.index_uri).version()
    for confirm in (False, True):
        with pytest.raises(LegacyError, match=r"refusing to delete .* recorded in no daily log") as err:
            apply(settings, confirm=confirm)
        n = len(scenario.unrecorded) + len(scenario.duplicates) + 2  # + persona and facts blocks
        assert f"{n} of {len(scenario.legacy) + 3} legacy row(s)" in str(err.value)
        assert "legacy export" in str(err.value)
        assert any(r.content in str(err.value) for r in scenario.unrecorded)  # a sample of them
    assert main(["--home", str(settings.home), "legacy", "apply", "--yes"]) == 2
    assert "refusing to delete" in capsys.readouterr().err
    store = MemoryStore(settings.index_uri)
    assert store.version() == version and store.count() == len(scenario.indexer_rows) + len(scenario.legacy)
    assert list_backups(settings) == []


# -- apply and restore -----------------------------------------------------------------------------------
def test_apply_backs_up_deletes_verifies_and_restore_brings_the_table_back_exactly(
    settings: Settings, scenario: Scenario
) -> None:
    export(settings, today=TODAY)
    original = table_rows(settings.index_uri)
    dry = apply(settings)
    assert not dry.confirmed and dry.legacy_rows == len(scenario.legacy) and dry.deleted == 0
    assert table_rows(settings.index_uri) == original and list_backups(settings) == []
    done = apply(settings, confirm=True)
    assert done.confirmed and done.deleted == len(scenario.legacy)
    assert done.rows_after == done.rows_before - done.deleted == len(scenario.indexer_rows)
    assert done.restore == f"memory-assets legacy restore {done.backup}"
    assert Path(done.backup_copy).is_dir() and Path(done.backup_copy).parent == Path(settings.index_uri)
    assert find_legacy(settings).rows == []
    assert {c for _, c in table_rows(settings.index_uri)} == {r.content for r in scenario.indexer_rows}
    assert [b["backup"] for b in list_backups(settings)] == [done.backup]
    assert find_legacy(settings).blocks  # memory_blocks is never deleted
    # A local table's backup is the directory copy (holding the tag); the live table keeps none.
    assert list_backups(settings) == [
        {"backup": done.backup, "tag_version": None, "blocks_cleanup": False, "copy": done.backup_copy}
    ]
    back = restore(settings, done.backup)
    assert back.method == "copy" and table_rows(settings.index_uri) == original
    assert json.loads(settings.index_state_path.read_text())["files"] == {}  # the next reindex diffs all
    assert back.legacy_rows == len(scenario.legacy)
    assert back.set_aside and Path(back.set_aside).is_dir()  # the replaced directory is kept
    assert MemoryStore(settings.index_uri).is_legacy()  # exactly as it was: still unmigrated


def test_a_table_that_is_not_local_is_backed_up_by_its_tag_and_restored_from_it(
    settings: Settings, scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object-store table has no directory to copy: the LanceDB tag is the backup. No object
    store runs here, so the URI is declared non-local; every LanceDB call is the real one."""
    monkeypatch.setattr(backup, "_local_path", lambda uri: None)
    export(settings, today=TODAY)
    original = table_rows(settings.index_uri)
    done = apply(settings, confirm=True)
    assert done.backup_copy is None and done.deleted == len(scenario.legacy)
    assert "forget-backup" in done.notes[-1]  # the tag blocks cleanup once old: the note says so
    assert [(b["backup"], b["tag_version"] is not None) for b in list_backups(settings)] == [
        (done.backup, True)
    ]
    back = restore(settings, done.backup)
    assert back.method == "tag" and table_rows(settings.index_uri) == original
    assert list_backups(settings) == []  # restore deletes the tag it restored from


def test_after_apply_every_exported_fact_is_retrievable_through_search(
    settings: Settings, scenario: Scenario, embedder: Embedder
) -> None:
    result = export(settings, today=TODAY)
    indexer = Indexer(settings, embedder=embedder, today=TODAY)
    indexer.sweep()  # migrates the assistant's table, indexes the logs the export appended to
    store = MemoryStore(settings.index_uri)
    assert store.count("source_type IS NULL") == len(scenario.legacy)
    done = apply(settings, confirm=True)
    assert done.deleted == len(scenario.legacy) and store.count("source_type IS NULL") == 0
    contents = [r.content for r in scenario.unrecorded]
    query_vectors = embedder.embed(contents)
    for content, vector in zip(contents, query_vectors, strict=True):
        hits = search(
            store, content, SearchFilters(today=TODAY, limit=5), query_vector=vector, settings=settings
        )
        assert hits and hits[0].content == content and hits[0].source_type == "archive_log", content
    # A fact exported below the watermark is dated by its from- tag; its source stays today's log.
    dated = next(r for r in scenario.unrecorded if r.created_at and r.created_at.date() <= WATERMARK)
    row = store.scan(["source_date", "fact_date"], where=f"content = '{dated.content}'").to_pylist()
    assert row == [{"source_date": TODAY.isoformat(), "fact_date": dated.created_at.date().isoformat()}]
    assert result.days[-1] == TODAY.isoformat()


def test_optimize_keeps_working_after_apply_whatever_the_retention(
    settings: Settings, scenario: Scenario, embedder: Embedder
) -> None:
    """A local table's backup is the directory copy (holding the tag); the live table keeps no
    tag, so optimize's version cleanup is never blocked, even past the retention."""
    export(settings, today=TODAY)
    indexer = Indexer(settings, embedder=embedder, today=TODAY)
    indexer.sweep()
    done = apply(settings, confirm=True)
    assert done.backup_copy and "optimize keeps running" in done.notes[-1]
    short = replace(settings, version_retention_days=1e-6, lane_version_retention_s=0)
    time.sleep(0.2)
    versions = MemoryStore(settings.index_uri).stats().versions
    Indexer(short).optimize()
    assert MemoryStore(settings.index_uri).stats().versions < versions
    assert [b["blocks_cleanup"] for b in list_backups(short)] in ([], [False])
    assert main(["--home", str(settings.home), "optimize"]) == 0
    restored = restore(settings, done.backup)  # the copy still brings the table back
    assert restored.method == "copy" and restored.legacy_rows == len(scenario.legacy)


def test_reindex_full_for_a_new_model_refuses_before_apply_and_rebuilds_after(
    settings: Settings, embedder: Embedder
) -> None:
    scenario = build_home(settings, dim=8, n_legacy=80)  # the assistant's table, another model's width
    export(settings, today=TODAY)
    indexer = Indexer(settings, embedder=embedder, today=TODAY)
    with pytest.raises(StoreError, match="legacy row"):
        indexer.sweep(full=True)
    assert MemoryStore(settings.index_uri).vector_width() == 8
    apply(settings, confirm=True)
    sweep = Indexer(settings, embedder=embedder, today=TODAY).sweep(full=True)
    store = MemoryStore(settings.index_uri)
    assert store.vector_width() == 384 and store.count("source_type IS NULL") == 0
    assert sweep.rows == store.count() > len(scenario.unrecorded)
    hit = search(
        store,
        scenario.unrecorded[0].content,
        SearchFilters(today=TODAY),
        embedder=embedder,
        settings=settings,
    )
    assert hit[0].content == scenario.unrecorded[0].content


# -- an external assistant table -------------------------------------------------------------------------
def test_a_table_of_another_vector_width_is_read_exported_and_applied_without_reembedding(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_model(*_: object, **__: object) -> None:
        raise AssertionError("legacy rows must never be re-embedded")

    monkeypatch.setattr(Embedder, "_compute", no_model)
    uri = str(tmp_path / "suzent" / "memory")
    scenario = build_home(settings, uri=uri, dim=8, n_legacy=120)
    original = table_rows(uri)
    with pytest.raises(LegacyError, match="refusing"):
        apply(settings, uri, confirm=True)
    found = find_legacy(settings, uri)
    assert found.vector_width == 8 and len(found.rows) == len(scenario.legacy)
    result = export(settings, uri, today=TODAY)
    assert result.exported == len(scenario.unrecorded) + 2
    assert not MemoryStore(settings.index_uri).exists()  # the project's index was never touched
    done = apply(settings, uri, confirm=True)
    assert done.deleted == len(scenario.legacy) and done.restore.endswith(f"--table {uri}")
    assert Path(done.backup_copy) == Path(uri) / f"{LEGACY_TABLE}.lance.{done.backup}"
    forget_backup(settings, done.backup, uri)
    shutil.rmtree(Path(uri) / f"{LEGACY_TABLE}.lance")  # even with the table gone, the copy restores it
    back = restore(settings, done.backup, uri)
    assert back.method == "copy" and table_rows(uri) == original
    assert MemoryStore(uri).vector_width() == 8


# -- other users, and the CLI ----------------------------------------------------------------------------
def test_other_users_rows_are_never_exported_or_deleted(settings: Settings) -> None:
    rows = [
        Row("Mine: speaks fluent Dutch", at(date(2026, 9, 1)), id="a"),
        Row("Theirs: speaks fluent Greek", at(date(2026, 9, 1)), user="someone-else", id="b"),
    ]
    write_assistant_db(settings.index_uri, rows)
    found = find_legacy(settings)
    assert [r.id for r in found.rows] == ["a"] and found.other_users == 1
    export(settings, today=TODAY)
    assert list(legacy_log_facts(settings)) == ["Mine: speaks fluent Dutch"]
    done = apply(settings, confirm=True)
    assert done.deleted == 1 and done.other_users_legacy_rows == 1
    assert [c for _, c in table_rows(settings.index_uri)] == ["Theirs: speaks fluent Greek"]


def test_cli_check_export_apply_restore(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    write_assistant_db(
        settings.index_uri, [Row(t, at(date(2026, 9, 1)), id=str(i)) for i, t in enumerate(sentences(12))]
    )
    home = ["--home", str(settings.home)]

    def run(*argv: str) -> dict[str, Any]:
        assert main([*home, *argv, "--json"]) == 0, capsys.readouterr().err
        return json.loads(capsys.readouterr().out)

    assert run("legacy", "check")["unrecorded"] == 12
    assert run("legacy", "export")["exported"] == 12
    assert run("legacy", "check")["unrecorded"] == 0
    dry = run("legacy", "apply")
    assert not dry["confirmed"] and dry["legacy_rows"] == 12 and "nothing was changed" in dry["notes"][0]
    done = run("legacy", "apply", "--yes")
    # The CLI sweeps the index first: the 12 exported facts are indexed from their log, then the
    # 12 legacy rows go.
    assert (done["rows_before"], done["deleted"], done["rows_after"]) == (24, 12, 12)
    store = MemoryStore(settings.index_uri)
    assert store.count("source_type = 'archive_log'") == 12 and store.count("source_type IS NULL") == 0
    assert run("legacy", "check")["backups"][0]["backup"] == done["backup"]
    assert run("legacy", "restore", done["backup"])["rows"] == 24  # as it was just before the delete
    assert main([*home, "legacy", "forget-backup", done["backup"], "--remove-copy"]) == 0
    assert "copy_removed" in capsys.readouterr().out
