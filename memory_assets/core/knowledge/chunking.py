"""Vault pages and core files as index chunks: frontmatter parsed, never embedded as text.

Paragraph chunking follows the existing indexer (split on blank lines, greedy merge up to 1,200
characters, an over-long paragraph is its own chunk). MEMORY.md is chunked per zone: the
generated zone (between ``<!-- memory:generated -->`` and ``<!-- /memory:generated -->``) and
the manual zone (everything else) never share a row, because the human-verification floor
applies to the manual zone only.
"""

import re
from dataclasses import dataclass, field
from datetime import date

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

from memory_assets.core.knowledge.frontmatter_yaml import load_yaml
from memory_assets.core.knowledge.importance import Lifecycle, normalise_status, parse_stale_after
from memory_assets.core.text import as_date

MAX_CHUNK_CHARS = 1200
GENERATED_OPEN = "<!-- memory:generated -->"
GENERATED_CLOSE = "<!-- /memory:generated -->"
HUMAN_STAMP_RE = re.compile(r"<!--\s*verified:\s*human:(?P<who>[^\s]+)\s+at\s+(?P<at>[^\s]+)\s*-->")
OLD_GENERATOR_HEADER = re.compile(r"^\s*# Long-term Memory\s*$", re.MULTILINE)
OLD_GENERATOR_FOOTER = re.compile(r"^\*Last updated: .* UTC\*\s*$", re.MULTILINE)
FRONTMATTER_START = re.compile(r"\A\ufeff?---\s*\n")


def chunk_paragraphs(text: str, max_chars: int = MAX_CHUNK_CHARS) -> list[str]:
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    chunks: list[str] = []
    current: list[str] = []
    length = 0
    for para in paragraphs:
        if current and length + len(para) > max_chars:
            chunks.append("\n\n".join(current))
            current, length = [], 0
        current.append(para)
        length += len(para) + 2
    if current:
        chunks.append("\n\n".join(current))
    return chunks


BULLET_RE = re.compile(r"^[-*+] \S")


def chunk_claims(text: str, max_chars: int = MAX_CHUNK_CHARS) -> list[str]:
    """Chunks of a ``3_Personal/`` page, where each bullet is one claim: every top-level bullet
    (with its indented lines, such as a ``previously:`` sub-bullet) is its own chunk, so a claim
    is found, ranked (its own confirmation count) and retired on its own. Text that is not a
    bullet (a heading, a note) is chunked by paragraphs as on any page."""
    chunks: list[str] = []
    prose: list[str] = []
    claim: list[str] = []

    def flush_claim() -> None:
        if claim:
            chunks.append("\n".join(claim).strip())
            claim.clear()

    def flush_prose() -> None:
        if prose:
            chunks.extend(chunk_paragraphs("\n".join(prose), max_chars))
            prose.clear()

    for line in text.splitlines():
        if BULLET_RE.match(line):
            flush_prose()
            flush_claim()
            claim.append(line)
        elif claim and (line.startswith((" ", "\t")) and line.strip()):
            claim.append(line)
        else:
            flush_claim()
            if line.lstrip().startswith("#"):
                continue  # a heading alone says nothing a claim does not
            prose.append(line)
    flush_claim()
    flush_prose()
    return [c for c in chunks if c]


HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)[\s#]*$")


def chunk_sections(text: str, chunks: list[str]) -> list[str | None]:
    """The heading each chunk of ``text`` falls under (the chunk's own first line when that is a
    heading; None before the first heading). ``chunks`` are in order, as the chunkers return them:
    what a search's context calls "the same page section"."""
    lines = text.splitlines()
    under: list[str | None] = []
    heading: str | None = None
    for line in lines:
        m = HEADING_RE.match(line)
        if m:
            heading = m.group(1) or None
        under.append(heading)
    out: list[str | None] = []
    pos = 0
    for chunk in chunks:
        first = chunk.strip().splitlines()[0].strip() if chunk.strip() else ""
        j = pos
        while j < len(lines) and lines[j].strip() != first:
            j += 1
        if j == len(lines):  # not found where expected: the section so far
            out.append(under[pos - 1] if pos else None)
            continue
        out.append(under[j])
        pos = j + 1
    return out


@dataclass
class Page:
    """A vault page: its frontmatter, body and lifecycle."""

    meta: dict[str, object]
    body: str
    lifecycle: Lifecycle
    updated: date | None
    category: str | None
    warnings: list[str] = field(default_factory=list)


def _human_verified(meta: dict[str, object]) -> bool:
    verified = meta.get("verified")
    entries = verified if isinstance(verified, list) else [verified] if verified else []
    for entry in entries:
        by = entry.get("by") if isinstance(entry, dict) else entry
        if isinstance(by, str) and by.strip().startswith("human:"):
            return True
    return False


FRONTMATTER_CLOSE = re.compile(r"^(---|\.\.\.)\s*$", re.MULTILINE)


class _BoundedYAMLHandler(YAMLHandler):
    """python-frontmatter's YAML handler, reading with ``frontmatter_yaml.load_yaml`` (no aliases)."""

    def load(self, fm: str, **kwargs: object) -> object:
        return load_yaml(fm)


def _load_frontmatter(text: str) -> frontmatter.Post:
    handler = frontmatter.detect_format(text, frontmatter.handlers)
    if isinstance(handler, YAMLHandler):
        handler = _BoundedYAMLHandler()
    return frontmatter.loads(text, handler=handler)


def parse_page(text: str, name: str) -> Page:
    """Split frontmatter from body. Bad YAML is reported (file, line, fix) and the page is kept.

    A page that opens a frontmatter block (``---`` on its first line) and never closes it is
    reported and yields no body: where the metadata ends is unknowable, and indexing it as page
    text would put YAML keys into retrieval."""
    warnings: list[str] = []
    opening = FRONTMATTER_START.match(text)
    if opening and not FRONTMATTER_CLOSE.search(text, opening.end()):
        warnings.append(
            f"{name} line 1: a frontmatter block opens with '---' here and is never closed; the page "
            "is not indexed until it is. Add a line '---' after the last frontmatter field. The file "
            "was not modified."
        )
        return Page(meta={}, body="", lifecycle=Lifecycle(), updated=None, category=None, warnings=warnings)
    try:
        post = _load_frontmatter(text)
        meta: dict[str, object] = dict(post.metadata)
        body = post.content
    except yaml.YAMLError as exc:
        # Where the offending construct starts when YAML knows it, else where it noticed.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        # The YAML text starts right after the opening "---" (its line 0 is the rest of file line 1).
        line = (mark.line + 1) if mark is not None else 1
        warnings.append(
            f"{name} line {line}: invalid YAML frontmatter ({getattr(exc, 'problem', exc)}); indexed "
            "without its frontmatter fields. Fix the YAML between the '---' lines. The file was not modified."
        )
        meta = {}
        body = _strip_broken_frontmatter(text)
    except Exception as exc:  # frontmatter can raise on odd delimiters; never lose the page
        warnings.append(f"{name} line 1: unreadable frontmatter ({exc}); indexed as plain text.")
        meta, body = {}, text
    lifecycle = Lifecycle(
        status=normalise_status(meta.get("status")),
        stale_after=parse_stale_after(meta.get("stale_after")),
        human_verified=_human_verified(meta),
    )
    category = meta.get("category")
    return Page(
        meta=meta,
        body=body,
        lifecycle=lifecycle,
        updated=as_date(meta.get("updated")),
        category=str(category) if category else None,
        warnings=warnings,
    )


def _strip_broken_frontmatter(text: str) -> str:
    m = FRONTMATTER_START.match(text)
    if not m:
        return text
    end = text.find("\n---", m.end())
    return text[end + 4 :] if end >= 0 else text


@dataclass(frozen=True)
class Zone:
    name: str  # "generated" | "manual"
    text: str
    human_verified: bool


def split_memory_md(text: str) -> list[Zone]:
    """MEMORY.md's zones. No marker: all generated if it carries the old generator's signature
    (``# Long-term Memory`` header and ``*Last updated: ... UTC*`` footer), else all manual."""
    if GENERATED_CLOSE in text:
        before_close, after = text.split(GENERATED_CLOSE, 1)
        if GENERATED_OPEN in before_close:
            manual_head, generated = before_close.split(GENERATED_OPEN, 1)
        else:
            manual_head, generated = "", before_close
        manual = manual_head + "\n\n" + after
        zones = [Zone("generated", generated, False)]
    elif OLD_GENERATOR_HEADER.search(text) and OLD_GENERATOR_FOOTER.search(text):
        return [Zone("generated", text, False)]
    else:
        manual = text
        zones = []
    human = bool(HUMAN_STAMP_RE.search(manual))
    zones.append(Zone("manual", HUMAN_STAMP_RE.sub("", manual), human))
    return zones
