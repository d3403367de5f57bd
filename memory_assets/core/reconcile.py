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

import time
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

from memory_assets.core.durable import file_lock, named_lock, write_atomic
from memory_assets.core.failpoints import failpoint
from memory_assets.core.index.best_facts import drop_candidates
from memory_assets.core.index.forgotten_turns import (
    facts_of_turns,
    log_facts,
    said_turns,
    turns_of_chat,
    turns_of_day,
    turns_of_facts,
)
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.reach import Reach, ReachError, check_text, reach
from memory_assets.core.index.retire import (
    MIN_RETIRE_CHARS,
    affected_keys,
    clean_handoff_line,
    forget_said,
    remove_first_lines,
    retire_texts,
)
from memory_assets.core.index.target import Target
from memory_assets.core.knowledge.memory_md import strip_generated_zone
from memory_assets.core.knowledge.page_index import held_texts
from memory_assets.core.knowledge.tombstones import forgotten_with, read_tombstones
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


@dataclass
class HandoffLeft:
    """What the hand-off holds as read now: its line count, and the lines a reconcile already
    retired (tombstoned) that are still in it, which a completed retire step never leaves."""

    lines: int
    retired: list[str] = field(default_factory=list)


def handoff_left(settings: Settings) -> HandoffLeft:
    """The hand-off's lines and those of them already retired (cleaned as the retire step cleans
    them, long enough to be retired, and tombstoned)."""
    raw, _, _ = read_handoff(settings)
    tombs = read_tombstones(settings.tombstones_path).contents
    cleaned = (clean_handoff_line(line) for line in raw)
    return HandoffLeft(len(raw), [t for t in cleaned if len(t) >= MIN_RETIRE_CHARS and normalise(t) in tombs])


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


def forget(settings: Settings, indexer: Indexer, target: Target, *, force: bool = False) -> dict[str, Any]:
    """Hide ``target`` (a text, a row, a chat or a day: ``index/target.py``) from everything that
    is served: a tombstone plus an explicit reindex of every file that holds it (logs, vault pages,
    core files, transcripts), never a direct delete from the table. A row that holds the text goes; a chunk that holds it among other lines is indexed
    without those lines; ``MEMORY.md``'s generated zone loses them at once, and the refresh's
    candidates are dropped (``_hide_served``). A line of MEMORY.md's manual zone (a person's own,
    invariant 6), or of persona.md or user.md, is named in the answer and left. A ``row_id``
    forgets the content of that row. The turns a fact was written from are hidden too, and every
    turn that holds the text (``index/forgotten_turns.py``). ``chat`` / ``day`` forget a whole
    chat, or every turn said that day (UTC), with the facts written from them. A text under
    ``MIN_HELD_CHARS`` characters is refused, and so is one that reaches more than
    ``forget_max_share`` of the home, unless ``force``."""
    text, row_id = target.text, target.row_id
    if target.chat is not None or target.day is not None:
        out = _forget_talk(settings, indexer, chat=target.chat, day=target.day)
        return out | _hide_served(settings, indexer, out.pop("_texts"))
    if row_id is not None:
        rows = indexer.store.scan(
            ["id", "content"], where=f"id = '{row_id.replace(chr(39), chr(39) * 2)}'"
        ).to_pylist()
        if not rows:
            raise ReconcileError(
                f"no row with id {row_id!r} in the index; `memory-assets search --json` shows ids"
            )
        text = rows[0]["content"]
    try:
        text = check_text(text, "forget")
        if not force:
            _refuse_wide(reach(settings, text, answers=False), settings, "forget")
    except ReachError as exc:
        raise ReconcileError(str(exc)) from exc
    retired = retire_texts(settings, indexer, [text], pages=True)
    if retired.partial:
        where = ", ".join(_home_path(k) for k in retired.where.get(text, []))
        raise ReconcileError(
            f"nothing forgotten: the text appears only inside words (in {where}), never as whole words, "
            "so it would hide nothing and no tombstone was written. Forget whole words or the fact's "
            "full text (`memory-assets search` shows it), or its row with `forget --id ROW`"
        )
    facts = log_facts(settings.archive_dir)
    said = forget_said(
        settings,
        indexer,
        turns_of_facts(facts, said_turns(settings.transcripts_dir), text),
        [],
        normalise(text),
    )
    out = {
        "text": text,
        "tombstoned": bool(retired.tombstoned),
        "already_forgotten": bool(retired.already),
        "files": sorted(set(retired.files) | set(said.files)),
        "rows_deleted": retired.deleted + said.deleted,
        "held_by_no_file": bool(retired.unmatched),
        "turns_hidden": len(said.tombstoned),
    }
    return out | _hide_served(settings, indexer, [text])


def _refuse_wide(found: Reach, settings: Settings, verb: str) -> None:
    if found.too_wide(settings.forget_max_share):
        raise ReachError(
            f"{verb}: the text is held by {len(found.places)} of the home's {found.total} lines and "
            f"turns ({found.share:.0%}, over MEMORY_FORGET_MAX_SHARE={settings.forget_max_share:.0%}); "
            f"nothing was changed. A text that common is rarely what a person means: give a longer, "
            f"more specific text, or pass --force to {verb} it everywhere"
        )


def _hide_served(settings: Settings, indexer: Indexer, texts: list[str]) -> dict[str, Any]:
    """What forgetting does beyond the index, at once: the lines of MEMORY.md's generated zone
    that hold a forgotten text go (then MEMORY.md is reindexed), and the per-turn refresh's kept
    candidates are dropped (a cache: the next refresh reads the index, forgotten rows left out).
    Returns the answer's part: how many generated lines went, and the person's own lines that hold
    one of ``texts`` (left as they are)."""
    tombs = read_tombstones(settings.tombstones_path)
    removed = strip_generated_zone(settings.memory_md_path, tombs.line_hidden)
    if removed:
        indexer.reindex_key(str(IndexKey.for_core_file("MEMORY.md")))
    drop_candidates(settings.state_dir)
    left: list[dict[str, Any]] = []
    for text in texts:
        for place in reach(settings, text, answers=False).places:
            if place.kind == "core" and place.zone != "generated":
                left.append({"file": place.path, "line": place.line, "text": place.text})
    unique = {(d["file"], d["line"]): d for d in left}
    return {"memory_md_lines_removed": removed, "left_in_your_own_lines": list(unique.values())}


def _forget_talk(
    settings: Settings, indexer: Indexer, *, chat: str | None, day: date | None
) -> dict[str, Any]:
    """``forget --chat`` / ``--day``: every turn of the chat (or said that day) and the facts
    written from them, tagged ``chat:ID`` / ``day:D`` for ``unforget``."""
    if (chat is None) == (day is None):
        raise ReconcileError("forget takes one of --chat ID and --day YYYY-MM-DD")
    turns = said_turns(settings.transcripts_dir)
    if chat is not None:
        chat = chat.strip()
        if not chat:
            raise ReconcileError("forget --chat needs a chat id (search hits carry it as `chat`)")
        reached, tag = turns_of_chat(turns, chat), f"chat:{chat}"
    else:
        assert day is not None
        reached, tag = turns_of_day(turns, day), f"day:{day.isoformat()}"
    facts = [f.fact.content for f in facts_of_turns(log_facts(settings.archive_dir), reached)]
    said = forget_said(settings, indexer, reached, facts, tag)
    return {
        "_texts": list(dict.fromkeys(facts)),
        "forgot": tag,
        "turns": len(reached),
        "facts": len(set(facts)),
        "tombstoned": len(said.tombstoned),
        "already_forgotten": len(said.already),
        "files": said.files,
        "rows_deleted": said.deleted,
    }


def _home_path(key: str) -> str:
    """A ``label:filename`` key as the file's path in the home (archive/..., notebook/..., memory/...)."""
    parsed = IndexKey.parse(key)
    folder = {"archive": "archive", "notebook": "notebook", "transcript": "transcripts"}.get(
        parsed.label, "memory"
    )
    return f"{folder}/{parsed.filename}"


def unforget(
    settings: Settings,
    indexer: Indexer,
    text: str | None = None,
    *,
    chat: str | None = None,
    day: date | None = None,
) -> dict[str, Any]:
    """Remove a text's tombstone, and every tombstone written with it (its turns: ``forget``), by
    an atomic rewrite under the tombstones' lock; then reindex every file that holds one, so its
    rows come back. ``chat`` / ``day`` take back a ``forget --chat`` / ``--day``."""
    if chat is not None:
        norm, tag = None, f"chat:{chat.strip()}"
    elif day is not None:
        norm, tag = None, f"day:{day.isoformat()}"
    elif text and normalise(text):
        norm = normalise(text)
        tag = norm
    else:
        raise ReconcileError("unforget needs a text, --chat ID or --day YYYY-MM-DD")
    path = settings.tombstones_path
    removed: list[str] = []
    with file_lock(path):
        if path.exists():
            kept = []
            for line in read_text(path).text.splitlines():
                content, with_ = forgotten_with(line)
                if content is not None and ((norm is not None and content == norm) or with_ == tag):
                    removed.append(content)
                    continue
                kept.append(line)  # a corrupt line is kept as it is (and still reported)
            if removed:
                write_atomic(path, "".join(f"{k}\n" for k in kept))
    texts = list(dict.fromkeys([*([text] if text else []), *removed]))
    keys = sorted({k for found in affected_keys(settings, texts, pages=True).values() for k in found})
    embedded = sum(indexer.reindex_key(k).embedded for k in keys)
    still = norm is not None and norm in read_tombstones(path).contents
    out: dict[str, Any] = {
        "text": text if text else tag,
        "tombstones_removed": len(removed),
        "files": keys,
        "rows_embedded": embedded,
        "still_forgotten": still,
    }
    return out
