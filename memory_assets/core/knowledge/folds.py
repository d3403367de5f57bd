"""``.state/folds.jsonl``: which daily-log lines the dream has read and folded, line by line.

"Consolidated" means *these lines were folded into a page*, never *this day is old* (design §5.9).
Every fact line of a daily log is in one of three states here:

* **pending**: no dream has read it yet. It is indexed, and the next dream takes it, whatever its
  day: a line written to a past day (an ``--at`` replay, a late transcript, a turn in flight at
  midnight, a line appended while a dream ran) is pending like one written today.
* **left**: a dream read it but no page holds it (its category page could not be written, a
  skipped batch, the agent left it out). It stays indexed; no dream takes it again.
* **folded**: a dream run committed it as held by a vault page (the record names the page). It
  leaves the index: the page answers for it.

The file is append-only, one JSON object a line, each one a durable append (fsync'd):

* ``{"v": 1, "kind": "baseline", "at": ISO, "read": {"YYYY-MM-DD.md": [lines, bytes], ...}}``: the
  first record of a home. Lines up to ``lines`` of each named log were consolidated before this
  ledger existed (by the day watermark of older versions: every log at or below the watermark,
  except the days a skip left unconsolidated). They count as folded, page unknown.
* ``{"v": 1, "kind": "run", "run": ID, "at": ISO, "days": [...], "read": {file: [lines, bytes]},
  "folded": {page: {file: [line, ...]}}, "left": {file: [line, ...]}, "pending": {file: [...]},
  "confirmations": {"lines": N, "sha256": H}, "watermark": "YYYY-MM-DD" | null}``: a dream run's
  commit. ``read`` is how far it read each log (complete lines only). Its append is the run's
  commit point (``dream/runner.py``): a run without one never happened, and a crashed run's pages
  are rolled back from its journal. ``pending`` lists read lines it hands back untouched.
* ``{"v": 1, "kind": "unfold", "at": ISO, "lines": {file: [line, ...]}, "why": TEXT}``: folded
  lines no page holds any more (``memory-assets restore-stranded``): they return to the index and
  are pending again.

Later records win for a line. A home whose ledger does not exist yet (a home of an older
version) is read *implicitly* as a baseline of every log at or below the watermark, whole (what
older versions did), and the first writer (``ensure_ledger``) records that baseline with each
log's size at that moment, so lines appended to those days afterwards are pending. A torn last
line (a crash mid-append) is an uncommitted record and is ignored; any other unreadable line is a
warning naming the file, the line and the fix, never fatal.
"""

import contextlib
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from memory_assets.core.durable import append_durable, file_lock, write_atomic
from memory_assets.core.knowledge.watermark import WatermarkError, read_skipped_days, read_watermark
from memory_assets.core.settings import Settings
from memory_assets.core.textfile import read_json_objects, read_text

LEDGER_VERSION = 1
PENDING, LEFT, FOLDED = "pending", "left", "folded"
WHOLE = sys.maxsize  # an implicit baseline covers every line of its log
_LOG_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
_FACT_LINE = re.compile(rb"^\s*-\s*\[")


class FoldLedgerError(ValueError):
    """The ledger was written by a newer version; the message names the file and the fix."""


@dataclass(frozen=True)
class LineState:
    kind: str  # pending | left | folded
    page: str | None = None  # the page a folded line went to (None: before the ledger)
    run: str | None = None
    at: str | None = None


_FOLDED_BEFORE_LEDGER, _LEFT, _PENDING = LineState(FOLDED), LineState(LEFT), LineState(PENDING)


@dataclass
class FileFolds:
    """One daily log's view of the ledger."""

    filename: str
    baseline: int = 0  # lines folded before the ledger (page unknown)
    read_lines: int = 0  # how far dreams read (complete lines), baseline included
    read_bytes: int = 0
    lines: dict[int, LineState] = field(default_factory=dict)  # explicit states, latest record wins

    def state(self, line: int) -> LineState:
        found = self.lines.get(line)
        if found is not None:
            return found
        if line <= self.baseline:
            return _FOLDED_BEFORE_LEDGER
        if line <= self.read_lines:
            return _LEFT
        return _PENDING

    def folded(self, line: int) -> bool:
        return self.state(line).kind == FOLDED

    def pending(self, line: int) -> bool:
        return self.state(line).kind == PENDING

    def explicit_pending(self) -> list[int]:
        """Read lines handed back as pending (unfolded): a dream takes them although they lie
        before ``read_lines``."""
        return sorted(n for n, s in self.lines.items() if s.kind == PENDING and n <= self.read_lines)


@dataclass
class Folds:
    """The whole ledger, per log file. ``implicit``: no ledger file yet (see the module docstring)."""

    files: dict[str, FileFolds] = field(default_factory=dict)
    implicit: bool = False
    records: int = 0
    warnings: list[str] = field(default_factory=list)

    def of(self, filename: str) -> FileFolds:
        return self.files.get(filename) or FileFolds(filename)

    def folded_lines(self) -> dict[str, dict[int, LineState]]:
        """Every line a record names as folded (the baseline's lines are not listed: see ``of``)."""
        return {
            name: {n: s for n, s in f.lines.items() if s.kind == FOLDED} for name, f in self.files.items()
        }


def _file(folds: Folds, name: str) -> FileFolds:
    found = folds.files.get(name)
    if found is None:
        found = folds.files[name] = FileFolds(name)
    return found


def _read_mark(folds: Folds, name: str, mark: object) -> None:
    if not isinstance(mark, list) or len(mark) != 2 or not all(isinstance(v, int) for v in mark):
        raise ValueError(f"read[{name!r}] is not [lines, bytes]")
    f = _file(folds, name)
    if mark[0] >= f.read_lines:
        f.read_lines, f.read_bytes = mark[0], mark[1]


def _line_numbers(value: object, what: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(n, int) and n > 0 for n in value):
        raise ValueError(f"{what} is not a list of line numbers")
    return value


def _apply(folds: Folds, record: dict[str, Any]) -> None:
    kind = record.get("kind")
    at = record.get("at") if isinstance(record.get("at"), str) else None
    run = record.get("run") if isinstance(record.get("run"), str) else None
    if kind == "baseline":
        for name, mark in (record.get("read") or {}).items():
            _read_mark(folds, name, mark)
            f = _file(folds, name)
            f.baseline = max(f.baseline, mark[0])
        return
    if kind == "run":
        for name, mark in (record.get("read") or {}).items():
            _read_mark(folds, name, mark)
        for page, by_file in (record.get("folded") or {}).items():
            for name, lines in by_file.items():
                for n in _line_numbers(lines, f"folded[{page!r}][{name!r}]"):
                    _file(folds, name).lines[n] = LineState(FOLDED, page, run, at)
        for name, lines in (record.get("left") or {}).items():
            for n in _line_numbers(lines, f"left[{name!r}]"):
                _file(folds, name).lines[n] = LineState(LEFT, None, run, at)
        for name, lines in (record.get("pending") or {}).items():
            for n in _line_numbers(lines, f"pending[{name!r}]"):
                _file(folds, name).lines[n] = LineState(PENDING, None, run, at)
        return
    if kind == "unfold":
        for name, lines in (record.get("lines") or {}).items():
            for n in _line_numbers(lines, f"lines[{name!r}]"):
                _file(folds, name).lines[n] = LineState(PENDING, None, None, at)
        return
    raise ValueError(f"unknown kind {kind!r}")


def read_folds(
    path: Path, log_md: Path | None = None, archive_dir: Path | None = None, skipped: Iterable[date] = ()
) -> Folds:
    """The ledger at ``path``. Without one, the implicit baseline from ``log_md``'s watermark over
    the logs in ``archive_dir`` (``skipped``: days a skip left unconsolidated, kept out of it)."""
    if not path.exists():
        return implicit_folds(log_md, archive_dir, skipped)
    folds = Folds()
    ft = read_text(path)
    folds.warnings += ft.warnings
    text = ft.text
    lines = text.split("\n")
    torn = not text.endswith("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not an object")
            version = record.get("v")
            if isinstance(version, int) and version > LEDGER_VERSION:
                raise FoldLedgerError(
                    f"{path} line {number}: written by a newer version of memory-assets (v{version}); "
                    "upgrade memory-assets to read it. Nothing was changed."
                )
            _apply(folds, record)
            folds.records += 1
        except FoldLedgerError:
            raise
        except (ValueError, TypeError, AttributeError) as exc:
            if torn and number == len(lines):
                continue  # a crash mid-append: an uncommitted record
            folds.warnings.append(
                f"{path} line {number}: not a fold record ({exc}); skipped, so the lines it names count "
                "as pending (they stay indexed and the next dream takes them). Fix: delete the line if it "
                "was edited by hand. The file was not modified."
            )
    return folds


def read_records(path: Path) -> list[dict[str, Any]]:
    """The ledger's records that parse, in order (what a crashed run's recovery looks up)."""
    return read_json_objects(path)


def implicit_folds(log_md: Path | None, archive_dir: Path | None, skipped: Iterable[date] = ()) -> Folds:
    """What older versions did, for a home without a ledger: every log at or below the watermark
    (but the skipped days) is folded, whole. ``WatermarkError`` for a watermark that cannot be right."""
    folds = Folds(implicit=True)
    if log_md is None or archive_dir is None:
        return folds
    logs = _logs(archive_dir)
    watermark = read_watermark(log_md, newest_log=max(logs) if logs else None)
    if watermark is None:
        return folds
    left = set(skipped)
    for day, name in sorted(logs.items()):
        if day <= watermark and day not in left:
            folds.files[name] = FileFolds(name, baseline=WHOLE, read_lines=WHOLE, read_bytes=WHOLE)
    return folds


def _logs(archive_dir: Path) -> dict[date, str]:
    found: dict[date, str] = {}
    if not archive_dir.is_dir():
        return found
    for path in archive_dir.glob("????-??-??.md"):
        if _LOG_NAME.match(path.name):
            try:
                found[date.fromisoformat(path.name[:10])] = path.name
            except ValueError:
                continue
    return found


@dataclass(frozen=True)
class LogPrefix:
    """A daily log's complete lines as read now: a line still being appended is not one of them."""

    lines: int
    bytes: int
    data: bytes


def read_complete_lines(path: Path) -> LogPrefix:
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    return LogPrefix(data[:end].count(b"\n"), end, data[:end])


def unread_fact_lines(path: Path, file: FileFolds) -> int:
    """Fact lines of ``path`` a dream has not read (after ``read_bytes``), plus lines handed back
    as pending: cheap, it reads only the log's unread tail. ``OSError`` when it cannot be read."""
    extra = len(file.explicit_pending())
    if file.read_bytes >= WHOLE:
        return extra
    with open(path, "rb") as fh:
        fh.seek(file.read_bytes)
        tail = fh.read()
    end = tail.rfind(b"\n") + 1
    return extra + sum(1 for line in tail[:end].split(b"\n") if _FACT_LINE.match(line))


def skipped_days(settings: Settings) -> list[date]:
    """Days an older version's retry-then-skip left unconsolidated (``dream_state.json`` and
    ``log.md``): they kept their rows, so an implicit baseline leaves them out."""
    from memory_assets.core.knowledge.dream_state import load_dream_state

    days = set(read_skipped_days(settings.log_md))
    with contextlib.suppress(Exception):  # an unreadable state: log.md's record of the skips is enough
        days |= set(load_dream_state(settings.dream_state_path, settings.log_md).unconsolidated_days())
    return sorted(days)


def load_folds(settings: Settings) -> Folds:
    """The home's ledger (or its implicit baseline); ``WatermarkError`` as ``implicit_folds``."""
    path = settings.folds_path
    if path.exists():
        return read_folds(path)
    return implicit_folds(settings.log_md, settings.archive_dir, skipped_days(settings))


def ensure_ledger(settings: Settings) -> bool:
    """Write the baseline record if the ledger does not exist (True when it wrote one): every log
    at or below the watermark (but the skipped days), at its current size. Under the ledger's lock,
    so two writers never both write one. ``WatermarkError`` (nothing written) for a bad watermark.
    Every writer of the logs or the vault calls it first (one stat once the ledger exists)."""
    path = settings.folds_path
    if path.exists():
        return False
    with file_lock(path):
        if path.exists():
            return False
        implicit = implicit_folds(settings.log_md, settings.archive_dir, skipped_days(settings))
        read: dict[str, list[int]] = {}
        for name in sorted(implicit.files):
            try:
                prefix = read_complete_lines(settings.archive_dir / name)
            except OSError:
                continue  # unreadable now: its lines count as pending, the safe side
            read[name] = [prefix.lines, prefix.bytes]
        record = {"v": LEDGER_VERSION, "kind": "baseline", "at": _now(), "read": read}
        write_atomic(path, json.dumps(record, ensure_ascii=False) + "\n")
    return True


def ensure_ledger_before_append(settings: Settings) -> None:
    """``ensure_ledger`` for the write path, which must never be blocked: a watermark that cannot
    be right (the indexer and ``check`` report it) or an unwritable ``.state/`` only means the
    baseline is written by the next writer instead. Called before appending to any daily log, so
    a line written to a day at or below an older version's watermark is pending, never folded."""
    with contextlib.suppress(WatermarkError, OSError):
        ensure_ledger(settings)


def append_record(path: Path, record: Mapping[str, Any]) -> None:
    """One durable append (the commit point of whatever the record says)."""
    payload = {"v": LEDGER_VERSION, **record}
    payload.setdefault("at", _now())
    append_durable(path, json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
