"""Exporting legacy rows into the markdown (design §4.12): ``export`` appends every legacy row and
block that no markdown file records yet, and never writes the table.

A row goes to the daily log of its ``created_at`` UTC day when that day is after the watermark
(and not after today), else to today's log tagged ``legacy from-YYYY-MM-DD`` (the indexer takes
the fact's date from the tag), or ``legacy undated`` when the row has no date at all. Each log gets
one durable append under the writers' lock: a ``## HH:MM — legacy`` block per original minute,
then one block for the tagged rows. Blocks go to their core file: ``facts`` into MEMORY.md's
manual zone (never its generated zone; to today's log, tagged ``memory-block``, when the manual
zone carries a human verification stamp, which would vouch for it), ``persona``/``user`` appended
to persona.md/user.md. A text carried by several rows is exported once.

Idempotent: what it appended is what the next ``find.check_recorded`` finds, so a second export
appends nothing. An exported row the check still misses is a warning in the result (``apply``
refuses until it is found). The whole export holds a lock named after the home.
"""

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from memory_assets.core.capture.daily_log import LogBlock, LogFact, append_block, format_block
from memory_assets.core.durable import append_durable, file_lock, named_lock, write_atomic
from memory_assets.core.index.rows import FROM_TAG_PREFIX, LEGACY_TAG
from memory_assets.core.knowledge.chunking import (
    GENERATED_CLOSE,
    GENERATED_OPEN,
    OLD_GENERATOR_FOOTER,
    OLD_GENERATOR_HEADER,
)
from memory_assets.core.knowledge.folds import ensure_ledger
from memory_assets.core.knowledge.memory_md import read_zones, sanitize_generated
from memory_assets.core.knowledge.watermark import read_watermark
from memory_assets.core.legacy.find import (
    BLOCK_FILES,
    MANUAL_ZONE,
    SAMPLE_SIZE,
    LegacyRow,
    check_recorded,
    find_legacy,
)
from memory_assets.core.outcome import fields_of
from memory_assets.core.settings import Settings
from memory_assets.core.text import fold

UNDATED_TAG = "undated"
BLOCK_TAG = "memory-block"
EXPORT_CHAT = "legacy"  # the block header's chat: ``## HH:MM — legacy``


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
            **fields_of(self, "found", "blocks", "already_recorded", "empty", "duplicates", "exported"),
            "destinations": dict(sorted(self.destinations.items())),
            **fields_of(self, "days", "dated_today"),
            "undated": len(self.undated),
            "undated_sample": [r.sample() for r in self.undated[:SAMPLE_SIZE]],
            **fields_of(self, "watermark", "today", "warnings"),
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
        ensure_ledger(settings)  # lines appended to past days are pending, never taken as folded
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
