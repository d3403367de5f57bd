"""Which files the index is out of date for, and when to ask for their reindex again.

The core of the sensors that replace the assistant's 300 s mtime watcher (the Dagster layer turns
what this module decides into run requests and asset events; a server or a script can call it the
same way).

Freshness, not change. A file is stale exactly when the index is out of date for it: the digest
of the rows the file should produce (the plan the indexer executes) differs from the digest the
index state recorded after the file's last successful reindex, whatever the cursor says. So:

* a run that failed, was cancelled or was lost is requested again, with backoff
  (``core/backoff.py``'s ``RUN_RETRY``), with no change to the file: fix the cause (a bad model setting, a full disk) and
  the file heals by itself;
* the first look after any indexing finds nothing stale;
* a deleted file whose rows are still indexed stays stale until its rows are gone.

The cursor is a cache and a memo, never the truth: the stat signature and digest of each file
that can still change the index and the requests in flight. A scan stats the files and re-reads only those whose (inode, size, mtime) changed, or
all of them when the tombstones, the fold ledger or ``log.md`` changed, so its cost does not grow with history.
Run keys carry a generation stored in the cursor, so a re-evaluated tick dedupes while a later
request for the same content (a retry, a restored file) gets a new run.
"""

import enum
import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from memory_assets.core.backoff import RUN_RETRY
from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.capture.transcripts import list_transcripts
from memory_assets.core.durable import stat_signature
from memory_assets.core.index.index_state import IndexState
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.rows import FilePlan
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.knowledge.watermark import read_watermark
from memory_assets.core.sources import ARCHIVE, CORE_FILES, IndexKey

CURSOR_VERSION = 2
LOST_AFTER_S = 300  # a requested run that never appeared is requested again after this
DIGEST_CHARS = 16
EMPTY_DIGEST = FilePlan("archive", "", ARCHIVE).digest()[:DIGEST_CHARS]


class RunState(enum.Enum):
    """What the orchestrator knows of a requested run."""

    IN_FLIGHT = "in flight"  # queued, starting, running or cancelling
    ENDED = "ended"  # finished in any way; if the file is still stale, it failed or was superseded
    UNKNOWN = "unknown"  # no such run (yet): not launched, or lost


def clock() -> float:
    """Now, in seconds since the epoch (one name, so a test can move time)."""
    return time.time()


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _sig_text(sig: tuple[int, int, int] | None) -> str:
    return "-" if sig is None else "{}:{}:{}".format(*sig)


def signature(path: Path) -> str:
    """A file's stat signature, (inode, size, mtime), as text ("-" when it does not exist)."""
    return _sig_text(stat_signature(path))


@dataclass
class Cursor:
    # key -> [file stat signature, inputs signature, digest, ...]: a digest is reused while both
    # match. Digests are kept to 16 hex characters (64 bits), signatures to 8, so 1,000 logs take
    # about 60 KB.
    files: dict[str, list[Any]] = field(default_factory=dict)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> request in flight
    aux: dict[str, str] = field(default_factory=dict)  # external assets' signatures
    outside: list[str] = field(default_factory=list)  # days already reported as outside the partitions
    generation: int = 0

    @classmethod
    def load(cls, raw: str | None) -> "Cursor":
        data = json.loads(raw) if raw else {}
        if data.get("v") != CURSOR_VERSION:  # an older cursor is only a cache: start afresh
            return cls()
        return cls(
            data.get("files", {}),
            data.get("pending", {}),
            data.get("aux", {}),
            data.get("outside", []),
            data.get("generation", 0),
        )

    def changed(self, name: str, path: Path) -> bool:
        """Whether the file ``path`` (kept in ``aux`` under ``name``: an external asset's) exists and
        changed since this cursor last recorded it; its signature is recorded now."""
        sig = signature(path)
        if sig == "-" or self.aux.get(name) == sig:
            return False
        self.aux[name] = sig
        return True

    def dump(self) -> str:
        return json.dumps(
            {
                "v": CURSOR_VERSION,
                "files": self.files,
                "pending": self.pending,
                "aux": self.aux,
                "outside": self.outside,
                "generation": self.generation,
            },
            separators=(",", ":"),
        )


class Freshness:
    """Decides, per stale file, whether to request a run now (and with which attempt number).

    ``run_state(run_key)`` asks the orchestrator about an earlier request; it is called at most
    once per run key per evaluation."""

    def __init__(self, cursor: Cursor, state: dict[str, str], run_state: Callable[[str], RunState]):
        self.cursor = cursor
        self.state = state
        self.now = clock()
        self._run_state = run_state
        self._states: dict[str, RunState] = {}
        cursor.generation += 1

    def up_to_date(self, key: str, digest: str | None) -> bool:
        """``digest`` None: the file is gone, so the index is up to date once it forgot the file."""
        recorded = self.state.get(key)
        fresh = recorded is None if digest is None else (recorded or "")[:DIGEST_CHARS] == digest
        if fresh:
            self.cursor.pending.pop(key, None)
        return fresh

    def _state_of(self, run_key: str) -> RunState:
        if run_key not in self._states:
            self._states[run_key] = self._run_state(run_key)
        return self._states[run_key]

    def due(self, key: str, digest: str | None) -> int | None:
        """The attempt number to request now, or None to wait (a run in flight, or backing off)."""
        pending = self.cursor.pending.get(key)
        if pending is None or pending["digest"] != (digest or "-"):
            return 0
        status = self._state_of(pending["run_key"])
        if status is RunState.IN_FLIGHT:
            return None
        age = self.now - pending["at"]
        if status is RunState.UNKNOWN and age < LOST_AFTER_S:
            return None  # requested, not launched yet
        if age < RUN_RETRY.wait(int(pending["attempt"])):
            return None
        return int(pending["attempt"]) + 1

    def requested(self, key: str, digest: str | None, run_key: str, attempt: int) -> None:
        self.cursor.pending[key] = {
            "digest": digest or "-",
            "run_key": run_key,
            "at": self.now,
            "attempt": attempt,
        }


@dataclass(frozen=True)
class StaleDay:
    """A day whose rows are out of date, with the run key and attempt its request carries."""

    day: date
    run_key: str
    attempt: int


@dataclass(frozen=True)
class LogGrowth:
    """A daily log that gained (or lost) fact lines since the cursor last read it."""

    day: date
    size: int
    facts: int
    skipped_lines: int


@dataclass
class DayScan:
    stale: list[StaleDay] = field(default_factory=list)
    grown: list[LogGrowth] = field(default_factory=list)
    newly_outside: list[date] = field(default_factory=list)  # logs with rows outside [first, today]
    current: list[date] = field(default_factory=list)  # days with a log whose index is up to date
    watermark: date | None = None
    logs: list[date] = field(default_factory=list)  # every day with a daily log, as listed


def stale_days(
    indexer: Indexer,
    cursor: Cursor,
    run_state: Callable[[str], RunState],
    first: date,
    today: date,
    *,
    state: dict[str, str] | None = None,
) -> DayScan:
    """Every daily log (and every day the index state still holds) whose rows are out of date and
    due for a request now, recording the requests in ``cursor``. Days outside ``[first, today]``
    (no partition for them) are reported once each in ``newly_outside`` and not requested.
    ``state``: the index state's files, when the caller loaded it (``table_directory``: no table
    opened); by default it is loaded against the table's id, read from the table."""
    settings = indexer.settings
    if state is None:
        state = IndexState.load(settings.index_state_path, indexer.store.table_id).files
    # Every day's rows depend on the tombstones and the fold ledger too (and, for a home without a
    # ledger yet, on log.md's watermark and the days the dream skipped).
    inputs = short_hash(
        "|".join(
            signature(p)
            for p in (
                settings.tombstones_path,
                settings.folds_path,
                settings.log_md,
                settings.dream_state_path,
            )
        )
    )
    freshness = Freshness(cursor, state, run_state)
    folds = indexer.folds()
    scan = DayScan(watermark=read_watermark(settings.log_md))
    scan.logs = [d for d, _ in list_logs(settings.archive_dir)]
    days = set(scan.logs)
    days |= {d for k in state if (d := IndexKey.parse(k).day) is not None}
    files: dict[str, list[Any]] = {}
    for day in sorted(days):
        index_key = IndexKey.for_day(day)
        key, path = str(index_key), settings.archive_dir / index_key.filename
        sig = stat_signature(path)
        digest: str | None
        if sig is None:
            digest = None
        else:
            sig_text = short_hash(_sig_text(sig))
            cached = cursor.files.get(key)
            if cached is not None and cached[:2] == [sig_text, inputs]:
                digest, facts = cached[2], cached[3]
            else:
                plan = indexer.plan_day(day, indexer.tombstones(), folds)
                digest, facts = plan.digest()[:DIGEST_CHARS], len(plan.rows) + plan.tombstoned + plan.folded
                if cached is None or cached[3] != facts:  # the log gained facts (a touch is no change)
                    scan.grown.append(LogGrowth(day, sig[1], facts, plan.skipped_lines))
            files[key] = [sig_text, inputs, digest, facts]
            if digest == EMPTY_DIGEST and key not in state:
                digest = None  # no rows to index and none recorded (every line folded): nothing to do
        if not first <= day <= today:
            # A day with no rows to index (every line folded) loses nothing by its missing partition.
            if digest not in (None, EMPTY_DIGEST) and day.isoformat() not in cursor.outside:
                cursor.outside.append(day.isoformat())
                scan.newly_outside.append(day)
            continue
        if freshness.up_to_date(key, digest):
            if sig is not None:
                scan.current.append(day)
            continue
        attempt = freshness.due(key, digest)
        if attempt is None:
            continue
        run_key = f"{key}:{(digest or 'gone')[:16]}:{cursor.generation}"
        scan.stale.append(StaleDay(day, run_key, attempt))
        freshness.requested(key, digest, run_key, attempt)
    cursor.files = files
    return scan


@dataclass(frozen=True)
class StaleFile:
    key: str  # ``label:filename``
    digest: str | None
    attempt: int


@dataclass
class FileScan:
    """Stale vault pages, core files and transcripts due for a request, and the freshness that
    decided it (the caller names the run and calls ``freshness.requested`` for each file it asks for)."""

    pages: list[StaleFile]
    core_files: list[StaleFile]
    freshness: Freshness
    transcripts: list[StaleFile] = field(default_factory=list)


FILE_GROUPS = ("notebook", "core", "transcript")  # what ``stale_files`` looks at unless told


def stale_files(
    indexer: Indexer,
    cursor: Cursor,
    run_state: Callable[[str], RunState],
    groups: Iterable[str] = FILE_GROUPS,
    *,
    state: dict[str, str] | None = None,
) -> FileScan:
    """Every vault page, core file and transcript of ``groups`` (``notebook``, ``core``,
    ``transcript``), and every one the index state still holds, whose rows are out of date and due
    for a request now. ``state`` as for ``stale_days``."""
    settings = indexer.settings
    wanted = set(groups)
    if state is None:
        state = IndexState.load(settings.index_state_path, indexer.store.table_id).files
    tombs = signature(settings.tombstones_path)
    # A page's rows depend on the tombstones and on today's date (stale_after passing) too; a
    # transcript's on the tombstones, and on today's date only when a retention is set (a turn
    # expiring leaves the index the day it passes the retention).
    inputs = short_hash(tombs + "|" + indexer.today.isoformat())
    retention = settings.transcript_retention_days
    turn_inputs = short_hash(tombs + "|" + (indexer.today.isoformat() if retention > 0 else "forever"))
    paths: dict[str, Path] = {}
    if "notebook" in wanted:
        paths |= {
            str(IndexKey.for_page(rel)): settings.notebook_dir / rel
            for rel in list_pages(settings.notebook_dir)
        }
    if "core" in wanted:
        paths |= {str(IndexKey.for_core_file(name)): settings.core_file_path(name) for name in CORE_FILES}
    if "transcript" in wanted:
        paths |= {
            str(IndexKey.for_transcript(rel)): path
            for rel, path in list_transcripts(settings.transcripts_dir)
        }
    for key in state:
        parsed = IndexKey.parse(key)
        if parsed.group not in wanted:
            continue
        if parsed.label == "notebook":
            paths.setdefault(key, settings.notebook_dir / parsed.filename)
        elif parsed.label == "transcript":
            paths.setdefault(key, settings.transcripts_dir / parsed.filename)
        elif parsed.filename in CORE_FILES:
            paths.setdefault(key, settings.core_file_path(parsed.filename))
    freshness = Freshness(cursor, state, run_state)
    files: dict[str, list[Any]] = {}
    scan = FileScan([], [], freshness)
    for key, path in sorted(paths.items()):
        group = IndexKey.parse(key).group
        key_inputs = turn_inputs if group == "transcript" else inputs
        digest: str | None = None
        sig = stat_signature(path)
        if sig is not None:
            sig_text = short_hash(_sig_text(sig))
            cached = cursor.files.get(key)
            if cached is not None and cached[:2] == [sig_text, key_inputs]:
                digest = cached[2]
            else:
                plan = indexer.plan_key(key, indexer.tombstones())
                digest = plan.digest()[:DIGEST_CHARS] if plan is not None else None
            if digest is not None:
                files[key] = [sig_text, key_inputs, digest]
        if freshness.up_to_date(key, digest):
            continue
        attempt = freshness.due(key, digest)
        if attempt is not None:
            into = {"notebook": scan.pages, "transcript": scan.transcripts}.get(group, scan.core_files)
            into.append(StaleFile(key, digest, attempt))
    cursor.files = files
    return scan
