"""Retrieval quality on real conversations: LoCoMo's dev split, the ranking before and after.

    .venv/bin/python benchmarks/bench_locomo.py PATH/locomo10.json         # the dev split
    .venv/bin/python benchmarks/bench_locomo.py PATH/locomo10.json --misses  # and the questions missed
    .venv/bin/python benchmarks/bench_locomo.py PATH/locomo10.json --tune    # weight search: dev split + generator

LoCoMo (github.com/snap-research/LoCoMo, ``data/locomo10.json``) is ten real-length two-person
conversations over months: each has its sessions with their dates, an observation per dialogue turn
worth remembering (one fact, with the turn's id), and questions whose evidence is given as turn ids.
Its licence is CC BY-NC 4.0: download it yourself and pass its path. Nothing of it (the file, its
questions, per-question output) belongs in this repository, so this script writes only to a
temporary directory and prints aggregate figures (``--misses`` prints missed questions to your
terminal; do not commit that output).

**The split.** Conversations conv-26, conv-30, conv-41, conv-42 and conv-43 are the dev split, the
only ones the ranking was looked at and tuned on, and the default. The other five (conv-44,
conv-47 to conv-50) are the test split, kept for an external check against the same target: the
script refuses them unless ``--split test --external-check`` is given, and then it measures and
prints only (no ``--tune``, no ``--misses``). A conversation is read only after its split is known
to be the one asked for: the test split's questions are never read on a dev run.

**One home per conversation**, built from its observations: each session is one block (``## HH:MM
— sN``) in the daily log of the session's date, one ``- [context] text`` line per observation in
turn order; the real ``Indexer`` indexes it with the real model, and "today" is the day after the
last session.

**The questions** of categories 1 to 4 are asked with ``search()``, in the official mapping:
1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop (category 5, adversarial, has no answer and
is left out). A question is hit at k when one of the first k hits is an observation of one of its
evidence turns; "@10 incl. context" (the ``context=1`` variant) also counts the lines shown as a
hit's context. A question none of whose evidence turns has an observation cannot be hit by any
ranking: it is counted apart ("no observation") and left out of the recall.

**The rankings**, side by side on the same tables: plain cosine (the same model's vectors, exact,
top k by cosine alone); "before", ``search()`` as it was before this benchmark existed
(``baselines/search_before_real_data.py``); "after", today's ``search()``; "after +context",
today's with ``context=1``. ``--tune`` runs a coordinate search over the ranking's weights on the
dev split and on ``bench_retrieval.py``'s tuning history (seed 1) together: a candidate must not
lose on either against the shipped default.

Figures to stdout, progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from _common import log, table
from baselines import search_before_real_data as before_search
from memory_assets.core.capture.daily_log import LogFact, append_facts, sanitise_fact
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.search.ranking import RANKING, Ranking
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.retrieval import search
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.models.embedder import Embedder, shared_embedder
from memory_assets.core.ops.status import init_home
from memory_assets.core.settings import Settings

DEV_SPLIT = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
TEST_SPLIT = ("conv-44", "conv-47", "conv-48", "conv-49", "conv-50")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KINDS = tuple(CATEGORIES.values())
TARGET = 78.0  # recall@10 over the answerable questions, dev split and (externally) test split
_SESSION = re.compile(r"^session_(\d+)$")
_TURN = re.compile(r"D:?(\d+):(\d+)")


class DataError(ValueError):
    """The file is not LoCoMo's ``locomo10.json`` as this script knows it."""


def split_of(
    parser: argparse.ArgumentParser, split: str, external_check: bool, inspecting: bool
) -> tuple[str, ...]:
    """The conversations of ``split``; a parser error for the test split unless this is the external
    check (``--external-check``), and for the test split inspected (tuning, misses listed)."""
    if split == "test":
        if not external_check:
            parser.error(
                "the test split (conv-44, conv-47 to conv-50) is held out for the external check; "
                "run on the dev split (the default), or pass --external-check if this is that check"
            )
        if inspecting:
            parser.error(
                "--tune and --misses are for the dev split only: the test split is measured, never inspected"
            )
    return DEV_SPLIT if split == "dev" else TEST_SPLIT


# ---------------------------------------------------------------------------------------------
# Reading the file
# ---------------------------------------------------------------------------------------------


@dataclass
class Question:
    text: str
    kind: str
    evidence: frozenset[str]  # turn ids, "D3:12"


@dataclass
class Session:
    number: int
    when: datetime
    observations: list[tuple[str, str]]  # (turn id, text), in turn order
    dialogue: list[tuple[str, str, str]] = field(default_factory=list)  # (turn id, speaker, text), in order


@dataclass
class Conversation:
    sample_id: str
    sessions: list[Session]
    questions: list[Question]
    turns: dict[str, str] = field(default_factory=dict)  # turn id -> the turn's text (extraction)
    speakers: tuple[str, ...] = ()

    @property
    def today(self) -> date:
        return max(s.when for s in self.sessions).date() + timedelta(days=1)


def turn_ids(text: object) -> list[str]:
    """The turn ids in an evidence or observation field ("D3:12", "D8:6; D9:17", "D:11:26")."""
    if isinstance(text, list):
        return [t for item in text for t in turn_ids(item)]
    if not isinstance(text, str):
        return []
    return [f"D{a}:{b}" for a, b in _TURN.findall(text)]


def _turn_order(turn: str) -> tuple[int, int]:
    a, b = turn[1:].split(":")
    return int(a), int(b)


def _session_time(text: str, where: str) -> datetime:
    try:
        return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise DataError(
            f"{where}: cannot read the session date {text!r} (expected '1:56 pm on 8 May, 2023')"
        ) from exc


def load(path: Path, wanted: Sequence[str]) -> list[Conversation]:
    """The conversations ``wanted``, in that order. Only those are read past their sample id."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot read it as JSON ({exc}); pass LoCoMo's data/locomo10.json") from exc
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of conversations (LoCoMo's data/locomo10.json)")
    by_id = {c.get("sample_id"): c for c in data if isinstance(c, dict)}
    missing = [s for s in wanted if s not in by_id]
    if missing:
        raise DataError(f"{path}: no conversation {', '.join(missing)}; pass LoCoMo's data/locomo10.json")
    return [_conversation(by_id[s], f"{path} {s}") for s in wanted]


def _conversation(raw: dict[str, Any], where: str) -> Conversation:
    try:
        talk = raw["conversation"]
        observed = raw["observation"]
        qa = raw["qa"]
    except KeyError as exc:
        raise DataError(f"{where}: no field {exc}") from exc
    turns: dict[str, str] = {}
    sessions = []
    for key, value in talk.items():
        m = _SESSION.match(key)
        if not m or not isinstance(value, list):
            continue
        number = int(m.group(1))
        dialogue = []
        for turn in value:
            turns[turn.get("dia_id", "")] = turn.get("text", "")
            dialogue.append(
                (str(turn.get("dia_id", "")), str(turn.get("speaker", "")), str(turn.get("text", "")))
            )
        observations: list[tuple[str, str]] = []
        for per_speaker in (observed.get(f"session_{number}_observation") or {}).values():
            for item in per_speaker:
                if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                    continue
                ids = turn_ids(item[1])
                if ids and item[0].strip():
                    observations.append((ids[0], item[0].strip()))
                    observations.extend((extra, item[0].strip()) for extra in ids[1:])
        # One line per observation text (an observation naming several turns is one line, mapped
        # to all of them), in the order of its first turn.
        observations.sort(key=lambda o: _turn_order(o[0]))
        sessions.append(
            Session(
                number,
                _session_time(talk.get(f"{key}_date_time", ""), f"{where} {key}"),
                observations,
                dialogue,
            )
        )
    sessions.sort(key=lambda s: s.number)
    questions = [
        Question(q["question"], CATEGORIES[q["category"]], frozenset(turn_ids(q.get("evidence"))))
        for q in qa
        if q.get("category") in CATEGORIES
    ]
    speakers = tuple(str(talk[k]) for k in ("speaker_a", "speaker_b") if talk.get(k))
    return Conversation(raw["sample_id"], sessions, questions, turns, speakers)


# ---------------------------------------------------------------------------------------------
# The homes
# ---------------------------------------------------------------------------------------------


@dataclass
class Home:
    conversation: Conversation
    settings: Settings
    store: MemoryStore
    turns_of: dict[str, frozenset[str]]  # a line's content -> the turns it is an observation of
    questions: list[Question]  # the answerable ones
    unanswerable: dict[str, int]  # per kind: questions no observation can answer
    vectors: np.ndarray  # one query vector per answerable question
    ids: list[str] = field(default_factory=list)  # every row, for plain cosine
    contents: list[str] = field(default_factory=list)
    matrix: np.ndarray | None = None


def build_home(root: Path, conversation: Conversation, emb: Embedder) -> Home:
    settings = Settings.load(home=root / conversation.sample_id, profile="default", env={})
    init_home(settings)
    turns_of: dict[str, set[str]] = {}
    for session in conversation.sessions:
        lines: list[LogFact] = []
        written: set[str] = set()
        for turn, text in session.observations:
            content = sanitise_fact(text).content
            turns_of.setdefault(content, set()).add(turn)
            if content not in written:
                written.add(content)
                lines.append(LogFact(content, "context"))
        append_facts(settings.archive_dir, f"s{session.number}", lines, now=session.when)
    indexer = Indexer(settings, embedder=emb, today=conversation.today)
    indexer.sweep()
    observed = {t for ts in turns_of.values() for t in ts}
    answerable = [q for q in conversation.questions if q.evidence & observed]
    unanswerable = dict.fromkeys(KINDS, 0)
    for q in conversation.questions:
        if not q.evidence & observed:
            unanswerable[q.kind] += 1
    vectors = emb.embed([q.text for q in answerable])
    data = indexer.store.read_facts().table.to_arrow().select(["id", "content", "vector"])  # type: ignore[union-attr]
    matrix = np.asarray(data.column("vector").combine_chunks().flatten(), dtype=np.float32).reshape(
        data.num_rows, -1
    )
    matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return Home(
        conversation,
        settings,
        indexer.store,
        {k: frozenset(v) for k, v in turns_of.items()},
        answerable,
        unanswerable,
        vectors,
        data.column("id").to_pylist(),
        data.column("content").to_pylist(),
        matrix,
    )


# ---------------------------------------------------------------------------------------------
# Rankings and recall
# ---------------------------------------------------------------------------------------------

Result = list[tuple[str, list[str]]]  # (hit content, its context lines' contents), best first
Searcher = Callable[[Home, int], Result]


def cosine(home: Home, i: int) -> Result:
    assert home.matrix is not None
    v = home.vectors[i] / np.linalg.norm(home.vectors[i])
    order = np.argsort(-(home.matrix @ v), kind="stable")[:10]
    return [(home.contents[j], []) for j in order]


def before(home: Home, i: int) -> Result:
    q = home.questions[i]
    hits = before_search.search(
        home.store, q.text, query_vector=home.vectors[i], limit=10, today=home.conversation.today
    )
    return [(h.content, [c.content for c in h.context]) for h in hits]


def ranked(ranking: Ranking, context: int = 0) -> Searcher:
    def searcher(home: Home, i: int) -> Result:
        q = home.questions[i]
        hits = search(
            home.store,
            q.text,
            SearchFilters(limit=10, today=home.conversation.today, context=context),
            query_vector=home.vectors[i],
            ranking=ranking,
        )
        return [(h.content, [c.content for c in h.context]) for h in hits]

    return searcher


@dataclass
class Recall:
    hits: dict[str, dict[str, int]]  # kind -> "@1", "@5", "@10", "@10+ctx" -> questions hit
    counts: dict[str, int]  # answerable questions per kind
    unanswerable: dict[str, int]  # questions no observation can answer, per kind
    misses: list[tuple[str, str, str]] = field(default_factory=list)  # (conversation, kind, question)

    def rate(self, kind: str | None, metric: str = "@10", answerable: bool = False) -> float:
        """The share of questions hit. Over all questions (the unanswerable ones count as misses:
        the figure the target applies to), or over the answerable ones only."""
        kinds = KINDS if kind is None else (kind,)
        n = sum(self.counts[k] + (0 if answerable else self.unanswerable[k]) for k in kinds)
        return 100.0 * sum(self.hits[k][metric] for k in kinds) / n if n else float("nan")

    def macro(self, metric: str = "@10") -> float:
        return sum(self.rate(k, metric) for k in KINDS) / len(KINDS)


def evaluate(homes: Sequence[Home], searcher: Searcher) -> Recall:
    hits = {k: {"@1": 0, "@5": 0, "@10": 0, "@10+ctx": 0} for k in KINDS}
    counts = dict.fromkeys(KINDS, 0)
    unanswerable = {k: sum(h.unanswerable[k] for h in homes) for k in KINDS}
    misses = []
    for home in homes:
        for i, q in enumerate(home.questions):
            results = searcher(home, i)
            found = [bool(home.turns_of.get(content, frozenset()) & q.evidence) for content, _ in results]
            counts[q.kind] += 1
            for k in (1, 5, 10):
                hits[q.kind][f"@{k}"] += any(found[:k])
            shown = [c for content, ctx in results[:10] for c in (content, *ctx)]
            hits[q.kind]["@10+ctx"] += any(home.turns_of.get(c, frozenset()) & q.evidence for c in shown)
            if not any(found[:10]):
                misses.append((home.conversation.sample_id, q.kind, q.text))
    return Recall(hits, counts, unanswerable, misses)


def recall_table(rows: Sequence[tuple[str, Recall]], base: Recall) -> str:
    """Per kind and overall: recall@1/5/10 over all questions, the gain over ``base``, recall@10
    counting context lines, and recall@10 over the answerable questions only."""
    out = []
    for kind in (*KINDS, None):
        for label, r in rows:
            n = sum(r.counts[k] + r.unanswerable[k] for k in (KINDS if kind is None else (kind,)))
            out.append(
                [
                    (kind or "all") if label == rows[0][0] else "",
                    label,
                    n,
                    f"{r.rate(kind, '@1'):.1f}",
                    f"{r.rate(kind, '@5'):.1f}",
                    f"{r.rate(kind):.1f}",
                    "-" if r is base else f"{r.rate(kind) - base.rate(kind):+.1f}",
                    f"{r.rate(kind, '@10+ctx'):.1f}",
                    f"{r.rate(kind, answerable=True):.1f}",
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
            "@10 vs before",
            "@10 incl. context",
            "@10, answerable only",
        ],
    )


# ---------------------------------------------------------------------------------------------
# Tuning: the dev split and the generator together
# ---------------------------------------------------------------------------------------------

GRID: dict[str, list[Any]] = {
    "semantic": [0.7, 0.85, 1.0],
    "bm25": [0.03, 0.05, 0.1, 0.15, 0.2],
    "date": [0.3, 0.6],
    "recency": [0.1, 0.2, 0.4],
    "hop": [0.0, 0.1, 0.2, 0.3],
    "hop_anchors": [1, 2],
    "neighbour": [0.0, 0.3, 0.5, 0.7],
    "neighbour_anchors": [1, 2, 3, 5],
    "text_factor": [5, 10],
    "vector_factor": [4, 8],
}


def before_generator(home: Any, i: int, settings: Any = None) -> list[tuple[str, list[str]]]:
    """The generator's questions through the search before this benchmark existed."""
    import bench_retrieval as gen

    q = home.history.questions[i]
    hits = before_search.search(home.store, q.text, query_vector=home.vectors[i], limit=10, today=gen.TODAY)
    return [(h.content, []) for h in hits]


def tune(homes: Sequence[Home], generator: Any) -> None:
    """Coordinate search (two sweeps, one parameter at a time) from the shipped default. A candidate
    may not lose, on any kind of question of either the dev split or the generator's tuning
    history, against the search before this benchmark existed; among those, the one with the
    highest sum of the two macro recall@10 figures (mean over kinds) wins, recall@1 breaking ties."""
    import bench_retrieval as gen

    real_floor = evaluate(homes, before)
    made_floor = gen.evaluate(generator, before_generator)

    def score(ranking: Ranking) -> tuple[float, float, float, bool]:
        real = evaluate(homes, ranked(ranking))
        made = gen.evaluate(generator, gen.ranked(ranking))
        ok = all(real.rate(k) >= real_floor.rate(k) for k in KINDS) and all(
            made.by_kind[k]["@10"] >= made_floor.by_kind[k]["@10"] for k in gen.KINDS
        )
        return real.macro(), gen.macro(made), real.macro("@1") + gen.macro(made, "@1"), ok

    log(
        f"floor (the search before): dev macro @10 {real_floor.macro():.2f}, "
        f"generator macro @10 {gen.macro(made_floor):.2f}"
    )
    real_m, made_m, at1, ok = score(RANKING)
    best, best_key = RANKING, ((real_m + made_m, at1) if ok else (0.0, 0.0))
    log(f"tuning from {RANKING}: dev {real_m:.2f}, generator {made_m:.2f}{'' if ok else ' (loses a kind)'}")
    rows = [[0, "start", "", f"{real_m:.2f}", f"{made_m:.2f}", f"{at1 / 2:.2f}", "" if ok else "loses"]]
    for sweep in range(2):
        for name, values in GRID.items():
            for value in values:
                candidate = replace(best, **{name: value})
                if candidate == best:
                    continue
                real_m, made_m, at1, ok = score(candidate)
                key = (real_m + made_m, at1)
                rows.append(
                    [
                        sweep + 1,
                        name,
                        value,
                        f"{real_m:.2f}",
                        f"{made_m:.2f}",
                        f"{at1 / 2:.2f}",
                        "" if ok else "loses",
                    ]
                )
                if ok and key > best_key:
                    best, best_key = candidate, key
            log(f"  sweep {sweep + 1} {name}: best {getattr(best, name)} ({best_key[0]:.2f})")
    print("\n## Weight search (coordinate search, two sweeps; macro = mean recall@10 over kinds)\n")
    print(
        f"floor: the search before, dev macro @10 {real_floor.macro():.2f}, generator macro @10 "
        f"{gen.macro(made_floor):.2f}; 'loses' = below it on some kind of question of either\n"
    )
    print(
        table(
            rows, ["sweep", "parameter", "value", "dev macro @10", "generator macro @10", "mean macro @1", ""]
        )
    )
    print(f"\nchosen: {best}")
    print(f"shipped default: {RANKING}")


# ---------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", type=Path, help="LoCoMo's data/locomo10.json (downloaded by you)")
    parser.add_argument(
        "--split", choices=("dev", "test"), default="dev", help="which conversations (default dev)"
    )
    parser.add_argument(
        "--external-check",
        action="store_true",
        help="required with --split test: the held-out conversations are measured only for the external check",
    )
    parser.add_argument("--misses", action="store_true", help="list the questions each ranking misses at @10")
    parser.add_argument(
        "--tune", action="store_true", help="run the weight search on the dev split and the generator"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes")
    args = parser.parse_args()
    wanted = split_of(parser, args.split, args.external_check, inspecting=args.tune or args.misses)
    try:
        conversations = load(args.path, wanted)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    import lancedb
    import torch

    t0 = time.perf_counter()
    command = ".venv/bin/python benchmarks/bench_locomo.py " + " ".join(map(shlex.quote, sys.argv[1:]))
    print("# memory-assets retrieval on real conversations (LoCoMo)")
    print(f"\ncommand : {command.strip()}")
    print(f"started : {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC")
    print(
        f"machine : {platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}, "
        f"Python {platform.python_version()}, lancedb {lancedb.__version__}"
    )
    root = Path(tempfile.mkdtemp(prefix="bench_locomo_"))
    try:
        emb = shared_embedder()
        emb.embed(["warm up"])
        homes = []
        for c in conversations:
            start = time.perf_counter()
            homes.append(build_home(root, c, emb))
            log(
                f"  {c.sample_id}: {len(homes[-1].ids)} lines in {len(c.sessions)} sessions indexed "
                f"({time.perf_counter() - start:.1f} s)"
            )
        if args.tune:
            import bench_retrieval as gen

            log(f"building the generator's tuning history (seed {gen.TUNE_SEED})")
            tune(homes, gen.build_home(root, "generator", gen.TUNE_SEED, emb))
            return 0
        asked = sum(len(c.questions) for c in conversations)
        answerable = sum(len(h.questions) for h in homes)
        print(
            f"data    : {args.split} split ({', '.join(wanted)}); {sum(len(h.ids) for h in homes):,} observation lines "
            f"in {sum(len(c.sessions) for c in conversations)} sessions; {asked} questions of categories 1-4, "
            f"{answerable} with an observation of an evidence turn (the rest: "
            + ", ".join(f"{sum(h.unanswerable[k] for h in homes)} {k}" for k in KINDS)
            + ")"
        )
        print(f"ranking : {RANKING}")
        variants: list[tuple[str, Searcher]] = [
            ("cosine", cosine),
            ("before", before),
            ("after", ranked(RANKING)),
            ("after +context", ranked(RANKING, context=1)),
        ]
        results = []
        for label, fn in variants:
            start = time.perf_counter()
            results.append((label, evaluate(homes, fn)))
            log(f"  {label}: {time.perf_counter() - start:.1f} s")
        base = results[1][1]
        print(
            "\n## Recall: the share of questions with an observation of an evidence turn among the first k hits "
            "(over all questions; those with no such observation count as misses, except in the last column)\n"
        )
        print(recall_table(results, base))
        per = []
        for home in homes:
            row = [home.conversation.sample_id, len(home.conversation.questions)]
            for _, fn in variants[:3]:
                row.append(f"{evaluate([home], fn).rate(None):.1f}")
            per.append(row)
        print("\n## recall@10 per conversation\n")
        print(table(per, ["conversation", "questions", *(label for label, _ in variants[:3])]))
        if args.misses:
            for label, r in results[1:3]:
                print(f"\n{label} misses @10:")
                for sample, kind, text in r.misses:
                    print(f"  [{sample} {kind}] {text}")
        after = results[2][1]
        print("\n## Summary\n")
        summary = [
            [
                f"recall@10, {args.split} split (after; before)",
                f"{after.rate(None):.1f}; {base.rate(None):.1f}",
                f">= {TARGET:.0f}",
                "ok" if after.rate(None) >= TARGET else "MISSED",
            ]
        ]
        for kind in KINDS:
            gain = after.rate(kind) - base.rate(kind)
            summary.append(
                [f"recall@10 gain, {kind}", f"{gain:+.1f} points", ">= 0", "ok" if gain >= 0 else "MISSED"]
            )
        print(table(summary, ["figure", "value", "target", "verdict"]))
        print(f"\ntotal wall time {time.perf_counter() - t0:.0f} s")
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
