"""The dedup report asset on a real index, in a real Dagster instance."""

from datetime import UTC, date, datetime, timedelta

import dagster as dg
import polars as pl

from memory_assets.core.capture.transcripts import keep_turn
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.settings import Settings
from memory_assets.definitions import defs
from memory_assets.defs.dedup.assets import dedup_history, dedup_report
from memory_assets.defs.index.assets import INDEX_ASSETS
from memory_assets.defs.index.external import EXTERNAL_ASSETS
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets_tests.conftest import write_facts

WATER_LONG = "The user wants to be reminded to drink water hourly from 9 AM to 9 PM daily."
WATER_SHORT = "User wants to be reminded to drink water daily."


def materialize_report(settings: Settings) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [*EXTERNAL_ASSETS, *INDEX_ASSETS, dedup_report],
        selection=[dedup_report],
        instance=dg.DagsterInstance.ephemeral(),
        resources={"memory": MemoryHomeResource(home=str(settings.home)), "embedder": EmbedderResource()},
    )


def test_empty_home_reports_zeros(settings: Settings) -> None:
    result = materialize_report(settings)
    meta = result.asset_materializations_for_node("dedup_report")[0].metadata
    assert meta["rows"].value == 0 and meta["backlog/fact_lines"].value == 0
    assert (settings.dedup_dir / "pairs.parquet").exists()


def test_report_plots_one_float_per_write_path_and_threshold(settings: Settings, embedder: object) -> None:
    write_facts(settings, date(2026, 11, 1), WATER_LONG, "Lives in Lisbon and works remotely")
    write_facts(settings, date(2026, 11, 2), WATER_LONG, WATER_SHORT)
    write_facts(settings, date(2026, 11, 3), "Lives in Lisbon and works remotely")
    (settings.notebook_dir / "3_Personal" / "Water.md").write_text("- " + WATER_LONG + "\n")
    Indexer(settings, embedder=embedder).sweep()  # type: ignore[arg-type]

    meta = materialize_report(settings).asset_materializations_for_node("dedup_report")[0].metadata
    assert meta["rows"].value == 6
    assert meta["archive_log/rows"].value == 5 and meta["notebook/rows"].value == 1
    # Two of the five log rows repeat an earlier row word for word: redundant at every threshold.
    for key in ("0.995", "0.95", "0.92"):
        assert isinstance(meta[f"archive_log/{key}"].value, float)
        assert meta[f"archive_log/{key}"].value >= 2 / 5
        assert meta[f"notebook/{key}"].value == 0.0  # nothing earlier in its own path
    assert meta["all_write_paths/0.995"].value == 2 / 6  # the two verbatim log repeats
    assert meta["all_write_paths/0.92"].value >= 3 / 6  # the vault bullet restates a log line
    assert meta["backlog/exact_repeats"].value == 2
    assert "| archive_log | 5 |" in meta["report"].value

    pairs = pl.read_parquet(settings.dedup_dir / "pairs.parquet")
    assert {"id", "match_id", "similarity", "write_path"} <= set(pairs.columns)
    assert (pairs["similarity"] >= 0.92).all() and pairs.height >= 2
    clusters = pl.read_parquet(settings.dedup_dir / "clusters.parquet")
    assert clusters.height >= 4


def test_dedup_job_and_daily_schedule_are_in_the_code_location() -> None:
    repo = defs.get_repository_def()
    assert repo.get_job("dedup_measurement") is not None
    assert {
        a.to_user_string() for a in repo.get_job("dedup_measurement").asset_layer.executable_asset_keys
    } == {
        "dedup_report",
        "dedup_history",
    }
    schedule = repo.get_schedule_def("dedup_measurement_schedule")
    assert schedule.cron_schedule == "30 4 * * *"


def test_each_run_appends_the_history_and_the_history_asset_writes_the_html_report(
    settings: Settings, embedder: object
) -> None:
    """The dedup_measurement job, twice on one instance: two measurements in history.parquet, each
    tagged with its run, and dedup/report.html rendered from both."""
    write_facts(settings, date(2026, 11, 1), WATER_LONG, WATER_SHORT, WATER_LONG)
    Indexer(settings, embedder=embedder).sweep()  # type: ignore[arg-type]
    instance = dg.DagsterInstance.ephemeral()
    resources = {"memory": MemoryHomeResource(home=str(settings.home)), "embedder": EmbedderResource()}
    runs = []
    for _ in range(2):
        result = dg.materialize(
            [*EXTERNAL_ASSETS, *INDEX_ASSETS, dedup_report, dedup_history],
            selection=[dedup_report, dedup_history],
            instance=instance,
            resources=resources,
        )
        assert result.success
        runs.append(result.run_id)
    history = pl.read_parquet(settings.dedup_dir / "history.parquet")
    assert sorted(set(history["source"])) == sorted(f"dagster:{r}" for r in runs)
    assert history["measured_at"].n_unique() == 2
    meta = result.asset_materializations_for_node("dedup_history")[0].metadata
    assert meta["measurements"].value == 2
    assert (
        meta["archive_log/0.995"].value
        == history.filter((pl.col("write_path") == "archive_log") & (pl.col("threshold") == 0.995))["rate"][
            -1
        ]
    )
    assert "| archive_log | 0.995 | 2 |" in meta["trend"].value
    html = settings.dedup_dir / "report.html"
    assert meta["report_html"].value == str(html) and "2 measurement(s)" in html.read_text(encoding="utf-8")


def test_the_transcript_tier_plots_as_its_own_write_path(settings: Settings, embedder: object) -> None:
    """Kept turns (source_type transcript) are a write path of their own in the asset's metadata,
    its markdown table and the history asset's trend, beside the logs."""
    write_facts(settings, date(2026, 11, 1), WATER_LONG, "Lives in Lisbon and works remotely")
    at = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    for minute, said in enumerate([WATER_SHORT, WATER_SHORT, "We adopted a cat called Miso"]):
        keep_turn(settings.transcripts_dir, "chat-1", said, "", at + timedelta(minutes=minute))
    Indexer(settings, embedder=embedder).sweep()  # type: ignore[arg-type]
    result = dg.materialize(
        [*EXTERNAL_ASSETS, *INDEX_ASSETS, dedup_report, dedup_history],
        selection=[dedup_report, dedup_history],
        instance=dg.DagsterInstance.ephemeral(),
        resources={"memory": MemoryHomeResource(home=str(settings.home)), "embedder": EmbedderResource()},
    )
    meta = result.asset_materializations_for_node("dedup_report")[0].metadata
    assert (meta["transcript/rows"].value, meta["archive_log/rows"].value, meta["rows"].value) == (3, 2, 5)
    assert meta["transcript/0.995"].value == 1 / 3  # the message said twice, within its own path
    assert "| transcript | 3 |" in meta["report"].value
    trend = result.asset_materializations_for_node("dedup_history")[0].metadata
    assert trend["transcript/0.995"].value == 1 / 3 and "| transcript | 0.995 | 1 |" in trend["trend"].value
