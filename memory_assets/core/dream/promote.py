"""MEMORY.md promotion, the dream-era writer (``promote_memory_md``): the deterministic built-in.

After a productive dream the runner calls ``promote_memory_md``, which rebuilds MEMORY.md's
generated zone from the consolidated ``3_Personal/`` pages. It is the replacement for the
per-turn ``refresh_from_index``, which stands down as soon as the vault has a personal page.

* **Claims.** Every top-level bullet of every ``3_Personal/**/*.md`` page is a claim (``page_claims``),
  except bullets in a fenced code block, bullets under a ``Related``/``Sources``/``See also``/
  ``Links``/``Backlinks`` heading, bullets that start with a link (navigation, not a claim) and
  deprecated claims: a bullet struck through whole (``~~...~~``), or one carrying
  ``(deprecated ...)`` or a leading ``[deprecated]``. Pages whose frontmatter says
  ``status: deprecated`` are left out whole; so are claims a tombstone names.
* **Rank.** Confirmation count first (``(confirmed Nx, ...)``; no marker counts once), then how
  recently the recall log (``.state/recall_log.jsonl`` and its rotated ``.1``) mentions the claim,
  then the page's ``updated`` (else its file date), then page and line, so the order is
  deterministic. A recall mentions a claim when one line of its snippet (bullet, ``[category]``
  prefix and markers removed, folded) has an edit-distance ratio of at least 0.90 to the claim,
  contains the claim, or is a prefix of it at least 24 characters long (snippets are cut at 160
  characters). Only the most recent ``RECALL_WINDOW`` distinct snippet lines are read.
* **Render.** ``memory_md.render_facts``, the per-turn writer's renderer: one ``##`` section per
  page category (frontmatter ``category``, else a category the file name spells, e.g.
  ``Preferences.md``; else the page's title or file name), one bullet per claim best first, at
  most ``DEFAULT_MAX_LINES`` lines. Confirmation markers are dropped from the bullets (they would
  otherwise raise the generated zone's own importance when it is indexed); a claim on two pages
  is listed once.
* **Write.** Only through ``memory_md.write_generated_zone``: the manual zone is copied byte for
  byte and a hand-written file (no markers, not the old generator's signature) is refused, never
  overwritten. With no ``3_Personal/`` page at all nothing is written and the result says why.

What it cannot do: it does not reword, merge or summarise claims (a chat model could); it
matches recalls lexically, so a recall of a reworded claim does not count.
"""

import json
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memory_assets.core.knowledge.categories import category_named
from memory_assets.core.knowledge.chunking import parse_page
from memory_assets.core.knowledge.importance import CONFIRMED_RE, chunk_importance, confirmation_count
from memory_assets.core.knowledge.memory_md import (
    DEFAULT_MAX_LINES,
    MAX_FACT_CHARS,
    Fact,
    MemoryMdResult,
    render_facts,
    write_generated_zone,
)
from memory_assets.core.knowledge.personal_pages import PERSONAL_DIR, list_personal_pages
from memory_assets.core.knowledge.recall_log import rotated
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.text import fold, normalise
from memory_assets.core.textfile import read_text

if TYPE_CHECKING:
    from memory_assets.core.settings import Settings

PROMOTE_GENERATOR = "promote_memory_md"
RECALL_WINDOW = 2000  # most recent distinct snippet lines matched against the claims
RECALL_MATCH_AT = 90.0  # rapidfuzz fuzz.ratio (0-100) for a snippet line to mention a claim
MIN_CONTAINED_CHARS = 12  # a claim this long (folded) counts as mentioned when a line contains it
MIN_PREFIX_CHARS = 24  # a cut-off snippet line this long counts when the claim starts with it
MIN_RECALL_LINE_CHARS = 8

SKIP_SECTIONS = frozenset({"related", "sources", "see also", "links", "backlinks"})
_BULLET = re.compile(r"^ ?[-*+]\s+(?P<text>\S.*?)\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?P<title>.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_LINK_FIRST = re.compile(r"^(?:\[\[|\[(?:[^\[\]]|\[[^\[\]]*\])*\]\()")
_STRUCK = re.compile(r"^~~.+~~[.;]?$")
_DEPRECATED = re.compile(r"\(\s*deprecated\b[^)]*\)|^\[deprecated\]", re.IGNORECASE)
_SINCE = re.compile(r"\(\s*since\s+\d{4}-\d{2}-\d{2}\s*\)", re.IGNORECASE)
_PREVIOUSLY = re.compile(r"(?:[;,.]\s*|\s+)previously\b.*$", re.IGNORECASE)
_CURRENTLY = re.compile(r"^\s*currently\b[\s,:]*", re.IGNORECASE)
_SNIPPET_PREFIX = re.compile(r"^(?:[-*+]\s+)?(?:\[[^\]]*\]\s*)?")


@dataclass(frozen=True)
class Claim:
    """One claim bullet of a page. ``line`` is its 0-based index in ``text.split("\\n")``."""

    page: str
    line: int
    text: str  # the bullet's text as written, marker included
    deprecated: bool

    @property
    def confirmations(self) -> int:
        return confirmation_count(self.text)

    @property
    def content(self) -> str:
        """The claim without its confirmation marker, whitespace collapsed."""
        return " ".join(CONFIRMED_RE.sub(" ", self.text).split())

    @property
    def key(self) -> str:
        """The claim's current value in comparison form: ``Currently X (since D); previously Y``
        reads as ``X``; folded (lower case, punctuation folded, whitespace collapsed)."""
        current = _PREVIOUSLY.sub("", _SINCE.sub(" ", self.content))
        return fold(_CURRENTLY.sub("", current))


def body_start(lines: list[str]) -> int | None:
    """Index of the first body line: after a frontmatter block opened by ``---`` on line 1 and
    closed by ``---`` or ``...``; 0 without frontmatter; None when the block is never closed (the
    reader's rule: where the metadata ends is unknowable, so there is no body)."""
    if not lines or lines[0].lstrip("\ufeff").rstrip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return i + 1
    return None


def page_claims(page: str, text: str) -> list[Claim]:
    """The claim bullets of a page's text, in order (deprecated ones flagged, not dropped)."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    start = body_start(lines)
    if start is None:
        return []
    claims: list[Claim] = []
    fenced = False
    skipping = False
    for i in range(start, len(lines)):
        line = lines[i]
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = _HEADING.match(line)
        if heading:
            skipping = heading.group("title").strip().lower().rstrip(":") in SKIP_SECTIONS
            continue
        bullet = _BULLET.match(line)
        if skipping or not bullet:
            continue
        body = bullet.group("text")
        if _LINK_FIRST.match(body):
            continue
        deprecated = bool(_STRUCK.match(body) or _DEPRECATED.search(body))
        claims.append(Claim(page, i, body, deprecated))
    return claims


def _section(meta: dict[str, object], page: str) -> str:
    """The section a page's claims go under: its category, else its title or file name."""
    category = str(meta.get("category") or "").strip().lower()
    if category:
        return "personal" if category == "identity" else category
    stem = Path(page).stem
    named = category_named(stem)  # a page file named for a category: "Preferences", "Profile", ...
    if named:
        return named
    title = meta.get("title")
    return str(title).strip() if isinstance(title, str) and title.strip() else stem


def _ts(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        ts = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def _snippet_lines(snippet: str) -> list[str]:
    out = []
    for raw in snippet.split("\n"):
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith(">"):
            continue
        line = fold(CONFIRMED_RE.sub(" ", _SNIPPET_PREFIX.sub("", line, count=1)))
        if len(line) >= MIN_RECALL_LINE_CHARS:
            out.append(line)
    return out


def read_recalls(recall_log: Path, window: int = RECALL_WINDOW) -> list[tuple[str, datetime]]:
    """The recall log's distinct snippet lines (folded) with the latest time each was recalled,
    most recent first, at most ``window``. Reads the rotated ``.1`` file too; a line that is not
    a JSON object with a string ``snippet`` and an ISO ``ts`` is skipped."""
    latest: dict[str, datetime] = {}
    for source in (rotated(recall_log), recall_log):
        if not source.is_file():
            continue
        for raw in read_text(source).text.splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(obj, dict) or not isinstance(obj.get("snippet"), str):
                continue
            ts = _ts(obj.get("ts"))
            if ts is None:
                continue
            for line in _snippet_lines(obj["snippet"]):
                if line not in latest or ts > latest[line]:
                    latest[line] = ts
    ordered = sorted(latest.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    return ordered[:window]


def last_recalled(keys: list[str], recalls: list[tuple[str, datetime]]) -> list[datetime | None]:
    """For each folded claim, when the recall log last mentioned it (None: never in the window)."""
    if not keys or not recalls:
        return [None] * len(keys)
    import numpy as np
    from rapidfuzz import fuzz
    from rapidfuzz.process import cdist

    lines = [line for line, _ in recalls]
    scores = cdist(keys, lines, scorer=fuzz.ratio, score_cutoff=RECALL_MATCH_AT, workers=1)
    out: list[datetime | None] = []
    for i, key in enumerate(keys):
        hits = np.flatnonzero(scores[i])
        first = int(hits[0]) if len(hits) and key else len(lines)
        for j in range(first):  # recalls are newest first: only an earlier line can be later
            line = lines[j]
            if (len(key) >= MIN_CONTAINED_CHARS and key in line) or (
                len(line) >= MIN_PREFIX_CHARS and key.startswith(line)
            ):
                first = j
                break
        out.append(recalls[first][1] if first < len(lines) else None)
    return out


@dataclass(frozen=True)
class _Candidate:
    claim: Claim
    section: str
    updated: date | None
    fact: Fact


def promote_memory_md(
    settings: "Settings",
    *,
    max_lines: int = DEFAULT_MAX_LINES,
    path: Path | None = None,
    today: date | None = None,
) -> MemoryMdResult:
    """Rebuild MEMORY.md's generated zone from the ``3_Personal/`` pages' claims (module doc).

    Writes nothing when the vault has no personal page (``outcome="no_pages"``); a hand-written
    MEMORY.md is refused by ``write_generated_zone`` (``outcome="refused"``)."""
    target = Path(path) if path is not None else settings.memory_md_path
    today = today or datetime.now(UTC).date()
    pages = list_personal_pages(settings)
    if not pages:
        return MemoryMdResult(
            False,
            f"no pages under {PERSONAL_DIR}/ in the vault yet: nothing to promote, {target.name} was "
            "not written (the per-turn refresh keeps its generated zone until the dream writes one)",
            target,
            "no_pages",
            PROMOTE_GENERATOR,
        )
    tombs = read_tombstones(settings.tombstones_path)
    candidates: list[_Candidate] = []
    deprecated_pages = 0
    for rel in pages:
        file = settings.notebook_dir / rel
        try:
            text = read_text(file, f"notebook/{rel}").text
        except OSError:
            continue  # removed since it was listed
        page = parse_page(text, f"notebook/{rel}")
        if page.lifecycle.status == "deprecated":
            deprecated_pages += 1
            continue
        updated = page.updated or datetime.fromtimestamp(file.stat().st_mtime, UTC).date()
        section = _section(page.meta, rel)
        for claim in page_claims(rel, text):
            content = claim.content
            if claim.deprecated or not content or tombs.hides(content):
                continue
            if len(content) > MAX_FACT_CHARS:
                content = content[: MAX_FACT_CHARS - 1].rstrip() + "…"
            importance = chunk_importance(claim.text, page.lifecycle, today)
            candidates.append(
                _Candidate(claim, section, updated, Fact(content, section, importance, updated))
            )

    recalled = last_recalled(
        [fold(c.fact.content) for c in candidates], read_recalls(settings.recall_log_path)
    )

    def rank(item: tuple[_Candidate, datetime | None]) -> tuple[float, float, int, str, int]:
        cand, ts = item
        return (
            -cand.claim.confirmations,
            -ts.timestamp() if ts else float("inf"),
            -(cand.updated.toordinal() if cand.updated else 0),
            cand.claim.page,
            cand.claim.line,
        )

    ranked: list[Fact] = []
    seen: set[str] = set()
    for cand, _ in sorted(zip(candidates, recalled, strict=True), key=rank):
        norm = normalise(cand.fact.content)
        if norm not in seen:
            seen.add(norm)
            ranked.append(cand.fact)
    body, count = render_facts(ranked, max_lines)
    written = write_generated_zone(target, body, generator=PROMOTE_GENERATOR)
    skipped = f"; {deprecated_pages} deprecated page(s) left out" if deprecated_pages else ""
    return MemoryMdResult(
        written.written,
        f"{written.reason} ({count} of {len(ranked)} claim(s) from {len(pages)} {PERSONAL_DIR}/ "
        f"page(s) listed{skipped})",
        target,
        written.outcome,
        PROMOTE_GENERATOR,
        written.stripped,
        count,
    )
