"""Finding legacy rows and checking where the markdown records them (``core/legacy/find.py``).

Against a real assistant-format LanceDB (suzent v0.9.1's ``archival_memories``: uuid ids, metadata
JSON, no first-class columns) of a few hundred rows, some recorded in daily logs, vault pages or
core files and some not, plus its ``memory_blocks`` table. The builders here (``build_home``,
``write_assistant_db``) are shared by the export and backup tests and the legacy jobs' tests.
"""

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from memory_assets.cli import main
from memory_assets.core.capture.daily_log import LogFact, append_facts
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.memory_md import write_generated_zone
from memory_assets.core.knowledge.watermark import append_ingest_entry
from memory_assets.core.legacy.backup import apply, restore
from memory_assets.core.legacy.export import export
from memory_assets.core.legacy.find import (
    BLOCKS_TABLE,
    LEGACY_TABLE,
    LegacyError,
    check_recorded,
    find_legacy,
)
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


# -- a table URI that cannot be read ---------------------------------------------------------------------
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
