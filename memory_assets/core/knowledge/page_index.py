"""Which vault page holds a fact: the test behind "folded" (design §5.9).

A daily-log fact leaves the index only while a vault page holds it, so every question "is this
fact safe to drop?" (the dream committing a run, the reconcile tombstoning a hand-off line,
``facts_accounted_for`` auditing a home) asks ``PageIndex.holder``. A page holds a fact when:

1. **verbatim**: one of its lines, cleaned (bullet, ``previously:`` prefix, ``(until D)`` and
   ``(confirmed Nx, last D)`` markers, a leading ``[category]`` set aside), is the fact (case and
   spacing aside), or the fact's text appears inside the page's text; or
2. **restated**: one of its lines bears on the fact as a confirmation (``claims.relate``: the same
   claim, or a more specific one that does not contradict it). A line that contradicts the fact
   (a new value, a reversal) does not hold it; the old value does, under ``previously:``.

Lexical on purpose, like the rest of the claim rules: a paraphrase no rule recognises is not
held, so its line stays indexed. That errs on the side of keeping a duplicate row, never of
losing a fact. Lines are found by their key words (an index by stem), so asking costs a set
lookup and a few ``relate`` calls, not a scan of the vault.
"""

import bisect
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from memory_assets.core.knowledge.claims import CONFIRM, analyse, relate
from memory_assets.core.knowledge.importance import CONFIRMED_RE
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.text import normalise
from memory_assets.core.textfile import read_text

MAX_CANDIDATES = 40  # page lines compared with ``relate`` per question (most shared key words first)
_LEAD = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_PREVIOUSLY = re.compile(r"^previously:\s*", re.IGNORECASE)
_UNTIL = re.compile(r"\s*\(until\s+\d{4}-\d{2}-\d{2}\)\s*$", re.IGNORECASE)
_CATEGORY = re.compile(r"^\[[^\]]*\]\s*")


def clean_line(line: str) -> str:
    """A page line reduced to the claim it states (see the module docstring), one line."""
    text = _LEAD.sub("", line.strip())
    text = _PREVIOUSLY.sub("", text)
    text = _CATEGORY.sub("", text)
    text = CONFIRMED_RE.sub(" ", text)
    text = _UNTIL.sub("", text)
    return " ".join(text.split())


@dataclass(frozen=True)
class Holding:
    page: str  # vault-relative path
    line: str  # the page line that holds the fact (cleaned)
    how: str  # verbatim | restated


class PageIndex:
    """The lines of a set of pages, searchable by exact text and by key word."""

    def __init__(self, pages: Mapping[str, str]) -> None:
        self.pages = dict(pages)
        self._exact: dict[str, list[str]] = defaultdict(list)  # normalised clean line -> pages
        self._lines: list[tuple[str, str]] = []  # (page, clean line)
        self._keys: dict[str, list[int]] | None = None  # key word -> lines: built on first need
        self._normalised: dict[str, str] = {}
        offsets: list[int] = []
        names: list[str] = []
        position = 0
        for rel, text in self.pages.items():
            offsets.append(position)
            names.append(rel)
            self._normalised[rel] = norm = normalise(text)
            position += len(norm) + 2
            for raw in text.splitlines():
                clean = clean_line(raw)
                if not clean or clean.startswith(("#", "---")):
                    continue
                pages = self._exact[normalise(clean)]
                if rel not in pages:
                    pages.append(rel)
                self._lines.append((rel, clean))
        self._corpus = "\n\n".join(self._normalised.values())
        self._offsets, self._names = offsets, names

    def _by_key(self) -> dict[str, list[int]]:
        """Lines by key word (``claims.analyse``), built the first time a fact is not held verbatim:
        on a healthy vault most questions end at the exact lookup, which needs no analysis."""
        if self._keys is None:
            self._keys = defaultdict(list)
            for index, (_, line) in enumerate(self._lines):
                for stem in analyse(line).keys:
                    self._keys[stem].append(index)
        return self._keys

    @classmethod
    def of_vault(
        cls, vault: Path, rels: Iterable[str] | None = None, warnings: list[str] | None = None
    ) -> "PageIndex":
        """Every content page of ``vault`` (or ``rels``); an unreadable page is left out, with a warning."""
        texts: dict[str, str] = {}
        for rel in rels if rels is not None else list_pages(vault):
            try:
                texts[rel] = read_text(vault / rel).text
            except OSError as exc:
                if warnings is not None:
                    warnings.append(
                        f"notebook/{rel}: cannot be read ({exc.strerror or exc}); it holds no fact"
                    )
        return cls(texts)

    def holder(self, fact: str, prefer: Iterable[str] = ()) -> Holding | None:
        """The page that holds ``fact`` (one of ``prefer`` first), or None."""
        norm = normalise(fact)
        if not norm:
            return None
        preferred = [p for p in prefer if p in self.pages]
        exact = self._exact.get(norm, [])
        for rel in preferred:
            if rel in exact or norm in self._normalised[rel]:
                return Holding(rel, fact, "verbatim")
        if exact:
            return Holding(exact[0], fact, "verbatim")
        form = analyse(fact)
        shared: Counter[int] = Counter()
        keys = self._by_key()
        for stem in form.keys:
            for index in keys.get(stem, ()):
                shared[index] += 1
        best: Holding | None = None
        for index, _ in shared.most_common(MAX_CANDIDATES):
            rel, line = self._lines[index]
            found = relate(form, analyse(line))
            if found is not None and found.outcome == CONFIRM:
                holding = Holding(rel, line, "restated")
                if rel in preferred:
                    return holding
                best = best or holding
        if best is not None:
            return best
        at = self._corpus.find(norm)
        if at >= 0:
            return Holding(self._names[bisect.bisect_right(self._offsets, at) - 1], fact, "verbatim")
        return None

    def holds(self, fact: str) -> bool:
        return self.holder(fact) is not None

    def has_line(self, line: str) -> bool:
        """Whether some page has this (cleaned) line, case and spacing aside."""
        return normalise(line) in self._exact


def held_texts(vault: Path, texts: list[str]) -> tuple[list[str], list[str]]:
    """``texts`` split into those some page of ``vault`` holds now and the others."""
    index = PageIndex.of_vault(vault)
    held: list[str] = []
    others: list[str] = []
    for text in texts:
        (held if index.holder(text) is not None else others).append(text)
    return held, others
