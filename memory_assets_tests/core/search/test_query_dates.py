from datetime import date

import pytest

from memory_assets.core.search.query_dates import asks_current_state, content_windows, query_windows

SUNDAY = date(2026, 11, 29)


def spans(query: str, today: date = SUNDAY) -> list[tuple[str, str]]:
    return [(w.start.isoformat(), w.end.isoformat()) for w in query_windows(query, today)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what did I do on 12 May?", [("2026-05-12", "2026-05-12")]),
        ("what did i do on may 12th", [("2026-05-12", "2026-05-12")]),
        ("the 3rd of May 2025", [("2025-05-03", "2025-05-03")]),
        ("May 12th, 2025", [("2025-05-12", "2025-05-12")]),
        ("notes from 2026-07-04", [("2026-07-04", "2026-07-04")]),
        ("what happened in March 2026", [("2026-03-01", "2026-03-31")]),
        ("anything in 2026-04?", [("2026-04-01", "2026-04-30")]),
        ("what did I do in March", [("2026-03-01", "2026-03-31")]),
        ("last November", [("2025-11-01", "2025-11-30")]),
        ("since June", [("2026-06-01", "2026-11-29")]),
        ("what did I read in 2025", [("2025-01-01", "2025-12-31")]),
        ("what happened between 3 and 10 May", [("2026-05-03", "2026-05-10")]),
        ("from March to May 2026", [("2026-03-01", "2026-05-31")]),
        ("on 12 May and 14 June", [("2026-05-12", "2026-05-12"), ("2026-06-14", "2026-06-14")]),
        ("what did I do yesterday", [("2026-11-28", "2026-11-28")]),
        ("the day before yesterday", [("2026-11-27", "2026-11-27")]),
        ("what did I do 3 days ago", [("2026-11-26", "2026-11-26")]),
        ("who did I meet two weeks ago", [("2026-11-12", "2026-11-18")]),
        ("what did I do last week", [("2026-11-16", "2026-11-22")]),
        ("in the past 3 days", [("2026-11-26", "2026-11-29")]),
        ("last weekend", [("2026-11-21", "2026-11-22")]),
        ("last Monday", [("2026-11-23", "2026-11-23")]),
        ("this month", [("2026-11-01", "2026-11-29")]),
        ("last year", [("2025-01-01", "2025-12-31")]),
    ],
)
def test_days_months_and_relative_spans_parse_to_windows(query: str, expected: list[tuple[str, str]]) -> None:
    assert spans(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "May I ask what Priya drinks?",
        "what does the user like to do on weekends",
        "what is my sister's job",
        "meeting of 2000 users",
        "I march 3 times a week",
        "what do I do on Mondays",
    ],
)
def test_words_that_only_look_like_dates_name_none(query: str) -> None:
    assert query_windows(query, SUNDAY) == []


def test_month_boundaries() -> None:
    # "last month" on the 31st: the whole previous month, however long it is.
    assert spans("last month", date(2026, 3, 31)) == [("2026-02-01", "2026-02-28")]
    assert spans("a month ago", date(2026, 3, 31)) == [("2026-02-01", "2026-02-28")]
    assert spans("last month", date(2026, 1, 15)) == [("2025-12-01", "2025-12-31")]
    # A week and a count of days that cross a month (and a year) boundary.
    assert spans("last week", date(2026, 3, 2)) == [("2026-02-23", "2026-03-01")]
    assert spans("3 days ago", date(2026, 3, 1)) == [("2026-02-26", "2026-02-26")]
    assert spans("yesterday", date(2027, 1, 1)) == [("2026-12-31", "2026-12-31")]
    assert spans("in the past 2 weeks", date(2026, 1, 5)) == [("2025-12-22", "2026-01-05")]
    # 31 April does not exist: no window rather than a wrong one.
    assert spans("on 31 April") == []


def test_leap_days() -> None:
    assert spans("last month", date(2028, 3, 31)) == [("2028-02-01", "2028-02-29")]
    assert spans("in February 2028") == [("2028-02-01", "2028-02-29")]
    assert spans("on 29 February 2028") == [("2028-02-29", "2028-02-29")]
    assert spans("29 Feb 2025") == []  # not a leap year
    # Without a year: the latest leap day not after today, and the next one when it is close.
    assert spans("what happened on 29 February") == [("2024-02-29", "2024-02-29")]
    assert spans("on 29 February", date(2028, 1, 15)) == [
        ("2024-02-29", "2024-02-29"),
        ("2028-02-29", "2028-02-29"),
    ]
    assert spans("between 28 February and 1 March 2028") == [("2028-02-28", "2028-03-01")]


def test_a_date_without_a_year_is_the_latest_past_one_and_a_close_upcoming_one() -> None:
    assert spans("what is on 3 December?") == [("2025-12-03", "2025-12-03"), ("2026-12-03", "2026-12-03")]
    assert spans("what did I do on 12 May?") == [("2026-05-12", "2026-05-12")]  # next May is far
    assert spans("in December") == [("2025-12-01", "2025-12-31"), ("2026-12-01", "2026-12-31")]
    assert spans("last December") == [("2025-12-01", "2025-12-31")]


def test_dates_a_fact_states_are_read_around_its_own_date() -> None:
    [window] = content_windows("Has a dentist appointment on 3 June at 9 AM", date(2026, 5, 20))
    assert (window.start, window.end) == (date(2026, 6, 3), date(2026, 6, 3))
    [window] = content_windows("Booked flights to Tokyo for 5 January", date(2026, 12, 20))
    assert window.start == date(2027, 1, 5)
    assert content_windows("Went running yesterday with Ana", date(2026, 5, 20)) == []  # relative: not read


def test_current_state_questions() -> None:
    for query in (
        "Where does Marco live now?",
        "Which editor do I currently use?",
        "Does Ana still work at the bakery?",
        "What am I reading these days?",
        "Is he not vegetarian anymore?",
    ):
        assert asks_current_state(query), query
    for query in ("Where did Marco live in 2025?", "What does Ana do for work?", "What did I do on 12 May?"):
        assert not asks_current_state(query), query
