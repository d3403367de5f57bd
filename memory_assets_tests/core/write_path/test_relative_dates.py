"""Dates made absolute (``relative_dates.py``): the rule set, expression by expression, then on real
turns through the write path (``process_turn`` with the rule extractor, and with a chat model),
the classifier on a restated dated fact, and a "when" question finding the dated fact."""

import json
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.models.language_model import ChatClient
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings
from memory_assets.core.write_path.chat_extractor import ChatExtractor
from memory_assets.core.write_path.extraction import Turn
from memory_assets.core.write_path.process import process_turn
from memory_assets.core.write_path.relative_dates import resolutions, resolve, turn_date
from memory_assets.core.write_path.remember import remember
from memory_assets.core.write_path.rule_extractor import RuleExtractor
from memory_assets_tests.core.models.test_language_model import ChatServer, completion

MONDAY = date(2023, 5, 8)  # the turn's day for the table below: a Monday
SUNDAY = date(2023, 5, 14)

# (what the fact says, what it is written as), said on MONDAY.
RULES = [
    # days
    ("Went to a support group yesterday.", "Went to a support group on 2023-05-07."),
    ("Ran 5 km the day before yesterday.", "Ran 5 km on 2023-05-06."),
    ("Flies to Rome tomorrow.", "Flies to Rome on 2023-05-09."),
    ("Is moving flats the day after tomorrow.", "Is moving flats on 2023-05-10."),
    ("Finished the report today.", "Finished the report on 2023-05-08."),
    ("Today is their birthday.", "2023-05-08 is their birthday."),
    ("Yesterday went to the zoo with Ana.", "On 2023-05-07 went to the zoo with Ana."),
    ("Has been sick since yesterday.", "Has been sick since 2023-05-07."),
    ("Has a bunch of tasks for tomorrow.", "Has a bunch of tasks for 2023-05-09."),
    # parts of a day
    ("Had dinner with Ana last night.", "Had dinner with Ana on the night of 2023-05-07."),
    ("Is cooking for friends tonight.", "Is cooking for friends on the night of 2023-05-08."),
    ("Slept badly the night before last.", "Slept badly on the night of 2023-05-06."),
    ("Had a bit of an accident this morning.", "Had a bit of an accident on the morning of 2023-05-08."),
    ("Is flying out tomorrow morning.", "Is flying out on the morning of 2023-05-09."),
    ("Called their mum yesterday evening.", "Called their mum on the evening of 2023-05-07."),
    ("Finished the draft earlier today.", "Finished the draft earlier on 2023-05-08."),
    # N days / weeks / months / years ago
    ("Got a puppy two days ago.", "Got a puppy on 2023-05-06."),
    ("Got a kitten 10 days ago.", "Got a kitten on 2023-04-28."),
    ("Joined a gym two weeks ago.", "Joined a gym in the week of 2023-04-24."),
    ("Bought a car three months ago.", "Bought a car in February 2023."),
    ("Started surfing five years ago.", "Started surfing in 2018."),
    ("Graduated exactly 5 years ago.", "Graduated in 2018."),
    ("Started running about a month ago.", "Started running around April 2023."),
    ("Moved here about three weeks ago.", "Moved here around the week of 2023-04-17."),
    ("Went camping a few weeks ago.", "Went camping a few weeks before 2023-05-08."),
    ("Met Ana a couple of days ago.", "Met Ana a couple of days before 2023-05-08."),
    ("Worked there over 10 years ago.", "Worked there over 10 years before 2023-05-08."),
    ("Bought it the other day.", "Bought it a few days before 2023-05-08."),
    # weeks (start on Monday)
    ("Went hiking last week.", "Went hiking in the week of 2023-05-01."),
    ("Is sick this week.", "Is sick in the week of 2023-05-08."),
    ("Has a deadline next week.", "Has a deadline in the week of 2023-05-15."),
    ("Moved flats the week before last.", "Moved flats in the week of 2023-04-24."),
    ("Finished it earlier this week.", "Finished it earlier in the week of 2023-05-08."),
    # months and years
    ("Started pottery last month.", "Started pottery in April 2023."),
    ("Is going to a conference this month.", "Is going to a conference in May 2023."),
    ("Is planning a trip next month.", "Is planning a trip in June 2023."),
    ("Wants to run a marathon next year.", "Wants to run a marathon in 2024."),
    ("Painted that lake sunrise last year.", "Painted that lake sunrise in 2022."),
    ("Is planning a trip to India later this year.", "Is planning a trip to India later in 2023."),
    ("Has flown twice a month since November last year.", "Has flown twice a month since November 2022."),
    ("Got a new necklace on the 15th of last month.", "Got a new necklace on the 15th of April 2023."),
    ("Visited Oslo last December.", "Visited Oslo in December 2022."),
    ("Is visiting Oslo next December.", "Is visiting Oslo in December 2023."),
    ("Went to Greece last summer.", "Went to Greece in summer 2022."),
    ("Is going to Greece this summer.", "Is going to Greece in summer 2023."),
    ("Skied a lot last winter.", "Skied a lot in winter 2022-23."),
    # weekdays: last / next, and "on" by tense
    ("Won a tournament last Friday.", "Won a tournament on Friday 2023-05-05."),
    ("Joined a new activist group last Tues.", "Joined a new activist group on Tuesday 2023-05-02."),
    ("Has an interview next Wednesday.", "Has an interview on Wednesday 2023-05-10."),
    ("Won their fourth tournament on Friday.", "Won their fourth tournament on Friday 2023-05-05."),
    ("Will see Ana on Friday.", "Will see Ana on Friday 2023-05-12."),
    ("Wants to read that book on Friday.", "Wants to read that book on Friday 2023-05-12."),
    ("Plans to quit their job on Friday.", "Plans to quit their job on Friday 2023-05-12."),
    ("Is so excited about the concert on Friday.", "Is so excited about the concert on Friday 2023-05-12."),
    ("Was so excited about the concert on Friday.", "Was so excited about the concert on Friday 2023-05-05."),
    ("Has a cocktail class on Thursday.", "Has a cocktail class on Thursday 2023-05-11."),
    ("Is going to the gym on Monday.", "Is going to the gym on Monday 2023-05-08."),
    ("Went to church on Sunday morning.", "Went to church on the morning of Sunday 2023-05-07."),
    ("Met Ana on Monday last week.", "Met Ana on Monday 2023-05-01."),
    ("Went to the mall on Saturday last weekend.", "Went to the mall on Saturday 2023-05-06."),
    (
        "Went hiking yesterday and is going again on Friday.",
        "Went hiking on 2023-05-07 and is going again on Friday 2023-05-12.",
    ),
    # weekends
    ("Had a great time last weekend.", "Had a great time on the weekend of 2023-05-06."),
    ("Is hiking with friends this weekend.", "Is hiking with friends on the weekend of 2023-05-13."),
    ("Went camping over the weekend.", "Went camping over the weekend of 2023-05-06."),
    ("Is planning a hike next weekend.", "Is planning a hike on the weekend of 2023-05-13."),
    # ahead, only in the future tense
    ("Is going to move in two weeks.", "Is going to move in the week of 2023-05-22."),
    ("Will visit them in three days.", "Will visit them on 2023-05-11."),
    (
        "Is planning a trip to California in a few weeks.",
        "Is planning a trip to California a few weeks after 2023-05-08.",
    ),
    ("Will see them in about a month.", "Will see them around June 2023."),
    ("Is starting a new job two weeks from now.", "Is starting a new job in the week of 2023-05-22."),
]

# What the rules leave as it is (a habit, a title, a span, no date, an explicit date beside it).
UNCHANGED = [
    "Does yoga on Monday evenings.",
    "Plays tennis on Fridays.",
    "Loves the song Yesterday.",
    "Has not read 'The Last Romantics' yet.",
    'Wrote a poem called "Last Week" for their sister.',
    "Reads 50 books in a year.",
    "Lost 5 kg in two weeks.",
    "Turned 30 last month on February 12th.",
    "Went to their cousin's wedding the last week of May.",
    "Loved last week's episode.",
    "Has been feeling better recently.",
    "Finished their last exam.",
    "Is saving for their next trip.",
    "This may help them sleep.",
    "Has been going to the gym for the past week.",
    "Is planning meals for the next two weeks.",
    "Learned to surf a while ago.",
]


@pytest.mark.parametrize(("said", "written"), RULES)
def test_each_expression_is_written_as_its_date(said: str, written: str) -> None:
    assert resolve(said, MONDAY) == written
    assert resolve(written, MONDAY) == written  # what is written holds nothing left to resolve


@pytest.mark.parametrize("said", UNCHANGED)
def test_what_cannot_be_resolved_is_left_as_it_is(said: str) -> None:
    assert resolve(said, MONDAY) == said and resolutions(said, MONDAY) == []


def test_only_the_week_is_resolved_when_a_weekday_is_a_day_of_that_week() -> None:
    said = "Had leftovers on Monday and Tuesday last week."
    assert resolve(said, MONDAY) == "Had leftovers on Monday and Tuesday in the week of 2023-05-01."


def test_a_quoted_title_keeps_its_words_and_the_rest_is_resolved() -> None:
    said = "Is reading 'Yesterday' tonight."
    assert resolve(said, MONDAY) == "Is reading 'Yesterday' on the night of 2023-05-08."


@pytest.mark.parametrize(
    ("said", "day", "written"),
    [
        # said on a Sunday: the week started on Monday, so "last week" is the one before
        ("Went hiking last week.", SUNDAY, "Went hiking in the week of 2023-05-01."),
        ("Had a great time last weekend.", SUNDAY, "Had a great time on the weekend of 2023-05-06."),
        ("Went camping this weekend.", SUNDAY, "Went camping on the weekend of 2023-05-13."),
        ("Made a baguette last Saturday.", SUNDAY, "Made a baguette on Saturday 2023-05-13."),
        ("Won a race on Sunday.", SUNDAY, "Won a race on Sunday 2023-05-14."),
        # "last Friday" said on a Friday is a week back; "next Friday" a week ahead
        ("Won a race last Friday.", date(2023, 5, 12), "Won a race on Friday 2023-05-05."),
        ("Has a race next Friday.", date(2023, 5, 12), "Has a race on Friday 2023-05-19."),
        # a weekday's past is before the turn, its future after it
        ("Played chess on Wednesday.", date(2023, 5, 9), "Played chess on Wednesday 2023-05-03."),
        ("Is playing chess on Wednesday.", date(2023, 5, 9), "Is playing chess on Wednesday 2023-05-10."),
        # months and seasons across the turn of a year
        ("Skied last month.", date(2023, 1, 15), "Skied in December 2022."),
        ("Visited Oslo last December.", date(2023, 12, 20), "Visited Oslo in December 2022."),
        ("Is visiting Oslo next January.", date(2023, 12, 20), "Is visiting Oslo in January 2024."),
        ("Skied a lot last winter.", date(2024, 1, 15), "Skied a lot in winter 2022-23."),
        ("Is skiing this winter.", date(2023, 10, 1), "Is skiing in winter 2023-24."),
        ("Went to Greece last summer.", date(2023, 9, 10), "Went to Greece in summer 2023."),
        ("Is going to Greece next summer.", date(2023, 1, 10), "Is going to Greece in summer 2023."),
        ("Moved here three months ago.", date(2023, 2, 28), "Moved here in November 2022."),
    ],
)
def test_week_start_tense_and_the_turn_of_a_year(said: str, day: date, written: str) -> None:
    assert resolve(said, day) == written


def test_the_turn_is_read_on_its_utc_day() -> None:
    late_in_berlin = datetime(2023, 5, 8, 1, 30, tzinfo=timezone(timedelta(hours=2)))  # 23:30 UTC on 7 May
    assert turn_date(late_in_berlin) == date(2023, 5, 7)
    assert resolve("Went to a concert yesterday.", late_in_berlin) == "Went to a concert on 2023-05-06."
    assert turn_date(datetime(2023, 5, 8, 9, 0)) == date(2023, 5, 8)  # no offset: read as UTC


def test_a_date_outside_the_calendar_is_left_as_it_is() -> None:
    assert resolve("Started it yesterday.", date(1, 1, 1)) == "Started it yesterday."
    assert resolve("Will finish it tomorrow.", date(9999, 12, 31)) == "Will finish it tomorrow."
    assert resolve("Lived there 900 years ago.", MONDAY) == "Lived there 900 years ago."


def test_resolutions_say_what_was_read_and_where() -> None:
    said = "Went hiking last week and has a race next Friday."
    found = resolutions(said, MONDAY)
    assert [(r.said, r.written, r.kind) for r in found] == [
        ("last week", "in the week of 2023-05-01", "week"),
        ("next Friday", "on Friday 2023-05-12", "weekday"),
    ]
    assert [said[r.start : r.end] for r in found] == ["last week", "next Friday"]


# -- real turns through the write path ------------------------------------------------------------

# Real user messages from LongMemEval (Wu et al. 2024, "LongMemEval: Benchmarking Chat Assistants
# on Long-Term Interactive Memory", MIT licence), ../shared/data/longmemeval-dev/, copied verbatim
# with their session's date: (question id / session id / turn, the session's date, the message,
# the dated fact the write path must write). The rule extractor finds the fact; the write path
# dates it against the session's time.
REAL_TURNS = [
    (
        "gpt4_1d4ab0c9 / answer_febde667_1 / 0",
        "2023/03/22 (Wed) 11:41",
        "I'm planning to make a salad for dinner tonight and I want to use some fresh herbs. Can you "
        "give me some advice on how to keep my herbs fresh for a longer period? By the way, I started "
        "watering my herb garden every morning today, and I'm excited to see them grow.",
        [
            "Is planning to make a salad for dinner on the night of 2023-03-22.",
            "Started watering their herb garden every morning on 2023-03-22, and they're excited to see "
            "them grow.",
        ],
    ),
    (
        "gpt4_ec93e27f / answer_e3aa84c4_2 / 0",
        "2023/02/27 (Mon) 06:17",
        "I'm planning a trip to Japan in May and I was wondering if you could recommend some "
        "eco-friendly accommodations in Tokyo and Osaka? By the way, I just got back from a bus ride "
        "to attend a friend's wedding today, so I'm a bit tired but excited to start planning my next trip!",
        [
            "Just got back from a bus ride to attend a friend's wedding on 2023-02-27, so they're a bit "
            "tired but excited to start planning their next trip.",
        ],
    ),
    (
        "0bc8ad93 / answer_f4ea84fc_1 / 0",
        "2023/02/18 (Sat) 00:56",
        "I'm looking for some information on dinosaurs. I attended a guided tour at the Natural History "
        "Museum yesterday with my dad and was really impressed by the fossil collection on display, "
        "especially the new T-Rex skeleton they acquired. Do you know more about the habitat and "
        "behavior of the T-Rex?",
        [
            "Attended a guided tour at the Natural History Museum on 2023-02-17 with their dad and was "
            "really impressed by the fossil collection on display, especially the new T-Rex skeleton "
            "they acquired.",
        ],
    ),
    (
        "a89d7624 / 733e443a_4 / 0",  # "last Saturday" said on a Sunday: the day before
        "2023/05/28 (Sun) 21:56",
        "I'm thinking of trying out a new recipe for a rustic Italian bread this weekend. Do you have "
        "any tips on how to achieve a crispy crust? By the way, I made a delicious whole wheat baguette "
        "last Saturday, and I'm considering using the same flour for this recipe.",
        ["Made a delicious whole wheat baguette on Saturday 2023-05-27."],
    ),
    (
        "a89d7624 / 733e443a_4 / 8",  # "on Tuesday" in a past-tense sentence: the Tuesday before
        "2023/05/28 (Sun) 21:56",
        "I've had some experience with sourdough starters, although my last attempt at making bread "
        "with it didn't turn out so well. I tried out a new bread recipe using sourdough starter on "
        "Tuesday, but the dough didn't rise as much as I expected, and the bread came out dense and heavy.",
        [
            "Tried out a new bread recipe using sourdough starter on Tuesday 2023-05-23, but the dough "
            "did not rise as much as they expected, and the bread came out dense and heavy.",
        ],
    ),
    (
        "ce6d2d27 / answer_73540165_1 / 4",  # "on Thursday", a plan: the Thursday after
        "2023/06/16 (Fri) 13:26",
        "I think I'll go with the grilled jerk chicken with mango salsa. I've been experimenting with "
        "jerk seasoning lately and I love the flavor it adds to chicken. Do you think I could serve it "
        "with some grilled asparagus and quinoa on the side? And by the way, I have a cocktail-making "
        "class on Thursday, so I'm excited to try out some new recipes.",
        [
            "Has a cocktail-making class on Thursday 2023-06-22, so they're excited to try out some new recipes."
        ],
    ),
    (
        "affe2881 / answer_90de9b4d_1 / 8",
        "2023/05/24 (Wed) 01:31",
        "I'm planning a trip to a nearby lake next weekend and I'm hoping to spot some waterbirds. Do "
        "you think I should bring my spotting scope or would my binoculars be enough?",
        ["Is planning a trip to a nearby lake on the weekend of 2023-05-27."],
    ),
    (
        "gpt4_4929293b / 7fa98614_1 / 0",
        "2023/05/17 (Wed) 19:58",
        "I'm planning a quick getaway in August and I need some help with packing. Can you give me some "
        "tips on what to bring for a week-long summer vacation? By the way, I'm really looking forward "
        "to using my new black off-the-shoulder top and white sneakers from Adidas that I got recently "
        "- I went to the mall with my friends on Saturday last weekend and had a blast trying out "
        "outfits at Zara.",
        ["Went to the mall with their friends on Saturday 2023-05-13."],
    ),
    (
        "gpt4_213fd887 / 10771408_1 / 0",
        "2023/05/24 (Wed) 21:13",
        "I'm planning a trip to Maui and was wondering if you could recommend some good hiking trails "
        "and snorkeling spots. By the way, I just got back from a family trip to Oahu three months ago "
        "and we spent a whole week there, which was amazing but exhausting trying to cater to "
        "everyone's different interests and ages.",
        ["Just got back from a family trip to Oahu in February 2023."],
    ),
]


def session_time(text: str) -> datetime:
    """LongMemEval's session date ("2023/05/28 (Sun) 21:56") as a UTC time."""
    return datetime.strptime(text[:10] + text[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def logged(settings: Settings, day: date) -> list[str]:
    path = settings.archive_dir / f"{day.isoformat()}.md"
    return [f.content for f in read_daily_log(path).facts] if path.exists() else []


def test_the_real_turns_are_copied_as_the_data_set_has_them() -> None:
    """The turns above are LongMemEval's words and dates, unaltered (when the sample is here)."""
    data_dir = Path(__file__).resolve().parents[4] / "shared" / "data" / "longmemeval-dev"
    if not data_dir.is_dir():
        pytest.skip(f"{data_dir} is not on this machine")
    for where, when, text, _ in REAL_TURNS:
        question, session, turn = (part.strip() for part in where.split("/"))
        data = json.loads((data_dir / f"{question}.json").read_text(encoding="utf-8"))
        k = data["haystack_session_ids"].index(session)
        assert data["haystack_dates"][k] == when
        assert data["haystack_sessions"][k][int(turn)]["content"].startswith(text), where


@pytest.mark.parametrize(("where", "when", "text", "facts"), REAL_TURNS, ids=[t[0] for t in REAL_TURNS])
def test_a_real_turn_is_written_with_its_dates_made_absolute(
    settings: Settings, where: str, when: str, text: str, facts: list[str]
) -> None:
    at = session_time(when)
    result = process_turn(
        Turn(text, chat_id="lme", at=at), settings, extractor=RuleExtractor(), reindex=False
    )
    written = logged(settings, at.date())
    assert [f for f in facts if f in written] == facts, written
    assert [f.content for f in result.facts if f.content in facts] == facts
    # nothing relative is left in any fact the turn wrote
    assert [line for line in written if resolutions(line, at)] == []


def test_a_chat_models_facts_are_dated_too(settings: Settings) -> None:
    """The chat extractor's facts go through the same rules: what the model leaves relative is
    resolved, what it made absolute already is kept."""
    server = ChatServer()
    try:
        server.answer_with(
            completion(
                json.dumps(
                    {
                        "facts": [
                            {"content": "Went to a support group yesterday.", "category": "context"},
                            {"content": "Moved to Porto on 2023-04-02.", "category": "personal"},
                        ]
                    }
                )
            )
        )
        extractor = ChatExtractor(ChatClient(server.base_url, "test-model"), RuleExtractor())
        at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        result = process_turn(
            Turn("I went to a support group yesterday.", at=at), settings, extractor=extractor, reindex=False
        )
    finally:
        server.close()
    assert result.extractor == "chat:test-model" and result.fallback is None
    assert logged(settings, at.date()) == [
        "Went to a support group on 2023-05-07.",
        "Moved to Porto on 2023-04-02.",
    ]
    prompt = server.bodies[0]["messages"][1]["content"]
    assert "Date of the turn: 2023-05-08" in prompt  # the model is asked to do the same


def test_a_fact_given_directly_is_written_as_its_writer_put_it(settings: Settings) -> None:
    at = datetime(2023, 5, 8, 9, 0, tzinfo=UTC)
    remember("Dentist appointment tomorrow at 3 pm", settings, at=at)
    assert logged(settings, at.date()) == ["Dentist appointment tomorrow at 3 pm"]


def test_a_restatement_the_same_day_is_a_confirmation_and_another_days_is_written(
    settings: Settings, embedder: Embedder
) -> None:
    """A resolved date is a specific (design §5.6). The same words the same day resolve alike and
    confirm; the same words a day later name another day, so they are written, never swallowed."""
    said = "I went to a support group yesterday."
    monday = datetime(2023, 5, 8, 10, 0, tzinfo=UTC)

    def turn(at: datetime):  # type: ignore[no-untyped-def]
        return process_turn(
            Turn(said, chat_id="c1", at=at), settings, extractor=RuleExtractor(), embedder=embedder
        )

    first = turn(monday)
    assert [(f.content, f.outcome) for f in first.facts] == [
        ("Went to a support group on 2023-05-07.", "new")
    ]
    again = turn(monday.replace(hour=15))
    assert [(f.outcome, f.matched_source) for f in again.facts] == [("confirmation", "archive_log")]
    assert again.lines_written == []
    tuesday = turn(monday + timedelta(days=1))
    [fact] = tuesday.facts
    assert fact.content == "Went to a support group on 2023-05-08."
    assert fact.outcome == "revision" and fact.matched == "Went to a support group on 2023-05-07."
    assert logged(settings, (monday + timedelta(days=1)).date()) == ["Went to a support group on 2023-05-08."]


def test_a_when_question_finds_the_dated_fact(settings: Settings, embedder: Embedder) -> None:
    """LongMemEval gpt4_ec93e27f asks which of a bus and a train ride came last; its two evidence
    turns say "today". Written dated, "when" finds each ride with its date."""
    turns = [
        ("2023/02/27 (Mon) 06:17", REAL_TURNS[1][2]),
        (
            "2023/03/03 (Fri) 19:17",  # gpt4_ec93e27f / answer_e3aa84c4_1 / 0 (LongMemEval, MIT)
            "I'm planning a trip to the mountains on April 15th and I'm considering taking a detour to "
            "visit my family in the countryside again. Can you help me find the best route for the road "
            "trip? By the way, I took a train ride to visit them today, and it was a nice 2-hour journey.",
        ),
    ]
    for when, text in turns:
        process_turn(
            Turn(text, chat_id="lme", at=session_time(when)),
            settings,
            extractor=RuleExtractor(),
            embedder=embedder,
        )
    today = date(2023, 5, 2)  # the question's date
    store = MemoryStore.of(settings)
    train = search(
        store,
        "When did I take a train ride?",
        SearchFilters(today=today),
        embedder=embedder,
        settings=settings,
    )
    assert train and "train ride" in train[0].content and "2023-03-03" in train[0].content
    assert train[0].source_type == "archive_log"
    bus = search(
        store,
        "When did I take the bus to a wedding?",
        SearchFilters(today=today),
        embedder=embedder,
        settings=settings,
    )
    assert bus and "bus ride" in bus[0].content and "2023-02-27" in bus[0].content
