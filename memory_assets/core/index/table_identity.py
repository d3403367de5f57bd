"""Which table a home's index is, known without opening it (design §11.3).

The indexer's state (``index_state.py``) is recorded against the table's id, kept in the table's
schema metadata (``store.TABLE_ID_KEY``), and is discarded when the table is another one (rebuilt,
replaced). Reading the id opens the table: LanceDB's connection, its listing, the table itself,
the damage guard's look over its files, about 9 ms a home. A follower of many homes (the homes
sensor) that opened every home's table it looks at would pay that for every home that changed.

``index_state`` keeps the id instead in a memo the follower stores with the home (its cursor),
``[directory key, table id]``, and loads the index state against it with no table opened while
the memo holds. The memo is not trusted further than this:

* **The directory key**: the inode and ctime of the table's directory (``<table>.lance``), the
  inode of its ``_versions`` directory and the stat signature of the rebuild marker
  (``.<table>.generation``, written by every rebuild). A table dropped and created again (a
  rebuild, ``reindex --rebuild``, a damaged table set aside), a directory moved or copied over
  it (a restore from a copy, a home copied in) has another directory, or another ``_versions``,
  or a new marker: the key changes and the table is opened.
* **The state's own record**: the state written by the indexer names the table it was written
  against. When it does not name the memo's table (the indexer rebuilt or migrated the table
  and wrote its state since, a restore reset it), the table is opened to know which is right.
* **``verify``**: the caller opens the table anyway now and then (the homes sensor's optimize
  check, at most every 10 minutes a home); the id is read again then, so a table overwritten
  file by file inside the same directories is still known within that time.

No table directory (a local index with nothing indexed yet) is no table: nothing is opened.
An assistant-era table has no id and is not memoised (it is migrated by the next reindex), and
neither is a table on an object store (no directory to stat): both are opened as before.
"""

import os
from pathlib import Path

from memory_assets.core.index import table_damage
from memory_assets.core.index.index_state import IndexState
from memory_assets.core.index.store import MemoryStore

VERSIONS_DIR = "_versions"
NO_TABLE = "-"


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
    marker = store._generation_path()
    generation = "-" if marker is None else _inode_ctime(marker)
    return f"{table}|{versions}|{generation}"


def index_state(
    store: MemoryStore, path: Path, memo: list[str] | None, *, verify: bool = False
) -> tuple[IndexState, list[str] | None, bool]:
    """The index state at ``path`` loaded against the table's id, the memo to keep for the next
    look (None: nothing to keep), and whether the table was opened to know its id."""
    key = directory_key(store)
    if key == NO_TABLE:
        return IndexState.load(path, None), None, False
    if not verify and key is not None and memo is not None and len(memo) == 2 and memo[0] == key:
        state = IndexState.load(path, memo[1])
        if state.discarded is None:
            return state, memo, False
    table_id = store.table_id  # opens the table
    state = IndexState.load(path, table_id)
    if key is None or table_id is None:
        return state, None, True
    # The key taken before the table was opened: a rebuild in between changes it again, so the
    # next look opens the table rather than trusting this id.
    return state, [key, table_id], True
