"""``turns_accounted_for``: what was said stays findable, or is gone for a stated reason (design §7,
invariant 9; the recall tier's ``facts_accounted_for``).

Every user turn of every transcript the recall tier indexes (``transcripts/*.jsonl``, the
assistant's, and ``transcripts/captured/*.jsonl``, the write path's) is in exactly one of these
states, decided in the order the plan (``index/rows.py``, ``plan_transcript``) decides them:

* **empty**: its user line holds no text, so there is nothing to find (and no row);
* **expired**: its day is older than the retention (``MEMORY_TRANSCRIPT_RETENTION_DAYS``; 0, the
  default, keeps every turn): the file keeps it, the index does not;
* **forgotten**: a person's tombstone hides it (``Tombstones.hides_turn``: a forgotten text it
  holds, the fact written from it, its chat or its day forgotten);
* **indexed**: every row the plan gives it (one, or one per window of a long message) is in the
  table.

A turn in none of them is **stranded**: kept in its file, but no search can find it. The check
names each (file, line, the words) and the fix, ``memory-assets reindex``. A transcript that
cannot be read is **reported**, a warning naming it and the fix, and its turns are not counted;
lines that are no turn (not JSON, no role) are counted as ``skipped_lines``.

It reads only: the transcripts, the tombstones and the ids of the table's transcript rows.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from memory_assets.core.capture.transcripts import list_transcripts, read_turns
from memory_assets.core.index.rows import plan_transcript, turn_chunks
from memory_assets.core.index.store import LegacyTableError, MemoryStore, quote
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.outcome import CheckOutcome, capped
from memory_assets.core.settings import Settings
from memory_assets.core.sources import TRANSCRIPT
from memory_assets.core.text import json_object

NAME = "turns_accounted_for"
REINDEX = "run `memory-assets reindex`, which writes its missing row(s)"


@dataclass(frozen=True)
class StrandedTurn:
    file: str  # its path under transcripts/
    line: int
    content: str
    missing: int  # planned rows not in the table
    planned: int

    def problem(self) -> str:
        rows = "its row is" if self.planned == 1 else f"{self.missing} of its {self.planned} rows are"
        return (
            f"transcripts/{self.file} line {self.line}: {self.content[:80]!r} is stranded: it is neither "
            f"forgotten nor past the retention, but {rows} not in the index; {REINDEX}"
        )


@dataclass
class TurnAccounting:
    indexed: int = 0
    forgotten: int = 0
    expired: int = 0
    empty: int = 0
    skipped_lines: int = 0
    transcripts: int = 0
    stranded: list[StrandedTurn] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # one warning per transcript that cannot be read
    warnings: list[str] = field(default_factory=list)

    @property
    def turns(self) -> int:
        return self.indexed + self.forgotten + self.expired + self.empty + len(self.stranded)


def _transcript_ids(store: MemoryStore) -> set[str]:
    if store.table() is None:
        return set()
    where = f"source_type = {quote(TRANSCRIPT)} AND user_id = {quote(store.user_id)}"
    return set(store.scan(["id"], where=where).column("id").to_pylist())


def account_turns(settings: Settings, store: MemoryStore, today: date | None = None) -> TurnAccounting:
    """Every user turn's state (see the module docstring); ``today`` as the indexer's (UTC)."""
    today = today or datetime.now(UTC).date()
    retention = settings.transcript_retention_days
    oldest = today - timedelta(days=retention) if retention > 0 else None
    out = TurnAccounting()
    tombs = read_tombstones(settings.tombstones_path)
    out.warnings += tombs.warnings
    stored = _transcript_ids(store)
    for rel, path in list_transcripts(settings.transcripts_dir):
        try:
            read = read_turns(path, cap=None)
        except OSError as exc:
            out.unreadable.append(
                f"transcripts/{rel}: cannot be read ({exc.strerror or exc}); its turns were not accounted "
                "for this run. Fix: make it readable by the user running memory-assets, then run "
                "`memory-assets reindex`."
            )
            continue
        plan = plan_transcript(path, rel, tombs, today, retention_days=retention)
        if plan.unreadable:  # it went unreadable between the two reads
            out.unreadable += plan.warnings
            continue
        out.transcripts += 1
        out.skipped_lines += read.skipped
        planned: dict[object, list[str]] = defaultdict(list)
        for row in plan.rows:
            planned[json_object(row.metadata).get("line")].append(row.id)
        for turn in read.turns:
            if not turn_chunks(turn.user):
                out.empty += 1
            elif oldest is not None and turn.at is not None and turn.at.date() < oldest:
                out.expired += 1
            elif tombs.hides_turn(turn.user):
                out.forgotten += 1
            else:
                ids = planned.get(turn.line, [])
                missing = sum(1 for i in ids if i not in stored)
                if ids and not missing:
                    out.indexed += 1
                else:
                    out.stranded.append(
                        StrandedTurn(rel, turn.line, " ".join(turn.user.split()), missing or 1, len(ids) or 1)
                    )
    return out


def turns_accounted_for(settings: Settings, store: MemoryStore, today: date | None = None) -> CheckOutcome:
    """The check (see the module docstring)."""
    try:
        store.require_current(f"the {NAME} check")
    except LegacyTableError as exc:
        return CheckOutcome(NAME, False, "error", "the index table needs migrating first", [str(exc)])
    result = account_turns(settings, store, today)
    lines = [s.problem() for s in result.stranded]
    passed = not result.stranded
    retention = settings.transcript_retention_days
    kept = f"{retention} day(s)" if retention > 0 else "forever"
    summary = (
        f"{result.turns} turn(s) of {result.transcripts} transcript(s) accounted for: {result.indexed} "
        f"indexed, {result.forgotten} forgotten, {result.expired} past the retention ({kept}), "
        f"{result.empty} empty"
        if passed
        else f"{len(result.stranded)} of {result.turns} turn(s) stranded (kept in their transcript, findable by nothing)"
    )
    if result.unreadable:
        summary += f"; {len(result.unreadable)} transcript(s) could not be read"
    return CheckOutcome(
        NAME,
        passed=passed,
        severity="error",
        summary=summary,
        problems=capped(lines),
        metadata={
            "turns": result.turns,
            "transcripts": result.transcripts,
            "indexed": result.indexed,
            "forgotten": result.forgotten,
            "expired": result.expired,
            "empty": result.empty,
            "stranded": len(result.stranded),
            "unreadable_transcripts": len(result.unreadable),
            "skipped_lines": result.skipped_lines,
            "retention_days": retention,
        },
        details=[
            {
                "file": f"transcripts/{s.file}",
                "line": s.line,
                "turn": s.content[:80],
                "missing_rows": s.missing,
            }
            for s in result.stranded
        ],
        warnings=[*result.unreadable, *result.warnings],
    )
