"""Legacy rows: export first, then delete, refusing anything that would lose data (design §4.12).

A legacy row is a row of ``archival_memories`` that no markdown file owns: its source type (the
first-class column, or the metadata JSON of an assistant-era table) is not one the indexer writes
(``archive_log``, ``notebook``, ``core_file``), or it names no source file. No reindex can replace
such a row and no tombstone can retire it, and the assistant's rows from before the markdown tier
exist nowhere else: deleting them unexported is data loss. The assistant's fallback table
``memory_blocks`` (its persona, user and facts blocks) is covered the same way.

The steps, each safe to repeat:

* ``find_legacy``: the legacy rows of the project's index, or of an assistant-format LanceDB at
  ``table_uri`` (table ``archival_memories``), read as they are (never migrated, never written),
  plus the ``memory_blocks`` blocks. Only the home's user's rows: other users' rows are counted
  and never touched.
* ``check_recorded``: whether each row's first 90 characters, folded (``text.fold``), occur in a
  daily log, a vault page or a core file (whole words; MEMORY.md's manual zone only, since its
  generated zone is rewritten by generators and is no record).
* ``export``: appends every unrecorded row to the capture tier (the durable append, under the
  writers' lock): to the log of its ``created_at`` UTC day when that day is after the watermark,
  else to today's log tagged ``legacy from-YYYY-MM-DD`` (the indexer takes the fact's date from the
  tag), or ``legacy undated`` when the row has no date at all. Blocks go to their core file:
  ``facts`` into MEMORY.md's manual zone, ``persona``/``user`` appended to persona.md/user.md.
  A second export appends nothing (the check sees the first one's lines).
* ``apply``: refuses while anything is recorded nowhere; otherwise backs up, deletes the legacy
  rows through the indexer under its exclusive table lock, and verifies the counts.
  ``memory_blocks`` is never deleted (nothing reads it; it costs nothing to keep).
* ``restore``: the table exactly as it was, from the directory copy or from the tag.

The backup. A local table is copied, directory and all, beside itself (``<table>.lance.<name>``)
after its current version is tagged ``<name>``; the live table then drops the tag, because a
tagged version is never cleaned up and LanceDB's ``optimize(cleanup_older_than=...)`` raises once
a tagged version is older than the retention (``version_retention_days``): the maintenance that
keeps the index fast would stop. A table that is not local (an object store) cannot be copied, so
the tag is its backup, and the apply says to run ``forget_backup`` once it is no longer wanted.
``restore`` deletes the tag it restored from; ``legacy check`` lists the backups and says when a
tag is blocking the cleanup.
"""

import bisect
import json
import shutil
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_assets.core.audit.checks import CheckOutcome
from memory_assets.core.capture.daily_log import LogBlock, LogFact, append_block, format_block, list_logs
from memory_assets.core.durable import append_durable, file_lock, named_lock, write_atomic
from memory_assets.core.index.index_state import IndexState
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.rows import FROM_TAG_PREFIX, INDEXED_SOURCE_TYPES, LEGACY_TAG
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.chunking import (
    GENERATED_CLOSE,
    GENERATED_OPEN,
    OLD_GENERATOR_FOOTER,
    OLD_GENERATOR_HEADER,
)
from memory_assets.core.knowledge.memory_md import read_zones, sanitize_generated
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.knowledge.watermark import read_watermark
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets.core.text import fold, json_object
from memory_assets.core.textfile import read_text

LEGACY_TABLE = "archival_memories"  # the assistant's table name (an external --table URI)
BLOCKS_TABLE = "memory_blocks"
BLOCK_FILES = {"facts": "MEMORY.md", "persona": "persona.md", "user": "user.md"}
CHECK_CHARS = 90  # a row counts as recorded when its first 90 folded characters occur in a file
SAMPLE_SIZE = 5
UNDATED_TAG = "undated"
BLOCK_TAG = "memory-block"
EXPORT_CHAT = "legacy"  # the block header's chat: ``## HH:MM — legacy``
BACKUP_PREFIX = "legacy-backup-"
MANUAL_ZONE = "memory/MEMORY.md (manual zone)"
JOURNAL = "legacy.jsonl"  # .state/legacy.jsonl: every confirmed apply and every restore, appended
CHECK_NAME = "legacy_rows_recorded_nowhere_else"


class LegacyError(RuntimeError):
    """A legacy step that cannot go ahead; the message says why and what to run instead."""


@dataclass(frozen=True)
class LegacyRow:
    """One legacy row of ``archival_memories`` (or one ``memory_blocks`` block, ``label`` set)."""

    id: str
    content: str
    created_at: datetime | None  # UTC; None when the row carries no time
    category: str
    user: str | None
    day: date | None = None  # the created_at UTC day, else the metadata's source_date
    label: str | None = None  # memory_blocks: facts | persona | user

    @property
    def is_block(self) -> bool:
        return self.label is not None

    def sample(self) -> dict[str, Any]:
        text = " ".join(self.content.split())
        out: dict[str, Any] = {
            "id": self.id,
            "day": self.day.isoformat() if self.day else None,
            "content": text if len(text) <= 120 else text[:119] + "…",
        }
        if self.label:
            out["block"] = self.label
        return out


@dataclass
class LegacyTable:
    """What ``find_legacy`` read: the home's user's legacy rows and blocks, and counts."""

    uri: str
    table_name: str
    exists: bool
    rows: list[LegacyRow] = field(default_factory=list)
    blocks: list[LegacyRow] = field(default_factory=list)
    total_rows: int = 0
    other_users: int = 0  # legacy rows of other users: never exported, never deleted
    skipped_blocks: int = 0  # context blocks and other users' blocks
    vector_width: int | None = None
    assistant_format: bool = False  # no first-class columns (never migrated here)

    @property
    def everything(self) -> list[LegacyRow]:
        return [*self.rows, *self.blocks]

    def summary(self) -> dict[str, Any]:
        return {
            "uri": self.uri,
            "table": self.table_name,
            "table_exists": self.exists,
            "assistant_format": self.assistant_format,
            "vector_width": self.vector_width,
            "rows": self.total_rows,
            "legacy_rows": len(self.rows),
            "blocks": len(self.blocks),
            "other_users_legacy_rows": self.other_users,
            "skipped_blocks": self.skipped_blocks,
        }


@dataclass
class CheckResult:
    """Which legacy rows some markdown file holds (``where``: the first file found)."""

    recorded: list[LegacyRow] = field(default_factory=list)
    unrecorded: list[LegacyRow] = field(default_factory=list)
    empty: list[LegacyRow] = field(default_factory=list)  # blank content: nothing to record
    where: dict[str, str] = field(default_factory=dict)
    files: int = 0

    def to_dict(self, sample: int = SAMPLE_SIZE) -> dict[str, Any]:
        return {
            "recorded": len(self.recorded),
            "unrecorded": len(self.unrecorded),
            "empty": len(self.empty),
            "files_compared": self.files,
            "recorded_sample": [
                {**r.sample(), "recorded_in": self.where.get(r.id)} for r in self.recorded[:sample]
            ],
            "unrecorded_sample": [r.sample() for r in self.unrecorded[:sample]],
        }


# -- reading -----------------------------------------------------------------------------------------
def _local_path(uri: str) -> Path | None:
    """The directory of a local LanceDB URI; None for object storage and other remote URIs."""
    if uri.startswith("file://"):
        return Path(uri.removeprefix("file://")).expanduser()
    if "://" in uri:
        return None
    return Path(uri).expanduser()


def _store(settings: Settings, table_uri: str | None, must_exist: bool = True) -> MemoryStore:
    """The store of the project's index, or of the assistant-format table at ``table_uri`` (a clear
    error when that cannot be read). Opening reads; nothing is created or written."""
    if table_uri is None:
        store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
        try:
            store.exists()
        except Exception as exc:
            raise LegacyError(f"cannot read the index at {settings.index_uri}: {exc}") from exc
        return store
    local = _local_path(table_uri)
    if local is not None:
        if local.name.endswith(".lance") and local.is_dir():
            raise LegacyError(
                f"--table {table_uri} is a table's own directory; give the LanceDB directory that "
                f"holds it: --table {local.parent}"
            )
        if not local.is_dir():
            raise LegacyError(
                f"cannot read legacy rows: {table_uri} is not a directory (--table takes a LanceDB "
                f"URI: the directory that holds the table {LEGACY_TABLE}, e.g. ~/.suzent/memory)"
            )
        uri = str(local)
    else:
        uri = table_uri
    store = MemoryStore(uri, LEGACY_TABLE, settings.user_id)
    try:
        exists = store.exists()
        tables = store.db.list_tables(limit=10_000).tables if not exists else []
    except Exception as exc:
        raise LegacyError(f"cannot reach the LanceDB at {table_uri}: {type(exc).__name__}: {exc}") from exc
    if must_exist and not exists:
        held = ", ".join(tables) or "no tables"
        raise LegacyError(f"{table_uri} holds no table {LEGACY_TABLE} ({held}): nothing to read")
    return store


def _utc(value: object) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _day(value: object) -> date | None:
    if isinstance(value, str) and len(value) >= 10:
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def _is_legacy(source_type: object, source_file: object) -> bool:
    return source_type not in INDEXED_SOURCE_TYPES or not source_file


def _read_rows(store: MemoryStore, found: LegacyTable, user: str) -> None:
    table = store.table()
    if table is None:
        return
    names = table.schema.names
    found.assistant_format = "source_type" not in names
    found.vector_width = table.schema.field("vector").type.list_size if "vector" in names else None
    found.total_rows = int(table.count_rows())
    wanted = ("id", "content", "user_id", "metadata", "created_at", "source_type", "source_file", "category")
    query = table.search().select([c for c in wanted if c in names]).limit(None)
    if not found.assistant_format:  # the first-class columns narrow the read; the test below decides
        kinds = ", ".join(f"'{k}'" for k in INDEXED_SOURCE_TYPES)
        query = query.where(
            f"source_type IS NULL OR source_type NOT IN ({kinds}) OR source_file IS NULL OR source_file = ''"
        )
    for row in query.to_arrow().to_pylist():
        meta = json_object(row.get("metadata"))
        source_type = row["source_type"] if "source_type" in names else meta.get("source_type")
        source_file = row["source_file"] if "source_file" in names else meta.get("source_file")
        if not _is_legacy(source_type, source_file):
            continue
        if row.get("user_id") != user:
            found.other_users += 1
            continue
        created = _utc(row.get("created_at"))
        category = meta.get("category") or row.get("category")
        found.rows.append(
            LegacyRow(
                id=str(row.get("id")),
                content=row.get("content") or "",
                created_at=created,
                category=category if isinstance(category, str) and category.strip() else "general",
                user=row.get("user_id"),
                day=created.date() if created else _day(meta.get("source_date")),
            )
        )


def _read_blocks(store: MemoryStore, found: LegacyTable, user: str) -> None:
    if BLOCKS_TABLE not in store.db.list_tables(limit=10_000).tables:
        return
    data = store.db.open_table(BLOCKS_TABLE).to_arrow()
    names = data.schema.names
    keep = [c for c in ("label", "content", "chat_id", "user_id", "created_at", "updated_at") if c in names]
    for row in data.select(keep).to_pylist():
        label, owner = row.get("label"), row.get("user_id")
        if label not in BLOCK_FILES or owner not in (None, "", user):
            found.skipped_blocks += 1
            continue
        when = _utc(row.get("updated_at")) or _utc(row.get("created_at"))
        found.blocks.append(
            LegacyRow(
                id=f"{BLOCKS_TABLE}:{label}:{row.get('chat_id') or '-'}:{owner or '-'}",
                content=row.get("content") or "",
                created_at=when,
                category=str(label),
                user=owner,
                day=when.date() if when else None,
                label=str(label),
            )
        )


def find_legacy(settings: Settings, table_uri: str | None = None) -> LegacyTable:
    """The legacy rows (and ``memory_blocks`` blocks) of the home's user in the project's index, or
    in the assistant-format LanceDB at ``table_uri``, read as they are: never migrated, never
    written. A missing project index has none; an unreadable ``table_uri`` is a ``LegacyError``."""
    store = _store(settings, table_uri)
    found = LegacyTable(store.uri, store.table_name, exists=False)
    try:
        found.exists = store.exists()
        if found.exists:
            _read_rows(store, found, settings.user_id)
        _read_blocks(store, found, settings.user_id)
    except LegacyError:
        raise
    except Exception as exc:
        raise LegacyError(f"cannot read the legacy rows of {store.uri}: {type(exc).__name__}: {exc}") from exc
    found.rows.sort(key=_oldest_first)
    return found


def _oldest_first(row: LegacyRow) -> tuple[bool, date, datetime, str]:
    """Dated rows by day and time, then undated ones; ties by id (a deterministic order)."""
    return (row.day is None, row.day or date.min, row.created_at or datetime.min.replace(tzinfo=UTC), row.id)


# -- checking ----------------------------------------------------------------------------------------
class Corpus:
    """Every daily log, vault page and core file, folded once, for whole-word substring tests."""

    SEPARATOR = "\x00"  # fold never outputs it, so no match spans two files

    def __init__(self, texts: Sequence[tuple[str, str]]):
        self.names = [name for name, _ in texts]
        self._texts = texts
        parts, self.starts, offset = [], [], 0
        for _, text in texts:
            part = " " + fold(text) + " " + self.SEPARATOR
            self.starts.append(offset)
            parts.append(part)
            offset += len(part)
        self.folded = "".join(parts)
        self._raw: str | None = None
        self._raw_starts: list[int] = []

    @classmethod
    def of_home(cls, settings: Settings) -> "Corpus":
        texts: list[tuple[str, str]] = []
        for day, path in list_logs(settings.archive_dir):
            texts.append((f"archive/{day.isoformat()}.md", read_text(path).text))
        vault = settings.notebook_dir
        for rel in list_pages(vault):
            texts.append((f"notebook/{rel}", read_text(vault / rel).text))
        for filename in ("persona.md", "user.md"):
            path = settings.core_file_path(filename)
            if path.is_file():
                texts.append((f"memory/{filename}", read_text(path).text))
        if settings.memory_md_path.is_file():
            # Only the manual zone: the generated zone is rewritten by generators, so no record.
            texts.append((MANUAL_ZONE, read_zones(settings.memory_md_path).manual))
        return cls(texts)

    def _name_at(self, starts: list[int], pos: int) -> str:
        return self.names[bisect.bisect_right(starts, pos) - 1]

    def find(self, content: str) -> str | None:
        """The first file holding ``content``'s first 90 folded characters as whole words (a
        truncated key need only start at a word); None when no file does."""
        key = fold(content)
        if key:
            whole = len(key) <= CHECK_CHARS
            needle = " " + (key if whole else key[:CHECK_CHARS].rstrip()) + (" " if whole else "")
            pos = self.folded.find(needle)
            return None if pos < 0 else self._name_at(self.starts, pos)
        raw = content.strip()  # nothing but symbols (an emoji, say): compared as written
        if self._raw is None:
            parts, offset = [], 0
            for _, text in self._texts:
                self._raw_starts.append(offset)
                parts.append(text + self.SEPARATOR)
                offset += len(text) + 1
            self._raw = "".join(parts)
        pos = self._raw.find(raw)
        return None if pos < 0 else self._name_at(self._raw_starts, pos)


def check_recorded(
    settings: Settings, rows: Iterable[LegacyRow], corpus: Corpus | None = None
) -> CheckResult:
    """Which rows a daily log, a vault page or a core file already holds (the corpus is built once)."""
    corpus = corpus or Corpus.of_home(settings)
    out = CheckResult(files=len(corpus.names))
    for row in rows:
        if not row.content.strip():
            out.empty.append(row)
            continue
        where = corpus.find(row.content)
        if where is None:
            out.unrecorded.append(row)
        else:
            out.recorded.append(row)
            out.where[row.id] = where
    return out


# -- backups -----------------------------------------------------------------------------------------
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


# -- the journal and the asset check ----------------------------------------------------------------
def _journal(settings: Settings, action: str, found: LegacyTable, at: datetime, **fields: Any) -> None:
    """Append one apply or restore to ``.state/legacy.jsonl`` (fsync'd)."""
    entry = {"action": action, "at": at.isoformat(), "uri": found.uri, "table": found.table_name, **fields}
    append_durable(settings.state_dir / JOURNAL, json.dumps(entry, sort_keys=True) + "\n")


def last_action(settings: Settings, table_uri: str | None = None) -> dict[str, Any] | None:
    """The journal's last apply or restore of this table, or None."""
    path = settings.state_dir / JOURNAL
    if not path.is_file():
        return None
    store = _store(settings, table_uri, must_exist=False)
    last = None
    for line in read_text(path).text.splitlines():
        entry = json_object(line)
        if entry.get("uri") == store.uri and entry.get("table") == store.table_name:
            last = entry
    return last


def recorded_nowhere_else(settings: Settings, table_uri: str | None = None) -> CheckOutcome:
    """The asset check: how many legacy rows (and blocks) no daily log, vault page or core file
    holds. Warns while there are any (export them); fails, as an error, when the last confirmed
    apply of the table claimed success and legacy rows are still there, or are back (the table was
    restored, or something wrote rows no file owns since)."""
    found = find_legacy(settings, table_uri)
    check = check_recorded(settings, found.everything)
    last = last_action(settings, table_uri)
    metadata: dict[str, int | float | str] = {
        "legacy_rows": len(found.rows),
        "blocks": len(found.blocks),
        "recorded": len(check.recorded),
        "unrecorded": len(check.unrecorded),
        "table": f"{found.uri} ({found.table_name})",
    }

    def detail(row: LegacyRow, recorded_in: str) -> dict[str, str | int]:
        sample = row.sample()
        return {
            "id": row.id,
            "day": sample["day"] or "undated",
            "content": sample["content"],
            "recorded_in": recorded_in,
        }

    details = [detail(r, "-") for r in check.unrecorded] + [
        detail(r, check.where[r.id]) for r in check.recorded[:SAMPLE_SIZE]
    ]
    flag = _table_flag(table_uri)
    if last is not None and last.get("action") == "apply" and found.rows:
        metadata["last_apply"] = str(last.get("at"))
        return CheckOutcome(
            CHECK_NAME,
            False,
            "error",
            f"the apply of {last.get('at')} deleted {last.get('deleted')} legacy row(s) and claimed success, "
            f"yet {len(found.rows)} legacy row(s) are in the table",
            [
                f"{found.uri} ({found.table_name}): {len(found.rows)} legacy row(s) after a successful apply; "
                f"{len(check.unrecorded)} recorded nowhere else. Run `memory-assets legacy export{flag}`, then "
                f"`memory-assets legacy apply{flag} --yes` again"
            ],
            metadata,
            details,
        )
    if check.unrecorded:
        return CheckOutcome(
            CHECK_NAME,
            False,
            "warn",
            f"{len(check.unrecorded)} of {len(found.everything)} legacy row(s) are recorded nowhere else",
            [
                f"{found.uri} ({found.table_name}): {len(check.unrecorded)} legacy row(s) exist only in the index; "
                f"run `memory-assets legacy export{flag}` (then `legacy apply{flag} --yes` to delete them)"
            ],
            metadata,
            details,
        )
    summary = (
        f"all {len(found.everything)} legacy row(s) are recorded in the markdown"
        + (f": `memory-assets legacy apply{flag} --yes` may delete them" if found.rows else "")
        if found.everything
        else "no legacy rows"
    )
    return CheckOutcome(CHECK_NAME, True, "warn", summary, [], metadata, details)


# -- export ------------------------------------------------------------------------------------------
@dataclass
class ExportResult:
    found: int = 0
    blocks: int = 0
    already_recorded: int = 0
    empty: int = 0
    duplicates: int = 0  # rows whose text another exported row already carries
    exported: int = 0
    destinations: dict[str, int] = field(default_factory=dict)
    days: list[str] = field(default_factory=list)  # the logs appended to
    dated_today: int = 0  # rows at or below the watermark, in today's log tagged from-YYYY-MM-DD
    undated: list[LegacyRow] = field(default_factory=list)  # in today's log tagged legacy undated
    watermark: str | None = None
    today: str = ""
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "blocks": self.blocks,
            "already_recorded": self.already_recorded,
            "empty": self.empty,
            "duplicates": self.duplicates,
            "exported": self.exported,
            "destinations": dict(sorted(self.destinations.items())),
            "days": self.days,
            "dated_today": self.dated_today,
            "undated": len(self.undated),
            "undated_sample": [r.sample() for r in self.undated[:SAMPLE_SIZE]],
            "watermark": self.watermark,
            "today": self.today,
            "warnings": self.warnings,
        }


def _dedupe_key(content: str) -> str:
    return fold(content) or content.strip()


def _append_core(path: Path, text: str) -> None:
    """Append ``text`` as a paragraph of its own to persona.md or user.md (durable, under the lock)."""
    with file_lock(path):
        data = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        prefix = "" if not data.strip() else ("\n" if data.endswith("\n") else "\n\n")
        append_durable(path, prefix + text.strip() + "\n")


def _append_manual_zone(path: Path, text: str) -> bool:
    """Append ``text`` to MEMORY.md's manual zone, never its generated zone, leaving the file's
    layout as it was: a marked file gets it after the closing marker, an entirely manual file at
    its end; a missing or blank file is created with an empty marked zone first (as a generator
    would create it), and so is a manual file the text would make read as the old generator's
    (its header and footer), which would hand all of it to the generators. An old-signature file
    (all generated) becomes a marked file whose manual zone is the text. Returns False, writing
    nothing, when the manual zone carries a human verification stamp: it would vouch for this too."""
    clean, _ = sanitize_generated(text)  # no stamp, no marker can come in with it
    addition = clean.strip().encode("utf-8") + b"\n"
    with file_lock(path):
        view = read_zones(path)
        if view.human_verified:
            return False
        data = path.read_bytes() if path.is_file() else b""
        sep = b"" if not data else (b"\n" if data.endswith(b"\n") else b"\n\n")
        appended = (data + sep + addition).decode("utf-8", errors="replace")
        generated_look = OLD_GENERATOR_HEADER.search(appended) and OLD_GENERATOR_FOOTER.search(appended)
        if view.layout in ("marked", "close_only") or (
            view.layout in ("manual", "open_only") and not generated_look
        ):
            append_durable(path, (sep + addition).decode("utf-8"))
            return True
        zone = GENERATED_OPEN.encode() + b"\n"
        if view.layout == "signature":  # all generated: it stays the generated zone
            zone += data if data.endswith(b"\n") else data + b"\n"
        manual = data.strip(b"\r\n") if view.layout != "signature" else b""
        new = zone + GENERATED_CLOSE.encode() + b"\n\n" + (manual + b"\n\n" if manual else b"") + addition
        write_atomic(path, new)
    return True


def _route(row: LegacyRow, watermark: date | None, today: date) -> tuple[date, tuple[str, ...]]:
    """The log a row goes to and its tags: its own day after the watermark (and not after today),
    else today's log with ``legacy from-DAY``, or ``legacy undated`` without a day."""
    if row.day is None:
        return today, (LEGACY_TAG, UNDATED_TAG)
    if (watermark is None or row.day > watermark) and row.day <= today:
        return row.day, ()
    return today, (LEGACY_TAG, FROM_TAG_PREFIX + row.day.isoformat())


def _log_blocks(day: date, items: list[tuple[LegacyRow, tuple[str, ...]]], now: datetime) -> LogBlock | None:
    """One append for one log: a ``## HH:MM — legacy`` block per original minute for rows on their
    own day, then one block at export time for the tagged rows (oldest first)."""
    texts: list[str] = []
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)  # a row dated by source_date only
    own = sorted((r for r, tags in items if not tags), key=lambda r: (r.created_at or midnight, r.id))
    groups: dict[str, list[LegacyRow]] = {}
    for row in own:
        groups.setdefault((row.created_at or midnight).strftime("%H:%M"), []).append(row)
    for hhmm, rows in groups.items():
        at = datetime.combine(day, datetime.strptime(hhmm, "%H:%M").time(), UTC)
        block = format_block(EXPORT_CHAT, [LogFact(r.content, r.category) for r in rows], now=at)
        if block is not None:
            texts.append(block.text)
    tagged = [(r, tags) for r, tags in items if tags]
    if tagged:
        at = datetime.combine(day, now.time(), UTC)
        block = format_block(
            EXPORT_CHAT, [LogFact(r.content, r.category, tags) for r, tags in tagged], now=at
        )
        if block is not None:
            texts.append(block.text)
    if not texts:
        return None
    return LogBlock(day, "".join(texts))


def export(settings: Settings, table_uri: str | None = None, today: date | None = None) -> ExportResult:
    """Append every unrecorded legacy row to the capture tier, and every unrecorded block to its
    core file. Idempotent: what it appended is what the next check finds. Never writes the table."""
    settings.require_initialised()
    now = datetime.now(UTC)
    today = today or now.date()
    with named_lock(f"legacy-export:{settings.memory_dir.resolve()}"):
        found = find_legacy(settings, table_uri)
        check = check_recorded(settings, found.everything)
        watermark = read_watermark(settings.log_md)
        result = ExportResult(
            found=len(found.rows),
            blocks=len(found.blocks),
            already_recorded=len(check.recorded),
            empty=len(check.empty),
            watermark=watermark.isoformat() if watermark else None,
            today=today.isoformat(),
        )
        if watermark is not None and today <= watermark:
            result.warnings.append(
                f"today ({today}) is at or below the watermark ({watermark}): rows exported to today's "
                "log stay out of the index until the vault holds them"
            )
        seen: set[str] = set()
        logs: dict[date, list[tuple[LegacyRow, tuple[str, ...]]]] = {}
        exported: list[LegacyRow] = []
        for row in check.unrecorded:
            key = _dedupe_key(row.content)
            if key in seen:
                result.duplicates += 1
                continue
            seen.add(key)
            exported.append(row)
            if row.label is not None:
                target = _export_block(settings, row)
                if target is not None:
                    result.destinations[target] = result.destinations.get(target, 0) + 1
                    continue
                # A human-stamped manual zone cannot take it: today's log, tagged as a block.
                dated = FROM_TAG_PREFIX + row.day.isoformat() if row.day else UNDATED_TAG
                result.warnings.append(
                    f"block {row.label}: MEMORY.md's manual zone carries a human verification stamp, "
                    "which would vouch for this text too; appended to today's log instead"
                )
                logs.setdefault(today, []).append((row, (LEGACY_TAG, BLOCK_TAG, dated)))
                continue
            day, tags = _route(row, watermark, today)
            if UNDATED_TAG in tags:
                result.undated.append(row)
            elif tags:
                result.dated_today += 1
            logs.setdefault(day, []).append((row, tags))
        for day in sorted(logs):
            block = _log_blocks(day, logs[day], now)
            if block is None:
                continue
            append_block(settings.archive_dir, block)
            result.destinations[f"archive/{block.filename}"] = len(logs[day])
            result.days.append(day.isoformat())
        result.exported = len(exported)
        # The proof of idempotence: everything exported must now be found by the check.
        missing = check_recorded(settings, exported).unrecorded
        if missing:
            sample = "; ".join(repr(r.sample()["content"]) for r in missing[:SAMPLE_SIZE])
            result.warnings.append(
                f"{len(missing)} exported row(s) are still not found by the check (e.g. {sample}): "
                "apply will refuse until they are"
            )
    return result


def _export_block(settings: Settings, row: LegacyRow) -> str | None:
    """Write one block into its core file; the destination's name, or None when it was refused."""
    filename = BLOCK_FILES[str(row.label)]
    if filename == "MEMORY.md":
        return MANUAL_ZONE if _append_manual_zone(settings.memory_md_path, row.content) else None
    _append_core(settings.core_file_path(filename), row.content)
    return f"memory/{filename}"


# -- apply -------------------------------------------------------------------------------------------
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


def _table_flag(table_uri: str | None) -> str:
    return f" --table {table_uri}" if table_uri else ""


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
    indexer = Indexer(settings, store=store)
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
        Indexer(settings, store=store, embedder=embedder).sweep()
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
        _journal(settings, "apply", found, now, backup=name, deleted=deleted, rows_after=after)
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


# -- restore -----------------------------------------------------------------------------------------
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
    indexer = Indexer(settings, store=store)
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
            fresh = MemoryStore(store.uri, store.table_name, store.user_id)
            table = fresh.table()
            copied_tags = _tags(fresh)
            if name in copied_tags:
                if int(table.version) != copied_tags[name]:
                    table.checkout(name)
                    table.restore()
                    table.checkout_latest()
                table.tags.delete(name)
            store, method = fresh, "copy"
        result_store = MemoryStore(store.uri, store.table_name, store.user_id)
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
        _journal(settings, "restore", found, datetime.now(UTC), backup=name, legacy_rows=len(found.rows))
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
    indexer = Indexer(settings, store=store)
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
