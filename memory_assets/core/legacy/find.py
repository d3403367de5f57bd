"""Finding legacy rows, and whether the markdown records them (design §4.12; the workflow as a
whole is in ``core/legacy/__init__.py``).

* ``find_legacy``: the home's user's legacy rows of the project's index, or of an assistant-format
  LanceDB at ``table_uri`` (table ``archival_memories``), read as they are (never migrated, never
  written), plus the ``memory_blocks`` blocks. Other users' rows are counted and never touched. A
  missing project index has none; a ``table_uri`` that cannot be read is a ``LegacyError`` that says
  what to pass instead.
* ``check_recorded``: which rows a daily log, a vault page or a core file already holds: a row is
  recorded when its first 90 characters, folded (``text.fold``), occur there as whole words
  (MEMORY.md's manual zone only: its generated zone is rewritten by generators and is no record).
* ``recorded_nowhere_else``: the asset check. It warns while any legacy row is recorded nowhere
  else, and fails as an error when the journal's last confirmed apply of the table claimed success
  yet legacy rows are there.

Nothing here writes the table or the markdown. ``LegacyError`` is every legacy step's refusal: a
step that cannot go ahead, with a message that says why and what to run instead.
"""

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.memory_md import read_zones
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.legacy.journal import last_action
from memory_assets.core.outcome import CheckOutcome
from memory_assets.core.settings import Settings
from memory_assets.core.sources import INDEXED_SOURCE_TYPES
from memory_assets.core.text import as_date, fold, json_object
from memory_assets.core.textfile import read_text

LEGACY_TABLE = "archival_memories"  # the assistant's table name (an external --table URI)
BLOCKS_TABLE = "memory_blocks"
BLOCK_FILES = {"facts": "MEMORY.md", "persona": "persona.md", "user": "user.md"}
CHECK_CHARS = 90  # a row counts as recorded when its first 90 folded characters occur in a file
SAMPLE_SIZE = 5
MANUAL_ZONE = "memory/MEMORY.md (manual zone)"
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
    warnings: list[str] = field(default_factory=list)  # files that could not be compared

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


# -- reading ---------------------------------------------------------------------------------------------
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
        store = MemoryStore.of(settings)
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
    store = MemoryStore(uri, LEGACY_TABLE, settings.user_id, settings.storage_options())
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
                day=created.date() if created else as_date(meta.get("source_date")),
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


# -- checking --------------------------------------------------------------------------------------------
class Corpus:
    """Every daily log, vault page and core file, folded once, for whole-word substring tests."""

    SEPARATOR = "\x00"  # fold never outputs it, so no match spans two files

    def __init__(self, texts: Sequence[tuple[str, str]], unreadable: Sequence[str] = ()):
        self.unreadable = list(unreadable)  # files that could not be read (warnings, name and fix)
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
        unreadable: list[str] = []

        def add(name: str, path: Path) -> None:
            # One unreadable file is left out with a warning: its rows then count as recorded
            # nowhere, which is the safe side (apply refuses while any is).
            try:
                texts.append((name, read_text(path).text))
            except OSError as exc:
                unreadable.append(
                    f"{name}: cannot be read ({exc.strerror or exc}), so legacy rows it may hold count as "
                    "recorded nowhere. Fix: make the file readable by the user running memory-assets."
                )

        for day, path in list_logs(settings.archive_dir):
            add(f"archive/{day.isoformat()}.md", path)
        vault = settings.notebook_dir
        for rel in list_pages(vault):
            add(f"notebook/{rel}", vault / rel)
        for filename in ("persona.md", "user.md"):
            path = settings.core_file_path(filename)
            if path.is_file():
                add(f"memory/{filename}", path)
        if settings.memory_md_path.is_file():
            # Only the manual zone: the generated zone is rewritten by generators, so no record.
            try:
                texts.append((MANUAL_ZONE, read_zones(settings.memory_md_path).manual))
            except OSError as exc:
                unreadable.append(f"{MANUAL_ZONE}: cannot be read ({exc.strerror or exc}).")
        return cls(texts, unreadable)

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
    rows = list(rows)
    corpus = corpus or Corpus.of_home(settings)
    out = CheckResult(files=len(corpus.names), warnings=list(corpus.unreadable) if rows else [])
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


# -- the asset check -------------------------------------------------------------------------------------
def _table_flag(table_uri: str | None) -> str:
    return f" --table {table_uri}" if table_uri else ""


def recorded_nowhere_else(settings: Settings, table_uri: str | None = None) -> CheckOutcome:
    """The asset check: how many legacy rows (and blocks) no daily log, vault page or core file
    holds. Warns while there are any (export them); fails, as an error, when the last confirmed
    apply of the table claimed success and legacy rows are still there, or are back (the table was
    restored, or something wrote rows no file owns since)."""
    found = find_legacy(settings, table_uri)
    check = check_recorded(settings, found.everything)
    last = last_action(settings, found.uri, found.table_name)
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
            check.warnings,
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
            check.warnings,
        )
    summary = (
        f"all {len(found.everything)} legacy row(s) are recorded in the markdown"
        + (f": `memory-assets legacy apply{flag} --yes` may delete them" if found.rows else "")
        if found.everything
        else "no legacy rows"
    )
    return CheckOutcome(CHECK_NAME, True, "warn", summary, [], metadata, details, check.warnings)
