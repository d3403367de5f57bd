"""Dates in a question: the day, month, year or relative span it names, as inclusive windows.

``query_windows("what did I do on 12 May?", today)`` gives the window 12 May (of the most recent
year in which 12 May is not after ``today``). What is read (case-insensitive):

* a day: ``2026-05-12``, ``12 May``, ``12th of May 2026``, ``May 12``, ``May 12th, 2026``;
* a month: ``March 2026``, ``2026-03``, and a month name after a cue word (``in March``,
  ``during May``, ``since June``, ``last March``, ``early April``...). ``May`` alone is a month
  only after such a cue, so "May I ask" names no date;
* a year after a cue word: ``in 2025``, ``during 2024``;
* relative to ``today``: ``today``, ``yesterday``, ``the day before yesterday``, ``N days ago``
  (that day), ``N weeks ago`` (the 7 days around that day), ``N months ago`` / ``N years ago``
  (that calendar month or year), ``last/this week`` (Monday to Sunday), ``last/this weekend``,
  ``last/this month``, ``last/this year``, ``the past N days/weeks/months`` (up to today),
  ``last Monday`` (the latest Monday before today);
* ranges: ``between 3 and 10 May``, ``from March to May 2026``; ``since March`` runs to today.

A date without a year is the latest such date not after ``today`` (29 February: the latest leap
day), and also the next one when that is at most 60 days ahead (a plan asked about). A date that does not exist (31 April, 29 February 2025) names nothing. Weeks start on
Monday. ``asks_current_state`` says whether a question is about how things are now ("now",
"currently", "still", "these days", "anymore", "lately", "latest"...), the only questions where
recency counts in the ranking.

``content_windows`` reads the explicit dates a fact states ("dentist on 3 June"); a date without
a year there is the one nearest the fact's own date, since facts mention plans as often as past
events. Written here rather than taken from a parsing library: the ranking needs a window with
its granularity (a day, a month, a week), not a point in time, and a phrase like "May I" must not
read as a month; a general parser gives points, guesses on such words, and costs milliseconds a
question (see design §5.7).
"""

import calendar
import re
from dataclasses import dataclass, field
from datetime import date, timedelta

_MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
_WEEKDAYS = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "a couple of": 2,
    "couple of": 2,
    "three": 3,
    "a few": 3,
    "few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_MONTH = r"(?P<{name}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_NUM = r"(?P<n>\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + ")"
_DAY = r"(?P<{name}>\d{{1,2}})(?:st|nd|rd|th)?"
_YEAR = r"(?P<{name}>(?:19|20)\d{{2}})"
# A number that counts or times something is no day of the month ("march 3 times", "May 5 pm").
_NOT_A_DAY = r"(?!\s*(?:am\b|pm\b|a\.m|p\.m|:|x\b|times?\b|hours?\b|min|days?\b|weeks?\b|months?\b|years?\b|km\b|kg\b|miles?\b|%|percent))"
_CUE = r"(?P<cue>in|during|since|until|till|through|by|of|from|early|mid|late|last|this|past|before|after)"
_YEAR_CUE = r"(?P<cue>in|during|since|until|till|through|from|early|mid|late|before|after)"


def _m(name: str) -> str:
    return _MONTH.format(name=name)


def _d(name: str) -> str:
    return _DAY.format(name=name)


def _y(name: str) -> str:
    return _YEAR.format(name=name)


# Absolute dates, most specific first (a span once matched is not read again).
_ABSOLUTE = [
    ("iso_day", re.compile(r"\b(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})\b")),
    (
        "range_days",  # between 3 and 10 May (2026); 3-10 May
        re.compile(
            rf"\b(?:between\s+|from\s+)?(?:the\s+)?{_d('d1')}\s*(?:-|–|to|and|until|till|through)\s*"
            rf"(?:the\s+)?{_d('d2')}(?:\s+of)?\s+{_m('mo')}(?:,?\s+{_y('y')})?\b"
        ),
    ),
    (
        "day_month",  # 12 May, the 12th of May 2026
        re.compile(rf"\b(?:the\s+)?{_d('d')}(?:\s+of)?\s+{_m('mo')}(?:,?\s+{_y('y')})?\b"),
    ),
    (
        "month_day",  # May 12, May 12th, 2026
        re.compile(rf"\b{_m('mo')}\s+(?:the\s+)?{_d('d')}\b{_NOT_A_DAY}(?:,?\s+{_y('y')})?"),
    ),
    ("iso_month", re.compile(r"\b(?P<y>\d{4})-(?P<mo>\d{2})\b")),
    ("month_year", re.compile(rf"\b{_m('mo')}(?:\s+of)?,?\s+{_y('y')}\b")),
]
_CUED = [
    ("month", re.compile(rf"\b{_CUE}\s+(?:the\s+)?(?:month\s+of\s+)?{_m('mo')}\b")),
    ("year", re.compile(rf"\b{_YEAR_CUE}\s+(?:the\s+year\s+)?{_y('y')}\b")),
]
_RELATIVE = [
    ("day_before_yesterday", re.compile(r"\bthe\s+day\s+before\s+yesterday\b")),
    ("yesterday", re.compile(r"\byesterday\b")),
    ("today", re.compile(r"\btoday\b")),
    ("ago", re.compile(rf"\b{_NUM}\s+(?P<unit>day|week|month|year)s?\s+ago\b")),
    ("past_n", re.compile(rf"\b(?:last|past|previous)\s+{_NUM}\s+(?P<unit>day|week|month|year)s?\b")),
    ("weekend", re.compile(r"\b(?P<which>last|this|past)\s+weekend\b")),
    ("unit", re.compile(r"\b(?P<which>last|this|previous|past)\s+(?P<unit>week|month|year)\b")),
    (
        "weekday",
        re.compile(r"\b(?P<which>last|this\s+past|this|on)\s+(?P<wd>" + "|".join(_WEEKDAYS) + r")\b(?!s)"),
    ),
]
UPCOMING_DAYS = 60
_SPAN_JOIN = re.compile(r"^\s*(?:-|–|to|until|till|through|and)\s*$")
_SPAN_OPEN = re.compile(r"\b(?:between|from)\s*$")
_CURRENT = re.compile(
    r"\b(?:now|nowadays|currently|current|still|these\s+days|at\s+the\s+moment|at\s+present|"
    r"any\s?more|lately|recently|latest|most\s+recent|newest|right\s+now|so\s+far)\b"
)


@dataclass(frozen=True)
class DateWindow:
    """An inclusive range of days a question (or a fact) names, and the words that named it."""

    start: date
    end: date
    text: str

    def contains(self, day: date) -> bool:
        return self.start <= day <= self.end


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _month_window(year: int, month: int, text: str) -> DateWindow:
    return DateWindow(date(year, month, 1), _month_end(year, month), text)


def _add_months(day: date, months: int) -> date:
    """``day`` moved by whole months, clipped to the month's end (31 March - 1 month = 28/29 Feb)."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _number(text: str) -> int:
    text = " ".join(text.split())
    return int(text) if text.isdigit() else _NUMBERS[text]


def _latest_day(month: int, day: int, today: date) -> date | None:
    """The latest ``month``/``day`` not after ``today`` (for 29 February, the latest leap day)."""
    for year in range(today.year, today.year - 9, -1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue  # 29 February in a common year; 31 April never
        if candidate <= today:
            return candidate
    return None


def _nearest_day(month: int, day: int, around: date) -> date | None:
    """The ``month``/``day`` nearest ``around`` (for a fact that mentions a date without a year)."""
    found = []
    for year in range(around.year - 4, around.year + 5):
        try:
            found.append(date(year, month, day))
        except ValueError:
            continue
    return min(found, key=lambda d: (abs((d - around).days), d)) if found else None


def _day(year: str | None, month: int, day: int, ref: date, nearest: bool) -> date | None:
    if year:
        try:
            return date(int(year), month, day)
        except ValueError:
            return None
    return _nearest_day(month, day, ref) if nearest else _latest_day(month, day, ref)


def _month_of(year: str | None, month: int, ref: date, nearest: bool) -> tuple[int, int]:
    if year:
        return int(year), month
    if nearest:
        candidates = [(y, month) for y in (ref.year - 1, ref.year, ref.year + 1)]
        return min(candidates, key=lambda ym: abs((date(ym[0], ym[1], 15) - ref).days))
    return (ref.year, month) if month <= ref.month else (ref.year - 1, month)


def _absolute(kind: str, m: re.Match[str], ref: date, nearest: bool) -> DateWindow | None:
    text = m.group(0).strip()
    g = m.groupdict()
    month = _MONTHS[g["mo"]] if g.get("mo") and not g["mo"].isdigit() else int(g.get("mo") or 0)
    if not 1 <= month <= 12:
        return None
    if kind in ("iso_day", "day_month", "month_day"):
        day = _day(g.get("y"), month, int(g["d"]), ref, nearest)
        return DateWindow(day, day, text) if day else None
    if kind == "range_days":
        first, last = int(g["d1"]), int(g["d2"])
        if first > last:
            return None
        end = _day(g.get("y"), month, last, ref, nearest)
        if end is None:
            return None
        try:
            start = date(end.year, month, first)
        except ValueError:
            return None
        return DateWindow(start, end, text)
    year, month = _month_of(g.get("y"), month, ref, nearest)
    return _month_window(year, month, text)


def _cued(kind: str, m: re.Match[str], today: date) -> DateWindow | None:
    text = m.group(0).strip()
    cue = m.group("cue")
    if kind == "year":
        year = int(m.group("y"))
        window = DateWindow(date(year, 1, 1), date(year, 12, 31), text)
    else:
        month = _MONTHS[m.group("mo")]
        year = today.year if month <= today.month else today.year - 1
        if cue == "last" and month == today.month:
            year -= 1  # "last May" asked in May: the May before
        if cue == "this":
            year = today.year
        window = _month_window(year, month, text)
    if cue == "since":
        return DateWindow(window.start, max(today, window.start), text)
    if cue in ("before", "after", "until", "till", "by"):
        return None  # open-ended on one side: not a window to favour
    return window


def _relative(kind: str, m: re.Match[str], today: date) -> DateWindow | None:
    text = m.group(0).strip()
    g = m.groupdict()
    if kind == "today":
        return DateWindow(today, today, text)
    if kind == "yesterday":
        return DateWindow(today - timedelta(days=1), today - timedelta(days=1), text)
    if kind == "day_before_yesterday":
        return DateWindow(today - timedelta(days=2), today - timedelta(days=2), text)
    monday = today - timedelta(days=today.weekday())
    if kind in ("ago", "past_n"):
        n, unit = _number(g["n"]), g["unit"]
        if n > 500:
            return None
        if kind == "past_n":
            start = {
                "day": today - timedelta(days=n),
                "week": today - timedelta(weeks=n),
                "month": _add_months(today, -n),
                "year": _add_months(today, -12 * n),
            }[unit]
            return DateWindow(start, today, text)
        if unit == "day":
            day = today - timedelta(days=n)
            return DateWindow(day, day, text)
        if unit == "week":
            day = today - timedelta(weeks=n)
            return DateWindow(day - timedelta(days=3), day + timedelta(days=3), text)
        if unit == "month":
            day = _add_months(today, -n)
            return _month_window(day.year, day.month, text)
        return DateWindow(date(today.year - n, 1, 1), date(today.year - n, 12, 31), text)
    if kind == "weekend":
        saturday = monday + timedelta(days=5) - (timedelta(weeks=1) if g["which"] != "this" else timedelta())
        return DateWindow(saturday, saturday + timedelta(days=1), text)
    if kind == "unit":
        unit = g["unit"]
        if g["which"] == "past":  # the past week / month / year: up to today
            start = {
                "week": today - timedelta(weeks=1),
                "month": _add_months(today, -1),
                "year": _add_months(today, -12),
            }[unit]
            return DateWindow(start, today, text)
        last = g["which"] != "this"
        if unit == "week":
            start = monday - timedelta(weeks=1) if last else monday
            return DateWindow(start, start + timedelta(days=6) if last else today, text)
        if unit == "month":
            if last:
                day = _add_months(today.replace(day=1), -1)
                return _month_window(day.year, day.month, text)
            return DateWindow(today.replace(day=1), today, text)
        if last:
            return DateWindow(date(today.year - 1, 1, 1), date(today.year - 1, 12, 31), text)
        return DateWindow(date(today.year, 1, 1), today, text)
    # a weekday: "last Monday" is the latest before today; "on/this Monday" may be today
    back = (today.weekday() - _WEEKDAYS[g["wd"]]) % 7
    if back == 0 and g["which"] in ("last", "this past"):
        back = 7
    day = today - timedelta(days=back)
    return DateWindow(day, day, text)


def _scan(
    text: str, patterns: list[tuple[str, re.Pattern[str]]], taken: list[tuple[int, int]]
) -> list[tuple[int, int, str, re.Match[str]]]:
    found = []
    for kind, pattern in patterns:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), m.end(), kind, m))
    return found


@dataclass
class _Span:
    start: int
    end: int
    window: DateWindow
    yearless: bool = False  # a day or month named without its year
    upcoming: list[DateWindow] = field(default_factory=list)


def _windows(text: str, ref: date, nearest: bool, relative: bool) -> list[DateWindow]:
    lowered = text.lower()
    taken: list[tuple[int, int]] = []
    spans: list[_Span] = []
    for start, end, kind, m in _scan(lowered, _ABSOLUTE, taken):
        window = _absolute(kind, m, ref, nearest)
        if window:
            yearless = not m.groupdict().get("y")
            ahead = _upcoming(window, ref) if yearless and not nearest else []
            spans.append(_Span(start, end, window, yearless, ahead))
    if relative:
        for start, end, kind, m in _scan(lowered, _CUED, taken):
            window = _cued(kind, m, ref)
            if window:
                plain = kind == "month" and m.group("cue") not in ("last", "this", "past", "since")
                spans.append(_Span(start, end, window, plain, _upcoming(window, ref) if plain else []))
        for start, end, kind, m in _scan(lowered, _RELATIVE, taken):
            window = _relative(kind, m, ref)
            if window:
                spans.append(_Span(start, end, window))
    spans.sort(key=lambda s: s.start)
    # "from March to May", "between 3 May and 9 June 2028": two windows joined into one span (a
    # first end named without its year takes the second's).
    merged: list[_Span] = []
    for span in spans:
        if merged:
            prev = merged[-1]
            joiner = lowered[prev.end : span.start]
            opened = _SPAN_OPEN.search(lowered[: prev.start]) or joiner.strip() not in ("and", "")
            first = prev.window.start
            if prev.yearless and not span.yearless:
                rebased = _valid(span.window.end.year, first.month, first.day)
                if rebased and rebased > span.window.end:
                    rebased = _valid(span.window.end.year - 1, first.month, first.day)
                first = rebased or first
            if _SPAN_JOIN.match(joiner) and opened and first <= span.window.end:
                label = text[prev.start : span.end].strip()
                merged[-1] = _Span(prev.start, span.end, DateWindow(first, span.window.end, label))
                continue
        merged.append(span)
    out = [DateWindow(s.window.start, s.window.end, text[s.start : s.end].strip()) for s in merged]
    return out + [w for s in merged for w in s.upcoming]


def _upcoming(window: DateWindow, today: date) -> list[DateWindow]:
    """A year-less date names the latest past one, and the next one too when that is at most
    ``UPCOMING_DAYS`` ahead ("what is on 3 December?" asked in late November means this one)."""
    start, end = window.start, window.end
    if start == end:  # a day (29 February: the next leap day)
        nxt = next(
            (
                d
                for d in (_valid(y, start.month, start.day) for y in range(today.year, today.year + 9))
                if d and d > today
            ),
            None,
        )
        found = DateWindow(nxt, nxt, window.text) if nxt else None
    elif start.day == 1 and end == _month_end(end.year, end.month) and start.month == end.month:  # a month
        year = today.year if start.month > today.month else today.year + 1
        found = _month_window(year, start.month, window.text)
    else:  # a range of days within a month
        first, last = _valid(start.year + 1, start.month, start.day), _valid(end.year + 1, end.month, end.day)
        found = DateWindow(first, last, window.text) if first and last else None
    if found and today < found.start and (found.start - today).days <= UPCOMING_DAYS:
        return [found]
    return []


def _valid(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def query_windows(query: str, today: date) -> list[DateWindow]:
    """The date windows a question names, in the order it names them (none: an empty list)."""
    return _windows(query, today, nearest=False, relative=True)


_DIGIT = re.compile(r"\d")


def content_windows(content: str, fact_date: date) -> list[DateWindow]:
    """The explicit dates a fact states (no relative phrases), year-less ones nearest its date."""
    if not _DIGIT.search(content):  # every pattern of ``_ABSOLUTE`` needs a digit
        return []
    return _windows(content, fact_date, nearest=True, relative=False)


def asks_current_state(query: str) -> bool:
    """Whether the question asks how things stand now ("now", "currently", "still"...)."""
    return bool(_CURRENT.search(query.lower()))
