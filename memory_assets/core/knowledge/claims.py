"""How two claims compare: the one vocabulary the write path and the dream share (design
§5.6, §5.9).

Three layers, each a pure function of its text (no I/O, no clock, no model):

* ``similarity(a, b)``: ``rapidfuzz.fuzz.ratio / 100`` over the folded text (``text.fold``: NFKC,
  lower case, punctuation folded to spaces, whitespace collapsed). Lexical on purpose: the band
  that changes behaviour is "practically the same sentence", which an edit-distance ratio measures
  well and a semantic score is too generous about. The write path's classifier, the rule
  consolidator and lint all use this one ratio.
* ``specifics(text)``: the specifics a text carries (numbers, dates and times, month, weekday,
  holiday and season names, quoted strings, paths, URLs, e-mail addresses, versions), normalised,
  as a multiset. A specific one text has and the other lacks is what separates an update from a
  repeat, wherever that question is asked.
* ``analyse(text)`` -> ``Form`` and ``relate(new, old)`` -> ``Relation | None``: how a statement
  bears on a claim, as one of three outcomes (``CONFIRM``, ``SHARPEN``, ``SUPERSEDE``; ``None`` is
  another claim, which the consolidator turns into ``ADD``). ``best_match`` picks the claim of a
  list a statement bears on most strongly.

How a statement is compared with a claim, in order (the first rule that applies decides):

1. **Slots** (``SLOTS``): a small table of patterns for claims that hold one value at a time:
   residence, job, employer, partner, name, age, diet, the way to work, the reply language, and ``their <attribute>
   is ...`` for single-valued attributes (favourite X, birthday, time zone, ...). The same slot on
   both sides compares the values' words: equal or fewer -> confirm, more -> sharpen, different ->
   supersede ("Lives in Lisbon" then "Moved to Berlin").
2. **Polarity**: negations ("not", "no longer", "stopped", n't) and sentiment verbs ("dislikes",
   "hates" = not likes; "loves", "enjoys" = likes) are folded out of the claim's key words. The same
   key words with the opposite polarity -> supersede ("Likes jazz" then "Does not like jazz
   anymore"); a claim and its negation are never compared any further.
3. **Words**: key words (folded, crudely stemmed, stop words and specifics left out) and the
   specifics above. Same key words: no new specific -> confirm, new specifics only -> sharpen, new
   and lost specifics -> supersede (the fallback for slots the table does not know: "Wakes up at
   6 AM" then "... at 7 AM", "Uses Python 3.11" then "... 3.12"), except when the numbers that
   differ name *which* thing it is rather than a value of it ("fact number 00" and "fact number
   01", "ticket #12" and "ticket #13": ``identifiers``), which are two claims; a number after a
   copula ("the locker is number 3") is a value and still supersedes. A strict superset of the claim's
   key words (same leading word, at least half shared) -> sharpen, or supersede when it also drops
   a specific; a strict subset -> confirm (the less informative restatement never replaces the
   better claim). A near-identical text (similarity >= 0.97, the write path's confirmation band)
   with no new specific -> confirm. A changed non-specific word ("tom" / "Ana", "dark" / "light")
   is another claim.
4. Otherwise another claim (``None``).

Among several claims the strongest evidence wins (a slot over a polarity over words), then the
highest lexical similarity, then the first (``best_match``). ``analyse`` is cached (its result is
frozen), so comparing one statement with every claim of a page does not re-parse the claims.
"""

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from rapidfuzz import fuzz

from memory_assets.core.knowledge.importance import CONFIRMED_RE
from memory_assets.core.knowledge.personal_pages import one_line
from memory_assets.core.text import fold, stem

CONFIRM, SHARPEN, SUPERSEDE, ADD = "confirm", "sharpen", "supersede", "add"
NEAR_IDENTICAL = 0.97  # similarity of a restatement (the write path's confirmation band)
MIN_SHARED = 0.5  # share of the larger key set a subset or superset must cover
POLARITY_SHARED = 0.5  # share of the larger key set a reversal must cover
SWAP_SHARED = 3  # key words a claim must share with one swapped for a change of value

# Evidence tiers: a slot match beats a polarity match beats a word match.
SLOT_TIER, POLARITY_TIER, WORD_TIER, SEMANTIC_TIER = 3, 2, 1, 0

# ---------------------------------------------------------------------------------------------
# Specifics and similarity
# ---------------------------------------------------------------------------------------------

# Month and weekday names are date specifics too ("may" the verb counts as one: the safe side,
# since a specific can only turn a confirmation into a written revision).
CALENDAR_WORDS = frozenset(
    {
        *("january", "february", "march", "april", "may", "june", "july", "august"),
        *("september", "october", "november", "december"),
        *("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"),
        *("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
        # Holidays and seasons name dates too ("by Christmas" -> "by mid July" is a new date).
        *("christmas", "easter", "thanksgiving", "halloween", "ramadan", "diwali", "hanukkah"),
        *("summer", "autumn", "winter"),
    }
)
# Each pattern finds one kind of specific in the ORIGINAL text (before folding strips punctuation).
_SPECIFIC_PATTERNS = (
    re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),  # e-mail
    re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE),  # URL
    re.compile(r"(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]*)+|\b[A-Za-z]:\\\S+"),  # path
    re.compile(r"\bv?\d+(?:\.\d+)+\b|\bv\d+\b", re.IGNORECASE),  # version, decimal, dotted date
    re.compile(r"\d+(?:[:/-]\d+)*(?:st|nd|rd|th|am|pm|h|%)?", re.IGNORECASE),  # number, time, date
    re.compile(r"\"[^\"]+\"|“[^”]+”|‘[^’]+’|'[^'\s][^']*[^'\s]'"),  # quoted string
)


def specifics(text: str) -> Counter[str]:
    """The specifics a text carries, normalised, with how often each occurs: a restatement that
    repeats a number the known fact already has ("5 plants ... at 5") still adds a specific."""
    found: Counter[str] = Counter()
    for pattern in _SPECIFIC_PATTERNS:
        for m in pattern.finditer(text):
            value = m.group(0).lower().strip("\"'“”‘’").rstrip(".,;:!?)")
            if value:
                found[value] += 1
    found.update(w for w in fold(text).split() if w in CALENDAR_WORDS)
    return found


def similarity(a: str, b: str) -> float:
    """The edit-distance ratio of the folded texts, 0..1 (1: the same sentence)."""
    return fuzz.ratio(fold(a), fold(b)) / 100.0


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
        "commute",
        rf"(?i)^{_ADV}(?P<value>drives|cycles|bikes|walks|runs|rides\s+(?:a\s+|the\s+|their\s+)?[\w-]+|"
        r"takes\s+(?:a\s+|the\s+)?[\w-]+|commutes\s+by\s+[\w-]+)\s+to\s+"
        r"(?:work|the\s+office|school|university|college|uni)\b.*$",
    ),
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


@dataclass(frozen=True)
class SlotValue:
    slot: str
    words: frozenset[str]  # the value's key words
    partner: tuple[str, str | None] | None = None  # (status, name) for the partner slot


# A number that names which thing a claim is about ("fact number 00", "ticket #12", "room no. 4"),
# unless a copula makes it the claim's value ("the locker is number 3").
_IDENTIFIER = re.compile(r"(?<![\w'])(?:number|no\.|nr\.?|#)\s*(\d+)\b", re.IGNORECASE)
_COPULA_BEFORE = re.compile(r"\b(?:is|are|was|were|now|becomes|became|be)\s*$", re.IGNORECASE)


def identifiers(text: str) -> frozenset[str]:
    """The identifying numbers of a claim (see above), without leading zeros."""
    found = set()
    for m in _IDENTIFIER.finditer(text):
        if not _COPULA_BEFORE.search(text[: m.start()]):
            found.add(str(int(m.group(1))))
    return frozenset(found)


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
    ids: frozenset[str] = frozenset()  # identifying numbers (``identifiers``)


def strip_subject(text: str) -> str:
    """ "The user lives in ..." -> "lives in ..."; "The user's wife ..." -> "their wife ..."."""
    m = _SUBJECT_RE.match(text)
    if not m:
        return text.strip()
    return ("their " if m.group("poss") else "") + text[m.end() :].strip()


@lru_cache(maxsize=16384)
def content_words(text: str) -> frozenset[str]:
    """The stems of a text's words that carry content (no stop words). Cached: a search or a
    forget meets the same facts and turns again and again."""
    return frozenset(stem(w) for w in fold(text).split() if w not in STOP_WORDS)


def said_overlap(fact: str, turn: str) -> int:
    """How many content words a fact shares with a turn it may have been written from. A fact and
    a turn with the same marks (day, minute, chat) but no content word in common are not linked:
    a fact given directly (``add_memory``: no turn is kept) in the minute of some turn of the same
    chat is not that turn's ("Speaks Portuguese at home" is not from "I work as a nurse in
    Porto"). Extractors keep at least one word of what was said ("Has a dog named Rex" from "we
    got a puppy, Rex!")."""
    return len(content_words(fact) & content_words(turn))


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
            slot = "attribute:" + " ".join(stem(w) for w in attr.split())
        words = content_words(groups["value"])
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
        # Numbers and calendar words are specifics, never key words.
        if token in STOP_WORDS or _HAS_DIGIT.search(token) or token in CALENDAR_WORDS:
            continue
        key.append(stem(token))
    return Form(
        text=line,
        folded=folded,
        key=tuple(key),
        keys=frozenset(key),
        negative=negative,
        specifics=specifics(subjectless),
        slot=_slot(subjectless),
        ids=identifiers(subjectless),
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
    # 3. Words and specifics. Two differently numbered things are two claims.
    if new.ids and old.ids and new.ids != old.ids:
        return None
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
    return frozenset(stem(fold(w)) for w in words if w[:1].isupper())


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
