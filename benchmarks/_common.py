"""Shared helpers for the benchmark scripts: quiet environment, realistic fact text, timing, tables.

Import this module before anything from ``memory_assets`` (it sets the environment variables that
keep LanceDB's Rust logging and the Hugging Face hub quiet and offline).
"""

import os

os.environ.setdefault("LANCEDB_LOG", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Not set by the package. With libgomp's default spin-waiting, a single CPU-bound neighbour process on
# these 2 cores cuts torch's 2-thread encode throughput ~5x (measured 370 -> 72 sent/s); PASSIVE leaves
# quiet-machine throughput unchanged (~370 sent/s) and keeps ~207 sent/s under such a neighbour, so
# the benchmark's timings are far less at the mercy of other processes. Override by exporting it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from contextlib import contextmanager  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Realistic, distinct fact sentences built combinatorially from word lists.
# Every template yields roughly 12-20 words; the slot lists make millions of combinations, so a
# seeded sampler can draw tens of thousands of distinct sentences.
# ---------------------------------------------------------------------------------------------

NAMES = [
    "Alice",
    "Marco",
    "Priya",
    "Jonas",
    "Mei",
    "Tomás",
    "Fatima",
    "Oliver",
    "Sven",
    "Aiko",
    "Daniel",
    "Leila",
    "Kwame",
    "Ingrid",
    "Rafael",
    "Nadia",
    "Hugo",
    "Chloé",
    "Ravi",
    "Elena",
]
RELATIONS = [
    "sister",
    "brother",
    "mother",
    "father",
    "cousin",
    "colleague",
    "neighbour",
    "manager",
    "best friend",
    "flatmate",
    "aunt",
    "grandfather",
    "mentor",
    "partner",
]
CITIES = [
    "Lisbon",
    "Berlin",
    "Osaka",
    "Toronto",
    "Nairobi",
    "Melbourne",
    "Oslo",
    "Bogotá",
    "Seoul",
    "Edinburgh",
    "Porto",
    "Montreal",
    "Kraków",
    "Valencia",
    "Austin",
    "Helsinki",
    "Lyon",
    "Cusco",
]
DRINKS = [
    "oat milk flat whites",
    "black coffee",
    "green tea",
    "sparkling water",
    "chai lattes",
    "decaf espresso",
    "rooibos tea",
    "cold brew",
    "hot chocolate",
    "matcha",
    "kombucha",
    "mint tea",
]
TIMES = [
    "in the morning",
    "after lunch",
    "late in the evening",
    "before long meetings",
    "on weekends",
    "during deep work sessions",
    "while travelling",
    "on rainy afternoons",
]
ACTIVITIES = [
    "goes running",
    "reads science fiction",
    "practises the cello",
    "cooks Thai curries",
    "plays chess online",
    "does yoga",
    "sketches buildings",
    "listens to jazz records",
    "bakes sourdough bread",
    "goes bouldering",
    "writes in a paper journal",
    "walks the dog",
]
PLACES = [
    "at the riverside park",
    "at home",
    "in the community garden",
    "near the office",
    "at the climbing gym",
    "on the balcony",
    "in the public library",
    "by the lake",
]
FREQUENCIES = [
    "every day",
    "twice a week",
    "most weekends",
    "once a month",
    "whenever possible",
    "every other Tuesday",
    "three times a week",
    "during the holidays",
]
PROJECTS = [
    "the billing migration",
    "the mobile checkout redesign",
    "the data warehouse cleanup",
    "the onboarding chatbot",
    "the search relevance project",
    "the quarterly report automation",
    "the home automation setup",
    "the thesis on coral reefs",
    "the garden irrigation system",
    "the photo archive digitisation",
    "the podcast relaunch",
    "the kitchen renovation",
]
TOOLS = [
    "PostgreSQL",
    "Rust",
    "Kubernetes",
    "Terraform",
    "a Raspberry Pi",
    "SQLite",
    "React Native",
    "Dagster",
    "LanceDB",
    "Go",
    "TypeScript",
    "Excel macros",
    "Home Assistant",
    "Figma",
    "Airflow",
]
GOALS = [
    "a working prototype",
    "the first public release",
    "a clean test suite",
    "full test coverage",
    "a budget under two thousand euros",
    "zero downtime deploys",
    "a draft for review",
    "faster page loads",
    "a stable nightly build",
]
DEADLINES = [
    "the end of the month",
    "the spring conference",
    "mid July",
    "the next sprint review",
    "Christmas",
    "the board meeting",
    "the summer holidays",
    "early November",
]
REASONS = [
    "the licensing costs",
    "better tooling",
    "the team's experience",
    "lower latency",
    "simpler operations",
    "the existing contracts",
    "memory usage",
    "long-term maintenance",
]
TASKS = [
    "watering the tomato plants",
    "paying the electricity bill",
    "calling the dentist",
    "backing up the laptop",
    "renewing the passport",
    "taking vitamin D",
    "stretching the back",
    "submitting the expense report",
    "checking the smoke alarms",
    "feeding the sourdough starter",
]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
HOURS = ["7 AM", "8:30 AM", "noon", "2 PM", "5 PM", "6:45 PM", "9 PM"]
FOODS = [
    "spicy food",
    "mushrooms",
    "olives",
    "raw onions",
    "fish on weekdays",
    "very sweet desserts",
    "dairy in the evening",
    "cilantro",
    "gluten",
    "peanuts",
]
ADJECTIVES = [
    "short",
    "detailed",
    "bullet-point",
    "friendly",
    "formal",
    "metric-unit",
    "concise",
    "step-by-step",
]
TOPICS = [
    "travel plans",
    "code reviews",
    "recipes",
    "workout routines",
    "budget summaries",
    "meeting notes",
    "book recommendations",
    "weather updates",
]

TEMPLATES: list[tuple[str, str]] = [
    ("preference", "{name} prefers {drink} {time} and usually {activity} {place} {freq}."),
    ("technical", "The user is building {project} with {tool} and wants {goal} before {deadline}."),
    ("personal", "User said their {relation} {name} lives in {city} and visits {freq} {time}."),
    ("technical", "For {project} the team chose {tool} over {tool2} mainly because of {reason}."),
    ("goal", "User asked to be reminded about {task} every {weekday} at {hour} {time}."),
    ("preference", "User avoids {food} and prefers {adj} answers about {topic} {time}."),
    ("personal", "{name} moved to {city} last year and now {activity} {place} {freq}."),
    ("goal", "User plans to finish {project} by {deadline} and then start learning {tool}."),
    ("context", "While discussing {topic} the user mentioned {task} is overdue since {weekday}."),
    ("interaction", "User wants {adj} replies with examples in {tool} when asking about {project}."),
]

SLOTS: dict[str, list[str]] = {
    "name": NAMES,
    "relation": RELATIONS,
    "city": CITIES,
    "drink": DRINKS,
    "time": TIMES,
    "activity": ACTIVITIES,
    "place": PLACES,
    "freq": FREQUENCIES,
    "project": PROJECTS,
    "tool": TOOLS,
    "tool2": TOOLS,
    "food2": FOODS,
    "goal": GOALS,
    "deadline": DEADLINES,
    "reason": REASONS,
    "task": TASKS,
    "weekday": WEEKDAYS,
    "hour": HOURS,
    "food": FOODS,
    "adj": ADJECTIVES,
    "topic": TOPICS,
}


def _fill(template: str, rng: random.Random) -> str:
    out = template
    values: dict[str, str] = {}
    for slot, words in SLOTS.items():
        token = "{" + slot + "}"
        if token in out:
            value = rng.choice(words)
            if slot == "tool2":
                while value == values.get("tool"):
                    value = rng.choice(words)
            values[slot] = value
            out = out.replace(token, value)
    return out


def fact_sentences(n: int, seed: int, exclude: set[str] | None = None) -> list[tuple[str, str]]:
    """``n`` distinct ``(category, sentence)`` pairs, deterministic for a seed."""
    rng = random.Random(seed)
    seen: set[str] = set(exclude or ())
    out: list[tuple[str, str]] = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > n * 50:
            raise RuntimeError(f"could not draw {n} distinct sentences")
        category, template = rng.choice(TEMPLATES)
        text = _fill(template, rng)
        if text in seen:
            continue
        seen.add(text)
        out.append((category, text))
    return out


QUERY_TEMPLATES = [
    "what does {name} drink {time}",
    "where does the {relation} {name} live",
    "which tool is used for {project} and why",
    "reminder about {task} on {weekday}",
    "deadline for {project} with {tool}",
    "does the user eat {food} or {food2}",
    "why did the team choose {tool} for {project}",
    "how often does the user visit {city} {time}",
    "{adj} answers about {topic}",
    "does {name} like {activity}",
]


def query_sentences(n: int, seed: int) -> list[str]:
    """``n`` distinct short, question-like queries over the same vocabulary."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > n * 50:
            raise RuntimeError(f"could not draw {n} distinct queries")
        text = _fill(rng.choice(QUERY_TEMPLATES), rng)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


ADVERBS = ["really", "still", "often", "recently", "definitely", "usually", "honestly", "now"]
TRAILERS = [
    "as of last week",
    "according to the user",
    "noted again today",
    "mentioned twice",
    "per the last chat",
    "confirmed in passing",
    "said with emphasis",
    "in a voice note",
]


def vary(sentence: str, rng: random.Random) -> str:
    """A word-level variation of ``sentence``: inserted adverbs, a dropped word, a trailing clause."""
    words = sentence.rstrip(".").split()
    for _ in range(rng.randint(1, 2)):
        words.insert(rng.randrange(1, len(words)), rng.choice(ADVERBS))
    if rng.random() < 0.3 and len(words) > 8:
        del words[rng.randrange(2, len(words) - 1)]
    if rng.random() < 0.6:
        words += rng.choice(TRAILERS).split()
    return " ".join(words) + "."


# ---------------------------------------------------------------------------------------------
# Timing and output
# ---------------------------------------------------------------------------------------------


@contextmanager
def timed() -> Iterator[list[float]]:
    """``with timed() as t: ...`` then ``t[0]`` is the elapsed seconds."""
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def latency_ms(fn: Callable[[int], object], n: int, warmup: int = 5) -> dict[str, float]:
    """Call ``fn(i)`` for i in range(n) (after ``warmup`` untimed calls); p50/p95/mean in ms."""
    for i in range(min(warmup, n)):
        fn(i)
    samples = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - start) * 1000.0)
    return {"p50": percentile(samples, 50), "p95": percentile(samples, 95), "mean": statistics.fmean(samples)}


def log(msg: str) -> None:
    """Progress to stderr (the figures go to stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    sep = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    lines = [sep, "| " + " | ".join(h.ljust(w) for h, w in zip(cells[0], widths, strict=True)) + " |", sep]
    for r in cells[1:]:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
    lines.append(sep)
    return "\n".join(lines)
