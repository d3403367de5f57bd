"""The indexer: the only writer to LanceDB. The index is a function of the markdown.

Per file it plans the rows the file should produce (``rows.py``), diffs them against the table
by deterministic id, embeds only rows whose content is new (a row whose content is unchanged
keeps its vector even when its importance or metadata change), then deletes rows that are gone
and upserts the rest: at most two LanceDB commits, and none when nothing changed. Embedding
happens before any delete, so a model failure leaves the index untouched (fail closed). If the
diff query itself fails, the file falls back to a full replace.

A daily-log line leaves the index once the fold ledger (``.state/folds.jsonl``) records it as
folded into a vault page: consolidated means *this line was folded*, never *this day is old*, so a
line written to a past day, or appended while a dream ran, stays indexed until a dream folds it.
Tombstoned content never enters; a deleted file's rows go. A file that
cannot be read keeps its rows, unchanged, with a warning; its digest is not recorded, so every
sweep tries it again.

One writer per file, across processes. Every change to a file's rows happens under that file's
index lock (``index-key:<uri>|<table>|<label:filename>``, held shared with the table lock), and
under it the file is planned AGAIN from fresh inputs (the file, the tombstones, the fold ledger):
a plan made before the lock only decides whether a file needs work, and is never applied, so a
stale plan can never delete newer rows and two writers can never both insert the same rows. The
digest recorded in the index state is written under the same lock. Whole-table work (filling an
empty table in bulk, migrating an assistant-era table, rebuilding for a new model, optimize,
deleting legacy rows once exported) holds the table lock exclusively. Ids the diff finds stored
more than once (a table written by an older, unlocked version) are repaired: every copy deleted,
one written.
"""

import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import numpy as np

from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.capture.transcripts import list_transcripts
from memory_assets.core.durable import file_lock, named_lock, stat_signature
from memory_assets.core.failpoints import failpoint
from memory_assets.core.index.index_state import IndexState
from memory_assets.core.index.rows import (
    FilePlan,
    IndexRow,
    plan_archive,
    plan_core_file,
    plan_page,
    plan_transcript,
)
from memory_assets.core.index.store import (
    MAX_FRAGMENTS,
    BrokenTableError,
    Existing,
    LegacyTableError,
    MemoryStore,
    TableStats,
    VectorWidthMismatch,
)
from memory_assets.core.index.table_writer import Pruned, TableWriter
from memory_assets.core.knowledge.folds import Folds, load_folds
from memory_assets.core.knowledge.tombstones import Tombstones, read_tombstones
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.outcome import fields_of
from memory_assets.core.settings import Settings
from memory_assets.core.sources import CORE_FILES, INDEXED_SOURCE_TYPES, TRANSCRIPT, IndexKey

BULK_ROWS = 8192  # rows embedded and written per commit when rebuilding an empty index
OPTIMIZE_AFTER_ROWS = 1000  # a sweep that inserts this many rows compacts the table afterwards
DELETE_BATCH = 2000  # ids per delete commit (delete_rows)


T = TypeVar("T")


@dataclass
class _Diff:
    """What one file's write changes: rows gone, rows new (to embed), rows kept with their stored
    vector (changed scalars, or ids stored more than once)."""

    result: "FileResult"
    existing: dict[str, Existing]
    gone: list[str]
    new: list[IndexRow]
    kept: list[IndexRow]
    repaired: int
    updated: int


class IndexerError(RuntimeError):
    pass


@dataclass
class FileResult:
    key: str
    rows: int = 0
    embedded: int = 0  # rows that needed a new vector
    computed: int = 0  # texts the model actually ran on (repeats and cached texts are not recomputed)
    deleted: int = 0
    inserted: int = 0
    updated: int = 0
    commits: int = 0
    changed: bool = False
    skipped_by_state: bool = False
    fallback: bool = False
    bulk: bool = False
    tombstoned: int = 0
    repaired: int = 0  # extra copies of duplicated ids removed
    skipped_lines: int = 0
    folded: int = 0  # fact lines a vault page holds (no rows for them)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # The ids the applied plan wanted: what the per-partition row check compares the table against.
    expected_ids: frozenset[str] = field(default_factory=frozenset, repr=False)

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out.pop("expected_ids")
        return out


@dataclass
class SweepResult:
    files_checked: int = 0
    files_updated: int = 0
    embedded: int = 0
    deleted: int = 0
    rows: int = 0
    skipped_lines: int = 0
    repaired: int = 0
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    optimized: bool = False
    migrated: bool = False
    files: list[FileResult] = field(default_factory=list)

    def add(self, result: FileResult) -> None:
        self.files.append(result)
        self.files_checked += 1
        self.files_updated += int(result.changed)
        self.embedded += result.embedded
        self.deleted += result.deleted
        self.skipped_lines += result.skipped_lines
        self.repaired += result.repaired
        self.warnings += result.warnings

    def summary(self) -> dict[str, object]:
        return {
            **fields_of(self, "files_checked", "files_updated", "embedded", "deleted", "rows"),
            **fields_of(self, "skipped_lines", "repaired", "migrated", "optimized", "warnings"),
            "seconds": round(self.seconds, 3),
        }

    def to_dict(self) -> dict[str, object]:
        return {**self.summary(), "files": [f.to_dict() for f in self.files]}


@dataclass(frozen=True)
class OptimizeResult:
    """One optimize: the table before and after it, and whether it built the ANN index."""

    before: TableStats
    after: TableStats
    ann_built: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "rows": self.after.rows,
            "fragments_before": self.before.fragments,
            "fragments": self.after.fragments,
            "versions_before": self.before.versions,
            "versions": self.after.versions,
            "ann_index_built": self.ann_built,
        }


class Indexer:
    def __init__(
        self,
        settings: Settings,
        store: MemoryStore | None = None,
        embedder: Embedder | None = None,
        today: date | None = None,
        lock_timeout: float | None = None,
    ):
        self.settings = settings
        # How long a per-file write waits for its locks (None: as long as it takes). The write path
        # sets one, so a held lock delays its reindex (left to the sensor), never the turn.
        self.lock_timeout = lock_timeout
        self.store = store or MemoryStore.of(settings)
        self._writer = TableWriter(self.store)  # the one writer of the table (table_writer.py)
        self.embedder = embedder
        self.today = today or datetime.now(UTC).date()
        self._inputs: dict[str, tuple[object, object]] = {}  # path -> (stat signature, parsed value)

    # -- inputs ----------------------------------------------------------------------------------
    def _cached(self, path: Path, read: Callable[[Path], T]) -> T:
        """``read(path)``, re-read only when the file's (inode, size, mtime) changed: every plan
        made under a lock reads fresh inputs, and an unchanged input costs one stat."""
        sig = stat_signature(path)
        hit = self._inputs.get(str(path))
        if hit is not None and hit[0] == sig and sig is not None:
            return hit[1]  # type: ignore[return-value]
        value = read(path)
        self._inputs[str(path)] = (sig, value)
        return value

    def tombstones(self) -> Tombstones:
        return self._cached(self.settings.tombstones_path, read_tombstones)

    def folds(self) -> Folds:
        """The fold ledger (which log lines a page holds), re-read when it, ``log.md`` or the dream
        state changed (a home without a ledger reads its watermark: ``folds.implicit_folds``).
        ``WatermarkError`` (naming log.md's line and the fix) for a watermark that cannot be right,
        so one bad line never drops every log's rows."""
        settings = self.settings
        ledger = stat_signature(settings.folds_path)
        key: tuple[object, ...] = (ledger,)
        if ledger is None:  # the implicit baseline reads the watermark, the skips and the newest log
            key += (
                stat_signature(settings.log_md),
                stat_signature(settings.dream_state_path),
                tuple(d for d, _ in list_logs(settings.archive_dir)[-1:]),
            )
        hit = self._inputs.get("folds")
        if hit is not None and hit[0] == key:
            return hit[1]  # type: ignore[return-value]
        value = load_folds(settings)
        self._inputs["folds"] = (key, value)
        return value

    def plan_day(
        self, day: date, tombstones: Tombstones | None = None, folds: Folds | None = None
    ) -> FilePlan:
        tombs = tombstones if tombstones is not None else self.tombstones()
        ledger = folds if folds is not None else self.folds()
        filename = IndexKey.for_day(day).filename
        return plan_archive(self.settings.archive_dir / filename, day, tombs, ledger.files.get(filename))

    def plan_page(self, rel: str, tombstones: Tombstones | None = None) -> FilePlan:
        tombs = tombstones if tombstones is not None else self.tombstones()
        return plan_page(self.settings.notebook_dir, rel, tombs, self.today)

    def plan_core(self, filename: str, tombstones: Tombstones | None = None) -> FilePlan:
        tombs = tombstones if tombstones is not None else self.tombstones()
        return plan_core_file(self.settings.core_file_path(filename), tombs, self.today)

    def plan_transcript(self, rel: str, tombstones: Tombstones | None = None) -> FilePlan:
        """The recall tier's rows of ``transcripts/<rel>``; a name that would lead outside the
        transcripts folder plans nothing."""
        tombs = tombstones if tombstones is not None else self.tombstones()
        root = self.settings.transcripts_dir
        path = root / rel
        if ".." in Path(rel).parts or Path(rel).is_absolute() or not rel.endswith(".jsonl"):
            plan = FilePlan("transcript", rel, TRANSCRIPT)
            plan.exists = False
            return plan
        return plan_transcript(
            path, rel, tombs, self.today, retention_days=self.settings.transcript_retention_days
        )

    def plan_everything(
        self, tombstones: Tombstones | None = None, extra_keys: Iterable[str] = ()
    ) -> list[FilePlan]:
        """Plans for every source file that exists, plus any ``label:filename`` in ``extra_keys``
        (files the state or the table knows of that may have been deleted)."""
        tombs = tombstones if tombstones is not None else self.tombstones()
        folds = self.folds()
        plans: dict[str, FilePlan] = {}
        for filename in CORE_FILES:
            plan = self.plan_core(filename, tombs)
            if plan.exists or plan.key in extra_keys:
                plans[plan.key] = plan
        for day, _ in list_logs(self.settings.archive_dir):
            plan = self.plan_day(day, tombs, folds)
            plans[plan.key] = plan
        outside: list[str] = []  # page symlinks leading outside the vault: planned empty, with a warning
        for rel in [*list_pages(self.settings.notebook_dir, outside=outside), *outside]:
            plan = self.plan_page(rel, tombs)
            plans[plan.key] = plan
        for rel, _ in list_transcripts(self.settings.transcripts_dir):
            plan = self.plan_transcript(rel, tombs)
            plans[plan.key] = plan
        for key in extra_keys:
            if key not in plans:
                plan = self.plan_key(key, tombs, folds)
                if plan is not None:
                    plans[key] = plan
        return list(plans.values())

    def plan_key(
        self, key: str, tombs: Tombstones | None = None, folds: Folds | None = None, *, fresh: bool = False
    ) -> FilePlan | None:
        """The plan of one ``label:filename`` key (``fresh``: read the tombstones and the ledger now)."""
        if fresh or tombs is None:
            tombs, folds = self.tombstones(), self.folds()
        parsed = IndexKey.parse(key)
        if parsed.label == "archive":
            day = parsed.day
            return None if day is None else self.plan_day(day, tombs, folds)
        if parsed.label == "notebook":
            return self.plan_page(parsed.filename, tombs)
        if parsed.label == "transcript":
            return self.plan_transcript(parsed.filename, tombs)
        if parsed.filename in CORE_FILES:
            return self.plan_core(parsed.filename, tombs)
        return None

    # -- locks -------------------------------------------------------------------------------------
    def _lock_base(self) -> str:
        return f"{self.store.uri}|{self.store.table_name}"

    @property
    def table_lock_name(self) -> str:
        return f"index-table:{self._lock_base()}"

    def table_lock(self, shared: bool = False, timeout: float | None = None) -> AbstractContextManager[None]:
        """Held shared by every per-file writer, exclusively by whole-table work. ``timeout``: how
        long to wait (default: the indexer's for shared, no limit for exclusive)."""
        if timeout is None and shared:
            timeout = self.lock_timeout
        return named_lock(self.table_lock_name, shared=shared, timeout=timeout)

    def key_lock(self, key: str) -> AbstractContextManager[None]:
        """One writer per file: held from the final plan to the recorded digest."""
        return named_lock(f"index-key:{self._lock_base()}|{key}", timeout=self.lock_timeout)

    # -- applying ----------------------------------------------------------------------------------
    def _require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise IndexerError("this reindex needs to embed new rows but no embedder is configured")
        return self.embedder

    def _apply(self, plan: FilePlan) -> FileResult:
        """Bring the table's rows for ``plan``'s file in line with the plan. Call under its key lock."""
        return self._apply_many([plan])[0]

    def _apply_many(self, plans: Sequence[FilePlan]) -> list[FileResult]:
        """Bring the table's rows for each plan's file in line with it, as one write: the new rows of
        every file embedded in one model call, then at most two commits for them all (what a turn
        costs: its day's log and its transcript). Call under every file's key lock."""
        start = time.perf_counter()
        results: list[FileResult] = []
        diffs: list[_Diff] = []
        for plan in plans:
            result = FileResult(
                key=plan.key,
                rows=len(plan.rows),
                tombstoned=plan.tombstoned,
                skipped_lines=plan.skipped_lines,
                folded=plan.folded,
                warnings=list(plan.warnings),
                expected_ids=frozenset(row.id for row in plan.rows),
            )
            results.append(result)
            if plan.unreadable:  # its rows stay as they are until the file can be read
                continue
            try:
                existing, copies = self.store.existing(plan.source_type, plan.filename)
            except (LegacyTableError, BrokenTableError):  # a damaged table is never written over
                raise
            except Exception as exc:  # the diff query failed: fall back to a full replace of this file
                result.warnings.append(
                    f"{plan.key}: diff query failed ({exc}); replaced the file's rows in full"
                )
                self._replace(plan, result)
                continue
            desired = {row.id: row for row in plan.rows}
            diff = _Diff(
                result=result,
                existing=existing,
                gone=[i for i in existing if i not in desired],
                new=[row for row in plan.rows if row.id not in existing],
                # rows that keep their stored vector: changed scalars, and ids stored more than once
                kept=[
                    row
                    for row in plan.rows
                    if row.id in existing and (row.id in copies or existing[row.id].scalars != row.scalars())
                ],
                repaired=sum(copies.values()) - len(copies),
                updated=sum(
                    1
                    for row in plan.rows
                    if row.id in existing
                    and row.id not in copies
                    and existing[row.id].scalars != row.scalars()
                ),
            )
            if diff.gone or diff.new or diff.kept:
                diffs.append(diff)
        if diffs:
            self._commit(diffs)
        share = (time.perf_counter() - start) / max(len(plans), 1)
        for result in results:
            result.seconds = share
        return results

    def _commit(self, diffs: Sequence["_Diff"]) -> None:
        """Embed the new rows of ``diffs`` in one call, then delete and add for all of them at once."""
        new = [row for d in diffs for row in d.new]
        embedder = self._require_embedder() if new else self.embedder
        before = embedder.computed if embedder else 0
        new_vectors = embedder.embed([r.embedded for r in new]) if new and embedder else np.empty((0, 0))
        if new and embedder:
            computed = embedder.computed - before
            for d in diffs:  # the model's work, told per file in proportion to its new rows
                d.result.embedded = len(d.new)
                d.result.computed = round(computed * len(d.new) / len(new))
        failpoint("index.embedded")
        # Only new rows need the model; a delete or an importance change never loads it.
        table = self._writable_table(embedder if new else None)
        kept = [(row, d.existing[row.id]) for d in diffs for row in d.kept]
        vectors = [*new_vectors] + [stored.vector for _, stored in kept]
        created = [None] * len(new) + [stored.created_at for _, stored in kept]
        commits = self._writer.apply_diff(
            table,
            [i for d in diffs for i in d.gone] + [row.id for row, _ in kept],  # every copy of an id goes
            new + [row for row, _ in kept],
            np.stack(vectors) if vectors else np.empty((0, 0)),
            created,
        )
        for d in diffs:
            r = d.result
            r.deleted, r.inserted, r.updated, r.repaired = len(d.gone), len(d.new), d.updated, d.repaired
            r.commits = commits  # shared by the files written together
            r.changed = True

    def _writable_table(self, embedder: Embedder | None) -> object:
        if embedder is not None:
            return self._writer.table_for_write(embedder.model_name, embedder.dimension)
        table = self.store.table()
        if table is None:
            raise IndexerError("no index table exists yet and no embedder is configured to create one")
        return table

    def _replace(self, plan: FilePlan, result: FileResult) -> None:
        embedder = self._require_embedder() if plan.rows else self.embedder
        vectors = (
            embedder.embed([r.embedded for r in plan.rows]) if plan.rows and embedder else np.empty((0, 0))
        )
        table = self._writable_table(embedder if plan.rows else None)
        result.commits = self._writer.replace_source(
            table, plan.source_type, plan.filename, plan.rows, vectors
        )
        result.embedded = result.inserted = len(plan.rows)
        result.fallback = result.changed = True

    def _ensure_table(self) -> None:
        """Create the table, if it is missing, under the exclusive table lock: two per-file writers
        (holding it shared) creating it at once raced, and a reader could see the table's directory
        before its first version existed ("table not found")."""
        if self.embedder is None or self.store.opened() or self.store.exists():
            return
        with self.table_lock():
            self._writer.table_for_write(self.embedder.model_name, self.embedder.dimension)

    def _reindex_locked(self, key: str) -> FileResult | None:
        """Plan ``key`` from fresh inputs and apply it, under its lock; record its digest."""
        return self._reindex_locked_many([key])[0]

    def _reindex_locked_many(self, keys: Sequence[str]) -> list[FileResult | None]:
        """Plan each key from fresh inputs under its lock (the locks taken in key order, so two
        writers can never wait on each other) and apply them as one write; record their digests.
        None in a key's place: not a key of an indexed file."""
        self._ensure_table()
        with ExitStack() as locks:
            locks.enter_context(self.table_lock(shared=True))
            for key in sorted(set(keys)):
                locks.enter_context(self.key_lock(key))
            locks.enter_context(self.store.snapshot())
            tombs, folds = self.tombstones(), self.folds()
            plans = {key: self.plan_key(key, tombs, folds) for key in dict.fromkeys(keys)}
            failpoint("index.locked")
            wanted = [p for p in plans.values() if p is not None]
            applied = dict(zip([p.key for p in wanted], self._apply_many(wanted), strict=True))
            self._record_state(
                {p.key: p.digest() for p in wanted if p.exists and not p.unreadable},
                drop=[p.key for p in wanted if not p.exists],
            )
        return [applied.get(plan.key) if plan is not None else None for plan in (plans[k] for k in keys)]

    # -- entry points ------------------------------------------------------------------------------
    def migrate(self) -> bool:
        """Migrate an assistant-era table to this schema (explicit; reads never do it)."""
        if not self.store.is_legacy():
            return False
        with self.table_lock():
            return self._writer.migrate()

    def reindex_key(self, key: str) -> FileResult:
        """Reindex one file (``archive:2026-11-20.md``, ``notebook:3_Personal/Health.md``,
        ``facts:MEMORY.md``): what a partition's materialisation and the write path run. An
        assistant-era table is migrated first (found by the diff, which needs the new columns)."""
        try:
            result = self._reindex_locked(key)
        except LegacyTableError:
            self.migrate()
            result = self._reindex_locked(key)
        if result is None:
            raise IndexerError(f"{key!r} is not a label:filename key of an indexed file")
        return result

    def reindex_keys(self, keys: Sequence[str]) -> list[FileResult]:
        """Reindex several files as one write (one model call, at most two commits): what a turn
        runs for its day's log and its transcript. Raises ``IndexerError`` for a key that is not an
        indexed file's, before anything is written."""
        for key in keys:
            if self.plan_key(key) is None:
                raise IndexerError(f"{key!r} is not a label:filename key of an indexed file")
        try:
            results = self._reindex_locked_many(keys)
        except LegacyTableError:
            self.migrate()
            results = self._reindex_locked_many(keys)
        return [r for r in results if r is not None]

    def reindex_day(self, day: date) -> FileResult:
        """Diff one day against the table (what a day partition's materialisation runs)."""
        return self.reindex_key(str(IndexKey.for_day(day)))

    def reindex_files(
        self, keys: Iterable[str] | None = None, labels: Iterable[str] | None = None
    ) -> SweepResult:
        """Diff the given ``label:filename`` keys (or every file of the given labels) against the table."""
        start = time.perf_counter()
        self.migrate()
        sweep = SweepResult()
        if keys is None:
            wanted = set(labels) if labels is not None else None
            tombs = self.tombstones()
            sweep.warnings += tombs.warnings
            keys = [
                p.key
                for p in self.plan_everything(tombs, self._indexed_keys())
                if wanted is None or IndexKey(p.label, p.filename).group in wanted
            ]
        for key in keys:
            result = self._reindex_locked(key)
            if result is not None:
                sweep.add(result)
        sweep.rows = self.store.count()
        sweep.seconds = time.perf_counter() - start
        return sweep

    def _needs_rebuild(self) -> bool:
        """Whether a full reindex must recreate the table: it was built by another model or width,
        or it is listed but cannot be opened (damaged; writes refuse it with BrokenTableError)."""
        assert self.embedder is not None
        if self.store.table() is None:
            return True
        try:
            self.store.check_compatible(self.embedder.model_name, self.embedder.dimension)
        except VectorWidthMismatch:
            return True
        return False

    def sweep(self, full: bool = False, rebuild: bool = False) -> SweepResult:
        """Reindex whatever changed since the last sweep (``full``: ignore the state and diff every
        file against the table; rebuild the table if the embedding model changed). ``rebuild``
        (implies ``full``): recreate the table and embed every row again even though the model's
        name and width match, for vectors that no longer answer the model (search_finds_rows names
        it). Files whose ids are stored more than once are always diffed, which repairs them."""
        full = full or rebuild
        start = time.perf_counter()
        aside = self._set_aside_if_damaged() if full and self.embedder is not None else None
        sweep = SweepResult(migrated=self.migrate())
        if aside is not None:
            sweep.warnings.append(aside)
        if full and self.embedder is not None and self.store.exists() and (rebuild or self._needs_rebuild()):
            with self.table_lock():
                self._writer.recreate(self.embedder.model_name, self.embedder.dimension)
        state = IndexState.load(self.settings.index_state_path, self.store.table_id)
        if state.discarded:
            sweep.warnings.append(state.discarded)
        tombs = self.tombstones()
        sweep.warnings += tombs.warnings
        recorded = {} if full else state.files
        extra = set(state.files) | (self._indexed_keys() if full or not state.files else set())
        plans = self.plan_everything(tombs, extra)
        damaged = {_key_text(t, f) for t, f in self.store.sources_with_duplicate_ids()}
        failpoint("index.planned")
        pending = [p for p in plans if recorded.get(p.key) != p.digest() or p.key in damaged]
        pending_keys = {p.key for p in pending}
        for plan in plans:
            if plan.key not in pending_keys:
                sweep.add(
                    FileResult(
                        key=plan.key,
                        rows=len(plan.rows),
                        skipped_by_state=True,
                        skipped_lines=plan.skipped_lines,
                        warnings=list(plan.warnings),
                        expected_ids=frozenset(row.id for row in plan.rows),
                    )
                )
        bulk = (
            self._bulk_fill() if pending and self.embedder is not None and self.store.count() == 0 else None
        )
        if bulk is not None:
            results = bulk
        else:
            results = [r for r in (self._reindex_locked(p.key) for p in pending) if r is not None]
        for result in results:
            sweep.add(result)
        inserted = sum(f.inserted for f in sweep.files)
        if sweep.files_updated and (
            full
            or bulk is not None
            or inserted >= OPTIMIZE_AFTER_ROWS
            or self.store.stats().fragments > MAX_FRAGMENTS
        ):
            # New rows are searched flat until optimize folds them into the full-text index. A bulk
            # fill (the first reindex of a home) always folds them: the index was created with the
            # empty table and would otherwise cover none of its rows until some later optimize.
            self.optimize()
            sweep.optimized = True
        sweep.rows = self.store.count()
        sweep.seconds = time.perf_counter() - start
        return sweep

    def _set_aside_if_damaged(self) -> str | None:
        """A full reindex first reads the whole table in a bounded child process; a table that cannot
        be read cleanly (missing, truncated or corrupt files) is renamed aside, never deleted, and the
        sweep rebuilds it from the markdown. Returns the warning saying so, or None."""
        with self.table_lock():
            moved = self._writer.set_aside_if_damaged()
        if moved is None:
            return None
        aside, what = moved
        return (
            f"index table {self.store.table_name} at {self.store.uri} was damaged ({what}); it was moved "
            f"aside to {aside} (delete it once you no longer need it) and rebuilt from the markdown"
        )

    def delete_rows(self, ids: Iterable[str]) -> int:
        """Delete the rows with these ids, under the exclusive table lock: what ``legacy apply``
        runs once every legacy row is recorded in the markdown (rows no file owns, which no reindex
        can remove). Works on a table of either schema (an assistant-era table is not migrated).
        Returns the number of rows deleted, as LanceDB counted them."""
        wanted = sorted(set(ids))
        if not wanted:
            return 0
        with self.table_lock():
            return self._writer.delete_ids(wanted, DELETE_BATCH)

    def optimize(self, *, prune_between: bool = False) -> "OptimizeResult":
        """Fold new rows into the indexes, compact, prune old versions: under the exclusive table
        lock, with the table's figures before and after (what the CLI prints and the asset records).
        ``prune_between``: the memory service's lane, which keeps no day of versions, also prunes
        between the fold and the compaction (``TableWriter.optimize``)."""
        with self.table_lock():
            before = self.store.stats()
            outcome = self._writer.optimize(
                retention=timedelta(days=self.settings.version_retention_days),
                grace=self.version_grace,
                prune_between=prune_between,
            )
            return OptimizeResult(before, self.store.stats(), bool(outcome["ann_built"]))

    @property
    def version_grace(self) -> timedelta:
        """How long a replaced version is kept for the readers that may still be on it
        (``MEMORY_LANE_VERSION_RETENTION_S``): no prune removes it sooner, but an erase's."""
        return timedelta(seconds=self.settings.lane_version_retention_s)

    def prune_versions(self, *, keep_latest_only: bool = False) -> Pruned:
        """Prune, under the exclusive table lock, every version but the latest and the files only
        they held (what an optimize leaves: the files every compaction replaced), once no read of
        the table is in flight in any process (``table_reads``: the prune waits for them a moment,
        new reads wait meanwhile); reads still in flight then keep the versions replaced within
        ``version_grace`` (``Pruned.held``: prune again once it has passed).

        ``keep_latest_only``: what an erase calls. Every version but the latest goes whatever, and
        so does every file no version records, so the erased rows' bytes are gone from the disk
        when it returns; a read in another process on a removed version reads again at the
        latest (``MemoryStore.read``). A tagged version (a legacy backup) blocks it: ``Pruned.done``
        is then False and ``Pruned.tags`` names the tags (``TableWriter.prune_versions``)."""
        with self.table_lock():
            return self._writer.prune_versions(self.version_grace, keep_latest_only=keep_latest_only)

    def purge(self) -> bool:
        """Compact, rebuild the indexes made from the rows, prune every older version: under the
        exclusive table lock (``TableWriter.purge``; what an erase runs after deleting rows)."""
        with self.table_lock():
            return self._writer.purge()

    def _bulk_fill(self) -> list[FileResult] | None:
        """Fill an empty table: embed across files in large batches and add, skipping the per-file
        diff queries (there is nothing to diff against). Holds the table lock exclusively and
        re-plans every file under it; returns None when another writer filled the table first.
        A failure part way leaves some files written and their digests unrecorded, so the next
        sweep diffs and finishes the rest."""
        with self.table_lock():
            if self.store.count() > 0:
                return None
            start = time.perf_counter()
            embedder = self._require_embedder()
            plans = self.plan_everything(self.tombstones(), self._indexed_keys())
            failpoint("index.locked")
            rows = [row for plan in plans for row in plan.rows]
            if rows:
                table = self._writer.table_for_write(embedder.model_name, embedder.dimension)
                for begin in range(0, len(rows), BULK_ROWS):
                    part = rows[begin : begin + BULK_ROWS]
                    vectors = embedder.embed([r.embedded for r in part])
                    self._writer.apply_diff(table, [], part, vectors, [None] * len(part))
            self._record_state(
                {p.key: p.digest() for p in plans if p.exists and not p.unreadable},
                drop=[p.key for p in plans if not p.exists],
            )
        share = (time.perf_counter() - start) / max(len(rows), 1)
        return [
            FileResult(
                key=plan.key,
                rows=len(plan.rows),
                embedded=len(plan.rows),
                inserted=len(plan.rows),
                changed=bool(plan.rows),
                bulk=True,
                tombstoned=plan.tombstoned,
                skipped_lines=plan.skipped_lines,
                folded=plan.folded,
                warnings=list(plan.warnings),
                seconds=share * len(plan.rows),
                expected_ids=frozenset(row.id for row in plan.rows),
            )
            for plan in plans
        ]

    def _indexed_keys(self) -> set[str]:
        return {k for t, f in self.store.sources(INDEXED_SOURCE_TYPES) if (k := _key_text(t, f))}

    def _record_state(self, digests: dict[str, str], drop: Iterable[str] = ()) -> None:
        """Merge digests into the state file under its lock (called under the files' key locks)."""
        path: Path = self.settings.index_state_path
        if not path.parent.is_dir():
            return
        with file_lock(path):
            state = IndexState.load(path, self.store.table_id)
            state.files.update(digests)
            for key in drop:
                state.files.pop(key, None)
            state.save(path)


def _key_text(source_type: str, source_file: str) -> str | None:
    """The ``label:filename`` key of a row's source file (None for sources the indexer does not own)."""
    key = IndexKey.of_source(source_type, source_file)
    return None if key is None else str(key)
