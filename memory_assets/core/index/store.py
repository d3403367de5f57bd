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
"""

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from memory_assets.core.failpoints import failpoint
from memory_assets.core.index.rows import INDEXED_SOURCE_TYPES, IndexRow
from memory_assets.core.text import json_object

TABLE_ID_KEY = b"memory_assets.table_id"
MODEL_KEY = b"memory_assets.embedding_model"
ANN_ROW_THRESHOLD = 50_000
# Bounds the maintenance keeps the table within (the table_bounded check fails past them): past
# 64 fragments reads slow down; 2,000 versions is about 1,000 file reindexes within one retention
# window, far above a busy day's.
MAX_FRAGMENTS = 64
MAX_VERSIONS = 2000
ANN_PARTITIONS = 64
LEGACY_SOURCE_TYPE = "legacy_direct"
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


class StoreError(RuntimeError):
    pass


class VectorWidthMismatch(StoreError):
    """The table's vectors come from another model or width than the configured embedder."""


class LegacyTableError(StoreError):
    """The table is still in the assistant's format; this operation needs it migrated first."""


def quote(value: str) -> str:
    """A SQL string literal for a LanceDB predicate (quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


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
    def __init__(self, uri: str, table_name: str = "archival_memories", user_id: str = "default-user"):
        self.uri = uri
        self.table_name = table_name
        self.user_id = user_id
        self._db: Any = None
        self._table: Any = None
        self._facts: dict[str, Any] = {}

    # -- opening ---------------------------------------------------------------------------------
    @property
    def db(self) -> Any:
        if self._db is None:
            import lancedb

            self._db = lancedb.connect(self.uri)
        return self._db

    def exists(self) -> bool:
        return self.table_name in self.db.list_tables(limit=10_000).tables

    def table(self) -> Any | None:
        """The table, or None when nothing has been indexed yet (reads never create or change it)."""
        if self._table is None and self.exists():
            try:
                self._table = self.db.open_table(self.table_name)
            except ValueError as exc:  # listed, but its first version is still being written
                if "not found" not in str(exc):
                    raise
                return None
        elif self._table is not None:
            self._table.checkout_latest()
        return self._table

    def is_legacy(self) -> bool:
        """True for an assistant-era table: no first-class columns until ``migrate()`` runs."""
        table = self.table()
        return table is not None and "source_type" not in table.schema.names

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
        table = self.table()
        if table is None:
            return None
        return (table.schema.metadata or {}).get(TABLE_ID_KEY, b"").decode() or None

    def vector_width(self) -> int | None:
        table = self.table()
        return None if table is None else table.schema.field("vector").type.list_size

    def model(self) -> str | None:
        table = self.table()
        if table is None:
            return None
        return (table.schema.metadata or {}).get(MODEL_KEY, b"").decode() or None

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

    def table_for_write(self, model: str, dim: int) -> Any:
        table = self.table()
        if table is None:
            table = self._create(model, dim)
        self.require_current("writing the index")
        self.check_compatible(model, dim)
        return table

    def check_query_width(self, dim: int) -> None:
        """A query vector must be as wide as the table's vectors (a model change needs a rebuild)."""
        facts = self.read_facts()
        if facts is not None:
            facts.check_query_width(dim, f"{self.uri} ({self.table_name})")

    def _create(self, model: str, dim: int) -> Any:
        table = self.db.create_table(
            self.table_name, schema=schema(dim, uuid.uuid4().hex, model), exist_ok=True
        )
        if not table.list_indices():
            _create_scalar_indexes(table, replace=False)
        self._table = table
        return table

    def recreate(self, model: str, dim: int) -> None:
        """Drop and recreate the table (a full reindex with a new model). Refuses to drop rows that
        no markdown file holds (legacy rows), since nothing could ever bring them back."""
        if self.exists():
            self.require_current("rebuilding the table")
            legacy = self.count(f"source_type IS NULL OR source_type NOT IN ({_in(INDEXED_SOURCE_TYPES)})")
            if legacy:
                raise StoreError(
                    f"refusing to rebuild {self.table_name}: {legacy} legacy row(s) are recorded in no markdown "
                    "file and would be lost. Export them to the daily logs first (legacy export), then retry."
                )
            self.db.drop_table(self.table_name)
        self._table = None
        self._create(model, dim)

    def migrate(self) -> bool:
        """Give an assistant-era table (no first-class columns) our schema, deriving the new columns
        from each row's metadata JSON. The old version stays in the table's history. Only the
        indexer calls this, under its exclusive table lock. Returns whether anything changed."""
        if not self.is_legacy():
            return False
        old = self._table.to_arrow()
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
        self._table = self.db.create_table(self.table_name, data=migrated, mode="overwrite")
        _create_scalar_indexes(self._table, replace=True)
        return True

    # -- reading ---------------------------------------------------------------------------------
    def _source_where(self, source_type: str, source_file: str) -> str:
        return (
            f"user_id = {quote(self.user_id)} AND source_type = {quote(source_type)} "
            f"AND source_file = {quote(source_file)}"
        )

    def existing(self, source_type: str, source_file: str) -> tuple[dict[str, Existing], dict[str, int]]:
        """The rows stored for one file, by id, and how many copies of each id there are when an id
        is stored more than once (a table damaged by an earlier concurrent writer)."""
        table = self.table()
        if table is None:
            return {}, {}
        self.require_current("the indexer's diff")
        data = (
            table.search()
            .where(self._source_where(source_type, source_file))
            .select(["id", *SCALAR_COLUMNS, "vector", "created_at"])
            .limit(None)
            .to_arrow()
        )
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

    def ids(self, source_type: str, source_file: str) -> set[str]:
        """The ids stored for one file (no vectors read): what the row checks compare."""
        table = self.table()
        if table is None:
            return set()
        self.require_current("comparing a file's rows")
        data = table.search().where(self._source_where(source_type, source_file)).select(["id"]).limit(None)
        return set(data.to_arrow().column("id").to_pylist())

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

    def count(self, where: str | None = None) -> int:
        table = self.table()
        if table is None:
            return 0
        return int(table.count_rows(where) if where else table.count_rows())

    def sources(self, source_types: Sequence[str] = INDEXED_SOURCE_TYPES) -> set[tuple[str, str]]:
        """Distinct (source_type, source_file) pairs present in the table."""
        table = self.table()
        if table is None:
            return set()
        self.require_current("listing the indexed files")
        data = (
            table.search()
            .where(f"user_id = {quote(self.user_id)} AND source_type IN ({_in(source_types)})")
            .select(["source_type", "source_file"])
            .limit(None)
            .to_arrow()
        )
        return set(
            zip(data.column("source_type").to_pylist(), data.column("source_file").to_pylist(), strict=True)
        )

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

    def scan(self, columns: Sequence[str], where: str | None = None) -> pa.Table:
        """Selected columns of every row (vectors included when asked), as one Arrow table."""
        table = self.table()
        if table is None:
            return pa.table({c: pa.array([], pa.string()) for c in columns})
        missing = [c for c in columns if c not in table.schema.names]
        if missing:
            self.require_current(f"reading column(s) {', '.join(missing)}")
        query = table.search().select(list(columns)).limit(None)
        if where:
            query = query.where(where)
        return query.to_arrow()

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

    def version(self) -> int:
        table = self.table()
        return 0 if table is None else int(table.version)

    # -- writing (the indexer's) -------------------------------------------------------------------
    def _arrow(
        self, table: Any, rows: Sequence[IndexRow], vectors: np.ndarray, created: Sequence[datetime | None]
    ) -> pa.Table:
        now = datetime.now(UTC).replace(tzinfo=None)
        dim = table.schema.field("vector").type.list_size
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        return pa.table(
            {
                "id": [r.id for r in rows],
                "content": [r.content for r in rows],
                "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
                "user_id": [self.user_id] * len(rows),
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
            schema=table.schema,
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
            table.delete(f"id IN ({_in(ids)})")
            commits += 1
            failpoint("index.deleted")
        if add_rows:
            table.add(self._arrow(table, add_rows, add_vectors, created))
            commits += 1
        return commits

    def replace_source(
        self, table: Any, source_type: str, source_file: str, rows: Sequence[IndexRow], vectors: np.ndarray
    ) -> int:
        """Full replace of one file's rows (the fallback when the diff query fails)."""
        table.delete(self._source_where(source_type, source_file))
        if rows:
            table.add(self._arrow(table, rows, vectors, [None] * len(rows)))
            return 2
        return 1

    def optimize(
        self, retention: timedelta = timedelta(days=1), ann_threshold: int = ANN_ROW_THRESHOLD
    ) -> dict[str, object]:
        """Compact fragments, fold new rows into the indexes, prune versions older than ``retention``
        (not zero, so concurrent readers keep working), and build the ANN index once the table is
        large. Failures raise: an index that is never compacted grows without bound."""
        table = self.table()
        if table is None:
            return {"ann_built": False}
        self.require_current("optimize")
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
        table.optimize(cleanup_older_than=retention)
        return {"ann_built": built}

    def read_facts(self) -> "ReadFacts | None":
        """What a read needs to know about the table (width, indexes, row count, whether one user
        owns every row), computed once per table version: reads are hot, facts change only with a
        write. None when no table exists."""
        table = self.table()
        if table is None:
            return None
        cached = self._facts.get("read")
        if cached is not None and cached.version == table.version:
            return cached
        indexed = [tuple(i.columns) for i in table.list_indices()]
        names = table.schema.names
        facts = ReadFacts(
            table=table,
            version=table.version,
            rows=table.count_rows(),
            width=table.schema.field("vector").type.list_size,
            model=(table.schema.metadata or {}).get(MODEL_KEY, b"").decode() or None,
            legacy="source_type" not in names,
            ann=("vector",) in indexed,
            fts=("content",) in indexed,
            single_user=table.count_rows(f"user_id != {quote(self.user_id)} OR user_id IS NULL") == 0,
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

    def check_query_width(self, dim: int, where: str) -> None:
        """A query vector must be as wide as the table's vectors (a model change needs a rebuild)."""
        if self.width != dim:
            raise VectorWidthMismatch(
                f"index table at {where} holds {self.width}-wide vectors from model "
                f"{self.model or 'unknown'!r}, but the configured embedding model produces {dim}-wide "
                "vectors. Configure the model the index was built with, or rebuild the index for this "
                "model with `memory-assets reindex --full`."
            )


def _create_scalar_indexes(table: Any, replace: bool) -> None:
    """Full text on content; scalar indexes on what reads and the diff filter on."""
    from lancedb.index import FTS, Bitmap, BTree

    table.create_index("content", config=FTS(), replace=replace)
    table.create_index("id", config=BTree(), replace=replace)
    table.create_index("source_file", config=BTree(), replace=replace)
    table.create_index("source_type", config=Bitmap(), replace=replace)
    table.create_index("user_id", config=Bitmap(), replace=replace)
    table.create_index("fact_date", config=BTree(), replace=replace)  # date windows, recent facts


def _in(values: Iterable[str]) -> str:
    return ", ".join(quote(v) for v in values)


def _date_of(source_file: object) -> str | None:
    if isinstance(source_file, str) and len(source_file) == 13 and source_file.endswith(".md"):
        return source_file[:10]
    return None
