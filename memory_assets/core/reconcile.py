"""The reconcile, runner-owned (design §5.8): retire what the dream folded, sweep, compact.

1. **Retire superseded.** ``.state/superseded.txt`` holds the log facts the dream folded into
   pages, one a line. Each line is cleaned (a leading ``- [category] `` and a trailing tag group
   stripped); lines under 24 characters are refused and reported, never tombstoned (a fragment
   would match logs it never came from); a line no vault page holds now is refused and reported
   (``knowledge/page_index.py``: a bad model's hand-off or a hand-edited file must never take a
   live fact out of the index, nor hide its later restatements); a line no log holds is reported
   and dropped. Every other line gets a tombstone marked ``"by": "reconcile"`` (fsync'd, once: a
   replay finds it there) and every day whose log holds it is reindexed explicitly. Only then is the hand-off truncated, removing exactly the lines that
   were read: lines the dream appends meanwhile survive.
2. **check_and_update**: the indexer's sweep (changed pages and files reindexed, deleted files'
   rows removed).
3. **Optimize**: compaction, index folding, version pruning. A failure raises.

A crash at any point replays rather than loses: the hand-off is truncated last, tombstones are
idempotent, reindexing is a diff. ``forget`` and ``unforget`` are the same mechanism for a person.
"""

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from memory_assets.core.durable import file_lock, named_lock, write_atomic
from memory_assets.core.failpoints import failpoint
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.retire import (
    MIN_RETIRE_CHARS,
    affected_keys,
    clean_handoff_line,
    remove_first_lines,
    retire_texts,
)
from memory_assets.core.knowledge.page_index import held_texts
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.settings import Settings
from memory_assets.core.sources import IndexKey
from memory_assets.core.text import normalise
from memory_assets.core.textfile import read_text


class ReconcileError(RuntimeError):
    pass


@dataclass
class ReconcileResult:
    handoff_lines: int = 0
    retired: int = 0  # newly tombstoned
    already_retired: int = 0
    refused: list[str] = field(default_factory=list)  # under 24 characters
    not_held: list[str] = field(default_factory=list)  # no vault page holds them: never tombstoned
    unmatched: list[str] = field(default_factory=list)  # in no log
    days_reindexed: list[str] = field(default_factory=list)
    sweep: dict[str, Any] = field(default_factory=dict)
    optimize: dict[str, Any] = field(default_factory=dict)
    fragments_before: int = 0
    fragments_after: int = 0
    versions_before: int = 0
    versions_after: int = 0
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_handoff(settings: Settings) -> tuple[list[str], int, list[str]]:
    """The hand-off's lines (raw), how many were read, and warnings. An unreadable file raises
    (it is left in place: losing it would strand the rows it names)."""
    path = settings.superseded_path
    if not path.exists():
        return [], 0, []
    try:
        ft = read_text(path)
    except OSError as exc:
        raise ReconcileError(
            f"{path}: unreadable ({exc}); left in place, fix its permissions and rerun"
        ) from exc
    texts = ft.text.split("\n")[:-1]  # a last line without its newline is still being written
    return texts, len(texts), ft.warnings


def handoff_pending(settings: Settings) -> bool:
    """Whether the hand-off holds lines the reconcile has not retired yet (an unreadable file
    counts as pending: the reconcile reports it)."""
    try:
        return settings.superseded_path.stat().st_size > 0
    except FileNotFoundError:
        return False
    except OSError:
        return True


def retire_superseded(settings: Settings, indexer: Indexer, result: ReconcileResult) -> None:
    """Step 1, under the home's reconcile lock (re-entrant: ``reconcile`` holds it already), so two
    reconciles never truncate each other's hand-off lines."""
    with named_lock(f"reconcile:{settings.home}"):
        _retire_superseded(settings, indexer, result)


def _retire_superseded(settings: Settings, indexer: Indexer, result: ReconcileResult) -> None:
    raw, count, warnings = read_handoff(settings)
    result.handoff_lines = count
    result.warnings += warnings
    texts: list[str] = []
    for line in raw:
        text = clean_handoff_line(line)
        if not text:
            continue
        if len(text) < MIN_RETIRE_CHARS:
            result.refused.append(text)
            continue
        texts.append(text)
    texts = list(dict.fromkeys(texts))
    if texts:
        texts, result.not_held = held_texts(settings.notebook_dir, texts)
        if result.not_held:
            result.warnings.append(
                f"{len(result.not_held)} hand-off line(s) name facts no vault page holds "
                f"({', '.join(repr(t[:60]) for t in result.not_held[:5])}); not retired, so they stay in "
                "the index. A hand-off line is retired only once a page holds its fact."
            )
    if texts:
        retired = retire_texts(settings, indexer, texts)
        result.retired = len(retired.tombstoned)
        result.already_retired = len(retired.already)
        result.unmatched = retired.unmatched
        result.days_reindexed = [d.isoformat() if (d := IndexKey.parse(k).day) else k for k in retired.files]
        result.warnings += retired.warnings
    failpoint("reconcile.retired")
    remove_first_lines(settings.superseded_path, count)  # last: a crash before this replays


def reconcile(settings: Settings, indexer: Indexer, *, optimize: bool = True) -> ReconcileResult:
    """Retire superseded, sweep, optimize; see the module docstring. One reconcile at a time per home."""
    start = time.perf_counter()
    result = ReconcileResult()
    with named_lock(f"reconcile:{settings.home}"):
        indexer.migrate()
        stats = indexer.store.stats()
        result.fragments_before, result.versions_before = stats.fragments, stats.versions
        retire_superseded(settings, indexer, result)
        result.sweep = indexer.sweep().summary()
        failpoint("reconcile.swept")
        if optimize and indexer.store.exists():
            result.optimize = {"ann_built": indexer.optimize().ann_built}
        stats = indexer.store.stats()
        result.fragments_after, result.versions_after = stats.fragments, stats.versions
    result.seconds = time.perf_counter() - start
    return result


def forget(
    settings: Settings, indexer: Indexer, text: str | None = None, row_id: str | None = None
) -> dict[str, Any]:
    """Remove a text from retrieval: a tombstone plus an explicit reindex of every file that holds
    it (logs, vault pages, core files), never a direct delete from the table. ``row_id`` forgets
    the content of that row."""
    if row_id is not None:
        rows = indexer.store.scan(
            ["id", "content"], where=f"id = '{row_id.replace(chr(39), chr(39) * 2)}'"
        ).to_pylist()
        if not rows:
            raise ReconcileError(
                f"no row with id {row_id!r} in the index; `memory-assets search --json` shows ids"
            )
        text = rows[0]["content"]
    if not text or not normalise(text):
        raise ReconcileError("forget needs a text or --id")
    retired = retire_texts(settings, indexer, [text], pages=True)
    if retired.partial:
        where = ", ".join(_home_path(k) for k in retired.where.get(text, []))
        raise ReconcileError(
            f"nothing forgotten: {text!r} is not a whole fact or claim, only part of one (in {where}), "
            "and a tombstone hides whole texts (case and spacing aside), so none was written. Forget "
            "the fact's full text (`memory-assets search` shows it), or its row with `forget --id ROW`"
        )
    return {
        "text": text,
        "tombstoned": bool(retired.tombstoned),
        "already_forgotten": bool(retired.already),
        "files": retired.files,
        "rows_deleted": retired.deleted,
        "held_by_no_file": bool(retired.unmatched),
    }


def _home_path(key: str) -> str:
    """A ``label:filename`` key as the file's path in the home (archive/..., notebook/..., memory/...)."""
    parsed = IndexKey.parse(key)
    folder = {"archive": "archive", "notebook": "notebook"}.get(parsed.label, "memory")
    return f"{folder}/{parsed.filename}"


def unforget(settings: Settings, indexer: Indexer, text: str) -> dict[str, Any]:
    """Remove a text's tombstone (an atomic rewrite under the tombstones' lock) and reindex every
    file that holds it, so its rows come back."""
    norm = normalise(text)
    path = settings.tombstones_path
    removed = 0
    with file_lock(path):
        if path.exists():
            kept = []
            for line in read_text(path).text.splitlines():
                try:
                    value = json.loads(line)
                except ValueError:
                    kept.append(line)  # a corrupt line is kept as it is (and still reported)
                    continue
                if (
                    isinstance(value, dict)
                    and isinstance(value.get("content"), str)
                    and normalise(value["content"]) == norm
                ):
                    removed += 1
                    continue
                kept.append(line)
            if removed:
                write_atomic(path, "".join(f"{k}\n" for k in kept))
    keys = affected_keys(settings, [text], pages=True)[text]
    embedded = sum(indexer.reindex_key(k).embedded for k in keys)
    still = norm in read_tombstones(path).contents
    return {
        "text": text,
        "tombstones_removed": removed,
        "files": keys,
        "rows_embedded": embedded,
        "still_forgotten": still,
    }
