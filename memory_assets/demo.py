"""``make demo``: a demo memory home, indexed by the Dagster jobs on a persistent instance.

Seeds ``$MEMORY_HOME`` (only when it holds no daily logs yet) with a fortnight of daily logs
(with the repeats and paraphrases real extraction produces), a few vault pages and core files,
then runs the code location's jobs in process against ``$DAGSTER_HOME`` so the runs, the
materialisations, their metadata and the checks are there to browse with ``make ui``:
``reindex`` once per day partition, ``index_files``, ``optimize_index``, then
``dedup_measurement``. Ends with a search.
Runs on the embedded defaults: the bundled model, no server, no API key.
"""

import json
import os
import sys
from datetime import UTC, date, datetime, timedelta

from memory_assets.core.capture.daily_log import LogFact, append_facts, list_logs
from memory_assets.core.home import home_status, init_home
from memory_assets.core.index.retrieval import search
from memory_assets.settings import Settings

DEMO_FACTS: list[tuple[str, str]] = [
    ("personal", "Lives in Lisbon and works remotely as a data engineer"),
    ("preference", "Prefers metric units in all answers"),
    ("preference", "Wants to be reminded to drink water hourly from 9 AM to 9 PM daily"),
    ("technical", "Deploys the side project on a Hetzner VPS with Docker Compose"),
    ("goal", "Wants to finish the marathon training plan by October"),
    ("preference", "User wants to be reminded to drink water daily"),
    ("technical", "Uses Dagster and LanceDB for the memory pipeline"),
    ("personal", "Has a sister called Ana who lives in Porto"),
    ("context", "Is preparing a talk about data pipelines for next month"),
    ("preference", "Prefers concise answers with code examples"),
    ("personal", "Lives in Lisbon and works remotely as a data engineer"),
    ("technical", "Runs the test suite with pytest before every push"),
]

PAGES = {
    "3_Personal/Health.md": "---\ntype: entity\ntitle: Health & fitness\nstatus: stable\ncategory: goal\n"
    "updated: 2026-11-20\nstale_after: 2027-02-19\n---\n## Key Facts\n"
    "- Trains for a marathon; target race in October. (confirmed 4x, last 2026-11-20)\n"
    "- Wants water reminders hourly from 9 AM to 9 PM. (confirmed 12x, last 2026-11-21)\n",
    "3_Personal/Profile.md": "---\ntype: entity\ntitle: Profile\nstatus: active\ncategory: personal\n"
    "updated: 2026-11-18\nstale_after: never\n---\n## Key Facts\n"
    "- Lives in Lisbon; works remotely as a data engineer. (confirmed 9x, last 2026-11-22)\n",
    "2_Wiki/Concepts/Memory Pipeline.md": "---\ntype: concept\ntitle: Memory pipeline\nstatus: draft\n"
    "updated: 2026-11-10\n---\n## Overview\nDaily logs feed the vault; both feed the LanceDB index.\n",
}

MEMORY_MD = (
    "<!-- memory:generated -->\n## Profile\n- Lives in Lisbon; data engineer.\n<!-- /memory:generated -->\n\n"
    "<!-- verified: human:demo at 2026-11-01T09:00:00Z -->\n## My notes\n- My marathon is on 2027-10-10.\n"
)


def seed(settings: Settings, today: date) -> bool:
    """Write demo data unless the home already has daily logs. Returns whether it wrote."""
    if list_logs(settings.archive_dir):
        return False
    start = today - timedelta(days=13)
    for offset in range(14):
        day = start + timedelta(days=offset)
        facts = [DEMO_FACTS[(offset * 3 + k) % len(DEMO_FACTS)] for k in range(3)]
        append_facts(
            settings.archive_dir,
            f"demo{offset:04d}",
            [LogFact(text, category) for category, text in facts],
            now=datetime(day.year, day.month, day.day, 9 + offset % 8, 15, tzinfo=UTC),
        )
    for rel, text in PAGES.items():
        path = settings.notebook_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(text, encoding="utf-8")
    for name, text in (("MEMORY.md", MEMORY_MD), ("persona.md", "You are a concise, helpful assistant.\n")):
        path = settings.memory_dir / name
        if not path.exists():
            path.write_text(text, encoding="utf-8")
    return True


def main() -> int:
    os.environ.setdefault("LANCEDB_LOG", "error")
    import dagster as dg

    from memory_assets.definitions import defs

    settings = Settings.load()
    today = datetime.now(UTC).date()
    init_home(settings)
    print(
        f"memory home: {settings.home} ({'seeded demo data' if seed(settings, today) else 'existing data'})"
    )
    instance = dg.DagsterInstance.get()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    reindex = defs.resolve_job_def("reindex")
    days = [d for d, _ in list_logs(settings.archive_dir)]
    for day in days:
        result = reindex.execute_in_process(
            partition_key=day.isoformat(), instance=instance, run_config=quiet
        )
        meta = result.asset_materializations_for_node("archive_index")[0].metadata
        print(
            f"  reindex {day}: rows={meta['rows'].value} embedded={meta['embedded'].value} "
            f"(model ran on {meta['computed'].value}) "
            f"deleted={meta['deleted'].value}"
        )
    for name in ("index_files", "optimize_index", "dedup_measurement"):
        result = defs.resolve_job_def(name).execute_in_process(instance=instance, run_config=quiet)
        print(f"  {name}: {'success' if result.success else 'FAILED'}")
        if not result.success:
            return 1
    status = home_status(settings, defs.resources["memory"].store(settings))  # type: ignore[union-attr]
    print(
        json.dumps(
            {
                k: status[k]
                for k in (
                    "daily_logs",
                    "vault_pages",
                    "index_rows",
                    "index_rows_by_source_type",
                    "index_fragments",
                )
            },
            indent=2,
        )
    )
    from memory_assets.core.index.embedder import make_embedder

    query = "how often should I drink water?"
    print(f"search: {query!r}")
    store = defs.resources["memory"].store(settings)  # type: ignore[union-attr]
    for hit in search(store, query, embedder=make_embedder(settings), settings=settings, limit=3):
        print(f"  {hit.score:.3f} [{hit.source_type} {hit.source_file}] {hit.content.splitlines()[-1][:90]}")
    report = instance.get_latest_materialization_event(dg.AssetKey("dedup_report"))
    if report is not None and report.asset_materialization is not None:
        print("dedup report (also in the UI, plotted per write path and threshold):")
        print(report.asset_materialization.metadata["report"].value)  # type: ignore[union-attr]
    print("browse the runs, materialisations and checks with: make ui")
    return 0


if __name__ == "__main__":
    sys.exit(main())
