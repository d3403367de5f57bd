"""The ``3_Personal/`` page format: one page per fact category, one bullet per claim.

A page, as the rule-based consolidator writes it (design §4.9)::

    ---
    title: Preferences
    category: preference
    status: stable
    updated: 2026-11-21
    stale_after: 2027-11-21
    sources:
    - file: 2026-11-20.md
    - file: 2026-11-21.md
    generated:
      by: dream:rules
      at: '2026-11-22'
    ---

    ## Key Facts

    - Wants to be reminded to drink water hourly from 9 AM to 9 PM daily. (confirmed 3x, last 2026-11-21)
    - Likes jazz.
      - previously: Dislikes jazz. (until 2026-11-21)

    ## Notes

    Anything a person wrote in another section is kept verbatim.

* **Claims** are the top-level bullets of ``## Key Facts``. A claim confirmed more than once
  carries the marker ``(confirmed Nx, last YYYY-MM-DD)`` that the indexer reads
  (``importance.CONFIRMED_RE``); no marker means confirmed once. A superseded claim's earlier
  values follow as indented ``previously:`` sub-bullets, newest first. Any other line under a
  claim (an indented note, a continuation) stays attached to it verbatim.
* **Everything else is kept**: the text before the first ``##`` heading, every other ``##``
  section (verbatim), lines of Key Facts before its first bullet, and frontmatter keys this
  module does not know (``verified``, ``tags``, ...), in their order, after the known ones.
* **A broken page is never rewritten.** Frontmatter that opens with ``---`` and never closes,
  YAML that does not parse, or YAML that is not a mapping raises ``PageError`` naming the file
  and the fix; callers report it and leave the file alone, byte for byte.

``Page.parse(text)`` and ``Page.render()`` round-trip: ``Page.parse(p.render()) == p`` for any
page whose claim texts are single lines. ``save_page`` writes atomically under the file's
writers' lock; a read-modify-write holds ``file_lock(path)`` across both.
``list_personal_pages(settings)`` lists a home's pages (vault-relative paths, as ``vault.list_pages``).
"""

import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.knowledge.categories import normalise_category, title_of
from memory_assets.core.knowledge.frontmatter_yaml import load_yaml
from memory_assets.core.knowledge.importance import CONFIRMED_RE
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.settings import Settings
from memory_assets.core.text import as_date
from memory_assets.core.textfile import read_text

PERSONAL_DIR = "3_Personal"


def is_personal(rel: str) -> bool:
    """Whether a vault-relative POSIX path lies under ``3_Personal/``."""
    return rel.startswith(PERSONAL_DIR + "/")


def list_personal_pages(settings: Settings) -> list[str]:
    """The vault's ``3_Personal/`` pages (what the dream's promoter writes MEMORY.md from)."""
    return list_pages(settings.notebook_dir, under=PERSONAL_DIR)


KEY_FACTS = "Key Facts"
KEY_FACTS_HEADING = f"## {KEY_FACTS}"
MAX_SOURCES = 30  # provenance entries a page keeps (the most recent)

_FM_OPEN = re.compile(r"\A\ufeff?---[ \t]*\r?\n")
_FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)
_H2 = re.compile(r"^##[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_BULLET = re.compile(r"^[-*+][ \t]+(.*)$")
_PREVIOUSLY = re.compile(
    r"^[ \t]+[-*+][ \t]+previously:[ \t]*(?P<text>.*?)(?:[ \t]*\(until[ \t]+(?P<until>\d{4}-\d{2}-\d{2})\))?[ \t]*$",
    re.IGNORECASE,
)


class PageError(ValueError):
    """A page this module must not rewrite (its frontmatter is broken). The message names the
    file, the line and the fix."""


def page_rel(category: str) -> str:
    """The vault-relative path of a category's page (one page per category, titled by the
    categories table), e.g. ``3_Personal/Preferences.md``."""
    return f"{PERSONAL_DIR}/{title_of(category)}.md"


def one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Previous:
    """An earlier value of a claim, and the day it stopped holding."""

    text: str
    until: date | None = None

    def render(self) -> str:
        suffix = f" (until {self.until.isoformat()})" if self.until else ""
        return f"  - previously: {self.text}{suffix}"


@dataclass
class Claim:
    """One bullet of Key Facts: its text, how often it was stated, and what it replaced."""

    text: str
    count: int = 1
    last: date | None = None  # the last confirmation; only rendered with the marker
    previously: list[Previous] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)  # other lines under the bullet, verbatim

    def marker(self) -> str:
        if self.count <= 1 and self.last is None:
            return ""
        last = f", last {self.last.isoformat()}" if self.last else ""
        return f"(confirmed {self.count}x{last})"

    def render(self) -> list[str]:
        marker = self.marker()
        lines = [f"- {self.text} {marker}" if marker else f"- {self.text}"]
        lines += [p.render() for p in self.previously]
        lines += self.extra
        return lines

    @classmethod
    def parse_bullet(cls, content: str) -> "Claim":
        """A claim from a bullet's text (after ``- ``): the last marker gives count and date."""
        count, last = 1, None
        markers = list(CONFIRMED_RE.finditer(content))
        if markers:
            m = markers[-1]
            count = max(1, int(m.group(1)))
            last = as_date(m.group(2)) if m.group(2) else None
            content = content[: m.start()] + content[m.end() :]
        return cls(text=one_line(content), count=count, last=last)


@dataclass
class Section:
    """A ``##`` section other than Key Facts, kept verbatim."""

    heading: str  # the heading line as written
    text: str  # what follows it, up to the next ``##`` heading (outer blank lines dropped)


@dataclass
class Page:
    title: str = ""
    category: str = "general"
    status: str = "stable"
    updated: date | None = None
    stale_after: str | None = None  # "YYYY-MM-DD", "never", or None (missing)
    sources: list[Any] = field(default_factory=list)
    generated: dict[str, Any] | None = None
    extra_meta: dict[str, Any] = field(default_factory=dict)  # frontmatter keys kept as read
    preamble: str = ""  # body text before the first ``##`` heading
    intro: str = ""  # Key Facts lines before its first bullet
    claims: list[Claim] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)  # the other ``##`` sections
    key_facts_at: int = 0  # where Key Facts sits among ``sections``
    # Whether the page shows a Key Facts section when it has no claims (a new page does; a page of
    # another shape that is only re-dated does not gain an empty one).
    has_key_facts: bool = field(default=True, compare=False)
    # Whether the text had a frontmatter block (a page without one gets one once it has fields).
    has_frontmatter: bool = field(default=True, compare=False)

    @classmethod
    def new(cls, category: str) -> "Page":
        cat = normalise_category(category)
        return cls(title=title_of(cat), category=cat)

    # -- reading -------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str, name: str = "page") -> "Page":
        """Parse a page. Raises ``PageError`` for broken frontmatter (the file must be left alone)."""
        meta, body, has_fm = split_frontmatter(text, name)
        page = cls(has_frontmatter=has_fm)
        page.title = str(meta.pop("title", "") or "")
        category = meta.pop("category", None)
        page.category = str(category) if category not in (None, "") else ""
        status = meta.pop("status", None)
        page.status = str(status) if status not in (None, "") else ""
        page.updated = as_date(meta.pop("updated", None))
        stale = meta.pop("stale_after", None)
        page.stale_after = stale.isoformat() if isinstance(stale, date) else (str(stale) if stale else None)
        sources = meta.pop("sources", None)
        page.sources = list(sources) if isinstance(sources, list) else ([] if sources is None else [sources])
        generated = meta.pop("generated", None)
        page.generated = dict(generated) if isinstance(generated, dict) else None
        page.extra_meta = meta
        page._parse_body(body, name)
        return page

    def _parse_body(self, body: str, name: str) -> None:
        preamble: list[str] = []
        chunks: list[tuple[str, str, list[str]]] = []  # (heading line, its title, the lines below)
        in_fence = False
        for line in body.split("\n"):
            if _FENCE.match(line):
                in_fence = not in_fence
            heading = None if in_fence else _H2.match(line)
            if heading:
                chunks.append((line, heading.group(1), []))
            else:
                (chunks[-1][2] if chunks else preamble).append(line)
        if in_fence:
            raise PageError(
                f"{name}: a fenced code block (``` or ~~~) opens and never closes, so where the page's sections "
                "end is unknowable. Close the block. The file was left alone."
            )
        self.preamble = _trim("\n".join(preamble))
        found = False
        for line, title, lines in chunks:
            if not found and title.strip().lower() == KEY_FACTS.lower():
                found = True
                self.key_facts_at = len(self.sections)
                self._parse_key_facts(lines)
            else:
                self.sections.append(Section(line, _trim("\n".join(lines))))
        if not found:
            self.key_facts_at = len(self.sections)
            self.has_key_facts = False

    def _parse_key_facts(self, lines: list[str]) -> None:
        intro: list[str] = []
        in_fence = False
        for line in lines:
            if _FENCE.match(line):
                in_fence = not in_fence
            bullet = None if in_fence else _BULLET.match(line)
            if bullet:
                self.claims.append(Claim.parse_bullet(bullet.group(1)))
                continue
            if not self.claims:
                intro.append(line)
                continue
            if not line.strip() and not in_fence:
                continue
            prev = None if in_fence else _PREVIOUSLY.match(line)
            if prev:
                self.claims[-1].previously.append(
                    Previous(one_line(prev.group("text")), as_date(prev.group("until")))
                )
            else:
                self.claims[-1].extra.append(line)
        self.intro = _trim("\n".join(intro))

    # -- writing -------------------------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        """The frontmatter, known keys first (only those with a value), then the others as read."""
        out: dict[str, Any] = {}
        if self.title:
            out["title"] = self.title
        if self.category:
            out["category"] = self.category
        if self.status:
            out["status"] = self.status
        if self.updated is not None:
            out["updated"] = self.updated
        if self.stale_after:
            parsed = as_date(self.stale_after)
            out["stale_after"] = (
                parsed if parsed and parsed.isoformat() == self.stale_after else self.stale_after
            )
        if self.sources:
            out["sources"] = list(self.sources)
        if self.generated is not None:
            out["generated"] = dict(self.generated)
        out.update(self.extra_meta)
        return out

    def render(self) -> str:
        parts: list[str] = []
        meta = self.meta()
        if meta or self.has_frontmatter:
            dumped = yaml.safe_dump(
                meta, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000
            )
            parts.append("---\n" + (dumped if meta else "") + "---")
        if self.preamble:
            parts.append(self.preamble)
        sections = [f"{s.heading}\n\n{s.text}" if s.text else s.heading for s in self.sections]
        if self.has_key_facts or self.claims or self.intro:
            key_facts = [KEY_FACTS_HEADING]
            if self.intro:
                key_facts.append(self.intro)
            if self.claims:
                key_facts.append("\n".join(line for c in self.claims for line in c.render()))
            sections.insert(self.key_facts_at, "\n\n".join(key_facts))
        parts += sections
        return "\n\n".join(parts) + "\n"

    # -- reading claims ------------------------------------------------------------------------

    def bullet_count(self) -> int:
        """Claims on the page: Key Facts bullets plus the top-level bullets of other sections."""
        others = "\n".join([self.preamble, *(s.text for s in self.sections)])
        return len(self.claims) + len(top_level_bullets(others))

    def all_bullets(self) -> list[str]:
        """Every top-level bullet's text on the page (Key Facts claims first), markers removed."""
        others = "\n".join([self.preamble, *(s.text for s in self.sections)])
        return [c.text for c in self.claims] + [Claim.parse_bullet(b).text for b in top_level_bullets(others)]


def top_level_bullets(text: str) -> list[str]:
    """The text of each top-level bullet in ``text`` (outside fenced code)."""
    found: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        m = None if in_fence else _BULLET.match(line)
        if m and m.group(1).strip():
            found.append(m.group(1))
    return found


def split_frontmatter(text: str, name: str = "page") -> tuple[dict[str, Any], str, bool]:
    """(metadata, body, whether a frontmatter block exists). Raises ``PageError`` when broken."""
    opening = _FM_OPEN.match(text)
    if not opening:
        return {}, text.lstrip("\ufeff"), False
    close = _FM_CLOSE.search(text, opening.end())
    if close is None:
        raise PageError(
            f"{name} line 1: a frontmatter block opens with '---' and is never closed. Add a line '---' "
            "after the last frontmatter field. The file was left alone."
        )
    try:
        data = load_yaml(text[opening.end() : close.start()])
    except yaml.YAMLError as exc:
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = (mark.line + 2) if mark is not None else 1  # +1: 1-based, +1: the opening '---'
        raise PageError(
            f"{name} line {line}: invalid YAML frontmatter ({getattr(exc, 'problem', None) or exc}). Fix the "
            "YAML between the '---' lines. The file was left alone."
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PageError(
            f"{name} line 2: the frontmatter is not a mapping of fields (it is a {type(data).__name__}). "
            "Write it as 'key: value' lines. The file was left alone."
        )
    body = text[close.end() :]
    if body.startswith("\r\n"):
        body = body[2:]
    elif body.startswith("\n"):
        body = body[1:]
    return {str(k): v for k, v in data.items()}, body, True


def load_page(path: Path, name: str | None = None) -> Page | None:
    """The page at ``path``; None when there is no file. Raises ``PageError`` for a broken one."""
    if not path.is_file():
        return None
    return Page.parse(read_text(path).text, name or str(path))


def save_page(path: Path, page: Page) -> None:
    """Write ``page`` atomically under the file's writers' lock."""
    with file_lock(path):
        write_atomic(path, page.render())


def _trim(text: str) -> str:
    """Drop leading and trailing blank lines, keeping each line's own text as written."""
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)
