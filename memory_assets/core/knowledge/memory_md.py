"""MEMORY.md's writers, zone-safe (invariant 6: only the generated zone is generated).

The reader side is ``chunking.split_memory_md``; every writer here locates the zones by the same
rule, so what a writer replaces is exactly what the indexer calls generated:

* marked file: the generated zone lies between the first ``<!-- /memory:generated -->`` and the
  first ``<!-- memory:generated -->`` before it (only the closing marker: everything before it);
  everything else is manual;
* no closing marker, but the old generator's signature (``# Long-term Memory`` header and
  ``*Last updated: ... UTC*`` footer): the whole file is generated;
* anything else is entirely manual (a file we cannot prove we wrote).

Writers:

* ``write_generated_zone``: replaces the generated zone only; the bytes before the opening marker
  and from the closing marker on are copied through byte for byte (odd bytes, CRLF, trailing
  whitespace included). An old-signature file becomes a marked file; a missing or blank file is
  created marked; an entirely manual file is refused (a result, not an error). Human
  verification stamps and zone markers in the generated body are stripped, so a generator can
  neither forge a stamp nor close the zone early and write into the manual zone.
* ``stamp_human_edit``: a person's edit: the manual zone becomes the given text under a fresh
  ``<!-- verified: human:<id> at <ISO ts> -->`` stamp; the generated zone is untouched.

Every write is a read-modify-write under ``file_lock(path)`` through ``write_atomic``.

The built-in fact list is a format too: ``Fact`` (one fact, its text cut to ``MAX_FACT_CHARS``),
``rank_facts`` (importance, then recency, then the text; one fact per normalised text) and
``render_facts`` (a ``##`` section per category in the categories table's order, at most
``max_lines`` lines). Its generators are the per-turn MEMORY.md writer
(``write_path/memory_md_refresh.py``, reading the index through ``index/best_facts.py``) and the
dream's promoter (``dream/promote.py``). This module reads no index.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.knowledge.categories import BY_NAME, CATEGORIES
from memory_assets.core.knowledge.chunking import (
    GENERATED_CLOSE,
    GENERATED_OPEN,
    HUMAN_STAMP_RE,
    OLD_GENERATOR_FOOTER,
    OLD_GENERATOR_HEADER,
)
from memory_assets.core.knowledge.tombstones import Tombstones, as_tombstones
from memory_assets.core.text import normalise

OPEN_B = GENERATED_OPEN.encode("ascii")
CLOSE_B = GENERATED_CLOSE.encode("ascii")
DEFAULT_MAX_LINES = 50
MAX_FACT_CHARS = 500
# Any HTML comment that claims a human verification, however spaced or cased: broader than
# HUMAN_STAMP_RE (what the reader honours), so no variant survives in a generated body.
_CLAIMED_STAMP = re.compile(r"<!--(?:(?!-->).)*?verified\s*:\s*human\s*:(?:(?!-->).)*?-->", re.I | re.S)
_WHO = re.compile(r"[A-Za-z0-9_.@+-]{1,64}")


@dataclass(frozen=True)
class MemoryMdResult:
    """What a writer did. ``written`` is False for a refusal, a stand-down or no change: none is
    an error, and ``reason`` says which for the caller to report."""

    written: bool
    reason: str
    path: Path
    # created | replaced | marked (old signature) | unchanged | refused | stood_down | no_index
    outcome: str
    generator: str = ""
    stripped: int = 0  # stamps or zone markers removed from a generated body
    facts: int = 0  # bullets refresh_from_index listed

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["path"] = str(self.path)
        return out


@dataclass(frozen=True)
class _Parsed:
    """A file's bytes cut by the reader's rule. ``layout``: missing | blank | marked | close_only |
    signature | manual | open_only (an opening marker never closed: manual, by the reader's rule)."""

    layout: str
    data: bytes
    open_at: int = -1  # offset of the opening marker (marked only)
    close_at: int = -1  # offset of the closing marker (marked, close_only)

    @property
    def newline(self) -> str:
        """CRLF when the file (its generated zone, if it has one) already uses it."""
        region = self.data[self.open_at : self.close_at] if self.layout == "marked" else self.data
        return "\r\n" if b"\r\n" in region else "\n"


def _parse(path: Path) -> _Parsed:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return _Parsed("missing", b"")
    close = data.find(CLOSE_B)
    if close >= 0:
        opening = data.find(OPEN_B, 0, close)
        if opening >= 0:
            return _Parsed("marked", data, opening, close)
        return _Parsed("close_only", data, close_at=close)
    text = data.decode("utf-8", errors="replace")
    if OLD_GENERATOR_HEADER.search(text) and OLD_GENERATOR_FOOTER.search(text):
        return _Parsed("signature", data)
    if not text.strip():
        return _Parsed("blank", data)
    return _Parsed("open_only" if OPEN_B in data else "manual", data)


def sanitize_generated(body: str) -> tuple[str, int]:
    """``body`` without anything that could pass for a human stamp or a zone marker, and how many
    were removed. Repeated until nothing is left, so removing one cannot assemble another."""
    removed = 0
    while True:
        before = body
        for pattern in (_CLAIMED_STAMP, HUMAN_STAMP_RE):
            body, n = pattern.subn("", body)
            removed += n
        for marker in (GENERATED_CLOSE, GENERATED_OPEN):
            removed += body.count(marker)
            body = body.replace(marker, "")
        if body == before:
            return body, removed


def _zone_bytes(body: str, newline: str) -> bytes:
    """The text between the markers: a newline after the opening marker, the body, and a newline
    before the closing one."""
    lines = body.replace("\r\n", "\n").replace("\r", "\n")
    if lines and not lines.endswith("\n"):
        lines += "\n"
    return (newline + lines.replace("\n", newline)).encode("utf-8")


def write_generated_zone(path: Path, body: str, generator: str = "generator") -> MemoryMdResult:
    """Replace the generated zone of ``path`` with ``body``; never touch the manual zone.

    Under the file's writers' lock: a marked file gets only the text between its markers replaced
    (bytes before the opening marker and from the closing marker on are copied unchanged); a file
    with the old generator's signature and no marker is all generated, and becomes a marked file
    whose zone is ``body`` (its old text is not kept); a missing or blank file is created with the
    markers and an empty manual zone after them; any other file is entirely manual and is left
    as it is (``outcome="refused"``). Stamps and markers inside ``body`` are stripped first."""
    path = Path(path)
    clean, stripped = sanitize_generated(body)
    note = (
        f"; removed {stripped} human stamp(s) or zone marker(s) from the generated text" if stripped else ""
    )

    def result(written: bool, outcome: str, reason: str) -> MemoryMdResult:
        return MemoryMdResult(written, reason + note, path, outcome, generator, stripped)

    with file_lock(path):
        parsed = _parse(path)
        data, nl = parsed.data, parsed.newline
        if parsed.layout == "marked":
            start = parsed.open_at + len(OPEN_B)
            new = data[:start] + _zone_bytes(clean, nl) + data[parsed.close_at :]
            outcome, reason = "replaced", "generated zone replaced; the manual zone was copied unchanged"
        elif parsed.layout == "close_only":
            new = OPEN_B + _zone_bytes(clean, nl) + data[parsed.close_at :]
            outcome, reason = "replaced", "generated zone (everything before the closing marker) replaced"
        elif parsed.layout == "signature":
            new = OPEN_B + _zone_bytes(clean, nl) + CLOSE_B + nl.encode()
            outcome = "marked"
            reason = "the old generator's file (header and footer signature) became a marked file"
        elif parsed.layout in ("missing", "blank"):
            new = OPEN_B + _zone_bytes(clean, "\n") + CLOSE_B + b"\n"
            outcome, reason = "created", f"{path.name} was {parsed.layout}: created with the zone markers"
        elif parsed.layout == "open_only":
            return result(
                False,
                "refused",
                f"{path} has an opening {GENERATED_OPEN} but no closing {GENERATED_CLOSE}, so all of "
                f"it counts as manual and was left unchanged. Add {GENERATED_CLOSE} after the "
                "generated text to let generators write it",
            )
        else:
            return result(
                False,
                "refused",
                f"{path} has no {GENERATED_OPEN} zone and not the old generator's signature, so it "
                "is entirely manual and was left unchanged. To let generators write part of it, add "
                f"a line {GENERATED_OPEN} and a line {GENERATED_CLOSE} above your own text",
            )
        if new == data:
            return result(False, "unchanged", "the generated zone already holds this text")
        write_atomic(path, new)
    return result(True, outcome, reason)


def _zone_span(parsed: _Parsed) -> tuple[int, int] | None:
    """Where the generated zone's bytes are (start, end), or None when the file has none."""
    if parsed.layout == "marked":
        return parsed.open_at + len(OPEN_B), parsed.close_at
    if parsed.layout == "close_only":
        return 0, parsed.close_at
    if parsed.layout == "signature":
        return 0, len(parsed.data)
    return None


def strip_generated_zone(path: Path, hidden: Callable[[str], bool]) -> int:
    """Remove the generated zone's lines for which ``hidden`` is true (a forgotten text they hold),
    at once, under the file's lock; every other byte is kept, the manual zone untouched (invariant
    6). Returns how many lines went (0: nothing written)."""
    with file_lock(path):
        parsed = _parse(path)
        span = _zone_span(parsed)
        if span is None:
            return 0
        start, end = span
        lines = parsed.data[start:end].split(b"\n")
        kept = [b for b in lines if not (b.strip() and hidden(b.decode("utf-8", errors="replace")))]
        if len(kept) == len(lines):
            return 0
        write_atomic(path, parsed.data[:start] + b"\n".join(kept) + parsed.data[end:])
        return len(lines) - len(kept)


def manual_lines(path: Path, hidden: Callable[[str], bool]) -> list[tuple[int, str]]:
    """The lines of the manual zone (a person's own) for which ``hidden`` is true, as (line number
    in the file, 1-based; the line): what forget names and leaves."""
    parsed = _parse(path)
    span = _zone_span(parsed)
    out: list[tuple[int, str]] = []
    offset = 0
    for number, raw in enumerate(parsed.data.split(b"\n"), start=1):
        inside = span is not None and span[0] <= offset < span[1]
        offset += len(raw) + 1
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        markers = GENERATED_OPEN in line or GENERATED_CLOSE in line
        if not inside and line.strip() and not markers and hidden(line):
            out.append((number, line))
    return out


def _check_who(who: str) -> str:
    who = who.strip().removeprefix("human:")
    if not _WHO.fullmatch(who) or "--" in who:
        raise ValueError(
            f"who={who!r} is not a plain id: use 1-64 letters, digits or . _ @ + - (no spaces, "
            "no '--', no '-->'), e.g. --who alice"
        )
    return who


def _iso(at: datetime | None) -> str:
    """``at`` in UTC as ``YYYY-MM-DDTHH:MM:SSZ`` (a naive time is taken as UTC); now by default."""
    at = at or datetime.now(UTC)
    at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def human_stamp(who: str, at: datetime | None = None) -> str:
    """``<!-- verified: human:<who> at <ISO ts> -->``, the stamp ``chunking.HUMAN_STAMP_RE`` reads."""
    return f"<!-- verified: human:{_check_who(who)} at {_iso(at)} -->"


def stamp_human_edit(path: Path, manual_text: str, who: str, at: datetime | None = None) -> MemoryMdResult:
    """A person's edit: the manual zone becomes ``manual_text`` under a fresh human stamp.

    The whole manual zone is replaced (text before the opening marker, if any, and everything
    after the closing marker), because the reader applies the stamp to all of it and it must not
    vouch for text the person did not give. The generated zone keeps its bytes: a file with
    markers keeps them; an old-signature file's text becomes the generated zone of a marked file;
    a missing, blank or unmarked (manual) file gets an empty marked zone at the top. Stamps
    already in ``manual_text`` (pasted from ``show``) are dropped for the fresh one."""
    path = Path(path)
    who_id = _check_who(who)
    stamp = human_stamp(who_id, at)
    for marker in (GENERATED_OPEN, GENERATED_CLOSE):
        if marker in manual_text:
            raise ValueError(
                f"the manual text contains the zone marker {marker}; the manual zone is the text "
                "after the generated zone: remove the marker from it"
            )
    text = HUMAN_STAMP_RE.sub("", manual_text).lstrip("\r\n")
    if text and not text.endswith("\n"):
        text += "\n"
    with file_lock(path):
        parsed = _parse(path)
        data, nl = parsed.data, parsed.newline
        manual = (nl + nl + stamp + nl).encode() + text.encode("utf-8")
        if parsed.layout == "marked":
            new = data[parsed.open_at : parsed.close_at + len(CLOSE_B)] + manual
        elif parsed.layout == "close_only":
            new = data[: parsed.close_at + len(CLOSE_B)] + manual
        elif parsed.layout == "signature":
            old = data if data.endswith(b"\n") else data + nl.encode()
            new = OPEN_B + nl.encode() + old + CLOSE_B + manual
        else:  # missing, blank, manual, open_only: no generated zone to keep
            new = OPEN_B + nl.encode() + CLOSE_B + manual
        write_atomic(path, new)
    return MemoryMdResult(
        True, f"manual zone replaced and stamped human:{who_id}", path, "stamped", f"human:{who_id}"
    )


LAYOUTS = {
    "missing": "no file yet",
    "blank": "blank: no zones yet",
    "marked": "marked: generated zone between the markers, manual zone around it",
    "close_only": "closing marker only: everything before it is generated",
    "signature": "the old generator's file (header and footer): all generated, no markers yet",
    "manual": "no markers: all manual (generators leave it alone)",
    "open_only": "an opening marker never closed: all manual (generators leave it alone)",
}


@dataclass(frozen=True)
class MemoryMdView:
    """MEMORY.md's zones as a person reads them (``memory-assets memory-md show``)."""

    path: Path
    layout: str
    generated: str | None  # None: the file has no generated zone
    manual: str  # human stamps removed (listed in ``stamps``)
    stamps: list[dict[str, str]] = field(default_factory=list)

    @property
    def human_verified(self) -> bool:
        return bool(self.stamps)

    @property
    def layout_note(self) -> str:
        """The layout in words (``LAYOUTS``)."""
        return LAYOUTS[self.layout]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "layout": self.layout,
            "layout_note": self.layout_note,
            "generated": self.generated,
            "manual": self.manual,
            "human_verified": self.human_verified,
            "stamps": self.stamps,
        }


def read_zones(path: Path) -> MemoryMdView:
    """Read MEMORY.md's zones by the reader's rule (bad bytes shown as U+FFFD; nothing written)."""
    parsed = _parse(Path(path))
    data = parsed.data

    def text(b: bytes) -> str:
        return b.decode("utf-8", errors="replace")

    generated: str | None
    if parsed.layout == "marked":
        generated = text(data[parsed.open_at + len(OPEN_B) : parsed.close_at])
        manual = text(data[: parsed.open_at] + data[parsed.close_at + len(CLOSE_B) :])
    elif parsed.layout == "close_only":
        generated, manual = text(data[: parsed.close_at]), text(data[parsed.close_at + len(CLOSE_B) :])
    elif parsed.layout == "signature":
        generated, manual = text(data), ""
    else:
        generated, manual = None, text(data)
    stamps = [{"who": m.group("who"), "at": m.group("at")} for m in HUMAN_STAMP_RE.finditer(manual)]
    return MemoryMdView(Path(path), parsed.layout, generated, HUMAN_STAMP_RE.sub("", manual), stamps)


# -- the built-in fact list ------------------------------------------------------------------------
@dataclass(frozen=True)
class Fact:
    """One fact, as the built-in list needs it."""

    content: str
    category: str
    importance: float
    day: date | None

    @classmethod
    def of(cls, content: object, category: object, importance: object, day: date | None) -> "Fact":
        """A fact from a row's values: whitespace collapsed, the text cut to ``MAX_FACT_CHARS``,
        the category folded (``identity`` is ``personal``; none is ``general``), a missing
        importance as 0.5."""
        text = " ".join(str(content or "").split())
        if len(text) > MAX_FACT_CHARS:
            text = text[: MAX_FACT_CHARS - 1].rstrip() + "…"
        cat = str(category).strip().lower() if category else "general"
        if cat == "identity":
            cat = "personal"
        value = float(importance) if isinstance(importance, int | float) else 0.5
        return cls(text, cat or "general", value, day)


def rank_facts(facts: Sequence[Fact], tombstoned: "Tombstones | frozenset[str]" = frozenset()) -> list[Fact]:
    """Importance first, then recency (the fact's date), then the text: a deterministic order.
    Tombstoned facts are left out (and those that hold a forgotten text); a fact repeated on
    several days is listed once (its best row)."""
    tombs = as_tombstones(tombstoned)
    ordered = sorted(
        facts,
        key=lambda f: (-f.importance, -(f.day.toordinal() if f.day else 0), normalise(f.content), f.category),
    )
    seen: set[str] = set()
    out = []
    for fact in ordered:
        norm = normalise(fact.content)
        if norm in seen or tombs.hides(fact.content):
            continue
        seen.add(norm)
        out.append(fact)
    return out


_ORDER = [c.name for c in CATEGORIES]


def _section_order(category: str) -> tuple[int, str]:
    """The categories table's order, then any other section by name."""
    return (_ORDER.index(category), "") if category in BY_NAME else (len(_ORDER), category)


def render_facts(ranked: Sequence[Fact], max_lines: int = DEFAULT_MAX_LINES) -> tuple[str, int]:
    """The zone's body: a ``## <Category>`` section per category (fixed order), one bullet per
    fact in rank order, at most ``max_lines`` lines in all (headings and the blank lines between
    sections count). Facts are taken best first; one that does not fit is skipped. Returns the
    body and the number of facts listed."""
    groups: dict[str, list[str]] = {}
    used = 0
    for fact in ranked:
        cost = 1 if fact.category in groups else (2 if not groups else 3)
        if used + cost > max_lines:
            continue
        groups.setdefault(fact.category, []).append(f"- {fact.content}")
        used += cost
    sections = []
    for category in sorted(groups, key=_section_order):
        title = (
            BY_NAME[category].memory_md_heading if category in BY_NAME else category.replace("_", " ").title()
        )
        sections.append("\n".join([f"## {title}", *groups[category]]))
    return "\n\n".join(sections), sum(len(v) for v in groups.values())
