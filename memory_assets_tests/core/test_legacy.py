"""Legacy rows: export first, then delete, refusing anything that would lose data.

Against a real assistant-format LanceDB (suzent v0.9.1's ``archival_memories``: uuid ids, metadata
JSON, no first-class columns) of a few hundred rows, some recorded in daily logs, vault pages or
core files and some not, plus its ``memory_blocks`` table.
"""

import json
import random
import shutil
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from memory_assets.cli import main
from memory_assets.core import legacy
from memory_assets.core.capture.daily_log import LogFact, append_facts, list_logs, read_daily_log
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.retrieval import search
from memory_assets.core.index.rows import legacy_fact_date, plan_archive
from memory_assets.core.index.store import MemoryStore, StoreError
from memory_assets.core.knowledge.memory_md import read_zones, stamp_human_edit, write_generated_zone
from memory_assets.core.knowledge.tombstones import Tombstones
from memory_assets.core.knowledge.watermark import append_ingest_entry
from memory_assets.core.legacy import (
    BLOCKS_TABLE,
    LEGACY_TABLE,
    LegacyError,
    apply,
    check_recorded,
    export,
    find_legacy,
    forget_backup,
    list_backups,
    restore,
)
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings

TODAY = date(2026, 11, 29)
WATERMARK = date(2026, 6, 30)
USER = "default-user"

SUBJECTS = ["The user", "Their sister", "Their manager", "Their neighbour", "Their oldest friend"]
VERBS = ["prefers", "owns", "once visited", "is learning about", "works on", "dislikes", "collects", "plans"]
THINGS = [
    "a red kayak",
    "an upright piano",
    "vintage film cameras",
    "sourdough baking",
    "a rooftop garden",
    "Portuguese grammar",
    "mechanical keyboards",
    "a marathon",
    "oolong tea",
    "board game design",
    "a vegetable allotment",
    "jazz guitar",
    "bird watching",
    "a sailing dinghy",
    "watercolour painting",
    "rock climbing",
    "an electric cargo bike",
    "chess openings",
    "home brewing",
    "a telescope",
]
PLACES = ["Lisbon", "Oslo", "Kyoto", "Nairobi", "Quito", "Hobart", "Tallinn", "Dakar", "Porto", "Bergen"]


def sentences(n: int, seed: int = 7) -> list[str]:
    """``n`` distinct facts, none a whole-word part of another (each starts with its subject)."""
    combos = [(s, v, t, p) for s in SUBJECTS for v in VERBS for t in THINGS for p in PLACES]
    random.Random(seed).shuffle(combos)
    return [f"{s} {v} {t} in {p}" for s, v, t, p in combos[:n]]


def vectors(n: int, dim: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@dataclass
class Row:
    content: str
    created_at: datetime | None
    meta: dict[str, Any] = field(default_factory=dict)
    user: str = USER
    id: str = ""


def write_assistant_db(
    uri: str, rows: list[Row], dim: int = 384, blocks: list[dict[str, Any]] | None = None
) -> None:
    """An assistant-format LanceDB at ``uri``: ``archival_memories`` as suzent v0.9.1 wrote it (the
    pattern of test_store.assistant_table, scaled up) and, when given, ``memory_blocks``."""
    import lancedb

    n = len(rows)
    ts = pa.timestamp("us")
    data = pa.table(
        {
            "id": [r.id for r in rows],
            "content": [r.content for r in rows],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors(n, dim).reshape(-1)), dim),
            "user_id": [r.user for r in rows],
            "chat_id": pa.nulls(n, pa.string()),
            "metadata": [json.dumps(r.meta) for r in rows],
            "importance": [0.8] * n,
            "created_at": pa.array(
                [r.created_at.replace(tzinfo=None) if r.created_at else None for r in rows], ts
            ),
            "updated_at": pa.array(
                [r.created_at.replace(tzinfo=None) if r.created_at else None for r in rows], ts
            ),
            "accessed_at": pa.nulls(n, ts),
            "access_count": [0] * n,
        }
    )
    db = lancedb.connect(uri)
    db.create_table(LEGACY_TABLE, data=data)
    if blocks:
        db.create_table(
            BLOCKS_TABLE,
            data=pa.table(
                {
                    "label": [b["label"] for b in blocks],
                    "content": [b["content"] for b in blocks],
                    "chat_id": pa.nulls(len(blocks), pa.string()),
                    "user_id": [b.get("user_id") for b in blocks],
                    "created_at": pa.array([datetime(2026, 4, 2)] * len(blocks), ts),
                    "updated_at": pa.array([datetime(2026, 5, 3, 8, 30)] * len(blocks), ts),
                }
            ),
        )


def at(day: date, hour: int = 10, minute: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


@dataclass
class Scenario:
    """What the table holds and where each legacy row is (or is not) recorded."""

    indexer_rows: list[Row]
    legacy: list[Row]
    recorded: dict[str, str]  # content -> where the markdown holds it
    unrecorded: list[Row]  # the rows export must append (first copy of each text)
    duplicates: list[Row]
    undated: list[Row]
    generated_only: list[Row]  # in MEMORY.md's generated zone only: no record
    empty: list[Row]
    blocks: list[dict[str, Any]]


def build_home(settings: Settings, uri: str | None = None, dim: int = 384, n_legacy: int = 280) -> Scenario:
    """A home with a watermark, logs, a vault page and core files, and an assistant-format table of
    20 indexer rows and ``n_legacy`` legacy rows (at ``uri``, default the project's own index)."""
    texts = sentences(n_legacy + 40)
    rng = random.Random(3)
    append_ingest_entry(settings.log_md, WATERMARK, WATERMARK)
    indexer_rows = [
        Row(texts[i], at(date(2026, 7, 1)), {"source_type": "archive_log", "source_file": "2026-07-01.md"})
        for i in range(20)
    ]
    append_facts(
        settings.archive_dir,
        "c0ffee00",
        [LogFact(r.content, "preference") for r in indexer_rows],
        at(date(2026, 7, 1)),
    )
    legacy: list[Row] = []
    start = date(2026, 3, 1)
    for i, text in enumerate(texts[20 : 20 + n_legacy]):
        day = start + timedelta(days=rng.randrange(0, 245))  # 2026-03-01 .. 2026-10-31
        meta: dict[str, Any] = {"category": rng.choice(["personal", "preference", "goal"])}
        if i % 7 == 0:
            meta = {"source_date": day.isoformat()}  # some carry a source_date, no category
        legacy.append(Row(text, at(day, rng.randrange(0, 24), rng.randrange(0, 60)), meta))
    legacy[1].created_at = at(WATERMARK, 23, 59)  # on the watermark's day: today's log, tagged
    legacy[2].created_at = at(WATERMARK + timedelta(days=1), 0, 1)  # just after: its own day
    recorded: dict[str, str] = {}
    # 30 recorded in daily logs (some below the watermark), reworded only in case and punctuation.
    for k, row in enumerate(legacy[10:40]):
        day = date(2026, 5, 1) + timedelta(days=k * 3)
        append_facts(
            settings.archive_dir, "0ldc4a75", [LogFact(row.content.upper() + "!", "general")], at(day)
        )
        recorded[row.content] = f"archive/{day.isoformat()}.md"
    # 10 on a vault page, 3 in persona.md, 2 in user.md, 2 in MEMORY.md's manual zone.
    page = settings.notebook_dir / "2_Areas" / "People.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("# People\n\n" + "".join(f"- {r.content}.\n" for r in legacy[40:50]), encoding="utf-8")
    recorded.update({r.content: "notebook/2_Areas/People.md" for r in legacy[40:50]})
    settings.core_file_path("persona.md").write_text(
        "# Persona\n\n" + "\n".join(r.content for r in legacy[50:53]) + "\n", encoding="utf-8"
    )
    recorded.update({r.content: "memory/persona.md" for r in legacy[50:53]})
    user_block = "The user is called Ana and lives in Porto with two cats"
    settings.core_file_path("user.md").write_text(
        "# User\n\n" + "\n".join(r.content for r in legacy[53:55]) + f"\n\n{user_block}\n", encoding="utf-8"
    )
    recorded.update({r.content: "memory/user.md" for r in legacy[53:55]})
    generated_only = legacy[57:60]
    write_generated_zone(settings.memory_md_path, "\n".join(f"- {r.content}" for r in generated_only))
    md = settings.memory_md_path.read_text(encoding="utf-8")
    settings.memory_md_path.write_text(
        md + "\n" + "\n".join(r.content for r in legacy[55:57]) + "\n", encoding="utf-8"
    )
    recorded.update({r.content: "memory/MEMORY.md (manual zone)" for r in legacy[55:57]})
    # Bad input: undated rows, one dated by its metadata only, duplicates, an empty row.
    undated = legacy[60:65]
    for row in undated:
        row.created_at, row.meta = None, {"category": "personal"}
    legacy[65].created_at, legacy[65].meta = None, {"source_date": "2026-08-14", "category": "goal"}
    duplicates = [
        Row(legacy[66].content, legacy[66].created_at, dict(legacy[66].meta)),
        Row(legacy[67].content, None),
    ]
    empty = [Row("", at(date(2026, 8, 1)))]
    legacy += duplicates + empty
    rows = indexer_rows + legacy
    for i, row in enumerate(rows):
        row.id = f"{i:08x}-uuid-{'indexer' if i < len(indexer_rows) else 'legacy'}"
    unrecorded = [r for r in legacy[:-3] if r.content not in recorded and r.content]
    blocks = [
        {
            "label": "persona",
            "content": "I am a patient assistant who answers in British English.",
            "user_id": None,
        },
        {"label": "user", "content": user_block, "user_id": USER},
        {
            "label": "facts",
            "content": "# Long-term Memory\n\n## Profile\n- Allergic to penicillin since childhood\n\n*Last updated: 2026-05-03 08:30 UTC*",
            "user_id": USER,
        },
        {"label": "context", "content": "Currently discussing kayaks", "user_id": USER},
    ]
    write_assistant_db(uri or settings.index_uri, rows, dim=dim, blocks=blocks)
    return Scenario(
        indexer_rows, legacy, recorded, unrecorded, duplicates, undated, generated_only, empty, blocks
    )


def table_rows(uri: str) -> list[tuple[str, str]]:
    import lancedb

    data = lancedb.connect(uri).open_table(LEGACY_TABLE).to_arrow()
    return sorted(zip(data.column("id").to_pylist(), data.column("content").to_pylist(), strict=True))


def legacy_log_facts(settings: Settings) -> dict[str, tuple[date, tuple[str, ...], str]]:
    """Every fact the export wrote (blocks headed ``— legacy``): content -> (log day, tags, category)."""
    out: dict[str, tuple[date, tuple[str, ...], str]] = {}
    for day, path in list_logs(settings.archive_dir):
        for fact in read_daily_log(path).facts:
            if fact.chat == "legacy":
                assert fact.content not in out, f"{fact.content!r} exported twice"
                out[fact.content] = (day, fact.tags, fact.category)
    return out


def log_bytes(settings: Settings) -> dict[str, bytes]:
    files = [p for _, p in list_logs(settings.archive_dir)]
    files += [settings.core_file_path(f) for f in ("persona.md", "user.md", "MEMORY.md")]
    return {p.name: p.read_bytes() for p in files if p.is_file()}


@pytest.fixture
def scenario(settings: Settings) -> Scenario:
    return build_home(settings)


# -- check -------------------------------------------------------------------------------------------
def test_check_reads_the_table_as_it_is_and_counts_recorded_and_unrecorded(
    settings: Settings, scenario: Scenario
) -> None:
    before = MemoryStore(settings.index_uri).stats()
    found = find_legacy(settings)
    assert found.assistant_format and found.vector_width == 384
    assert found.total_rows == len(scenario.indexer_rows) + len(scenario.legacy)
    assert {r.content for r in found.rows} == {r.content for r in scenario.legacy}  # no indexer row
    assert [b.label for b in found.blocks] == ["persona", "user", "facts"] and found.skipped_blocks == 1
    check = check_recorded(settings, found.everything)
    assert {check.where[r.id] for r in check.recorded if not r.is_block} <= set(scenario.recorded.values())
    recorded_rows = [r for r in check.recorded if not r.is_block]
    assert sorted(r.content for r in recorded_rows) == sorted(scenario.recorded)
    for row in recorded_rows:
        assert check.where[row.id] == scenario.recorded[row.content]
    assert [r.label for r in check.recorded if r.is_block] == ["user"]  # user.md already holds it
    unrecorded = [r.content for r in check.unrecorded if not r.is_block]
    assert sorted(unrecorded) == sorted(
        [r.content for r in scenario.unrecorded] + [d.content for d in scenario.duplicates]
    )
    assert all(r.content in unrecorded for r in scenario.generated_only)  # the generated zone is no record
    assert len(check.empty) == 1
    after = MemoryStore(settings.index_uri)
    assert after.is_legacy() and after.stats().version == before.version  # never migrated, never written


# -- apply refuses ------------------------------------------------------------------------------------
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


# -- export -------------------------------------------------------------------------------------------
def test_export_appends_exactly_the_unrecorded_rows_on_the_right_days(
    settings: Settings, scenario: Scenario
) -> None:
    generated_before = read_zones(settings.memory_md_path).generated
    user_md = settings.core_file_path("user.md").read_bytes()
    result = export(settings, today=TODAY)
    facts = legacy_log_facts(settings)
    assert sorted(facts) == sorted(r.content for r in scenario.unrecorded)  # exactly, once each
    assert result.exported == len(scenario.unrecorded) + 2  # + the persona and facts blocks
    assert result.duplicates == 2 and result.empty == 1
    expected_days: set[str] = set()
    for row in scenario.unrecorded:
        day, tags, category = facts[row.content]
        original = row.created_at.date() if row.created_at else None
        if row.meta.get("source_date") and original is None:
            original = date.fromisoformat(row.meta["source_date"])
        if original is None:
            assert (day, tags) == (TODAY, ("legacy", "undated"))
        elif original > WATERMARK:
            assert (day, tags) == (original, ())
        else:
            assert (day, tags) == (TODAY, ("legacy", f"from-{original.isoformat()}"))
        assert category == (row.meta.get("category") or "general")
        expected_days.add(day.isoformat())
    assert result.days == sorted(expected_days)
    assert facts[scenario.legacy[1].content][0] == TODAY  # the watermark's own day is consolidated
    assert facts[scenario.legacy[2].content][0] == WATERMARK + timedelta(days=1)
    assert facts[scenario.legacy[65].content][0] == date(2026, 8, 14)  # dated by its source_date
    assert sorted(r.content for r in result.undated) == sorted(r.content for r in scenario.undated)
    assert result.dated_today == sum(
        1 for r in scenario.unrecorded if r.created_at and r.created_at.date() <= WATERMARK
    )
    assert sum(v for k, v in result.destinations.items() if k.startswith("archive/")) == len(
        scenario.unrecorded
    )
    # Blocks: persona appended to persona.md; facts into MEMORY.md's manual zone; user.md had it.
    assert result.destinations["memory/persona.md"] == 1
    assert result.destinations["memory/MEMORY.md (manual zone)"] == 1
    assert (
        "patient assistant who answers in British English"
        in settings.core_file_path("persona.md").read_text()
    )
    zones = read_zones(settings.memory_md_path)
    assert zones.generated == generated_before and "Allergic to penicillin" in zones.manual
    assert settings.core_file_path("user.md").read_bytes() == user_md
    assert result.warnings == []
    assert check_recorded(settings, find_legacy(settings).everything).unrecorded == []


def test_a_second_export_appends_nothing(settings: Settings, scenario: Scenario) -> None:
    first = export(settings, today=TODAY)
    assert first.exported > 0
    files = log_bytes(settings)
    second = export(settings, today=TODAY)
    assert second.exported == 0 and second.destinations == {} and second.days == []
    assert second.already_recorded == len(scenario.legacy) - 1 + 3  # all but the empty row, and 3 blocks
    assert log_bytes(settings) == files


def test_undated_rows_go_to_a_reported_bucket_and_are_never_dropped(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [Row("Keeps a spare key with the neighbour at number 12", None, {"category": "context"}, id="u-1")]
    rows.append(Row("Learned to swim at the age of thirty", at(date(2026, 9, 2)), {}, id="u-2"))
    write_assistant_db(settings.index_uri, rows)
    assert main(["--home", str(settings.home), "legacy", "export", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["undated"] == 1 and out["undated_sample"][0]["content"].startswith("Keeps a spare key")
    today = datetime.now(UTC).date()
    facts = legacy_log_facts(settings)
    assert facts["Keeps a spare key with the neighbour at number 12"] == (
        today,
        ("legacy", "undated"),
        "context",
    )
    assert facts["Learned to swim at the age of thirty"][:2] == (date(2026, 9, 2), ())
    assert main(["--home", str(settings.home), "legacy", "check", "--json"]) == 0
    check = json.loads(capsys.readouterr().out)
    assert (check["legacy_rows"], check["recorded"], check["unrecorded"]) == (2, 2, 0)


# -- apply and restore -------------------------------------------------------------------------------
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
    monkeypatch.setattr(legacy, "_local_path", lambda uri: None)
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
        hits = search(store, content, query_vector=vector, settings=settings, today=TODAY, limit=5)
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
    short = replace(settings, version_retention_days=1e-6)
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
    hit = search(store, scenario.unrecorded[0].content, embedder=embedder, settings=settings, today=TODAY)
    assert hit[0].content == scenario.unrecorded[0].content


# -- an external assistant table ---------------------------------------------------------------------
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


def test_an_unreachable_table_uri_is_a_clear_error(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere" / "memory"
    with pytest.raises(LegacyError, match="is not a directory"):
        find_legacy(settings, str(missing))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LegacyError, match="holds no table archival_memories"):
        export(settings, str(empty))
    write_assistant_db(str(tmp_path / "db"), [Row("Plays the cello", at(date(2026, 9, 1)), id="x")])
    with pytest.raises(LegacyError, match="give the LanceDB directory that holds it"):
        apply(settings, str(tmp_path / "db" / "archival_memories.lance"))
    assert main(["--home", str(settings.home), "legacy", "check", "--table", str(missing)]) == 2
    assert "is not a directory" in capsys.readouterr().err
    with pytest.raises(LegacyError, match="no legacy backup"):
        restore(settings, "legacy-backup-19700101T000000Z", str(tmp_path / "db"))


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


def test_a_human_stamped_manual_zone_never_vouches_for_an_exported_block(settings: Settings) -> None:
    stamp_human_edit(settings.memory_md_path, "Prefers tea to coffee\n", "ana")
    write_assistant_db(
        settings.index_uri,
        [Row("Owns a bicycle", at(date(2026, 9, 1)), id="a")],
        blocks=[{"label": "facts", "content": "Allergic to penicillin\nBorn in Faro", "user_id": USER}],
    )
    manual = read_zones(settings.memory_md_path).manual
    result = export(settings, today=TODAY)
    assert read_zones(settings.memory_md_path).manual == manual
    assert "human verification stamp" in result.warnings[0]
    facts = legacy_log_facts(settings)
    assert facts["Allergic to penicillin Born in Faro"][:2] == (
        TODAY,
        ("legacy", "memory-block", "from-2026-05-03"),
    )
    assert export(settings, today=TODAY).exported == 0


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


# -- the indexer's side ------------------------------------------------------------------------------
def test_the_from_tag_sets_a_legacy_facts_date_and_nothing_else(settings: Settings) -> None:
    facts = [
        LogFact("Was born in Coimbra", "personal", ("legacy", "from-2026-03-04")),
        LogFact("Likes figs", "preference", ("from-2026-03-04",)),  # no legacy tag: ignored
        LogFact("Sings in a choir", "personal", ("legacy", "from-2026-13-40")),  # not a date: ignored
        LogFact("Has a brother", "personal", ("legacy", "undated")),
    ]
    path = append_facts(settings.archive_dir, "legacy", facts, at(TODAY))
    assert path is not None
    plan = plan_archive(path, TODAY, Tombstones(), WATERMARK)
    dates = {r.content: (r.source_date, r.fact_date) for r in plan.rows}
    today = TODAY.isoformat()
    assert dates == {
        "Was born in Coimbra": (today, "2026-03-04"),
        "Likes figs": (today, today),
        "Sings in a choir": (today, today),
        "Has a brother": (today, today),
    }
    assert legacy_fact_date(("legacy", "from-20260304")) is None


OLD_FILE = "# Long-term Memory\n\n## Profile\n- Lives in Porto\n\n*Last updated: 2026-05-03 08:30 UTC*\n"


@pytest.mark.parametrize(
    ("before", "block", "layout", "generated"),
    [
        (None, "Allergic to penicillin", "marked", ""),  # created as a generator would create it
        ("My own notes\n", "Allergic to penicillin", "manual", None),  # a manual file stays manual
        ("My own notes\n", OLD_FILE.replace("Lives in Porto", "Allergic to penicillin"), "marked", ""),
        (OLD_FILE, "Allergic to penicillin", "marked", OLD_FILE),  # the old generator's file
    ],
)
def test_a_facts_block_lands_in_memory_md_manual_zone_whatever_its_layout(
    settings: Settings, before: str | None, block: str, layout: str, generated: str | None
) -> None:
    if before is not None:
        settings.memory_md_path.write_text(before, encoding="utf-8")
    write_assistant_db(
        settings.index_uri,
        [Row("Owns a bicycle", at(date(2026, 9, 1)), id="a")],
        blocks=[{"label": "facts", "content": block, "user_id": USER}],
    )
    assert export(settings, today=TODAY).destinations["memory/MEMORY.md (manual zone)"] == 1
    zones = read_zones(settings.memory_md_path)
    assert zones.layout == layout and "Allergic to penicillin" in zones.manual
    if generated is None:
        assert zones.generated is None and zones.manual.startswith("My own notes\n")
    else:
        assert zones.generated is not None and zones.generated.strip() == generated.strip()
    if before == "My own notes\n":
        assert "My own notes" in zones.manual
    files = log_bytes(settings)
    assert export(settings, today=TODAY).exported == 0 and log_bytes(settings) == files
