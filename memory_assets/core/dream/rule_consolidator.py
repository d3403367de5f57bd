"""The rule-based consolidator: the dream's deterministic default (design §6.3).

It folds a batch of log facts and the write path's confirmations into ``3_Personal/`` pages, one
page per category (``knowledge/personal_pages.py``), one bullet per claim, with four outcomes. Every
fact (in log order) and every confirmation (merged in by its day, after that day's facts) goes to
the page of its category and is compared with each claim there:

* **confirm**: a restatement (same claim, nothing new) bumps the count and the last date;
* **sharpen**: a more specific wording of the same claim (its words plus more, or the same words
  plus a new specific) replaces the bullet's text and keeps the count (+1 for this mention);
* **supersede**: a contradiction (the same slot with another value, or a reversed polarity, or the
  same words with conflicting specifics) replaces the claim, resets the count to 1 and keeps a
  ``previously:`` line (every earlier value, however long the chain: history is never dropped).
  A reversal never counts as a confirmation;
* **add**: anything else becomes a new bullet.

How a fact is compared with a claim is ``knowledge/claims.py`` (``analyse``, ``relate``,
``best_match``): slots, then polarity, then key words and specifics. Among the claims of a page the
strongest evidence wins (a slot over a polarity over words), then the highest lexical similarity;
no relation to any claim is an *add*.

A confirmation line folds into the claim matching its content (or its ``matched`` text) on any
category page. It is a mention like a fact, so the same rules apply (a restatement of a value
since superseded supersedes it back: the latest statement wins), except that it never rewrites a
claim's wording (a sharpen counts as a confirm). When no claim matches and the matched record is
a daily-log line (one not yet consolidated, typically today's), the claim is added to its
category's page with that wording: the log line confirms it when it is consolidated, so no
mention is lost or counted twice. Any other unmatched confirmation is reported, not counted.

Pages, the revisit queue and the index:

* A page is written (atomically, under its lock, all pages locked for the run) only when its
  content changed. A changed page gets ``updated`` (the latest of its old value, the batch's last
  day and the day of each mention folded into it), the category's ``stale_after`` from that date,
  its ``sources`` (the logs folded, the last 30) and ``generated: {by: dream:rules, at: <batch's
  today>}`` (a page only re-dated is not stamped). Nothing depends on the clock, so the same batch
  on two copies gives the same bytes.
* A revisit-queue page (``batch.revisit``) that a mention of this batch confirms is re-confirmed
  (``updated`` moves to the batch's last day, ``stale_after`` follows); one with no ``stale_after``
  gets one (from its ``updated``, else the batch's last day) even when nothing confirms it. A page
  is never deleted. Pages of other shapes (not one of the category pages) are only re-dated; their
  bullets are compared, never edited.
* A page whose frontmatter is broken is reported and left alone byte for byte; the facts meant for
  it are not folded (they stay in the index until the page is fixed).
* ``index.md`` keeps a ``## Personal pages`` section listing the ``3_Personal/`` pages and their
  claim counts (the rest of the file is kept as written).

Replaying a batch confirms its facts again (counts go up, no bullet is added): the consolidator
cannot tell a replay from a repeat, and the runner never replays a productive batch (the watermark
moves and the folded log lines are tombstoned). That is by design: a run that changed nothing
would count as a failed attempt.

The local embedding model is off by default (``semantic=True`` or an ``embedder`` turns it on):
no threshold both merges paraphrases and keeps different claims apart (docs/benchmarks.md, "The
dream's semantic match"; design §5.9). When on, it only turns an *add* into a *confirm* (cosine >=
``semantic_threshold``, same polarity, no new specific, no slot).
"""

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.dream.consolidator import Batch, BatchFact, ConsolidationResult
from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.knowledge.categories import BY_NAME, CATEGORIES, normalise_category, title_of
from memory_assets.core.knowledge.claims import (
    ADD,
    CONFIRM,
    SEMANTIC_TIER,
    SHARPEN,
    SUPERSEDE,
    Form,
    Relation,
    analyse,
    best_match,
)
from memory_assets.core.knowledge.confirmations import Confirmation
from memory_assets.core.knowledge.importance import default_stale_after
from memory_assets.core.knowledge.personal_pages import (
    MAX_SOURCES,
    PERSONAL_DIR,
    Claim,
    Page,
    PageError,
    Previous,
    is_personal,
    one_line,
    page_rel,
)
from memory_assets.core.knowledge.vault import INDEX_MD, list_pages
from memory_assets.core.sources import ARCHIVE
from memory_assets.core.text import normalise
from memory_assets.core.textfile import read_text

if TYPE_CHECKING:
    from memory_assets.core.models.embedder import TextEmbedder
    from memory_assets.core.settings import Settings

GENERATOR = "dream:rules"
SEMANTIC_CONFIRM_AT = 0.9  # cosine (all-MiniLM-L6-v2) when the semantic option is on
INDEX_SECTION = "## Personal pages"


# ---------------------------------------------------------------------------------------------
# The consolidator
# ---------------------------------------------------------------------------------------------


@dataclass
class Mention:
    """One fact or confirmation to fold, in the order they are applied."""

    content: str
    category: str
    day: date
    fact: BatchFact | None = None
    confirmation: Confirmation | None = None
    matched: tuple[str, ...] = ()  # a confirmation's matched record, as claim lines


@dataclass
class PageState:
    rel: str
    path: Path
    page: Page | None  # None: no file yet (or a broken one, see ``broken``)
    category: str | None  # the category whose page this is; None for any other 3_Personal page
    original: str | None = None
    broken: str | None = None  # the reason the page is left alone
    dirty: bool = False
    folded: list[str] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    confirmations: int = 0
    confirmed: bool = False  # a mention confirmed or sharpened one of its claims
    latest: date | None = None  # the latest day of a mention folded into it
    sources: list[str] = field(default_factory=list)
    skipped: int = 0  # mentions meant for a broken page

    def claim_forms(self) -> list[Form]:
        return [analyse(c.text) for c in self.page.claims] if self.page else []


class RuleConsolidator:
    """The deterministic consolidator (see the module docstring)."""

    name = "rules"

    def __init__(
        self,
        *,
        semantic: bool = False,
        semantic_threshold: float = SEMANTIC_CONFIRM_AT,
        embedder: "TextEmbedder | None" = None,
    ) -> None:
        self.semantic = semantic or embedder is not None
        self.semantic_threshold = semantic_threshold
        self._embedder = embedder

    def embedder(self) -> "TextEmbedder":
        if self._embedder is None:
            from memory_assets.core.models.embedder import shared_embedder

            self._embedder = shared_embedder()
        return self._embedder

    def consolidate(self, settings: "Settings", batch: Batch) -> ConsolidationResult:
        vault = settings.notebook_dir
        result = ConsolidationResult()
        last_day = _last_day(batch)
        mentions = list(_mentions(settings, batch, last_day))
        rels = sorted(
            {page_rel(c) for c in BY_NAME}
            | {r for r in batch.revisit if is_personal(r) and r.endswith(".md")}
        )
        with ExitStack() as locks:
            for rel in rels:
                locks.enter_context(file_lock(vault / rel))
            states = {rel: _load(vault, rel) for rel in rels}
            for state in states.values():
                if state.broken:
                    result.warnings.append(state.broken)
            for mention in mentions:
                self._fold(mention, states, result)
            self._revisit(batch, mentions, states, last_day, result)
            for rel in rels:
                state = states[rel]
                if state.broken and state.skipped:
                    result.warnings.append(
                        f"notebook/{rel}: {state.skipped} fact(s) for this page were not folded (its "
                        "frontmatter is broken, or it cannot be read); they stay in the index until it is fixed."
                    )
                if _finish(state, last_day, batch):
                    result.pages_changed.append(rel)
                    result.folded += state.folded
                    result.outcomes.update(state.outcomes)
                    result.confirmations_folded += state.confirmations
        if result.pages_changed:
            _update_index(vault, last_day, batch)
        result.summary = _summary(result, batch)
        return result

    # -- folding -----------------------------------------------------------------------------

    def _fold(self, mention: Mention, states: dict[str, PageState], result: ConsolidationResult) -> None:
        if mention.confirmation is None:
            state = states[page_rel(mention.category)]
            if state.broken:
                state.skipped += 1
                return
            found = best_match(analyse(mention.content), state.claim_forms())
            if found is None and self.semantic:
                found = self._semantic_match(mention.content, state)
            _apply(state, found, mention)
            return
        # A confirmation: the matching claim on any category page.
        candidates = [s for s in states.values() if s.category and not s.broken and s.page]
        target: tuple[PageState, int, Relation] | None = None
        for text in (mention.content, *mention.matched):
            form = analyse(text)
            for state in candidates:
                found = best_match(form, state.claim_forms())
                if found and (
                    target is None or (found[1].tier, found[1].score) > (target[2].tier, target[2].score)
                ):
                    target = (state, found[0], found[1])
            if target is not None:
                break
        if target is not None:
            state, index, rel = target
            _apply(state, (index, rel), mention)
            return
        state = states[page_rel(mention.category)] if mention.category else None
        conf = mention.confirmation
        if state is None or state.broken:
            result.warnings.append(
                f"confirmation of {conf.content!r} ({conf.ts}): no claim on a personal page matches it and "
                f"its record ({conf.source_type} {conf.source_file}) is not a daily-log line; not counted."
            )
            return
        _apply(state, None, mention)

    def _semantic_match(self, content: str, state: PageState) -> tuple[int, Relation] | None:
        forms = state.claim_forms()
        if not forms:
            return None
        new = analyse(content)
        vectors = np.asarray(self.embedder().embed([new.text, *(f.text for f in forms)]), dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        best: tuple[int, Relation] | None = None
        for index, (form, vector) in enumerate(zip(forms, vectors[1:], strict=True)):
            cosine = float(vector @ vectors[0])
            if cosine < self.semantic_threshold or form.negative != new.negative:
                continue
            if new.specifics - form.specifics or (new.slot and form.slot and new.slot.slot == form.slot.slot):
                continue
            if best is None or cosine > best[1].score:
                best = (index, Relation(CONFIRM, SEMANTIC_TIER, cosine, "semantic restatement"))
        return best

    # -- the revisit queue -------------------------------------------------------------------

    def _revisit(
        self,
        batch: Batch,
        mentions: list[Mention],
        states: dict[str, PageState],
        last_day: date,
        result: ConsolidationResult,
    ) -> None:
        forms = [analyse(m.content) for m in mentions]
        for rel in batch.revisit:
            state = states.get(rel)
            if state is None or state.broken or state.page is None:
                continue
            page = state.page
            confirmed = state.confirmed
            if not confirmed and state.category is None:
                bullets = [analyse(b) for b in page.all_bullets()]
                confirmed = any(
                    (found := best_match(form, bullets)) is not None
                    and found[1].outcome in (CONFIRM, SHARPEN)
                    for form in forms
                )
            category = _page_category(state)
            if confirmed:
                result.revisited.append(rel)
                updated = max(page.updated or last_day, last_day)
                stale = default_stale_after(category, updated)
                if (page.updated, page.stale_after) != (updated, stale):
                    page.updated, page.stale_after = updated, stale
                    state.dirty = True
            elif not page.stale_after:
                page.stale_after = default_stale_after(category, page.updated or last_day)
                state.dirty = True


def _apply(state: PageState, found: tuple[int, Relation] | None, mention: Mention) -> None:
    if state.page is None:
        assert state.category is not None
        state.page = Page.new(state.category)
    claims = state.page.claims
    text = one_line(mention.content)
    day = mention.day
    outcome = found[1].outcome if found else ADD
    if mention.confirmation is not None and outcome == SHARPEN:
        outcome = CONFIRM  # a confirmation is a restatement: it never rewrites the claim
    if found is None:
        claims.append(Claim(text))
    else:
        claim = claims[found[0]]
        if outcome == CONFIRM:
            claim.count += 1
            claim.last = max(claim.last or day, day)
        elif outcome == SHARPEN:
            claim.text = text
            claim.count += 1
            claim.last = max(claim.last or day, day)
        else:  # supersede
            # Every earlier value is kept: a dropped one would leave its log line held by no page.
            previously = [Previous(claim.text, day), *claim.previously]
            claims[found[0]] = Claim(text, 1, None, previously, claim.extra)
    if outcome in (CONFIRM, SHARPEN):
        state.confirmed = True
    state.outcomes[outcome] += 1
    state.dirty = True
    state.latest = max(state.latest or day, day)
    if mention.fact is not None:
        state.folded.append(mention.fact.content)
        if mention.fact.source_file not in state.sources:
            state.sources.append(mention.fact.source_file)
    else:
        state.confirmations += 1


def _finish(state: PageState, last_day: date, batch: Batch) -> bool:
    """Stamp and write a changed page (declared to the batch's journal first); True when the file
    changed."""
    today = batch.today
    if not state.dirty or state.page is None or state.broken:
        return False
    page = state.page
    if state.category is not None:
        page.title = page.title or title_of(state.category)
        page.category = page.category or state.category
        page.status = page.status or "stable"
    if state.outcomes:  # mentions were folded in: the page is current as of them
        updated = max(d for d in (page.updated, last_day, state.latest) if d is not None)
        page.updated = updated
        page.stale_after = default_stale_after(_page_category(state), updated)
    for source in state.sources:
        entry = {"file": source}
        if entry not in page.sources:
            page.sources.append(entry)
    page.sources = page.sources[-MAX_SOURCES:]
    if state.original is not None and page.render() == state.original:
        return False
    if state.outcomes:  # it holds what this run folded (a page only re-dated is not stamped)
        page.generated = {"by": GENERATOR, "at": today.isoformat()}
    text = page.render()
    if text == state.original:
        return False
    batch.declare(
        state.rel, None if state.original is None else state.original.encode("utf-8"), text.encode()
    )
    write_atomic(state.path, text)
    return True


def _load(vault: Path, rel: str) -> PageState:
    path = vault / rel
    category = next((c for c in BY_NAME if page_rel(c) == rel), None)
    state = PageState(rel=rel, path=path, page=None, category=category)
    if not path.is_file():
        return state
    try:
        ft = read_text(path, f"notebook/{rel}")
    except OSError as exc:
        state.broken = (
            f"notebook/{rel}: cannot be read ({exc.strerror or exc}); the consolidator leaves this page "
            "alone until it can be. Fix: make it readable by the user running memory-assets."
        )
        return state
    if ft.warnings:
        state.broken = f"{ft.warnings[0]} The consolidator leaves this page alone."
        return state
    state.original = ft.text
    try:
        state.page = Page.parse(ft.text, f"notebook/{rel}")
    except PageError as exc:
        state.broken = f"{exc} The consolidator adds nothing to it until then."
    return state


def _page_category(state: PageState) -> str:
    if state.category is not None:
        return state.category
    declared = state.page.category if state.page else ""
    if declared:
        return normalise_category(declared)
    stem = Path(state.rel).stem.lower()
    return next((c.name for c in CATEGORIES if c.title.lower() == stem), "general")


def _last_day(batch: Batch) -> date:
    if batch.days:
        return max(batch.days)
    return max((f.day for f in batch.facts), default=batch.today)


def _mentions(settings: "Settings", batch: Batch, last_day: date) -> Iterator[Mention]:
    """The batch's facts and confirmations in the order they are folded: by day, a day's facts
    in log order before its confirmations (in file order)."""
    keyed: list[tuple[date, int, int, Mention]] = []
    for i, fact in enumerate(batch.facts):
        keyed.append(
            (fact.day, 0, i, Mention(fact.content, normalise_category(fact.category), fact.day, fact=fact))
        )
    categories = _LogCategories(settings)
    for i, conf in enumerate(batch.confirmations):
        day = _ts_day(conf.ts) or last_day
        matched = tuple(_claim_lines(conf.matched))
        category = categories.lookup(conf)
        keyed.append(
            (day, 1, i, Mention(conf.content, category or "", day, confirmation=conf, matched=matched))
        )
    for _, _, _, mention in sorted(keyed, key=lambda k: k[:3]):
        yield mention


class _LogCategories:
    """The category of a confirmation's matched daily-log line (read once per log)."""

    def __init__(self, settings: "Settings") -> None:
        self.archive = settings.archive_dir
        self.logs: dict[str, dict[str, str]] = {}

    def lookup(self, conf: Confirmation) -> str | None:
        if conf.source_type != ARCHIVE or not conf.source_file:
            return None
        name = Path(conf.source_file).name
        if name not in self.logs:
            path = self.archive / name
            facts = read_daily_log(path).facts if path.is_file() else []
            self.logs[name] = {normalise(f.content): f.category for f in reversed(facts)}
        category = self.logs[name].get(normalise(conf.matched))
        return normalise_category(category) if category else None


def _claim_lines(text: str) -> Iterator[str]:
    """The claim lines of a confirmation's matched record (a log fact, or a page's chunk)."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("---"):
            continue
        line = re.sub(r"^[-*+]\s+(?:\[[^\]]*\]\s*)?", "", line)
        if line.lower().startswith("previously:"):
            continue
        if line:
            yield line


def _ts_day(ts: str) -> date | None:
    try:
        return date.fromisoformat(ts.strip()[:10])
    except (ValueError, AttributeError):
        return None


# ---------------------------------------------------------------------------------------------
# index.md and the summary
# ---------------------------------------------------------------------------------------------


def personal_index_section(vault: Path) -> str:
    """The ``## Personal pages`` section of index.md: every 3_Personal page and its claims."""
    lines = [INDEX_SECTION, ""]
    pages = list_pages(vault, under=PERSONAL_DIR)
    for rel in pages:
        link = f"[[{rel[:-3]}|{Path(rel).stem}]]"
        try:
            page = Page.parse(read_text(vault / rel).text, f"notebook/{rel}")
        except PageError:
            lines.append(f"- {link}: frontmatter needs fixing (not counted)")
            continue
        except OSError:
            lines.append(f"- {link}: cannot be read (not counted)")
            continue
        n = page.bullet_count()
        lines.append(f"- {link}: {n} claim{'s' if n != 1 else ''}")
    if not pages:
        lines.append("*No personal pages yet.*")
    return "\n".join(lines)


def _update_index(vault: Path, day: date, batch: Batch) -> None:
    path = vault / "index.md"
    with file_lock(path):
        old = read_text(path).text if path.is_file() else INDEX_MD
        section = personal_index_section(vault)
        pattern = re.compile(
            rf"^{re.escape(INDEX_SECTION)}[ \t]*\n.*?(?=^##[ \t]|\Z)", re.MULTILINE | re.DOTALL
        )
        if pattern.search(old):
            new = pattern.sub(lambda _: section + "\n\n", old, count=1)
        else:
            new = old.rstrip("\n") + "\n\n" + section + "\n"
        new = new.rstrip("\n") + "\n"
        if new == old:
            return
        new = re.sub(r"(?m)^Last updated: .*$", f"Last updated: {day.isoformat()}", new, count=1)
        batch.declare("index.md", path.read_bytes() if path.is_file() else None, new.encode())
        write_atomic(path, new)


def _summary(result: ConsolidationResult, batch: Batch) -> str:
    if not result.pages_changed:
        return (
            f"No personal page changed: {len(batch.facts)} fact(s) and {len(batch.confirmations)} "
            f"confirmation(s) gave nothing to fold"
            + (f"; {len(result.warnings)} warning(s)." if result.warnings else ".")
        )
    counts = ", ".join(
        f"{result.outcomes[o]} {o}" for o in (ADD, CONFIRM, SHARPEN, SUPERSEDE) if result.outcomes[o]
    )
    span = f"{batch.days[0].isoformat()}..{batch.days[-1].isoformat()}" if batch.days else "no days"
    parts = [
        f"Folded {len(result.folded)} of {len(batch.facts)} fact(s) from {span} and "
        f"{result.confirmations_folded} of {len(batch.confirmations)} confirmation(s) into "
        f"{len(result.pages_changed)} page(s) ({', '.join(result.pages_changed)}): {counts or 'no claim changed'}."
    ]
    if result.revisited:
        parts.append(f"Re-confirmed {len(result.revisited)} revisit-queue page(s).")
    if result.warnings:
        parts.append(f"{len(result.warnings)} warning(s).")
    return " ".join(parts)
