"""Durable files and the writers' locks, in one place: every writer of the memory home uses them.

* ``append_durable``: an append under the file's writers' lock, flushed and fsync'd before it
  returns (and the directory fsync'd when the append created the file), so an acknowledged write
  survives a crash of the process or the machine. All or nothing: an append that fails (a full
  disk, an I/O error) takes back whatever part of it reached the file before raising, so no torn
  line is left for the next append to follow.
* ``recorded_appends`` and ``withdraw``: the appends one thread made within a block, and taking
  one back while it is still the file's last (nothing appended after it): how a writer that fails
  after some of its appends leaves nothing of them (the write path's turns, ``process_turns``).
* ``write_atomic``: temp file in the same directory, fsync, rename over the target, directory
  fsync. A reader sees the old file or the new one, never a torn one. ``sync=False`` keeps the
  rename but skips both fsyncs: for a cache that is checked on every read and re-derived when
  it is missing, stale or unreadable, never for data.
* ``is_disk_full(exc)`` and ``free_bytes(path)``: a write that failed for want of space (an
  ``OSError`` ENOSPC or EDQUOT, or LanceDB's error saying so in its text), and the space left.
* ``file_lock(path)``: the writers' lock of one file. Every appender and every read-modify-write
  of that file takes it, in every process (CLI, library, Dagster runs, the assistant).
* ``named_lock(name, shared=...)``: a lock on anything else (an index key, the index table).

Locks are ``flock`` locks on files in ONE directory, never among the user's markdown:
``$MEMORY_LOCK_DIR``, else ``~/.cache/memory-assets/locks`` (else the temp dir when there is
no writable home). A lock file is named by a hash of what it guards (the file's resolved path,
or the name) plus a readable suffix. ``flock`` excludes across processes and, because each
acquisition opens its own descriptor, across threads; a thread that already holds a lock may take
it again (re-entrant), so a helper that locks can be called under the same lock.
"""

import errno
import fcntl
import hashlib
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from memory_assets.core.settings import lock_dir_sources

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
# How an error of LanceDB's Rust core says it: the OS's own words, or Rust's errno.
_NO_SPACE_TEXT = ("no space left on device", "os error 28", "disk quota exceeded", "os error 122")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_held = threading.local()


def lock_dir() -> Path:
    """The one directory that holds every lock file (created on first use). Worked out once per
    environment (the variables it depends on); ``named_lock`` creates it again if it was removed."""
    env = (*lock_dir_sources(), str(Path.home()))
    found = _LOCK_DIRS.get(env)
    if found is None:
        found = _LOCK_DIRS[env] = _find_lock_dir()
    return found


_LOCK_DIRS: dict[tuple[str | None, str | None, str], Path] = {}


def _find_lock_dir() -> Path:
    explicit, cache_home = lock_dir_sources()
    if explicit:
        path = Path(explicit).expanduser()
    else:
        cache = Path(cache_home or Path.home() / ".cache")
        path = cache / "memory-assets" / "locks"
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            path = Path(tempfile.gettempdir()) / f"memory-assets-locks-{os.getuid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _lock_path(name: str) -> Path:
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:20]
    readable = _SAFE.sub("_", name)[-60:].strip("_")
    return lock_dir() / f"{digest}-{readable}.lock"


def lock_file(name: str) -> Path:
    """The file behind ``named_lock(name)`` (a caller may keep a note beside it)."""
    return _lock_path(name)


def _open_lock_file(path: Path) -> IO[str]:
    try:
        return open(path, "a")
    except FileNotFoundError:  # the lock directory was removed since it was worked out
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, "a")


def _counts() -> dict[str, tuple[int, bool]]:
    if not hasattr(_held, "counts"):
        _held.counts = {}
    return _held.counts


class LockTimeout(TimeoutError):
    """A lock was not free within the time the caller was willing to wait."""


@contextmanager
def named_lock(name: str, shared: bool = False, timeout: float | None = None) -> Iterator[None]:
    """An exclusive (or shared) lock on ``name`` across processes and threads; re-entrant per thread.
    ``timeout``: give up after that many seconds (``LockTimeout``) instead of waiting forever."""
    counts = _counts()
    if name in counts:
        depth, held_shared = counts[name]
        if held_shared and not shared:
            raise RuntimeError(f"lock {name!r} is held shared by this thread; it cannot be upgraded")
        counts[name] = (depth + 1, held_shared)
        try:
            yield
        finally:
            counts[name] = (counts[name][0] - 1, held_shared)
            if counts[name][0] == 0:
                del counts[name]
        return
    path = _lock_path(name)
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    with _open_lock_file(path) as fh:
        if timeout is None:
            fcntl.flock(fh, mode)
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fh, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout(
                            f"lock {name!r} still held by another writer after {timeout} s"
                        ) from None
                    time.sleep(0.02)
        counts[name] = (1, shared)
        try:
            yield
        finally:
            del counts[name]
            fcntl.flock(fh, fcntl.LOCK_UN)


def file_lock(path: Path) -> AbstractContextManager[None]:
    """The writers' lock of one file (by its resolved path)."""
    return named_lock("file:" + str(Path(path).expanduser().resolve()))


def stat_signature(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime in ns): changes on every append, rewrite or atomic replace of a file,
    so a reader can cache what it parsed from a file and re-read it only when this changes."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def fsync_dir(directory: Path) -> None:
    """Make a create, rename or delete in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Appended:
    """One append: the file, its size before and after, and whether the append created it."""

    path: Path
    start: int
    end: int
    created: bool


_recording = threading.local()


@contextmanager
def recorded_appends() -> Iterator[list[Appended]]:
    """The durable appends this thread makes within the block, in order (``withdraw`` takes them
    back). Blocks nest: an inner block's appends are the outer's too."""
    outer: list[Appended] | None = getattr(_recording, "appends", None)
    mine: list[Appended] = []
    _recording.appends = mine
    try:
        yield mine
    finally:
        _recording.appends = outer
        if outer is not None:
            outer.extend(mine)


def append_durable(path: Path, text: str, *, header: str | None = None, sync: bool = True) -> Appended:
    """Append ``text`` to ``path`` under its writers' lock and fsync it before returning.

    ``header`` is written first when the file is new or empty (a daily log's H1, say). The file
    is opened in append mode and never rewritten; a new file's directory entry is fsync'd too.
    ``sync=False`` keeps the lock and the single append but skips the fsyncs: for a best-effort
    signal on a hot read path (the recall log), where losing the last lines to a power cut is
    harmless and an fsync per search is not. An append that fails is taken back (the file cut
    to its size before, a file it created removed) before the error is raised.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path):
        created = not path.exists()
        start = 0 if created else path.stat().st_size
        try:
            with open(path, "a", encoding="utf-8") as fh:
                if header is not None and fh.tell() == 0:
                    fh.write(header)
                fh.write(text)
                fh.flush()
                if sync:
                    os.fsync(fh.fileno())
            end = path.stat().st_size
            if created and sync:
                fsync_dir(path.parent)
        except BaseException:
            _cut(path, start, created)
            raise
    appended = Appended(path, start, end, created)
    recording: list[Appended] | None = getattr(_recording, "appends", None)
    if recording is not None:
        recording.append(appended)
    return appended


def withdraw(appended: Appended) -> bool:
    """Take ``appended`` back, under the file's lock, if it is still the file's end (nothing was
    appended after it): the file cut to its size before, or removed when the append created it.
    Returns whether it was taken back (False: something follows it, or the file is gone)."""
    with file_lock(appended.path):
        try:
            size = appended.path.stat().st_size
        except FileNotFoundError:
            return False
        if size != appended.end:
            return False
        _cut(appended.path, appended.start, appended.created)
        return True


def _cut(path: Path, size: int, created: bool) -> None:
    """``path`` back to ``size`` bytes, durably (removed when ``created``); never raises: it runs
    while another error is on its way up, and a cut that fails leaves what the append left."""
    try:
        if created:
            path.unlink(missing_ok=True)
            fsync_dir(path.parent)
        else:
            with open(path, "r+b") as fh:
                fh.truncate(size)
                os.fsync(fh.fileno())
    except OSError:
        pass


def write_atomic(path: Path, data: str | bytes, *, sync: bool = True) -> None:
    """Replace ``path`` with ``data``: temp file, fsync, rename, directory fsync.

    The caller holds ``file_lock(path)`` when the new content was derived from the old
    (read-modify-write); a plain replace needs no lock. ``sync=False``: no fsync (a cache; a
    crash may leave the old file, the new one, or an empty or partial one, which its reader
    must reject).
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    replace_durable(path, lambda tmp: tmp.write_bytes(payload), sync=sync)


def replace_durable(path: Path, write: Callable[[Path], object], *, sync: bool = True) -> None:
    """Like ``write_atomic`` for writers that need a path (parquet): ``write(tmp_path)`` fills the temp
    file, which is then fsync'd and renamed over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        if sync:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync:
        fsync_dir(path.parent)


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) is a write refused for want of space."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _NO_SPACE:
            return True
        text = str(current).lower()
        if any(words in text for words in _NO_SPACE_TEXT):
            return True
        current = current.__cause__ or current.__context__
    return False


def free_bytes(path: Path) -> int | None:
    """The bytes an unprivileged writer may still use on the file system holding ``path`` (its
    nearest existing ancestor); None when it cannot be asked."""
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        stats = os.statvfs(probe)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize
