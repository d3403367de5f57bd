"""What a text reaches in a home: every line and turn that holds it, and how much of the home that is.

``forget`` and ``erase`` match a text the same way: a line or a turn *holds* it when the text's
claim core (``tombstones.claim_core``: no bullet, no confirmation marker, no final full stop)
appears in it on word boundaries, case and spacing aside (``Tombstones.holds_forgotten``, the rule
every served surface applies), or when the line is the text. ``reach`` lists the places:

* ``log``: a line of a daily log (``memory/archive/``), fact lines and any other line;
* ``page``: a line of a vault page (``notebook/``, ``.state/`` aside);
* ``core``: a line of ``MEMORY.md``, ``persona.md`` or ``user.md``, with its zone for MEMORY.md
  (``generated`` or ``manual``: a person's own);
* ``turn``: a turn of a transcript (``transcripts/``) whose user message or answer holds it.

and the home's size in the same units (non-blank lines, turns), so a text that would reach more
than a set share of the home (``Settings.forget_max_share``, ``MIN_GUARDED`` places at least) is
refused unless forced: forgetting or erasing "the" is a mistake, not a request. Reads only; an
unreadable file is listed in ``unreadable`` (its lines are not counted).
"""

from dataclasses import asdict, dataclass, field
from pathlib import Path

from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.capture.transcripts import list_transcripts, read_turns
from memory_assets.core.knowledge.chunking import GENERATED_CLOSE, GENERATED_OPEN
from memory_assets.core.knowledge.memory_md import manual_lines
from memory_assets.core.knowledge.tombstones import MIN_HELD_CHARS, Tombstones, claim_core
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.settings import Settings
from memory_assets.core.sources import CORE_FILES
from memory_assets.core.text import normalise
from memory_assets.core.textfile import read_text

MIN_GUARDED = 20  # a text reaching this many places or fewer is never refused for its share


class ReachError(ValueError):
    """A text forget or erase cannot take (the message says why and the fix)."""


@dataclass(frozen=True)
class Place:
    kind: str  # log | page | core | turn
    path: str  # the file, as its path under the home
    line: int  # 1-based line (a turn: its user line)
    text: str  # the line (a turn: its user message)
    zone: str | None = None  # MEMORY.md: generated | manual
    offset: int | None = None  # a turn: its byte offset, the turn's identity in its session

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Reach:
    text: str
    places: list[Place] = field(default_factory=list)
    total: int = 0  # the home's non-blank lines and turns
    unreadable: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return len(self.places) / self.total if self.total else 0.0

    def too_wide(self, max_share: float) -> bool:
        return len(self.places) > MIN_GUARDED and self.share > max_share

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for place in self.places:
            out[place.kind] = out.get(place.kind, 0) + 1
        return out


def probe(text: str) -> Tombstones:
    """A tombstone set of this text alone, as a person's forgetting writes it."""
    return Tombstones(frozenset({normalise(text)}), frozenset({claim_core(text)}))


def check_text(text: str | None, verb: str) -> str:
    """The text, or a ReachError naming what is wrong with it."""
    if text is None or not normalise(text):
        raise ReachError(f"{verb} needs a text (or --id ROW, --chat ID, --day YYYY-MM-DD); it was empty")
    if len(claim_core(text)) < MIN_HELD_CHARS:
        raise ReachError(
            f"{verb}: the text is under {MIN_HELD_CHARS} characters; it would match words inside "
            "unrelated text. Give the whole fact, or a longer part of it"
        )
    return text


def reach(settings: Settings, text: str, *, answers: bool = True) -> Reach:
    """Every place of the home that holds ``text`` (see the module docstring); ``answers``: a turn
    holding it in its answer counts too (erase), not only in the user's message."""
    holds = probe(text)
    out = Reach(text)

    def lines_of(path: Path, rel: str) -> list[str] | None:
        try:
            return read_text(path, rel).text.split("\n")
        except OSError:
            out.unreadable.append(rel)
            return None

    def scan(kind: str, path: Path, rel: str, zone_of: dict[int, str] | None = None) -> None:
        lines = lines_of(path, rel)
        for number, line in enumerate(lines or [], start=1):
            if not line.strip():
                continue
            out.total += 1
            if holds.hides(line):
                zone = zone_of.get(number) if zone_of is not None else None
                out.places.append(Place(kind, rel, number, line.rstrip("\r"), zone))

    for _, path in list_logs(settings.archive_dir):
        scan("log", path, f"memory/archive/{path.name}")
    for rel in list_pages(settings.notebook_dir):
        scan("page", settings.notebook_dir / rel, f"notebook/{rel}")
    for name in CORE_FILES:
        path = settings.core_file_path(name)
        if not path.is_file():
            continue
        zones = _memory_md_zones(path) if name == "MEMORY.md" else None
        scan("core", path, f"memory/{name}", zones)
    for rel, path in list_transcripts(settings.transcripts_dir):
        try:
            turns = read_turns(path, cap=None).turns
        except OSError:
            out.unreadable.append(f"transcripts/{rel}")
            continue
        for turn in turns:
            out.total += 1
            said = [turn.user] + ([turn.assistant] if answers else [])
            if any(s and holds.hides_turn(s) for s in said):
                out.places.append(
                    Place("turn", f"transcripts/{rel}", turn.line, turn.user, offset=turn.offset)
                )
    return out


def _memory_md_zones(path: Path) -> dict[int, str]:
    """MEMORY.md's zone by line number: manual for a person's lines, generated for the rest (the
    markers' own lines included)."""
    manual = {n for n, _ in manual_lines(path, lambda _line: True)}
    try:
        count = len(read_text(path).text.split("\n"))
    except OSError:
        return {}
    zones = {n: ("manual" if n in manual else "generated") for n in range(1, count + 1)}
    for n, line in enumerate(read_text(path).text.split("\n"), start=1):
        if GENERATED_OPEN in line or GENERATED_CLOSE in line:
            zones[n] = "marker"
    return zones
