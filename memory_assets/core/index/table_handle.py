"""One index table as one object: the connection, the open handle and its version, the journal of
this process's own commits, and the rebuild generation the handle was opened under.

``MemoryStore`` (``store.py``, the reads) and ``TableWriter`` (``table_writer.py``, the commits)
are two views over one ``TableHandle``; neither touches the other's state. What they share goes
through the methods below:

* ``reset(table)``: a new handle (opened, created, migrated, rebuilt, dropped). The version, the
  journal and the generation start again, and every view's caches taken through the old handle
  are dropped (``on_reset``).
* ``current_version()`` / ``version_unknown()``: the handle's version, read once after each
  opening; a commit sets it (``record_commit``), a commit whose version is not known clears it.
* ``record_commit(before, done, ids, data)``: a commit that made exactly the next version after
  ``before`` is journaled, so a cache taken at ``before`` is brought forward through it
  (``chain``) instead of read again. Anything else breaks the chain.
* ``generation_path()`` / ``replaced()`` / ``new_generation()``: a rebuild (``recreate``, a table
  set aside) writes a new marker beside the table, and every handle on the old table, in any
  process, sees another marker and opens the table afresh: a LanceDB handle never moves back to a
  lower version, so it would keep reading the old table's deleted files.
"""

import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from memory_assets.core.durable import stat_signature, write_atomic

JOURNAL_COMMITS = 64  # own commits remembered for bringing caches forward
JOURNAL_MAX_ROWS = 2000  # an add larger than this (a bulk fill) is not remembered: caches re-read


@dataclass(frozen=True)
class Commit:
    """One of this process's own commits on the table: the version it was made on and the one it
    made, the ids it deleted (and how many rows that deleted), and the rows it added."""

    before: int
    after: int
    deleted_ids: frozenset[str]
    deleted_rows: int
    added: pa.Table  # empty for a delete


class TableHandle:
    """The table ``table_name`` of the index at ``uri`` (see the module docstring)."""

    def __init__(self, uri: str, table_name: str, storage_options: Mapping[str, str] | None = None):
        self.uri = uri
        self.table_name = table_name
        # Object storage's options (an endpoint, keys): handed to LanceDB, never shown.
        self._storage_options = dict(storage_options or {})
        self._db: Any = None
        self._session: Any = None
        self._table: Any = None
        self._version: int | None = None  # the handle's version, once read since it was last opened
        self._journal: deque[Commit] = deque(maxlen=JOURNAL_COMMITS)
        self._opened_as: tuple[int, int, int] | None = None  # the generation marker when it opened
        self._on_reset: list[Callable[[], None]] = []

    # -- the connection ----------------------------------------------------------------------------
    @property
    def db(self) -> Any:
        """The LanceDB connection (opened on first use)."""
        if self._db is None:
            import lancedb

            self._db = lancedb.connect(self.uri, session=self.session(), **self.connect_options())
        return self._db

    @property
    def storage_options(self) -> dict[str, str]:
        """The object-storage options the connection uses (a copy)."""
        return dict(self._storage_options)

    def connect_options(self) -> dict[str, Any]:
        """The keyword arguments of a LanceDB connect to this index (sync or async)."""
        return {"storage_options": dict(self._storage_options)} if self._storage_options else {}

    def session(self) -> Any:
        """One LanceDB session (its index and metadata caches) for every handle on this table."""
        if self._session is None:
            import lancedb

            self._session = lancedb.Session()
        return self._session

    def exists(self) -> bool:
        return self.table_name in self.db.list_tables(limit=10_000).tables

    # -- the open handle ---------------------------------------------------------------------------
    @property
    def table(self) -> Any:
        """The open LanceDB table, or None when it is not open."""
        return self._table

    def on_reset(self, forget: Callable[[], None]) -> None:
        """Call ``forget`` whenever the handle is replaced: a view's caches of the old one go."""
        self._on_reset.append(forget)

    def reset(self, table: Any) -> None:
        """A new handle (opened, created, migrated, rebuilt; None: closed): nothing cached carries
        over."""
        self._table = table
        self._opened_as = self.generation() if table is not None else None
        self._version = None
        self._journal.clear()
        for forget in self._on_reset:
            forget()

    def checkout_latest(self) -> None:
        """Move the open handle to the table's latest version."""
        self._table.checkout_latest()
        self._version = None

    def current_version(self) -> int:
        """The open handle's version (read once after each opening; commits here set it)."""
        if self._version is None:
            self._version = int(self._table.version)
        return self._version

    def version_unknown(self) -> None:
        """The handle's version changed in a way not recorded: read it again when next needed."""
        self._version = None

    def still_at(self, version: int) -> bool:
        """Whether the handle is at ``version`` now (asked of the handle, not remembered)."""
        return self._table is not None and int(self._table.version) == version

    # -- the journal -------------------------------------------------------------------------------
    def version_before_commit(self, table: Any) -> int | None:
        """The version a commit on ``table`` is about to be made on, when ``table`` is the open
        handle (else None: the commit is not journaled)."""
        return self.current_version() if table is self._table and table is not None else None

    def record_commit(
        self, before: int | None, done: object, ids: frozenset[str], data: pa.Table | None
    ) -> None:
        """A commit made on ``before`` (``done``: LanceDB's result of a delete, or of an add of
        ``data``): the handle moves to its version, and it is journaled when it made exactly the
        next version after ``before`` and is small enough to carry caches forward."""
        after = getattr(done, "version", None)
        if before is None or not isinstance(after, int):
            self._version = None
            return
        self._version = after
        rows = data.num_rows if data is not None else 0
        if after != before + 1 or rows > JOURNAL_MAX_ROWS:
            return
        deleted = getattr(done, "num_deleted_rows", None) if data is None else 0
        if not isinstance(deleted, int):
            return
        added = data if data is not None else pa.table({})
        self._journal.append(Commit(before, after, ids, deleted, added))

    def chain(self, start: int, end: int) -> list[Commit] | None:
        """This process's own commits that lead from version ``start`` to ``end`` (``[]`` when they
        are the same), or None when anything else came between."""
        if start == end:
            return []
        chain, at = [], start
        for commit in tuple(self._journal):  # a copy: a commit on another thread may append
            if commit.before == at:
                chain.append(commit)
                at = commit.after
        return chain if at == end else None

    # -- the generation ----------------------------------------------------------------------------
    def generation_path(self) -> Path | None:
        """The rebuild marker, ``.<table>.generation`` in the index directory (local paths only)."""
        if "://" in self.uri and not self.uri.startswith("file://"):
            return None
        return Path(self.uri.removeprefix("file://")) / f".{self.table_name}.generation"

    def generation(self) -> tuple[int, int, int] | None:
        path = self.generation_path()
        return None if path is None else stat_signature(path)

    def replaced(self) -> bool:
        """Whether the table was rebuilt since this handle opened it (in any process): one stat."""
        return self._table is not None and self.generation() != self._opened_as

    def new_generation(self) -> None:
        """A rebuild: write a new marker, so every other handle on the old table opens it afresh."""
        marker = self.generation_path()
        if marker is not None:
            write_atomic(marker, uuid.uuid4().hex + "\n")
            self._opened_as = self.generation()
