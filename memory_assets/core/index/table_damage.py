"""Damage to the table's files: found before LanceDB reads them, said in words, and set aside.

The table is a pure function of the markdown, so a damaged table never loses a fact: the fix is
always to rebuild it (``memory-assets reindex --rebuild``). What this module adds is that damage
is *found* and *named* instead of surfacing as a raw Rust error, a panic, or a read that grows
without bound. LanceDB keeps no checksum of its files, and a corrupt length field in a data file
made one search allocate until the kernel killed it (24 GB); a read in the caller's process
cannot be bounded, so a doubtful table is read first in a child process that can fail alone.

* **The file ledger** (``.<table>.files.jsonl`` beside the table, a cache): the size and mtime of
  every data and index file, recorded by the table's writer after each commit (``record``).
  LanceDB never rewrites a file once written, so a file whose size or mtime changed since was
  changed by something else. ``record`` adds new files and drops gone ones but never updates a
  file it holds, so a later commit cannot launder a damaged file.
* **``suspects``** (cheap: a directory listing and one stat per file): the files that changed
  since recorded, and unrecorded files written after the table's last commit. A file the ledger
  does not know but that is older than the last commit (a table from before the ledger, a
  writer that has not recorded yet) is taken as it is. ``missing_indexes``: indexes the live
  version lists whose directory is gone.
* **``verify``**: reads every column of every row and queries every index in a child process
  whose address space is capped (``VERIFY_MEMORY_BYTES``) and whose run is cut at
  ``VERIFY_SECONDS``, so a read that would grow without bound ends there as an allocation
  failure. A table it reads cleanly is recorded afresh (a copy of the home, say, changes every
  mtime); any failure is the table's damage, described.
* **``explain``**: a raw LanceDB error (``LanceError(IO)``, a Rust panic, ``Not found: …``) as a
  sentence naming what is wrong, or None when the error is not about the table's files.
* **``set_aside``**: renames the table's directory to ``<table>.lance.damaged-<UTC time>`` beside
  it (never deleting anything) so a rebuild starts from an empty table.

Local tables only: on an object store there are no mtimes to compare and nothing to rename, so
``suspects`` finds nothing and damage surfaces through ``explain``.
"""

import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memory_assets.core.durable import append_durable, file_lock, write_atomic
from memory_assets.core.settings import child_environment
from memory_assets.core.text import json_object

# The child's address space: 4 GiB plus twice the table's files. A healthy read of a 100k-row
# table (190 MB of files) peaked at about 1 GiB resident; the garbled table of the tests asks for
# 2-4 GiB in one allocation, and without a cap grows past 10 GB.
VERIFY_MEMORY_BYTES = 4 << 30
VERIFY_SECONDS = 600.0
VERIFY_BATCH_ROWS = 4096
_DATA, _INDICES, _VERSIONS, _DELETIONS = "data", "_indices", "_versions", "_deletions"
_MISSING = re.compile(
    r"(?:not found|no such file or directory)[^/\n]*?(/?\S*?(?:data|_indices|_versions|_deletions)/[^\s,)]+)",
    re.IGNORECASE,
)
_RUST_PLACE = re.compile(r",\s*/(?:rustc|root/\.cargo|[^,\s]*\.cargo)/[^\s,]*:\d+:\d+")
_DAMAGE_SIGNS = (
    "lanceerror(io)",
    "not found:",
    "corrupt",
    "does not appear to be a lance file",
    "failed to decode",
    "failed to fill whole buffer",
    "unexpected eof",
    "panicked",
    "out of range for slice",
    "outside metadata region",
    "invalid scalar value buffer",
    "sliced buffer",
    "memory allocation",
)
_PANICS = ("RustPanic", "PanicException")
log = logging.getLogger("memory_assets")
_PANIC_LINE = re.compile(r"panicked at [^\n]*\n([^\n]+)")


@dataclass(frozen=True)
class Damage:
    """What is wrong with a table, in words (``what``), and the files it concerns."""

    what: str
    files: tuple[str, ...] = ()


def table_dir(uri: str, table_name: str) -> Path | None:
    """The table's directory (``<index>/<table>.lance``), or None for a table on an object store."""
    if "://" in uri and not uri.startswith("file://"):
        return None
    return Path(uri.removeprefix("file://")) / f"{table_name}.lance"


def ledger_path(directory: Path) -> Path:
    return directory.parent / f".{directory.name.removesuffix('.lance')}.files.jsonl"


def files_of(directory: Path, known: dict[str, tuple[int, int]] | None = None) -> dict[str, tuple[int, int]]:
    """Every data and index file of the table directory: relative path -> (size, mtime in ns).
    With ``known``, a file it holds is not stat'ed: its signature is taken from there."""
    found: dict[str, tuple[int, int]] = {}

    def walk(folder: Path, rel: str, depth: int) -> None:
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            name = f"{rel}/{entry.name}"
            if known is not None and name in known:
                found[name] = known[name]
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth > 0:
                        walk(Path(entry.path), name, depth - 1)
                    continue
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:  # pruned while listed
                continue
            found[name] = (st.st_size, st.st_mtime_ns)

    walk(directory / _DATA, _DATA, 0)
    walk(directory / _INDICES, _INDICES, 2)
    return found


_LEDGERS: dict[str, tuple[int, int, dict[str, tuple[int, int]]]] = {}  # path -> (inode, offset, files)


def read_ledger(directory: Path) -> dict[str, tuple[int, int]]:
    """The recorded signatures ({} when there is no ledger or it cannot be read: it is a cache).
    The ledger is JSON lines, ``[path, size, mtime_ns]``, appended to by ``record``; what this
    process read before is kept and only the lines appended since are parsed."""
    path = ledger_path(directory)
    try:
        with open(path, "rb") as fh:
            inode = os.fstat(fh.fileno()).st_ino
            hit = _LEDGERS.get(str(path))
            if hit is not None and hit[0] == inode and hit[1] <= os.fstat(fh.fileno()).st_size:
                offset, files = hit[1], dict(hit[2])
            else:
                offset, files = 0, {}
            fh.seek(offset)
            tail = fh.read()
    except OSError:
        return {}
    for line in tail.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break  # an append still being written (or cut short): read it next time
        offset += len(line)
        try:
            name, size, mtime = json.loads(line)
            files[str(name)] = (int(size), int(mtime))
        except (ValueError, TypeError):
            continue  # a damaged line of a cache: that file is unrecorded, so suspects() asks
    _LEDGERS[str(path)] = (inode, offset, files)
    return dict(files)


def _lines(files: dict[str, tuple[int, int]]) -> str:
    return "".join(json.dumps([name, sig[0], sig[1]]) + "\n" for name, sig in sorted(files.items()))


def record(directory: Path | None, *, afresh: bool = False) -> None:
    """After a commit by the table's writer: add the files it does not hold yet (appended), drop
    the ones gone (the ledger rewritten, as after an optimize's prune). A file it already holds
    keeps its recorded signature, so damage is never laundered. ``afresh``: record every file as
    it is now (after ``verify`` read the table cleanly). Costs a directory listing, a stat per new
    file and an append: the writer runs it after every commit."""
    if directory is None or not directory.is_dir():
        return
    path = ledger_path(directory)
    with file_lock(path), contextlib.suppress(OSError):  # a read-only home: suspects() then verifies
        held = {} if afresh else read_ledger(directory)
        now = files_of(directory, known=held)  # only files it does not hold yet are stat'ed
        if afresh or any(name not in now for name in held):
            write_atomic(path, _lines(now), sync=False)
        elif len(now) > len(held):
            append_durable(path, _lines({k: v for k, v in now.items() if k not in held}), sync=False)


def forget(directory: Path) -> None:
    """Remove the ledger of a table that is gone (dropped or set aside); it is only a cache."""
    with contextlib.suppress(FileNotFoundError):
        ledger_path(directory).unlink()


def _last_commit_ns(directory: Path) -> int:
    """When the table last committed: the mtime of ``_versions/`` (each commit adds a manifest)."""
    try:
        return (directory / _VERSIONS).stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def suspects(directory: Path | None, settle_seconds: float = 0.0) -> list[str]:
    """Files that changed since the writer recorded them, or that nobody recorded and that were
    written after the table's last commit: what ``verify`` must read before anyone else does.

    An unrecorded file newer than the last commit is usually a concurrent writer's, between its
    data write and its commit: with ``settle_seconds``, such files (and only such) are looked at
    again until they are committed or recorded, or that time has passed."""
    if directory is None:
        return []
    deadline = time.monotonic() + settle_seconds
    while True:
        held = read_ledger(directory)
        last_commit = _last_commit_ns(directory)
        changed, fresh = [], []
        for name, sig in files_of(directory).items():
            known = held.get(name)
            if known is None:
                if sig[1] > last_commit:
                    fresh.append(name)
            elif known != sig:
                changed.append(name)
        if changed or not fresh or time.monotonic() >= deadline:
            return sorted(changed + fresh)
        time.sleep(0.05)


def lost_versions(directory: Path | None, settle_seconds: float = 60.0) -> str | None:
    """For a table LanceDB lists but cannot open: why, when it is damage rather than a table still
    being created (data files older than ``settle_seconds`` that no version file records)."""
    if directory is None:
        return None
    data = [sig for name, sig in files_of(directory).items() if name.startswith(_DATA + "/")]
    try:
        manifests = [e for e in os.scandir(directory / _VERSIONS) if e.name.endswith(".manifest")]
    except FileNotFoundError:
        manifests = []
    settled = time.time_ns() - int(settle_seconds * 1e9)
    if manifests or not data or max(sig[1] for sig in data) > settled:
        return None
    return f"its version files (_versions/*.manifest) are gone, so none of its {len(data)} data file(s) can be read"


def missing_indexes(directory: Path | None, index_dirs: dict[str, str]) -> list[str]:
    """Indexes (name -> uuid, as the live version lists them) whose directory is gone."""
    if directory is None:
        return []
    return sorted(
        name for name, uuid in index_dirs.items() if uuid and not (directory / _INDICES / uuid).is_dir()
    )


def missing_file(exc: BaseException) -> str | None:
    """The table's file (relative to its directory: ``data/…``, ``_indices/…``, ``_versions/…``,
    ``_deletions/…``) a raw LanceDB error says is not there, or None when it says something else.
    A file gone is what a version pruned under a reader looks like, as well as damage: the store
    reads again at the latest version before it calls it damage (``MemoryStore.read``)."""
    if type(exc).__name__ not in _PANICS and not isinstance(exc, Exception):
        return None
    found = _MISSING.search(str(exc))
    if found is None:
        return None
    part = found.group(1)
    return part[part.rfind(".lance/") + len(".lance/") :] if ".lance/" in part else part


def explain(exc: BaseException) -> str | None:
    """A raw LanceDB read error as a sentence saying what is wrong with the table's files, or None
    when it is not about them (a bad query, a schema mismatch, a lock): those keep their message."""
    kind = type(exc).__name__
    text = str(exc)
    low = text.lower()
    tail = missing_file(exc)
    if tail is not None:
        what = {_INDICES: "an index file", _VERSIONS: "the version file", _DELETIONS: "a deletion file"}
        return f"{what.get(tail.split('/')[0], 'a data file')} of the live version is missing ({tail})"
    if kind not in _PANICS and not any(sign in low for sign in _DAMAGE_SIGNS):
        return None
    detail = _RUST_PLACE.sub("", text.strip().splitlines()[0] if text.strip() else kind)
    detail = detail.removeprefix("lance error: ").strip()
    if "memory allocation" in low:
        return f"reading it asked for more memory than the table could ever need ({detail}): a corrupt length in a data file"
    if kind in _PANICS or "panicked" in low:
        return f"LanceDB panicked reading it ({detail or kind}): a data or index file is corrupt"
    if "fill whole buffer" in low or "unexpected eof" in low:
        return f"a file is shorter than the table records ({detail}): truncated or overwritten"
    if "does not appear to be a lance file" in low:
        return f"a data file is not a Lance file any more ({detail}): overwritten"
    return f"a data or index file cannot be read ({detail})"


def verify(
    uri: str, table_name: str, *, memory_bytes: int | None = None, seconds: float = VERIFY_SECONDS
) -> Damage | None:
    """Read the whole table in a child process (memory and time bounded): None when every
    column of every row and every index read cleanly (the ledger is then recorded afresh), else
    the damage. The caller's process never touches a byte of a doubtful file. ``memory_bytes``
    (default: ``VERIFY_MEMORY_BYTES`` plus twice the size of the table's files) caps the child's
    address space."""
    if memory_bytes is None:
        directory = table_dir(uri, table_name)
        size = sum(sig[0] for sig in files_of(directory).values()) if directory is not None else 0
        memory_bytes = VERIFY_MEMORY_BYTES + 2 * size
    command = [sys.executable, "-m", __name__, uri, table_name, str(memory_bytes)]
    env = child_environment(LANCEDB_LOG="error", RUST_BACKTRACE="0")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=seconds, env=env, check=False)
    except subprocess.TimeoutExpired:
        return Damage(f"reading it did not finish within {seconds:g} s (a corrupt file can make a read loop)")
    report = _last_json(done.stdout)
    if done.returncode == 0 and report.get("ok"):
        record(table_dir(uri, table_name), afresh=True)
        return None
    panic = _PANIC_LINE.search(done.stderr)
    if report.get("damage"):
        what = str(report["what"])
        if panic and "panicked" in what:  # the panic's own words are on stderr, not in the exception
            what += f"; LanceDB said: {panic.group(1).strip()}"
        return Damage(what)
    if done.returncode < 0 or "memory allocation" in done.stderr:
        return Damage(
            f"reading it needed more than {memory_bytes / (1 << 30):g} GiB of memory and was stopped "
            "(a corrupt length in a data file makes LanceDB allocate without bound)"
        )
    # Not evidence of damage (the child could not start, or a query it tried does not suit this
    # table): said once, and the table is taken as read, so no false alarm stops every read.
    tail = str(report.get("what") or " ".join(done.stderr.strip().splitlines()[-1:]) or done.returncode)
    log.warning(
        f"could not read index table {table_name} at {uri} in a child process to look for damage ({tail})"
    )
    record(table_dir(uri, table_name), afresh=True)
    return None


def _last_json(text: str) -> dict[str, object]:
    """The child's report: the last line of its output that is a JSON object with fields ({} when
    none is)."""
    for line in reversed(text.strip().splitlines()):
        if report := json_object(line):
            return report
    return {}


def set_aside(directory: Path) -> Path:
    """Rename the table's directory to ``<table>.lance.damaged-<UTC time>`` beside it (LanceDB lists
    only ``*.lance`` directories, so the copy is no table of the index); returns the new path."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = directory.with_name(f"{directory.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = directory.with_name(f"{directory.name}.damaged-{stamp}-{n}")
    directory.rename(target)
    forget(directory)
    return target


def _read_everything(uri: str, table_name: str) -> None:
    """The child's work: every column of every row, then a query through every index."""
    import lancedb

    table = lancedb.connect(uri).open_table(table_name)
    names = table.schema.names
    for _ in table.search().select(names).limit(None).to_batches(VERIFY_BATCH_ROWS):
        pass
    for index in table.list_indices():
        column = index.columns[0] if index.columns else None
        if column is None:
            continue
        if index.index_type == "FTS":
            table.search("memory", query_type="fts", fts_columns=column).limit(10).select(names).to_arrow()
        elif column == "vector":
            width = table.schema.field("vector").type.list_size
            table.search([0.0] * (width - 1) + [1.0]).limit(10).select(names).to_arrow()
        else:
            table.count_rows(f"{column} IS NULL")


def _child(argv: list[str]) -> int:
    import resource

    uri, table_name, memory = argv[0], argv[1], int(argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        try:
            _read_everything(uri, table_name)
        except Exception as exc:
            if missing_file(exc) is None:
                raise
            # A file gone: the version read may have been pruned under this read by a writer
            # elsewhere. Read again, at the latest version; only a second miss is damage.
            _read_everything(uri, table_name)
    except BaseException as exc:  # a panic is a BaseException: the point is to report it
        what = explain(exc)
        if what is None and "not found" in str(exc).lower():  # listed, yet no version opens
            what = lost_versions(table_dir(uri, table_name))
        damage = what is not None
        what = what or f"{type(exc).__name__}: {_RUST_PLACE.sub('', str(exc))}"
        print(json.dumps({"ok": False, "damage": damage, "what": what}), flush=True)
        return 1
    print(json.dumps({"ok": True}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
