"""The indexer: the only writer to LanceDB. The index is a function of the markdown.

Per file it plans the rows the file should produce (``rows.py``), diffs them against the table
by deterministic id, embeds only rows whose content is new (a row whose content is unchanged
keeps its vector even when its importance or metadata change), then deletes rows that are gone
and upserts the rest: at most two LanceDB commits, and none when nothing changed. Embedding
happens before any delete, so a model failure leaves the index untouched (fail closed). If the
diff query itself fails, the file falls back to a full replace.

Daily logs at or below the watermark leave the index; tombstoned content never enters; a
deleted file's rows go.
"""

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np

from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.durable import file_lock
from memory_assets.core.index.embedder import Embedder
from memory_assets.core.index.index_state import IndexState
from memory_assets.core.index.rows import (
    ARCHIVE,
    CORE_FILE,
    CORE_FILES,
    INDEXED_SOURCE_TYPES,
    NOTEBOOK,
    FilePlan,
    plan_archive,
    plan_core_file,
    plan_page,
)
from memory_assets.core.index.store import MAX_FRAGMENTS, MemoryStore, VectorWidthMismatch
from memory_assets.core.knowledge.tombstones import Tombstones, read_tombstones
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.knowledge.watermark import read_watermark
from memory_assets.settings import Settings

BULK_ROWS = 8192  # rows embedded and written per commit when rebuilding an empty index
OPTIMIZE_AFTER_ROWS = 1000  # a sweep that inserts this many rows compacts the table afterwards


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
    skipped_lines: int = 0
    below_watermark: bool = False
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class SweepResult:
    files_checked: int = 0
    files_updated: int = 0
    embedded: int = 0
    deleted: int = 0
    rows: int = 0
    skipped_lines: int = 0
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    optimized: bool = False
    files: list[FileResult] = field(default_factory=list)

    def add(self, result: FileResult) -> None:
        self.files.append(result)
        self.files_checked += 1
        self.files_updated += int(result.changed)
        self.embedded += result.embedded
        self.deleted += result.deleted
        self.skipped_lines += result.skipped_lines
        self.warnings += result.warnings

    def summary(self) -> dict[str, object]:
        return {
            "files_checked": self.files_checked,
            "files_updated": self.files_updated,
            "embedded": self.embedded,
            "deleted": self.deleted,
            "rows": self.rows,
            "skipped_lines": self.skipped_lines,
            "optimized": self.optimized,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
        }

    def to_dict(self) -> dict[str, object]:
        return {**self.summary(), "files": [asdict(f) for f in self.files]}


class Indexer:
    def __init__(
        self,
        settings: Settings,
        store: MemoryStore | None = None,
        embedder: Embedder | None = None,
        today: date | None = None,
    ):
        self.settings = settings
        self.store = store or MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
        self.embedder = embedder
        self.today = today or datetime.now(UTC).date()

    # -- inputs ----------------------------------------------------------------------------------
    def tombstones(self) -> Tombstones:
        return read_tombstones(self.settings.tombstones_path)

    def watermark(self) -> date | None:
        return read_watermark(self.settings.log_md)

    def plan_day(
        self,
        day: date,
        tombstones: Tombstones | None = None,
        watermark: date | None = None,
        *,
        read_watermark_file: bool = True,
    ) -> FilePlan:
        tombs = tombstones if tombstones is not None else self.tombstones()
        wm = watermark if (watermark is not None or not read_watermark_file) else self.watermark()
        return plan_archive(self.settings.archive_dir / f"{day.isoformat()}.md", day, tombs, wm)

    def plan_page(self, rel: str, tombstones: Tombstones | None = None) -> FilePlan:
        tombs = tombstones if tombstones is not None else self.tombstones()
        return plan_page(self.settings.notebook_dir, rel, tombs, self.today)

    def plan_core(self, filename: str, tombstones: Tombstones | None = None) -> FilePlan:
        tombs = tombstones if tombstones is not None else self.tombstones()
        return plan_core_file(self.settings.memory_dir, filename, tombs, self.today)

    def plan_everything(
        self, tombstones: Tombstones | None = None, extra_keys: Iterable[str] = ()
    ) -> list[FilePlan]:
        """Plans for every source file that exists, plus any ``label:filename`` in ``extra_keys``
        (files the state or the table knows of that may have been deleted)."""
        tombs = tombstones if tombstones is not None else self.tombstones()
        wm = self.watermark()
        plans: dict[str, FilePlan] = {}
        for filename in CORE_FILES:
            plan = self.plan_core(filename, tombs)
            if plan.exists or plan.key in extra_keys:
                plans[plan.key] = plan
        for day, _ in list_logs(self.settings.archive_dir):
            plan = self.plan_day(day, tombs, wm, read_watermark_file=False)
            plans[plan.key] = plan
        for rel in list_pages(self.settings.notebook_dir):
            plan = self.plan_page(rel, tombs)
            plans[plan.key] = plan
        for key in extra_keys:
            if key not in plans:
                plan = self._plan_key(key, tombs, wm)
                if plan is not None:
                    plans[key] = plan
        return list(plans.values())

    def _plan_key(self, key: str, tombs: Tombstones, wm: date | None) -> FilePlan | None:
        label, _, filename = key.partition(":")
        if label == "archive":
            try:
                day = date.fromisoformat(filename.removesuffix(".md"))
            except ValueError:
                return None
            return self.plan_day(day, tombs, wm, read_watermark_file=False)
        if label == "notebook":
            return self.plan_page(filename, tombs)
        if filename in CORE_FILES:
            return self.plan_core(filename, tombs)
        return None

    # -- applying --------------------------------------------------------------------------------
    def _require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise IndexerError("this reindex needs to embed new rows but no embedder is configured")
        return self.embedder

    def apply(self, plan: FilePlan) -> FileResult:
        """Bring the table's rows for ``plan``'s file in line with the plan."""
        start = time.perf_counter()
        result = FileResult(
            key=plan.key,
            rows=len(plan.rows),
            tombstoned=plan.tombstoned,
            skipped_lines=plan.skipped_lines,
            below_watermark=plan.below_watermark,
            warnings=list(plan.warnings),
        )
        try:
            existing, _copies = self.store.existing(plan.source_type, plan.filename)
        except Exception as exc:  # the diff query failed: fall back to a full replace of this file
            result.warnings.append(f"{plan.key}: diff query failed ({exc}); replaced the file's rows in full")
            self._replace(plan, result)
            result.seconds = time.perf_counter() - start
            return result
        desired = {row.id: row for row in plan.rows}
        gone = [i for i in existing if i not in desired]
        new = [row for row in plan.rows if row.id not in existing]
        changed = [
            row for row in plan.rows if row.id in existing and existing[row.id].scalars != row.scalars()
        ]
        if not gone and not new and not changed:
            result.seconds = time.perf_counter() - start
            return result
        embedder = self._require_embedder() if new else self.embedder
        before = embedder.computed if embedder else 0
        new_vectors = embedder.embed([r.content for r in new]) if new and embedder else np.empty((0, 0))
        if new and embedder:
            result.embedded, result.computed = len(new), embedder.computed - before
        # Only new rows need the model; a delete or an importance change never loads it.
        table = self._writable_table(embedder if new else None)
        vectors = [*new_vectors] + [existing[r.id].vector for r in changed]
        created = [None] * len(new) + [existing[r.id].created_at for r in changed]
        upserts = new + changed
        result.commits = self.store.apply_diff(
            table,
            gone,
            upserts,
            np.stack(vectors) if vectors else np.empty((0, 0)),
            created,
            insert_only=not existing,
        )
        result.deleted, result.inserted, result.updated = len(gone), len(new), len(changed)
        result.changed = True
        result.seconds = time.perf_counter() - start
        return result

    def _writable_table(self, embedder: Embedder | None) -> object:
        if embedder is not None:
            return self.store.table_for_write(embedder.model_name, embedder.dimension)
        table = self.store.table()
        if table is None:
            raise IndexerError("no index table exists yet and no embedder is configured to create one")
        return table

    def _replace(self, plan: FilePlan, result: FileResult) -> None:
        embedder = self._require_embedder() if plan.rows else self.embedder
        vectors = (
            embedder.embed([r.content for r in plan.rows]) if plan.rows and embedder else np.empty((0, 0))
        )
        table = self._writable_table(embedder if plan.rows else None)
        result.commits = self.store.replace_source(table, plan.source_type, plan.filename, plan.rows, vectors)
        result.embedded = result.inserted = len(plan.rows)
        result.fallback = result.changed = True

    # -- entry points ----------------------------------------------------------------------------
    def reindex_day(self, day: date) -> FileResult:
        """Diff one day against the table (what a day partition's materialisation runs)."""
        return self.reindex_plan(self.plan_day(day))

    def reindex_plan(self, plan: FilePlan) -> FileResult:
        """Apply one file's plan and record it in the state."""
        result = self.apply(plan)
        self._record_state({plan.key: plan.digest()})
        return result

    def reindex_files(
        self, keys: Iterable[str] | None = None, labels: Iterable[str] | None = None
    ) -> SweepResult:
        """Diff the given ``label:filename`` keys (or every file of the given labels) against the table."""
        start = time.perf_counter()
        tombs = self.tombstones()
        wanted_labels = set(labels) if labels is not None else None
        if keys is None:
            plans = [
                p
                for p in self.plan_everything(tombs, self._indexed_keys())
                if wanted_labels is None or _label_group(p.label) in wanted_labels
            ]
        else:
            wm = self.watermark()
            plans = [p for p in (self._plan_key(k, tombs, wm) for k in keys) if p is not None]
        sweep = SweepResult()
        sweep.warnings += tombs.warnings
        for plan in plans:
            sweep.add(self.apply(plan))
        self._record_state({p.key: p.digest() for p in plans}, drop=[p.key for p in plans if not p.exists])
        sweep.rows = self.store.count()
        sweep.seconds = time.perf_counter() - start
        return sweep

    def sweep(self, full: bool = False) -> SweepResult:
        """Reindex whatever changed since the last sweep (``full``: ignore the state and diff every
        file against the table; rebuild the table if the embedding model changed)."""
        start = time.perf_counter()
        if full and self.embedder is not None and self.store.exists():
            try:
                self.store.check_compatible(self.embedder.model_name, self.embedder.dimension)
            except VectorWidthMismatch:
                self.store.recreate(self.embedder.model_name, self.embedder.dimension)
        state = IndexState.load(self.settings.index_state_path, self.store.table_id)
        if full:
            state.files = {}
        tombs = self.tombstones()
        extra = set(state.files) | (self._indexed_keys() if full or not state.files else set())
        plans = self.plan_everything(tombs, extra)
        sweep = SweepResult()
        sweep.warnings += tombs.warnings
        if state.discarded:
            sweep.warnings.append(state.discarded)
        pending = []
        for plan in plans:
            if state.files.get(plan.key) == plan.digest():
                sweep.add(
                    FileResult(
                        key=plan.key,
                        rows=len(plan.rows),
                        skipped_by_state=True,
                        skipped_lines=plan.skipped_lines,
                        warnings=list(plan.warnings),
                    )
                )
            else:
                pending.append(plan)
        if pending and self.embedder is not None and self.store.count() == 0:
            results = self._bulk_insert(pending)  # an empty index: nothing to diff against
        else:
            results = [self.apply(plan) for plan in pending]
        for result in results:
            sweep.add(result)
        self._record_state(
            {p.key: p.digest() for p in plans}, drop=[p.key for p in plans if not p.exists], replace=full
        )
        inserted = sum(f.inserted for f in sweep.files)
        if sweep.files_updated and (
            full or inserted >= OPTIMIZE_AFTER_ROWS or self.store.stats().fragments > MAX_FRAGMENTS
        ):
            # New rows are searched flat until optimize folds them into the full-text index.
            self.store.optimize()
            sweep.optimized = True
        sweep.rows = self.store.count()
        sweep.seconds = time.perf_counter() - start
        return sweep

    def _bulk_insert(self, plans: list[FilePlan]) -> list[FileResult]:
        """Fill an empty table: embed across files in large batches and add, skipping the per-file
        diff queries (there is nothing to diff against). A failure part way leaves some files
        written and no state recorded, so the next sweep diffs and finishes the rest."""
        start = time.perf_counter()
        embedder = self._require_embedder()
        rows = [row for plan in plans for row in plan.rows]
        if rows:
            table = self.store.table_for_write(embedder.model_name, embedder.dimension)
            for begin in range(0, len(rows), BULK_ROWS):
                part = rows[begin : begin + BULK_ROWS]
                vectors = embedder.embed([r.content for r in part])
                self.store.apply_diff(table, [], part, vectors, [None] * len(part), insert_only=True)
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
                below_watermark=plan.below_watermark,
                warnings=list(plan.warnings),
                seconds=share * len(plan.rows),
            )
            for plan in plans
        ]

    def _indexed_keys(self) -> set[str]:
        keys = set()
        for source_type, source_file in self.store.sources(INDEXED_SOURCE_TYPES):
            if source_type == ARCHIVE:
                keys.add(f"archive:{source_file}")
            elif source_type == NOTEBOOK:
                keys.add(f"notebook:{source_file}")
            elif source_type == CORE_FILE and source_file in CORE_FILES:
                keys.add(f"{CORE_FILES[source_file]}:{source_file}")
        return keys

    def _record_state(self, digests: dict[str, str], drop: Iterable[str] = (), replace: bool = False) -> None:
        """Merge digests into the state file under a lock (Dagster runs write it concurrently)."""
        path: Path = self.settings.index_state_path
        if not path.parent.is_dir():
            return
        with file_lock(path):
            state = IndexState.load(path, self.store.table_id)
            if replace:
                state.files = {}
            state.files.update(digests)
            for key in drop:
                state.files.pop(key, None)
            state.save(path)


def _label_group(label: str) -> str:
    """'archive', 'notebook', or 'core' (persona, user and facts are all core files)."""
    return label if label in ("archive", "notebook") else "core"
