"""The derived tier: the LanceDB table ``archival_memories``.

Columns compatible with the assistant's table (id, content, vector, user_id, chat_id, metadata
JSON, importance, created_at, updated_at, accessed_at, access_count) beside first-class columns
for what is filtered on (source_type, source_file, source_date, chunk_index, category,
fact_date). Scalar and full-text indexes are created once, with the table, through
``create_index``; an ANN index is added by ``optimize`` above a row threshold.

The table's schema metadata records a table id (so indexer state recorded against another table
is discarded) and the embedding model and width that produced its vectors (so a model change is
a clear error naming the fix, never silently mixed vectors).

Only the indexer writes through this class (invariant 2); retrieval only reads. Reads never
write: opening an assistant-era table (no first-class columns) leaves it exactly as it is. Reads
that need the new columns raise ``LegacyTableError`` naming ``memory-assets migrate``; migrating is
an explicit step the indexer owns (``reindex`` and ``migrate`` run it).

A version of the table never changes (a LanceDB version is an immutable snapshot), so what is
read from one version is cached against it: the schema, the read facts, a file's rows for the
diff. Every call still opens the latest version first (``table()``); only the reading is saved.
The store reads through a ``TableHandle`` (``table_handle.py``) it shares with the writer, which
journals the writer's commits (``apply_diff``): a commit that produced version N+1 from exactly
version N is a known delta, so a cache taken at version N is brought forward through it instead
of read again (``changes_since``). Any other change (another process or handle, an optimize, a
full replace, a rebuild) breaks the chain and the cache is re-read.

Damage to the table's files (``table_damage.py``) is looked for once per version before it is read
(a stat per file; the whole table read in a bounded child process only when a file changed since
its writer recorded it), and a raw LanceDB error from a read (``LanceError(IO)``, a Rust panic, a
missing file) becomes ``DamagedTableError``, naming the table, what is wrong and the fix
(``memory-assets reindex --rebuild``), instead of a Rust message or an allocation without bound.
"""

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from memory_assets.core.index import table_damage, table_reads
from memory_assets.core.index.table_handle import Commit, TableHandle
from memory_assets.core.settings import Settings
from memory_assets.core.sources import INDEXED_SOURCE_TYPES, TRANSCRIPT

TABLE_ID_KEY = b"memory_assets.table_id"
MODEL_KEY = b"memory_assets.embedding_model"
ANN_ROW_THRESHOLD = 50_000
# Bounds the maintenance keeps the table within (the table_bounded check fails past them): past
# 64 fragments reads slow down; 2,000 versions is about 1,000 file reindexes within one retention
# window, far above a busy day's.
MAX_FRAGMENTS = 64
MAX_VERSIONS = 2000
ANN_PARTITIONS = 64
SCALAR_COLUMNS = (
    "content",
    "source_type",
    "source_file",
    "chunk_index",
    "category",
    "importance",
    "source_date",
    "fact_date",
    "metadata",
)
EXISTING_COLUMNS = ("id", *SCALAR_COLUMNS, "vector", "created_at")  # what the diff reads of a file


class StoreError(RuntimeError):
    pass


class VectorWidthMismatch(StoreError):
    """The table's vectors come from another model or width than the configured embedder."""


class BrokenTableError(StoreError):
    """The table's directory is there but no version of it can be opened."""


class DamagedTableError(BrokenTableError):
    """The table's files are damaged (missing, truncated, overwritten, corrupt): rebuild it."""


class VersionGoneError(DamagedTableError):
    """A file of the version being read is not there: that version pruned under the read by a writer
    elsewhere, or damage. Raised inside a read only: ``MemoryStore.read`` reads once more at the
    latest version, and only a second miss is damage (``DamagedTableError``)."""


REBUILD_FIX = (
    "The markdown is untouched and the index is a function of it: run `memory-assets reindex --rebuild`, "
    "which moves the damaged table aside (renamed beside it, nothing deleted) and rebuilds it from the markdown"
)

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")
SETTLE_SECONDS = 2.0  # how long a read waits for a concurrent writer to commit or record its new files


def _reads(method: F) -> F:
    """A read of the table (``MemoryStore.read``): its raw LanceDB errors about the table's files
    named, and read once more at the latest version when a file of its version is gone."""

    @functools.wraps(method)
    def wrapper(self: "MemoryStore", *args: Any, **kwargs: Any) -> Any:
        return self.read(lambda: method(self, *args, **kwargs))

    return wrapper  # type: ignore[return-value]


class LegacyTableError(StoreError):
    """The table is still in the assistant's format; this operation needs it migrated first."""


def quote(value: str) -> str:
    """A SQL string literal for a LanceDB predicate (quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def id_in(ids: Iterable[str]) -> str:
    """The where clause selecting rows by id."""
    return f"id IN ({sql_list(ids)})"


def schema(dim: int, table_id: str, model: str) -> pa.Schema:
    ts = pa.timestamp("us")
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("content", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field("user_id", pa.string()),
            pa.field("chat_id", pa.string()),
            pa.field("metadata", pa.string()),
            pa.field("importance", pa.float64()),
            pa.field("created_at", ts),
            pa.field("updated_at", ts),
            pa.field("accessed_at", ts),
            pa.field("access_count", pa.int64()),
            pa.field("source_type", pa.string()),
            pa.field("source_file", pa.string()),
            pa.field("source_date", pa.string()),
            pa.field("chunk_index", pa.int32()),
            pa.field("category", pa.string()),
            pa.field("fact_date", pa.string()),
        ],
        metadata={TABLE_ID_KEY: table_id.encode(), MODEL_KEY: model.encode()},
    )


@dataclass
class Existing:
    """A row already in the table, as the diff needs it."""

    scalars: tuple[object, ...]
    vector: np.ndarray
    created_at: datetime | None


@dataclass
class TableStats:
    rows: int
    fragments: int
    version: int
    bytes: int
    indices: list[str]
    versions: int = 0  # versions kept on disk (optimize prunes those older than the retention)
    legacy: bool = False  # still in the assistant's format (needs `memory-assets migrate`)


class MemoryStore:
    def __init__(
        self,
        uri: str,
        table_name: str = "archival_memories",
        user_id: str = "default-user",
        storage_options: Mapping[str, str] | None = None,
    ):
        self.uri = uri
        self.table_name = table_name
        self.user_id = user_id
        # The connection, the open handle, its version, the journal and the generation: shared with
        # the writer (``table_writer.py``), which commits through the same handle.
        self.handle = TableHandle(uri, table_name, storage_options)
        self.handle.on_reset(self._forget)
        self._reader: Any = None  # the table through LanceDB's async API: retrieval's queries
        self._facts: dict[str, Any] = {}
        self._schema: tuple[int, pa.Schema] | None = None
        self._existing: dict[tuple[str, str], tuple[int, dict[str, Existing]]] = {}
        self._pin: tuple[int, int] | None = None  # (thread id, depth) of a ``snapshot``
        self._guarded: int | None = None  # the version last looked over for damage (``_guard``)
        self._damage: tuple[int, str] | None = None  # (version, message) of damage found there
        self._local = threading.local()  # ``depth``: reads in progress on this thread (``read``)
        self.reread = 0  # reads read again at the latest version after a file of theirs was gone

    @classmethod
    def of(cls, settings: Settings) -> "MemoryStore":
        """The store of a home's settings: its index URI, table name and user id."""
        return cls(settings.index_uri, settings.table_name, settings.user_id, settings.storage_options())

    # -- opening ---------------------------------------------------------------------------------
    @property
    def db(self) -> Any:
        return self.handle.db

    @property
    def storage_options(self) -> dict[str, str]:
        """The object-storage options this store connects with (a copy)."""
        return self.handle.storage_options

    async def read_latest(self) -> "tuple[ReadFacts, Any] | None":
        """``_read_latest``, its raw LanceDB errors about the table's files named (``reading``)."""
        with self.reading():
            return await self._read_latest()

    async def _read_latest(self) -> "tuple[ReadFacts, Any] | None":
        """The latest version's read facts and the table through LanceDB's async API (None when no
        table exists). Retrieval awaits all of a search's queries in one coroutine
        (``async_reads.run``) instead of crossing to LanceDB's background loop for each: once the
        async handle is open, a search whose version's facts are known reads nothing through the
        synchronous API. The handle shares this store's session, so the ANN and full-text indexes
        are cached once for both."""
        if self.handle.replaced():
            self.handle.reset(None)
        reader = self._reader
        if reader is None:
            facts = self.read_facts()  # opens the table, or finds none
            if facts is None:
                return None
            import lancedb

            db = await lancedb.connect_async(
                self.uri, session=self.handle.session(), **self.handle.connect_options()
            )
            reader = self._reader = await db.open_table(self.table_name)
            return facts, reader
        await reader.checkout_latest()
        version = await reader.version()
        cached = self._facts.get("read")
        if cached is not None:
            # Only this store's own commits since (the write path's turns): carried forward from
            # what they added and deleted, with no call through the synchronous handle.
            chain = self.handle.chain(cached.version, version)
            if chain is not None:
                return self._facts_forward(cached, chain, version), reader
        facts = self.read_facts()
        return (facts, reader) if facts is not None else None

    def exists(self) -> bool:
        return self.handle.exists()

    def read(self, fn: Callable[[], R]) -> R:
        """``fn()`` as one read of the table (design §8.6), holding the table's reads
        (``table_reads``: a prune waits for it). Its raw LanceDB errors about the table's files
        are named (``reading``). When a file of the version it reads is not there
        (``VersionGoneError``), the table is opened afresh and ``fn()`` runs once more, at the
        latest version: a prune in another process may have removed the version under it (one
        that did not wait for this read: the read outlasted the prune's wait and the retention,
        ``MEMORY_LANE_VERSION_RETENTION_S``, or it was an erase's). A second miss is damage:
        ``DamagedTableError``, naming the fix.

        Every read of the store goes through here (``search``, ``keyword_search`` and each read
        method). A read made inside another on the same thread is that read's part: the outer one
        reads again. Inside a ``snapshot`` (a writer's, under the table lock no prune runs under)
        nothing is read again."""
        if getattr(self._local, "depth", 0) or self._pinned():
            with self.reading():
                return fn()
        self._local.depth = 1
        try:
            try:
                with table_reads.reading(self.uri, self.table_name), self.reading():
                    return fn()
            except VersionGoneError:
                self.reopen()
                self.reread += 1
            try:
                with table_reads.reading(self.uri, self.table_name), self.reading():
                    return fn()
            except VersionGoneError as exc:
                raise DamagedTableError(str(exc)) from exc
        finally:
            self._local.depth = 0

    def reopen(self) -> None:
        """Drop the open handles and what was read through them: the next read opens the table
        afresh, at its latest version."""
        self.handle.reset(None)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Raw LanceDB errors about the table's files, raised inside, become ``DamagedTableError``
        (naming the table, what is wrong and the fix): ``VersionGoneError`` when a file is not there
        (``read`` reads again); every other error passes unchanged."""
        try:
            yield
        except StoreError:
            raise
        except BaseException as exc:  # a Rust panic surfaces as a BaseException (PanicException)
            what = table_damage.explain(exc)
            if what is None:
                raise
            gone = table_damage.missing_file(exc) is not None
            raise (VersionGoneError if gone else DamagedTableError)(self.damaged(what)) from exc

    def damaged(self, what: str) -> str:
        """The message of a damaged table: which, what is wrong, and the fix."""
        return f"index table {self.table_name} at {self.uri} is damaged: {what}. {REBUILD_FIX}."

    def _guard(self) -> None:
        """Before the first read of each version: an index the version lists whose files are gone,
        or a data or index file that changed since its writer recorded it (``table_damage``), is
        ``DamagedTableError`` before LanceDB reads a byte of it. Changed files are read in a
        bounded child process first, so a copied home (new mtimes) costs one read, not an error.
        A version reached from the last one looked over through this store's own commits only (the
        write path's turns) is not looked over again: those commits recorded their own files."""
        version = self.handle.current_version()
        if self._guarded == version:
            return
        if self._guarded is not None and self.handle.chain(self._guarded, version) is not None:
            self._guarded = version
            return
        if self._damage is not None and self._damage[0] == version:  # found before: not read again
            raise DamagedTableError(self._damage[1])
        directory = table_damage.table_dir(self.uri, self.table_name)
        if directory is not None:
            uuids = {
                i.name: str(getattr(i, "index_uuid", "") or "") for i in self.handle.table.list_indices()
            }
            gone = table_damage.missing_indexes(directory, uuids)
            if gone:  # this version's: pruned under this read, or damage (``read`` reads again)
                raise VersionGoneError(
                    self.damaged(f"the files of its index(es) {', '.join(gone)} are gone (under _indices/)")
                )
            what = None
            if table_damage.suspects(directory, settle_seconds=SETTLE_SECONDS):
                damage = table_damage.verify(self.uri, self.table_name)
                what = None if damage is None else damage.what
            if what is not None:
                self._damage = (version, self.damaged(what))
                raise DamagedTableError(self._damage[1])
        self._guarded = version

    @_reads
    def table(self) -> Any | None:
        """The table at its latest version, or None when nothing has been indexed yet (reads never
        create or change it). Inside ``snapshot()``, on the thread that took it: the version the
        snapshot opened (moved forward by the commits made inside). A damaged table raises
        ``DamagedTableError`` (see ``_guard``)."""
        handle = self.handle
        if self._pinned():
            return handle.table
        if handle.replaced():
            handle.reset(None)  # another handle rebuilt the table: open it afresh
        if handle.table is None and self.exists():
            try:
                table = self.db.open_table(self.table_name)
            except ValueError as exc:  # listed, but its first version is still being written
                if "not found" not in str(exc):
                    raise
                lost = table_damage.lost_versions(table_damage.table_dir(self.uri, self.table_name))
                if lost:  # or it holds data that no version records any more
                    raise DamagedTableError(self.damaged(lost)) from exc
                return None
            handle.reset(table)
        elif handle.table is not None:
            handle.checkout_latest()
        if handle.table is not None:
            self._guard()
        return handle.table

    def opened(self) -> bool:
        """Whether this store has the table open (so it existed when opened)."""
        return self.handle.table is not None

    def _pinned(self) -> bool:
        pin = self._pin
        return pin is not None and pin[0] == threading.get_ident() and self.handle.table is not None

    @contextmanager
    def snapshot(self) -> Iterator[Any | None]:
        """Open the latest version once and keep it for a multi-step operation on this thread (the
        indexer's diff and apply of one file, under its lock) instead of re-opening the latest
        version at every step. Other threads are unaffected; nested snapshots share the outer one."""
        if self._pinned():
            yield self.handle.table
            return
        table = self.table()
        if table is None:
            yield None
            return
        self._pin = (threading.get_ident(), 1)
        try:
            yield table
        finally:
            self._pin = None

    def _forget(self) -> None:
        """A new handle (opened, created, migrated, rebuilt): nothing read through the old one
        carries over (``TableHandle.reset`` calls this)."""
        self._reader = None
        self._guarded = None
        self._damage = None
        self._schema = None
        self._facts.clear()
        self._existing.clear()

    @_reads
    def table_schema(self, table: Any | None = None) -> pa.Schema | None:
        """The schema of ``table`` (default: the latest version), read once per version: adds and
        deletes never change it, so it carries across this store's own commits."""
        table = table if table is not None else self.table()
        if table is None:
            return None
        if table is not self.handle.table:
            return table.schema
        version = self.handle.current_version()
        cached = self._schema
        if cached is None or (cached[0] != version and self.handle.chain(cached[0], version) is None):
            cached = (version, table.schema)
        self._schema = (version, cached[1])
        return cached[1]

    def changes_since(self, version: int) -> list[Commit] | None:
        """This store's own commits that lead from ``version`` to the latest version (``[]`` when
        ``version`` is the latest), or None when anything else changed the table in between."""
        if self.table() is None:
            return None
        return self.handle.chain(version, self.handle.current_version())

    def still_at(self, version: int) -> bool:
        """Whether the handle is at ``version`` now (asked of the handle, not remembered): after a
        read that must be known to have read exactly that version."""
        return self.handle.still_at(version)

    def current_version(self) -> int | None:
        """The latest version (or the snapshot's), None without a table."""
        return None if self.table() is None else self.handle.current_version()

    def is_legacy(self) -> bool:
        """True for an assistant-era table: no first-class columns until ``migrate()`` runs."""
        schema_ = self.table_schema()
        return schema_ is not None and "source_type" not in schema_.names

    def require_current(self, what: str) -> None:
        """Raise a clear error when ``what`` needs the migrated schema and the table has not got it."""
        if self.is_legacy():
            raise LegacyTableError(
                f"{what} needs the index table {self.table_name} at {self.uri} migrated from the "
                "assistant's format; reads never change a table. Run `memory-assets migrate` (or "
                "`memory-assets reindex`, which migrates first)."
            )

    @property
    def table_id(self) -> str | None:
        schema_ = self.table_schema()
        if schema_ is None:
            return None
        return (schema_.metadata or {}).get(TABLE_ID_KEY, b"").decode() or None

    def vector_width(self) -> int | None:
        schema_ = self.table_schema()
        return None if schema_ is None else schema_.field("vector").type.list_size

    def model(self) -> str | None:
        schema_ = self.table_schema()
        if schema_ is None:
            return None
        return (schema_.metadata or {}).get(MODEL_KEY, b"").decode() or None

    def check_compatible(self, model: str, dim: int) -> None:
        width, stored = self.vector_width(), self.model()
        if width is None:
            return
        if width != dim or (stored not in (None, "", model)):
            raise VectorWidthMismatch(
                f"index table {self.table_name} at {self.uri} holds {width}-wide vectors from model "
                f"{stored or 'unknown'!r}, but the configured model {model!r} produces {dim}-wide vectors. "
                "Run a full reindex (`memory-assets reindex --full`) to rebuild the table with this model."
            )

    def check_query_width(self, dim: int) -> None:
        """A query vector must be as wide as the table's vectors (a model change needs a rebuild)."""
        facts = self.read_facts()
        if facts is not None:
            facts.check_query_width(dim, f"{self.uri} ({self.table_name})")

    # -- reading ---------------------------------------------------------------------------------
    def source_where(self, source_type: str, source_file: str) -> str:
        """The filter of one file's rows of this store's user."""
        return (
            f"user_id = {quote(self.user_id)} AND source_type = {quote(source_type)} "
            f"AND source_file = {quote(source_file)}"
        )

    @_reads
    def existing(self, source_type: str, source_file: str) -> tuple[dict[str, Existing], dict[str, int]]:
        """The rows stored for one file, by id, and how many copies of each id there are when an id
        is stored more than once (a table damaged by an earlier concurrent writer).

        Read from the latest version, except that when this store read the file's rows at an
        earlier version and only its own commits came since (``changes_since``), those rows (as
        parsed) are brought forward through the commits instead of queried again: the same rows,
        in the same order."""
        table = self.table()
        if table is None:
            return {}, {}
        self.require_current("the indexer's diff")
        source = (source_type, source_file)
        version = self.handle.current_version()
        rows = self._existing_forward(source, version)
        if rows is not None:
            self._existing[source] = (version, rows)
            return dict(rows), {}
        data = (
            table.search()
            .where(self.source_where(source_type, source_file))
            .select(list(EXISTING_COLUMNS))
            .limit(None)
            .to_arrow()
        )
        out, copies = _existing_rows(data)
        if copies:  # a damaged file is always read afresh (which copy comes first is the table's)
            self._existing.pop(source, None)
        else:
            self._existing[source] = (version, out)
        return dict(out), copies

    def _existing_forward(self, source: tuple[str, str], version: int) -> dict[str, Existing] | None:
        """A file's rows read at an earlier version, brought to ``version`` through this store's own
        commits (deleted ids dropped, the file's added rows appended); None when they were not
        read, anything else came between, or an added id is already there (read it afresh)."""
        cached = self._existing.get(source)
        chain = None if cached is None else self.handle.chain(cached[0], version)
        if cached is None or chain is None:
            return None
        rows = cached[1]
        if chain:
            rows = dict(rows)
        for commit in chain:
            for row_id in commit.deleted_ids:
                rows.pop(row_id, None)
            added = commit.added
            if added.num_rows:
                mine = pc.and_(
                    pc.and_(
                        pc.equal(added.column("user_id"), self.user_id),
                        pc.equal(added.column("source_type"), source[0]),
                    ),
                    pc.equal(added.column("source_file"), source[1]),
                )
                added = added.filter(mine).select(list(EXISTING_COLUMNS))
                if added.num_rows:
                    new, copies = _existing_rows(added)
                    if copies or any(row_id in rows for row_id in new):
                        return None
                    rows.update(new)
        return rows

    @_reads
    def ids(self, source_type: str, source_file: str) -> set[str]:
        """The ids stored for one file (no vectors read): what the row checks compare."""
        table = self.table()
        if table is None:
            return set()
        self.require_current("comparing a file's rows")
        data = table.search().where(self.source_where(source_type, source_file)).select(["id"]).limit(None)
        return set(data.to_arrow().column("id").to_pylist())

    @_reads
    def sources_with_duplicate_ids(self) -> set[tuple[str, str]]:
        """(source_type, source_file) of every file with an id stored more than once: one scan of
        two columns, so a sweep can find and repair damage its state would otherwise skip."""
        table = self.table()
        if table is None or self.is_legacy():
            return set()
        data = table.search().select(["id", "source_type", "source_file"]).limit(None).to_arrow()
        frame = pl.from_arrow(data)
        dupes = frame.filter(pl.col("id").is_duplicated()).select("source_type", "source_file").unique()
        return {(t, f) for t, f in dupes.iter_rows() if t is not None and f is not None}

    @_reads
    def count(self, where: str | None = None) -> int:
        table = self.table()
        if table is None:
            return 0
        return int(table.count_rows(where) if where else table.count_rows())

    @_reads
    def sources(self, source_types: Sequence[str] = INDEXED_SOURCE_TYPES) -> set[tuple[str, str]]:
        """Distinct (source_type, source_file) pairs present in the table."""
        table = self.table()
        if table is None:
            return set()
        self.require_current("listing the indexed files")
        data = (
            table.search()
            .where(f"user_id = {quote(self.user_id)} AND source_type IN ({sql_list(source_types)})")
            .select(["source_type", "source_file"])
            .limit(None)
            .to_arrow()
        )
        return set(
            zip(data.column("source_type").to_pylist(), data.column("source_file").to_pylist(), strict=True)
        )

    @_reads
    def contents(self, where: str | None = None) -> list[tuple[str, str, str | None]]:
        """(id, content, source_type) of every row (optionally filtered): for audits and checks.
        Works on an assistant-era table too, whose rows have no source_type yet (None)."""
        table = self.table()
        if table is None:
            return []
        legacy = self.is_legacy()
        query = table.search().select(["id", "content"] if legacy else ["id", "content", "source_type"])
        query = query.limit(None)
        if where:
            query = query.where(where)
        data = query.to_arrow()
        ids, texts = data.column("id").to_pylist(), data.column("content").to_pylist()
        types = [None] * len(ids) if legacy else data.column("source_type").to_pylist()
        return list(zip(ids, texts, types, strict=True))

    @_reads
    def scan(self, columns: Sequence[str], where: str | None = None) -> pa.Table:
        """Selected columns of every row (vectors included when asked), as one Arrow table."""
        table = self.table()
        if table is None:
            return pa.table({c: pa.array([], pa.string()) for c in columns})
        missing = [c for c in columns if c not in self.table_schema(table).names]
        if missing:
            self.require_current(f"reading column(s) {', '.join(missing)}")
        query = table.search().select(list(columns)).limit(None)
        if where:
            query = query.where(where)
        return query.to_arrow()

    def retained_contents(self) -> list[tuple[int, list[str]]]:
        """Every retained version's texts (``content``), read through LanceDB on a handle of its own:
        what an erase checks last, since a version kept for readers still holds the rows it had."""
        if not self.exists():
            return []
        handle = self.db.open_table(self.table_name)
        out: list[tuple[int, list[str]]] = []
        for entry in handle.list_versions():
            version = int(entry["version"] if isinstance(entry, dict) else entry.version)
            handle.checkout(version)
            texts = handle.search().select(["content"]).limit(None).to_arrow().column("content").to_pylist()
            out.append((version, [t for t in texts if isinstance(t, str)]))
        return out

    @_reads
    def versions_older_than(self, age: timedelta) -> int:
        """How many kept versions are older than ``age``: the ones an optimize with that retention
        prunes (the latest version is never pruned)."""
        table = self.table()
        if table is None:
            return 0
        versions = table.list_versions()
        cutoff = datetime.now(UTC) - age
        old = 0
        for v in versions[:-1]:
            stamp = v["timestamp"] if isinstance(v, dict) else getattr(v, "timestamp", None)
            if isinstance(stamp, datetime):
                stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
                old += stamp < cutoff
        return old

    @_reads
    def stats(self) -> TableStats:
        table = self.table()
        if table is None:
            return TableStats(0, 0, 0, 0, [])
        s = table.stats()
        frag = s.fragment_stats if hasattr(s, "fragment_stats") else s["fragment_stats"]
        fragments = frag.num_fragments if hasattr(frag, "num_fragments") else frag["num_fragments"]
        total = s.total_bytes if hasattr(s, "total_bytes") else s["total_bytes"]
        rows = s.num_rows if hasattr(s, "num_rows") else s["num_rows"]
        return TableStats(
            int(rows),
            int(fragments),
            int(table.version),
            int(total),
            [i.name for i in table.list_indices()],
            versions=len(table.list_versions()),
            legacy="source_type" not in table.schema.names,
        )

    @_reads
    def version(self) -> int:
        table = self.table()
        return 0 if table is None else int(table.version)

    # -- writing (the indexer's) -------------------------------------------------------------------

    @_reads
    def read_facts(self) -> "ReadFacts | None":
        """What a read needs to know about the table (width, indexes, row count, whether one user
        owns every row), computed once per table version: reads are hot, facts change only with a
        write. Across this store's own commits (adds and deletes of its user's rows) they are
        carried forward: the same indexes and schema, the row count moved by what was added and
        deleted. None when no table exists."""
        table = self.table()
        if table is None:
            return None
        version = self.handle.current_version()
        cached = self._facts.get("read")
        if cached is not None and cached.table is table:
            chain = self.handle.chain(cached.version, version)  # [] at the same version
            if chain is not None:
                return self._facts_forward(cached, chain, version)
        indexed = [tuple(i.columns) for i in table.list_indices()]
        table_schema = self.table_schema(table)
        facts = ReadFacts(
            table=table,
            version=version,
            rows=table.count_rows(),
            width=table_schema.field("vector").type.list_size,
            model=(table_schema.metadata or {}).get(MODEL_KEY, b"").decode() or None,
            legacy="source_type" not in table_schema.names,
            ann=("vector",) in indexed,
            fts=("content",) in indexed,
            single_user=table.count_rows(f"user_id != {quote(self.user_id)} OR user_id IS NULL") == 0,
            turns="source_type" in table_schema.names
            and table.count_rows(f"source_type = {quote(TRANSCRIPT)}") > 0,
        )
        self._facts["read"] = facts
        return facts

    def _facts_forward(self, cached: "ReadFacts", chain: list[Commit], version: int) -> "ReadFacts":
        """``cached`` brought to ``version`` through this store's own commits ``chain``: the same
        indexes and schema, the row count moved by what was added and deleted."""
        if not chain:
            return cached
        added = [c.added for c in chain if c.added.num_rows]
        facts = replace(
            cached,
            version=version,
            rows=cached.rows + sum(t.num_rows for t in added) - sum(c.deleted_rows for c in chain),
            single_user=cached.single_user
            and all(pc.all(pc.equal(t.column("user_id"), self.user_id)).as_py() for t in added),
            # a delete leaves it set: a search then runs turn legs that find nothing, never wrong
            turns=cached.turns
            or any(pc.any(pc.equal(t.column("source_type"), TRANSCRIPT)).as_py() for t in added),
        )
        self._facts["read"] = facts
        return facts

    def has_fts_index(self) -> bool:
        facts = self.read_facts()
        return bool(facts and facts.fts)

    def has_ann_index(self) -> bool:
        facts = self.read_facts()
        return bool(facts and facts.ann)


@dataclass
class ReadFacts:
    """Facts about one version of the table (see ``MemoryStore.read_facts``)."""

    table: Any
    version: int
    rows: int
    width: int
    model: str | None
    legacy: bool
    ann: bool
    fts: bool
    single_user: bool  # every row is this store's user's: reads may skip the user filter
    turns: bool = False  # the table holds transcript rows (the recall tier): search adds turn legs

    def check_query_width(self, dim: int, where: str) -> None:
        """A query vector must be as wide as the table's vectors (a model change needs a rebuild)."""
        if self.width != dim:
            raise VectorWidthMismatch(
                f"index table at {where} holds {self.width}-wide vectors from model "
                f"{self.model or 'unknown'!r}, but the configured embedding model produces {dim}-wide "
                "vectors. Configure the model the index was built with, or rebuild the index for this "
                "model with `memory-assets reindex --full`."
            )


def sql_list(values: Iterable[str]) -> str:
    return ", ".join(quote(v) for v in values)


def _existing_rows(data: pa.Table) -> tuple[dict[str, Existing], dict[str, int]]:
    """``existing``'s answer from a file's rows (columns ``EXISTING_COLUMNS``): by id, the first
    copy of an id kept, and the number of copies of every id stored more than once."""
    out: dict[str, Existing] = {}
    copies: dict[str, int] = {}
    cols = {name: data.column(name).to_pylist() for name in ("id", *SCALAR_COLUMNS, "created_at")}
    vectors = data.column("vector").to_numpy(zero_copy_only=False) if data.num_rows else []
    for i, row_id in enumerate(cols["id"]):
        scalars = tuple(
            round(cols[c][i], 6) if c == "importance" and cols[c][i] is not None else cols[c][i]
            for c in SCALAR_COLUMNS
        )
        if row_id in out:
            copies[row_id] = copies.get(row_id, 1) + 1
            continue
        out[row_id] = Existing(scalars, np.asarray(vectors[i], dtype=np.float32), cols["created_at"][i])
    return out, copies
