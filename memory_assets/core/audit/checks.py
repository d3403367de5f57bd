"""The invariant checks (design §7), as plain functions shared by the CLI and the asset checks.

Each returns a ``CheckOutcome`` (``core/outcome.py``): whether it passed, how severe a failure is,
a one-line summary, problem lines that each name the file or day and the fix, numbers for
metadata, and ``details`` (the rows of a table, which the Dagster checks render as markdown).

* ``logs_append_only``: no daily log's earlier lines changed (the ledger, ``capture/ledger.py``).
* ``rows_match_logs``: every daily log's ``archive_log`` rows are exactly its planned rows.
* ``rows_match_transcripts``: every transcript's ``transcript`` rows are exactly its planned rows,
  none stale.
* ``facts_accounted_for`` (``facts_accounted.py``): every fact line is indexed, folded into a page
  that holds it, or forgotten by a person: none is stranded.
* ``turns_accounted_for`` (``turns_accounted.py``): every user turn of every transcript is indexed,
  forgotten by a person or expired by the retention: none is stranded.
* ``days_consolidated`` (a warning): no day the dream skipped is still waiting; each one left is
  named with why it was skipped and when the dream tries it again.
* ``ids_unique``: no id is stored twice.
* ``no_tombstoned_content``: nothing served holds a tombstoned text: no row (whole, or holding a
  person's forgotten text), no transcript row of a hidden turn, no line of MEMORY.md's generated
  zone, no kept candidate of the MEMORY.md refresh.
* ``table_bounded``: fragments and versions stay within the store's bounds.
* ``search_finds_rows``: a sample of rows, each searched for by its own words, comes back in the
  top 10, and those searches stay within a latency bound (retrieval works end to end).

The checks read the table and never write it; an assistant-era (unmigrated) table is read as it
is. A check that needs the migrated columns fails with a problem naming ``memory-assets migrate``
rather than raising. ``logs_append_only`` writes the ledger (only ever extending it).
"""

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memory_assets.core.audit.facts_accounted import facts_accounted_for
from memory_assets.core.audit.turns_accounted import turns_accounted_for
from memory_assets.core.capture.ledger import (
    LedgerVersionError,
    LogChange,
    ledger_path,
    observe,
    read_ledger,
    verify,
)
from memory_assets.core.capture.transcripts import list_transcripts, read_turns
from memory_assets.core.home import Home
from memory_assets.core.index.best_facts import CANDIDATES_STATE, kept_candidate_texts
from memory_assets.core.index.rows import FilePlan
from memory_assets.core.index.store import (
    MAX_FRAGMENTS,
    MAX_VERSIONS,
    SCALAR_COLUMNS,
    LegacyTableError,
    MemoryStore,
    id_in,
    quote,
)
from memory_assets.core.knowledge.dream_state import SKIPPED_RETRY_AFTER, UNKNOWN_WHY, load_dream_state
from memory_assets.core.knowledge.memory_md import read_zones
from memory_assets.core.knowledge.tombstones import Tombstones, read_tombstones
from memory_assets.core.models.embedder import TextEmbedder
from memory_assets.core.outcome import CheckOutcome, capped
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.ranking import DUPLICATE_COSINE
from memory_assets.core.search.retrieval import search
from memory_assets.core.search.turns import turn_identity
from memory_assets.core.settings import Settings
from memory_assets.core.sources import ARCHIVE, CORE_FILE, LEGACY_SOURCE_TYPE, NOTEBOOK, TRANSCRIPT, IndexKey
from memory_assets.core.text import json_object

EXCERPT_CHARS = 80
REINDEX_FULL = "run `memory-assets reindex --full`, which diffs every file against the table"
PROBE_ROWS = 20  # rows search_finds_rows searches for
PROBE_MIN_FOUND = 0.9  # the share of them that must come back in the top 10
PROBE_MAX_P50_MS = 1000.0  # the probe searches' p50 bound (a warning past it)
PROBE_QUERY_CHARS = 500


def _excerpt(text: str | None) -> str:
    value = " ".join((text or "").split())
    return value if len(value) <= EXCERPT_CHARS else value[: EXCERPT_CHARS - 1] + "…"


def _table_name(store: MemoryStore) -> str:
    return f"index table {store.table_name} at {store.uri}"


def _needs_migration(name: str, exc: LegacyTableError) -> CheckOutcome:
    return CheckOutcome(
        name,
        passed=False,
        severity="error",
        summary="the index table is still in the assistant's format; this check needs it migrated",
        problems=[str(exc)],  # names the table and `memory-assets migrate`
        metadata={"legacy_table": 1},
    )


# -- reading the table ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Row:
    id: str
    source_type: str | None
    source_file: str | None
    content: str | None = None


def _rows(store: MemoryStore, content: bool) -> tuple[list[_Row], bool]:
    """Every row's id and source (and content), and whether the table is assistant-era. On such a
    table the source comes from each row's metadata JSON; nothing is written either way."""
    table = store.table()
    if table is None:
        return [], False
    names = table.schema.names
    extra = ["content"] if content else []
    if "source_type" in names:
        data = store.scan(["id", "source_type", "source_file", *extra]).to_pydict()
        types, files = data["source_type"], data["source_file"]
        legacy = False
    else:
        data = store.scan(["id", *(["metadata"] if "metadata" in names else []), *extra]).to_pydict()
        meta = [json_object(m) for m in data.get("metadata", [None] * len(data["id"]))]
        types = [m.get("source_type") if isinstance(m.get("source_type"), str) else None for m in meta]
        files = [m.get("source_file") if isinstance(m.get("source_file"), str) else None for m in meta]
        legacy = True
    texts = data["content"] if content else [None] * len(data["id"])
    rows = [_Row(*values) for values in zip(data["id"], types, files, texts, strict=True)]
    return rows, legacy


def _source(source_type: str | None, source_file: str | None) -> str:
    """Where a row comes from, as a path in the home (or that no markdown file holds it)."""
    if source_file:
        folder = {
            ARCHIVE: "archive/",
            NOTEBOOK: "notebook/",
            CORE_FILE: "memory/",
            TRANSCRIPT: "transcripts/",
        }.get(source_type or "", "")
        return f"{folder}{source_file}" if folder else f"{source_type or LEGACY_SOURCE_TYPE} {source_file}"
    return f"{source_type or LEGACY_SOURCE_TYPE} row (no source file)"


_MIGRATES = {True: " (it migrates the table from the assistant's format first)", False: ""}
_UNOWNED = (
    "no markdown file holds these rows, so no reindex {what}: export the legacy rows to the daily logs "
    "(`memory-assets migrate` first if the table is still in the assistant's format), then reindex; "
    "rows already exported go with `memory-assets legacy apply`"
)


def _owned(row: _Row) -> bool:
    """Whether a reindex owns (and so can repair) a row: it names a file of an indexed type."""
    return bool(row.source_file) and row.source_type in (ARCHIVE, NOTEBOOK, CORE_FILE, TRANSCRIPT)


# -- the checks ----------------------------------------------------------------------------------
def ids_unique(store: MemoryStore) -> CheckOutcome:
    """No id is stored twice (ids are deterministic, so a copy means an unlocked concurrent write)."""
    name = "ids_unique"
    rows, legacy = _rows(store, content=False)
    by_id: dict[str, list[_Row]] = defaultdict(list)
    for row in rows:
        by_id[row.id].append(row)
    dupes = {row_id: copies for row_id, copies in by_id.items() if len(copies) > 1}
    problems: list[str] = []
    details: list[dict[str, str | int]] = []
    for row_id, copies in sorted(dupes.items()):
        sources = sorted({_source(r.source_type, r.source_file) for r in copies})
        if any(_owned(r) for r in copies):
            fix = "run `memory-assets reindex`, which deletes every copy and writes one" + _MIGRATES[legacy]
        else:
            fix = _UNOWNED.format(what="repairs it")
        problems.append(f"id {row_id} is stored {len(copies)} times ({', '.join(sources)}); {fix}")
        details.append({"id": row_id, "copies": len(copies), "source": ", ".join(sources)})
    extra = sum(len(c) - 1 for c in dupes.values())
    return CheckOutcome(
        name,
        passed=not dupes,
        severity="error",
        summary=f"{len(rows)} row(s), every id unique"
        if not dupes
        else f"{len(dupes)} id(s) stored more than once ({extra} extra copies)",
        problems=capped(problems),
        metadata={"rows": len(rows), "duplicate_ids": len(dupes), "extra_copies": extra},
        details=details,
    )


def rows_match_logs(settings: Settings, store: MemoryStore) -> CheckOutcome:
    """For every daily log, and every archive file the table still holds, the stored
    ``archive_log`` ids equal the planned ids (facts minus tombstones and the lines folded into pages)."""
    name = "rows_match_logs"
    try:
        store.require_current(f"the {name} check")
    except LegacyTableError as exc:
        return _needs_migration(name, exc)
    data = store.scan(
        ["id", "source_type", "source_file"],
        where=f"source_type = {quote(ARCHIVE)} AND user_id = {quote(store.user_id)}",
    ).to_pydict()
    stored: dict[str, set[str]] = defaultdict(set)
    for row_id, source_type, source_file in zip(
        data["id"], data["source_type"], data["source_file"], strict=True
    ):
        if source_type == ARCHIVE and source_file:
            stored[source_file].add(row_id)
    indexer = Home(settings, store=store).indexer_without_embedder()
    plans = [
        p
        for p in indexer.plan_everything(extra_keys={str(IndexKey.for_log(f)) for f in stored})
        if p.source_type == ARCHIVE
    ]
    problems: list[str] = []
    details: list[dict[str, str | int]] = []
    unreadable: list[str] = []  # logs that cannot be read: their rows cannot be compared, so warned
    planned_total = missing_total = unexpected_total = 0
    for plan in sorted(plans, key=lambda p: p.filename):
        got = stored.pop(plan.filename, set())
        if plan.unreadable:
            unreadable += plan.warnings
            continue
        expected = {row.id for row in plan.rows}
        missing, unexpected = expected - got, got - expected
        planned_total += len(expected)
        if not missing and not unexpected:
            continue
        missing_total += len(missing)
        unexpected_total += len(unexpected)
        day = plan.filename.removesuffix(".md")
        why = ""
        if not plan.exists:
            why = " (the log no longer exists)"
        elif plan.folded:
            why = f" ({plan.folded} of its fact line(s) are folded into vault pages, so they should have no rows)"
        problems.append(
            f"{day} (archive/{plan.filename}): {len(missing)} planned row(s) missing from the index, "
            f"{len(unexpected)} unexpected{why}; {REINDEX_FULL} (or materialise archive_index for {day})"
        )
        details.append(
            {
                "day": day,
                "planned": len(expected),
                "stored": len(got),
                "missing": len(missing),
                "unexpected": len(unexpected),
            }
        )
    for filename, ids in sorted(stored.items()):  # archive rows of a file no daily log can be
        unexpected_total += len(ids)
        problems.append(
            f"archive_log rows name {filename!r}, which is not a daily log name (YYYY-MM-DD.md): "
            f"{len(ids)} unexpected row(s) that no reindex owns; they were written by another tool, "
            "export them to a daily log (or delete them) by hand"
        )
        details.append(
            {"day": filename, "planned": 0, "stored": len(ids), "missing": 0, "unexpected": len(ids)}
        )
    stored_total = len(data["id"])
    return CheckOutcome(
        name,
        passed=not problems,
        severity="error",
        summary=f"{len(plans)} daily log(s) match their {planned_total} row(s)"
        if not problems
        else f"{len(details)} day(s) disagree with the index: {missing_total} row(s) missing, "
        f"{unexpected_total} unexpected",
        problems=capped(problems),
        metadata={
            "logs": len(plans),
            "planned_rows": planned_total,
            "stored_rows": stored_total,
            "days_mismatched": len(details),
            "missing_rows": missing_total,
            "unexpected_rows": unexpected_total,
        },
        details=details,
        warnings=unreadable,
    )


def _stored_transcript_rows(store: MemoryStore) -> dict[str, dict[str, tuple[object, ...]]]:
    """Every stored transcript row's scalars (what the diff compares), by file then id."""
    data = store.scan(
        ["id", *SCALAR_COLUMNS],
        where=f"source_type = {quote(TRANSCRIPT)} AND user_id = {quote(store.user_id)}",
    ).to_pydict()
    stored: dict[str, dict[str, tuple[object, ...]]] = defaultdict(dict)
    for i, row_id in enumerate(data["id"]):
        values = [data[c][i] for c in SCALAR_COLUMNS]
        scalars = tuple(
            round(v, 6) if c == "importance" and v is not None else v
            for c, v in zip(SCALAR_COLUMNS, values, strict=True)
        )
        stored[str(data["source_file"][i])][row_id] = scalars
    return stored


def rows_match_transcripts(
    settings: Settings, store: MemoryStore, files: Iterable[str] | None = None
) -> CheckOutcome:
    """For every transcript the recall tier indexes (``transcripts/*.jsonl``, ``captured/*.jsonl``)
    and every transcript the table still holds rows of, the stored ``transcript`` rows are exactly
    the planned ones (``index/rows.py``: one a user message, a long one in windows, minus the turns
    a person forgot and those past the retention): none missing, none unexpected, and none stale
    (stored under a planned id with another content, date, chat, line or importance than the plan
    gives). ``files``: only these transcripts (paths under ``transcripts/``), as a run of
    ``transcript_index`` checks the files it wrote."""
    name = "rows_match_transcripts"
    try:
        store.require_current(f"the {name} check")
    except LegacyTableError as exc:
        return _needs_migration(name, exc)
    stored = _stored_transcript_rows(store)
    indexer = Home(settings, store=store).indexer_without_embedder()
    if files is None:
        rels = sorted({rel for rel, _ in list_transcripts(settings.transcripts_dir)} | set(stored))
    else:
        rels = sorted(set(files))
    tombs = indexer.tombstones()
    plans: list[FilePlan] = [indexer.plan_transcript(rel, tombs) for rel in rels]
    problems: list[str] = []
    details: list[dict[str, str | int]] = []
    unreadable: list[str] = []
    planned_total = stored_total = missing_total = unexpected_total = stale_total = 0
    for plan in plans:
        got = stored.get(plan.filename, {})
        stored_total += len(got)
        if plan.unreadable:  # its rows stay as they were until it can be read: not compared
            unreadable += plan.warnings
            continue
        expected = {row.id: row.scalars() for row in plan.rows}
        missing = expected.keys() - got.keys()
        unexpected = got.keys() - expected.keys()
        stale = [i for i in expected.keys() & got.keys() if got[i] != expected[i]]
        planned_total += len(expected)
        if not missing and not unexpected and not stale:
            continue
        missing_total += len(missing)
        unexpected_total += len(unexpected)
        stale_total += len(stale)
        why = "" if plan.exists else " (the transcript no longer exists, so its rows must go)"
        problems.append(
            f"transcripts/{plan.filename}: {len(missing)} planned row(s) missing from the index, "
            f"{len(unexpected)} unexpected, {len(stale)} stale{why}; {REINDEX_FULL} (or materialise "
            f"transcript_index with files [{IndexKey.for_transcript(plan.filename)}])"
        )
        details.append(
            {
                "transcript": plan.filename,
                "planned": len(expected),
                "stored": len(got),
                "missing": len(missing),
                "unexpected": len(unexpected),
                "stale": len(stale),
            }
        )
    checked = sum(1 for p in plans if p.exists)
    return CheckOutcome(
        name,
        passed=not problems,
        severity="error",
        summary=f"{checked} transcript(s) match their {planned_total} row(s)"
        if not problems
        else f"{len(details)} transcript(s) disagree with the index: {missing_total} row(s) missing, "
        f"{unexpected_total} unexpected, {stale_total} stale",
        problems=capped(problems),
        metadata={
            "transcripts": checked,
            "planned_rows": planned_total,
            "stored_rows": stored_total,
            "transcripts_mismatched": len(details),
            "missing_rows": missing_total,
            "unexpected_rows": unexpected_total,
            "stale_rows": stale_total,
            "unreadable_transcripts": len(unreadable),
        },
        details=details,
        warnings=unreadable,
    )


def _turn_texts(settings: Settings, store: MemoryStore) -> dict[str, str]:
    """Each stored transcript row's whole turn (the user's message as its file holds it now), by
    row id: a row of a long message holds one window, and a turn is hidden by its whole text."""
    data = store.scan(
        ["id", "source_file", "metadata"],
        where=f"source_type = {quote(TRANSCRIPT)} AND user_id = {quote(store.user_id)}",
    ).to_pydict()
    lines: dict[str, dict[str, object]] = defaultdict(dict)
    for row_id, rel, metadata in zip(data["id"], data["source_file"], data["metadata"], strict=True):
        if rel:
            lines[rel][row_id] = json_object(metadata).get("line")
    out: dict[str, str] = {}
    root = settings.transcripts_dir
    for rel, ids in lines.items():
        path = root / rel
        if ".." in Path(rel).parts or not path.is_file():
            continue
        try:
            said = {t.line: t.user for t in read_turns(path, cap=None).turns}
        except OSError:  # rows_match_transcripts and turns_accounted_for report an unreadable file
            continue
        out.update(
            {row_id: said[line] for row_id, line in ids.items() if isinstance(line, int) and line in said}
        )
    return out


def _hidden(row: _Row, tombs: Tombstones, turns: dict[str, str]) -> bool:
    """Whether a tombstone hides a row: a transcript row by the turn rules (a person's forgotten
    text it holds, or its whole turn forgotten; never the reconcile's retirements), any other row
    by its normalised content."""
    if row.content is None:
        return False
    if row.source_type == TRANSCRIPT:
        whole = turns.get(row.id)
        return tombs.hides_turn(row.content) or (whole is not None and tombs.hides_turn(whole))
    return tombs.hides(row.content)


def _forgotten_served(settings: Settings, tombs: Tombstones) -> list[str]:
    """The served places besides the rows that hold a forgotten or erased text, each named by its
    file and line (never by the text): MEMORY.md's generated zone (in every prompt), and the
    per-turn refresh's kept candidates (what its next write reads)."""
    problems: list[str] = []
    journal = settings.erase_journal_path
    if journal.exists():
        problems.append(
            f"notebook/.state/{journal.name}: an erase was started and not finished (killed, or the disk "
            "filled): what it erases may still be in files and served. Fix: run `memory-assets erase --resume`"
        )
    if not tombs:
        return problems
    view = read_zones(settings.memory_md_path)
    if view.generated:
        lines = [
            n
            for n, line in enumerate(view.generated.split("\n"), start=1)
            if line.strip() and tombs.line_hidden(line)
        ]
        if lines:
            problems.append(
                f"memory/MEMORY.md: {len(lines)} line(s) of the generated zone (its line(s) "
                f"{', '.join(map(str, lines[:10]))}) hold a forgotten text, and the file is in every prompt; "
                "fix: run `memory-assets forget` again with that text (it rewrites the zone at once)"
            )
    # A person's forgotten or erased text (as in the zone above): a text the reconcile retired
    # (folded into a page) is no person's, and the candidates are keyed on the tombstones: the
    # next refresh reads the table again.
    held = [n for n, text in kept_candidate_texts(settings.state_dir) if tombs.line_hidden(text)]
    if held:
        problems.append(
            f"notebook/.state/{CANDIDATES_STATE}: {len(held)} kept candidate(s) of the MEMORY.md refresh "
            "hold a forgotten text; fix: delete the file (a cache: the next refresh reads the index)"
        )
    return problems


def no_tombstoned_content(settings: Settings, store: MemoryStore) -> CheckOutcome:
    """Nothing served holds a tombstoned text: no row's normalised content is tombstoned or holds a
    person's forgotten (or an erased) text (every tombstone write is paired with a reindex), no
    transcript row holds a turn a person's tombstone hides (``Tombstones.hides_turn``: a
    forgotten text it holds, or its whole turn, by a fact, a chat or a day forgotten), and neither
    MEMORY.md's generated zone nor the refresh's kept candidates hold one (``_forgotten_served``)."""
    name = "no_tombstoned_content"
    tombs = read_tombstones(settings.tombstones_path)
    rows, legacy = _rows(store, content=True) if len(tombs) else ([], store.is_legacy())
    has_turns = any(r.source_type == TRANSCRIPT for r in rows)
    turns = _turn_texts(settings, store) if has_turns and not legacy else {}
    offending = [r for r in rows if _hidden(r, tombs, turns)]
    by_source: dict[str, list[_Row]] = defaultdict(list)
    for row in offending:
        by_source[_source(row.source_type, row.source_file)].append(row)
    problems: list[str] = []
    for source, found in sorted(by_source.items()):
        if all(_owned(r) for r in found):
            fix = "run `memory-assets reindex`, which removes them" + _MIGRATES[legacy]
        else:
            fix = _UNOWNED.format(what="removes them")
        problems.append(
            f"{source}: {len(found)} row(s) hold tombstoned content ({_excerpt(found[0].content)!r}); {fix}"
        )
    details: list[dict[str, str | int]] = [
        {"id": r.id, "source": _source(r.source_type, r.source_file), "content": _excerpt(r.content)}
        for r in offending
    ]
    served = _forgotten_served(settings, tombs)
    problems += served
    failed = bool(offending or served)
    return CheckOutcome(
        name,
        passed=not failed,
        severity="error",
        summary=f"nothing served holds any of the {len(tombs)} tombstoned text(s)"
        if not failed
        else f"{len(offending)} row(s) in {len(by_source)} source(s) and {len(served)} other served "
        "place(s) hold tombstoned content",
        problems=capped(problems),
        metadata={
            "tombstones": len(tombs),
            "rows": len(rows),
            "transcript_rows": sum(1 for r in rows if r.source_type == TRANSCRIPT),
            "tombstoned_rows": len(offending),
            "served_places": len(served),
        },
        details=details,
        warnings=list(tombs.warnings),
    )


def _log_problem(change: LogChange) -> str:
    if change.kind == "deleted":
        fix = (
            "restore it from a backup (daily logs are never deleted); if the deletion was intended, "
            f"`memory-assets check --accept-log {change.filename}` forgets its record"
        )
    else:
        fix = (
            "restore the earlier text (daily logs are append-only; remove a fact with a tombstone instead); "
            f"if the edit was intended, accept it with `memory-assets check --accept-log {change.filename}`"
        )
    return f"{change.describe()}; {fix}"


def logs_append_only(settings: Settings) -> CheckOutcome:
    """No daily log's earlier lines changed since the ledger last saw it; appends pass and extend
    the ledger, and a log seen for the first time is recorded as a baseline."""
    name = "logs_append_only"
    path = ledger_path(settings.memory_dir)
    try:
        ledger = read_ledger(path)
        changes = verify(settings.memory_dir, settings.archive_dir, ledger)
        seen = observe(settings.memory_dir, settings.archive_dir)
    except LedgerVersionError as exc:
        return CheckOutcome(name, False, "error", "the log ledger cannot be read by this version", [str(exc)])
    except OSError as exc:  # one unreadable log: a warning naming it, not a failure of every check
        where = exc.filename or path
        return CheckOutcome(
            name,
            False,
            "warn",
            f"{where} cannot be read, so the daily logs were not verified this run",
            [
                f"{where}: cannot be read ({exc.strerror or exc}); no log was verified or recorded this "
                "run. Fix: make it readable by the user running memory-assets, then run `memory-assets check`"
            ],
        )
    found = {c.filename: c for c in changes}
    for change in seen.refused:  # changed between verify and observe
        found.setdefault(change.filename, change)
    ordered = [found[f] for f in sorted(found)]
    warnings = list(dict.fromkeys([*ledger.warnings, *seen.warnings]))
    return CheckOutcome(
        name,
        passed=not ordered,
        severity="error",
        summary=f"{seen.logs} daily log(s) only grew ({len(seen.extended)} appended to, "
        f"{len(seen.baselined)} recorded for the first time)"
        if not ordered
        else f"{len(ordered)} daily log(s) had earlier lines changed: "
        + ", ".join(f"archive/{c.filename} line {c.line}" for c in ordered[:5]),
        problems=capped([_log_problem(c) for c in ordered]),
        metadata={
            "logs": seen.logs,
            "recorded_logs": seen.recorded,
            "changed_logs": len(ordered),
            "appended_logs": len(seen.extended),
            "new_logs": len(seen.baselined),
        },
        details=[
            {"file": f"archive/{c.filename}", "line": c.line, "now": c.excerpt, "kind": c.kind}
            for c in ordered
        ],
        warnings=warnings,
    )


def days_consolidated(settings: Settings) -> CheckOutcome:
    """No day is left unconsolidated by the dream's retry-then-skip (a warning: the days' facts
    stay indexed and findable; nothing is lost, but they are not folded into pages and their
    confirmation lines wait). Each day left is named with the error that skipped it, and when the
    dream tries it again: once the vault changes after it gave up, or a day later
    (``core/dream/pacing.py``), or now with ``memory-assets dream --force``."""
    name = "days_consolidated"
    state = load_dream_state(settings.dream_state_path, settings.log_md)
    days = sorted(state.unconsolidated)
    if not days:
        return CheckOutcome(name, True, "warn", "no day left unconsolidated", metadata={"unconsolidated": 0})
    by_why: dict[str, list[str]] = defaultdict(list)
    for day in days:
        by_why[state.skipped_why.get(day, UNKNOWN_WHY)].append(day)
    if state.gave_up is not None:
        when = (
            f"the dream gave up on them at {state.gave_up.get('at')}: it tries them again once the vault "
            f"changes, or {SKIPPED_RETRY_AFTER.total_seconds() / 3600:g} hours after that"
        )
    else:
        when = "the dream tries them again in its next runs"
    problems = [
        f"archive/{', '.join(d + '.md' for d in group)}: skipped by the dream after "
        f"{settings.dream_max_retries} failed attempts, because: {why}. Their facts stay indexed; {when}. "
        "Fix the cause (the error names it), then let the next dream run, or run `memory-assets dream --force`"
        for why, group in by_why.items()
    ]
    return CheckOutcome(
        name,
        passed=False,
        severity="warn",
        summary=f"{len(days)} day(s) left unconsolidated by the dream",
        problems=capped(problems),
        metadata={"unconsolidated": len(days)},
        details=[{"day": d, "why": state.skipped_why.get(d, UNKNOWN_WHY)} for d in days],
    )


def table_bounded(
    store: MemoryStore,
    max_fragments: int = MAX_FRAGMENTS,
    max_versions: int = MAX_VERSIONS,
    retention_days: float | None = None,
) -> CheckOutcome:
    """Fragments and kept versions stay within the bounds the maintenance keeps (reads slow past them).

    With ``retention_days`` (the home's ``MEMORY_VERSION_RETENTION_DAYS``), the version bound counts
    only the versions older than the retention, the ones the fix (an optimize) prunes: a busy day's
    young versions are kept by design, and a bound the fix cannot meet would fail until they age."""
    name = "table_bounded"
    stats = store.stats()
    counted = stats.versions
    if retention_days is not None:
        counted = store.versions_older_than(timedelta(days=retention_days))
    fix = "run `memory-assets optimize` (or materialise archival_memories)"
    if stats.legacy:
        fix = "run `memory-assets migrate` first (optimize needs a migrated table), then " + fix
    problems: list[str] = []
    if stats.fragments > max_fragments:
        problems.append(
            f"{_table_name(store)}: {stats.fragments} fragments, over the bound of {max_fragments}; "
            f"{fix} to compact it"
        )
    if counted > max_versions:
        older = "" if retention_days is None else f" older than the retention ({retention_days:g} days)"
        problems.append(
            f"{_table_name(store)}: {counted} versions{older} kept, over the bound of {max_versions}; "
            f"{fix} to prune versions older than the retention"
        )
    return CheckOutcome(
        name,
        passed=not problems,
        severity="error",
        summary=f"{stats.fragments} fragment(s) (bound {max_fragments}), {stats.versions} version(s)"
        + ("" if retention_days is None else f", {counted} older than the retention")
        + f" (bound {max_versions})",
        problems=problems,
        metadata={
            "rows": stats.rows,
            "fragments": stats.fragments,
            "max_fragments": max_fragments,
            "versions": stats.versions,
            "max_versions": max_versions,
            "version": stats.version,
        },
    )


def search_finds_rows(
    settings: Settings,
    store: MemoryStore,
    embedder: TextEmbedder,
    sample: int = PROBE_ROWS,
    max_p50_ms: float = PROBE_MAX_P50_MS,
) -> CheckOutcome:
    """Retrieval works end to end: ``sample`` rows spread evenly over the table (by id, skipping
    tombstoned ones), each searched for by its own content as the assistant would ask (embedded
    by the configured model, full text, the ranking, the collapse), come back in the top 10: the
    row itself, a hit it collapsed into (cosine >= 0.95 between their stored vectors), or, for a
    turn's row, the fact written from that turn (the fact carries it as ``said``). At least
    90% must. It fails when the stored vectors no longer answer the configured model (another
    model of the same width, vectors written under the wrong ids) or an index lost rows; it warns
    when the searches' p50 (query embedding excluded) passes ``max_p50_ms``. Reads only: no
    recall is logged."""
    name = "search_finds_rows"
    table = store.table()
    if table is None or store.count() == 0:
        return CheckOutcome(name, True, "error", "no rows to search for", metadata={"sampled": 0})
    ids = sorted(store.scan(["id"], where=f"user_id = {quote(store.user_id)}").column("id").to_pylist())
    tombstones = read_tombstones(settings.tombstones_path)
    step = max(1, len(ids) // (sample * 2))  # twice the sample, so tombstoned rows can be skipped
    picked = ids[::step][: sample * 2]
    names = set(table.schema.names)  # an assistant-era table has no source_file or metadata
    columns = ["id", "content", "vector"] + [c for c in ("source_file", "metadata") if c in names]
    data = store.scan(columns, where=id_in(picked)).to_pylist()
    by_id = {r["id"]: r for r in data if r["content"] and not tombstones.hides(r["content"])}
    rows = [by_id[i] for i in picked if i in by_id][:sample]
    if not rows:
        return CheckOutcome(
            name, True, "error", "no untombstoned rows to search for", metadata={"sampled": 0}
        )
    queries = [" ".join(r["content"].split())[:PROBE_QUERY_CHARS] for r in rows]
    query_vectors = embedder.embed(queries)
    hits_of: list[list[str]] = []
    said_of: list[set[tuple[str, object]]] = []  # the turns the hits' facts were written from
    times_ms: list[float] = []

    def turn_of(said: dict[str, Any]) -> tuple[str, object]:
        line = said.get("line")
        return (str(said.get("source_file")), line if line is not None else said.get("id"))

    for query, vector in zip(queries, query_vectors, strict=True):
        start = time.perf_counter()
        hits = search(
            store, query, SearchFilters(limit=10), query_vector=vector, settings=settings, log_recall=False
        )
        times_ms.append((time.perf_counter() - start) * 1000.0)
        hits_of.append([h.id for h in hits])
        said_of.append({turn_of(h.said) for h in hits if h.said})
    hit_ids = sorted({i for ids_ in hits_of for i in ids_} - {r["id"] for r in rows})
    vectors = rows + (store.scan(["id", "vector"], where=id_in(hit_ids)).to_pylist() if hit_ids else [])
    unit = {}
    for r in vectors:
        v = np.asarray(r["vector"], dtype=np.float32)
        unit[r["id"]] = v / (float(np.linalg.norm(v)) or 1.0)

    def found(row: dict[str, Any], hit_ids_: list[str], said_: set[tuple[str, object]]) -> bool:
        """The row is a hit, was collapsed into one (near-duplicate stored vectors), or is the turn
        a hit's fact was written from (``turn_identity``: a long message's chunks are one turn)."""
        row_id = row["id"]
        return (
            row_id in hit_ids_
            or turn_identity(row) in said_
            or any(i in unit and float(unit[row_id] @ unit[i]) >= DUPLICATE_COSINE for i in hit_ids_)
        )

    misses = [
        {"row": r["id"], "content": _excerpt(r["content"]), "top hit": hits[0] if hits else "-"}
        for r, hits, said_ in zip(rows, hits_of, said_of, strict=True)
        if not found(r, hits, said_)
    ]
    share = 1 - len(misses) / len(rows)
    p50, p95 = statistics.median(times_ms), float(np.percentile(times_ms, 95))
    problems = []
    if share < PROBE_MIN_FOUND:
        problems.append(
            f"{_table_name(store)}: only {len(rows) - len(misses)} of {len(rows)} rows came back in the "
            f"top 10 when searched for by their own words (at least {PROBE_MIN_FOUND:.0%} must): the "
            "stored vectors no longer answer the configured embedding model. Run `memory-assets "
            "reindex --rebuild` to embed every row again with it"
        )
    slow = p50 > max_p50_ms
    if slow:
        problems.append(
            f"{_table_name(store)}: the probe searches' p50 is {p50:.0f} ms, over the bound of "
            f"{max_p50_ms:.0f} ms; run `memory-assets optimize` (compaction, the ANN index above "
            "its row threshold), and see `memory-assets check` for table_bounded"
        )
    return CheckOutcome(
        name,
        passed=not problems,
        severity="error" if share < PROBE_MIN_FOUND else "warn",
        summary=f"{len(rows) - len(misses)}/{len(rows)} sampled rows found in the top 10 by their own "
        f"words; search p50 {p50:.1f} ms, p95 {p95:.1f} ms",
        problems=problems,
        metadata={
            "sampled": len(rows),
            "found": len(rows) - len(misses),
            "found_share": round(share, 4),
            "search_p50_ms": round(p50, 2),
            "search_p95_ms": round(p95, 2),
            "max_p50_ms": max_p50_ms,
        },
        details=misses,
    )


Check = Callable[[Settings, MemoryStore, TextEmbedder | None], CheckOutcome]


def _needed(embedder: TextEmbedder | None) -> TextEmbedder:
    if embedder is None:
        raise ValueError("search_finds_rows needs an embedder")
    return embedder


_CHECKS: dict[str, Check] = {
    "logs_append_only": lambda settings, store, embedder: logs_append_only(settings),
    "rows_match_logs": lambda settings, store, embedder: rows_match_logs(settings, store),
    "rows_match_transcripts": lambda settings, store, embedder: rows_match_transcripts(settings, store),
    "facts_accounted_for": lambda settings, store, embedder: facts_accounted_for(settings, store),
    "turns_accounted_for": lambda settings, store, embedder: turns_accounted_for(settings, store),
    "days_consolidated": lambda settings, store, embedder: days_consolidated(settings),
    "ids_unique": lambda settings, store, embedder: ids_unique(store),
    "no_tombstoned_content": lambda settings, store, embedder: no_tombstoned_content(settings, store),
    "table_bounded": lambda settings, store, embedder: table_bounded(
        store, retention_days=settings.version_retention_days
    ),
    "search_finds_rows": lambda settings, store, embedder: search_finds_rows(
        settings, store, _needed(embedder)
    ),
}
CHECK_NAMES = tuple(_CHECKS)
"""Every check, in the order ``run_all`` runs them."""


def run_one(
    name: str, settings: Settings, store: MemoryStore, embedder: TextEmbedder | None = None
) -> CheckOutcome:
    """The check ``name`` (one of ``CHECK_NAMES``), raising what it raises; ``embedder`` (the
    configured model) is needed by ``search_finds_rows`` only. ``KeyError`` for an unknown name."""
    return _CHECKS[name](settings, store, embedder)


def run_all(settings: Settings, store: MemoryStore, embedder: TextEmbedder) -> list[CheckOutcome]:
    """Every check, in order (``embedder``, the configured model, asks search_finds_rows' questions).
    A check that cannot run at all (an unreadable table, an embedding endpoint down) is reported as
    a failed outcome naming the error, so the others still run."""
    outcomes: list[CheckOutcome] = []
    for name in CHECK_NAMES:
        try:
            outcomes.append(run_one(name, settings, store, embedder))
        except (OSError, RuntimeError, ValueError) as exc:
            outcomes.append(
                CheckOutcome(
                    name,
                    passed=False,
                    severity="error",
                    summary="the check could not run",
                    problems=[f"{name} could not run: {type(exc).__name__}: {exc}"],
                )
            )
    return outcomes
