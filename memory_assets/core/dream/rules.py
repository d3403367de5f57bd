"""The rule-based consolidator: the dream's deterministic default (docs/design.md §6.3).

It folds a batch of log facts and the write path's confirmations into ``3_Personal/`` pages, one
page per category (``knowledge/personal_pages.py``), one bullet per claim, with the four outcomes
of the seeds. Every fact (in log order) and every confirmation (merged in by its day, after that
day's facts) goes to the page of its category and is compared with each claim there:

* **confirm**: a restatement (same claim, nothing new) bumps the count and the last date;
* **sharpen**: a more specific wording of the same claim (its words plus more, or the same words
  plus a new specific) replaces the bullet's text and keeps the count (+1 for this mention);
* **supersede**: a contradiction (the same slot with another value, or a reversed polarity, or the
  same words with conflicting specifics) replaces the claim, resets the count to 1 and keeps a
  ``previously:`` line. A reversal never counts as a confirmation;
* **add**: anything else becomes a new bullet.

How a fact is compared with a claim, in order (the first rule that applies decides):

1. **Slots** (``SLOTS``): a small table of patterns for claims that hold one value at a time:
   residence, job, employer, partner, name, age, diet, the reply language, and ``their <attribute>
   is ...`` for single-valued attributes (favourite X, birthday, time zone, ...). The same slot on
   both sides compares the values' words: equal or fewer -> confirm, more -> sharpen, different ->
   supersede ("Lives in Lisbon" then "Moved to Berlin").
2. **Polarity**: negations ("not", "no longer", "stopped", n't) and sentiment verbs ("dislikes",
   "hates" = not likes; "loves", "enjoys" = likes) are folded out of the claim's key words. The same
   key words with the opposite polarity -> supersede ("Likes jazz" then "Does not like jazz
   anymore"); a claim and its negation are never compared any further.
3. **Words**: key words (folded, crudely stemmed, stop words and specifics left out) and the
   specifics of the write path's classifier (numbers, dates, times, quoted strings, paths, URLs,
   versions). Same key words: no new specific -> confirm, new specifics only -> sharpen, new and
   lost specifics -> supersede (the fallback for slots the table does not know: "Wakes up at 6 AM"
   then "... at 7 AM", "Uses Python 3.11" then "... 3.12"). A strict superset of the claim's key
   words (same leading word, at least half shared) -> sharpen, or supersede when it also drops a
   specific; a strict subset -> confirm (the less informative restatement never replaces the
   better claim). A near-identical text (classifier similarity >= 0.97) with no new specific ->
   confirm. A changed non-specific word ("tom" / "Ana", "dark" / "light") is another claim.
4. Otherwise **add**.

Among the claims of a page the strongest evidence wins (a slot over a polarity over words), then
the highest lexical similarity.

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

The local embedding model is off by default (``semantic=True`` or an ``embedder`` turns it on).
Measured with all-MiniLM-L6-v2 on 15 hand-written paraphrase pairs and 20 pairs of different
claims: paraphrases score 0.55-0.92, different claims 0.44-0.89 ("Wants to run a marathon" / "...
a half marathon" 0.89, "Prefers dark mode" / "Prefers light mode" 0.87, "Goes to the gym on
Mondays" / "... Fridays" 0.87). The only threshold that merges no two different claims (0.9)
recovers 3 of the 15 paraphrases, a wrong merge drops the new wording, and loading the model costs
seconds per process, so it does not pay for itself as a default. When on, it only turns an *add*
into a *confirm* (cosine >= ``semantic_threshold``, same polarity, no new specific, no slot).
"""

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.dream.consolidator import Batch, BatchFact, ConsolidationResult
from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.knowledge.confirmations import Confirmation
from memory_assets.core.knowledge.importance import CONFIRMED_RE, default_stale_after
from memory_assets.core.knowledge.personal_pages import (
    MAX_PREVIOUS,
    MAX_SOURCES,
    PAGE_TITLES,
    PERSONAL_DIR,
    Claim,
    Page,
    PageError,
    Previous,
    is_personal,
    normalise_category,
    one_line,
    page_rel,
)
from memory_assets.core.knowledge.vault import INDEX_MD, list_pages
from memory_assets.core.text import fold, normalise
from memory_assets.core.textfile import read_text
from memory_assets.core.write_path.classifier import CALENDAR_WORDS, similarity, specifics

if TYPE_CHECKING:
    from memory_assets.core.models.embedder import TextEmbedder
    from memory_assets.core.settings import Settings

CONFIRM, SHARPEN, SUPERSEDE, ADD = "confirm", "sharpen", "supersede", "add"
GENERATOR = "dream:rules"
NEAR_IDENTICAL = 0.97  # classifier similarity of a restatement (the write path's confirmation band)
MIN_SHARED = 0.5  # share of the larger key set a subset or superset must cover
POLARITY_SHARED = 0.5  # share of the larger key set a reversal must cover
SWAP_SHARED = 3  # key words a claim must share with one swapped for a change of value
SEMANTIC_CONFIRM_AT = 0.9  # cosine (all-MiniLM-L6-v2) when the semantic option is on
INDEX_SECTION = "## Personal pages"

# Evidence tiers: a slot match beats a polarity match beats a word match.
SLOT_TIER, POLARITY_TIER, WORD_TIER, SEMANTIC_TIER = 3, 2, 1, 0

# ---------------------------------------------------------------------------------------------
# Slots: claims that hold one value at a time. Matched on the claim with its subject removed
# ("The user lives in ..." -> "lives in ..."), case-insensitively; ``value`` is the rest.
# ---------------------------------------------------------------------------------------------

_ADV = r"(?:(?:now|currently|recently|just|still|actually|finally|also)\s+)*"
_OCCUPATIONS = (
    "engineer|developer|programmer|designer|teacher|nurse|doctor|physician|surgeon|dentist|"
    "pharmacist|lawyer|attorney|accountant|architect|scientist|researcher|consultant|analyst|"
    "journalist|editor|chef|professor|lecturer|student|"
    "electrician|plumber|carpenter|mechanic|pilot|farmer|freelancer|entrepreneur|"
    "founder|manager|director|ceo|cto|cfo|administrator|technician|therapist|psychologist|"
    "veterinarian|vet|paramedic|firefighter|police officer|soldier|salesperson|"
    "translator|librarian|cashier|waiter|waitress|barista|tutor|intern|recruiter|"
    "product owner|data scientist|sysadmin|devops"
)
_ATTRIBUTES = (
    r"favou?rite\s+[\w\s-]+?|preferred\s+[\w\s-]+?|birthday|date of birth|birth ?date|"
    r"time ?zone|native language|first language|mother tongue|nationality|pronouns|height|"
    r"weight|e-?mail(?: address)?|phone(?: number)?|(?:home )?address|home ?town|blood type"
)
_PARTNER_WORDS = r"wife|husband|spouse|partner|girlfriend|boyfriend|fianc[eé]e?"
# A partner's name: capitalised words, but not a nationality or a faith ("Their girlfriend is Brazilian").
_NOT_A_NAME = (
    r"(?!(?:American|British|English|Scottish|Irish|Welsh|French|German|Spanish|Italian|Portuguese|"
    r"Brazilian|Mexican|Canadian|Argentinian|Colombian|Chilean|Peruvian|Cuban|Chinese|Japanese|Korean|"
    r"Vietnamese|Thai|Filipino|Indian|Pakistani|Indonesian|Australian|Dutch|Belgian|Swiss|Austrian|"
    r"Swedish|Norwegian|Danish|Finnish|Polish|Czech|Russian|Ukrainian|Greek|Turkish|Israeli|Iranian|"
    r"Egyptian|Moroccan|Nigerian|Kenyan|Ghanaian|African|European|Asian|Latina?|Muslim|Christian|"
    r"Jewish|Catholic|Hindu|Buddhist)\b)"
)
_NAME = _NOT_A_NAME + r"(?P<name>[A-ZÀ-Ý][\w'’-]*(?:\s+[A-ZÀ-Ý][\w'’-]*)*)"

# (slot, pattern). The first pattern that matches a claim gives its slot.
SLOTS: tuple[tuple[str, str], ...] = (
    (
        "partner",
        rf"^(?i:(?:their\s+)?(?P<rel>{_PARTNER_WORDS})(?:'s name)?\s+is\s+(?:named\s+|called\s+)?){_NAME}",
    ),
    (
        "partner",
        rf"^(?i:{_ADV}is\s+(?:happily\s+)?(?P<rel>married|engaged|dating|seeing|in a relationship)"
        rf"(?:\s+(?:to|with))?\s+){_NAME}",
    ),
    ("partner", rf"^(?i:has\s+a\s+(?P<rel>{_PARTNER_WORDS}),?\s+(?:named\s+|called\s+)?){_NAME}"),
    (
        "partner",
        rf"^(?i:{_ADV}is\s+(?:happily\s+)?(?P<rel>single|married|engaged|divorced|widowed|separated|"
        r"in a relationship))(?:\s*$|[\s,.;])",
    ),
    ("name", r"(?i)^(?:their\s+)?(?:full\s+)?name\s+is\s+(?P<value>.+)$"),
    ("name", rf"(?i)^{_ADV}(?:is\s+(?:called|named)|goes\s+by)\s+(?P<value>.+)$"),
    ("address as", r"(?i)^(?:wants|prefers|likes)\s+to\s+be\s+(?:called|addressed\s+as)\s+(?P<value>.+)$"),
    ("age", r"(?i)^is\s+(?P<value>\d{1,3}(?:\s+years?\s+old\b.*)?)$"),
    ("age", r"(?i)^(?:their\s+)?age\s+is\s+(?P<value>\d{1,3}\b.*)$"),
    ("age", rf"(?i)^{_ADV}turned\s+(?P<value>\d{{1,3}}\b.*)$"),
    (
        "residence",
        rf"(?i)^{_ADV}(?:lives|is\s+living|resides|is\s+based|has\s+moved|moved|relocated|has\s+relocated)"
        r"\s+(?:back\s+)?(?:in|to)\s+(?P<value>.+)$",
    ),
    ("residence", r"(?i)^(?:their\s+)?home\s+is\s+(?:in\s+)?(?P<value>.+)$"),
    (
        "job",
        rf"(?i)^{_ADV}(?:works|is\s+working|is\s+employed|has\s+a\s+job|got\s+a\s+job|started\s+working|"
        r"started\s+a\s+new\s+job)\s+as\s+(?:an?\s+)?(?P<value>.+)$",
    ),
    ("job", r"(?i)^(?:their\s+)?(?:job|occupation|profession|job\s+title)\s+is\s+(?:an?\s+)?(?P<value>.+)$"),
    ("job", rf"(?i)^{_ADV}(?:is|became)\s+an?\s+(?P<value>(?:[\w-]+\s+){{0,3}}(?:{_OCCUPATIONS})s?\b.*)$"),
    ("job", rf"(?i)^{_ADV}is\s+(?P<value>retired|unemployed|self[\s-]employed|between\s+jobs)\b.*$"),
    (
        "employer",
        rf"(?i)^{_ADV}(?:works|is\s+working|is\s+employed|has\s+a\s+job|got\s+a\s+job|started\s+working|"
        r"started\s+a\s+new\s+job|took\s+a\s+job|accepted\s+a\s+job)\s+(?:at|for|by)\s+"
        r"(?!home\b|night\b|weekends?\b|the\s+weekend\b|remotely\b)(?P<value>.+)$",
    ),
    ("employer", r"(?i)^(?:their\s+)?employer\s+is\s+(?P<value>.+)$"),
    (
        "diet",
        rf"(?i)^{_ADV}(?:is|became|went)\s+(?:an?\s+)?(?:strict(?:ly)?\s+|fully\s+|mostly\s+)?"
        r"(?P<value>(?:vegetarian|vegan|pescatarian|pescetarian|omnivore|omnivorous|flexitarian|"
        r"carnivore|keto|paleo)\b.*)$",
    ),
    (
        "diet",
        rf"(?i)^{_ADV}(?:follows|eats|is\s+on|keeps)\s+an?\s+(?P<value>[\w-]+(?:\s+[\w-]+)?\s+diet\b.*)$",
    ),
    ("diet", rf"(?i)^{_ADV}(?:eats|started\s+eating)\s+(?P<value>meat|fish|everything)\b.*$"),
    (
        "reply language",
        r"(?i)^wants\s+(?:the\s+assistant\s+to\s+)?(?:always\s+|only\s+)?(?:answer|reply|respond|speak|write|talk)s?\s+"
        r"(?:to\s+them\s+)?in\s+(?P<value>[\w-]+)\b.*$",
    ),
    ("attribute", rf"(?i)^(?:their\s+)?(?P<attr>{_ATTRIBUTES})\s+(?:is|are)\s+(?P<value>.+)$"),
)
_SLOT_RES = tuple((name, re.compile(p)) for name, p in SLOTS)
# A residence names a place ("Lisbon", "the Netherlands", "a flat in Oslo"), not "a new flat" or
# "the city centre": a value that opens with a determiner needs a capitalised place after in/near.
_NOT_A_PLACE = re.compile(
    r"^(?:(?i:a|an|their|his|her|our|my|this|that|another|some|new)\b|(?i:the)\s+[a-z])"
)
_PLACE_LATER = re.compile(r"\b(?i:in|near|outside)\s+(?:(?i:the)\s+)?[A-ZÀ-Ý]")

_PARTNER_STATUS = {
    "wife": "married",
    "husband": "married",
    "spouse": "married",
    "married": "married",
    "fiance": "engaged",
    "fiancee": "engaged",
    "fiancé": "engaged",
    "fiancée": "engaged",
    "engaged": "engaged",
    "partner": "partnered",
    "girlfriend": "partnered",
    "boyfriend": "partnered",
    "dating": "partnered",
    "seeing": "partnered",
    "in a relationship": "partnered",
}

# ---------------------------------------------------------------------------------------------
# Polarity and key words
# ---------------------------------------------------------------------------------------------

# Folded text (apostrophes are spaces: "doesn't" -> "doesn t"), rewritten before tokenising.
_NEGATION_REWRITES = (
    (re.compile(r"\b(?:does|do|did|is|are|was|were|has|have|had|could|would|should|wo|ai)n t\b"), " not "),
    (re.compile(r"\bcan t\b|\bcannot\b"), " not "),
    (re.compile(r"\bno longer\b|\bnot any ?more\b"), " not "),
    (re.compile(r"\bany ?more\b"), " "),
    (re.compile(r"\b(?:stopped|quit|quitted|gave up(?: on)?|has given up(?: on)?)\b"), " not "),
)
NEGATIONS = frozenset({"not", "never", "no", "nor"})
# Sentiment verbs fold to (negated?, "like").
SENTIMENT: dict[str, tuple[bool, str]] = {
    **{w: (False, "like") for w in ("like", "likes", "liked", "love", "loves", "loved", "enjoy", "enjoys")},
    **{w: (False, "like") for w in ("enjoyed", "adore", "adores", "adored", "fan")},
    **{w: (True, "like") for w in ("dislike", "dislikes", "disliked", "hate", "hates", "hated")},
    **{w: (True, "like") for w in ("detest", "detests", "loathe", "loathes")},
    # Habitual consumption states the same preference: "No longer drinks coffee" reverses
    # "Likes coffee in the morning".
    **{w: (False, "like") for w in ("drinks", "drink", "drinking", "drank", "eats", "eat", "eating", "ate")},
    **{w: (False, "like") for w in ("plays", "play", "playing", "watches", "watch", "watching")},
}
STOP_WORDS = frozenset(
    {
        *("a", "an", "the", "to", "of", "in", "on", "at", "for", "from", "with", "by", "about", "as"),
        *("into", "onto", "and", "or", "but", "than", "then", "so", "is", "are", "am", "was", "were"),
        *("be", "been", "being", "do", "does", "did", "doing", "has", "have", "had", "having", "will"),
        *("would", "shall", "should", "can", "could", "may", "might", "must", "their", "them", "they"),
        *("theirs", "themselves", "it", "its", "this", "that", "these", "those", "there", "which"),
        *("who", "whom", "whose", "user", "s", "t", "pm", "now", "currently", "really", "actually"),
        *("very", "much", "just", "still", "also", "recently", "quite", "pretty", "every", "each"),
    }
)
_SUBJECT_RE = re.compile(r"^\s*(?:the\s+)?user(?P<poss>['’]s)?\s+", re.IGNORECASE)
_HAS_DIGIT = re.compile(r"\d")
# Month and weekday names are specifics (the classifier's list), so never key words.
_CALENDAR = CALENDAR_WORDS


def _stem(word: str) -> str:
    """A crude stem, good enough to meet "likes"/"liking"/"like" and "drinks"/"drinking"."""
    for suffix in ("ing", "ies", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    if len(word) > 2 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


@dataclass(frozen=True)
class SlotValue:
    slot: str
    words: frozenset[str]  # the value's key words
    partner: tuple[str, str | None] | None = None  # (status, name) for the partner slot


@dataclass(frozen=True)
class Form:
    """What the rules compare of one claim text."""

    text: str  # one line, as written
    folded: str  # subject removed, folded
    key: tuple[str, ...]  # key words in order (stems; stop words, negations, specifics left out)
    keys: frozenset[str]  # the same, as a set
    negative: bool
    specifics: Counter[str]
    slot: SlotValue | None


def strip_subject(text: str) -> str:
    """ "The user lives in ..." -> "lives in ..."; "The user's wife ..." -> "their wife ..."."""
    m = _SUBJECT_RE.match(text)
    if not m:
        return text.strip()
    return ("their " if m.group("poss") else "") + text[m.end() :].strip()


def _value_words(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in fold(text).split() if w not in STOP_WORDS)


def _slot(text: str) -> SlotValue | None:
    clean = text.strip().rstrip(".!;")
    for name, pattern in _SLOT_RES:
        m = pattern.match(clean)
        if not m:
            continue
        groups = m.groupdict()
        if name == "partner":
            rel = " ".join(groups["rel"].lower().split())
            person = groups.get("name")
            status = _PARTNER_STATUS.get(rel, rel)
            folded_name = fold(person) if person else None
            return SlotValue(
                name,
                frozenset({status, *(folded_name.split() if folded_name else [])}),
                (status, folded_name),
            )
        value = groups["value"]
        if name == "residence" and _NOT_A_PLACE.match(value) and not _PLACE_LATER.search(value):
            continue
        slot = name
        if name == "attribute":
            attr = fold(groups["attr"]).replace("favourite", "favorite").replace("-", " ")
            slot = "attribute:" + " ".join(_stem(w) for w in attr.split())
        words = _value_words(groups["value"])
        if words:
            return SlotValue(slot, words)
    return None


@lru_cache(maxsize=20000)
def analyse(text: str) -> Form:
    line = one_line(CONFIRMED_RE.sub(" ", text))
    subjectless = strip_subject(line)
    folded = fold(subjectless)
    rewritten = folded
    for pattern, replacement in _NEGATION_REWRITES:
        rewritten = pattern.sub(replacement, rewritten)
    negative = False
    key: list[str] = []
    for token in rewritten.split():
        if token in NEGATIONS:
            negative = not negative
            continue
        if token in SENTIMENT:
            flip, token = SENTIMENT[token]
            negative ^= flip
        if token in STOP_WORDS or _HAS_DIGIT.search(token) or token in _CALENDAR:
            continue
        key.append(_stem(token))
    return Form(
        text=line,
        folded=folded,
        key=tuple(key),
        keys=frozenset(key),
        negative=negative,
        specifics=specifics(subjectless),
        slot=_slot(subjectless),
    )


@dataclass(frozen=True)
class Relation:
    outcome: str  # confirm | sharpen | supersede
    tier: int
    score: float  # lexical similarity, to rank candidates of the same tier
    why: str


def _compare_values(new: SlotValue, old: SlotValue) -> str:
    if new.partner is not None and old.partner is not None:
        (new_status, new_name), (old_status, old_name) = new.partner, old.partner
        if new_status != old_status or (new_name and old_name and new_name != old_name):
            return SUPERSEDE
        if new_name and not old_name:
            return SHARPEN
        return CONFIRM
    if new.words == old.words or new.words < old.words:
        return CONFIRM
    if new.words > old.words:
        return SHARPEN
    return SUPERSEDE


def relate(new: Form, old: Form) -> Relation | None:
    """How the statement ``new`` bears on the claim ``old``; None when it is another claim."""
    nk, ok = new.keys, old.keys
    same_slot = new.slot is not None and old.slot is not None and new.slot.slot == old.slot.slot
    if nk and ok and not same_slot and nk.isdisjoint(ok):
        return None  # no rule below relates two claims without a key word in common
    score = similarity(new.folded, old.folded)
    # 1. Slots: one value at a time.
    if same_slot and new.negative == old.negative:
        assert new.slot is not None and old.slot is not None
        return Relation(_compare_values(new.slot, old.slot), SLOT_TIER, score, f"slot {new.slot.slot}")
    # 2. Polarity: a reversal supersedes, and is never compared any further.
    if new.negative != old.negative:
        if nk and ok:
            small, large = sorted((nk, ok), key=len)
            if small <= large and len(small) / len(large) >= POLARITY_SHARED:
                return Relation(SUPERSEDE, POLARITY_TIER, score, "reversed polarity")
        return None
    # 3. Words and specifics.
    added = bool(new.specifics - old.specifics)
    lost = bool(old.specifics - new.specifics)
    same_head = bool(new.key and old.key and new.key[0] == old.key[0])
    if nk and nk == ok:
        if added and lost:
            return Relation(SUPERSEDE, WORD_TIER, score, "same claim, conflicting specifics")
        return Relation(SHARPEN if added else CONFIRM, WORD_TIER, score, "same key words")
    if nk and ok and same_head and ok < nk and len(ok) / len(nk) >= MIN_SHARED:
        if not lost:
            return Relation(SHARPEN, WORD_TIER, score, "more specific wording")
        if added:
            return Relation(SUPERSEDE, WORD_TIER, score, "more words, conflicting specifics")
        return None
    if nk and ok and same_head and nk < ok and len(nk) / len(ok) >= MIN_SHARED:
        if not added:
            return Relation(CONFIRM, WORD_TIER, score, "less specific restatement")
        if lost:
            return Relation(SUPERSEDE, WORD_TIER, score, "fewer words, conflicting specifics")
        return None
    if score >= NEAR_IDENTICAL and not added:
        return Relation(CONFIRM, WORD_TIER, score, "near-identical wording")
    # One value swapped in the same sentence ("Prefers dark mode in every editor" -> "... light
    # mode ..."): a change of that value, the old one kept under "previously". Not a name, though:
    # "a best friend, Tom" and "a best friend, Ana" are two friends.
    swapped = nk and ok and same_head and len(nk) == len(ok) and len(nk - ok) == 1
    if (
        swapped
        and len(nk & ok) >= SWAP_SHARED
        and not ((nk - ok) & _names(new.text) or (ok - nk) & _names(old.text))
    ):
        return Relation(SUPERSEDE, WORD_TIER, score, "one word swapped")
    return None


def _names(line: str) -> frozenset[str]:
    """Stems of the capitalised words after the first: names of people and places."""
    words = re.findall(r"[\w'’-]+", line)[1:]
    return frozenset(_stem(fold(w)) for w in words if w[:1].isupper())


def best_match(new: Form, claims: Sequence[Form]) -> tuple[int, Relation] | None:
    """The claim ``new`` bears on most strongly: highest tier, then similarity, then the first."""
    best: tuple[int, Relation] | None = None
    for index, claim in enumerate(claims):
        rel = relate(new, claim)
        if rel is None:
            continue
        if best is None or (rel.tier, rel.score) > (best[1].tier, best[1].score):
            best = (index, rel)
    return best


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
            {page_rel(c) for c in PAGE_TITLES}
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
                        "frontmatter is broken); they stay in the index until it is fixed."
                    )
                if _finish(state, last_day, batch.today):
                    result.pages_changed.append(rel)
                    result.folded += state.folded
                    result.outcomes.update(state.outcomes)
                    result.confirmations_folded += state.confirmations
        if result.pages_changed:
            _update_index(vault, last_day)
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
            previously = [Previous(claim.text, day), *claim.previously][:MAX_PREVIOUS]
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


def _finish(state: PageState, last_day: date, today: date) -> bool:
    """Stamp and write a changed page; True when the file changed."""
    if not state.dirty or state.page is None or state.broken:
        return False
    page = state.page
    if state.category is not None:
        page.title = page.title or PAGE_TITLES[state.category]
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
    write_atomic(state.path, text)
    return True


def _load(vault: Path, rel: str) -> PageState:
    path = vault / rel
    category = next((c for c in PAGE_TITLES if page_rel(c) == rel), None)
    state = PageState(rel=rel, path=path, page=None, category=category)
    if not path.is_file():
        return state
    ft = read_text(path, f"notebook/{rel}")
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
    return next((c for c, title in PAGE_TITLES.items() if title.lower() == stem), "general")


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
        if conf.source_type != "archive_log" or not conf.source_file:
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
        n = page.bullet_count()
        lines.append(f"- {link}: {n} claim{'s' if n != 1 else ''}")
    if not pages:
        lines.append("*No personal pages yet.*")
    return "\n".join(lines)


def _update_index(vault: Path, day: date) -> None:
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
