"""``make demo``: a demo memory home, indexed by the Dagster jobs on a persistent instance.

Seeds ``$MEMORY_HOME`` (only when it holds no daily logs yet) with a fortnight of daily logs
(with the repeats and paraphrases real extraction produces), a few vault pages and core files,
then runs the code location's jobs in process against ``$DAGSTER_HOME`` so the runs, the
materialisations, their metadata and the checks are there to browse with ``make ui``:
``reindex`` over every day that has a log (one run over the range), ``index_files``,
``optimize_index``, then ``dedup_measurement`` (which appends to the dedup history and writes the
analysts' HTML report, whose path it prints); on a freshly seeded home, a few legacy rows exported, then deleted
(``legacy_export``, ``legacy_apply``); the dream and the reconcile. Then it shows what the hardening guarantees: the sensors find nothing to
run on the indexed home, every invariant check passes, a search collapses repeated facts, a turn
from which no fact was extracted is found by search (the recall tier), and
three ``memory-assets reindex`` processes racing an appender leave each row exactly once.
Runs on the embedded defaults: the bundled model, no server, no API key.
"""

import json
import subprocess
import sys
import tempfile
import threading
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_assets.core.capture.daily_log import LogFact, append_facts, list_logs
from memory_assets.core.home import Home
from memory_assets.core.ops.status import home_status, init_home
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings, quiet_native_logs
from memory_assets.core.sources import TRANSCRIPT

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


# Three weeks of what a user tells the assistant: statements, restatements (which the write path
# should record as confirmations, not new lines), updates carrying a new specific (revisions),
# and small talk and questions (which yield nothing). The assistant's replies are never sources.
TRANSCRIPT_TURNS: list[str] = [
    "I live in Lisbon and I work remotely as a data engineer.",
    "What's the weather like tomorrow?",
    "I prefer metric units in all answers.",
    "My sister Ana lives in Porto.",
    "Thanks, that was helpful!",
    "I'm training for a marathon.",
    "I prefer metric units in all answers.",
    "I'm allergic to peanuts.",
    "Can you summarise this article for me?",
    "I live in Lisbon and I work remotely as a data engineer.",
    "I'm training for a marathon in October 2027.",
    "I use Dagster and LanceDB for my memory pipeline.",
    "My sister Ana lives in Porto.",
    "I prefer concise answers with code examples.",
    "I'm allergic to peanuts.",
    "I want to finish the marathon training plan by October.",
    "I use Dagster 1.13 and LanceDB 0.40 for my memory pipeline.",
    "Good morning!",
    "I prefer metric units in all answers.",
    "I moved to Berlin in 2026.",
    "I'm allergic to peanuts.",
]
# Said in the third week: no rule extracts a fact from it, so only the recall tier (the turn kept
# verbatim and indexed as a transcript row) makes it findable. The demo searches for it.
RECALL_TURN = "The smell of pine after the rain on that hike with my grandfather is what stuck with me most."
RECALL_QUERY = "what do I remember about hiking with my grandfather?"


def seed_transcripts(settings: Settings, today: date) -> bool:
    """Write three weeks of sample transcripts (one session a week) unless there are transcripts."""
    if any(settings.transcripts_dir.glob("*.jsonl")):
        return False
    settings.transcripts_dir.mkdir(parents=True, exist_ok=True)
    start = today - timedelta(days=21)
    for week in range(3):
        lines = []
        said = TRANSCRIPT_TURNS[week * 7 : week * 7 + 7] + ([RECALL_TURN] if week == 2 else [])
        for n, text in enumerate(said):
            at = datetime(start.year, start.month, start.day, 9, tzinfo=UTC) + timedelta(days=week * 7 + n)
            lines.append(json.dumps({"ts": at.isoformat(), "role": "user", "content": text}))
            reply = {"ts": (at + timedelta(seconds=5)).isoformat(), "role": "assistant", "content": "Noted."}
            lines.append(json.dumps(reply))
        (settings.transcripts_dir / f"demo-week-{week + 1}.jsonl").write_text(
            "\n".join(lines) + "\n", encoding="utf-8"
        )
    return True


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


def race(seconds_budget: float = 120) -> None:
    """Three `memory-assets reindex` processes started together on a scratch home while this one
    appends 120 fact lines across two logs; then once more. Each line must be one row."""
    from memory_assets.core.ops.check import check_one

    with tempfile.TemporaryDirectory(prefix="memory-assets-race-") as tmp:
        scratch = Settings.load(Path(tmp) / "home", env={})
        init_home(scratch)
        cmd = [sys.executable, "-m", "memory_assets.cli", "--home", str(scratch.home), "--json", "reindex"]

        def append() -> None:
            for n in range(40):
                day = datetime(2026, 1, 1 + n % 2, 9, n % 60, tzinfo=UTC)
                facts = [
                    LogFact(f"Race fact {n}.{k}: the appender wrote this while reindexes ran")
                    for k in range(3)
                ]
                append_facts(scratch.archive_dir, "racer000", facts, now=day)

        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(3)]
        writer = threading.Thread(target=append)
        writer.start()
        writer.join()
        outputs = [json.loads(p.communicate(timeout=seconds_budget)[0]) for p in procs]
        final = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        home = Home(scratch)
        store = home.store
        unique, match = check_one(home, "ids_unique"), check_one(home, "rows_match_logs")
        print(
            f"  3 reindex processes + 1 appender: 120 fact lines -> {store.count()} rows; "
            f"repaired duplicates {sum(o['repaired'] for o in [*outputs, final])}; "
            f"ids_unique {'passed' if unique.passed else 'FAILED'}, rows_match_logs "
            f"{'passed' if match.passed else 'FAILED'}"
        )


def _dedup_table(instance: object) -> str:
    import dagster as dg

    event = instance.get_latest_materialization_event(dg.AssetKey("dedup_report"))  # type: ignore[attr-defined]
    if event is None or event.asset_materialization is None:
        return "(no dedup report)"
    return str(event.asset_materialization.metadata["report"].value).split("\n\n")[0]


def _materialized(result: Any, key: str, partition: str | None = None) -> Any:
    """The metadata of the one materialisation of asset ``key`` (of ``partition``) in a run."""
    [meta] = [
        m.metadata
        for m in result.asset_materializations_for_node(key)
        if m.asset_key.to_user_string() == key and (partition is None or m.partition == partition)
    ]
    return meta


def dream_and_reconcile(settings: Settings, defs: object, instance: object, quiet: dict) -> bool:
    """The dream over every pending day (as the dream_sensor would request it, batch by batch),
    each followed by the reconcile (as reconcile_after_dream would), then a lint."""

    from memory_assets.core.ops.upkeep.look import dream_pacing
    from memory_assets.defs.partitions import day_range_tags, register_days

    dream = defs.resolve_job_def("dream")  # type: ignore[attr-defined]
    reconcile = defs.resolve_job_def("reconcile")  # type: ignore[attr-defined]
    while True:
        _, decision = dream_pacing(settings, force=True)
        if not decision.days:  # no batch to ingest or skip (idle, or a lint: run below)
            break
        register_days(instance, decision.days)  # type: ignore[arg-type]
        tags = day_range_tags(decision.days[0], decision.days[-1])
        result = dream.execute_in_process(
            instance=instance, run_config=quiet, tags=tags, raise_on_error=False
        )
        if not result.success:
            print("  dream: FAILED")
            return False
        meta = _materialized(result, "vault", tags["dagster/asset_partition_range_end"])
        print(
            f"  dream {decision.days[0]}..{decision.days[-1]}: confirm {meta['confirm'].value}, sharpen "
            f"{meta['sharpen'].value}, supersede {meta['supersede'].value}, add {meta['add'].value}; "
            f"{meta['pages_changed'].value} page(s); watermark {meta['watermark'].value}"
        )
        result = reconcile.execute_in_process(instance=instance, run_config=quiet)
        retired = _materialized(result, "superseded_retired")
        print(
            f"  reconcile: {retired['retired'].value} folded log line(s) retired, "
            f"{retired['days_reindexed'].value} day(s) reindexed, then sweep and optimize"
        )
    lint = defs.resolve_job_def("dream_lint").execute_in_process(instance=instance, run_config=quiet)  # type: ignore[attr-defined]
    print(f"  lint: {'success' if lint.success else 'FAILED'}")
    return lint.success


# Rows the assistant wrote straight into its table before the markdown tier existed: no source
# file, so no reindex can bring them back. One is also in a daily log (recorded); the others exist
# only in the index until the legacy export appends them.
LEGACY_ROWS: list[tuple[str, int]] = [  # (content, days ago)
    ("Prefers metric units in all answers", 30),
    ("Was a vegetarian for ten years before moving to Lisbon", 400),
    ("Collects vintage fountain pens, mostly Pelikan", 45),
    ("Grandmother's name was Rosa; she taught the user to bake bread", 3),
]


def seed_legacy_rows(home: Home, today: date) -> int:
    """Add ``LEGACY_ROWS`` to the index as the assistant wrote them (no source type, no source
    file). The demo plays the assistant here, a writer from before this project: it adds to the
    LanceDB table directly, which nothing in the package does (the indexer is the only writer)."""
    settings = home.settings
    table = home.store.table()
    vectors = home.embedder.embed([text for text, _ in LEGACY_ROWS])
    rows = []
    for (text, ago), vector in zip(LEGACY_ROWS, vectors, strict=True):
        when = datetime.combine(today - timedelta(days=ago), datetime.min.time(), UTC).replace(hour=20)
        rows.append(
            {
                "id": f"legacy-demo-{ago}",
                "content": text,
                "vector": [float(x) for x in vector],
                "user_id": settings.user_id,
                "metadata": json.dumps({"category": "personal"}),
                "importance": 0.5,
                "created_at": when,
                "updated_at": when,
            }
        )
    table.add(rows)
    return len(rows)


def legacy_export_and_apply(settings: Settings, defs: object, instance: object, quiet: dict) -> bool:
    """The legacy jobs: apply refuses first, the export appends the unrecorded rows to the logs,
    then the apply (confirmed in its run config) backs up and deletes them."""
    import dagster as dg

    from memory_assets.core.legacy.find import CHECK_NAME

    def run(job: str, config: dict | None = None) -> dg.ExecuteInProcessResult:
        op = {"legacy_export": "legacy_rows_exported", "legacy_apply": "legacy_rows_deleted"}[job]
        run_config = {**quiet, "ops": {op: {"config": config}}} if config else quiet
        return defs.resolve_job_def(job).execute_in_process(  # type: ignore[attr-defined]
            instance=instance, run_config=run_config, raise_on_error=False
        )

    def checked(result: dg.ExecuteInProcessResult) -> str:
        for event in result.all_events:
            data = event.event_specific_data
            if event.event_type_value == "ASSET_CHECK_EVALUATION" and data.check_name == CHECK_NAME:  # type: ignore[union-attr]
                return f"{CHECK_NAME} {'passed' if data.passed else 'FAILED'}: {data.description}"  # type: ignore[union-attr]
        return f"{CHECK_NAME}: not evaluated"

    silent = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    refused = defs.resolve_job_def("legacy_apply").execute_in_process(  # type: ignore[attr-defined]
        instance=instance,
        run_config={**silent, "ops": {"legacy_rows_deleted": {"config": {"confirm": True}}}},
        raise_on_error=False,
    )  # the refusal is expected here: its error stays in the run's log (make ui), not on the console
    print(f"  legacy_apply before the export: {'refused (as it must)' if not refused.success else 'RAN'}")
    exported = run("legacy_export")
    meta = _materialized(exported, "legacy_rows_exported")
    print(
        f"  legacy_export: {meta['legacy_rows'].value} legacy rows, {meta['already_recorded'].value} already "
        f"recorded, {meta['exported'].value} appended to the daily logs ({meta['dated_today'].value} to "
        f"today's log with their date as a tag); {checked(exported)}"
    )
    dry = defs.resolve_job_def("legacy_apply").execute_in_process(  # type: ignore[attr-defined]
        instance=instance, run_config=silent, raise_on_error=False
    )  # reports only (an observation of legacy_rows_deleted); its warning says how to confirm
    print(f"  legacy_apply without confirm: {'reported only, nothing deleted' if dry.success else 'FAILED'}")
    done = run("legacy_apply", {"confirm": True})
    if not done.success:
        print("  legacy_apply: FAILED")
        return False
    applied = _materialized(done, "legacy_rows_deleted")
    print(
        f"  legacy_apply (confirm: true): backed up as {applied['backup'].value}, deleted "
        f"{applied['deleted'].value}; undo with `{applied['restore'].value}`; {checked(done)}"
    )
    return refused.success is False and exported.success and dry.success


PRIVATE = "My passport number is XK7741239 and I live in Lisbon."
PRIVATE_NUMBER = "XK7741239"


def forget_and_erase(home: Home, today: date) -> bool:
    """A person's two requests: forget (hidden from everything served, the markdown keeps it) and
    erase (every byte gone), each with its answer; the legacy backup goes first (erase cannot
    rewrite a copy of the index and says so)."""
    from memory_assets.core.ops.forget import Target, erase, forget
    from memory_assets.core.ops.legacy import forget_legacy_backup, legacy_backups
    from memory_assets.core.ops.write import write_turn

    settings = home.settings
    print("forget and erase (a person's right):")
    write_turn(home, PRIVATE, chat_id="demo-privacy")
    hidden = forget(home, Target(text=PRIVATE_NUMBER))
    shown = [
        h
        for h in search(home.store, "passport number", embedder=home.embedder, settings=settings)
        if PRIVATE_NUMBER in h.content
    ]
    print(
        f"  forget {PRIVATE_NUMBER!r}: {hidden['rows_deleted']} row(s) hidden, {hidden['turns_hidden']} turn(s), "
        f"{hidden['memory_md_lines_removed']} MEMORY.md line(s); search now serves it {len(shown)} time(s); "
        "the daily log still holds it (unforget brings it back)"
    )
    for backup in legacy_backups(home):
        forget_legacy_backup(home, backup["backup"], remove_copy=True)
        print(f"  legacy backup {backup['backup']} removed first (erase cannot rewrite a copy of the index)")
    plan = erase(home, Target(text=PRIVATE_NUMBER))
    print(f"  erase {PRIVATE_NUMBER!r}, the plan (nothing changed yet): {plan['would_remove']}")
    receipt = erase(home, Target(text=PRIVATE_NUMBER), confirm=True)
    places = sum(len(v) for v in receipt["changed"].values())
    print(
        f"  erase --yes: receipt {receipt['id']}: {places} file(s) rewritten, index versions pruned, "
        f"complete={receipt['complete']} (kept without the text in notebook/.state/erasures.jsonl)"
    )
    left = [
        p
        for p in settings.home.rglob("*")
        if p.is_file() and PRIVATE_NUMBER.lower().encode() in p.read_bytes().lower()
    ]
    print(f"  files under the home that still hold it: {len(left)}")
    return receipt["complete"] and not left and not shown


def main() -> int:
    quiet_native_logs()
    settings = Settings.load()
    today = datetime.now(UTC).date()
    init_home(settings)
    seeded = seed(settings, today)
    said = seed_transcripts(settings, today)
    import dagster as dg

    from memory_assets.core.ops.check import check_home
    from memory_assets.definitions import defs
    from memory_assets.defs.index.sensors import daily_log_sensor, vault_sensor
    from memory_assets.defs.partitions import day_range_tags, register_days
    from memory_assets.defs.write_path.sensors import transcripts_sensor

    print(f"memory home: {settings.home} ({'seeded demo data' if seeded else 'existing data'})")
    instance = dg.DagsterInstance.get()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    reindex = defs.resolve_job_def("reindex")
    days = [d.isoformat() for d, _ in list_logs(settings.archive_dir)]
    # One partition per day that has a log (the daily_log_sensor adds them under `make ui`), and
    # one run over all of them, as a backfill of archive_index runs a range.
    register_days(instance, days)
    result = reindex.execute_in_process(
        instance=instance, run_config=quiet, tags=day_range_tags(days[0], days[-1])
    )
    for day in days:
        meta = _materialized(result, "archive_index", day)
        print(
            f"  reindex {day}: rows={meta['rows'].value} embedded={meta['embedded'].value} "
            f"(model ran on {meta['computed'].value}) "
            f"deleted={meta['deleted'].value}"
        )
    result = defs.resolve_job_def("write_path").execute_in_process(instance=instance, run_config=quiet)
    meta = _materialized(result, "ingested_turns")
    print(
        f"  write_path: {meta['turns'].value} transcript turns -> {meta['new'].value} new facts, "
        f"{meta['revision'].value} revisions, {meta['confirmation'].value} confirmations "
        f"(recorded in .state/confirmations.jsonl, not logged again)"
    )
    for name in ("index_files", "optimize_index", "dedup_measurement"):
        result = defs.resolve_job_def(name).execute_in_process(instance=instance, run_config=quiet)
        print(f"  {name}: {'success' if result.success else 'FAILED'}")
        if not result.success:
            return 1
    home = Home(settings)
    status = home_status(settings, home.store)
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
    query = "how often should I drink water?"
    print(f"search: {query!r}")
    store, embedder = home.store, home.embedder
    for hit in search(store, query, SearchFilters(limit=3), embedder=embedder, settings=settings):
        repeats = f" (+{hit.duplicates} near-duplicate rows collapsed)" if hit.duplicates else ""
        print(
            f"  {hit.score:.3f} [{hit.source_type} {hit.source_file}] {hit.content.splitlines()[-1][:90]}{repeats}"
        )
    # Dates in questions and context: the facts of the named day come first (date_match), each
    # with its neighbouring lines from the same conversation block.
    asked = today - timedelta(days=5)
    query_day = f"what did I mention on {asked.day} {asked:%B}?"
    print(f"search with --context 1: {query_day!r}")
    for hit in search(
        store, query_day, SearchFilters(limit=3, context=1), embedder=embedder, settings=settings
    ):
        print(
            f"  {hit.score:.3f} [{hit.source_type} {hit.source_file}{' date match' if hit.date_match else ''}] "
            f"{hit.content[:80]}"
        )
        for line in hit.context:
            print(f"           context {line.offset:+d}: {line.content[:80]}")
    # The recall tier: a turn no rule extracted a fact from is kept verbatim and indexed, so what
    # was said stays findable.
    print(f"search, the recall tier (a turn from which no fact was extracted): {RECALL_QUERY!r}")
    recalled = search(store, RECALL_QUERY, SearchFilters(limit=3), embedder=embedder, settings=settings)
    for hit in recalled:
        print(f"  {hit.score:.3f} [{hit.source_type} {hit.source_file}] {hit.content[:90]}")
    if said and not any(h.source_type == TRANSCRIPT and h.content == RECALL_TURN for h in recalled):
        print("  the turn was NOT found: the recall tier is broken")
        return 1
    if seeded:
        print(
            f"legacy rows (the assistant's, from before the markdown tier): {seed_legacy_rows(home, today)} seeded"
        )
        if not legacy_export_and_apply(settings, defs, instance, quiet):
            return 1
    before = _dedup_table(instance)
    print("dedup report before the dream (also in the UI, plotted per write path and threshold):")
    print(before)
    if not dream_and_reconcile(settings, defs, instance, quiet):
        return 1
    result = defs.resolve_job_def("dedup_measurement").execute_in_process(instance=instance, run_config=quiet)
    print("dedup report after the dream and the reconcile:")
    print(_dedup_table(instance))
    history = _materialized(result, "dedup_history")
    report_html = history["report_html"].value
    print(
        f"the analysts' dedup report ({history['measurements'].value} measurements; one self-contained "
        f"HTML file, opens offline): {report_html}"
    )
    for hit in search(store, query, SearchFilters(limit=3), embedder=embedder, settings=settings):
        print(f"  {hit.score:.3f} [{hit.source_type} {hit.source_file}] {hit.content.splitlines()[0][:100]}")
    print("sensors on the indexed home (a fresh cursor, as on the first `make ui`):")
    for sensor in (daily_log_sensor, vault_sensor, transcripts_sensor):
        with dg.build_sensor_context(
            instance=instance, resources={"memory": defs.resources["memory"]}
        ) as context:
            result = sensor(context)
        print(f"  {sensor.name}: {len(result.run_requests or [])} runs requested")
    print("invariant checks (`memory-assets check`, also asset checks in the UI):")
    outcomes = check_home(home)
    for outcome in outcomes:
        print(f"  {'passed' if outcome.passed else 'FAILED'}  {outcome.name}: {outcome.summary}")
    if not forget_and_erase(home, today):
        return 1
    print("one writer per file:")
    race()
    print("browse the runs, materialisations and checks with: make ui")
    print(f"open the dedup report: {report_html}")
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
