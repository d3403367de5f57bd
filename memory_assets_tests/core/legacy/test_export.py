"""Exporting legacy rows into the daily logs and core files (``core/legacy/export.py``): exactly the
unrecorded rows, each on the right day with the right tags, blocks into their core files, and a
second export appends nothing; the indexer's side of the ``legacy from-DAY`` tag.
"""

import json
from datetime import UTC, date, datetime, timedelta

import pytest

from memory_assets.cli import main
from memory_assets.core.capture.daily_log import LogFact, append_facts, list_logs, read_daily_log
from memory_assets.core.index.rows import legacy_fact_date, plan_archive
from memory_assets.core.knowledge.memory_md import read_zones, stamp_human_edit
from memory_assets.core.knowledge.tombstones import Tombstones
from memory_assets.core.legacy.export import export
from memory_assets.core.legacy.find import check_recorded, find_legacy
from memory_assets.core.settings import Settings
from memory_assets_tests.core.legacy.test_find import (
    TODAY,
    USER,
    WATERMARK,
    Row,
    Scenario,
    at,
    write_assistant_db,
)


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


# -- memory_blocks into MEMORY.md's manual zone ----------------------------------------------------------
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


# -- the indexer's side ----------------------------------------------------------------------------------
def test_the_from_tag_sets_a_legacy_facts_date_and_nothing_else(settings: Settings) -> None:
    facts = [
        LogFact("Was born in Coimbra", "personal", ("legacy", "from-2026-03-04")),
        LogFact("Likes figs", "preference", ("from-2026-03-04",)),  # no legacy tag: ignored
        LogFact("Sings in a choir", "personal", ("legacy", "from-2026-13-40")),  # not a date: ignored
        LogFact("Has a brother", "personal", ("legacy", "undated")),
    ]
    path = append_facts(settings.archive_dir, "legacy", facts, at(TODAY))
    assert path is not None
    plan = plan_archive(path, TODAY, Tombstones(), None)
    dates = {r.content: (r.source_date, r.fact_date) for r in plan.rows}
    today = TODAY.isoformat()
    assert dates == {
        "Was born in Coimbra": (today, "2026-03-04"),
        "Likes figs": (today, today),
        "Sings in a choir": (today, today),
        "Has a brother": (today, today),
    }
    assert legacy_fact_date(("legacy", "from-20260304")) is None
