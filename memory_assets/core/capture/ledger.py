"""The daily logs' ledger: what each log held, line by line, so that a rewrite stays visible.

Invariant 1 says daily logs are append-only. The ledger is how that is checked: for every log it
records a short hash of each line seen so far, in ``memory/.log_ledger.json``::

    {"version": 1, "logs": {"2026-11-20.md": "3f9a01c2b7d4e8f0..."},
     "erased": {"2026-11-20.md": [{"line": 7, "was": "<keyed hash>", "at": "<ISO>"}]}}

A log's record is the concatenation of one 8-hex-digit hash (blake2b, 4 bytes) per line, so a
year of logs costs a few kilobytes. Only complete lines (ending in a newline) are recorded: a
last line still being written is recorded once it is complete, so an append is never mistaken
for an edit.

* ``observe`` extends a log's record when the log still starts with exactly the recorded lines
  (an append), records a baseline for a log seen for the first time, and NEVER overwrites a
  record whose lines no longer match: the violation stays visible on every later check until
  the log is restored, or the edit is accepted explicitly with ``accept``.
* ``verify`` reports each log whose earlier part changed: the first changed line (1-based) and
  what it reads now, or that the file is now shorter, or that it was deleted.
* ``note_erasure`` and ``accept_erasure``: the one rewrite of a log the ledger accepts (design §7,
  invariant 1): a person's erase empties lines (each becomes spaces of its length, so no line
  moves). First the ledger's ``erased`` list gets which lines of which log go, when, and a keyed
  hash of what each held (never the text); then the log is replaced; then each such line, now
  blank, gets the blank line's hash as its record. Any other edit is still caught; an erase killed
  between the two shows as a changed line that now reads blank, until the erase is finished.

Logs are read with ``textfile.read_text``, so invalid UTF-8 is tolerated (a line's hash is of
its text as read, with U+FFFD for bad bytes). Writes go through ``durable.write_atomic`` under
``durable.file_lock`` of the ledger. A ledger written by a newer memory-assets is refused with a
message; an unreadable one is kept aside as ``.log_ledger.json.corrupt`` and rebuilt from the
current logs with a warning (edits made before the rebuild can no longer be detected).
"""

import hashlib
import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from memory_assets.core.capture.daily_log import LOG_NAME_RE, list_logs
from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.textfile import read_text

LEDGER_NAME = ".log_ledger.json"
LEDGER_VERSION = 1
HASH_BYTES = 4
HASH_HEX = 2 * HASH_BYTES
EXCERPT_CHARS = 80
_HEX = re.compile(r"^[0-9a-f]*$")
log = logging.getLogger(__name__)

ChangeKind = Literal["changed", "shorter", "deleted"]


class LedgerVersionError(RuntimeError):
    """A ledger written by a newer memory-assets than this one."""


@dataclass(frozen=True)
class LogChange:
    """A log whose earlier part no longer matches the ledger."""

    filename: str
    line: int  # the first changed line, 1-based
    # What that line reads now, or "the file is now shorter than line N" / "the file was deleted".
    excerpt: str
    kind: ChangeKind = "changed"

    def describe(self) -> str:
        if self.kind == "changed":
            return f"archive/{self.filename} line {self.line} was changed; it now reads {self.excerpt!r}"
        return f"archive/{self.filename}: {self.excerpt}"


@dataclass
class Ledger:
    """The recorded line hashes per log filename, plus what reading the file reported."""

    logs: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    erased: dict[str, list[dict[str, object]]] = field(default_factory=dict)  # see record_erasure
    exists: bool = False
    corrupt: bool = False
    dirty: bool = False  # entries were dropped while reading: the file needs rewriting

    def lines(self, filename: str) -> int:
        return len(self.logs.get(filename, "")) // HASH_HEX


@dataclass
class Observation:
    """What ``observe`` did: logs recorded for the first time, logs whose record grew, logs it
    refused to extend because their earlier part changed, and warnings."""

    logs: int = 0  # current logs seen
    recorded: int = 0  # logs the ledger records afterwards (deleted ones included)
    baselined: list[str] = field(default_factory=list)
    extended: list[str] = field(default_factory=list)
    refused: list[LogChange] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    written: bool = False


def ledger_path(memory_dir: Path) -> Path:
    """``memory/.log_ledger.json``: beside the logs' folder, never among the user's markdown."""
    return memory_dir / LEDGER_NAME


def line_hash(line: str) -> str:
    return hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=HASH_BYTES).hexdigest()


def read_ledger(path: Path) -> Ledger:
    """Read the ledger. Missing: empty. Unreadable: empty and ``corrupt`` with a warning naming the
    file. Written by a newer memory-assets: ``LedgerVersionError`` naming the file and the fix."""
    if not path.exists():
        return Ledger()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        version = data.get("version")
        if isinstance(version, int) and not isinstance(version, bool) and version > LEDGER_VERSION:
            raise LedgerVersionError(
                f"{path}: log ledger version {version} was written by a newer memory-assets (this one reads "
                f"version {LEDGER_VERSION}). Upgrade memory-assets, or delete the file to start a new "
                "baseline (edits made before then can no longer be detected)."
            )
        if type(version) is not int or version != LEDGER_VERSION:
            raise ValueError(f"unknown version {version!r}")
        logs = data.get("logs")
        if not isinstance(logs, dict):
            raise ValueError("no 'logs' object")
    except (OSError, ValueError) as exc:
        message = (
            f"{path}: the log ledger is unreadable ({exc}); it is rebuilt from the current daily logs "
            f"(the old file is kept as {path.name}.corrupt), so an edit made before now cannot be detected."
        )
        return Ledger(warnings=[message], exists=True, corrupt=True)
    ledger = Ledger(exists=True)
    erased = data.get("erased")
    if isinstance(erased, dict):
        ledger.erased = {
            k: [e for e in v if isinstance(e, dict)] for k, v in erased.items() if isinstance(v, list)
        }
    for name, record in logs.items():
        if (
            isinstance(name, str)
            and LOG_NAME_RE.match(name)
            and isinstance(record, str)
            and len(record) % HASH_HEX == 0
            and _HEX.match(record)
        ):
            ledger.logs[name] = record
        else:
            ledger.dirty = True
            ledger.warnings.append(
                f"{path}: the record of {name!r} is malformed; dropped, and the log is recorded afresh "
                "(an edit made to it before now cannot be detected)."
            )
    return ledger


def _lines(path: Path) -> tuple[list[str], int]:
    """A log's lines (a last line without its newline included) and how many are complete."""
    parts = read_text(path).text.split("\n")
    complete = len(parts) - 1
    return (parts if parts[-1] else parts[:-1]), complete


def _excerpt(line: str) -> str:
    text = line.strip()
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def _first_change(filename: str, record: str, lines: list[str], hashes: list[str]) -> LogChange | None:
    """Where ``lines`` stop starting with the recorded ones, or None when they still do."""
    for i in range(len(record) // HASH_HEX):
        if i >= len(lines):
            return LogChange(filename, i + 1, f"the file is now shorter than line {i + 1}", "shorter")
        if hashes[i] != record[i * HASH_HEX : (i + 1) * HASH_HEX]:
            return LogChange(filename, i + 1, _excerpt(lines[i]), "changed")
    return None


def _compare(archive_dir: Path, filename: str, record: str) -> tuple[LogChange | None, list[str], int]:
    """(the first change, the current line hashes, how many lines are complete) of one log."""
    path = archive_dir / filename
    if not path.is_file():
        return LogChange(filename, 1, "the file was deleted", "deleted"), [], 0
    lines, complete = _lines(path)
    hashes = [line_hash(line) for line in lines]
    return _first_change(filename, record, lines, hashes), hashes, complete


def verify(
    memory_dir: Path, archive_dir: Path | None = None, ledger: Ledger | None = None
) -> list[LogChange]:
    """Every recorded log whose earlier part changed (or that was deleted), by filename. Reads only."""
    archive = archive_dir if archive_dir is not None else memory_dir / "archive"
    state = ledger if ledger is not None else read_ledger(ledger_path(memory_dir))
    changes: list[LogChange] = []
    for filename, record in sorted(state.logs.items()):
        change, _, _ = _compare(archive, filename, record)
        if change is not None:
            changes.append(change)
    return changes


def _save(path: Path, ledger: Ledger) -> None:
    data: dict[str, object] = {"version": LEDGER_VERSION, "logs": dict(sorted(ledger.logs.items()))}
    if ledger.erased:
        data["erased"] = dict(sorted(ledger.erased.items()))
    write_atomic(path, json.dumps(data, indent=0, separators=(",", ":")) + "\n")


def _keep_corrupt(path: Path) -> None:
    try:
        write_atomic(path.with_name(path.name + ".corrupt"), path.read_bytes())
    except OSError as exc:
        log.warning("%s: could not keep a copy of the unreadable ledger (%s)", path, exc)


def observe(memory_dir: Path, archive_dir: Path | None = None) -> Observation:
    """Record every current log: a baseline for a log seen for the first time, the new lines of a
    log that only grew. A log whose earlier part changed is left as recorded (and reported in
    ``refused``), so the violation stays visible. Writes the ledger only when a record changed."""
    archive = archive_dir if archive_dir is not None else memory_dir / "archive"
    path = ledger_path(memory_dir)
    out = Observation()
    with file_lock(path):
        ledger = read_ledger(path)
        out.warnings += ledger.warnings
        for warning in ledger.warnings:
            log.warning(warning)
        changed = ledger.corrupt or ledger.dirty
        for _, log_path in list_logs(archive):
            name = log_path.name
            out.logs += 1
            record = ledger.logs.get(name)
            change, hashes, complete = _compare(archive, name, record or "")
            if change is not None:
                out.refused.append(change)
                continue
            if record is None:
                ledger.logs[name] = "".join(hashes[:complete])
                out.baselined.append(name)
                changed = True
            elif complete > ledger.lines(name):
                ledger.logs[name] = "".join(hashes[:complete])
                out.extended.append(name)
                changed = True
        out.recorded = len(ledger.logs)
        if changed:
            if ledger.corrupt:
                _keep_corrupt(path)
            _save(path, ledger)
            out.written = True
    return out


def accept(memory_dir: Path, filenames: Iterable[str], archive_dir: Path | None = None) -> list[str]:
    """Accept the current content of the named logs as their new record (an intended repair, such
    as re-saving a log as UTF-8); a deleted log's record is dropped. Returns the names accepted.
    Raises ValueError for a name that is neither a current log nor a recorded one."""
    archive = archive_dir if archive_dir is not None else memory_dir / "archive"
    path = ledger_path(memory_dir)
    accepted: list[str] = []
    with file_lock(path):
        ledger = read_ledger(path)
        if ledger.corrupt:
            _keep_corrupt(path)
        for raw in filenames:
            name = Path(raw).name
            log_path = archive / name
            if log_path.is_file() and LOG_NAME_RE.match(name):
                lines, complete = _lines(log_path)
                ledger.logs[name] = "".join(line_hash(line) for line in lines[:complete])
            elif name in ledger.logs:
                del ledger.logs[name]
            else:
                raise ValueError(
                    f"{raw!r} is neither a daily log in {archive} nor one the ledger {path} records; "
                    "name a log as YYYY-MM-DD.md"
                )
            accepted.append(name)
        _save(path, ledger)
    return accepted


def note_erasure(memory_dir: Path, filename: str, was: dict[int, str]) -> None:
    """First half of a person's erase of lines of one log (see the module docstring): the ledger's
    ``erased`` list gets each line (1-based) with a keyed hash of what it held, before the log is
    replaced. A replay notes nothing twice."""
    path = ledger_path(memory_dir)
    with file_lock(path):
        ledger = read_ledger(path)
        if ledger.corrupt:
            _keep_corrupt(path)
        entries = ledger.erased.setdefault(filename, [])
        known = {(e.get("line"), e.get("was")) for e in entries}
        at = datetime.now(UTC).isoformat(timespec="seconds")
        added = [n for n in sorted(was) if (n, was[n]) not in known]
        for line in added:
            entries.append({"line": line, "was": was[line], "at": at})
        if added or ledger.corrupt:
            _save(path, ledger)


def accept_erasure(memory_dir: Path, filename: str, archive_dir: Path | None = None) -> list[int]:
    """Second half, once the log is replaced: each line the ``erased`` list names that is now blank
    gets the blank line's hash as its record, so ``verify`` accepts exactly those lines. A line
    with no such entry, or one that is not blank, is never accepted. Returns the lines accepted."""
    archive = archive_dir if archive_dir is not None else memory_dir / "archive"
    path = ledger_path(memory_dir)
    with file_lock(path):
        ledger = read_ledger(path)
        record = ledger.logs.get(filename)
        named = {e.get("line") for e in ledger.erased.get(filename, [])}
        log_path = archive / filename
        if record is None or not named or not log_path.is_file():
            return []
        lines, _ = _lines(log_path)
        hashes = [record[i : i + HASH_HEX] for i in range(0, len(record), HASH_HEX)]
        accepted = []
        for line in sorted(n for n in named if isinstance(n, int)):
            if 1 <= line <= len(hashes) and line <= len(lines) and not lines[line - 1].strip():
                blank = line_hash(lines[line - 1])
                if hashes[line - 1] != blank:
                    hashes[line - 1] = blank
                    accepted.append(line)
        if accepted:
            ledger.logs[filename] = "".join(hashes)
            _save(path, ledger)
        return accepted
