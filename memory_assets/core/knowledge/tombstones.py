"""Tombstones: ``notebook/.state/tombstones.jsonl``, the only removal mechanism.

One JSON object a line, ``{"content": "<normalised text>"}``; normalisation is the existing
format's (lower case, whitespace collapsed). A tombstone hides every row whose normalised text
equals it exactly (a log fact, a page chunk). ``forget`` writes ``{"content": ..., "claims":
true}``: such a tombstone also hides a vault claim whose text is the same once its bullet and its
``(confirmed Nx, last D)`` marker are set aside, so forgetting a fact reaches the page that holds
it, however often it is confirmed later. The reconcile's tombstones are plain: retiring a log line
the dream folded must never hide the claim that now holds it. Readers that do not know ``claims``
(the assistant's) see a plain tombstone, as before. The reconcile's tombstones also carry
``"by": "reconcile"``: a line such a tombstone hides must be held by a vault page (the reconcile
tombstones nothing else), while any other tombstone is a person's (``forget``, or the assistant's
delete route), which ``facts_accounted_for`` accepts as the reason a fact left. History is never rewritten: a tombstone hides the
derived row, and every tombstone write must be paired with an explicit reindex of the days and
files that hold the text (appending here changes no log's mtime or content).

The recall tier (a chat's turns, ``transcripts/``): a person's tombstone also hides every turn
that holds its text (``hides_turn``). A person's forgetting that reaches turns by where they were
said (a fact's own turn, a whole chat, a day of talk: ``index/forgotten_turns.py``) writes each
turn's whole text as ``{"content": ..., "turn": true, "with": "<what was forgotten>"}``: it hides
that turn (and a fact of exactly that text), never every turn that happens to hold it, and
``unforget`` takes back the tombstones written ``with`` the text it is given. Readers that know
neither key see a plain tombstone of a text no log holds.

**Forgetting reaches whatever holds the text** (design §5.8): a person's tombstone hides not only
a row equal to it but every row, turn and line that *holds* it, on word boundaries, case and
spacing aside (its ``claim_core``, so a final full stop or a confirmation marker never decides).
A whole row is hidden (``hides``), and a chunk of several lines (a vault paragraph, a zone of
``MEMORY.md``) loses exactly the lines that hold it (``strip``), so the rest of the chunk stays
findable and the forgotten text is served nowhere. A person's text shorter than
``MIN_HELD_CHARS`` hides only rows equal to it.

**Erased texts** (``core/erase/``) leave a tombstone that holds no text: ``{"hash": H, "words":
N, "by": "erase"}``, H the keyed hash of the text's words (``keyed_hash.py``, the home's key).
It hides every row, turn and line that holds the same words (a run of N words hashing to H), so
a copy of an erased text that comes back (an assistant's own transcript, a restatement) is served
nowhere either. With ``"whole": true`` (a fact or a turn the erase reached through where it came
from, not by its words) it hides only a row, turn or line that is exactly those words. Such a line has no ``content``: a reader that needs one skips it.
"""

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from memory_assets.core.durable import append_durable
from memory_assets.core.knowledge.keyed_hash import keyed_hash, read_key, span_hashes
from memory_assets.core.text import normalise
from memory_assets.core.textfile import read_text

_BULLET = re.compile(r"^\s*[-*+]\s+")
_MARKER = re.compile(r"\s*\(confirmed\s+\d+x(?:,\s*last\s+\d{4}-\d{2}-\d{2})?\)", re.IGNORECASE)
# A person's tombstone shorter than this hides only a row (or turn) that says exactly that: a
# forgotten "ok" must not hide every row that says ok. Forget and erase refuse shorter texts.
MIN_HELD_CHARS = 4


def claim_core(text: str) -> str:
    """A claim's text for ``claims`` tombstones: its first line without the bullet, the confirmation
    marker and a final full stop, normalised."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return normalise(_MARKER.sub("", _BULLET.sub("", first))).rstrip(".").strip()


@dataclass
class Tombstones:
    contents: frozenset[str] = frozenset()
    claims: frozenset[str] = frozenset()  # forgotten facts, matched against claims' cores too
    warnings: list[str] = field(default_factory=list)
    # Contents tombstoned only by the reconcile (a page holds them); every other content is a person's.
    retired: frozenset[str] = frozenset()
    # Turns a person's forgetting reached by where they were said ("turn": true): whole texts only.
    turns: frozenset[str] = frozenset()
    # Erased texts: keyed hashes of their words, by their number of words (matched inside longer
    # text), those matched only as a row's whole text, and the home's key.
    erased: frozenset[tuple[str, int]] = frozenset()
    key: bytes | None = field(default=None, repr=False)
    erased_whole: frozenset[str] = frozenset()

    def __len__(self) -> int:
        return len(self.contents) + len(self.erased) + len(self.erased_whole)

    def by_person(self, text: str) -> bool:
        """Whether a person's tombstone (not only the reconcile's) hides this text."""
        norm = normalise(text)
        if norm in self.contents and norm not in self.retired:
            return True
        return (bool(self.claims) and claim_core(text) in self.claims) or self.holds_forgotten(text)

    def __contains__(self, text: str) -> bool:
        return self.hides(text)

    def hides(self, text: str) -> bool:
        """Whether a row with this text is tombstoned: its whole text (any tombstone), its claim
        (a forgotten fact), or a person's forgotten or erased text it holds."""
        return self.hides_whole(text) or self.holds_forgotten(text)

    def hides_whole(self, text: str) -> bool:
        """Whether a tombstone names this text itself: its whole text, or (a forgotten fact) the
        claim its first line states."""
        if normalise(text) in self.contents:
            return True
        return bool(self.claims) and claim_core(text) in self.claims

    def hides_turn(self, text: str) -> bool:
        """Whether a conversation turn with this text is hidden: a person's tombstone is the turn's
        whole text, or the turn holds a person's forgotten or erased text. The reconcile's
        tombstones never hide a turn: retiring a log line the dream folded says nothing about what
        was said."""
        norm = normalise(text)
        if norm in self.contents and norm not in self.retired:
            return True
        return self.holds_forgotten(text)

    def holds_forgotten(self, text: str, *, erased: bool = True) -> bool:
        """Whether the text holds a person's forgotten text (on word boundaries, case and spacing
        aside) or (``erased``) an erased one (its words, by keyed hash)."""
        if self._held is not None and self._held.search(normalise(text)) is not None:
            return True
        if erased and self.key is not None:
            if self.erased_whole and keyed_hash(self.key, text) in self.erased_whole:
                return True
            if self.erased:
                return not span_hashes(self.key, text, self._erased_lengths).isdisjoint(self._erased_hashes)
        return False

    def line_hidden(self, line: str) -> bool:
        """Whether one line of a chunk is hidden: it states a forgotten claim or holds a forgotten
        or erased text."""
        return (bool(self.claims) and claim_core(line) in self.claims) or self.holds_forgotten(line)

    def strip(self, chunk: str) -> tuple[str, int]:
        """``chunk`` without its hidden lines (``line_hidden``), and how many lines went: a
        paragraph or zone that holds a forgotten text among other lines is served without it."""
        if not (self.claims or self._held is not None or self.erased or self.erased_whole):
            return chunk, 0
        lines = chunk.split("\n")
        kept = [line for line in lines if not line.strip() or not self.line_hidden(line)]
        if len(kept) == len(lines):
            return chunk, 0
        return "\n".join(kept).strip("\n"), len(lines) - len(kept)

    @property
    def held_texts(self) -> frozenset[str]:
        """The person's forgotten texts a row is hidden for holding (normalised claim cores)."""
        return self._held_texts

    @cached_property
    def _held_texts(self) -> frozenset[str]:
        cores = {claim_core(c) for c in self.contents - self.retired - self.turns}
        return frozenset(c for c in cores if len(c) >= MIN_HELD_CHARS)

    @cached_property
    def _erased_hashes(self) -> frozenset[str]:
        return frozenset(h for h, _ in self.erased)

    @cached_property
    def _erased_lengths(self) -> frozenset[int]:
        return frozenset(n for _, n in self.erased)

    @cached_property
    def _held(self) -> "re.Pattern[str] | None":
        """One pattern for every person's forgotten text a row may hold (its claim core: no bullet,
        no marker, no final full stop)."""
        texts = sorted(self._held_texts, key=len, reverse=True)
        if not texts:
            return None
        return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(t) for t in texts) + r")(?!\w)")


def read_tombstones(path: Path) -> Tombstones:
    """Read the tombstone set; a malformed line is skipped with a warning naming it, never fatal.
    Erased texts' hashes are read with the home's key (``.state/erase.key`` beside the file)."""
    if not path.exists():
        return Tombstones()
    ft = read_text(path)
    found: set[str] = set()
    claims: set[str] = set()
    person: set[str] = set()
    turns: set[str] = set()
    texts: set[str] = set()  # a person's tombstones that are no whole turn's text
    erased: set[tuple[str, int]] = set()
    erased_whole: set[str] = set()
    warnings = list(ft.warnings)
    for number, line in enumerate(ft.text.splitlines(), start=1):
        if not line.strip():
            continue
        hashed = _parse_erased(line)
        if hashed is not None:
            digest, count, whole = hashed
            if whole:
                erased_whole.add(digest)
            else:
                erased.add((digest, count))
            continue
        content, claim, problem, by, turn = _parse(line)
        if content is None:
            warnings.append(
                f"{path} line {number}: not a tombstone ({problem}); expected a JSON object like "
                '{"content": "the text to forget"}. Skipped; fix or delete the line. The file was not modified.'
            )
            continue
        found.add(normalise(content))
        if by != RECONCILE:
            person.add(normalise(content))
        (turns if turn else texts).add(normalise(content))
        if claim:
            claims.add(claim_core(content))
    key = None
    if erased or erased_whole:
        try:
            key = read_key(path.parent)
        except OSError as exc:
            warnings.append(str(exc))
        if key is None:
            warnings.append(
                f"{path}: {len(erased) + len(erased_whole)} erased text(s) are kept as keyed hashes, but the home's key "
                f"({path.parent / 'erase.key'}) is missing: they cannot be recognised. Restore the key "
                "from a backup of the home."
            )
    return Tombstones(
        frozenset(found),
        frozenset(claims),
        warnings,
        frozenset(found - person),
        frozenset(turns - texts),
        frozenset(erased),
        key,
        frozenset(erased_whole),
    )


def _parse_erased(line: str) -> tuple[str, int, bool] | None:
    """An erased text's tombstone line as (hash, words, whole), or None for any other line."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict) or "content" in value:
        return None
    digest, count = value.get("hash"), value.get("words")
    if isinstance(digest, str) and isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return digest, count, value.get("whole") is True
    return None


def erased_line(digest: str, words: int, *, whole: bool = False) -> str:
    """The tombstone line of an erased text: its keyed hash and its number of words, no text;
    ``whole``: it hides a row whose whole text it is, not every row holding it."""
    entry: dict[str, object] = {"hash": digest, "words": words, "by": ERASE}
    if whole:
        entry["whole"] = True
    return json.dumps(entry) + "\n"


_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def _parse(line: str) -> tuple[str | None, bool, str, str | None, bool]:
    """A tombstone line's content, ``claims`` flag, ``by`` and ``turn`` flag, or None and what is
    wrong, in plain words."""
    try:
        value = json.loads(line)
    except ValueError:
        return None, False, "not valid JSON", None, False
    if not isinstance(value, dict):
        return None, False, f"{_JSON_KINDS.get(type(value), 'null')}, not an object", None, False
    if not isinstance(value.get("content"), str):
        return None, False, 'no "content" string', None, False
    by = value.get("by") if isinstance(value.get("by"), str) else None
    return value["content"], value.get("claims") is True, "", by, value.get("turn") is True


def forgotten_with(line: str) -> tuple[str | None, str | None]:
    """A tombstone line's normalised content and its ``with`` (what a person forgot that wrote it;
    None when it has none), or (None, None) for a line that is no tombstone."""
    content, _, _, _, _ = _parse(line)
    if content is None:
        return None, None
    value = json.loads(line).get("with")
    return normalise(content), value if isinstance(value, str) else None


RECONCILE = "reconcile"
ERASE = "erase"


def tombstone_line(
    content: str, claims: bool = False, by: str | None = None, *, turn: bool = False, with_: str | None = None
) -> str:
    """One tombstone line for ``content`` (normalised); ``claims``: a forgotten fact; ``by``: the
    reconcile's retirement of a folded line; ``turn``: a turn's whole text, hidden for where it was
    said; ``with_``: what the person forgot that wrote it (see above)."""
    value = normalise(content)
    if not value:
        raise ValueError("cannot tombstone empty content")
    entry: dict[str, object] = {"content": value}
    if claims:
        entry["claims"] = True
    if by:
        entry["by"] = by
    if turn:
        entry["turn"] = True
    if with_:
        entry["with"] = with_
    return json.dumps(entry, ensure_ascii=False) + "\n"


def append_tombstone(path: Path, content: str, claims: bool = False) -> str:
    """Append the normalised ``content``; returns it. The caller must reindex what holds it."""
    append_durable(path, tombstone_line(content, claims))
    return normalise(content)


def as_tombstones(value: "Tombstones | frozenset[str]") -> Tombstones:
    """``value`` as a tombstone set: a set of normalised texts counts as a person's tombstones."""
    return value if isinstance(value, Tombstones) else Tombstones(frozenset(normalise(t) for t in value))
