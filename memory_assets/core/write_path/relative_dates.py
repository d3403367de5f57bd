"""Dates made absolute: the relative time in a fact, resolved against the turn's time.

A fact is read long after it was said, so "yesterday" in it means nothing by then. Between
extraction and classification the write path (``process.plan_turn``) rewrites every relative
expression this module knows in each extracted fact, rule-based or from a chat model, against
the turn's time: its ``at`` in UTC, or the time of writing when it has none. Said on 2023-05-08,
"Went to a support group yesterday." is written "Went to a support group on 2023-05-07." A fact
given directly (``remember``, ``GivenFacts``) is written as its writer put it.

The contract (``D`` is the turn's UTC date; weeks start on Monday; names are English):

========================================  ===============================================
said                                      written
========================================  ===============================================
yesterday, today, tomorrow                on D-1, on D, on D+1 (ISO ``YYYY-MM-DD``); as a
                                          subject, the date alone ("2023-05-08 is ...")
the day before yesterday / after tomorrow on D-2 / on D+2
last night, tonight,                      on the night of D-1 / of D / of D-2
the night before last
this morning (afternoon, evening),        on the morning of D, on the afternoon of D-1...
yesterday afternoon, tomorrow morning
earlier today, later this morning         earlier on D, later on the morning of D
N days ago                                on D-N
N weeks ago, last / this / next week,     in the week of YYYY-MM-DD (that week's Monday)
the week before last / after next,
earlier / later this week
N months ago, last / this / next month,   in April 2023 (the calendar month)
the month before last, earlier this month
N years ago, last / this / next year,     in 2022; after a month or a holiday, the year
the year before last, earlier this year   alone ("since November last year" ->
                                          "since November 2022")
last / this / next December               in December 2022: "last" the latest December
                                          before D's month, "next" the first after it
last / this / next summer (spring,        in summer 2022 (northern seasons: summer is
autumn, fall, winter)                     June-August); a winter, December to February,
                                          is named by its two years: in winter 2022-23
last / this past Friday                   on Friday 2023-05-05: the latest Friday before D
next / this coming Friday                 on Friday 2023-05-12: the first Friday after D
on / this Friday                          past tense: the latest Friday before D; otherwise
                                          the first after it; D itself when D is a Friday
on Friday night, last Fri morning         on the night of Friday 2023-05-05
on Monday last week (this / next week),   on Monday 2023-05-01: that day of that week, or
on Saturday last weekend                  of that weekend
last weekend                              on the weekend of YYYY-MM-DD (the Saturday of
                                          last week)
this past weekend; over / on / at /       past tense: the latest Saturday not after D;
during the weekend; this weekend          otherwise the Saturday of D's week
next / this coming weekend                the first Saturday after D
in N days / weeks / months / years,       as N ago, forward, but "in N" only in a sentence
N days ... from now                       in the future tense ("plans to move in 2 weeks")
about / around N units ago                around <the same date, week, month or year>
a few / a couple of / several / some      a few days before D (vague, so kept vague, but
days (weeks...) ago, the other day;       anchored: the date it is relative to is written)
almost / over / more than N units ago;    nearly 3 years before D; in a few weeks:
in a few weeks                            a few weeks after D
========================================  ===============================================

Numbers are digits or the words one to twelve, fifteen, twenty, thirty, "a" and "an"; "just",
"only" and "exactly" before them are dropped. Abbreviated weekdays (Mon, Tue, Tues, Wed, Thu,
Thurs, Fri, and Sat and Sun capitalised) are read after last, this, next and on.

**Tense** decides "on Friday", "this weekend" and "in two weeks". It is the tense of the nearest
marker in the fact, looking left of the expression first, then right: a past marker is a past
verb (went, had, was, were, did, a regular "-ed" verb not after a form of "be", "feel" or "get"),
"used to", "has been", "ago" or "yesterday"; a future marker is will / 'll, going to, plan, hope,
want to, intend, expect, need to, scheduled, booked, upcoming, soon, tomorrow and the like, or a
progressive ("is flying", except stative ones like "is feeling"). With no past marker, a named weekday or
weekend is the coming one: a present-tense sentence about one day is a plan ("Has a cocktail
class on Thursday"); "in N units" needs a future marker, since "read 50 books in a year" is no
date.

**Left unchanged** (a wrong date is worse than a relative one): anything in quotes or backticks;
a weekday in the plural or with a plural part of day ("on Fridays", "on Monday
evenings": a habit); an expression after "the", "a", "every", "each", "that" or a possessive
("the last week", "every last Friday"), or with a possessive "'s" ("last week's game"); a
capitalised Yesterday / Today / Tomorrow / Tonight inside a sentence (a title); an expression with an
explicit date right beside it ("last month on February 12th", "2023-05-07 (yesterday)"); a bare
"on Friday" in a fact that also names a week ("on Monday and Tuesday last week": the week is
resolved, the day stays a day of that week); spans ("the past week", "the next few months",
"over the next 2-3 months"), "recently", "lately", "a while ago", and dates that leave the
years 1-9999. An expression after a preposition (since, until, by, from, for, before, after, of,
to, during, on, in, at, around, about) takes the date without its own "on" or "in": "since
yesterday" -> "since 2023-05-07".

The turn's date is its UTC date, the same day that names its log: a user far from UTC who says
"yesterday" just after midnight UTC is read a day late. Deterministic and pure: the same text
and date always give the same result; nothing here reads a clock.

**The classifier** (design §5.6) compares the written facts, so a resolved date is a specific
like any other. The same words said twice on one day resolve alike and stay a confirmation.
Said on another day they name another day, so the second is written (a revision, or new): "went
to the support group yesterday" on Monday and again on Tuesday are two evenings, which the
unresolved text would have folded into one confirmation.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTH_NAMES = (
    *("January", "February", "March", "April", "May", "June", "July", "August"),
    *("September", "October", "November", "December"),
)
_WEEKDAYS = {
    **{name.lower(): i for i, name in enumerate(WEEKDAY_NAMES)},
    **{"mon": 0, "tue": 1, "tues": 1, "wed": 2, "weds": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4},
    **{"sat": 5, "sun": 6},
}
_CAPITALISED_ONLY = {"sat", "sun"}  # "on sun cream" is no Sunday
_MONTHS = {**{name.lower(): i for i, name in enumerate(MONTH_NAMES, start=1)}, "sept": 9}
_VERB_MONTHS = {"may", "march"}  # "this may help": a month only when capitalised
_SEASONS = {"spring": (3, "spring"), "summer": (6, "summer"), "autumn": (9, "autumn"), "fall": (9, "fall")}
_NUMBER_WORDS = {
    **{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6},
    **{"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12},
    **{"fifteen": 15, "twenty": 20, "thirty": 30},
}
_VAGUE_NUMBERS = ("a couple of", "couple of", "a few", "few", "several", "some")
_APPROX = {"about", "around", "roughly", "approximately", "some"}
_BOUNDS = (
    "just over",
    "just under",
    "more than",
    "less than",
    "at least",
    "almost",
    "nearly",
    "over",
    "under",
)
_EXACT = {"just", "only", "exactly"}
# A preposition before the expression takes the date alone ("since 2023-05-07", not "since on").
_PREPOSITIONS = {
    *("since", "until", "till", "til", "by", "from", "for", "before", "after", "of", "to"),
    *("through", "during", "on", "in", "at", "around", "about"),
}
# After these the words are not a time relative to the turn ("the last week", "every last Friday").
_NOT_AFTER = {
    *("the", "a", "an", "every", "each", "that", "those", "these", "whole", "entire", "all", "any"),
    *("no", "his", "her", "their", "my", "our", "your", "its", "whose"),
}
# Before "last year", these take the year alone ("November last year" -> "November 2022").
_YEAR_NOUNS = {
    *_MONTHS,
    "christmas",
    "easter",
    "thanksgiving",
    "halloween",
    "spring",
    "summer",
    "autumn",
    "fall",
}
_STATIVE_ING = {
    *("feeling", "thinking", "loving", "enjoying", "missing", "recovering", "reflecting"),
    *("processing", "reeling", "buzzing", "glowing", "smiling", "remembering", "still", "hoping"),
    *("wondering", "struggling", "dealing", "living", "being", "having", "doing", "getting"),
}
# Past forms that are no present form too ("read", "put", "set", "quit" are left out: "wants to read").
_IRREGULAR_PAST = {
    *("was", "were", "had", "did", "went", "got", "came", "saw", "took", "made", "met", "left"),
    *("found", "gave", "told", "said", "thought", "bought", "brought", "caught", "taught", "ran"),
    *("won", "lost", "spent", "sent", "felt", "kept", "slept", "swam", "sang", "drank", "ate"),
    *("drove", "rode", "wrote", "spoke", "broke", "chose", "wore", "tore", "froze", "woke"),
    *("began", "became", "grew", "knew", "threw", "flew", "drew", "fell", "held", "heard", "built"),
    *("sold", "paid", "stood", "understood", "meant", "sought", "fought", "forgot", "hid"),
    *("learnt", "burnt", "dreamt", "lit", "led", "fed", "hung", "shot", "struck", "stuck"),
}
# "-ed" words that are no past verb.
_NOT_PAST_ED = {
    *("need", "feed", "bed", "red", "seed", "speed", "shed", "indeed", "weed", "bleed", "breed"),
    *("proceed", "succeed", "exceed", "embed", "hundred", "sacred", "wicked", "naked", "beloved"),
    *("kindred", "wretched", "rugged", "ragged", "jagged", "crooked", "limited", "related"),
    *("advanced", "detailed", "dedicated", "talented", "experienced", "scheduled", "booked"),
    *("planned", "supposed", "used", "interested", "excited", "based", "named", "called"),
}
# After these an "-ed" word is an adjective or a passive ("is excited", "feels tired").
_ED_ADJECTIVE_AFTER = {
    *("is", "am", "are", "be", "been", "being", "'s", "'m", "'re", "feel", "feels", "feeling"),
    *("get", "gets", "getting", "seem", "seems", "look", "looks", "so", "very", "really", "pretty"),
    *("too", "quite", "more", "most", "less", "bit", "little", "super", "extremely", "totally"),
    *("a", "an", "the", "their", "his", "her", "my", "our", "your"),
}

_WD = r"(?P<wd>" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + r")"
_PART = r"(?P<part>morning|afternoon|evening|night)"
_MON = r"(?P<mo>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")"
_NUM = (
    r"(?P<n>\d{1,3}|"
    + "|".join(re.escape(w) for w in _VAGUE_NUMBERS)
    + "|"
    + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
    + r")"
)
_UNIT = r"(?P<unit>day|week|month|year)s?"
_MOD = (
    r"(?:(?P<mod>"
    + "|".join(sorted(_BOUNDS + tuple(_APPROX) + tuple(_EXACT), key=len, reverse=True))
    + r")\s+)?"
)
_ALONG = r"(?:(?P<along>earlier|later)\s+)?"
_X = re.IGNORECASE

# Each kind of expression, tried in this order; a span once taken is not read again.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("day_before_yesterday", re.compile(r"\bthe\s+day\s+before\s+yesterday\b", _X)),
    ("day_after_tomorrow", re.compile(r"\bthe\s+day\s+after\s+tomorrow\b", _X)),
    ("night_before_last", re.compile(r"\bthe\s+night\s+before\s+last\b", _X)),
    ("yesterday", re.compile(r"\byesterday(?:\s+" + _PART + r")?\b", _X)),
    ("last_night", re.compile(r"\blast\s+night\b", _X)),
    ("tomorrow", re.compile(r"\btomorrow(?:\s+" + _PART + r")?\b", _X)),
    ("today", re.compile(r"\b" + _ALONG + r"today\b", _X)),
    ("tonight", re.compile(r"\btonight\b", _X)),
    ("this_part", re.compile(r"\b" + _ALONG + r"this\s+(?P<part>morning|afternoon|evening)\b", _X)),
    (
        "weekday",
        re.compile(
            r"\b(?P<q>last|this\s+past|this\s+coming|this|next|on)\s+"
            + _WD
            + r"\b(?:\s+"
            + _PART
            + r"\b)?(?:,?\s+(?P<wk>last|this|next)\s+(?P<wkunit>weekend|week)\b)?",
            _X,
        ),
    ),
    (
        "weekend",
        re.compile(
            r"\b(?:(?P<q>last|this\s+past|this\s+coming|this|next)\s+weekend"
            r"|(?P<p>over|on|at|during)\s+the\s+weekend)\b",
            _X,
        ),
    ),
    ("week_far", re.compile(r"\bthe\s+week\s+(?P<q>before\s+last|after\s+next)\b", _X)),
    ("week", re.compile(r"\b" + _ALONG + r"(?P<q>last|this|next)\s+week\b", _X)),
    ("month_far", re.compile(r"\bthe\s+month\s+(?P<q>before\s+last|after\s+next)\b", _X)),
    ("month", re.compile(r"\b" + _ALONG + r"(?P<q>last|this|next)\s+month\b", _X)),
    ("year_far", re.compile(r"\bthe\s+year\s+(?P<q>before\s+last|after\s+next)\b", _X)),
    ("year", re.compile(r"\b" + _ALONG + r"(?P<q>last|this|next)\s+year\b", _X)),
    (
        "named_month",
        re.compile(r"\b(?P<q>last|this\s+past|this\s+coming|this|next)\s+" + _MON + r"\b", _X),
    ),
    (
        "season",
        re.compile(
            r"\b(?P<q>last|this\s+past|this\s+coming|this|next)\s+(?P<se>summer|spring|autumn|fall|winter)\b",
            _X,
        ),
    ),
    ("ago", re.compile(r"\b" + _MOD + _NUM + r"\s+" + _UNIT + r"\s+ago\b", _X)),
    ("from_now", re.compile(r"\b" + _MOD + _NUM + r"\s+" + _UNIT + r"\s+from\s+now\b", _X)),
    ("in_n", re.compile(r"\bin\s+" + _MOD + _NUM + r"\s+" + _UNIT + r"(?:'?\s+time)?\b", _X)),
    ("other_day", re.compile(r"\bthe\s+other\s+day\b", _X)),
)
_WEEK_KINDS = ("week", "week_far")
# Every expression holds one of these words: a fact without any is left at once.
_ANY = re.compile(
    r"\b(?:yesterday|today|tomorrow|tonight|last|this|next|ago|weekend|other\s+day|now"
    r"|days?|weeks?|months?|years?|on\s+(?:mon|tue|wed|thu|fri|sat|sun)\w*)\b",
    _X,
)

_MONTH_WORDS = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")"
_EXPLICIT_DATE = (
    r"(?:\d{4}-\d{2}-\d{2}|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?"
    + _MONTH_WORDS
    + r"|"
    + _MONTH_WORDS
    + r"\.?\s+\d{1,2}(?:st|nd|rd|th)?\b|(?:19|20)\d{2}\b)"
)
_DATE_AFTER = re.compile(r"^\s*[,(]?\s*(?:on\s+|in\s+|of\s+)?(?:the\s+)?" + _EXPLICIT_DATE, _X)
_DATE_BEFORE = re.compile(_EXPLICIT_DATE + r"\s*[,(]?\s*$", _X)
_QUOTED = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»|(?<![\w'’])['‘][^'’\n]*['’](?![\w])")
_WORD_BEFORE = re.compile(r"([\w']+)\W*$")
_DAY_WORDS = ("yesterday", "today", "tomorrow")
_SUBJECT_AFTER = re.compile(r"\s+(?:is|was|will|would|has|had|marks|felt|feels)\b", _X)
_PLURAL_PART_AFTER = re.compile(r"^\s+(?:morning|afternoon|evening|night)s\b", _X)

_FUTURE_RE = re.compile(
    r"\b(?:will|shall|gonna|going\s+to|plan|plans|planning|planned|intend|intends|intending|hope\s+to"
    r"|hopes\s+to|hoping\s+to|want\s+to|wants\s+to|wanting\s+to|would\s+like|expect|expects|expecting"
    r"|aim\s+to|aims\s+to|aiming\s+to|scheduled|booked|upcoming|coming\s+up|looking\s+forward|about\s+to"
    r"|soon|need\s+to|needs\s+to|has\s+to|have\s+to|can't\s+wait|cannot\s+wait|tomorrow)\b|'ll\b|'d\s+like\b",
    _X,
)
_PROGRESSIVE_RE = re.compile(
    r"\b(?:is|are|am|'m|'re)\s+(?:(?:also|still|actually|currently|just|now|really|finally)\s+)*(?P<ing>[a-z]+ing)\b",
    _X,
)
_PAST_RE = re.compile(r"\b(?:used\s+to|has\s+been|have\s+been|had|ago|yesterday)\b", _X)
_WORD_RE = re.compile(r"[A-Za-z']+")

PAST, FUTURE = "past", "future"


@dataclass(frozen=True)
class Resolution:
    """One relative expression of a text and what it is written as."""

    start: int
    end: int
    said: str  # the words as they stood ("last Friday")
    written: str  # what replaces them ("on Friday 2023-05-05")
    kind: str  # which rule read them ("weekday")


def turn_date(at: datetime | date) -> date:
    """The date relative expressions are resolved against: a date-time's UTC date (no offset:
    read as UTC), a date as it is."""
    if isinstance(at, datetime):
        return (at if at.tzinfo is None else at.astimezone(UTC)).date()
    return at


def resolve(text: str, at: datetime | date) -> str:
    """``text`` with every relative expression this module knows made absolute against ``at``."""
    out = text
    for r in reversed(resolutions(text, at)):
        out = out[: r.start] + r.written + out[r.end :]
    return out


def resolutions(text: str, at: datetime | date) -> list[Resolution]:
    """The relative expressions of ``text`` that resolve against ``at``, in order (the module
    docstring lists them and what they become)."""
    if not _ANY.search(text):
        return []  # most facts: no word any rule starts from
    day = turn_date(at)
    quoted = [(m.start(), m.end()) for m in _QUOTED.finditer(text)]
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, int, str, re.Match[str]]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            span = (m.start(), m.end())
            if any(s < span[1] and span[0] < e for s, e in taken + quoted):
                continue
            taken.append(span)
            found.append((m.start(), m.end(), kind, m))
    found.sort()
    names_a_week = any(kind in _WEEK_KINDS for _, _, kind, _ in found)
    out: list[Resolution] = []
    for start, end, kind, m in found:
        if not _stands_alone(text, m, kind, names_a_week):
            continue
        try:
            answer = _READERS[kind](m, day, _Context(text, start, end))
        except (OverflowError, ValueError):  # past the years 1-9999
            answer = None
        if answer is None:
            continue
        written = _phrase(text, m, kind, answer)
        if start == 0 or not text[:start].strip(" \"'“‘(["):
            written = written[:1].upper() + written[1:] if text[start : start + 1].isupper() else written
        out.append(Resolution(start, end, m.group(0), written, kind))
    return out


# -- guards --------------------------------------------------------------------------------------


def _stands_alone(text: str, m: re.Match[str], kind: str, names_a_week: bool) -> bool:
    """Whether the expression names a time relative to the turn (see "Left unchanged")."""
    start, end = m.start(), m.end()
    after, before = text[end:], text[:start]
    if re.match(r"['’]s\b|-\w", after) or re.search(r"\w-$", before):
        return False  # "last week's game", "last-minute"
    word = _WORD_BEFORE.search(before)
    if word and word.group(1).lower() in _NOT_AFTER and not re.search(r"[.,;:!?)]\s*$", before):
        return False
    if _DATE_AFTER.match(after) or _DATE_BEFORE.search(before):
        return False
    titled = kind in ("yesterday", "today", "tomorrow", "tonight") and m.group(0)[0].isupper()
    if titled and before.strip() and before.rstrip()[-1] not in ".!?:\"'“(":
        return False  # "the song Yesterday"
    groups = m.groupdict()
    if groups.get("wd"):
        wd = groups["wd"]
        if wd.lower() in _CAPITALISED_ONLY and not wd[0].isupper():
            return False
        if _PLURAL_PART_AFTER.match(after):
            return False  # "on Monday evenings": a habit
        if names_a_week and not groups.get("wk") and groups.get("q", "").lower() in ("on", "this"):
            return False  # a day of the week the fact names elsewhere
    mo = groups.get("mo")
    return not (mo and mo.lower() in _VERB_MONTHS and not mo[0].isupper())


# -- tense ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    text: str
    start: int
    end: int

    def tense(self) -> str | None:
        """The tense of the marker nearest the expression: left of it first, then right."""
        markers = _markers(self.text)
        left = [(pos, t) for pos, end, t in markers if end <= self.start]
        if left:
            return max(left)[1]
        right = [(pos, t) for pos, _, t in markers if pos >= self.end]
        return min(right)[1] if right else None


def _markers(text: str) -> list[tuple[int, int, str]]:
    out = [(m.start(), m.end(), FUTURE) for m in _FUTURE_RE.finditer(text)]
    out += [
        (m.start(), m.end(), FUTURE)
        for m in _PROGRESSIVE_RE.finditer(text)
        if m.group("ing").lower() not in _STATIVE_ING
    ]
    out += [(m.start(), m.end(), PAST) for m in _PAST_RE.finditer(text)]
    previous = ""
    for m in _WORD_RE.finditer(text):
        word = m.group(0).lower()
        if word in _IRREGULAR_PAST or (
            len(word) > 4
            and word.endswith("ed")
            and word not in _NOT_PAST_ED
            and previous not in _ED_ADJECTIVE_AFTER
            and not previous.endswith(("'s", "'re", "'m"))
        ):
            out.append((m.start(), m.end(), PAST))
        previous = word
    return out


# -- what each expression names ------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    preposition: str  # "on", "in", "over"...; "" for a vague phrase that carries its own
    obj: str  # "2023-05-07", "the week of 2023-05-01", "a few days before 2023-05-08"
    around: bool = False  # "about two weeks ago": around <obj>


def _iso(day: date) -> str:
    return day.isoformat()


def _named(day: date) -> str:
    return f"{WEEKDAY_NAMES[day.weekday()]} {day.isoformat()}"


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, 1)


def _month(day: date) -> str:
    return f"{MONTH_NAMES[day.month - 1]} {day.year}"


def _year(year: int) -> str:
    if not 1 <= year <= 9999:
        raise ValueError(year)
    return str(year)


def _on(day: date, part: str | None = None, named: bool = False) -> _Answer:
    text = _named(day) if named else _iso(day)
    return _Answer("on", f"the {part.lower()} of {text}" if part else text)


def _number(n: str) -> int | None:
    """A count, or None for a vague one ("a few")."""
    n = " ".join(n.lower().split())
    if n.isdigit():
        return int(n)
    return _NUMBER_WORDS.get(n)


def _shifted(day: date, n: int, unit: str) -> _Answer:
    """The day, week, month or year ``n`` units from ``day`` (negative: back)."""
    if unit == "day":
        return _on(day + timedelta(days=n))
    if unit == "week":
        return _Answer("in", f"the week of {_iso(_monday(day + timedelta(weeks=n)))}")
    if unit == "month":
        return _Answer("in", _month(_add_months(day, n)))
    return _Answer("in", _year(day.year + n))


def _counted(m: re.Match[str], day: date, sign: int) -> _Answer | None:
    """ "N units ago" (sign -1) or "in N units" (sign +1), with its modifier."""
    unit, n_words = m.group("unit").lower(), m.group("n")
    mod = " ".join((m.group("mod") or "").lower().split())
    n = _number(n_words)
    relation = "before" if sign < 0 else "after"
    if n is None or mod in _BOUNDS:
        plural = unit if n_words.lower() in ("a", "an", "one", "1") else unit + "s"
        lead = f"{mod} " if mod else ""
        return _Answer("", f"{lead}{n_words} {plural} {relation} {_iso(day)}")
    if n > 400:
        return None
    answer = _shifted(day, sign * n, unit)
    return _Answer(answer.preposition, answer.obj, around=mod in _APPROX)


def _weekday(m: re.Match[str], day: date, ctx: _Context) -> _Answer | None:
    target = _WEEKDAYS[m.group("wd").lower()]
    q = " ".join(m.group("q").lower().split())
    part, week = m.group("part"), m.group("wk")
    if week and m.group("wkunit").lower() == "weekend":
        if target < 5:
            return None  # "on Monday last weekend" names no day
        saturday = _saturday(week.lower(), day, ctx)
        return _on(saturday + timedelta(days=target - 5), part, named=True)
    if week:
        monday = _monday(day) + timedelta(weeks={"last": -1, "this": 0, "next": 1}[week.lower()])
        return _on(monday + timedelta(days=target), part, named=True)
    back = (day.weekday() - target) % 7
    ahead = (target - day.weekday()) % 7
    if q in ("last", "this past"):
        return _on(day - timedelta(days=back or 7), part, named=True)
    if q in ("next", "this coming"):
        return _on(day + timedelta(days=ahead or 7), part, named=True)
    if back == 0:
        return _on(day, part, named=True)
    if ctx.tense() == PAST:
        return _on(day - timedelta(days=back), part, named=True)
    return _on(day + timedelta(days=ahead), part, named=True)


def _weekend(m: re.Match[str], day: date, ctx: _Context) -> _Answer:
    q = " ".join((m.group("q") or "").lower().split())
    preposition = (m.group("p") or "on").lower()
    return _Answer(preposition, f"the weekend of {_iso(_saturday(q, day, ctx))}")


def _saturday(q: str, day: date, ctx: _Context) -> date:
    """The Saturday of the weekend "last", "this", "next"... (or "" for "the weekend") names."""
    if q == "last":
        return _monday(day) - timedelta(days=2)
    if q in ("next", "this coming"):
        return day + timedelta(days=(5 - day.weekday()) % 7 or 7)
    if q == "this past" or ctx.tense() == PAST:
        return day - timedelta(days=(day.weekday() - 5) % 7)  # the latest Saturday not after D
    return _monday(day) + timedelta(days=5)


_STEP = {"last": -1, "this": 0, "next": 1, "before last": -2, "after next": 2}


def _unit(unit: str) -> Callable[[re.Match[str], date, _Context], _Answer]:
    def read(m: re.Match[str], day: date, ctx: _Context) -> _Answer:
        return _shifted(day, _STEP[" ".join(m.group("q").lower().split())], unit)

    return read


def _named_month(m: re.Match[str], day: date, ctx: _Context) -> _Answer:
    month = _MONTHS[m.group("mo").lower()]
    q = " ".join(m.group("q").lower().split())
    if q in ("last", "this past"):
        year = day.year if month < day.month else day.year - 1
    elif q in ("next", "this coming"):
        year = day.year if month > day.month else day.year + 1
    else:
        year = day.year
    return _Answer("in", f"{MONTH_NAMES[month - 1]} {_year(year)}")


def _season(m: re.Match[str], day: date, ctx: _Context) -> _Answer:
    """Meteorological seasons of the northern hemisphere: spring March-May, summer June-August,
    autumn September-November, winter December-February (named by its two years)."""
    name = m.group("se").lower()
    q = " ".join(m.group("q").lower().split())
    if name == "winter":
        # A winter is named by the year it starts in (December); January and February belong to
        # the winter that started the December before.
        current = day.year if day.month == 12 else day.year - 1
        in_it = day.month in (12, 1, 2)
        if q in ("last", "this past"):
            start = current - 1 if in_it else current
        elif q in ("next", "this coming"):
            start = current + 1
        else:
            start = current if in_it or day.month <= 6 else current + 1
        return _Answer("in", f"winter {_year(start)}-{(start + 1) % 100:02d}")
    first, word = _SEASONS[name]
    started = day.month >= first
    ended = day.month >= first + 3
    if q in ("last", "this past"):
        year = day.year if ended else day.year - 1
    elif q in ("next", "this coming"):
        year = day.year + 1 if started else day.year
    else:
        year = day.year
    return _Answer("in", f"{word} {_year(year)}")


def _future_only(m: re.Match[str], day: date, ctx: _Context) -> _Answer | None:
    return _counted(m, day, +1) if ctx.tense() == FUTURE else None


_Reader = Callable[[re.Match[str], date, _Context], "_Answer | None"]
_READERS: dict[str, _Reader] = {
    "day_before_yesterday": lambda m, d, c: _on(d - timedelta(days=2)),
    "day_after_tomorrow": lambda m, d, c: _on(d + timedelta(days=2)),
    "night_before_last": lambda m, d, c: _on(d - timedelta(days=2), "night"),
    "yesterday": lambda m, d, c: _on(d - timedelta(days=1), m.group("part")),
    "last_night": lambda m, d, c: _on(d - timedelta(days=1), "night"),
    "tomorrow": lambda m, d, c: _on(d + timedelta(days=1), m.group("part")),
    "today": lambda m, d, c: _on(d),
    "tonight": lambda m, d, c: _on(d, "night"),
    "this_part": lambda m, d, c: _on(d, m.group("part")),
    "weekday": _weekday,
    "weekend": _weekend,
    "week_far": _unit("week"),
    "week": _unit("week"),
    "month_far": _unit("month"),
    "month": _unit("month"),
    "year_far": _unit("year"),
    "year": _unit("year"),
    "named_month": _named_month,
    "season": _season,
    "ago": lambda m, d, c: _counted(m, d, -1),
    "from_now": lambda m, d, c: _counted(m, d, +1),
    "in_n": _future_only,
    "other_day": lambda m, d, c: _Answer("", f"a few days before {_iso(d)}"),
}


def _phrase(text: str, m: re.Match[str], kind: str, answer: _Answer) -> str:
    """The words that replace the expression: its date with "on"/"in", with "earlier"/"later"
    or "around" kept, and without a preposition of its own after one ("since 2023-05-07") or as
    the subject of a sentence ("Today is their birthday" -> "2023-05-08 is their birthday")."""
    groups = m.groupdict()
    if kind in _DAY_WORDS and _SUBJECT_AFTER.match(text[m.end() :]):
        return answer.obj
    along = (groups.get("along") or "").lower()
    if along:
        return f"{along} {answer.preposition} {answer.obj}".replace("  ", " ")
    if answer.around:
        return f"around {answer.obj}"
    word = _WORD_BEFORE.search(text[: m.start()])
    if word and kind.startswith("year") and word.group(1).lower() in _YEAR_NOUNS:
        return answer.obj  # "since November last year" -> "since November 2022"
    follows_preposition = bool(word) and word.group(1).lower() in _PREPOSITIONS
    follows_preposition = follows_preposition and not re.search(r"[.,;:!?)]\s*$", text[: m.start()])
    if groups.get("p") or not answer.preposition or follows_preposition:
        if groups.get("p") and follows_preposition:
            return answer.obj
        return f"{answer.preposition} {answer.obj}".strip() if groups.get("p") else answer.obj
    return f"{answer.preposition} {answer.obj}"
