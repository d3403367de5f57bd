"""The only object that writes the table ``archival_memories``: what the indexer commits.

Design §7 invariant 2 ("the indexer is the only writer") as a property of the code: ``MemoryStore``
(``store.py``) reads and has no write method; the writes live here, and ``Indexer`` is the one
module of the package that builds a ``TableWriter`` (a test fails when any other module imports
this one). Benchmarks and tests that need a table of synthetic rows build one explicitly.

A writer commits through its store's ``TableHandle`` (``table_handle.py``), the one object that
owns the connection, the open handle's version, the journal and the rebuild generation: a commit
it makes is journaled there (``Commit``), so the store's read caches taken at the version before
are brought forward through it instead of read again. The writer changes nothing of the store
but through that handle's methods. Every caller holds the indexer's table lock.

After every commit the writer records the signatures of the table's files in the file ledger
(``table_damage.record``), so a file changed later by anything else is found before it is read;
``set_aside_if_damaged`` moves a table that cannot be read cleanly aside for a rebuild.
"""

import dataclasses
import uuid
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from memory_assets.core.failpoints import failpoint
from memory_assets.core.index import compaction, table_damage, table_reads
from memory_assets.core.index.rows import IndexRow
from memory_assets.core.index.store import (
    ANN_PARTITIONS,
    ANN_ROW_THRESHOLD,
    BrokenTableError,
    DamagedTableError,
    MemoryStore,
    StoreError,
    id_in,
    schema,
    sql_list,
)
from memory_assets.core.sources import INDEXED_SOURCE_TYPES
from memory_assets.core.text import json_object


class TableWriter:
    """Writes through ``store`` (see the module docstring)."""

    def __init__(self, store: MemoryStore):
        self.store = store
        self.handle = store.handle

    def delete_ids(self, ids: Sequence[str], batch: int) -> int:
        """Delete rows by id, ``batch`` ids per commit; the number LanceDB counted as deleted."""
        table = self.store.table()
        if table is None:
            return 0
        deleted = 0
        for begin in range(0, len(ids), batch):
            result = table.delete(id_in(ids[begin : begin + batch]))
            deleted += int(getattr(result, "num_deleted_rows", 0) or 0)
        self._record_files()
        return deleted

    def _record_files(self) -> None:
        """After a commit: the new files' signatures into the file ledger (``table_damage``)."""
        table_damage.record(table_damage.table_dir(self.store.uri, self.store.table_name))

    def set_aside_if_damaged(self) -> tuple[Path, str] | None:
        """Read the whole table in a bounded child process (``table_damage.verify``); when it cannot
        be read cleanly, rename it aside (``<table>.lance.damaged-<UTC time>``, beside it) so a
        rebuild starts empty. Returns (where it went, what was wrong), or None for a sound table.
        Call under the exclusive table lock."""
        if not self.store.exists():
            return None
        damage = table_damage.verify(self.store.uri, self.store.table_name)
        if damage is None:
            return None
        directory = table_damage.table_dir(self.store.uri, self.store.table_name)
        if directory is None or not directory.is_dir():
            raise DamagedTableError(
                self.store.damaged(damage.what)
                + " (it is not on a local disk: move it aside or drop it by hand, "
                "then run `memory-assets reindex --rebuild`)"
            )
        aside = table_damage.set_aside(directory)
        self.handle.reset(None)
        self.handle.new_generation()
        return aside, damage.what

    def table_for_write(self, model: str, dim: int) -> Any:
        """The table to write to, created when missing. Every caller holds the indexer's table lock,
        and tables are only created under it exclusively, so a table that is listed but cannot be
        opened is not being created by someone else: it is damaged, and writing a fresh table over
        it would silently drop every other file's rows."""
        table = self.store.table()
        if table is None:
            if self.store.exists():
                raise BrokenTableError(
                    f"index table {self.store.table_name} at {self.store.uri} exists but cannot be opened (its version "
                    "files are missing or damaged). The markdown is untouched: rebuild the index from it "
                    "with `memory-assets reindex --full`."
                )
            table = self._create(model, dim)
        self.store.require_current("writing the index")
        self.store.check_compatible(model, dim)
        return table

    def _create(self, model: str, dim: int) -> Any:
        table = self.store.db.create_table(
            self.store.table_name, schema=schema(dim, uuid.uuid4().hex, model), exist_ok=True
        )
        if not table.list_indices():
            _create_scalar_indexes(table, replace=False)
        self.handle.reset(table)
        self._record_files()
        return table

    def recreate(self, model: str, dim: int) -> None:
        """Drop and recreate the table (a full reindex with a new model). Refuses to drop rows that
        no markdown file holds (legacy rows), since nothing could ever bring them back."""
        if self.store.exists():
            self.store.require_current("rebuilding the table")
            legacy = self.store.count(
                f"source_type IS NULL OR source_type NOT IN ({sql_list(INDEXED_SOURCE_TYPES)})"
            )
            if legacy:
                raise StoreError(
                    f"refusing to rebuild {self.store.table_name}: {legacy} legacy row(s) are recorded in no markdown "
                    "file and would be lost. Export them to the daily logs first (legacy export), then retry."
                )
            self.store.db.drop_table(self.store.table_name)
        self.handle.reset(None)
        self._create(model, dim)
        self.handle.new_generation()

    def migrate(self) -> bool:
        """Give an assistant-era table (no first-class columns) our schema, deriving the new columns
        from each row's metadata JSON. The old version stays in the table's history. Only the
        indexer calls this, under its exclusive table lock. Returns whether anything changed."""
        if not self.store.is_legacy():
            return False
        old = self.handle.table.to_arrow()
        width = old.schema.field("vector").type.list_size
        meta = (
            [json_object(m) for m in old.column("metadata").to_pylist()]
            if "metadata" in old.schema.names
            else []
        )
        n = old.num_rows
        columns: dict[str, Any] = {}
        target = schema(width, uuid.uuid4().hex, "")
        for field in target:
            if field.name in old.schema.names:
                columns[field.name] = old.column(field.name).cast(field.type)
            else:
                columns[field.name] = pa.nulls(n, field.type)
        derived = {
            "source_type": [m.get("source_type") for m in meta],
            "source_file": [m.get("source_file") for m in meta],
            "source_date": [m.get("source_date") or _date_of(m.get("source_file")) for m in meta],
            "chunk_index": [
                m.get("chunk_index") if isinstance(m.get("chunk_index"), int) else None for m in meta
            ],
            "category": [m.get("category") for m in meta],
        }
        for name, values in derived.items():
            if len(values) == n:
                columns[name] = pa.array(values, type=target.field(name).type)
        columns["fact_date"] = columns["source_date"]
        migrated = pa.table(columns, schema=target)
        self.handle.reset(self.store.db.create_table(self.store.table_name, data=migrated, mode="overwrite"))
        _create_scalar_indexes(self.handle.table, replace=True)
        self.handle.reset(self.handle.table)  # the index builds made versions of their own
        self._record_files()
        return True

    def _arrow(
        self, table: Any, rows: Sequence[IndexRow], vectors: np.ndarray, created: Sequence[datetime | None]
    ) -> pa.Table:
        now = datetime.now(UTC).replace(tzinfo=None)
        table_schema = self.store.table_schema(table)
        dim = table_schema.field("vector").type.list_size
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        return pa.table(
            {
                "id": [r.id for r in rows],
                "content": [r.content for r in rows],
                "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
                "user_id": [self.store.user_id] * len(rows),
                "chat_id": pa.nulls(len(rows), pa.string()),
                "metadata": [r.metadata for r in rows],
                "importance": [float(r.importance) for r in rows],
                "created_at": [c or now for c in created],
                "updated_at": [now] * len(rows),
                "accessed_at": pa.nulls(len(rows), pa.timestamp("us")),
                "access_count": [0] * len(rows),
                "source_type": [r.source_type for r in rows],
                "source_file": [r.source_file for r in rows],
                "source_date": [r.source_date for r in rows],
                "chunk_index": [r.chunk_index for r in rows],
                "category": [r.category for r in rows],
                "fact_date": [r.fact_date for r in rows],
            },
            schema=table_schema,
        )

    def apply_diff(
        self,
        table: Any,
        delete_ids: Iterable[str],
        add_rows: Sequence[IndexRow],
        add_vectors: np.ndarray,
        created: Sequence[datetime | None],
    ) -> int:
        """At most two commits: one delete, one add. Returns the number of commits made.

        A changed row is deleted and added back (the caller lists its id in both): a delete by id
        and an add each touch only their rows, where a merge on id joins against the whole table
        (about a second at 50k rows)."""
        commits = 0
        ids = sorted(set(delete_ids))
        if ids:
            before = self.handle.version_before_commit(table)
            done = table.delete(id_in(ids))
            self.handle.record_commit(before, done, frozenset(ids), None)
            commits += 1
            failpoint("index.deleted")
        if add_rows:
            data = self._arrow(table, add_rows, add_vectors, created)
            before = self.handle.version_before_commit(table)
            done = table.add(data)
            self.handle.record_commit(before, done, frozenset(), data)
            commits += 1
        if commits:
            self._record_files()
        return commits

    def replace_source(
        self, table: Any, source_type: str, source_file: str, rows: Sequence[IndexRow], vectors: np.ndarray
    ) -> int:
        """Full replace of one file's rows (the fallback when the diff query fails). Not journaled:
        caches taken before it are read again."""
        try:
            table.delete(self.store.source_where(source_type, source_file))
            if rows:
                table.add(self._arrow(table, rows, vectors, [None] * len(rows)))
                return 2
            return 1
        finally:
            self.handle.version_unknown()
            self._record_files()

    def optimize(
        self,
        retention: timedelta = timedelta(days=1),
        ann_threshold: int = ANN_ROW_THRESHOLD,
        grace: timedelta = timedelta(0),
        prune_between: bool = False,
    ) -> dict[str, object]:
        """Fold new rows into the indexes, compact fragments (at most half the table's rows
        rewritten: ``compaction.compact``), build the ANN index once the table is large, then prune
        the versions older than ``retention`` and replaced more than ``grace`` ago (``_prune``: the
        version this optimize replaced stays for the readers still on it). ``prune_between``: also
        between the fold and the compaction, every version but the latest once no read is in
        flight (``prune_versions``), so the disk never holds three sets of the indexes at once.
        Failures raise: an index that is never compacted grows without bound."""
        table = self.store.table()
        if table is None:
            return {"ann_built": False}
        self.store.require_current("optimize")
        built = False
        indexed = {tuple(i.columns) for i in table.list_indices()}
        # Tables created before these indexes existed get them here.
        if ("user_id",) not in indexed:
            from lancedb.index import Bitmap

            table.create_index("user_id", config=Bitmap())
        if ("fact_date",) not in indexed:
            from lancedb.index import BTree

            table.create_index("fact_date", config=BTree())
        if table.count_rows() >= ann_threshold and not any(
            i.columns == ["vector"] for i in table.list_indices()
        ):
            from lancedb.index import IvfHnswSq

            table.create_index(
                "vector", config=IvfHnswSq(distance_type="cosine", num_partitions=ANN_PARTITIONS)
            )
            built = True
        try:
            with self.store.reading():  # a damaged file is named with the fix, not a raw Lance error
                # Index folding and compaction, nothing pruned: the prune follows, with its cutoff
                # taken then (a cutoff taken before a long compaction would fall past the versions
                # to keep).
                compaction.compact(table, (lambda: self.prune_versions(grace)) if prune_between else None)
            self._prune(table, retention, grace)
        finally:
            self.handle.version_unknown()  # the index builds and the compaction made versions
            self._record_files()
        return {"ann_built": built}

    def prune_versions(self, grace: timedelta, *, keep_latest_only: bool = False) -> "Pruned":
        """Remove every version but the latest, and the files only they held, once no read of the
        table is in flight (``table_reads.pruning``: the reads in flight are waited for, new ones
        wait meanwhile). When reads are still in flight after the wait, only the versions replaced
        more than ``grace`` ago go (``cleanup_age``), and ``Pruned.held`` says so: the caller prunes
        again later (Lance's cleanup of old versions, nothing compacted).

        ``keep_latest_only``: an erase. Every version but the latest goes whatever (a read it did
        not wait for reads again at the latest, ``MemoryStore.read``), and so do the files no
        version records, so the erased rows' bytes are gone from the disk when it returns. The
        caller holds the exclusive table lock (no writer of ours is between writing files and
        committing them, which is what makes removing the unrecorded files safe). A tagged
        version (a legacy backup) blocks a cleanup past it: then nothing is removed and
        ``Pruned.tags`` names the tags."""
        table = self.store.table()
        if table is None:
            return Pruned(False)
        tags = sorted(table.tags.list())
        if tags:
            return Pruned(False, tags=tags)
        try:
            with table_reads.pruning(self.store.uri, self.store.table_name) as clear:
                removed = self._prune(
                    table, timedelta(0), timedelta(0) if clear else grace, keep_latest_only=keep_latest_only
                )
        finally:
            self.handle.version_unknown()
            self._record_files()
        return Pruned(True, removed=removed, held=not clear and not keep_latest_only)

    def _prune(
        self, table: Any, retention: timedelta, grace: timedelta, *, keep_latest_only: bool = False
    ) -> int:
        """The versions older than ``retention`` and replaced more than ``grace`` ago removed (all
        but the latest with ``keep_latest_only``); how many were. Nothing is called when nothing
        would go."""
        versions = table.list_versions()
        now = datetime.now(UTC)
        if keep_latest_only:
            age: timedelta | None = timedelta(0)
        else:
            age = cleanup_age(versions, grace, now)
            age = None if age is None else max(age, retention)
        older = [
            v for v in sorted(versions, key=_number)[:-1] if (_stamp(v) or now) < now - (age or timedelta(0))
        ]
        if age is None or not (older or keep_latest_only):
            return 0  # nothing would go: no call; an erase always
            # calls, for the files no version records
        with self.store.reading():
            # Lance's cleanup alone (LanceDB's optimize would compact every fragment first). A
            # tagged version stays (``prune_versions`` refuses a tagged table beforehand).
            table.checkout_latest()
            table.to_lance().cleanup_old_versions(
                age, delete_unverified=keep_latest_only, error_if_tagged_old_versions=False
            )
        table.checkout_latest()
        left = {_number(v) for v in table.list_versions()}
        return sum(_number(v) not in left for v in versions)

    def purge(self) -> bool:
        """What an erase asks after deleting rows: compact, build again every index that is made from
        the rows' text or vectors (the full-text index, the ANN index when there is one: an index
        may keep entries of rows deleted since it was built), then prune every version but the
        latest (``prune_versions(keep_latest_only=True)``: the files no version records go too), so no
        file of the table holds a deleted row; a reader in another process reads again at the
        latest. False when a tagged version blocks the cleanup (the caller refuses beforehand)."""
        table = self.store.table()
        if table is None:
            return True
        self.store.require_current("purge")
        try:
            with self.store.reading(), warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                table.optimize(cleanup_older_than=KEEP_EVERY_VERSION)  # the prune below waits for reads
                _create_scalar_indexes(table, replace=True)
                if any(i.columns == ["vector"] for i in table.list_indices()):
                    from lancedb.index import IvfHnswSq

                    table.create_index(
                        "vector",
                        config=IvfHnswSq(distance_type="cosine", num_partitions=ANN_PARTITIONS),
                        replace=True,
                    )
        finally:
            self.handle.version_unknown()
            self._record_files()
        return self.prune_versions(timedelta(0), keep_latest_only=True).done


@dataclass(frozen=True)
class Pruned:
    """What ``prune_versions`` did: ``done`` False when there was no table, or a tagged version
    (``tags``) blocked it; ``removed``: how many versions it removed; ``held``: reads were in
    flight, so the versions replaced within the grace were kept (prune again once it has passed)."""

    done: bool
    removed: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)
    held: bool = False


KEEP_EVERY_VERSION = timedelta(days=36500)  # an optimize's own cleanup, which then prunes nothing
# A prune's cutoff falls between two versions committed at least this far apart (versions closer
# than this, a reindex's delete and add or an optimize's steps, are kept or removed together) ...
CUTOFF_GAP = timedelta(seconds=2)
# ... half way between them, at most this far before the one kept: LanceDB turns the age it is
# given into a cutoff from its own clock a moment later, which must not cross the version kept.
CUTOFF_MARGIN = timedelta(seconds=5)


def cleanup_age(versions: Sequence[Any], grace: timedelta, now: datetime) -> timedelta | None:
    """The ``cleanup_older_than`` that removes only versions replaced by a newer one more than
    ``grace`` before ``now``, given the table's ``versions`` (``list_versions()``); None when no
    version can go.

    LanceDB removes every version committed before its cutoff (the latest excepted), however
    recently a newer version replaced it: a reader opens the latest version, and a version
    committed a day ago may have been the latest a moment ago. So the cutoff is set before the
    oldest version whose successor was committed within ``grace``, and every version from it on
    stays: a read that began on any of them has had ``grace``
    to finish. When only the latest must stay, the age is zero (exact: LanceDB keeps the latest)."""
    if grace <= timedelta(0):
        return timedelta(0)
    stamps = [_stamp(v) for v in sorted(versions, key=_number)]
    if len(stamps) < 2 or any(s is None for s in stamps):
        return None
    times: list[datetime] = [s for s in stamps if s is not None]
    since = now - grace
    keep = next((i for i in range(len(times) - 1) if times[i + 1] >= since), len(times) - 1)
    if keep == len(times) - 1:
        return timedelta(0)
    while keep > 0 and times[keep] - times[keep - 1] < CUTOFF_GAP:
        keep -= 1
    if keep == 0:
        return None
    cutoff = times[keep] - min((times[keep] - times[keep - 1]) / 2, CUTOFF_MARGIN)
    return now - cutoff


def _number(version: Any) -> int:
    """A ``list_versions()`` entry's version number."""
    return int(version["version"] if isinstance(version, dict) else version.version)


def _stamp(version: Any) -> datetime | None:
    """A ``list_versions()`` entry's commit time (UTC), or None when it has none."""
    stamp = version.get("timestamp") if isinstance(version, dict) else getattr(version, "timestamp", None)
    if not isinstance(stamp, datetime):
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _create_scalar_indexes(table: Any, replace: bool) -> None:
    """Full text on content; scalar indexes on what reads and the diff filter on."""
    from lancedb.index import FTS, Bitmap, BTree

    table.create_index("content", config=FTS(), replace=replace)
    table.create_index("id", config=BTree(), replace=replace)
    table.create_index("source_file", config=BTree(), replace=replace)
    table.create_index("source_type", config=Bitmap(), replace=replace)
    table.create_index("user_id", config=Bitmap(), replace=replace)
    table.create_index("fact_date", config=BTree(), replace=replace)  # date windows, recent facts


def _date_of(source_file: object) -> str | None:
    if isinstance(source_file, str) and len(source_file) == 13 and source_file.endswith(".md"):
        return source_file[:10]
    return None
