"""A generated memory home for the consolidation benchmark: 60 days of logs at 100 facts a day.

    .venv/bin/python benchmarks/make_consolidation_home.py HOME [--days 60] [--per-day 100] [--seed 7]

Seeded and reproducible. Each day's log mixes (roughly, per 100 lines):

* verbatim repeats of planted profile facts (30): the same claim written again and again, as a
  context-free extractor did;
* paraphrases where one side is less informative (15): "Wants water reminders daily" beside
  "Wants water reminders hourly from 9 AM to 9 PM daily";
* revisions adding a specific (10): "Moved to Berlin" then "Moved to Berlin in March 2024";
* reversals (5): a planted claim that changes half way through the period ("Lives in Lisbon" for
  the first half, "Lives in Berlin" after), the newer of which must win;
* filler (40): distinct one-off facts.

Writes ``HOME`` (an initialised default-profile home) and ``HOME/truth.json``: for each planted
fact its latest version, and each reversal's older and newer claim, which the benchmark checks.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import json
import random
import sys
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from _common import fact_sentences
from memory_assets.core.capture.daily_log import LogFact, append_facts
from memory_assets.core.ops.status import init_home
from memory_assets.core.settings import Settings

FIRST_DAY = date(2026, 8, 1)


@dataclass(frozen=True)
class Planted:
    """A profile fact: its versions over time (a plain, a less informative and a sharper wording)."""

    category: str
    plain: str
    vague: str  # the less informative paraphrase
    sharp: str  # the revision adding a specific


PLANTED = [
    Planted(
        "personal",
        "Works remotely as a data engineer",
        "Works as an engineer",
        "Works remotely as a data engineer at Kelp since 2023",
    ),
    Planted(
        "preference",
        "Wants to be reminded to drink water",
        "Wants water reminders",
        "Wants to be reminded to drink water hourly from 9 AM to 9 PM",
    ),
    Planted(
        "preference",
        "Prefers metric units in all answers",
        "Prefers metric units",
        "Prefers metric units in all answers, Celsius for temperatures",
    ),
    Planted(
        "goal",
        "Wants to finish the marathon training plan",
        "Wants to run a marathon",
        "Wants to finish the marathon training plan by 12 October 2026",
    ),
    Planted(
        "personal",
        "Has a sister called Ana who lives in Porto",
        "Has a sister",
        "Has a sister called Ana who lives in Porto and works as a nurse",
    ),
    Planted(
        "technical",
        "Deploys the side project on a Hetzner VPS",
        "Deploys the side project on a VPS",
        "Deploys the side project on a Hetzner VPS with Docker Compose 2.29",
    ),
    Planted(
        "personal",
        "Is allergic to peanuts",
        "Has a food allergy",
        "Is allergic to peanuts and carries an EpiPen since 2019",
    ),
    Planted(
        "preference",
        "Prefers concise answers with code examples",
        "Prefers concise answers",
        "Prefers concise answers with Python 3.11 code examples",
    ),
    Planted(
        "goal",
        "Wants to learn Portuguese",
        "Wants to learn a language",
        "Wants to learn Portuguese to level B2 by June 2027",
    ),
    Planted(
        "technical",
        "Uses Dagster for the memory pipeline",
        "Uses an orchestrator",
        "Uses Dagster 1.13 for the memory pipeline with LanceDB 0.40",
    ),
    Planted(
        "context",
        "Is preparing a talk about data pipelines",
        "Is preparing a talk",
        "Is preparing a talk about data pipelines for PyCon on 14 November",
    ),
    Planted("personal", "Has a dog called Bruno", "Has a dog", "Has a dog called Bruno, a 5 year old beagle"),
    Planted(
        "preference",
        "Likes hiking on weekends",
        "Likes hiking",
        "Likes hiking on weekends in the Sintra hills",
    ),
    Planted(
        "technical",
        "Runs the test suite with pytest before every push",
        "Runs tests before pushing",
        "Runs the test suite with pytest 9.2 before every push",
    ),
    Planted(
        "goal",
        "Plans to buy an electric bike",
        "Plans to buy a bike",
        "Plans to buy an electric bike under 2000 euros",
    ),
    Planted(
        "personal",
        "Speaks Portuguese and German",
        "Speaks two languages",
        "Speaks Portuguese and German, and some Italian since 2021",
    ),
]

# (older, newer): the older holds for the first half of the period, the newer after.
REVERSALS = [
    ("personal", "Lives in Lisbon", "Lives in Berlin"),
    ("personal", "Works at Acme Analytics", "Works at Kelp Data"),
    ("preference", "Likes coffee in the morning", "No longer drinks coffee"),
    ("personal", "Is vegetarian", "Eats fish again"),
    ("preference", "Prefers dark mode in every editor", "Prefers light mode in every editor"),
]


def generate(home: Path, days: int = 60, per_day: int = 100, seed: int = 7) -> dict[str, object]:
    settings = Settings.load(home, env={})
    init_home(settings)
    rng = random.Random(seed)
    filler = iter(fact_sentences(days * per_day, seed=seed + 1))
    latest: dict[int, str] = {}
    for n in range(days):
        day = FIRST_DAY + timedelta(days=n)
        second_half = n >= days // 2
        lines: list[tuple[str, str]] = []
        for _ in range(per_day * 30 // 100):
            i = rng.randrange(len(PLANTED))
            fact = PLANTED[i]
            text = fact.sharp if latest.get(i) == fact.sharp else fact.plain
            lines.append((fact.category, text))
            latest.setdefault(i, text)
        for _ in range(per_day * 15 // 100):
            i = rng.randrange(len(PLANTED))
            lines.append((PLANTED[i].category, PLANTED[i].vague))
            latest.setdefault(i, PLANTED[i].plain)
        for _ in range(per_day * 10 // 100):
            i = rng.randrange(len(PLANTED))
            lines.append((PLANTED[i].category, PLANTED[i].sharp))
            latest[i] = PLANTED[i].sharp
        for _ in range(per_day * 5 // 100):
            category, older, newer = REVERSALS[rng.randrange(len(REVERSALS))]
            lines.append((category, newer if second_half else older))
        while len(lines) < per_day:
            category, text = next(filler)
            lines.append((category, text))
        rng.shuffle(lines)
        for block in range(0, len(lines), 5):  # conversation turns of five facts
            at = datetime(day.year, day.month, day.day, 8 + block // 10, (block * 7) % 60, tzinfo=UTC)
            append_facts(
                settings.archive_dir,
                f"bench{n:03d}",
                [LogFact(text, category) for category, text in lines[block : block + 5]],
                now=at,
            )
    truth = {
        "first_day": FIRST_DAY.isoformat(),
        "days": days,
        "per_day": per_day,
        "latest": [latest.get(i, p.plain) for i, p in enumerate(PLANTED)],
        "reversals": [{"older": o, "newer": w} for _, o, w in REVERSALS],
    }
    (home / "truth.json").write_text(json.dumps(truth, indent=1))
    return truth


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("home", type=Path)
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--per-day", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    truth = generate(args.home, args.days, args.per_day, args.seed)
    print(json.dumps({k: truth[k] for k in ("first_day", "days", "per_day")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
