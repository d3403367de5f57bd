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
"""

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from memory_assets.core.durable import append_durable
from memory_assets.core.text import normalise
from memory_assets.core.textfile import read_text

_BULLET = re.compile(r"^\s*[-*+]\s+")
_MARKER = re.compile(r"\s*\(confirmed\s+\d+x(?:,\s*last\s+\d{4}-\d{2}-\d{2})?\)", re.IGNORECASE)
# A person's tombstone shorter than this hides a turn only when the turn says exactly that: a
# forgotten "ok" must not hide every turn that says ok.
MIN_HELD_CHARS = 3


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

    def by_person(self, text: str) -> bool:
        """Whether a person's tombstone (not only the reconcile's) hides this text."""
        norm = normalise(text)
        if norm in self.contents and norm not in self.retired:
            return True
        return bool(self.claims) and claim_core(text) in self.claims

    def __contains__(self, text: str) -> bool:
        return self.hides(text)

    def hides(self, text: str) -> bool:
        """Whether a row with this text is tombstoned."""
        if normalise(text) in self.contents:
            return True
        return bool(self.claims) and claim_core(text) in self.claims

    def hides_turn(self, text: str) -> bool:
        """Whether a conversation turn with this text is hidden: a person's tombstone is the turn's
        whole text, or the turn holds a person's forgotten text (on word boundaries, case and
        spacing aside). The reconcile's tombstones never hide a turn: retiring a log line the
        dream folded says nothing about what was said."""
        norm = normalise(text)
        if norm in self.contents and norm not in self.retired:
            return True
        return self._held is not None and self._held.search(norm) is not None

    @cached_property
    def _held(self) -> "re.Pattern[str] | None":
        """One pattern for every person's forgotten text a turn may hold."""
        texts = sorted(
            (c for c in self.contents - self.retired - self.turns if len(c) >= MIN_HELD_CHARS),
            key=len,
            reverse=True,
        )
        if not texts:
            return None
        return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(t) for t in texts) + r")(?!\w)")


def read_tombstones(path: Path) -> Tombstones:
    """Read the tombstone set; a malformed line is skipped with a warning naming it, never fatal."""
    if not path.exists():
        return Tombstones()
    ft = read_text(path)
    found: set[str] = set()
    claims: set[str] = set()
    person: set[str] = set()
    turns: set[str] = set()
    texts: set[str] = set()  # a person's tombstones that are no whole turn's text
    warnings = list(ft.warnings)
    for number, line in enumerate(ft.text.splitlines(), start=1):
        if not line.strip():
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
    return Tombstones(
        frozenset(found), frozenset(claims), warnings, frozenset(found - person), frozenset(turns - texts)
    )


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
