"""What a table's directory says without opening the table: which table it is, and how many
versions and data files it holds (design §11.3).

Opening a table (``MemoryStore.table``: LanceDB's connection and listing, the table itself, the
damage guard's look over its files) costs about 9 ms, and far more on a loaded machine. A
follower of many homes (the homes sensor) that opened the table of every home it looks at would
pay that for every home that changed, twice (the table's id for the index state, its statistics
for the optimize check). Both questions are answered from the directory instead, and the table
is opened only when the directory cannot answer.

**Which table (``index_state``).** The indexer's state (``index_state.py``) is recorded against
the table's id, kept in the table's schema metadata (``store.TABLE_ID_KEY``), and is discarded
when the table is another one (rebuilt, replaced). The follower keeps the id in a memo stored
with the home (its cursor), ``[directory key, table id, time verified]``, and loads the index
state against it with no table opened while the memo holds. The memo is not trusted further
than this:

* **The directory key**: the inode and ctime of the table's directory (``<table>.lance``), the
  inode of its ``_versions`` directory and the inode and ctime of the rebuild marker
  (``.<table>.generation``, written by every rebuild). A table dropped and created again (a
  rebuild, ``reindex --rebuild``, a damaged table set aside), a directory moved or copied over
  it (a restore from a copy, a home copied in) has another directory, or another ``_versions``,
  or a new marker: the key changes and the table is opened.
* **The state's own record**: the state written by the indexer names the table it was written
  against. When it does not name the memo's table (the indexer rebuilt or migrated the table
  and wrote its state since, a restore reset it), the table is opened to know which is right.
* **Verified again**: when the caller opens the table anyway (``verify``: the optimize check
  needs the table's statistics) and at least every ``VERIFY_EVERY_S`` (a day), so a table
  overwritten file by file inside the same directories is known within a day.

No table directory (a local index with nothing indexed yet) is no table: nothing is opened.
An assistant-era table has no id and is not memoised (it is migrated by the next reindex), and
neither is a table on an object store (no directory to stat): both are opened as before.

**How much it holds (``bounds``).** The number of files in ``data/`` (each fragment of any
version is at least one of them, so it bounds the live version's fragments from above), the
number of version manifests in ``_versions/`` (the versions kept) and the latest version (from
the manifests' names: ``<version>.manifest``, or ``<2**64 - 1 - version>.manifest`` in Lance's
second naming scheme). ``maintenance.MaintenanceClock.ruled_out`` decides from them when the optimize
check can only find nothing to do.
"""

import os
from dataclasses import dataclass
from pathlib import Path

from memory_assets.core.index import table_damage
from memory_assets.core.index.index_state import IndexState
from memory_assets.core.index.store import MemoryStore

VERSIONS_DIR = "_versions"
DATA_DIR = "data"
MANIFEST = ".manifest"
NO_TABLE = "-"
VERIFY_EVERY_S = 24 * 3600
_U64_MAX = 2**64 - 1


def _inode_ctime(path: Path) -> str:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return NO_TABLE
    return f"{st.st_ino}.{st.st_ctime_ns}"


def directory_key(store: MemoryStore) -> str | None:
    """The table directory's key (``NO_TABLE`` when the directory is not there), or None for a
    table that has no local directory (object storage)."""
    directory = table_damage.table_dir(store.uri, store.table_name)
    if directory is None:
        return None
    table = _inode_ctime(directory)
    if table == NO_TABLE:
        return NO_TABLE
    versions = _inode_ctime(directory / VERSIONS_DIR).split(".")[0]
    marker = store.handle.generation_path()
    generation = NO_TABLE if marker is None else _inode_ctime(marker)
    return f"{table}|{versions}|{generation}"


def index_state(
    store: MemoryStore, path: Path, memo: list[object] | None, now: float, *, verify: bool = False
) -> tuple[IndexState, list[object] | None, bool]:
    """The index state at ``path`` loaded against the table's id, the memo to keep for the next
    look (None: nothing to keep), and whether the table was opened to know its id."""
    key = directory_key(store)
    if key == NO_TABLE:
        return IndexState.load(path, None), None, False
    if (
        not verify
        and key is not None
        and isinstance(memo, list)
        and len(memo) == 3
        and memo[0] == key
        and isinstance(memo[1], str)
        and isinstance(memo[2], int | float)
        and now - memo[2] < VERIFY_EVERY_S
    ):
        state = IndexState.load(path, memo[1])
        if state.discarded is None:
            return state, memo, False
    table_id = store.table_id  # opens the table
    state = IndexState.load(path, table_id)
    if key is None or table_id is None:
        return state, None, True
    # The key taken before the table was opened: a rebuild in between changes it again, so the
    # next look opens the table rather than trusting this id.
    return state, [key, table_id, now], True


@dataclass(frozen=True)
class Bounds:
    """What the table directory holds: ``exists`` False when there is no table directory."""

    exists: bool
    data_files: int = 0
    versions: int = 0
    version: int | None = None  # the latest; None when a manifest's name is not a version


def _count(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []


def manifest_version(name: str) -> int | None:
    """The version a manifest's file name stands for (either of Lance's naming schemes)."""
    stem = name.removesuffix(MANIFEST)
    if not stem.isdigit():
        return None
    number = int(stem)
    return _U64_MAX - number if number > _U64_MAX // 2 else number


def bounds(store: MemoryStore) -> Bounds | None:
    """The table directory's bounds, or None for a table on an object store."""
    directory = table_damage.table_dir(store.uri, store.table_name)
    if directory is None:
        return None
    if not directory.is_dir():
        return Bounds(exists=False)
    manifests = [n for n in _count(directory / VERSIONS_DIR) if n.endswith(MANIFEST)]
    versions = [manifest_version(n) for n in manifests]
    latest = None if not versions or None in versions else max(v for v in versions if v is not None)
    return Bounds(
        exists=True,
        data_files=len(_count(directory / DATA_DIR)),
        versions=len(manifests),
        version=latest,
    )
