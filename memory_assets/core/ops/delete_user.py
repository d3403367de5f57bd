"""Deleting a user: the home and every trace of the user at the root, with a receipt (design §3.5).

A person's right to erasure reaches the whole of their memory at once. ``delete_user`` removes:

* **the home**, ``<root>/users/<id>/``: every log, transcript, page, state file, and the index in
  it; an index that ``MEMORY_INDEX_URI_TEMPLATE`` puts elsewhere is removed too (a directory: it
  and the dedup files beside it; object storage: the table is dropped);
* **the traces at the root**: the change feed's lines naming the user (``root_feed.py``), blanked
  in place byte for byte, so every follower's position in the feed stays valid and no other
  user's line moves; every follower's state of the home (``<root>/state/*/<id>.json``: the homes
  sensor's cursors, the upkeep's last outcome); the user's rows of the across-users dedup file
  (``<root>/dedup/by_user.parquet``);
* **the lock files named after the home** (the lock directory, ``durable.py``: a hash and the
  tail of the home's paths), each one only while no other process holds it (a held one is left
  and counted: unlinking a lock another process holds would let a third take it beside it).

The Dagster partition of the user is the Dagster layer's: the homes sensor deletes the partition
key of a home that is gone at its next tick (``defs/homes/sensors.py``).

**The receipt** is returned, and appended (fsync'd) to ``<root>/deletions/log.jsonl``: when, the
counts of what went (files, bytes, index rows, feed lines, state files, dedup rows, lock files),
and what was kept and why. The log names the user only by a keyed hash (HMAC-SHA256 of the id
under the root's own key, ``<root>/deletions/key``, 32 random bytes, mode 0600): an operator who
holds the key can answer "was this user deleted, and when?", a reader of the log alone cannot
test a guess. The user id is an identifier, not the user's words, but a plain id in a log kept
for good would be the one trace of the person left; no text of the user is ever in it.

**Crash safe**, in this order, each step idempotent:

1. under the user's upkeep exclusion and the home's own locks (the dream's, the reconcile's, the
   transcript ingest's, the index table's, exclusively), each waited for at most ``lock_wait_s``
   (``UserHeld``/``LockTimeout`` otherwise, nothing changed), the plan is counted and written,
   fsync'd, as a journal beside the home, ``users/.deleting+<id>.json``, with the names of the
   locks that name the home's paths (worked out while its files are there);
2. the home is renamed aside, atomically, to ``users/.deleting+<id>``: from here the user has no
   home (a read is refused as for a user never seen, ``list_users`` and a batch skip it);
3. the traces at the root are removed, and an index outside the home;
4. the home moved aside is removed, then the lock files that name it;
5. the receipt is appended to the deletions log (once: a rerun finds its id there);
6. the journal is removed.

Killed anywhere, the next ``delete_user`` of that user (or ``finish_deletions``, which the
memory service runs as it starts) continues from the journal, and the receipt still counts
what was there at step 1 (``resumed: true``). While a journal is pending, the user's home is
neither opened nor made again (``users.DeletionPending``); once it is gone, a write creates a
new home.

**Concurrency.** This process's searches' recall signals, written off the search's path, are
flushed before the home moves, and a late one from another process makes nothing again
(``knowledge/recall_log.py``). A batch or a one-user Dagster run holds the user's exclusion for its work, so it
never runs beside a deletion; one that starts after step 2 finds no home, and records nothing at
the root (``root_feed.save_home_state`` writes a home's state only while the home exists, under
the state file's lock, which step 3 takes; ``write_across_users`` keeps only users with a home,
under its file's lock). The memory service closes the user's home and refuses the user's requests
while it deletes. A process writing the home directly (the CLI on ``--home``, an assistant) is
held off by the home's locks while the deletion holds them; one that started before and resumes
after could recreate files, so stop such writers first.

A home outside a root (``--home H``, the single-home mode) is deleted the same way, beside
itself (``.deleting+<name>``), without root traces or a deletions log (there is no root to keep
one); only a home that holds its every place (``home_target`` names those outside) and in
the default layout: the suzent profile's home is the assistant's own data directory.
"""

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from memory_assets.core.durable import (
    LockTimeout,
    append_durable,
    file_lock,
    fsync_dir,
    lock_file,
    named_lock,
    replace_durable,
    write_atomic,
)
from memory_assets.core.failpoints import failpoint
from memory_assets.core.home import Home
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.index.table_reads import lock_names
from memory_assets.core.ops.dedup_across_users import across_users_path
from memory_assets.core.ops.root_feed import FEED_SUFFIX, STATE_DIR, feed_dir
from memory_assets.core.ops.upkeep.exclusion import exclusion_name, exclusive
from memory_assets.core.ops.users import (
    DELETING_PREFIX,
    USERS_DIR,
    UnknownUserError,
    check_user_id,
    deletion_journal,
    user_settings,
)
from memory_assets.core.search.retrieval import flush_recalls
from memory_assets.core.settings import Settings, SettingsError

DELETIONS_DIR = "deletions"
LOG_NAME = "log.jsonl"
KEY_NAME = "key"
KEY_BYTES = 32
HASH_HEX = 32
LOCK_WAIT_S = 30.0
HOME_LOCKS = ("dream", "reconcile", "write-path-ingest")
"""The home's own named locks, ``<name>:<home>``: the dream (``core/dream/runner.py``), the
reconcile and forget (``core/reconcile.py``), the transcript ingest (``core/write_path/ingest.py``)."""
KEPT = (
    "the deletions log's line: when, counts, and a keyed hash of the user id (no text, no plain id)",
    "the server's token file, where it names the user: access to the service, not memory; the "
    "operator revokes a token by removing its line",
    "Dagster's run and event history: partition keys, run tags and batch configs name the user id, "
    "materialisations hold counts and dates (never the user's words); the homes sensor deletes the "
    "user's partition key at its next tick, and Dagster's SQL storage cannot wipe one partition's events",
)


SINGLE_HOME_KEPT = (
    "no deletions log: a home outside a root has no root to keep one (the receipt is this answer)"
)


class DeletionRefused(SettingsError):
    """A home this cannot delete whole (its places outside it, another layout); nothing changed."""


@dataclass
class Plan:
    """What a deletion removes, counted before anything is changed."""

    home: str
    files: int = 0
    bytes: int = 0
    index_rows: int | None = 0
    """Rows of the user's index table (None: the table could not be read; it goes all the same)."""
    index_outside: str = ""
    """Where the index is when not in the home: ``directory``, ``object storage``, or empty."""
    feed_lines: int = 0
    state_files: dict[str, int] = field(default_factory=dict)
    """Per follower (``homes_sensor``, ``upkeep``, ...): its state file of the home (1 each)."""
    dedup_rows: int = 0
    """Rows of the across-users dedup file that measure the user."""
    root: str | None = None
    """The root whose traces go too (None: a home outside a root)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Plan":
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def describe(self, home: str | None = None) -> str:
        """One sentence: what would go (``home``: how to name the home, default its path)."""
        rows = "an unreadable index table" if self.index_rows is None else f"{self.index_rows} index rows"
        where = f" (its index in {self.index_outside}, outside the home)" if self.index_outside else ""
        root = (
            f"; at the root: {self.feed_lines} change-feed line(s), "
            f"{sum(self.state_files.values())} follower state file(s), "
            f"{self.dedup_rows} across-users dedup row(s)"
            if self.root
            else ""
        )
        return f"the home {home or self.home}: {self.files} files, {self.bytes} bytes, {rows}{where}{root}"


@dataclass(frozen=True)
class Target:
    """A home to delete: a user's under a root, or a single home (``root`` and ``user`` None)."""

    settings: Settings
    root: Path | None = None
    user: str | None = None

    @property
    def home(self) -> Path:
        return self.settings.home

    @property
    def aside(self) -> Path:
        return self.home.parent / f"{DELETING_PREFIX}{self.home.name}"

    @property
    def journal(self) -> Path:
        return deletion_journal(self.home)


def user_target(root: Path, user_id: str, env: Mapping[str, str] | None = None) -> Target:
    """The home of ``user_id`` under ``root`` (the id checked before any path is built)."""
    check_user_id(user_id)
    return Target(user_settings(Path(root), user_id, env), Path(root), user_id)


def home_target(settings: Settings, env: Mapping[str, str] | None = None) -> Target:
    """The target of a ``--home``: a user's home when it is ``<root>/users/<id>`` (the root's traces
    go too), else the single home, which must hold every place its settings name (else
    ``DeletionRefused``, naming the places and the fix)."""
    home = settings.home
    if home.parent.name == USERS_DIR:
        with contextlib.suppress(SettingsError):
            return user_target(home.parent.parent, check_user_id(home.name), env)
    if settings.profile != "default":
        raise DeletionRefused(
            f"erase --all deletes a whole memory home; the {settings.profile} profile's home {home} is the "
            "assistant's own data directory, which holds more than the memory: remove its memory "
            f"({settings.memory_dir}, {settings.notebook_dir}, {settings.index_uri}) by hand"
        )
    places = [settings.memory_dir, settings.notebook_dir, settings.transcripts_dir, settings.memory_md_path]
    places += [
        p for p in (settings.confirmations_file, settings.superseded_file, settings.dream_state_file) if p
    ]
    if settings.index_is_local:
        places.append(Path(settings.index_uri))
    outside = sorted({str(p) for p in places if not _inside(p, home)})
    if outside:
        raise DeletionRefused(
            f"erase --all deletes the home {home} whole, but its settings put {', '.join(outside)} outside "
            "it; unset the variables that move them (MEMORY_NOTEBOOK_DIR, MEMORY_INDEX_URI, MEMORY_*_PATH) "
            "to delete the home, and remove those places by hand"
        )
    return Target(settings)


def _inside(path: Path, home: Path) -> bool:
    return Path(os.path.abspath(path)).is_relative_to(os.path.abspath(home))


# -- the plan ---------------------------------------------------------------------------------


def _walk(directory: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(dirpath, name)).st_size
                files += 1
    return files, size


def _index_outside(settings: Settings) -> str:
    if not settings.index_is_local:
        return "object storage"
    return "" if _inside(Path(settings.index_uri), settings.home) else "directory"


def _feed_lines(root: Path, user: str) -> Iterator[tuple[Path, int, int]]:
    """(feed file, offset, length without the newline) of every feed line naming ``user``."""
    needle = user.encode()
    try:
        names = sorted(n for n in os.listdir(feed_dir(root)) if n.endswith(FEED_SUFFIX))
    except FileNotFoundError:
        return
    for name in names:
        path = feed_dir(root) / name
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        offset = 0
        for raw in data.split(b"\n"):
            parts = raw.split(b" ")
            if len(parts) == 3 and parts[1] == needle:
                yield path, offset, len(raw)
            offset += len(raw) + 1


def _state_files(root: Path, user: str) -> dict[str, Path]:
    """Follower name -> its state file of the user's home, for those that exist."""
    base = Path(root) / STATE_DIR
    try:
        followers = sorted(p for p in base.iterdir() if p.is_dir())
    except FileNotFoundError:
        return {}
    return {p.name: p / f"{user}.json" for p in followers if (p / f"{user}.json").exists()}


def _dedup_rows(root: Path, user: str) -> int:
    path = across_users_path(root)
    if not path.exists():
        return 0
    return int(pl.read_parquet(path, columns=["user"]).filter(pl.col("user") == user).height)


def _index_rows(settings: Settings) -> int | None:
    """The rows of the user's table (0: none). A local index's directory is looked for first:
    LanceDB's connect would create it, and with it the home's directory again."""
    if settings.index_is_local and not Path(settings.index_uri).is_dir():
        return 0
    try:
        store = MemoryStore.of(settings)
        return store.count() if store.exists() else 0
    except Exception:  # a damaged or unreachable table is removed all the same
        return None


def plan(target: Target) -> Plan:
    """What deleting ``target`` removes, counted; nothing changed. ``UnknownUserError`` when there
    is nothing of the user: no home, no deletion pending, no trace at the root."""
    home = target.aside if target.aside.is_dir() and not target.home.is_dir() else target.home
    files, size = _walk(home) if home.is_dir() else (0, 0)
    present = home == target.home and (home.is_dir() or not target.settings.index_is_local)
    out = Plan(str(target.home), files, size, _index_rows(target.settings) if present else 0)
    out.index_outside = _index_outside(target.settings)
    if target.root is not None and target.user is not None:
        out.root = str(target.root)
        out.feed_lines = sum(1 for _ in _feed_lines(target.root, target.user))
        out.state_files = {name: 1 for name in _state_files(target.root, target.user)}
        out.dedup_rows = _dedup_rows(target.root, target.user)
    nothing = not (
        home.is_dir()
        or target.journal.exists()
        or out.index_rows
        or out.feed_lines
        or out.state_files
        or out.dedup_rows
    )
    if nothing:
        who = f"user {target.user!r}" if target.user else f"the home {target.home}"
        raise UnknownUserError(f"{who} has no memory: nothing to delete")
    return out


# -- the deletion -----------------------------------------------------------------------------


@contextlib.contextmanager
def _held(settings: Settings, holder: str, wait: float) -> Iterator[set[str]]:
    """The user's exclusion and the home's locks, each waited for at most ``wait`` seconds; yields
    the names held (their lock files are this deletion's to remove)."""
    indexer = Home(settings).indexer_without_embedder()
    names = {exclusion_name(settings), *(f"{n}:{settings.home}" for n in HOME_LOCKS), indexer.table_lock_name}
    with contextlib.ExitStack() as stack:
        stack.enter_context(exclusive(settings, holder, timeout=wait))
        for name in HOME_LOCKS:
            stack.enter_context(named_lock(f"{name}:{settings.home}", timeout=wait))
        stack.enter_context(indexer.table_lock(timeout=wait))
        yield names


def _lock_names(target: Target) -> list[str]:
    """The names of the locks that name the home's paths: the index's key locks, every file's
    writers' lock (by its resolved path in the home, read from the home or from where it was moved
    aside), the legacy export's, and the root's state files of the user."""
    settings = target.settings
    base = target.home if target.home.is_dir() else target.aside
    home = target.home.resolve()
    names = [
        f"legacy-export:{settings.memory_dir.resolve()}",
        *lock_names(settings.index_uri, settings.table_name),
    ]
    with contextlib.suppress(OSError, ValueError, AttributeError):  # else only key lock files stay
        state = base / settings.index_state_path.relative_to(target.home)
        keys = json.loads(state.read_text(encoding="utf-8")).get("files", {})
        names += [f"index-key:{settings.index_uri}|{settings.table_name}|{key}" for key in keys]
    for dirpath, _, files in os.walk(base):
        rel = Path(dirpath).relative_to(base)
        names += ["file:" + str(home / rel / f) for f in files]
    if target.root is not None and target.user is not None:
        with contextlib.suppress(FileNotFoundError):
            for follower in (target.root / STATE_DIR).iterdir():
                names.append("file:" + str((follower / f"{target.user}.json").resolve()))
    return sorted(set(names))


def _remove_lock_files(names: list[str], held: set[str]) -> tuple[int, int]:
    """Unlink each lock's file that exists: those held here at once, the others only when no one
    holds them (taken without waiting, then unlinked). Returns (removed, left in use)."""
    import fcntl

    removed = in_use = 0
    for name in names:
        path = lock_file(name)
        if not path.exists():
            continue
        if name in held:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
            continue
        try:
            fh = open(path, "a")  # noqa: SIM115 (closed below, after the unlink)
        except OSError:
            continue
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            in_use += 1
            fh.close()
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += 1
        fh.close()
    return removed, in_use


def _blank_feed_lines(root: Path, user: str) -> int:
    """Overwrite every feed line naming ``user`` with spaces, in place (offsets unchanged)."""
    by_file: dict[Path, list[tuple[int, int]]] = {}
    for path, offset, length in _feed_lines(root, user):
        by_file.setdefault(path, []).append((offset, length))
    count = 0
    for path, spans in by_file.items():
        try:
            fd = os.open(path, os.O_WRONLY)  # not O_APPEND: a positioned write stays where it is put
        except FileNotFoundError:
            continue
        try:
            for offset, length in spans:
                os.pwrite(fd, b" " * length, offset)
                count += 1
            os.fsync(fd)
        finally:
            os.close(fd)
    return count


def _remove_state_files(root: Path, user: str) -> int:
    count = 0
    for path in _state_files(root, user).values():
        with file_lock(path), contextlib.suppress(FileNotFoundError):
            path.unlink()
            count += 1
    return count


def _remove_dedup_rows(root: Path, user: str) -> int:
    path = across_users_path(root)
    if not path.exists():
        return 0
    with file_lock(path):
        frame = pl.read_parquet(path)
        kept = frame.filter(pl.col("user") != user)
        if kept.height != frame.height:
            replace_durable(path, lambda tmp: kept.write_parquet(tmp))
        return frame.height - kept.height


def _remove_index_outside(settings: Settings) -> None:
    """The user's index where it is not in the home: a directory (with the dedup files beside
    it, and the directory holding both when nothing else is left in it), or a table on object
    storage, dropped."""
    if settings.index_is_local:
        index = Path(settings.index_uri)
        if _inside(index, settings.home):
            return
        shutil.rmtree(index, ignore_errors=True)
        shutil.rmtree(settings.dedup_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            index.parent.rmdir()  # only when empty: the directory the template gave the user
        return
    store = MemoryStore.of(settings)
    if store.exists():
        store.db.drop_table(settings.table_name)


def key_of(root: Path) -> bytes:
    """The root's key for the user-id hash (made once, mode 0600)."""
    path = Path(root) / DELETIONS_DIR / KEY_NAME
    with contextlib.suppress(FileNotFoundError):
        data = path.read_bytes()
        if len(data) == KEY_BYTES:
            return data
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path):
        if path.exists() and len(data := path.read_bytes()) == KEY_BYTES:
            return data
        write_atomic(path, secrets.token_bytes(KEY_BYTES))
        path.chmod(0o600)
        return path.read_bytes()


def user_hash(root: Path, user_id: str) -> str:
    """The keyed hash of a user id, as the deletions log holds it."""
    digest = hmac.new(key_of(root), check_user_id(user_id).encode(), hashlib.sha256).hexdigest()
    return digest[:HASH_HEX]


def deletions_log(root: Path) -> Path:
    return Path(root) / DELETIONS_DIR / LOG_NAME


def _logged(path: Path, receipt_id: str) -> bool:
    try:
        return f'"receipt": "{receipt_id}"' in path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False


def _load_journal(target: Target) -> dict[str, Any] | None:
    try:
        data = json.loads(target.journal.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError:  # written atomically, so only a hand edit garbles it: start again
        return None
    return data if isinstance(data, dict) and "plan" in data else None


def delete(target: Target, *, holder: str, lock_wait_s: float = LOCK_WAIT_S) -> dict[str, Any]:
    """Delete ``target`` (see the module docstring); the receipt. ``holder`` names the deleter
    in the exclusion's note (who holds the user, should another run ask)."""
    if _load_journal(target) is None:
        plan(target)  # nothing of the user: refused before a lock is taken (a lock file names its home)
    with _held(target.settings, holder, lock_wait_s) as held:
        journal = _load_journal(target)
        resumed = journal is not None
        if journal is None:
            journal = {
                "receipt": secrets.token_hex(8),
                "started_at": _now(),
                "plan": plan(target).to_dict(),
                # worked out now, while the home's files are there to name them
                "locks": sorted({*_lock_names(target), *held}),
            }
            write_atomic(target.journal, json.dumps(journal))
            failpoint("delete_user.journal")
        lock_names = sorted({*journal.get("locks", []), *_lock_names(target), *held})
        flush_recalls()  # this process's searches' recall signals land before the home moves
        if target.home.is_dir():
            if target.aside.exists():  # an older deletion's leftover: this user's all the same
                shutil.rmtree(target.aside)
            os.rename(target.home, target.aside)
            fsync_dir(target.home.parent)
            failpoint("delete_user.aside")
        if target.root is not None and target.user is not None:
            _blank_feed_lines(target.root, target.user)
            _remove_state_files(target.root, target.user)
            _remove_dedup_rows(target.root, target.user)
        _remove_index_outside(target.settings)
        failpoint("delete_user.traces")
        shutil.rmtree(target.aside, ignore_errors=True)
        if target.aside.exists():  # what rmtree could not remove (permissions): named, never hidden
            raise OSError(
                f"{target.aside}: could not be removed whole; fix its permissions and run the deletion again"
            )
        fsync_dir(target.home.parent)
        failpoint("delete_user.removed")
        locks_removed, locks_in_use = _remove_lock_files(lock_names, held)
    receipt = _receipt(target, journal, resumed, locks_removed, locks_in_use)
    if target.root is not None:
        log = deletions_log(target.root)
        if not _logged(log, journal["receipt"]):
            append_durable(log, json.dumps(receipt) + "\n")
        failpoint("delete_user.logged")
    target.journal.unlink(missing_ok=True)
    fsync_dir(target.home.parent)
    out: dict[str, Any] = {"user": target.user} if target.user else {"path": str(target.home)}
    out.update(receipt)
    kept = list(KEPT) if target.root is not None else [SINGLE_HOME_KEPT]
    if locks_in_use:
        kept.append(f"{locks_in_use} lock file(s) named after the home, held by another process at the time")
    out["kept"] = kept
    if target.root is not None:
        out["deletions_log"] = str(deletions_log(target.root))
    return out


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _receipt(
    target: Target, journal: dict[str, Any], resumed: bool, locks: int, in_use: int
) -> dict[str, Any]:
    counted = Plan.from_dict(journal["plan"])
    receipt: dict[str, Any] = {
        "receipt": journal["receipt"],
        "deleted_at": _now(),
        "started_at": journal["started_at"],
        "resumed": resumed,
        "home": {"files": counted.files, "bytes": counted.bytes, "index_rows": counted.index_rows},
        "index_outside_home": counted.index_outside or None,
        "lock_files": locks,
        "lock_files_in_use": in_use,
    }
    if target.root is not None and target.user is not None:
        receipt["user_hash"] = user_hash(target.root, target.user)
        receipt["root"] = {
            "change_feed_lines": counted.feed_lines,
            "follower_state_files": sum(counted.state_files.values()),
            "dedup_across_users_rows": counted.dedup_rows,
        }
    return receipt


def delete_user(root: Path, user_id: str, *, holder: str, lock_wait_s: float = LOCK_WAIT_S) -> dict[str, Any]:
    """Delete ``user_id``'s home and every trace at ``root``; the receipt (module docstring)."""
    return delete(user_target(root, user_id), holder=holder, lock_wait_s=lock_wait_s)


def pending_deletions(root: Path) -> list[str]:
    """The users whose deletion was cut short (a journal left beside the homes)."""
    users = Path(root) / USERS_DIR
    try:
        names = os.listdir(users)
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        if name.startswith(DELETING_PREFIX) and name.endswith(".json"):
            user = name.removeprefix(DELETING_PREFIX).removesuffix(".json")
            with contextlib.suppress(SettingsError):
                found.append(check_user_id(user))
    return sorted(found)


def finish_deletions(root: Path, *, holder: str, lock_wait_s: float = LOCK_WAIT_S) -> list[dict[str, Any]]:
    """Finish every deletion cut short under ``root``; their receipts. A user held by another
    run is left for the next call (its journal stays)."""
    done = []
    for user in pending_deletions(root):
        with contextlib.suppress(LockTimeout):
            done.append(delete_user(root, user, holder=holder, lock_wait_s=lock_wait_s))
    return done
