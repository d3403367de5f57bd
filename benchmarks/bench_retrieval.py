"""Retrieval quality and latency: today's ranking (the baseline) against the new one, side by side.

    .venv/bin/python benchmarks/bench_retrieval.py            # full run: recall, 100k-row latency
    .venv/bin/python benchmarks/bench_retrieval.py --quick    # 20k padding rows, fewer timing rounds
    .venv/bin/python benchmarks/bench_retrieval.py --turn-rows 300000   # then again with 300k turn rows

A generator writes a synthetic multi-person history as real daily logs (``append_facts``, the
write path's own appender): sessions over nine months about a dozen people (where they live,
their jobs, pets, hobbies, a sibling and the sibling's job, a move), the user's own preferences
that change, dated events and plans, all among realistic filler lines and filler conversations.
The real ``Indexer`` indexes it with the real model. Four kinds of question come with the fact
lines that answer them:

* single-hop: one line answers it ("Where does Beatriz live?");
* multi-hop: two lines chained through a person ("What does Beatriz's sister do for a living?",
  the sister named in one line, her job in the same block or in a session months later);
* temporal: a day, month or relative span ("What did I do on 14 May?", "last week"), a date a plan
  states ("What is on 3 December?"), or the current state of something that changed ("Where does
  Tobias live now?": only the newest line answers);
* open-domain: no words shared with the answer ("Who could help me fix a leaking pipe?") or
  everything about one person.

recall@k = the share of a question's answer lines among the top k hits, averaged per kind.
"before" is ``baselines/search_before_real_data.py`` (``search()`` as it was before the ranking was
tuned on real conversations as well, ``bench_locomo.py``); "after" is today's ``search``; "after +context" the new search with ``context=1``, counting hits only (its
"@10 incl. context" column counts a line shown as context too). Then the same table is padded to
100k rows (filler sentences embedded once, then word-level variants with noisy vectors, as
bench_index.py does), the ANN index is built, recall is measured again, and search latency is
timed interleaved, query embedding excluded, and set against the LanceDB queries each search()
awaits, replayed alone (target: at most 1.3x). The weights were tuned on this generator's seed 1
together with LoCoMo's dev split (``bench_locomo.py --tune``); the figures are reported on seed 2,
a history the tuning never saw.

``--turn-rows N`` (the recall tier, issue 25): after those figures, the same table also gets about N
transcript rows (``source_type`` ``transcript``), and recall, latency and the ratio to the queries
search() awaits are measured again; with turns in the table a search runs its turn legs beside the
claim legs and a said query for the final facts' turns, and both are among the recorded and
replayed queries. The turns are built as the write path and the indexer build them: each chat's
turns written to ``transcripts/captured/<chat>.jsonl`` in ``keep_turn``'s lines (``turn_lines``),
and the rows planned from those files by ``plan_transcript`` (one row a user message, a long one cut
into overlapping windows, with the day, minute and chat that link a fact to its turn). Every
history line and every padding fact is said in a turn of its block's chat and minute (the padding
facts carry block marks for it), so a search folds a fact and its turn into one hit as it would on
a real home; the other turns state no fact (questions and requests over the generator's
vocabulary, short replies, and 5 % long messages of 8-16 sentences). Vectors: the history's turns
(about 1,200) and 2,000 distinct chat texts are embedded by the real model; every other row reuses
a real vector perturbed (its padding fact's with N(0, 0.05^2) per dimension, a chat text's with
N(0, 0.03^2), as the padding's own rows are made), because embedding 300,000 texts at about 290 a
second on these 2 cores would take 17 minutes or more of a shared machine, and in the timing the
vectors only serve the vector legs' search, which perturbed real vectors exercise the same way.

Figures go to stdout, progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import asyncio
import json
import os
import platform
import random
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from baselines import search_before_real_data as baseline_retrieval
from _common import log, percentile, table
from fixtures.sentences import fact_sentences, query_sentences, vary
from memory_assets.core.capture.daily_log import LogFact, append_facts
from memory_assets.core.ops.status import init_home
from memory_assets.core.models.embedder import Embedder, shared_embedder
from memory_assets.core.index.table_writer import TableWriter
from memory_assets.core.index.async_reads import run
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.search.ranking import RANKING, Ranking
from memory_assets.core.search import retrieval
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.retrieval import TURN_ROWS, search
from memory_assets.core.search.turns import SAID_COLUMNS
from memory_assets.core.index.rows import IndexRow, plan_transcript, turn_chunks
from memory_assets.core.capture.transcripts import CAPTURED, captured_path, turn_lines
from memory_assets.core.knowledge.tombstones import Tombstones
from memory_assets.core.sources import ARCHIVE
from memory_assets.core.index.store import ANN_ROW_THRESHOLD, MemoryStore
from memory_assets.core.text import stable_id
from memory_assets.core.settings import Settings

TODAY = date(2026, 11, 29)  # a Sunday; "last week" is 16-22 November
FIRST_DAY = date(2026, 3, 2)
KINDS = ("single-hop", "multi-hop", "temporal", "open-domain")
TUNE_SEED, REPORT_SEED = 1, 2


# ---------------------------------------------------------------------------------------------
# The generator's vocabulary. Person names do not occur in _common's filler sentences.
# ---------------------------------------------------------------------------------------------

PEOPLE = [
    "Beatriz",
    "Joaquim",
    "Hana",
    "Tobias",
    "Amara",
    "Lucian",
    "Greta",
    "Yusuf",
    "Iris",
    "Mateo",
    "Noor",
    "Felix",
    "Sofia",
    "Dmitri",
    "Wanjiru",
    "Emeka",
    "Solveig",
    "Arjun",
    "Carmen",
    "Piotr",
    "Zainab",
    "Lorenzo",
    "Ayla",
    "Bruno",
]
SIBLINGS = [
    "Inês",
    "Jonah",
    "Mirela",
    "Kasimir",
    "Thandiwe",
    "Ulrike",
    "Oskar",
    "Renata",
    "Sami",
    "Vesna",
    "Cosmin",
    "Liesel",
    "Teodor",
    "Maelle",
    "Rashid",
    "Gunnar",
    "Anouk",
    "Bastian",
    "Ximena",
    "Florin",
]
RELATIONS = [
    "climbing partner",
    "old school friend",
    "colleague from the data team",
    "downstairs neighbour",
    "cousin",
    "former manager",
    "friend from the choir",
    "running buddy",
    "landlord",
    "friend from the language exchange",
    "book club friend",
    "university flatmate",
]
HOME_CITIES = [
    "Porto",
    "Lyon",
    "Glasgow",
    "Ghent",
    "Bilbao",
    "Tampere",
    "Graz",
    "Bologna",
    "Aarhus",
    "Cork",
    "Brno",
    "Utrecht",
    "Tartu",
    "Malmö",
    "Leipzig",
    "Coimbra",
]
# (what the line says, an open-domain question it answers without sharing its words)
JOBS = [
    ("works as a plumber for a small family business", "Which of my friends could help fix a leaking pipe?"),
    ("is a dermatologist at the university hospital", "Who could I ask about a strange rash on my arm?"),
    ("teaches maths at a secondary school", "Who could help my nephew with his algebra homework?"),
    ("is a tax accountant at a firm downtown", "Who could help me fill in my tax return?"),
    ("works as a veterinarian in a rural practice", "Who should I ask about my cat limping?"),
    ("is a sommelier at a Michelin-starred restaurant", "Who could recommend a wine for a dinner party?"),
    ("is a car mechanic with her own garage", "Who could look at the grinding noise my car makes?"),
    ("is an immigration lawyer", "Who could advise me on a visa application?"),
    ("works as an airline pilot for a regional carrier", "Who would know what turbulence really is?"),
    ("runs a flower shop near the station", "Who could do the flowers for my sister's wedding?"),
    ("is a physiotherapist specialising in sports injuries", "Who could help with my sore knee?"),
    ("is an electrician", "Who could rewire the old light switch in my hallway?"),
    ("works as a translator of Japanese novels", "Who could check my letter to a Japanese client?"),
    ("is a structural engineer at a bridge consultancy", "Who could tell me whether a wall is load-bearing?"),
    ("is a pastry chef at a hotel bakery", "Who could make a cake for a birthday party?"),
    ("works as a locksmith", "Who could help when I am locked out of my flat?"),
]
SIBLING_JOBS = [
    "works as a marine biologist on a research vessel",
    "is a firefighter",
    "runs a small vineyard",
    "works as a court interpreter",
    "is a paramedic",
    "designs video games at an indie studio",
    "is a primary school headteacher",
    "works as a glassblower",
    "is a park ranger in the mountains",
    "works as a radio presenter",
    "is a professional cellist in an orchestra",
    "works as a beekeeper",
    "is a midwife",
    "works as a cartographer",
]
PETS = [
    ("a beagle", "dog", "Pepper"),
    ("a grey tabby cat", "cat", "Miso"),
    ("a border collie", "dog", "Nimbus"),
    ("a parrot", "parrot", "Kiwi"),
    ("a tortoise", "tortoise", "Bartholomew"),
    ("a dachshund", "dog", "Waffles"),
    ("a Maine Coon cat", "cat", "Juniper"),
    ("a rabbit", "rabbit", "Clover"),
    ("a greyhound", "dog", "Comet"),
    ("a black cat", "cat", "Sputnik"),
    ("a corgi", "dog", "Biscuit"),
    ("a ferret", "ferret", "Noodle"),
]
# (the hobby as the line says it, an open-domain question about a present)
HOBBIES = [
    ("collects vintage fountain pens", "What would make a good birthday present for {name}?"),
    ("restores old motorbikes on weekends", "What kind of gift would {name} enjoy?"),
    ("grows chilli peppers on the balcony", "What could I bring {name} from the garden centre?"),
    ("plays the accordion in a folk band", "What would {name} like for a present?"),
    ("builds model railways", "What could I give {name} as a thank-you present?"),
    ("is obsessed with sourdough baking", "What kitchen gift would {name} appreciate?"),
    ("does astrophotography from the hills", "What present would suit {name}?"),
    ("brews craft beer at home", "What would be a thoughtful gift for {name}?"),
    ("knits elaborate Fair Isle jumpers", "What present could I get {name} for the holidays?"),
    ("plays competitive Scrabble", "What board game present would {name} enjoy?"),
    ("keeps freshwater aquariums", "What gift would {name} be happy with?"),
    ("paints watercolour landscapes", "What could I give {name} for a birthday?"),
]
EVENTS = [
    "Went to the Van Gogh exhibition at the city museum with {friend}.",
    "Ran a half marathon in 1 hour 52 minutes.",
    "Had dinner at a Georgian restaurant with {friend}.",
    "Watched the Champions League final at a bar with {friend}.",
    "Spent the afternoon kayaking on the river.",
    "Visited the botanical garden and bought two succulents.",
    "Took a pottery workshop and made a wonky bowl.",
    "Went to a jazz concert at the old theatre with {friend}.",
    "Helped {friend} move into a new flat.",
    "Took the train to the coast for a day hike along the cliffs.",
    "Baked a lemon tart for {friend}'s birthday party.",
    "Went to a wine tasting at a farm outside the city.",
    "Volunteered at the food bank for the whole morning.",
    "Went to see a stand-up comedy show with {friend}.",
    "Spent the day at a tech conference about data engineering.",
    "Played five-a-side football with {friend} and scored twice.",
    "Repainted the bedroom walls in a pale green.",
    "Went to the cinema to see a Korean thriller with {friend}.",
    "Took the cat to the vet for her yearly vaccinations.",
    "Went swimming in the lake with {friend}.",
    "Attended a cousin's wedding in the countryside.",
    "Did a 40 kilometre bike ride to the lighthouse.",
    "Went to a board game café with {friend}.",
    "Cooked a seven-course tasting menu for friends at home.",
    "Went bird watching at the estuary at dawn.",
    "Hosted a quiz night at the local pub with {friend}.",
]
PLANS = [
    "Has a dentist appointment on {day} at 9 AM.",
    "Booked a flight to Tokyo for {day}.",
    "Has a job interview with a fintech startup on {day}.",
    "Bought concert tickets for a Radiohead show on {day}.",
    "Promised to help at the school fundraiser on {day}.",
    "Has the car's annual inspection booked for {day}.",
]
# The user's own preferences, each changing once:
# (first line, later line, current-state question, a question about the first line's month)
CHANGES = [
    (
        "Drinks oat milk flat whites every morning.",
        "Switched from flat whites to green tea in the mornings.",
        "What does the user drink in the morning now?",
        "What did the user drink in the mornings in {month}?",
    ),
    (
        "Uses VS Code for all Python work.",
        "Moved from VS Code to Neovim for Python work.",
        "Which editor does the user currently use for Python?",
        "Which editor did the user use for Python in {month}?",
    ),
    (
        "Is learning Spanish with an evening class.",
        "Dropped the Spanish class and started learning Japanese.",
        "Which language is the user learning these days?",
        "Which language was the user learning in {month}?",
    ),
    (
        "Eats a vegetarian diet.",
        "Started eating fish again and is now pescatarian.",
        "What is the user's diet at the moment?",
        "What was the user's diet in {month}?",
    ),
    (
        "Goes to the climbing gym on Tuesdays and Thursdays.",
        "Gave up the climbing gym and now swims on Tuesday mornings.",
        "Is the user still going climbing?",
        "What sport did the user do on Tuesdays in {month}?",
    ),
    (
        "Prefers answers in British English spelling.",
        "Now wants answers in American English spelling for work documents.",
        "Which spelling does the user want in answers now?",
        "Which spelling did the user want in answers in {month}?",
    ),
]
USER_FACTS = [
    ("Is allergic to shellfish.", "Is there any food the user must avoid?", "open-domain"),
    (
        "Lives in a rented flat in the Campo de Ourique area.",
        "Which neighbourhood does the user live in?",
        "single-hop",
    ),
    ("Works as a data engineer at a logistics company.", "What is the user's job?", "single-hop"),
    ("Has a cat called Sardinha.", "What is the name of the user's cat?", "single-hop"),
    ("Supports Sporting in football.", "Which football club does the user support?", "single-hop"),
    (
        "Is afraid of flying on small planes.",
        "Is there anything that makes the user nervous when travelling?",
        "open-domain",
    ),
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


@dataclass
class Question:
    kind: str
    text: str
    answers: list[str]
    note: str = ""


@dataclass
class Session:
    day: date
    minute: int  # minutes after 08:00
    lines: list[tuple[str, str]] = field(default_factory=list)  # (category, content)


@dataclass
class History:
    sessions: list[Session]
    questions: list[Question]
    lines: int = 0


def _day_text(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]}"


def generate(seed: int, n_people: int = 12, filler_per_day: int = 6) -> History:
    """A multi-person history over nine months and the questions it answers (deterministic per seed)."""
    rng = random.Random(seed)
    names = rng.sample(PEOPLE, n_people)
    siblings = rng.sample(SIBLINGS, n_people)
    relations = rng.sample(RELATIONS * 2, n_people)
    cities = rng.sample(HOME_CITIES, n_people)
    jobs = rng.sample(JOBS, n_people)
    sibling_jobs = rng.sample(SIBLING_JOBS, n_people)
    pets = rng.sample(PETS, n_people)
    hobbies = rng.sample(HOBBIES, n_people)
    days = sorted(rng.sample(range((TODAY - FIRST_DAY).days), 40))
    session_days = [FIRST_DAY + timedelta(days=d) for d in days]
    # Fixed days the relative questions ask about (today is a Sunday, 29 November).
    for fixed in (date(2026, 11, 18), date(2026, 11, 28), date(2026, 11, 26)):
        if fixed not in session_days:
            session_days.append(fixed)
    session_days.sort()
    sessions = [Session(d, rng.randrange(0, 600)) for d in session_days]
    questions: list[Question] = []

    def add(session: Session, category: str, content: str) -> str:
        session.lines.append((category, content))
        return content

    early = [s for s in sessions if s.day < date(2026, 7, 1)]
    late = [s for s in sessions if s.day >= date(2026, 8, 1)]
    for i, name in enumerate(names):
        intro = rng.choice(early)
        relation_line = add(intro, "personal", f"{name} is the user's {relations[i]}.")
        city_line = add(intro, "personal", f"{name} lives in {cities[i]}.")
        questions.append(Question("single-hop", f"How does the user know {name}?", [relation_line]))
        job_text, job_question = jobs[i]
        job_session = rng.choice([s for s in sessions if s.day >= intro.day])
        job_line = add(job_session, "personal", f"{name} {job_text}.")
        questions.append(Question("single-hop", f"What does {name} do for a living?", [job_line]))
        questions.append(Question("open-domain", job_question, [job_line]))
        article, animal, pet_name = pets[i]
        pet_line = add(rng.choice(sessions), "personal", f"{name} has {article} called {pet_name}.")
        questions.append(Question("single-hop", f"What is the name of {name}'s {animal}?", [pet_line]))
        questions.append(
            Question(
                "multi-hop",
                f"What is the name of the pet of the friend who {job_text}?",
                [job_line, pet_line],
                "job -> person -> pet",
            )
        )
        hobby_text, hobby_question = hobbies[i]
        hobby_line = add(rng.choice(sessions), "personal", f"{name} {hobby_text}.")
        questions.append(Question("open-domain", hobby_question.format(name=name), [hobby_line]))
        sibling = siblings[i]
        kin = rng.choice(["sister", "brother"])
        sibling_session = rng.choice(sessions)
        sibling_line = add(sibling_session, "personal", f"{name}'s {kin} is called {sibling}.")
        if i % 2 == 0:  # the sibling's job on the next line of the same block
            sibling_job_line = add(sibling_session, "personal", f"{sibling} {sibling_jobs[i]}.")
            how = "same block"
        else:  # ... or in a session months away
            later = [s for s in sessions if abs((s.day - sibling_session.day).days) > 45]
            sibling_job_line = add(rng.choice(later), "personal", f"{sibling} {sibling_jobs[i]}.")
            how = "another session"
        questions.append(
            Question(
                "multi-hop", f"What does {name}'s {kin} do for work?", [sibling_line, sibling_job_line], how
            )
        )
        if i < 6:  # a move: only the newest line answers "now"
            mover = rng.choice(late)
            new_city = rng.choice([c for c in HOME_CITIES if c not in cities])
            move_line = add(mover, "personal", f"{name} moved from {cities[i]} to {new_city} for a new job.")
            questions.append(
                Question("temporal", f"Where does {name} live now?", [move_line], "current state")
            )
            questions.append(
                Question("single-hop", f"Where did {name} live before moving to {new_city}?", [city_line])
            )
        else:
            questions.append(Question("single-hop", f"Which city does {name} live in?", [city_line]))
        questions.append(
            Question(
                "open-domain",
                f"What do I know about {name}?",
                [line for s in sessions for _, line in s.lines if line.startswith(name)],
                "everything about one person",
            )
        )
    # The user's own facts, and preferences that change.
    for content, question, kind in USER_FACTS:
        line = add(rng.choice(sessions), rng.choice(["personal", "preference"]), content)
        questions.append(Question(kind, question, [line]))
    for first, second, now_question, then_question in CHANGES:
        a = rng.choice(early)
        b = rng.choice(late)
        old = add(a, "preference", first)
        new = add(b, "preference", second)
        questions.append(Question("temporal", now_question, [new], "current state"))
        month = MONTHS[a.day.month - 1]
        questions.append(Question("temporal", then_question.format(month=month), [old], "month"))
    # Dated events: one on each of some session days; questions by day, month and relative span.
    event_sessions = rng.sample(sessions, min(len(EVENTS), len(sessions)))
    events_by_day: dict[date, list[str]] = {}
    for session, event in zip(event_sessions, rng.sample(EVENTS, len(event_sessions)), strict=False):
        line = add(session, "context", event.format(friend=rng.choice(names)))
        events_by_day.setdefault(session.day, []).append(line)
    fixed_days = {date(2026, 11, 18), date(2026, 11, 28), date(2026, 11, 26)}
    for day in fixed_days:  # make sure the relative questions have an answer
        if day not in events_by_day:
            session = next(s for s in sessions if s.day == day)
            line = add(
                session,
                "context",
                f"Spent the evening at a {rng.choice(['salsa', 'cooking', 'drawing'])} class.",
            )
            events_by_day[day] = [line]
    asked = rng.sample(sorted(d for d in events_by_day if d not in fixed_days), 10)
    for day in asked:
        phrasing = rng.choice(["What did I do on {d}?", "What happened on {d}?", "What was I up to on {d}?"])
        questions.append(Question("temporal", phrasing.format(d=_day_text(day)), events_by_day[day], "day"))
    by_month: dict[int, list[str]] = {}
    for day, lines in events_by_day.items():
        by_month.setdefault(day.month, []).extend(lines)
    for month in rng.sample(sorted(m for m, lines in by_month.items() if len(lines) <= 6 and m < 11), 3):
        questions.append(
            Question("temporal", f"What did I do in {MONTHS[month - 1]}?", by_month[month], "month")
        )
    week = [
        line
        for day, lines in events_by_day.items()
        if date(2026, 11, 16) <= day <= date(2026, 11, 22)
        for line in lines
    ]
    questions.append(Question("temporal", "What did I do last week?", week, "last week"))
    questions.append(
        Question("temporal", "What did I do yesterday?", events_by_day[date(2026, 11, 28)], "yesterday")
    )
    questions.append(
        Question("temporal", "What did I do three days ago?", events_by_day[date(2026, 11, 26)], "3 days ago")
    )
    # Plans that state their own date (logged weeks before it).
    for plan in rng.sample(PLANS, 4):
        session = rng.choice([s for s in sessions if s.day < date(2026, 11, 1)])
        day = session.day + timedelta(days=rng.randrange(10, 40))
        line = add(session, "goal", plan.format(day=_day_text(day)))
        questions.append(
            Question("temporal", f"What is planned for {_day_text(day)}?", [line], "stated date")
        )
    # Filler: a line or two inside each session, filler conversations on its day and on other days.
    n_filler = filler_per_day * (TODAY - FIRST_DAY).days
    filler = iter(fact_sentences(n_filler + 400, seed=100 + seed))
    for session in sessions:
        for _ in range(rng.randint(1, 2)):
            session.lines.insert(rng.randrange(len(session.lines) + 1), next(filler))
    blocks = list(sessions)
    day = FIRST_DAY
    while day < TODAY:
        for _ in range(rng.randint(0, 2)):
            extra = Session(day, rng.randrange(0, 600))
            for _ in range(rng.randint(2, 5)):
                extra.lines.append(next(filler))
            blocks.append(extra)
        day += timedelta(days=1)
    blocks.sort(key=lambda s: (s.day, s.minute))
    contents = [c for s in blocks for _, c in s.lines]
    assert len(contents) == len(set(contents)), "every line of the history is distinct"
    for q in questions:
        assert q.answers and all(a in contents for a in q.answers), q
    return History(blocks, questions, len(contents))


def write_history(settings: Settings, history: History) -> None:
    for n, session in enumerate(history.sessions):
        now = datetime(session.day.year, session.day.month, session.day.day, 8, 0, tzinfo=UTC) + timedelta(
            minutes=session.minute
        )
        facts = [LogFact(content, category) for category, content in session.lines]
        append_facts(settings.archive_dir, f"{n:04d}{stable_id(n)[:4]}", facts, now=now)


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------


@dataclass
class Home:
    settings: Settings
    store: MemoryStore
    history: History
    vectors: np.ndarray  # one query vector per question


def build_home(root: Path, name: str, seed: int, emb: Embedder) -> Home:
    settings = Settings.load(home=root / name, profile="default", env={})
    init_home(settings)
    history = generate(seed)
    write_history(settings, history)
    start = time.perf_counter()
    indexer = Indexer(settings, embedder=emb, today=TODAY)
    indexer.sweep()
    log(
        f"    seed {seed}: {history.lines:,} lines in {len(history.sessions)} blocks indexed in {time.perf_counter() - start:.1f} s"
    )
    vectors = emb.embed([q.text for q in history.questions])
    return Home(settings, indexer.store, history, vectors)


Searcher = Callable[[Home, int], list[tuple[str, list[str]]]]  # (hit content, its context contents)


def baseline(home: Home, i: int, settings: Settings | None = None) -> list[tuple[str, list[str]]]:
    q = home.history.questions[i]
    hits = baseline_retrieval.search(
        home.store, q.text, query_vector=home.vectors[i], limit=10, today=TODAY, settings=settings
    )
    return [(h.content, []) for h in hits]


def ranked(ranking: Ranking, context: int = 0) -> Callable[..., list[tuple[str, list[str]]]]:
    def run(home: Home, i: int, settings: Settings | None = None) -> list[tuple[str, list[str]]]:
        q = home.history.questions[i]
        hits = search(
            home.store,
            q.text,
            SearchFilters(limit=10, today=TODAY, context=context),
            query_vector=home.vectors[i],
            ranking=ranking,
            settings=settings,
        )
        return [(h.content, [c.content for c in h.context]) for h in hits]

    return run


@dataclass
class Recall:
    by_kind: dict[str, dict[str, float]]  # kind -> "@1", "@5", "@10", "@10+ctx"
    counts: dict[str, int]
    misses: dict[str, list[str]]


def evaluate(home: Home, searcher: Callable[..., list[tuple[str, list[str]]]]) -> Recall:
    sums: dict[str, dict[str, float]] = {k: {"@1": 0.0, "@5": 0.0, "@10": 0.0, "@10+ctx": 0.0} for k in KINDS}
    counts = dict.fromkeys(KINDS, 0)
    misses: dict[str, list[str]] = {k: [] for k in KINDS}
    for i, q in enumerate(home.history.questions):
        results = searcher(home, i)
        answers = set(q.answers)
        for k in (1, 5, 10):
            found = {content for content, _ in results[:k]}
            sums[q.kind][f"@{k}"] += len(answers & found) / len(answers)
        shown = {content for content, _ in results[:10]} | {c for _, ctx in results[:10] for c in ctx}
        sums[q.kind]["@10+ctx"] += len(answers & shown) / len(answers)
        counts[q.kind] += 1
        if not answers <= {content for content, _ in results[:10]}:
            misses[q.kind].append(q.text)
    by_kind = {k: {m: 100.0 * v / max(counts[k], 1) for m, v in sums[k].items()} for k in KINDS}
    return Recall(by_kind, counts, misses)


def total(recall: Recall, metric: str = "@10") -> float:
    """The mean over questions (every question weighs the same, whatever its kind)."""
    n = sum(recall.counts.values())
    return sum(recall.by_kind[k][metric] * recall.counts[k] for k in KINDS) / n


def macro(recall: Recall, metric: str = "@10") -> float:
    """The mean over the four kinds (what the tuning maximises: no kind may be sacrificed)."""
    return sum(recall.by_kind[k][metric] for k in KINDS) / len(KINDS)


def recall_table(rows: list[tuple[str, Recall]], before: Recall) -> str:
    out = []
    for kind in KINDS:
        for label, r in rows:
            v = r.by_kind[kind]
            gain = v["@10"] - before.by_kind[kind]["@10"]
            out.append(
                [
                    kind if label == rows[0][0] else "",
                    label,
                    r.counts[kind],
                    f"{v['@1']:.1f}",
                    f"{v['@5']:.1f}",
                    f"{v['@10']:.1f}",
                    "-" if label == rows[0][0] else f"{gain:+.1f}",
                    f"{v['@10+ctx']:.1f}",
                ]
            )
    for label, r in rows:
        gain = total(r) - total(before)
        out.append(
            [
                "all" if label == rows[0][0] else "",
                label,
                sum(r.counts.values()),
                f"{total(r, '@1'):.1f}",
                f"{total(r, '@5'):.1f}",
                f"{total(r):.1f}",
                "-" if label == rows[0][0] else f"{gain:+.1f}",
                f"{total(r, '@10+ctx'):.1f}",
            ]
        )
    return table(
        out,
        [
            "kind",
            "ranking",
            "questions",
            "recall@1",
            "recall@5",
            "recall@10",
            "@10 gain",
            "@10 incl. context",
        ],
    )


# ---------------------------------------------------------------------------------------------
# 100k rows and latency
# ---------------------------------------------------------------------------------------------


@dataclass
class Padding:
    """What ``pad`` wrote, for the turns that said it (``add_turns``): fact ``j`` is
    ``contents[j]``, a variant of ``base[k]`` with ``k = j % len(base)``, dated ``days[j]``."""

    base: list[tuple[str, str]]
    base_vecs: np.ndarray
    contents: list[str]
    days: list[date]
    embed_s: float
    write_s: float


PAD_CHAT = 10  # padding facts said in one synthetic chat


def pad_marks(j: int) -> tuple[str, int]:
    """The block marks of padding fact ``j``: its chat (8 characters, as a block header carries
    it) and its minute after 08:00 (every third minute: the chat's other turns say no fact)."""
    return f"p{j // PAD_CHAT:07d}", (j % PAD_CHAT) * 3


def pad(home: Home, emb: Embedder, n_rows: int) -> Padding:
    """Add ``n_rows - current`` filler rows: 2,000 real filler sentences embedded once, then
    word-level variants with noisy vectors (bench_index.py's method), dated over 2024-2026. Each
    carries a block's marks (``pad_marks``), as a fact the write path wrote from a turn does."""
    store = home.store
    have = store.count()
    need = n_rows - have
    base = fact_sentences(2_000, seed=444)
    start = time.perf_counter()
    base_vecs = emb.embed([t for _, t in base])
    embed_s = time.perf_counter() - start
    rng = random.Random(5)
    nrng = np.random.default_rng(5)
    first = date(2024, 1, 1)
    span = (TODAY - first).days
    table_ = TableWriter(store).table_for_write(emb.model_name, emb.dimension)
    start = time.perf_counter()
    batch = 10_000
    contents: list[str] = []
    days: list[date] = []
    for b in range(0, need, batch):
        idx = np.arange(b, min(b + batch, need)) % len(base)
        vectors = base_vecs[idx] + nrng.normal(0.0, 0.03, size=(len(idx), base_vecs.shape[1])).astype(
            np.float32
        )
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = []
        for j, k in zip(range(b, b + len(idx)), idx, strict=True):
            category, text = base[k]
            days.append(first + timedelta(days=j * span // need))
            day = days[-1].isoformat()
            fname = f"pad-{day}.md"
            chat, minute = pad_marks(j)
            contents.append(vary(text, rng))
            rows.append(
                IndexRow(
                    id=stable_id("bench-retrieval", j),
                    content=contents[-1],
                    source_type=ARCHIVE,
                    source_file=fname,
                    chunk_index=j % 100 + 3,
                    category=category,
                    importance=0.5,
                    source_date=day,
                    fact_date=day,
                    metadata=json.dumps(
                        {
                            "source_type": ARCHIVE,
                            "source_file": fname,
                            "category": category,
                            "tags": [],
                            "time": f"{8 + minute // 60:02d}:{minute % 60:02d}",
                            "chat": chat,
                        }
                    ),
                )
            )
        TableWriter(store).apply_diff(table_, [], rows, vectors.astype(np.float32), [None] * len(rows))
    write_s = time.perf_counter() - start
    start = time.perf_counter()
    TableWriter(store).optimize(ann_threshold=min(ANN_ROW_THRESHOLD, n_rows))
    log(
        f"    padded to {store.count():,} rows ({write_s:.1f} s) and optimized with the ANN index ({time.perf_counter() - start:.1f} s)"
    )
    return Padding(base, base_vecs, contents, days, embed_s, write_s)


# ---------------------------------------------------------------------------------------------
# The recall tier: transcript rows
# ---------------------------------------------------------------------------------------------

# How a user says a fact (the fact's words stay in the message, as an extractor keeps them).
SAYS = [
    "{fact}",
    "By the way, {fact}",
    "Just so you know: {fact}",
    "Quick update from me. {fact}",
    "{fact} Can you keep that in mind?",
    "Oh, and one more thing. {fact}",
    "I was thinking about this today. {fact}",
    "Something to remember for later: {fact}",
]
# What else a user says: questions and requests that state no fact, and short replies.
ASKS = [
    "Do you remember {q}?",
    "Quick question: {q}?",
    "I am trying to work out {q}, any idea?",
    "Can you look up {q} for me?",
    "Before I forget, {q}?",
    "Could you remind me {q}?",
]
SHORT = [
    "Thanks, that helps a lot.",
    "Can you make it shorter?",
    "Ok, let's pick this up tomorrow.",
    "That makes sense, thank you.",
    "Hmm, not quite what I meant. Try again?",
    "Great, send me the final version.",
    "Can you put that in a table?",
    "Perfect.",
]
ANSWERS = [
    "Noted. I'll keep that in mind.",
    "Got it. Here is a short summary of what you said, with two follow-up questions.",
    "Sure. Here is a draft you can adapt.",
    "I don't have that yet; could you tell me more?",
    "",  # an assistant turn that only called a tool: no text
]
LONG_SHARE = 0.05  # messages long enough to be cut into overlapping windows (turn_chunks)


@dataclass
class Said:
    """One turn as the benchmark writes it, with the vector its rows take."""

    user: str
    answer: str
    at: datetime
    vector: np.ndarray


def _normalised(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)).astype(np.float32)


def _write_chats(
    settings: Settings, chats: dict[str, list[Said]]
) -> list[tuple[str, Path, dict[int, np.ndarray]]]:
    """Each chat's turns written to its captured transcript as ``keep_turn`` writes them (the same
    lines, ``turn_lines``; one write per file, no fsync: a benchmark's bulk load); returns each
    file with the vector of each turn by the line number of its user line."""
    out = []
    for chat, turns in chats.items():
        path = captured_path(settings.transcripts_dir, chat)
        path.parent.mkdir(parents=True, exist_ok=True)
        vectors: dict[int, np.ndarray] = {}
        line = 1
        parts = []
        for turn in sorted(turns, key=lambda t: t.at):
            text = turn_lines(chat, turn.user, turn.answer, turn.at)
            vectors[line] = turn.vector
            line += text.count("\n")
            parts.append(text)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("".join(parts))
        out.append((path.relative_to(settings.transcripts_dir).as_posix(), path, vectors))
    return out


def _index_chats(home: Home, table_: Any, chats: dict[str, list[Said]]) -> int:
    """Write ``chats`` and add their rows as the indexer plans them (``plan_transcript``: one row a
    user message, cut into windows when long, with the marks ``turns.py`` links facts by), each row
    with its turn's vector. Returns the rows added."""
    rows: list[IndexRow] = []
    vectors: list[np.ndarray] = []
    for rel, path, by_line in _write_chats(home.settings, chats):
        plan = plan_transcript(path, rel, Tombstones(), TODAY)
        if plan.warnings:
            raise SystemExit(f"the benchmark wrote a transcript the indexer warns about: {plan.warnings[:3]}")
        for row in plan.rows:
            rows.append(row)
            vectors.append(by_line[json.loads(row.metadata)["line"]])
    if rows:
        TableWriter(home.store).apply_diff(table_, [], rows, np.stack(vectors), [None] * len(rows))
    return len(rows)


def add_turns(home: Home, emb: Embedder, padding: Padding, turn_rows: int) -> dict[str, float]:
    """Add about ``turn_rows`` transcript rows (source_type ``transcript``), the recall tier of a
    home whose every fact came from a turn:

    * the history's turns: each of its log lines said in its block's chat and minute (one turn a
      line, wrapped in what a user says around it, ``SAYS``), embedded by the real model;
    * the padding facts' turns: fact ``j`` said in chat ``pad_marks(j)`` at its minute, on its day,
      with the fact's base vector perturbed (N(0, 0.05^2) per dimension, then normalised);
    * the rest: turns that state no fact, in the same chats at the other minutes (questions and
      requests over the generator's vocabulary, short replies, and a share of long messages cut
      into windows), their texts from 2,000 distinct ones embedded by the real model, each row
      that text's vector perturbed (N(0, 0.03^2)), as the padding is.

    Then optimize (compaction, new rows folded into the full-text and vector indexes), as the
    optimize sensor does after a home grows."""
    rng = random.Random(11)
    nrng = np.random.default_rng(11)
    store, settings = home.store, home.settings
    table_ = TableWriter(store).table_for_write(emb.model_name, emb.dimension)
    start = time.perf_counter()
    # The history's turns, embedded by the model.
    history_chats: dict[str, list[Said]] = {}
    texts: list[str] = []
    for n, session in enumerate(home.history.sessions):
        chat = f"{n:04d}{stable_id(n)[:4]}"  # write_history's chat id
        at = datetime(session.day.year, session.day.month, session.day.day, 8, 0, tzinfo=UTC) + timedelta(
            minutes=session.minute
        )
        for _, content in session.lines:
            texts.append(rng.choice(SAYS).format(fact=content))
            history_chats.setdefault(chat, []).append(Said(texts[-1], rng.choice(ANSWERS), at, None))  # type: ignore[arg-type]
    history_vecs = emb.embed(texts)
    for said, vector in zip((t for c in history_chats.values() for t in c), history_vecs, strict=True):
        said.vector = vector
    embedded = len(texts)
    # What else is said: 2,000 distinct texts embedded once.
    questions = [ask.format(q=q) for q in query_sentences(332, seed=77) for ask in ASKS]  # 1,992
    chatter = questions + SHORT
    chatter_vecs = emb.embed(chatter)
    embedded += len(chatter)
    embed_s = time.perf_counter() - start
    added = _index_chats(home, table_, history_chats)
    dim = padding.base_vecs.shape[1]
    n_pad = len(padding.contents)
    groups = max(1, -(-n_pad // PAD_CHAT))
    budget = max(turn_rows - added, 0)
    batch: dict[str, list[Said]] = {}
    batch_turns = 0
    written = 0
    for g in range(groups):
        chat = f"p{g:07d}"
        day = padding.days[min(g * PAD_CHAT, n_pad - 1)]
        noon = datetime(day.year, day.month, day.day, 8, 0, tzinfo=UTC)
        turns: list[Said] = []
        rows = 0
        for j in range(g * PAD_CHAT, min((g + 1) * PAD_CHAT, n_pad)):
            _, minute = pad_marks(j)
            k = j % len(padding.base)
            vector = _normalised(padding.base_vecs[k] + nrng.normal(0.0, 0.05, dim))
            user = rng.choice(SAYS).format(fact=padding.contents[j])
            said_day = padding.days[j]  # the fact's day (a chat may run past midnight)
            at = datetime(said_day.year, said_day.month, said_day.day, 8, minute, tzinfo=UTC)
            turns.append(Said(user, rng.choice(ANSWERS), at, vector))
            rows += 1
        target = budget * (g + 1) // groups - budget * g // groups  # this chat's share of the rows
        minute = 1
        while rows < target:
            if rng.random() < LONG_SHARE:
                parts = rng.sample(range(len(padding.base)), rng.randint(8, 16))
                user = " ".join(padding.base[p][1] for p in parts)
                vector = _normalised(padding.base_vecs[parts].mean(axis=0) + nrng.normal(0.0, 0.03, dim))
            else:
                c = rng.randrange(len(chatter))
                user = vary(chatter[c], rng) if c < len(questions) else chatter[c]
                vector = _normalised(chatter_vecs[c] + nrng.normal(0.0, 0.03, dim))
            turns.append(Said(user, rng.choice(ANSWERS), noon + timedelta(minutes=minute), vector))
            rows += len(turn_chunks(user))
            minute += 2 if minute % 3 == 2 else 1  # never a fact's minute
        batch[chat] = turns
        batch_turns += len(turns)
        if batch_turns >= 20_000 or g == groups - 1:
            written += _index_chats(home, table_, batch)
            log(f"    {added + written:,} transcript rows")
            batch, batch_turns = {}, 0
    added += written
    write_s = time.perf_counter() - start - embed_s
    start = time.perf_counter()
    TableWriter(store).optimize()
    optimize_s = time.perf_counter() - start
    files = sum(1 for _ in (settings.transcripts_dir / CAPTURED).glob("*.jsonl"))
    log(
        f"    {added:,} transcript rows in {files:,} transcripts ({embedded:,} texts embedded in {embed_s:.1f} s, "
        f"written in {write_s:.1f} s); optimized in {optimize_s:.1f} s"
    )
    return {"rows": added, "files": files, "embedded": embedded, "embed_s": embed_s, "write_s": write_s}


def latency(home: Home, searchers: dict[str, Callable[..., Any]], rounds: int) -> dict[str, dict[str, float]]:
    """Interleaved (question by question, every ranking in turn) so the machine's drift hits all
    alike; with the home's settings (tombstones read, recall log written), query embedding excluded."""
    n = len(home.history.questions)
    samples: dict[str, list[float]] = {name: [] for name in searchers}
    for i in range(min(5, n)):
        for fn in searchers.values():
            fn(home, i, home.settings)
    for _ in range(rounds):
        for i in range(n):
            for name, fn in searchers.items():
                begin = time.perf_counter()
                fn(home, i, home.settings)
                samples[name].append((time.perf_counter() - begin) * 1000.0)
    return {
        name: {"p50": percentile(s, 50), "p95": percentile(s, 95), "n": len(s)} for name, s in samples.items()
    }


# ---------------------------------------------------------------------------------------------


class _Recording:
    """A LanceDB async table or query builder that records the calls made through it: how the
    benchmark learns exactly which queries one ``search()`` awaited, to run them again alone."""

    def __init__(
        self, target: Any, chain: list[tuple[str, tuple, dict]], log: list[list[tuple[str, tuple, dict]]]
    ):
        self._target, self._chain, self._log = target, chain, log

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if name == "to_arrow":
                self._log.append(self._chain)
                return attr(*args, **kwargs)
            return _Recording(attr(*args, **kwargs), [*self._chain, (name, args, kwargs)], self._log)

        return call


def _is_leg(chain: list[tuple[str, tuple, dict]]) -> bool:
    return any(name in ("nearest_to", "nearest_to_text") for name, _, _ in chain)


def recorded_queries(home: Home, i: int) -> list[list[tuple[str, tuple, dict]]]:
    """The LanceDB queries ``search()`` awaits for question ``i``, as call chains."""
    log: list[list[tuple[str, tuple, dict]]] = []
    original = retrieval._latest

    def recording(store: MemoryStore) -> Any:
        facts, reader = original(store)
        return facts, _Recording(reader, [], log)

    retrieval._latest = recording
    try:
        ranked(RANKING)(home, i, home.settings)
    finally:
        retrieval._latest = original
    return log


async def replay(reader: Any, chains: list[list[tuple[str, tuple, dict]]]) -> None:
    """The recorded queries awaited as ``search()`` awaits them: the legs together, then the rest
    (the neighbours' query) one after another."""

    def build(chain: list[tuple[str, tuple, dict]]) -> Any:
        q = reader
        for name, args, kwargs in chain:
            q = getattr(q, name)(*args, **kwargs)
        return q.to_arrow()

    await asyncio.gather(*(build(c) for c in chains if _is_leg(c)))
    for chain in chains:
        if not _is_leg(chain):
            await build(chain)


def _is_said(chain: list[tuple[str, tuple, dict]]) -> bool:
    """The query for the final facts' turns (``turns.said_clause``): it selects ``SAID_COLUMNS``."""
    return any(name == "select" and list(args[0]) == SAID_COLUMNS for name, args, _ in chain)


def query_cost(home: Home, rounds: int) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """``search()`` against the LanceDB queries it awaits, run alone, interleaved question by
    question (so the machine's drift hits both alike): query embedding excluded, with the home's
    settings. Each question's queries are recorded from a ``search()`` of it (``_Recording``) and
    replayed on the same table handle the way ``search()`` awaits them; also the legs alone (the
    turn legs among them when the table holds turns), the neighbours' query alone and the said
    query alone (a piece is timed only for the questions whose search made it). Returns the
    timings and how many of the questions' searches made each kind of query."""
    reader = run(home.store.read_latest())[1]  # type: ignore[index]
    chains = [recorded_queries(home, i) for i in range(len(home.history.questions))]
    after = ranked(RANKING)

    def only(kind: Callable[[list[tuple[str, tuple, dict]]], bool]) -> Callable[[int], list]:
        return lambda i: [c for c in chains[i] if kind(c)]

    legs = only(_is_leg)
    neighbours = only(lambda c: not _is_leg(c) and not _is_said(c))
    said = only(_is_said)
    pieces: dict[str, Callable[[int], list]] = {
        "the queries it awaits": lambda i: chains[i],
        "  its legs alone": legs,
        "  its neighbours' query alone": neighbours,
        "  its said query alone": said,
    }
    timed: dict[str, Callable[[int], Any]] = {"search()": lambda i: after(home, i, home.settings)}
    for name, pick in pieces.items():
        timed[name] = lambda i, pick=pick: run(replay(reader, pick(i)))
    samples: dict[str, list[float]] = {name: [] for name in timed}
    for i in range(min(5, len(chains))):
        for fn in timed.values():
            fn(i)
    for _ in range(rounds):
        for i in range(len(chains)):
            for name, fn in timed.items():
                if name in pieces and not pieces[name](i):
                    continue  # this question's search made no such query
                begin = time.perf_counter()
                fn(i)
                samples[name].append((time.perf_counter() - begin) * 1000.0)
    made = {
        "legs": sum(len(legs(i)) for i in range(len(chains))),
        "turn legs": sum(sum(TURN_ROWS in repr(c) for c in legs(i)) for i in range(len(chains))),
        "neighbours": sum(bool(neighbours(i)) for i in range(len(chains))),
        "said": sum(bool(said(i)) for i in range(len(chains))),
        "searches": len(chains),
    }
    timings = {
        name: {"p50": percentile(v, 50), "p95": percentile(v, 95), "n": len(v)}
        for name, v in samples.items()
        if v
    }
    return timings, made


def cost_section(home: Home, rounds: int, label: str) -> float:
    """Print what search() costs against the LanceDB queries it awaits; returns the p50 ratio."""
    print(
        f"\n## What search() costs against the LanceDB queries it awaits, {label} "
        "(interleaved, query embedding excluded)\n"
    )
    cost, made = query_cost(home, rounds)
    print(
        table(
            [[name, f"{v['p50']:.1f}", f"{v['p95']:.1f}", v["n"]] for name, v in cost.items()],
            ["piece", "p50 ms", "p95 ms", "calls"],
        )
    )
    ratio = cost["search()"]["p50"] / cost["the queries it awaits"]["p50"]
    turn_legs = f", {made['turn legs']} of them turn legs" if made["turn legs"] else ""
    print(
        f"\nThe queries are recorded from a search() of each of the {made['searches']} questions and replayed "
        "alone on the same table handle, awaited as search() awaits them: the legs together, then the "
        f"neighbours' query, then the said query. The searches made {made['legs']} legs{turn_legs}; "
        f"{made['neighbours']} made a neighbours' query and {made['said']} a said query. search() also reads the "
        "latest version, filters tombstones, scores, merges a fact with its turn, collapses and logs the "
        f"recall. Ratio of the p50s: {ratio:.2f} ({cost['search()']['p50']:.1f} / "
        f"{cost['the queries it awaits']['p50']:.1f} ms)."
    )
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="20k padding rows, one timing round")
    parser.add_argument("--rows", type=int, help="fact rows after padding (default 100,000; quick 20,000)")
    parser.add_argument(
        "--turn-rows",
        type=int,
        default=0,
        metavar="N",
        help="after the figures on the padded table, add about N transcript rows (the recall tier; e.g. "
        "300000) and measure again on the table holding both (default 0: facts only)",
    )
    parser.add_argument("--seed", type=int, default=REPORT_SEED, help=f"history seed (default {REPORT_SEED})")
    parser.add_argument("--misses", action="store_true", help="list the questions each ranking misses at @10")
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes")
    args = parser.parse_args()
    n_rows = args.rows or (20_000 if args.quick else 100_000)
    rounds = 1 if args.quick else 3

    import lancedb
    import torch

    t0 = time.perf_counter()
    command = ".venv/bin/python benchmarks/bench_retrieval.py " + " ".join(map(shlex.quote, sys.argv[1:]))
    print("# memory-assets retrieval benchmark")
    print(f"\ncommand : {command.strip()}")
    print(f"started : {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC")
    print(
        f"machine : {platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}, "
        f"Python {platform.python_version()}, lancedb {lancedb.__version__}"
    )
    print(f"load    : 1-min load average at start {os.getloadavg()[0]:.2f} (timings are noisy above ~0.5)")
    root = Path(tempfile.mkdtemp(prefix="bench_retrieval_"))
    try:
        emb = shared_embedder()
        emb.embed(["warm up"])
        log(f"building the reported history (seed {args.seed})")
        home = build_home(root, "report", args.seed, emb)
        kinds = {k: sum(q.kind == k for q in home.history.questions) for k in KINDS}
        print(
            f"history : seed {args.seed} (weights tuned on seed {TUNE_SEED}); {home.history.lines:,} log lines in "
            f"{len(home.history.sessions)} blocks over {(TODAY - FIRST_DAY).days} days, today = {TODAY}; "
            f"{len(home.history.questions)} questions: " + ", ".join(f"{v} {k}" for k, v in kinds.items())
        )
        print(f"ranking : {RANKING}")
        after_ctx = ranked(RANKING, context=1)
        variants: list[tuple[str, Callable[..., Any]]] = [
            ("before", baseline),
            ("after", ranked(RANKING)),
            ("after +context", after_ctx),
        ]
        small = [(label, evaluate(home, fn)) for label, fn in variants]
        print(f"\n## Recall on the history alone ({home.store.count():,} rows, brute force)\n")
        print(recall_table(small, small[0][1]))
        if args.misses:
            for label, r in small:
                print(f"\n{label} misses @10:")
                for kind in KINDS:
                    for text in r.misses[kind]:
                        print(f"  [{kind}] {text}")
        small_latency = latency(home, dict(variants), 1)

        log(f"padding to {n_rows:,} rows")
        padding = pad(home, emb, n_rows)
        big = [(label, evaluate(home, fn)) for label, fn in variants]
        print(
            f"\n## Recall with the table padded to {home.store.count():,} rows (IVF_HNSW_SQ index), same questions\n"
        )
        print(
            "padding: 2,000 real filler sentences embedded once, then word-level variants with vector = "
            "normalise(vector + N(0, 0.03^2)), dated 2024-01-01 .. 2026-11-28\n"
        )
        print(recall_table(big, big[0][1]))
        log(f"timing {rounds} interleaved round(s) over {len(home.history.questions)} questions")
        big_latency = latency(home, dict(variants), rounds)
        print("\n## search() latency, query embedding excluded (interleaved; with the home's settings)\n")
        rows = []
        for label, _ in variants:
            s, b = small_latency[label], big_latency[label]
            rows.append(
                [label, f"{s['p50']:.1f} / {s['p95']:.1f}", f"{b['p50']:.1f} / {b['p95']:.1f}", b["n"]]
            )
        print(
            table(
                rows,
                [
                    "ranking",
                    f"{home.history.lines:,}-row history p50 / p95 ms",
                    f"{n_rows // 1000}k rows p50 / p95 ms",
                    "calls",
                ],
            )
        )
        facts_rows = home.store.count()
        ratio = cost_section(home, rounds, f"{facts_rows:,} fact rows")

        turned: list[tuple[str, Recall]] = []
        turn_ratio = turn_latency = None
        if args.turn_rows:
            log(f"adding about {args.turn_rows:,} transcript rows")
            built = add_turns(home, emb, padding, args.turn_rows)
            turn_count = home.store.count("source_type = 'transcript'")
            print(
                f"\n## The table with the recall tier: {facts_rows:,} fact rows and {turn_count:,} transcript rows "
                f"({home.store.count():,} in all)\n"
            )
            print(
                f"turns: {built['files']:,} captured transcripts written as keep_turn writes them and planned by "
                "plan_transcript (one row a user message, long ones cut into windows); every history line and "
                "padding fact said in a turn of its block's chat and minute (so search folds a fact and its turn "
                f"into one hit), the rest questions, requests and long messages that state no fact. "
                f"{built['embedded']:,} distinct texts embedded by the model ({built['embed_s']:.0f} s: the "
                "history's turns and 2,000 chat texts); every other row reuses one of those vectors, or its "
                "padding fact's, perturbed (see add_turns)\n"
            )
            turned = [(label, evaluate(home, fn)) for label, fn in variants]
            print(recall_table(turned, turned[0][1]))
            log(f"timing {rounds} interleaved round(s) with the turns")
            turn_latency = latency(home, dict(variants), rounds)
            print("\nsearch() latency with the turns, query embedding excluded (interleaved):\n")
            print(
                table(
                    [
                        [label, f"{turn_latency[label]['p50']:.1f} / {turn_latency[label]['p95']:.1f}"]
                        for label, _ in variants
                    ],
                    ["ranking", "p50 / p95 ms"],
                )
            )
            turn_ratio = cost_section(
                home, rounds, f"{facts_rows:,} fact rows + {turn_count:,} transcript rows"
            )

        print("\n## Summary\n")
        b, a = big[0][1], big[1][1]
        s_b, s_a = small[0][1], small[1][1]
        summary = []
        for kind in KINDS:
            g_small = s_a.by_kind[kind]["@10"] - s_b.by_kind[kind]["@10"]
            g_big = a.by_kind[kind]["@10"] - b.by_kind[kind]["@10"]
            summary.append(
                [
                    f"recall@10 gain, {kind}",
                    f"{g_small:+.1f} / {g_big:+.1f} points",
                    ">= 0",
                    "ok" if g_small >= 0 and g_big >= 0 else "MISSED",
                ]
            )
        g_small, g_big = total(s_a) - total(s_b), total(a) - total(b)
        summary.append(
            [
                "recall@10 gain, all questions",
                f"{g_small:+.1f} / {g_big:+.1f} points",
                ">= 0",
                "ok" if min(g_small, g_big) >= 0 else "MISSED",
            ]
        )
        p50 = big_latency["after"]["p50"]
        summary.append(
            [
                f"search() p50 at {n_rows // 1000}k rows (after; before)",
                f"{p50:.1f} ms; {big_latency['before']['p50']:.1f} ms",
                "<= 20 ms",
                "ok" if p50 <= 20 else "MISSED",
            ]
        )
        p50c = big_latency["after +context"]["p50"]
        summary.append([f"search(context=1) p50 at {n_rows // 1000}k rows", f"{p50c:.1f} ms", "-", "-"])
        summary.append(
            [
                f"search() / the LanceDB queries it awaits, p50 at {n_rows // 1000}k rows",
                f"{ratio:.2f}x",
                "<= 1.3x",
                "ok" if ratio <= 1.3 else "MISSED",
            ]
        )
        if turn_ratio is not None and turn_latency is not None:
            t_after = turned[1][1]
            summary.append(
                [
                    "recall@10 all questions, with the turns (after)",
                    f"{total(t_after):.1f} (without them {total(a):.1f})",
                    "-",
                    "-",
                ]
            )
            summary.append(
                [
                    f"search() p50 with {args.turn_rows // 1000}k turn rows (after)",
                    f"{turn_latency['after']['p50']:.1f} ms",
                    "-",
                    "-",
                ]
            )
            summary.append(
                [
                    f"search() / the LanceDB queries it awaits, p50 at {n_rows // 1000}k facts + "
                    f"{args.turn_rows // 1000}k turn rows",
                    f"{turn_ratio:.2f}x",
                    "<= 1.3x",
                    "ok" if turn_ratio <= 1.3 else "MISSED",
                ]
            )
        print(table(summary, ["figure", "history alone / padded", "target", "verdict"]))
        print(
            f"\ntotal wall time {time.perf_counter() - t0:.0f} s; 1-min load average at the end {os.getloadavg()[0]:.2f}"
        )
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
