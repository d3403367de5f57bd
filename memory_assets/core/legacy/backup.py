"""Deleting legacy rows behind a backup, and undoing it (design §4.12).

* ``apply``: refuses (``LegacyError``) while any legacy row or block is recorded nowhere, or while
  a legacy row shares its id with a row a file owns (a delete by id would take both); otherwise,
  under the indexer's exclusive table lock, backs up, deletes the legacy rows through the indexer
  and verifies the counts. Without ``confirm`` it only reports what it would do. ``memory_blocks``
  is never deleted (nothing reads it; it costs nothing to keep).
* ``restore``: the table exactly as it was, from the tag or from the directory copy; for the
  project's index the index state is reset, so the next reindex diffs every file.
* ``forget_backup``: deletes a backup's tag and, when asked, its directory copy.
* ``list_backups``, and ``report`` (the ``legacy check`` command: what is legacy, what is recorded
  where, and the backups).

Every confirmed apply and every restore is journalled (``journal.py``).

The backup. A local table is copied, directory and all, beside itself (``<table>.lance.<name>``)
after its current version is tagged ``<name>``; the live table then drops the tag, because a
tagged version is never cleaned up and LanceDB's ``optimize(cleanup_older_than=...)`` raises once
a tagged version is older than the retention (``version_retention_days``): the maintenance that
keeps the index fast would stop. A table that is not local (an object store) cannot be copied, so
the tag is its backup, and the apply says to run ``forget_backup`` once it is no longer wanted.
``restore`` deletes the tag it restored from; ``legacy check`` lists the backups and says when a
tag is blocking the cleanup.
"""

import shutil
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_assets.core.durable import file_lock
from memory_assets.core.home import Home
from memory_assets.core.index.index_state import IndexState
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.legacy.find import (
    SAMPLE_SIZE,
    LegacyError,
    LegacyTable,
    _local_path,
    _store,
    _table_flag,
    _utc,
    check_recorded,
    find_legacy,
)
from memory_assets.core.legacy.journal import record
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings

BACKUP_PREFIX = "legacy-backup-"


# -- the backups -----------------------------------------------------------------------------------------
def _table_dir(store: MemoryStore) -> Path | None:
    local = _local_path(store.uri)
    return None if local is None else local / f"{store.table_name}.lance"


def _copy_dir(store: MemoryStore, name: str) -> Path | None:
    """Where the directory copy of backup ``name`` lives (beside the table directory)."""
    table_dir = _table_dir(store)
    return None if table_dir is None else table_dir.with_name(f"{table_dir.name}.{name}")


def _tags(store: MemoryStore) -> dict[str, int]:
    table = store.table()
    if table is None:
        return {}
    return {name: int(info["version"]) for name, info in table.tags.list().items()}


def list_backups(settings: Settings, table_uri: str | None = None) -> list[dict[str, Any]]:
    """The legacy backups of a table: tags (and whether they now block optimize's version cleanup)
    and directory copies."""
    store = _store(settings, table_uri, must_exist=False)
    names: dict[str, dict[str, Any]] = {}
    tags = _tags(store) if store.exists() else {}
    stamps: dict[int, datetime] = {}
    if tags:
        for info in store.table().list_versions():
            stamps[int(info["version"])] = _utc(info["timestamp"]) or datetime.now(UTC)
    retention = timedelta(days=settings.version_retention_days)
    for name, version in tags.items():
        if name.startswith(BACKUP_PREFIX):
            at = stamps.get(version)
            names[name] = {
                "backup": name,
                "tag_version": version,
                "blocks_cleanup": bool(at and datetime.now(UTC) - at > retention),
            }
    table_dir = _table_dir(store)
    if table_dir is not None and table_dir.parent.is_dir():
        for path in sorted(table_dir.parent.glob(f"{table_dir.name}.{BACKUP_PREFIX}*")):
            name = path.name.removeprefix(f"{table_dir.name}.")
            names.setdefault(name, {"backup": name, "tag_version": None, "blocks_cleanup": False})
            names[name]["copy"] = str(path)
    return [names[n] for n in sorted(names)]


# -- the check, as a command reports it ------------------------------------------------------------------
def report(settings: Settings, table_uri: str | None = None) -> dict[str, Any]:
    """``legacy check``: what is legacy, what is recorded where, and the backups."""
    found = find_legacy(settings, table_uri)
    check = check_recorded(settings, found.everything)
    backups = list_backups(settings, table_uri)
    out: dict[str, Any] = {**found.summary(), **check.to_dict(), "backups": backups}
    blocking = [b["backup"] for b in backups if b.get("blocks_cleanup")]
    if blocking:
        out["warning"] = (
            f"backup tag(s) {', '.join(blocking)} are older than the version retention: optimize's "
            "version cleanup fails while they exist. Run `memory-assets legacy forget-backup NAME` "
            "once the backup is no longer needed (the directory copy can be kept)."
        )
    return out


# -- apply -----------------------------------------------------------------------------------------------
@dataclass
class ApplyResult:
    confirmed: bool
    uri: str
    table: str
    legacy_rows: int
    rows_before: int
    deleted: int = 0
    rows_after: int | None = None
    backup: str | None = None  # the tag's name (also the directory copy's suffix)
    backup_copy: str | None = None
    restore: str | None = None
    other_users_legacy_rows: int = 0
    blocks_kept: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _refuse_unrecorded(settings: Settings, found: LegacyTable, table_uri: str | None) -> None:
    check = check_recorded(settings, found.everything)
    if check.unrecorded:
        sample = "; ".join(repr(r.sample()["content"]) for r in check.unrecorded[:SAMPLE_SIZE])
        raise LegacyError(
            f"refusing to delete the legacy rows of {found.uri}: {len(check.unrecorded)} of "
            f"{len(found.everything)} legacy row(s) are recorded in no daily log, vault page or core "
            f"file, and deleting them would lose them (e.g. {sample}). Run `memory-assets legacy "
            f"export{_table_flag(table_uri)}` first, then retry (the apply indexes the exported lines before it deletes)."
        )


def _refuse_shared_ids(store: MemoryStore, found: LegacyTable) -> None:
    """A delete by id removes every row with that id: refuse when a row a file owns shares one."""
    ids = Counter(store.scan(["id"]).column("id").to_pylist())
    legacy = Counter(r.id for r in found.rows)
    shared = sorted(i for i, n in legacy.items() if ids[i] != n)
    if shared:
        raise LegacyError(
            f"refusing to delete the legacy rows of {found.uri}: {len(shared)} legacy row id(s) are "
            f"shared with rows a file owns (e.g. {', '.join(shared[:SAMPLE_SIZE])}), and deleting by id "
            "would delete those too. Run `memory-assets reindex --full` to repair the indexed rows first."
        )


def _backup_name(store: MemoryStore, now: datetime) -> str:
    base = BACKUP_PREFIX + now.strftime("%Y%m%dT%H%M%SZ")
    tags, name, n = _tags(store), base, 1
    while name in tags or ((copy := _copy_dir(store, name)) is not None and copy.exists()):
        n += 1
        name = f"{base}-{n}"
    return name


def apply(
    settings: Settings,
    table_uri: str | None = None,
    confirm: bool = False,
    now: datetime | None = None,
    embedder: Embedder | None = None,
) -> ApplyResult:
    """Delete the legacy rows, once every one is recorded in the markdown; back up first.

    Refuses (``LegacyError``) while any legacy row or block is recorded nowhere. Without
    ``confirm`` it reports what it would do and changes nothing. With it, under the indexer's
    exclusive table lock: tags the current version, copies a local table's directory beside it,
    deletes the rows through the indexer and verifies the counts (before − deleted = after, no
    legacy row left). ``memory_blocks`` is left as it is.

    With an ``embedder`` and the project's own index, a confirmed apply first sweeps the index, so
    every fact the export appended is searchable from its markdown before its legacy row goes
    (the CLI and the Dagster job pass one). Each confirmed apply is journalled in
    ``.state/legacy.jsonl``, which the asset check reads."""
    store = _store(settings, table_uri)
    indexer = Home(settings, store=store).indexer_without_embedder()
    now = now or datetime.now(UTC)
    if not confirm:
        found = find_legacy(settings, table_uri)
        _refuse_unrecorded(settings, found, table_uri)
        name = _backup_name(store, now) if found.rows else None
        copy = _copy_dir(store, name) if name else None
        out = ApplyResult(
            False,
            found.uri,
            found.table_name,
            len(found.rows),
            found.total_rows,
            backup=name,
            backup_copy=str(copy) if copy else None,
            other_users_legacy_rows=found.other_users,
            blocks_kept=len(found.blocks),
        )
        out.notes.append(
            f"would tag the current version {name}{' and copy the table directory to ' + str(copy) if copy else ''}, "
            f"then delete {len(found.rows)} legacy row(s); nothing was changed (confirm with --yes)"
            if found.rows
            else "no legacy rows: nothing to delete"
        )
        return out
    if embedder is not None and table_uri is None:
        _refuse_unrecorded(settings, find_legacy(settings, table_uri), table_uri)  # before any write
        Home(settings, store=store).indexer_with(embedder).sweep()
    with indexer.table_lock():
        found = find_legacy(settings, table_uri)
        _refuse_unrecorded(settings, found, table_uri)
        out = ApplyResult(
            True,
            found.uri,
            found.table_name,
            len(found.rows),
            found.total_rows,
            other_users_legacy_rows=found.other_users,
            blocks_kept=len(found.blocks),
        )
        if not found.rows:
            out.rows_after = found.total_rows
            out.notes.append("no legacy rows: nothing to delete, no backup made")
            return out
        table = store.table()
        before = int(table.count_rows())
        _refuse_shared_ids(store, found)
        name, tagged = _backup_name(store, now), int(table.version)
        table.tags.create(name, tagged)  # first the tag, so the copy holds it too
        out.backup = name
        copy = _copy_dir(store, name)
        if copy is not None:
            shutil.copytree(_table_dir(store), copy)  # type: ignore[arg-type]
            out.backup_copy = str(copy)
            # The copy holds the tag; the live table does not keep it, so optimize's version
            # cleanup (which refuses to prune a tagged version) keeps running after an apply.
            table.tags.delete(name)
        restore_cmd = f"memory-assets legacy restore {name}{_table_flag(table_uri)}"
        out.restore = restore_cmd
        deleted = indexer.delete_rows([r.id for r in found.rows])
        after = store.count()
        left = find_legacy(settings, table_uri).rows
        out.deleted, out.rows_before, out.rows_after = deleted, before, after
        if deleted != len(found.rows) or before - deleted != after or left:
            raise LegacyError(
                f"legacy apply on {found.uri} did not verify: {before} row(s) before, {deleted} deleted, "
                f"{after} after, {len(left)} legacy row(s) left (expected {len(found.rows)} deleted and none "
                f"left). Nothing is lost: restore with `{restore_cmd}`"
            )
        record(
            settings,
            "apply",
            found.uri,
            found.table_name,
            now,
            backup=name,
            deleted=deleted,
            rows_after=after,
        )
    if out.backup_copy:
        out.notes.append(
            f"backup {name}: a copy of the table directory at {out.backup_copy}, taken before the delete "
            f"(version {tagged}, tagged {name} inside the copy); optimize keeps running"
        )
    else:
        out.notes.append(f"backup {name}: a LanceDB tag on version {tagged} (before the delete)")
        out.notes.append(
            "the table is not local, so the tag is the backup: a tagged version is never cleaned up, and "
            f"optimize's version cleanup fails once it is older than {settings.version_retention_days:g} "
            f"day(s): run `memory-assets legacy forget-backup {name}{_table_flag(table_uri)}` once the "
            "backup is no longer needed"
        )
    return out


# -- restore ---------------------------------------------------------------------------------------------
@dataclass
class RestoreResult:
    backup: str
    method: str  # "tag" or "copy"
    uri: str
    table: str
    rows: int
    legacy_rows: int
    version: int
    set_aside: str | None = None  # the table directory a copy replaced, kept
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _resolve_copy(store: MemoryStore, backup: str) -> Path | None:
    given = Path(backup).expanduser()
    if given.is_dir() and (given / "_versions").is_dir():
        return given
    copy = _copy_dir(store, backup)
    return copy if copy is not None and copy.is_dir() else None


def restore(settings: Settings, backup: str, table_uri: str | None = None) -> RestoreResult:
    """Bring the table back exactly as it was when ``backup`` was made: from its tag (checkout and
    restore, as a new version; the tag is then deleted so cleanup can run again) or, when the tag
    is gone, from the directory copy (the current table directory is set aside, never deleted).
    For the project's index the index state is reset, so the next reindex diffs every file."""
    store = _store(settings, table_uri, must_exist=False)
    indexer = Home(settings, store=store).indexer_without_embedder()
    name = Path(backup).name.split(".lance.")[-1] if ".lance." in Path(backup).name else backup
    with indexer.table_lock():
        tags = _tags(store) if store.exists() else {}
        if name in tags:
            table = store.table()
            table.checkout(name)
            table.restore()
            table.checkout_latest()
            table.tags.delete(name)
            method, set_aside = "tag", None
        else:
            copy = _resolve_copy(store, backup)
            table_dir = _table_dir(store)
            if copy is None or table_dir is None:
                known = ", ".join(b["backup"] for b in list_backups(settings, table_uri)) or "none"
                raise LegacyError(
                    f"no legacy backup {backup!r} for {store.uri} ({store.table_name}): no such tag, and no "
                    f"directory copy beside the table. Backups known: {known}"
                )
            set_aside = None
            if table_dir.exists():
                stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
                aside = table_dir.with_name(f"{table_dir.name}.replaced-{stamp}")
                table_dir.rename(aside)
                set_aside = str(aside)
            shutil.copytree(copy, table_dir)
            fresh = MemoryStore(store.uri, store.table_name, store.user_id, store.storage_options)
            table = fresh.table()
            copied_tags = _tags(fresh)
            if name in copied_tags:
                if int(table.version) != copied_tags[name]:
                    table.checkout(name)
                    table.restore()
                    table.checkout_latest()
                table.tags.delete(name)
            store, method = fresh, "copy"
        result_store = MemoryStore(store.uri, store.table_name, store.user_id, store.storage_options)
        found = find_legacy(settings, table_uri)
        out = RestoreResult(
            name,
            method,
            store.uri,
            store.table_name,
            result_store.count(),
            len(found.rows),
            result_store.version(),
            set_aside,
        )
        if table_uri is None:
            _reset_index_state(settings, result_store)
            out.notes.append("the index state was reset: the next reindex diffs every file against the table")
        if set_aside:
            out.notes.append(f"the replaced table directory was kept at {set_aside}")
        record(
            settings,
            "restore",
            found.uri,
            found.table_name,
            datetime.now(UTC),
            backup=name,
            legacy_rows=len(found.rows),
        )
    return out


def _reset_index_state(settings: Settings, store: MemoryStore) -> None:
    path = settings.index_state_path
    if path.parent.is_dir():
        with file_lock(path):
            IndexState(table=store.table_id).save(path)


def forget_backup(
    settings: Settings, backup: str, table_uri: str | None = None, remove_copy: bool = False
) -> dict[str, Any]:
    """Delete a backup's tag (so optimize's version cleanup can run again) and, with
    ``remove_copy``, its directory copy. The table itself is not changed."""
    store = _store(settings, table_uri, must_exist=False)
    indexer = Home(settings, store=store).indexer_without_embedder()
    out: dict[str, Any] = {"backup": backup, "tag_deleted": False, "copy_removed": None}
    with indexer.table_lock():
        if store.exists() and backup in _tags(store):
            store.table().tags.delete(backup)
            out["tag_deleted"] = True
        copy = _copy_dir(store, backup)
        if copy is not None and copy.is_dir():
            if remove_copy:
                shutil.rmtree(copy)
                out["copy_removed"] = str(copy)
            else:
                out["copy_kept"] = str(copy)
    if not out["tag_deleted"] and not out.get("copy_kept") and not out["copy_removed"]:
        raise LegacyError(f"no legacy backup {backup!r} for {store.uri} ({store.table_name})")
    return out
