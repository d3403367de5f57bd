"""The rewrites of an erase, one function per kind of file; each is idempotent (a rewritten file no
longer holds what it removed, so a second pass changes nothing) and atomic (``write_atomic``,
under the lock the file's writers take, so an append racing it waits and is kept).

Append-only files keep every line and every byte offset: an erased line of a daily log becomes
spaces of the same length, and an erased part of a transcript's line is cut and the line padded
back to its length with trailing spaces (JSON allows them). So every record that names a line or
an offset (the fold ledger, the logs' ledger, transcript ingestion's offsets, a turn's identity,
the index's row ids) stays true, and a writer appending meanwhile loses nothing.

Each function returns how many lines, records or bullets it changed.
"""

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_assets.core.capture.ledger import accept_erasure, note_erasure
from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.erase.cut import ERASED, Needle
from memory_assets.core.erase.scope import EraseError, Plan, TurnRef
from memory_assets.core.knowledge.chunking import GENERATED_CLOSE, GENERATED_OPEN
from memory_assets.core.knowledge.keyed_hash import keyed_hash, words
from memory_assets.core.knowledge.page_index import clean_line
from memory_assets.core.knowledge.tombstones import erased_line
from memory_assets.core.text import json_object, normalise

_KEEP_KEYS = frozenset({"ts", "role"})  # a transcript line's fields that hold no one's words


class Needles:
    """The plan's needles and whole texts: what a line must not hold any more."""

    def __init__(self, plan: Plan) -> None:
        self.needles = [Needle(n) for n in plan.needles]
        self.whole = {normalise(t) for t in plan.whole_texts}

    def found(self, text: str) -> bool:
        return any(n.found(text) for n in self.needles) or normalise(text) in self.whole

    def cut(self, text: str) -> str:
        for needle in self.needles:
            text = needle.cut(text)
        return ERASED if normalise(text) in self.whole else text


def _blank(line: bytes) -> bytes:
    """A line's bytes as spaces (a final carriage return kept): the line and every offset stay."""
    body, cr = (line[:-1], b"\r") if line.endswith(b"\r") else (line, b"")
    return b" " * len(body) + cr


# -- daily logs --------------------------------------------------------------------------------------
def erase_log(memory_dir: Path, path: Path, lines: list[int], needles: Needles, key: bytes) -> int:
    """Empty the planned lines of one daily log and every other line holding a needle, under the
    log's writers' lock: the logs' ledger notes each line (a keyed hash of what it held) before the
    file is replaced and accepts the blank lines after (``note_erasure``, ``accept_erasure``), so
    ``logs_append_only`` accepts exactly these lines and still catches any other edit. A replay
    (the file already replaced) only completes the ledger."""
    if not path.is_file():
        return 0
    with file_lock(path):
        parts = path.read_bytes().split(b"\n")
        was: dict[int, str] = {}
        for number, raw in enumerate(parts, start=1):
            text = raw.decode("utf-8", errors="replace")
            if text.strip() and (number in lines or needles.found(text)):
                was[number] = keyed_hash(key, text)
                parts[number - 1] = _blank(raw)
        if was:
            note_erasure(memory_dir, path.name, was)
            write_atomic(path, b"\n".join(parts))
        accept_erasure(memory_dir, path.name, path.parent)
        return len(was)


# -- transcripts -------------------------------------------------------------------------------------
def erase_transcript(path: Path, turns: list[TurnRef], needles: Needles) -> int:
    """Cut the needles out of every line of one transcript, and erase the planned whole turns (the
    user's message; for a chat or a day the answer too), each line padded back to its length."""
    if not path.is_file():
        return 0
    whole = {t.offset: t for t in turns if t.whole}
    with file_lock(path):
        data = path.read_bytes()
        out: list[bytes] = []
        offset = 0
        changed = 0
        in_turn: TurnRef | None = None
        for raw in data.split(b"\n"):
            start, offset = offset, offset + len(raw) + 1
            new, role = _transcript_line(raw, needles, start, whole, in_turn)
            if role == "user":
                in_turn = whole.get(start)
            elif role != "assistant":
                in_turn = None
            if new != raw:
                if len(new) > len(raw):
                    raise EraseError(
                        f"{path} line {len(out) + 1}: the erased line would be longer than the original; "
                        "nothing was written. Report this: it should not happen"
                    )
                new += b" " * (len(raw) - len(new))
                changed += 1
            out.append(new)
        if changed:
            write_atomic(path, b"\n".join(out))
        return changed


def _transcript_line(
    raw: bytes, needles: Needles, start: int, whole: dict[int, TurnRef], in_turn: TurnRef | None
) -> tuple[bytes, str | None]:
    """One line rewritten, and its role (None: not a message line)."""
    text = raw.decode("utf-8", errors="replace")
    if not text.strip():
        return raw, None
    try:
        record = json.loads(text)
    except ValueError:
        cut = needles.cut(text)
        return (cut.encode("utf-8") if cut != text else raw), None
    if not isinstance(record, dict):
        return raw, None
    role = record.get("role")
    erase_all = (role == "user" and start in whole) or (
        role == "assistant" and in_turn is not None and in_turn.answer
    )
    new = _cut_json(record, needles)
    if erase_all and "content" in record:
        new["content"] = _cut_json(record["content"], needles, True)
    if new == record:
        return raw, role if isinstance(role, str) else None
    return json.dumps(new, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), role


def _cut_json(value: Any, needles: Needles, erase_all: bool = False) -> Any:
    """``value`` with the needles cut from every string (``erase_all``: every string replaced whole);
    the ``ts`` and ``role`` fields of an object are kept as they are."""
    if isinstance(value, dict):
        return {k: (v if k in _KEEP_KEYS else _cut_json(v, needles, erase_all)) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut_json(v, needles, erase_all) for v in value]
    if isinstance(value, str):
        if erase_all:
            return ERASED if value.strip() else value
        return needles.cut(value)
    return value


# -- the vault and the core files ------------------------------------------------------------------
def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _is_bullet(line: str) -> bool:
    return line.lstrip(" \t").startswith(("- ", "* ", "+ "))


def erase_page(path: Path, bullets: list[str], needles: Needles) -> int:
    """Remove from one vault page the planned bullets and every bullet holding a needle (with the
    lines nested under it), and every other line holding one; a frontmatter line has the needle cut
    (its key stays). Returns how many lines went or changed."""
    if not path.is_file():
        return 0
    wanted = set(bullets)
    with file_lock(path):
        text = path.read_bytes().decode("utf-8", errors="replace")
        lines = text.split("\n")
        out: list[str] = []
        changed = 0
        skip_under: int | None = None
        front = lines[0].strip() == "---" if lines else False
        for number, line in enumerate(lines):
            if front and number > 0 and line.strip() == "---":
                front = False
                out.append(line)
                continue
            if front and number > 0:
                cut = needles.cut(line)
                changed += cut != line
                out.append(cut)
                continue
            if skip_under is not None:
                if line.strip() and _indent(line) > skip_under:
                    changed += 1
                    continue
                skip_under = None
            if _is_bullet(line) and (normalise(clean_line(line)) in wanted or needles.found(line)):
                skip_under = _indent(line)
                changed += 1
                continue
            if line.strip() and needles.found(line):
                changed += 1
                continue
            out.append(line)
        if changed:
            write_atomic(path, "\n".join(out))
        return changed


def erase_core_file(
    path: Path, needles: Needles, manual_from: Callable[[list[str]], set[int]]
) -> tuple[int, int]:
    """Remove every line of a core file that holds a needle (both zones of MEMORY.md: a person's
    erase reaches their own lines too); the zone markers are kept. Returns (lines removed, of them
    in the manual zone)."""
    if not path.is_file():
        return 0, 0
    with file_lock(path):
        lines = path.read_bytes().decode("utf-8", errors="replace").split("\n")
        manual = manual_from(lines)
        out, removed, own = [], 0, 0
        for number, line in enumerate(lines, start=1):
            if (
                GENERATED_OPEN not in line
                and GENERATED_CLOSE not in line
                and line.strip()
                and needles.found(line)
            ):
                removed += 1
                own += number in manual
                continue
            out.append(line)
        if removed:
            write_atomic(path, "\n".join(out))
        return removed, own


# -- state files -------------------------------------------------------------------------------------
def erase_tombstones(path: Path, needles: Needles, plan: Plan, key: bytes) -> int:
    """Every tombstone whose text holds a needle (or is an erased whole text) becomes its keyed hash;
    the request's texts get a keyed-hash tombstone (matched inside longer text), and each whole text
    (an erased fact or turn) one matched whole, so a copy that comes back stays hidden."""
    with file_lock(path):
        old = path.read_text(encoding="utf-8", errors="replace").split("\n") if path.exists() else []
        out: list[str] = []
        seen: set[str] = set()
        changed = 0
        for line in old:
            if not line.strip():
                continue
            content = json_object(line).get("content")
            if isinstance(content, str) and needles.found(content):
                line = erased_line(keyed_hash(key, content), len(words(content)), whole=True).rstrip("\n")
                changed += 1
            elif not isinstance(content, str) and needles.found(line):
                changed += 1
                continue  # a malformed line holding a needle: nothing to keep of it
            if line not in seen:
                seen.add(line)
                out.append(line)
        for text, whole in [(n, False) for n in plan.needles if plan.request.text is not None] + [
            (t, True) for t in plan.whole_texts
        ]:
            if len(words(text)) == 0:
                continue
            line = erased_line(keyed_hash(key, text), len(words(text)), whole=whole).rstrip("\n")
            if line not in seen:
                seen.add(line)
                out.append(line)
                changed += 1
        if changed:
            write_atomic(path, "".join(f"{line}\n" for line in out))
        return changed


def erase_jsonl_records(path: Path, needles: Needles, fields: tuple[str, ...] | None = None) -> int:
    """Drop every line of a JSON-lines file that holds a needle (in ``fields`` when given, else
    anywhere); under the file's writers' lock."""
    if not path.is_file():
        return 0
    with file_lock(path):
        lines = path.read_bytes().decode("utf-8", errors="replace").split("\n")
        kept = []
        for line in lines:
            hit = False
            if line.strip():
                try:
                    value = json.loads(line)
                except ValueError:
                    value = None
                if isinstance(value, dict) and fields is not None:
                    hit = any(isinstance(value.get(f), str) and needles.found(value[f]) for f in fields)
                hit = hit or needles.found(line) or _holds_json_text(value, needles)
            if not hit:
                kept.append(line)
        removed = len(lines) - len(kept)
        if removed:
            write_atomic(path, "\n".join(kept))
        return removed


def _holds_json_text(value: Any, needles: Needles) -> bool:
    if isinstance(value, str):
        return needles.found(value)
    if isinstance(value, dict):
        return any(_holds_json_text(v, needles) for v in value.values())
    if isinstance(value, list):
        return any(_holds_json_text(v, needles) for v in value)
    return False


def erase_lines_file(path: Path, needles: Needles) -> int:
    """Drop every line of a plain text file (``superseded.txt``) that holds a needle."""
    if not path.is_file():
        return 0
    with file_lock(path):
        lines = path.read_bytes().decode("utf-8", errors="replace").split("\n")
        kept = [line for line in lines if not (line.strip() and needles.found(line))]
        if len(kept) != len(lines):
            write_atomic(path, "\n".join(kept))
        return len(lines) - len(kept)


def erase_pending_turn(path: Path, needles: Needles) -> int:
    """The write path's in-flight turn (``write_path.json``'s ``pending``): each line of its block or
    confirmations that holds a needle becomes spaces of the same length, so its recovery (which
    compares sizes) still finds what it appended or appends the rest, and writes no erased word."""
    if not path.is_file():
        return 0
    with file_lock(path):
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0
        pending = state.get("pending") if isinstance(state, dict) else None
        if not isinstance(pending, dict):
            return 0
        changed = 0
        for field_ in ("block", "confirmations"):
            text = pending.get(field_)
            if not isinstance(text, str):
                continue
            parts = text.split("\n")
            for i, line in enumerate(parts):
                if line.strip() and needles.found(line):
                    parts[i] = " " * len(line.encode("utf-8"))
                    changed += 1
            pending[field_] = "\n".join(parts)
        if changed:
            write_atomic(path, json.dumps(state, ensure_ascii=False))
        return changed


def erase_any_text_file(path: Path, needles: Needles) -> int:
    """Any other file of the home that is text (a journal, a report, a copy kept aside): JSON has the
    needles cut from its strings; other text has them cut in place. A file that is not UTF-8 text is
    left (the final check names it if it still holds a needle)."""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return 0
    if not needles.found(text):
        return 0
    with file_lock(path):
        if path.suffix in (".json", ".jsonl"):
            lines = text.split("\n") if path.suffix == ".jsonl" else [text]
            out = []
            for line in lines:
                try:
                    out.append(json.dumps(_cut_json(json.loads(line), needles), ensure_ascii=False))
                except ValueError:
                    out.append(needles.cut(line))
            new = "\n".join(out)
        else:
            new = "\n".join(needles.cut(line) for line in text.split("\n"))
        if new != text:
            write_atomic(path, new)
            return 1
    return 0


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
