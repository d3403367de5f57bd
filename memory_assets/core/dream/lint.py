"""The dream's lint pass (``lint_vault``): a deterministic editorial audit of the vault.

It reads every indexed vault page (``vault.list_pages``) and ``index.md`` and reports five kinds of
finding, each naming the page and what to do:

* ``broken_link``: a markdown link to a ``.md`` target (``[x](/2_Wiki/X.md)``: vault-absolute,
  also under ``/mnt/notebook/``, or relative to the page) or a wikilink (``[[Name]]``,
  ``[[Name|alias]]``, ``[[folder/Name#heading]]``; a bare name matches any file of that name,
  with or without ``.md``) whose target does not exist in the vault. Links in code are ignored.
* ``orphan``: a page no other page links to and ``index.md`` neither links to nor names by its
  vault path. ``0_Inbox/`` (a queue) and ``4_Assets/`` (never modified) are exempt.
* ``contradiction``: two claim bullets on one page (the bullets ``promote.page_claims`` reads;
  deprecated ones left out) that say almost the same thing with a different value. The rule,
  on each claim's current value (confirmation marker, ``(since D)``, ``; previously ...`` and a
  leading ``Currently`` removed; folded): the two differ, each has 1 to ``MAX_DIFF_WORDS`` words
  the other lacks (counted as multisets, so neither merely extends the other), and either the
  shared lexical similarity (``claims.similarity``, an edit-distance ratio) is at least
  ``CONFLICT_AT`` or exactly one word is swapped in a sentence of at least ``MIN_FRAME_WORDS``
  shared words (short claims whose values are spelled very differently, "Lives in Porto" /
  "Lives in Berlin", score low on the ratio). "Lives in Lisbon" / "Lives in Berlin" and "Has 2
  cats" / "Has 3 cats" conflict; "Prefers metric units" / "Prefers metric units in answers" (a
  sharpening), "Likes tea" / "Likes coffee" and "Has a dog named Rex" / "Has a cat named Tom"
  (too different) do not, nor do two claims about different numbered things ("Finished book
  number 2" / "Finished book number 3": ``claims.identifiers``, as the dream keeps them apart). It is lexical: a negation ("does not drink coffee") or a reworded
  contradiction escapes it, and true claims of one shape about a many-valued attribute ("Is
  allergic to peanuts" / "Is allergic to shellfish") are flagged; a flag only asks for a review.
  Conflicting pairs on a page are grouped (transitively) into one finding.
* ``stale``: a page whose ``stale_after`` has passed (deprecated pages excepted). Stale
  ``3_Personal/`` pages are the dream's revisit queue (``LintResult.revisit``, soonest first),
  re-confirmed against the logs on the next ingest; nothing is ever deleted.
* ``broken_frontmatter``: a frontmatter block that is never closed, is not valid YAML, is not a
  mapping of fields, or closes with ``...`` (which the reader does not take as frontmatter).
  Such a page is reported and never rewritten, whatever else is found on it.

The only fixes are the safe ones, for contradictions: a ``> [!warning] Conflicting claims``
callout line above the first bullet of each conflicting group (not when such a line is already
there, so a second lint changes nothing) and ``review: needs-review`` in the page's frontmatter
(a block is added when the page has none). Each is a read-modify-write under the page's writers'
lock through ``durable.write_atomic``; no page and no bullet is ever deleted, and pages in
``4_Assets/``, pages that are not valid UTF-8 and pages with broken frontmatter are never edited.
Nothing else is written: the runner appends the ``## [date] lint`` entry to ``log.md``
(``watermark.append_lint_entry``) after a clean lint.
"""

import posixpath
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import yaml

from memory_assets.core.dream.promote import Claim, body_start, page_claims
from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.knowledge.chunking import parse_page
from memory_assets.core.knowledge.claims import identifiers, similarity
from memory_assets.core.knowledge.frontmatter_yaml import load_yaml
from memory_assets.core.knowledge.personal_pages import is_personal
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.outcome import fields_of

if TYPE_CHECKING:
    from memory_assets.core.settings import Settings

BROKEN_LINK, ORPHAN, CONTRADICTION, STALE, BROKEN_FRONTMATTER = (
    "broken_link",
    "orphan",
    "contradiction",
    "stale",
    "broken_frontmatter",
)
KINDS = (BROKEN_LINK, ORPHAN, CONTRADICTION, STALE, BROKEN_FRONTMATTER)
CONFLICT_AT = 0.75  # claims.similarity of two claims' current values
MAX_DIFF_WORDS = 3  # words each side of a conflicting pair may have that the other lacks
MIN_FRAME_WORDS = 2  # shared words that make a one-word swap a conflict whatever the similarity
CALLOUT = "> [!warning] Conflicting claims"
REVIEW_LINE = "review: needs-review"
ORPHAN_EXEMPT = ("0_Inbox/", "4_Assets/")
NEVER_EDITED = ("4_Assets/",)
QUOTE_CHARS = 80
VIRTUAL_ROOT = "/mnt/notebook/"

_CALLOUT_RE = re.compile(r"^\s*>\s*\[!warning\][+-]?\s*conflicting claims\b", re.IGNORECASE)
_REVIEW_RE = re.compile(r"^review\s*:\s*(?P<value>.*?)\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_MD_LINK = re.compile(
    r"(?<!!)\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(?P<target><[^>\n]*>|[^)\s]+)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
_WIKI_LINK = re.compile(r"\[\[(?P<target>[^\[\]\n|#]*(?:\[[^\[\]\n]*\][^\[\]\n|#]*)*)(?:[#|][^\[\]\n]*)?\]\]")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Finding:
    """One finding: its kind, the page (vault-relative), what is wrong, and what to do."""

    kind: str
    page: str
    detail: str
    action: str
    line: int | None = None  # 1-based, where it applies

    def to_dict(self) -> dict[str, Any]:
        return fields_of(self, "kind", "page", "line", "detail", "action")


@dataclass
class LintResult:
    today: date
    pages_checked: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    pages_changed: list[str] = field(default_factory=list)  # vault-relative, rewritten by a fix
    findings: list[Finding] = field(default_factory=list)
    revisit: list[str] = field(default_factory=list)  # stale 3_Personal/ pages, soonest first
    warnings: list[str] = field(default_factory=list)  # pages that could not be read or edited
    summary: str = ""

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)
        self.counts[finding.kind] = self.counts.get(finding.kind, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "today": self.today.isoformat(),
            "pages_checked": self.pages_checked,
            "counts": dict(self.counts),
            "pages_changed": list(self.pages_changed),
            "findings": [f.to_dict() for f in self.findings],
            "revisit": list(self.revisit),
            "warnings": list(self.warnings),
            "summary": self.summary,
        }


@dataclass
class _Page:
    rel: str
    text: str
    utf8: bool
    meta: dict[str, object]
    status: str
    stale_after: date | None
    frontmatter_problem: str | None


# -- reading ------------------------------------------------------------------------------------
def _read(vault: Path, rel: str, result: LintResult) -> _Page | None:
    try:
        data = (vault / rel).read_bytes()
    except OSError as exc:
        result.warnings.append(f"{rel}: could not be read ({exc}); not checked")
        return None
    try:
        text, utf8 = data.decode("utf-8"), True
    except UnicodeDecodeError as exc:
        text, utf8 = data.decode("utf-8", errors="replace"), False
        result.warnings.append(
            f"{rel}: not valid UTF-8 (offset {exc.start}); checked as read, never edited. Re-save it as UTF-8."
        )
    page = parse_page(text, rel)
    problem = page.warnings[0] if page.warnings else _frontmatter_problem(text, rel)
    return _Page(rel, text, utf8, page.meta, page.lifecycle.status, page.lifecycle.stale_after, problem)


def _frontmatter_problem(text: str, rel: str) -> str | None:
    """What the reader tolerates silently but a person should fix: a block that is not a mapping,
    or one closed by ``...`` (the reader then reads it as page text)."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    start = body_start(lines)
    if not start:
        return None
    if lines[start - 1].rstrip() == "...":
        return (
            f"{rel} line {start}: the frontmatter block closes with '...', which the reader does not "
            "take as frontmatter (its fields are ignored and indexed as text). Close it with '---'."
        )
    try:
        value = load_yaml("\n".join(lines[1 : start - 1]))
    except yaml.YAMLError:
        return None  # parse_page reports invalid YAML itself
    if value is not None and not isinstance(value, dict):
        return (
            f"{rel} line 2: the frontmatter is a YAML {type(value).__name__}, not a mapping of fields, "
            "so none of it is read. Write it as 'key: value' lines."
        )
    return None


# -- links ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Link:
    line: int  # 1-based
    raw: str
    targets: tuple[str, ...]  # vault-relative files it resolves to (empty: broken)
    note: str = ""


def _code_free_lines(text: str) -> list[tuple[int, str]]:
    out = []
    fenced = False
    for number, line in enumerate(text.split("\n"), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, _INLINE_CODE.sub("", line)))
    return out


class _Files:
    """The vault's files (hidden folders left out), for resolving links."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.paths: set[str] = set()
        self.by_name: dict[str, list[str]] = {}
        if vault.is_dir():
            for path in vault.rglob("*"):
                rel = path.relative_to(vault)
                if any(part.startswith(".") for part in rel.parts[:-1]) or not path.is_file():
                    continue
                key = rel.as_posix()
                self.paths.add(key)
                self.by_name.setdefault(rel.name.lower(), []).append(key)

    def markdown(self, target: str, page_dir: str) -> tuple[str, ...] | None:
        """A markdown link's target file, () when it is missing, None when it is not a page link."""
        t = target.strip()
        if t.startswith("<") and t.endswith(">"):
            t = t[1:-1].strip()
        if not t or t.startswith("#") or t.startswith("//") or _SCHEME.match(t):
            return None
        t = unquote(t.split("#", 1)[0].split("?", 1)[0])
        if not t.lower().endswith(".md"):
            return None
        if t.startswith(VIRTUAL_ROOT):
            t = t[len(VIRTUAL_ROOT) - 1 :]
        rel = posixpath.normpath(t.lstrip("/") if t.startswith("/") else posixpath.join(page_dir, t))
        if rel == ".." or rel.startswith("../"):
            return ()
        return (rel,) if rel in self.paths else ()

    def wiki(self, target: str, page_dir: str) -> tuple[str, ...] | None:
        name = target.strip()
        if not name:
            return None
        names = [name] if name.lower().endswith(".md") else [name, name + ".md"]
        if "/" in name:
            found = []
            for n in names:
                for rel in (
                    posixpath.normpath(n.lstrip("/")),
                    posixpath.normpath(posixpath.join(page_dir, n)),
                ):
                    if rel in self.paths and rel not in found:
                        found.append(rel)
            return tuple(found)
        return tuple(rel for n in names for rel in sorted(self.by_name.get(n.lower(), [])))


def _links(text: str, rel: str, files: _Files) -> list[_Link]:
    page_dir = posixpath.dirname(rel)
    start = body_start([line.rstrip("\r") for line in text.split("\n")]) or 0
    out = []
    for number, line in _code_free_lines(text):
        if number <= start:
            continue
        for m in _MD_LINK.finditer(line):
            targets = files.markdown(m.group("target"), page_dir)
            if targets is not None:
                out.append(_Link(number, m.group(0), targets))
        for m in _WIKI_LINK.finditer(line):
            targets = files.wiki(m.group("target"), page_dir)
            if targets is not None:
                out.append(_Link(number, m.group(0), targets))
    return out


# -- contradictions -------------------------------------------------------------------------------
def conflicting(a: Claim, b: Claim) -> bool:
    """The module's rule: same shape, a different value (see the module doc)."""
    if not a.key or not b.key or a.key == b.key:
        return False
    ids_a, ids_b = identifiers(a.content), identifiers(b.content)
    if ids_a and ids_b and ids_a != ids_b:
        return False  # two numbered things ("ticket #12", "ticket #13"): two claims, as in the dream
    words_a, words_b = Counter(a.key.split()), Counter(b.key.split())
    only_a, only_b = sum((words_a - words_b).values()), sum((words_b - words_a).values())
    if not only_a or not only_b or only_a > MAX_DIFF_WORDS or only_b > MAX_DIFF_WORDS:
        return False
    if only_a == only_b == 1 and sum((words_a & words_b).values()) >= MIN_FRAME_WORDS:
        return True  # one word swapped in an otherwise identical sentence: a different value
    return similarity(a.key, b.key) >= CONFLICT_AT


def conflict_groups(claims: list[Claim]) -> list[list[Claim]]:
    """Claims that conflict, grouped transitively, each group in page order, groups in page order."""
    active = [c for c in claims if not c.deprecated and c.key]
    parent = list(range(len(active)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    linked: set[int] = set()
    for i in range(len(active)):
        for j in range(i + 1, len(active)):
            if conflicting(active[i], active[j]):
                parent[root(j)] = root(i)
                linked.update((i, j))
    groups: dict[int, list[Claim]] = {}
    for i in sorted(linked):
        groups.setdefault(root(i), []).append(active[i])
    return sorted(groups.values(), key=lambda g: g[0].line)


def _quote(claim: Claim) -> str:
    text = claim.content.replace('"', "'")
    return '"' + (text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1].rstrip() + "…") + '"'


def _callout(group: list[Claim]) -> str:
    return (
        f"{CALLOUT}: {' vs '.join(_quote(c) for c in group)}. Keep the claim that holds, correct or "
        "deprecate the other, then remove this line."
    )


def _flag(text: str, rel: str) -> str:
    """``text`` with a callout above each unflagged conflicting group and ``review: needs-review``
    in its frontmatter; ``text`` itself when nothing conflicts or everything is flagged already."""
    groups = conflict_groups(page_claims(rel, text))
    if not groups:
        return text
    lines = text.split("\n")
    start = body_start([line.rstrip("\r") for line in lines])
    if start is None:
        return text
    for group in sorted(groups, key=lambda g: g[0].line, reverse=True):
        first = group[0].line
        if first - 1 >= start and _CALLOUT_RE.match(lines[first - 1]):
            continue
        cr = "\r" if lines[first].endswith("\r") else ""
        lines.insert(first, _callout(group) + cr)
    cr = "\r" if lines and lines[0].endswith("\r") else ""
    if start == 0:
        lines[0:0] = ["---" + cr, REVIEW_LINE + cr, "---" + cr]
    else:
        for i in range(1, start - 1):
            m = _REVIEW_RE.match(lines[i].rstrip("\r"))
            if m:
                if m.group("value").strip("'\"").strip().lower() != "needs-review":
                    lines[i] = REVIEW_LINE + ("\r" if lines[i].endswith("\r") else "")
                break
        else:
            lines.insert(start - 1, REVIEW_LINE + cr)
    return "\n".join(lines)


def _fix(vault: Path, rel: str) -> bool:
    """Flag a page's conflicts, re-reading it under its writers' lock (whatever changed since the
    audit read it wins). Pages that became undecodable or broken are left alone."""
    path = vault / rel
    with file_lock(path):
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        if parse_page(text, rel).warnings or _frontmatter_problem(text, rel):
            return False
        new = _flag(text, rel)
        if new == text:
            return False
        write_atomic(path, new.encode("utf-8"))
    return True


# -- the pass -------------------------------------------------------------------------------------
def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def lint_vault(settings: "Settings", today: date) -> LintResult:
    """Audit the vault (module doc): report every finding, apply only the contradiction flags."""
    vault = settings.notebook_dir
    result = LintResult(today)
    files = _Files(vault)
    pages: list[_Page] = []
    for rel in list_pages(vault):
        page = _read(vault, rel, result)
        if page is not None:
            pages.append(page)
    result.pages_checked = len(pages)

    # Links, and who links to whom.
    inbound: dict[str, set[str]] = {}
    sources = [(p.rel, p.text) for p in pages]
    index_md = vault / "index.md"
    index_text = ""
    if index_md.is_file():
        index_text = index_md.read_bytes().decode("utf-8", errors="replace")
        sources.append(("index.md", index_text))
    for rel, text in sources:
        for link in _links(text, rel, files):
            if not link.targets:
                result.add(
                    Finding(
                        BROKEN_LINK,
                        rel,
                        f"{link.raw} points to a page that does not exist",
                        "create the page, point the link at the right page, or remove the link",
                        link.line,
                    )
                )
            for target in link.targets:
                if target != rel:
                    inbound.setdefault(target, set()).add(rel)

    stale_personal: list[tuple[date, str]] = []  # the revisit queue, before sorting
    for page in pages:
        rel = page.rel
        if page.frontmatter_problem:
            result.add(
                Finding(
                    BROKEN_FRONTMATTER,
                    rel,
                    page.frontmatter_problem,
                    "fix the frontmatter by hand; lint never rewrites this page",
                    1,
                )
            )
        if not rel.startswith(ORPHAN_EXEMPT) and not inbound.get(rel):
            named = rel in index_text or rel.removesuffix(".md") in index_text
            if not named:
                result.add(
                    Finding(
                        ORPHAN,
                        rel,
                        "no page links here and index.md does not list it",
                        "list it in index.md or link it from a related page (archive it only if obsolete)",
                    )
                )
        if page.status != "deprecated" and page.stale_after is not None and page.stale_after < today:
            personal = is_personal(rel)
            if personal:
                stale_personal.append((page.stale_after, rel))
            result.add(
                Finding(
                    STALE,
                    rel,
                    f"stale_after {page.stale_after.isoformat()} has passed",
                    "queued for the dream's revisit queue: re-confirm its claims against the logs, or "
                    "deprecate them; never delete"
                    if personal
                    else "re-confirm it and set a new stale_after, or set status: deprecated; never delete",
                )
            )
        if page.status == "deprecated" or rel.startswith(NEVER_EDITED):
            continue
        groups = conflict_groups(page_claims(rel, page.text))
        editable = page.utf8 and not page.frontmatter_problem
        for group in groups:
            result.add(
                Finding(
                    CONTRADICTION,
                    rel,
                    "conflicting claims: " + " vs ".join(_quote(c) for c in group),
                    "keep the claim that holds and correct or deprecate the other"
                    + ("" if editable else " (not flagged on the page: it is not safe to edit)"),
                    group[0].line + 1,
                )
            )
        if groups and editable and _fix(vault, rel):
            result.pages_changed.append(rel)

    result.revisit = [rel for _, rel in sorted(stale_personal)]
    c = result.counts
    result.summary = (
        f"lint {today.isoformat()}: {_plural(result.pages_checked, 'page')} checked; "
        f"{_plural(c[BROKEN_LINK], 'broken link')}, {_plural(c[ORPHAN], 'orphan')}, "
        f"{_plural(c[CONTRADICTION], 'contradiction')}, {c[STALE]} stale, "
        f"{c[BROKEN_FRONTMATTER]} broken frontmatter; {_plural(len(result.pages_changed), 'page')} "
        "flagged needs-review"
    )
    return result
