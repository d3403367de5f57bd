"""Transcript ingestion: every user turn of ``transcripts/*.jsonl`` through the write path, in
order, exactly once across retries, restarts and a SIGKILL at any point.

Progress lives in ``.state/write_path.json`` (``{"version": 1, "sessions": {session: {"offset",
"line"}}, "pending": ...}``), written atomically. For each turn the plan (recall, extract,
classify) is made first; then, under the day log's writers' lock, the exact bytes about to be
appended (the block, and the confirmation lines) are recorded as ``pending`` with the sizes the
files had; then they are appended; then the session's offset moves past the turn and ``pending``
is cleared. A crash between the record and the offset leaves ``pending``: the next run looks for
those bytes after the recorded sizes and appends only what is not there, so a turn is written
once whichever step the crash hit. One ingester runs at a time per home (a lock), while the
assistant's own appends go on beside it.

Turns are taken oldest first across sessions (each session in file order), and each turn's
``ts`` decides its day's log, so replaying history fills the right days.

The state file is checked field by field before anything is read or written: ``sessions``
an object of ``{"offset": int >= 0, "line": int >= 1}``; ``pending`` null or an object with every
key the writer records, of its type. ``pending.log`` must be a daily log's file name
(``YYYY-MM-DD.md``): recovery appends only to that file in the home's archive, with that day's
H1, never to a path the file names. Anything else is an ``IngestStateError`` naming the file, the
field and the fix, and nothing is appended anywhere.
"""

import heapq
import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_assets.core.capture.daily_log import LogBlock, log_date
from memory_assets.core.capture.transcripts import TranscriptRead, TranscriptTurn, list_sessions, read_turns
from memory_assets.core.durable import append_durable, file_lock, named_lock, write_atomic
from memory_assets.core.failpoints import failpoint
from memory_assets.core.home import Home
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.folds import ensure_ledger_before_append
from memory_assets.core.models.embedder import TextEmbedder
from memory_assets.core.settings import Settings
from memory_assets.core.sources import IndexKey
from memory_assets.core.write_path.extraction import Extractor, Turn
from memory_assets.core.write_path.process import (
    REINDEX_LOCK_WAIT_S,
    TurnResult,
    apply_plan,
    finish_turn,
    plan_turn,
)

STATE_VERSION = 1


class IngestStateError(RuntimeError):
    pass


@dataclass
class IngestResult:
    turns: int = 0
    skipped_lines: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {"new": 0, "revision": 0, "confirmation": 0})
    recovered: str | None = None  # what a crashed run left, and what was done about it
    days: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    results: list[TurnResult] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "facts": dict(self.counts),
            "skipped_lines": self.skipped_lines,
            "days": self.days,
            "recovered": self.recovered,
            "reindex_errors": sum(1 for r in self.results if r.reindex_error),
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
        }


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"version": STATE_VERSION, "sessions": {}, "pending": None}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise IngestStateError(
            f"{path}: unreadable ({exc}). It records how far each transcript was ingested; restore it "
            "from a backup, or delete it to ingest every transcript again (turns already in the logs "
            "would then come back as confirmations or repeats)."
        ) from None
    version = data.get("version") if isinstance(data, dict) else None
    if version != STATE_VERSION:
        raise IngestStateError(
            f"{path}: write-path state version {version!r}, this memory-assets reads {STATE_VERSION}. "
            "Upgrade memory-assets (a newer version wrote it), or move the file aside to start over."
        )
    data.setdefault("sessions", {})
    data.setdefault("pending", None)
    _check_state(path, data)
    return data


_STATE_FIX = (
    "It records how far each transcript was ingested: correct the field, restore the file from a "
    "backup, or delete it to ingest every transcript again (turns already in the logs would then "
    "come back as confirmations or repeats). Nothing was written."
)
_PENDING_FIX = (
    "It records a turn a crashed run was writing: correct the field, or set pending to null to drop "
    "it (the turn is then read again from its transcript). Nothing was written."
)
# pending: every key the writer records, with the type of its value.
_PENDING_KEYS: dict[str, type] = {
    "turn": str,
    "session": str,
    "end": int,
    "next_line": int,
    "log_size": int,
    "header": str,
    "block": str,
    "confirmations_size": int,
    "confirmations": str,
}


def _is_count(value: object, least: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _bad_state(path: Path, field_name: str, value: object, expected: str, fix: str) -> IngestStateError:
    shown = json.dumps(value, ensure_ascii=False)
    shown = shown if len(shown) <= 80 else shown[:80] + "..."
    return IngestStateError(f"{path}: {field_name} is {shown}, expected {expected}. {fix}")


def _check_state(path: Path, data: dict[str, Any]) -> None:
    """Refuse a state whose fields are not what the writer records; see the module docstring."""
    sessions = data["sessions"]
    if not isinstance(sessions, dict):
        raise _bad_state(path, "sessions", sessions, "an object of session: {offset, line}", _STATE_FIX)
    for session, where in sessions.items():
        name = f"sessions[{json.dumps(session, ensure_ascii=False)}]"
        if not isinstance(where, dict):
            raise _bad_state(path, name, where, 'an object {"offset": ..., "line": ...}', _STATE_FIX)
        if not _is_count(where.get("offset", 0)):
            raise _bad_state(
                path, f"{name}.offset", where["offset"], "a byte offset (an integer >= 0)", _STATE_FIX
            )
        if where.get("line") is not None and not _is_count(where["line"], 1):
            raise _bad_state(
                path, f"{name}.line", where["line"], "a line number (an integer >= 1)", _STATE_FIX
            )
    pending = data["pending"]
    if pending is None:
        return
    if not isinstance(pending, dict):
        raise _bad_state(path, "pending", pending, "null or an object", _PENDING_FIX)
    for key, kind in _PENDING_KEYS.items():
        if key not in pending:
            raise IngestStateError(f"{path}: pending has no {key!r}. {_PENDING_FIX}")
        value = pending[key]
        if kind is int and not _is_count(value, 1 if key == "next_line" else 0):
            least = "1" if key == "next_line" else "0"
            raise _bad_state(path, f"pending.{key}", value, f"an integer >= {least}", _PENDING_FIX)
        if kind is str and not isinstance(value, str):
            raise _bad_state(path, f"pending.{key}", value, "a string", _PENDING_FIX)
    log = pending.get("log")
    if log is None:
        return
    day = log_date(Path(log)) if isinstance(log, str) and Path(log).name == log else None
    if day is None:
        raise _bad_state(
            path,
            "pending.log",
            log,
            "a daily log's file name (YYYY-MM-DD.md, e.g. 2026-07-01.md): recovery appends only to that "
            "file in the home's archive",
            _PENDING_FIX,
        )
    header = LogBlock(day, "").header
    if pending["header"] not in ("", header):
        raise _bad_state(
            path, "pending.header", pending["header"], f"{header!r} (the day's H1)", _PENDING_FIX
        )


def _save(path: Path, state: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(state, ensure_ascii=False, indent=1))


def _contains_after(path: Path, size: int, expected: str) -> bool:
    """Whether ``expected`` was appended at or after byte ``size`` of ``path``."""
    if not expected:
        return True
    if not path.exists():
        return False
    with open(path, "rb") as fh:
        fh.seek(size)
        return expected.encode("utf-8") in fh.read()


def _recover(settings: Settings, state: dict[str, Any]) -> str | None:
    """Finish the turn a crashed run left ``pending``: append whatever of it is missing."""
    pending = state.get("pending")
    if not pending:
        return None
    done = []
    log = settings.archive_dir / pending["log"] if pending.get("log") else None
    if log is not None:
        expected = pending["block"]
        with file_lock(log):
            if _contains_after(log, pending["log_size"], expected):
                done.append("its log block was already written")
            else:
                settings.archive_dir.mkdir(parents=True, exist_ok=True)
                append_durable(log, expected, header=pending["header"])
                done.append("its log block was appended now")
    if pending.get("confirmations"):
        path = settings.confirmations_path
        with file_lock(path):
            if _contains_after(path, pending["confirmations_size"], pending["confirmations"]):
                done.append("its confirmations were already written")
            else:
                append_durable(path, pending["confirmations"])
                done.append("its confirmations were appended now")
    state["sessions"][pending["session"]] = {"offset": pending["end"], "line": pending["next_line"]}
    state["pending"] = None
    _save(settings.write_path_state_path, state)
    return f"turn {pending['turn']} was interrupted: " + ("; ".join(done) or "it had nothing to write")


def _read_all(
    settings: Settings, state: dict[str, Any], sessions: set[str] | None, result: IngestResult
) -> tuple[Iterator[TranscriptTurn], dict[str, TranscriptRead]]:
    """New turns of every session, merged oldest first (each session keeps its file order)."""
    reads: dict[str, TranscriptRead] = {}
    streams = []
    for session, path in list_sessions(settings.transcripts_dir):
        if sessions is not None and session not in sessions:
            continue
        where = state["sessions"].get(session, {})
        read = read_turns(path, int(where.get("offset", 0)), where.get("line"))
        result.warnings += read.warnings
        result.skipped_lines += read.skipped
        reads[session] = read
        streams.append([((t.at.isoformat() if t.at else ""), t.session, t.offset, t) for t in read.turns])
    return (turn for *_, turn in heapq.merge(*streams)), reads


def ingest_transcripts(
    settings: Settings,
    extractor: Extractor,
    *,
    store: MemoryStore | None = None,
    embedder: TextEmbedder | None = None,
    sessions: set[str] | None = None,
    limit: int | None = None,
) -> IngestResult:
    """Put every new user turn through the write path, exactly once; see the module docstring."""
    start = time.perf_counter()
    result = IngestResult()
    store = store or Home(settings).store
    state_path = settings.write_path_state_path
    with named_lock(f"write-path-ingest:{settings.home}"):
        state = _load(state_path)
        pending_day = (state.get("pending") or {}).get("log")
        ensure_ledger_before_append(settings)
        result.recovered = _recover(settings, state)
        if result.recovered and pending_day:
            # The interrupted turn's day is reindexed before the next turn recalls known facts,
            # so the run continues exactly as an uninterrupted one would.
            try:
                indexer = Home(settings, store=store).indexer_with(embedder, lock_timeout=REINDEX_LOCK_WAIT_S)
                indexer.reindex_key(str(IndexKey.for_log(pending_day)))
            except Exception as exc:
                result.warnings.append(f"reindexing archive/{pending_day} after recovery failed: {exc}")
        days: set[str] = set()
        turns, reads = _read_all(settings, state, sessions, result)
        finished = True
        for turn in turns:
            if limit is not None and result.turns >= limit:
                finished = False
                break
            turn_result = _ingest_turn(settings, state, turn, extractor, store, embedder)
            result.results.append(turn_result)
            result.turns += 1
            for outcome, count in turn_result.counts().items():
                result.counts[outcome] += count
            if turn_result.log:
                days.add(Path(turn_result.log).stem)
        if finished:  # every turn read was done: move past trailing assistant or skipped lines too
            for session, read in reads.items():
                state["sessions"][session] = {"offset": read.end, "line": read.end_line}
            _save(state_path, state)
        result.days = sorted(days)
    result.seconds = time.perf_counter() - start
    return result


def _ingest_turn(
    settings: Settings,
    state: dict[str, Any],
    turn: TranscriptTurn,
    extractor: Extractor,
    store: MemoryStore,
    embedder: TextEmbedder | None,
) -> TurnResult:
    """One turn: plan, record the bytes about to be written, write them, move the offset."""
    state_path = settings.write_path_state_path
    # The turn is kept already, in the transcript it was read from: the recall tier indexes that
    # file, reindexed with the turn's day (nothing is written to a transcript here).
    plan = plan_turn(
        Turn(turn.user, turn.assistant, turn.session, turn.at, keep=False),
        settings,
        extractor,
        store=store,
        transcript=f"{turn.session}.jsonl",
    )
    log = settings.archive_dir / plan.block.filename if plan.block else None
    confirmations = settings.confirmations_path
    with ExitStack() as locks:
        if log is not None:
            locks.enter_context(file_lock(log))
        locks.enter_context(file_lock(confirmations))
        state["pending"] = {
            "turn": turn.id,
            "session": turn.session,
            "end": turn.end,
            "next_line": turn.next_line,
            "log": plan.block.filename if plan.block else None,
            "log_size": log.stat().st_size if log is not None and log.exists() else 0,
            "header": plan.block.header if plan.block else "",
            "block": plan.block.text if plan.block else "",
            "confirmations_size": confirmations.stat().st_size if confirmations.exists() else 0,
            "confirmations": "".join(c.line() for c in plan.confirmations),
        }
        _save(state_path, state)
        failpoint("write_path.intent")
        path = apply_plan(plan, settings)
        failpoint("write_path.appended")
        state["sessions"][turn.session] = {"offset": turn.end, "line": turn.next_line}
        state["pending"] = None
        _save(state_path, state)
    return finish_turn(plan, settings, path, store=store, embedder=embedder)


def sessions_behind(settings: Settings) -> tuple[list[str], str]:
    """The sessions whose transcript is longer than the write path has ingested, and the state a
    freshness check compares ("-" when none is behind and no turn is pending). An unreadable
    progress file counts as no progress: the ingest reports it, with the fix."""
    path = settings.write_path_state_path
    try:
        progress = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except ValueError:
        progress = {}
    done = {s: int(v.get("offset", 0)) for s, v in (progress.get("sessions") or {}).items()}
    behind = sorted(
        session
        for session, file in list_sessions(settings.transcripts_dir)
        if file.stat().st_size > done.get(session, 0)
    )
    # One key for the whole write path: "recorded" is the sessions behind, "desired" is none behind.
    return behind, "behind:" + ",".join(behind) if behind or progress.get("pending") else "-"
