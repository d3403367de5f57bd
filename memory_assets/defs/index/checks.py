"""Invariants of the whole table, of the daily logs and of the transcripts, as asset checks: thin wrappers over
``core/ops/check.check_one`` (the audit's checks ``memory-assets check`` runs, one at a time). Each can fail, and says
why in its description and in markdown tables, text-free (``defs/text_free.py``): rows are named by
id, file and line, a person's words by a keyed tag."""

import dagster as dg

from memory_assets.core.audit.checks import PROBE_MAX_P50_MS, PROBE_MIN_FOUND, PROBE_ROWS
from memory_assets.core.home import Home
from memory_assets.core.index.store import MAX_FRAGMENTS, MAX_VERSIONS
from memory_assets.core.ops.check import check_one
from memory_assets.core.outcome import CheckOutcome
from memory_assets.core.settings import Settings
from memory_assets.defs.index.assets import archival_memories
from memory_assets.defs.index.external import daily_logs
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.text_free import TextFree


def check_result(settings: Settings, outcome: CheckOutcome, table: str | None = None) -> dg.AssetCheckResult:
    """The outcome as a check result, text-free (``defs/text_free.py``): its numbers, its problems
    (each with the fix) and, under ``table``, its details as a markdown table."""
    return TextFree(settings.state_dir).check_result(outcome, table)


@dg.asset_check(
    asset=archival_memories,
    description="Row ids are unique: they are deterministic (source, content, occurrence), so a copy "
    "means a write that bypassed the indexer's locks. Fix: `memory-assets reindex`.",
)
def ids_unique(memory: MemoryHomeResource) -> dg.AssetCheckResult:
    return check_result(memory.settings(), check_one(memory.open(), "ids_unique"), "duplicates")


def _table_check(name: str, details: str, description: str) -> dg.AssetChecksDefinition:
    """The check ``name`` of ``archival_memories``: the audit's check of that name over the home,
    its details as the markdown table ``details``."""

    @dg.asset_check(asset=archival_memories, name=name, description=description)
    def table_check(memory: MemoryHomeResource) -> dg.AssetCheckResult:
        home = memory.open()
        return check_result(home.settings, check_one(home, name), details)

    return table_check


rows_match_logs = _table_check(
    "rows_match_logs",
    "days",
    "For every daily log (and every archive file the table still holds), the stored "
    "archive_log rows are exactly the planned ones: parsed facts minus tombstones and the lines "
    "folded into vault pages. Fix: `memory-assets reindex --full`, or materialise archive_index for the day.",
)

facts_accounted_for = _table_check(
    "facts_accounted_for",
    "stranded_lines",
    "No written fact is stranded: every fact line of every daily log is indexed, folded "
    "into a vault page that holds it (the fold ledger names the page), or forgotten by a person. "
    "Each stranded line is named with how it got there. Fix: `memory-assets restore-stranded` "
    "(or `memory-assets reindex` for a missing row).",
)

rows_match_transcripts = _table_check(
    "rows_match_transcripts",
    "transcripts",
    "For every transcript (and every transcript the table still holds rows of), the stored "
    "transcript rows are exactly the planned ones: one a user message (a long one in windows), minus the "
    "turns a person forgot and those past MEMORY_TRANSCRIPT_RETENTION_DAYS; none missing, unexpected or "
    "stale. Fix: `memory-assets reindex --full`, or materialise transcript_index for the transcript.",
)

turns_accounted_for = _table_check(
    "turns_accounted_for",
    "stranded_turns",
    "What was said stays findable: every user turn of every transcript is indexed, forgotten "
    "by a person, past the retention (MEMORY_TRANSCRIPT_RETENTION_DAYS), or empty; a transcript that "
    "cannot be read is named in a warning. Each stranded turn is named (file, line, words). Fix: "
    "`memory-assets reindex`.",
)

no_tombstoned_content = _table_check(
    "no_tombstoned_content",
    "tombstoned",
    "No row's normalised content is tombstoned, and no transcript row holds a turn a "
    "person's tombstone hides (a forgotten text it holds, or its fact, chat or day forgotten); every "
    "tombstone write is paired with a reindex. Fix: `memory-assets reindex`.",
)


@dg.asset_check(
    asset=archival_memories,
    description=f"The table stays within {MAX_FRAGMENTS} fragments and {MAX_VERSIONS} kept versions older than "
    "the retention (MEMORY_VERSION_RETENTION_DAYS; younger ones are kept by design) "
    "(reads slow down past them). Fix: `memory-assets optimize`, or materialise archival_memories.",
)
def table_bounded(memory: MemoryHomeResource) -> dg.AssetCheckResult:
    home = memory.open()
    return check_result(home.settings, check_one(home, "table_bounded"))


@dg.asset_check(
    asset=daily_logs.key,
    description="Daily logs are append-only: no log's earlier lines changed since the ledger "
    "(memory/.log_ledger.json) last saw it. Appends pass and extend the ledger; an edit keeps failing "
    "until the text is restored or accepted (`memory-assets check --accept-log FILE`).",
)
def logs_append_only(memory: MemoryHomeResource) -> dg.AssetCheckResult:
    home = Home(memory.settings())  # the check reads the logs and their ledger, not the table
    return check_result(home.settings, check_one(home, "logs_append_only"), "changes")


@dg.asset_check(
    asset=archival_memories,
    description=f"Retrieval works end to end: {PROBE_ROWS} rows spread over the table, each "
    "searched for by its own words (embedded by the configured model), come back in the top 10 "
    f"(itself or the hit it collapsed into), at least {PROBE_MIN_FOUND:.0%} of them; a warning "
    f"when those searches' p50 passes {PROBE_MAX_P50_MS:.0f} ms. Each evaluation records the "
    "share found and the searches' p50 and p95. Fix: `memory-assets reindex --rebuild` when rows "
    "are not found, `memory-assets optimize` when slow.",
)
def search_finds_rows(memory: MemoryHomeResource, embedder: EmbedderResource) -> dg.AssetCheckResult:
    home = memory.open(embedder)
    return check_result(home.settings, check_one(home, "search_finds_rows"), "misses")


INDEX_CHECKS = [
    ids_unique,
    rows_match_logs,
    rows_match_transcripts,
    facts_accounted_for,
    turns_accounted_for,
    no_tombstoned_content,
    table_bounded,
    search_finds_rows,
    logs_append_only,
]
