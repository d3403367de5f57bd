"""End-to-end recall through the real memory service: real conversations fed turn by turn, then
each question asked, as an assistant uses the memory (issue 25).

    .venv/bin/python benchmarks/bench_e2e.py --locomo PATH/locomo10.json                  # both dev sets
    .venv/bin/python benchmarks/bench_e2e.py --locomo PATH/locomo10.json --root /work/e2e-root  # keep the homes
    .venv/bin/python benchmarks/bench_e2e.py --locomo PATH/locomo10.json --root /work/e2e-root --reuse
    .venv/bin/python benchmarks/bench_e2e.py --only longmemeval --limit-questions 4     # a quick look
    .venv/bin/python benchmarks/bench_e2e.py --only longmemeval-s --sides now,cosine \
        --lme-source MEMORIA_CLONE --lme-cache DIR --root DIR                            # LongMemEval-S in full
    .venv/bin/python benchmarks/bench_e2e.py --only longmemeval-s,longmemeval-s-padded --lme-sample 30 \
        --sides now,cosine --cost --lme-cache DIR --root DIR                             # homes of -M's size

**Through the real server over HTTP.** Each side runs its own ``memory-assets serve`` (a
subprocess on a free loopback port, waited for until ready, stopped by its pid), serving one
root with one home per user, and every turn goes through ``POST /v1/users/{id}/turns``, every
question through ``POST /v1/users/{id}/search``. The sides, on the same questions:

* ``now``: the working tree's ``memory_assets`` (this repository);
* ``before``: the memory before the recall tier, the code at commit 151b190 (the parent of the
  recall tier's first commit b6c9f24), checked out by this script in a temporary ``git worktree``
  (removed at the end) and run with the same venv's python, ``PYTHONPATH`` pointing at the
  worktree (checked: its ``memory_assets.__file__`` is under the worktree). Its search takes no
  ``today`` (read from each side's OpenAPI document), so it asks as of the real day;
* ``cosine``: plain cosine over the raw turns with the project's embedder (the same model), exact
  top k, no server: a vector store of each home's raw user messages, asked in the same homes as
  the memory (two homes merged by score). The target is measured against it;
* ``cosine-all`` (LoCoMo only): the same over every turn of the conversation, both speakers'.
  It is far lower than ``cosine``: most questions name a speaker, and the other speaker's turns
  often address that speaker by name, so they crowd the top;
* ``cosine-pair``: the same as ``cosine`` over each turn as it was posted, the user's message and
  the assistant's text after it (a vector store of the exchanges). Printed beside the others; the
  target is measured against ``cosine``, which finds more on both sets.

**LoCoMo, dev split only** (conv-26, conv-30, conv-41 to conv-43; ``--locomo PATH``, the file you
download: CC BY-NC 4.0, never committed, and nothing of it is printed but aggregates unless you
ask ``--misses``). The file is read by ``bench_locomo.load``, the split by
``bench_locomo.split_of`` (the test split is refused unless ``--split test --external-check``, and
then never inspected), categories 1-4 in the official mapping. One home per speaker: each
speaker's turn is posted as that user's, with the other speaker's previous turn of the session as
the assistant's answer, the turn's id (``D1:3``) as the chat id and the session's date-time as
``at``, in order. A question goes to the home of the one speaker it names, else to both, the two
answers merged by score.

**LongMemEval-S, the dev sample** (``--longmemeval DIR``, 40 questions, MIT). One home per
question: each user message posted with the assistant's reply that follows it, ``at`` the
session's date, the chat id the session id and the message's index in it (``<session>:<i>``, ``i``
zero-padded to three digits),
sessions in date order. Asked with ``today`` = the question's date. Measured at the turn level (a
posted turn whose message or reply LongMemEval marks ``has_answer``) and at the session level (a
turn of an answer session).

**LongMemEval in full** (``--only longmemeval-s``; ``longmemeval-m`` likewise), the same way, over
every question of the set but those in ``--heldout`` (the dev sample's ``heldout-ids.txt``: kept
for an independent check, left out of every run). LongMemEval's own files (MIT) come from a clone
of github.com/hussainzs/Memoria (``--lme-source``, a work tree or a bare git directory; its
``evaluations/data/lme_jsons/<sessions>_<id>.json``, the prefix telling -S, 38-58 sessions, from
-M, 460-490), copied once into ``--lme-cache`` (outside the repository: never committed). Every
question type is asked; ``single-session-assistant`` questions have their evidence in the reply
(the turn it was posted with is the evidence turn); the abstention questions (``<id>_abs``, their
own kind here, whatever their type) name the sessions they are about, and mostly no evidence
turn: a question is measured at a level only where the data names its evidence there (most
abstention questions at the session level only, as is one whose evidence is an assistant message
opening a session, which no turn posts). ``all but abstention`` is printed beside ``all``.
``--lme-sample N`` asks N of them (a fixed pseudo-random order of ids), the same ids in every set
of the run. ``longmemeval-s-padded``: -S questions whose haystacks are padded to their -M
haystack's number of sessions (read from -M's file names) with other -S haystacks' non-answer
sessions (``longmemeval_padded``): a home of -M's size, for when -M's own files cannot be had.

**A hit at k**: one of the first k rows returned is, or was written from, an evidence turn (at
the session level, a turn of an evidence session: k rows, not k sessions). A transcript row is its
turn (its ``chat``); a fact row (any other source type) is every turn whose ``POST`` answer
reported that fact text as written (outcome ``new`` or ``revision``; recorded per home), and the
turn its ``said`` provenance names. A LoCoMo question none of whose evidence turns exists in the
data counts as a miss. **NDCG@10** (``ndcg_at``): the units (turns, or sessions) the top 10 rows
are from, ranked in the order they first appear, gain 1 for evidence, against the ideal of every
evidence unit first.

**Also printed**: per question type; which kind of row hit (fact or transcript) and why the misses
missed (the evidence was in the other speaker's home only; the evidence turn left no row; ranked
11-50 when asked for 50; not in the top 50); the share of evidence turns that left any row; the
index size on disk (``du`` of each home's index directory) per 1,000 turns posted; the targets
(now @10 ≥ cosine @10 + 10 points on both sets; no question type below before). With ``--cost``,
what a home of each LongMemEval set costs side by side: sessions and turns a home, its index,
posting time per 1,000 turns, search latency over HTTP, and in process ``search()`` against the
LanceDB queries it awaits (``home_cost``).

**Building takes long** (about 12,700 turns a side); ``--root DIR`` keeps the roots, the answers
of every ``POST`` (``DIR/records/<side>/<user>.jsonl``) and the cosine vectors, and ``--reuse``
only asks again (minutes). Without ``--reuse``, a ``--root`` run posts only the homes not yet
complete there (a home left incomplete is deleted and posted again). Homes are posted
concurrently (``--workers``, one home per worker at a time, each home's turns in order).

Each side asks from a fresh start of its server (after posting, it is restarted), as a
``--reuse`` run does: the start-up catch-up brings in what the writes left to a sweep, so a
re-ask sees the index the first ask saw.

Figures to stdout, progress to stderr, the figures as JSON with ``--json PATH``.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo: memory_assets_tests

import bench_locomo
from _common import log, percentile, table
from memory_assets_tests.processes import free_port, stop_tree

REPO = Path(__file__).resolve().parents[1]
BEFORE_COMMIT = "151b190"  # the parent of b6c9f24, the recall tier's first commit
SIDES = ("now", "before", "cosine", "cosine-all", "cosine-pair")
ANCHORS = ("cosine", "cosine-all", "cosine-pair")
SERVED = ("now", "before")
SETS = ("locomo", "longmemeval", "longmemeval-s", "longmemeval-m", "longmemeval-s-padded")
LONGMEMEVAL_DEFAULT = REPO.parent / "shared" / "data" / "longmemeval-dev"
HELDOUT_DEFAULT = LONGMEMEVAL_DEFAULT / "heldout-ids.txt"
LME_TYPES = (
    "single-session-user",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
# The whole sets also hold questions about what the assistant said, and abstention questions
# (``<id>_abs``: the answer is not in the history; reported as their own kind, whatever their type).
ABSTENTION = "abstention"
LME_FULL_TYPES = (*LME_TYPES, "single-session-assistant", ABSTENTION)
# LongMemEval's files in a clone of hussainzs/Memoria (MIT, LongMemEval's own question files):
# ``<sessions in the haystack>_<question_id>.json``; the prefix tells the variants apart.
LME_FILES = "evaluations/data/lme_jsons"
LME_VARIANTS = {"longmemeval-s": (38, 58), "longmemeval-m": (460, 490)}
LME_HOME_PREFIX = {
    "longmemeval": "lme",
    "longmemeval-s": "lms",
    "longmemeval-m": "lmm",
    "longmemeval-s-padded": "lmp",
}
KS = (1, 5, 10)
DIAGNOSE_LIMIT = 50  # a miss is asked again for this many rows: ranked 11-50, or not at all
MAX_TEXT = 32_768  # the server's default max_text_chars
TARGET_GAIN = 10.0  # now @10 >= cosine @10 + 10 points
READY_WAIT_S = 900.0  # start-up includes the catch-up sweep of every home: this, and 5 s a home
LAUNCH = "import sys; from memory_assets.cli import main; sys.exit(main(sys.argv[1:]))"
WHERE = "import os, memory_assets; print(os.path.realpath(memory_assets.__file__))"


class BenchError(RuntimeError):
    """A run that cannot go on: the message names what and the fix."""


# ---------------------------------------------------------------------------------------------
# The dev sets
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PostTurn:
    key: str  # unique in its set: "conv-26:D1:3", "099778bb:7e02e59b_4:2"
    chat: str  # the chat id posted
    user: str
    assistant: str
    at: str  # ISO date-time, UTC


@dataclass
class Question:
    qid: str
    kind: str
    text: str
    homes: tuple[str, ...]  # the homes it is asked in
    today: str  # YYYY-MM-DD: the day it is asked on
    evidence: dict[str, frozenset[str]]  # level -> the turn keys that make a hit
    group: str  # the cosine anchor's corpus


@dataclass
class DevSet:
    name: str
    kinds: tuple[str, ...]
    levels: tuple[str, ...]  # "turn" first: the level the targets and the coverage are on
    homes: dict[str, list[PostTurn]]  # user id -> its turns, in posting order
    questions: list[Question]
    corpus: dict[str, list[tuple[str, str]]]  # group -> (turn key, raw text): the cosine anchor
    note: str = ""
    # LoCoMo: a question whose evidence names no turn of the data counts as a miss. LongMemEval:
    # a question is measured at a level only where the data names its evidence there (an
    # abstention question marks no evidence turn, only the sessions it is about).
    empty_is_miss: bool = True

    def measured(self, level: str, kind: str | None = None) -> list[Question]:
        """The questions measured at ``level`` (of one kind, or all)."""
        return [
            q
            for q in self.questions
            if (kind is None or q.kind == kind) and (self.empty_is_miss or q.evidence.get(level))
        ]

    def chat_turn(self) -> dict[str, dict[str, str]]:
        """Per home, chat id -> turn key."""
        return {user: {t.chat: t.key for t in turns} for user, turns in self.homes.items()}

    def home_of(self) -> dict[str, str]:
        return {t.key: user for user, turns in self.homes.items() for t in turns}

    def limited(self, n: int | None) -> "DevSet":
        """The first ``n`` questions, the homes and corpora they need."""
        if n is None:
            return self
        questions = self.questions[:n]
        homes = {h for q in questions for h in q.homes}
        groups = {q.group for q in questions}
        return DevSet(
            self.name,
            self.kinds,
            self.levels,
            {u: t for u, t in self.homes.items() if u in homes},
            questions,
            {g: c for g, c in self.corpus.items() if g in groups},
            self.note,
            self.empty_is_miss,
        )


def user_slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def locomo_set(path: Path, wanted: Sequence[str]) -> DevSet:
    conversations = bench_locomo.load(path, wanted)
    homes: dict[str, list[PostTurn]] = {}
    corpus: dict[str, list[tuple[str, str]]] = {}
    questions: list[Question] = []
    unknown = 0
    for c in conversations:
        if len(c.speakers) != 2:
            raise bench_locomo.DataError(f"{path} {c.sample_id}: expected two speakers, got {c.speakers}")
        user_of = {s: f"locomo-{c.sample_id}-{user_slug(s)}" for s in c.speakers}
        for u in user_of.values():
            homes[u] = []
        group = corpus.setdefault(c.sample_id, [])
        for session in c.sessions:
            if not session.dialogue:
                raise bench_locomo.DataError(f"{path} {c.sample_id} session {session.number}: no turns")
            last: dict[str, str] = {}
            for dia, speaker, text in session.dialogue:
                if speaker not in user_of:
                    raise bench_locomo.DataError(
                        f"{path} {c.sample_id} {dia}: speaker {speaker!r} is neither of {c.speakers}"
                    )
                other = next(s for s in c.speakers if s != speaker)
                key = f"{c.sample_id}:{dia}"
                if text.strip():
                    homes[user_of[speaker]].append(
                        PostTurn(key, dia, text, last.get(other, ""), iso(session.when))
                    )
                    group.append((key, text))
                last[speaker] = text
        known = set(c.turns)
        for i, q in enumerate(c.questions):
            named = [s for s in c.speakers if re.search(rf"\b{re.escape(s.split()[0])}\b", q.text, re.I)]
            asked = (user_of[named[0]],) if len(named) == 1 else tuple(user_of[s] for s in c.speakers)
            evidence = frozenset(f"{c.sample_id}:{t}" for t in q.evidence if t in known)
            unknown += len(q.evidence - known)
            questions.append(
                Question(
                    f"{c.sample_id}#{i}",
                    q.kind,
                    q.text,
                    asked,
                    c.today.isoformat(),
                    {"turn": evidence},
                    c.sample_id,
                )
            )
    return DevSet(
        "locomo",
        bench_locomo.KINDS,
        ("turn",),
        homes,
        questions,
        corpus,
        f"{unknown} evidence turn id(s) name no turn of the data (left out)",
    )


def _lme_time(text: object, where: str) -> datetime:
    try:
        return datetime.strptime(re.sub(r"\s*\(\w+\)\s*", " ", str(text)).strip(), "%Y/%m/%d %H:%M").replace(
            tzinfo=UTC
        )
    except ValueError as exc:
        raise bench_locomo.DataError(
            f"{where}: cannot read the date {text!r} (expected '2023/05/20 (Sat) 08:24')"
        ) from exc


def _lme_question(
    f: Path, d: Any, kinds: Sequence[str], prefix: str
) -> tuple[str, list[PostTurn], list[tuple[str, str]], Question]:
    """One LongMemEval question file: its home's turns, its cosine corpus, the question.

    Each user message is posted with the assistant's reply after it; an evidence turn is a posted
    turn whose message, or reply, LongMemEval marks ``has_answer`` (a single-session-assistant
    question's evidence is in the reply). At the session level, every posted turn of an answer
    session is evidence."""
    try:
        qid, kind, text = str(d["question_id"]), str(d["question_type"]), str(d["question"])
        sessions, ids, dates = d["haystack_sessions"], d["haystack_session_ids"], d["haystack_dates"]
        answer_ids = set(d["answer_session_ids"])
        today = _lme_time(d["question_date"], f"{f} question_date").date().isoformat()
    except (ValueError, KeyError, TypeError) as exc:
        raise bench_locomo.DataError(
            f"{f}: not a LongMemEval question as this script reads it ({exc!r})"
        ) from exc
    if qid.endswith("_abs") and ABSTENTION in kinds:
        kind = ABSTENTION
    if kind not in kinds:
        raise bench_locomo.DataError(f"{f}: question_type {kind!r} is not one of {', '.join(kinds)}")
    if not len(sessions) == len(ids) == len(dates):
        raise bench_locomo.DataError(f"{f}: haystack_sessions, _session_ids and _dates differ in length")
    user = f"{prefix}-{user_slug(qid)}"
    turns: list[PostTurn] = []
    group: list[tuple[str, str]] = []
    turn_level: set[str] = set()
    session_level: set[str] = set()
    order = sorted(range(len(sessions)), key=lambda i: (_lme_time(dates[i], f"{f} haystack_dates[{i}]"), i))
    seen: Counter[str] = Counter()
    for i in order:
        sid = str(ids[i])
        name = sid if not seen[sid] else f"{sid}#{seen[sid]}"  # a session id given twice
        seen[sid] += 1
        at = iso(_lme_time(dates[i], f"{f} haystack_dates[{i}]"))
        session = sessions[i]
        for j, t in enumerate(session):
            if t.get("role") != "user" or not str(t.get("content", "")).strip():
                continue
            reply = []
            marked = bool(t.get("has_answer"))
            for nxt in session[j + 1 :]:
                if nxt.get("role") != "assistant":
                    break
                reply.append(str(nxt.get("content", "")))
                marked = marked or bool(nxt.get("has_answer"))
            chat = f"{name}:{j:03d}"  # zero-padded: a session's chats sort in their order
            key = f"{qid}:{chat}"
            turns.append(PostTurn(key, chat, str(t["content"]), "\n\n".join(reply), at))
            group.append((key, str(t["content"])))
            if marked:
                turn_level.add(key)
            if sid in answer_ids:
                session_level.add(key)
    question = Question(
        qid,
        kind,
        text,
        (user,),
        today,
        {"turn": frozenset(turn_level), "session": frozenset(session_level)},
        qid,
    )
    return user, turns, group, question


def _lme_dev_set(name: str, kinds: Sequence[str], items: Iterable[tuple[Path, Any]], note: str) -> DevSet:
    homes: dict[str, list[PostTurn]] = {}
    corpus: dict[str, list[tuple[str, str]]] = {}
    questions: list[Question] = []
    for f, d in items:
        user, turns, group, question = _lme_question(f, d, kinds, LME_HOME_PREFIX[name])
        homes[user] = turns
        corpus[question.qid] = group
        questions.append(question)
    return DevSet(
        name, tuple(kinds), ("turn", "session"), homes, questions, corpus, note, empty_is_miss=False
    )


def _read_json(f: Path) -> Any:
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise bench_locomo.DataError(f"{f}: not a LongMemEval question file ({exc!r})") from exc


def read_heldout(path: Path) -> set[str]:
    """The question ids kept for an independent check (one a line): left out of every run."""
    try:
        return {line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    except OSError as exc:
        raise bench_locomo.DataError(
            f"{path}: cannot read the held-out question ids ({exc}); pass --heldout PATH "
            "(the dev sample's heldout-ids.txt): those questions are left out of every run"
        ) from exc


def longmemeval_set(directory: Path, heldout: set[str] | None = None) -> DevSet:
    """The LongMemEval-S dev sample: a folder of ``<question_id>.json`` (the held-out ids left out)."""
    files = sorted(directory.glob("*.json"))
    if not files:
        raise bench_locomo.DataError(
            f"{directory}: no <question_id>.json files; pass the LongMemEval-S dev sample's folder with --longmemeval"
        )
    items = [(f, _read_json(f)) for f in files]
    left = [(f, d) for f, d in items if str(d.get("question_id")) not in (heldout or set())]
    note = f"{len(items) - len(left)} held-out question(s) left out" if len(left) < len(items) else ""
    return _lme_dev_set("longmemeval", LME_TYPES, left, note)


def bring_in_longmemeval(source: Path | None, cache: Path, name: str) -> Path:
    """The question files of one variant (``name``: longmemeval-s or -m) in ``cache/<name>/``, as
    ``<question_id>.json``: copied there once from ``source``, a clone of hussainzs/Memoria (a work
    tree, or a bare git directory read with ``git show``), its ``evaluations/data/lme_jsons/``. The
    variant is told by the file name's prefix, the number of sessions in the haystack (checked
    against the file). Never committed: the cache is outside the repository."""
    folder = cache / name
    done = folder / ".complete"
    if done.exists():
        return folder
    if source is None:
        raise bench_locomo.DataError(
            f"{folder}: LongMemEval's files are not there yet; pass --lme-source PATH, a clone of "
            "github.com/hussainzs/Memoria (work tree or git directory), to bring them in"
        )
    low, high = LME_VARIANTS[name]
    pattern = re.compile(r"^(\d+)_(.+)\.json$")
    if (source / LME_FILES).is_dir():
        names = [p.name for p in sorted((source / LME_FILES).iterdir())]

        def read(n: str) -> bytes:
            return (source / LME_FILES / n).read_bytes()

        origin = str(source / LME_FILES)
    else:
        listing = subprocess.run(
            ["git", f"--git-dir={source}", "ls-tree", "--name-only", f"HEAD:{LME_FILES}"],
            capture_output=True,
            text=True,
        )
        if listing.returncode != 0:
            raise bench_locomo.DataError(
                f"{source}: neither a work tree with {LME_FILES}/ nor a git directory holding it "
                f"({listing.stderr.strip()}); pass a clone of github.com/hussainzs/Memoria"
            )
        names = sorted(listing.stdout.split())

        def read(n: str) -> bytes:
            return subprocess.run(
                ["git", f"--git-dir={source}", "show", f"HEAD:{LME_FILES}/{n}"],
                capture_output=True,
                check=True,
            ).stdout

        commit = subprocess.run(
            ["git", f"--git-dir={source}", "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        origin = f"{source} at {commit}, {LME_FILES}/"
    wanted = [(n, m) for n in names if (m := pattern.match(n)) and low <= int(m.group(1)) <= high]
    if not wanted:
        raise bench_locomo.DataError(f"{origin}: no <sessions>_<id>.json file with {low}-{high} sessions")
    log(f"bringing in {len(wanted)} {name} question files from {origin} to {folder}")
    tmp = folder.with_name(folder.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for n, m in wanted:
        raw = read(n)
        d = json.loads(raw)
        if str(d.get("question_id")) != m.group(2) or len(d.get("haystack_sessions") or []) != int(
            m.group(1)
        ):
            raise bench_locomo.DataError(
                f"{origin}{n}: its question_id or session count does not match its name "
                f"({d.get('question_id')!r}, {len(d.get('haystack_sessions') or [])} sessions)"
            )
        (tmp / f"{m.group(2)}.json").write_bytes(raw)
    (tmp / ".complete").write_text(json.dumps({"source": origin, "files": len(wanted)}) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder


def sample_order(qid: str) -> str:
    """A fixed pseudo-random order of question ids (a sample is the first N of it)."""
    return hashlib.sha256(qid.encode()).hexdigest()


def longmemeval_full(folder: Path, name: str, heldout: set[str], only: set[str] | None) -> DevSet:
    """Every question of a variant in ``folder`` but the held-out ones (of ``only``, when given)."""
    files = sorted(folder.glob("*.json"))
    ids = {f.stem for f in files}
    kept = sorted(ids - heldout if only is None else ids & only - heldout, key=sample_order)
    items = [(folder / f"{qid}.json", _read_json(folder / f"{qid}.json")) for qid in kept]
    note = f"{len(files)} questions in the files, {len(ids & heldout)} held out and left out" + (
        f", a sample of {len(kept)} (the same ids in each LongMemEval set of the run)"
        if only is not None
        else ""
    )
    return _lme_dev_set(name, LME_FULL_TYPES, items, note)


def m_session_counts(source: Path | None, cache: Path) -> dict[str, int]:
    """Per question id, the sessions of its -M haystack, read from -M's file names
    (``<sessions>_<id>.json``) in the Memoria clone (kept in ``cache/longmemeval-m-sessions.json``):
    the names are there even where the files themselves could not be had."""
    path = cache / "longmemeval-m-sessions.json"
    if path.exists():
        return {k: int(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()}
    if source is None:
        raise bench_locomo.DataError(
            f"{path} is not there yet; pass --lme-source PATH (a Memoria clone) once"
        )
    if (source / LME_FILES).is_dir():
        names = [p.name for p in (source / LME_FILES).iterdir()]
    else:
        names = subprocess.run(
            ["git", f"--git-dir={source}", "ls-tree", "--name-only", f"HEAD:{LME_FILES}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    low, high = LME_VARIANTS["longmemeval-m"]
    counts = {
        m.group(2): int(m.group(1))
        for n in names
        if (m := re.match(r"^(\d+)_(.+)\.json$", n)) and low <= int(m.group(1)) <= high
    }
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(counts, sort_keys=True) + "\n", encoding="utf-8")
    return counts


def longmemeval_padded(
    folder: Path, counts: dict[str, int], heldout: set[str], only: set[str] | None
) -> DevSet:
    """-S questions, each haystack padded to its -M haystack's number of sessions (-M's own files
    could not be had here): the padding is sessions of the other -S haystacks, none an answer
    session of any question (``answer_*``) nor already in this haystack, drawn at random (seeded by
    the question id) and dated at random between the haystack's first and last session. This is
    how LongMemEval builds its haystacks (from the same pools), but it is not -M: its sessions
    are not -M's, so the figures are a home of -M's size, not -M's questions' figures."""
    files = sorted(folder.glob("*.json"))
    ids = {f.stem for f in files} & set(counts)
    kept = sorted(ids - heldout if only is None else ids & only - heldout, key=sample_order)
    pool: dict[str, list[Any]] = {}
    for f in files:
        d = _read_json(f)
        for sid, session in zip(d["haystack_session_ids"], d["haystack_sessions"], strict=True):
            if not str(sid).startswith("answer_"):
                pool.setdefault(str(sid), session)
    names = sorted(pool)
    items = []
    for qid in kept:
        f = folder / f"{qid}.json"
        d = _read_json(f)
        have = set(map(str, d["haystack_session_ids"]))
        need = counts[qid] - len(have)
        rng = random.Random(sample_order(qid))
        extra = rng.sample([n for n in names if n not in have], max(0, need))
        times = sorted(_lme_time(x, f"{f} haystack_dates") for x in d["haystack_dates"])
        span = (times[-1] - times[0]).total_seconds()
        dates = [
            (times[0] + timedelta(seconds=rng.uniform(0, span))).strftime("%Y/%m/%d (%a) %H:%M")
            for _ in extra
        ]
        d = {
            **d,
            "haystack_session_ids": [*d["haystack_session_ids"], *extra],
            "haystack_sessions": [*d["haystack_sessions"], *(pool[n] for n in extra)],
            "haystack_dates": [*d["haystack_dates"], *dates],
        }
        items.append((f, d))
    note = (
        f"-S questions padded to their -M haystack's session count with other -S haystacks' non-answer "
        f"sessions ({len(pool):,} in the pool); {len(kept)} questions"
    )
    return _lme_dev_set("longmemeval-s-padded", LME_FULL_TYPES, items, note)


def digest(turns: Sequence[PostTurn]) -> str:
    h = hashlib.sha256()
    for t in turns:
        h.update(json.dumps([t.key, t.chat, t.user, t.assistant, t.at]).encode())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# The servers
# ---------------------------------------------------------------------------------------------


def side_env(code: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MEMORY_HOME", "MEMORY_ROOT", "MEMORY_INDEX_URI")}
    env.update(
        {
            "PYTHONPATH": str(code),
            "LANCEDB_LOG": "error",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    return env


def check_code(code: Path) -> str:
    """The ``memory_assets`` a side's processes import: it must be ``code``'s."""
    out = subprocess.run(
        [sys.executable, "-c", WHERE],
        env=side_env(code),
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    where = out.stdout.strip()
    if out.returncode != 0 or not where.startswith(str(code.resolve()) + os.sep):
        raise BenchError(
            f"a process with PYTHONPATH={code} imports memory_assets from {where or out.stderr.strip()!r}, "
            f"not from {code}: the side would run the wrong code"
        )
    return where


class Worktree:
    """``git worktree add --detach TMP <commit>``, removed on exit."""

    def __init__(self, commit: str) -> None:
        self.commit = commit
        self.tmp = Path(tempfile.mkdtemp(prefix="bench_e2e_before_"))
        self.path = self.tmp / "tree"

    def __enter__(self) -> Path:
        out = subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(self.path), self.commit],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise BenchError(f"git worktree add {self.commit} failed: {out.stderr.strip()}")
        return self.path

    def __exit__(self, *exc: object) -> None:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(self.path)], capture_output=True
        )
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


@dataclass
class Server:
    side: str
    code: Path
    root: Path
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    today: bool = False  # its search body takes ``today``

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=600.0)

    def stop(self) -> None:
        stop_tree(self.proc, sig=signal.SIGTERM, grace=60.0)


def start_server(side: str, code: Path, root: Path, logs: Path) -> Server:
    root.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = logs / f"server-{side}.log"
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, "serve", "--root", str(root), "--port", str(port)],
            env=side_env(code),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=str(root),
            start_new_session=True,
        )
    server = Server(side, code, root, port, proc, log_path)
    try:
        homes = sum(1 for _ in (root / "users").iterdir()) if (root / "users").is_dir() else 0
        wait = READY_WAIT_S + 5.0 * homes
        deadline = time.monotonic() + wait
        while True:
            if proc.poll() is not None:
                raise BenchError(f"the {side} server exited ({proc.returncode}); its log: {log_path}")
            try:
                answer = httpx.get(f"{server.url}/ready", timeout=5)
                state = answer.json()
                if answer.status_code == 200 and state["catch_up"]["finished"]:
                    break
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            if time.monotonic() > deadline:
                raise BenchError(f"the {side} server was not ready in {wait:.0f} s; its log: {log_path}")
            time.sleep(0.5)
        schemas = httpx.get(f"{server.url}/openapi.json", timeout=30).json()["components"]["schemas"]
        server.today = any("today" in s.get("properties", {}) for n, s in schemas.items() if "Search" in n)
    except BaseException:
        server.stop()
        raise
    return server


def call(client: httpx.Client, method: str, url: str, **kwargs: Any) -> Any:
    """One request; a 503 (busy) is retried after its Retry-After, any other error raised with its body."""
    for attempt in range(60):
        answer = client.request(method, url, **kwargs)
        if answer.status_code == 503 and attempt < 59:
            time.sleep(float(answer.headers.get("Retry-After", "1")))
            continue
        if answer.status_code >= 400:
            raise BenchError(f"{method} {url}: {answer.status_code} {answer.text[:500]}")
        return answer.json()
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------------------------
# Posting, and what each POST wrote
# ---------------------------------------------------------------------------------------------


def norm(text: str) -> str:
    return " ".join(str(text).split()).casefold()


@dataclass
class Record:
    """What the POSTs of one home wrote: fact text -> the turns it was written from."""

    turns: int = 0
    done: bool = False
    digest: str = ""
    seconds: float = 0.0
    written: dict[str, set[str]] = field(default_factory=dict)
    turns_with_facts: int = 0
    facts_written: int = 0
    confirmations: int = 0
    truncated: int = 0
    ms: list[float] = field(default_factory=list)  # each POST's latency as the client saw it
    reindex_errors: int = 0


def read_record(path: Path) -> Record:
    rec = Record()
    if not path.exists():
        return rec
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        if item.get("done"):
            rec.done, rec.digest, rec.seconds = True, item["digest"], float(item["seconds"])
            continue
        rec.turns += 1
        rec.confirmations += int(item.get("confirmed", 0))
        rec.truncated += int(item.get("truncated", 0))
        rec.reindex_errors += bool(item.get("reindex_error"))
        if "ms" in item:
            rec.ms.append(float(item["ms"]))
        if item["written"]:
            rec.turns_with_facts += 1
        for content in item["written"]:
            rec.facts_written += 1
            rec.written.setdefault(norm(content), set()).add(item["turn"])
    return rec


def post_home(
    server: Server, user: str, turns: Sequence[PostTurn], path: Path, progress: Callable[[int], None]
) -> None:
    start = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    with server.client() as client, path.open("w", encoding="utf-8") as out:
        for t in turns:
            cut = int(len(t.user) > MAX_TEXT) + int(len(t.assistant) > MAX_TEXT)
            body = {
                "user": t.user[:MAX_TEXT],
                "assistant": t.assistant[:MAX_TEXT],
                "chat_id": t.chat,
                "at": t.at,
            }
            sent = time.perf_counter()
            answer = call(client, "POST", f"/v1/users/{user}/turns", json=body)
            ms = (time.perf_counter() - sent) * 1000.0
            facts = answer.get("facts") or []
            written = [f["content"] for f in facts if f.get("outcome") in ("new", "revision")]
            confirmed = sum(1 for f in facts if f.get("outcome") == "confirmation")
            item = {
                "turn": t.key,
                "written": written,
                "confirmed": confirmed,
                "truncated": cut,
                "ms": round(ms, 1),
                "server_ms": round(1000.0 * float((answer.get("timings") or {}).get("total", 0.0)), 1),
                "rows_embedded": answer.get("rows_embedded"),
                "turn_rows_embedded": answer.get("turn_rows_embedded"),
                "reindex_error": answer.get("reindex_error"),
            }
            out.write(json.dumps(item) + "\n")
            out.flush()
            progress(1)
        out.write(
            json.dumps(
                {
                    "done": True,
                    "turns": len(turns),
                    "digest": digest(turns),
                    "seconds": time.perf_counter() - start,
                }
            )
            + "\n"
        )


def build_side(server: Server, dev: DevSet, records: Path, workers: int) -> float:
    """Post every home of ``dev`` not yet complete in ``records`` (an incomplete one is posted
    again from scratch: its home was deleted before the server started). Returns the wall time."""
    todo = [
        (u, t)
        for u, t in dev.homes.items()
        if not (r := read_record(records / f"{u}.jsonl")).done or r.digest != digest(t)
    ]
    if not todo:
        return 0.0
    total = sum(len(t) for _, t in todo)
    done = [0]
    lock = threading.Lock()
    start = time.perf_counter()
    last = [start]

    def progress(n: int) -> None:
        with lock:
            done[0] += n
            now = time.perf_counter()
            if now - last[0] > 30 or done[0] == total:
                last[0] = now
                rate = done[0] / (now - start)
                log(
                    f"  {server.side}/{dev.name}: {done[0]:,}/{total:,} turns posted, {rate:.1f} turns/s, "
                    f"about {(total - done[0]) / max(rate, 1e-9) / 60:.0f} min left"
                )

    todo.sort(key=lambda ut: -len(ut[1]))  # the longest homes first: the pool ends together
    log(f"posting {total:,} turns to {len(todo)} {dev.name} homes on {server.side} ({workers} workers)")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(post_home, server, u, t, records / f"{u}.jsonl", progress) for u, t in todo]
        for f in futures:
            f.result()
    return time.perf_counter() - start


_INGEST_SETTINGS: dict[str, Any] = {}


def _ingest_worker_init(threads: int) -> None:
    """A bulk-import worker process: torch's threads split between the workers, the model loaded once."""
    import torch

    torch.set_num_threads(threads)


def ingest_home(root: Path, user: str, turns: Sequence[PostTurn], path: Path) -> tuple[int, float]:
    """A home built by the bulk import (``ingest-transcripts``, the library call the CLI command
    makes): the home's turns are written as the assistant's transcripts (one file per chat, in the
    format ``keep_turn`` writes), then ingested, in order, exactly once, in this process. The
    record is the one ``post_home`` writes, each turn's facts read from its ``TurnResult``; its
    ``ms`` is the turn's write path in process (plan, append, reindex), not an HTTP round trip."""
    from memory_assets.core.capture.transcripts import transcript_name, turn_lines
    from memory_assets.core.home import Home
    from memory_assets.core.ops.users import user_settings
    from memory_assets.core.write_path.extractor_choice import make_extractor
    from memory_assets.core.write_path.ingest import ingest_transcripts

    start = time.perf_counter()
    settings = user_settings(root, user)
    folder = settings.transcripts_dir
    folder.mkdir(parents=True, exist_ok=True)
    by_file: dict[str, PostTurn] = {}
    for t in turns:
        name = transcript_name(t.chat)
        by_file[name] = t
        at = datetime.fromisoformat(t.at.replace("Z", "+00:00"))
        text = turn_lines(t.chat, t.user[:MAX_TEXT], t.assistant[:MAX_TEXT], at)
        (folder / f"{name}.jsonl").write_text(text, encoding="utf-8")
    home = Home(settings)  # as the CLI's ingest-transcripts builds its parts
    result = ingest_transcripts(
        settings, make_extractor(settings), store=home.store, embedder=home.write_path_embedder()
    )
    failed = sorted({r.reindex_error for r in result.results if r.reindex_error})
    if result.turns != len(turns) or result.warnings or failed:
        raise BenchError(
            f"{user}: ingested {result.turns} of {len(turns)} turns; warnings {result.warnings}; "
            f"reindex errors {failed}"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for r in result.results:
            t = by_file[Path(str(r.transcript)).stem]
            facts = r.summary()["facts"]
            item = {
                "turn": t.key,
                "written": [f["content"] for f in facts if f.get("outcome") in ("new", "revision")],
                "confirmed": sum(1 for f in facts if f.get("outcome") == "confirmation"),
                "truncated": int(len(t.user) > MAX_TEXT) + int(len(t.assistant) > MAX_TEXT),
                "ms": round(1000.0 * sum(r.timings.values()), 1),
                "server_ms": round(1000.0 * sum(r.timings.values()), 1),
                "rows_embedded": r.rows_embedded,
                "turn_rows_embedded": r.turn_rows_embedded,
                "reindex_error": r.reindex_error,
            }
            out.write(json.dumps(item) + "\n")
        seconds = time.perf_counter() - start
        out.write(
            json.dumps({"done": True, "turns": len(turns), "digest": digest(turns), "seconds": seconds})
            + "\n"
        )
    return len(turns), seconds


def ingest_side(side_root: Path, dev: DevSet, records: Path, workers: int) -> float:
    """``build_side`` by the bulk import instead of ``POST``: every home not yet complete in
    ``records`` ingested by ``ingest_home``, ``workers`` processes at once (torch's threads split
    between them). Returns the wall time."""
    import multiprocessing

    todo = [
        (u, t)
        for u, t in dev.homes.items()
        if not (r := read_record(records / f"{u}.jsonl")).done or r.digest != digest(t)
    ]
    if not todo:
        return 0.0
    total = sum(len(t) for _, t in todo)
    todo.sort(key=lambda ut: -len(ut[1]))
    threads = max(1, (os.cpu_count() or 1) // workers)
    log(
        f"ingesting {total:,} turns into {len(todo)} {dev.name} homes ({workers} processes, {threads} torch threads each)"
    )
    start = last = time.perf_counter()
    done = 0
    context = multiprocessing.get_context("spawn")
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_ingest_worker_init, initargs=(threads,)
    ) as pool:
        futures = [pool.submit(ingest_home, side_root, u, t, records / f"{u}.jsonl") for u, t in todo]
        for f in as_completed(futures):
            done += f.result()[0]
            now = time.perf_counter()
            if now - last > 30 or done == total:
                last = now
                rate = done / (now - start)
                log(
                    f"  ingest/{dev.name}: {done:,}/{total:,} turns ingested, {rate:.1f} turns/s, "
                    f"about {(total - done) / max(rate, 1e-9) / 60:.0f} min left"
                )
    return time.perf_counter() - start


def clear_incomplete(side_root: Path, records: Path, dev: DevSet) -> list[str]:
    """Delete the home (and record) of each user whose record is not complete, before its server starts."""
    cleared = []
    for user, turns in dev.homes.items():
        path = records / f"{user}.jsonl"
        rec = read_record(path)
        if rec.done and rec.digest == digest(turns):
            continue
        home = side_root / "users" / user
        if home.exists() or path.exists():
            cleared.append(user)
        shutil.rmtree(home, ignore_errors=True)
        path.unlink(missing_ok=True)
    return cleared


# ---------------------------------------------------------------------------------------------
# Asking
# ---------------------------------------------------------------------------------------------


@dataclass
class Found:
    """One side's answer to one question at one level."""

    rank: int | None  # of the first row that is, or was written from, an evidence turn
    kind: str | None  # that row's: "fact" or "transcript"
    rank50: int | None = None  # asked again for 50 rows when missed at 10 (served sides)
    kind50: str | None = None  # the kind of the row found there
    cause: str | None = None  # why it missed at 10: one of CAUSES
    # ranked 11-50: the evidence row's semantic similarity and score against the top 10's
    closer: bool | None = None  # more similar to the question than some row of the top 10
    score_gap: float | None = None  # the 10th row's score minus the evidence row's
    above: list[str] = field(default_factory=list)  # the kinds of the top 10 rows above it
    ndcg: float | None = None  # NDCG@10 of the top 10 (see ``ndcg_at``); None: no evidence at this level


@dataclass
class Maps:
    """What maps a returned row of a home to the turns it is, or was written from."""

    chat_turn: dict[str, dict[str, str]]
    written: dict[str, dict[str, set[str]]]

    def turns_of(self, home: str, row: dict[str, Any]) -> tuple[set[str], set[str], str]:
        """(the turns the row is or was written from, the turn its ``said`` names, its kind)."""
        chats = self.chat_turn.get(home, {})
        if row.get("source_type") == "transcript":
            chat = row.get("chat")
            if not isinstance(chat, str):
                chat = Path(str(row.get("source_file") or "")).stem
            key = chats.get(chat)
            return ({key} if key else set()), set(), "transcript"
        keys = set(self.written.get(home, {}).get(norm(row.get("content", "")), set()))
        said = row.get("said")
        named = set()
        if isinstance(said, dict) and isinstance(said.get("chat"), str) and said["chat"] in chats:
            named.add(chats[said["chat"]])
        return keys, named, "fact"


def session_of(key: str) -> str:
    """A turn key's session: "099778bb:7e02e59b_4:2" -> "099778bb:7e02e59b_4" (LoCoMo: "conv-26:D1")."""
    return key.rsplit(":", 1)[0]


def units(level: str, keys: Iterable[str]) -> set[str]:
    """The level's units of some turn keys: the turns themselves, or their sessions."""
    return set(keys) if level == "turn" else {session_of(k) for k in keys}


def ndcg_at(rows: Sequence[set[str]], relevant: set[str], k: int = 10) -> float | None:
    """NDCG@k of the ranking the top ``k`` rows give the level's units (turns, or sessions).

    Each row stands for the units it is, or was written from (``rows[i]``); the units are ranked
    in the order they first appear, a row naming no unit taking a rank of its own and a row
    naming only units already ranked taking none (so, at the session level, the sessions of the
    top k rows in the order they come, as a search over sessions would rank them). Gain 1 for a
    unit of the evidence, discount log2(rank + 1); the ideal puts min(k, evidence units) first.
    None when the level names no evidence."""
    if not relevant:
        return None
    order: list[str] = []
    seen: set[str] = set()
    for i, named in enumerate(rows[:k]):
        if not named:
            order.append(f"#row {i}")
            continue
        for unit in sorted(named):
            if unit not in seen:
                seen.add(unit)
                order.append(unit)
    dcg = sum(1.0 / np.log2(r + 2) for r, unit in enumerate(order[:k]) if unit in relevant)
    ideal = sum(1.0 / np.log2(r + 2) for r in range(min(k, len(relevant))))
    return float(dcg / ideal)


def row_units(rows: Sequence[tuple[str, dict[str, Any]]], maps: "Maps", level: str) -> list[set[str]]:
    """For each returned row, the level's units it is, or was written from (its ``said`` turn too)."""
    out = []
    for home, row in rows:
        keys, named, _ = maps.turns_of(home, row)
        out.append(units(level, keys | named))
    return out


def ask(client: httpx.Client, server: Server, q: Question, limit: int) -> list[tuple[str, dict[str, Any]]]:
    rows: list[tuple[str, dict[str, Any]]] = []
    for home in q.homes:
        body: dict[str, Any] = {"query": q.text[:MAX_TEXT], "limit": limit}
        if server.today:
            body["today"] = q.today
        rows += [(home, h) for h in call(client, "POST", f"/v1/users/{home}/search", json=body)["hits"]]
    rows.sort(key=lambda r: -float(r[1].get("score", 0.0)))  # two homes: merged by score (stable)
    return rows[:limit]


def first_hit(
    rows: Sequence[tuple[str, dict[str, Any]]], maps: Maps, evidence: frozenset[str]
) -> tuple[int | None, str | None]:
    """The rank of the first row that is, or was written from, an evidence turn, and its kind:
    "transcript", "fact" (written from it, as its POST reported), or "said" (a fact row linked to
    it by its ``said`` provenance only: the evidence turn's text is in the row's ``said``)."""
    for i, (home, row) in enumerate(rows):
        keys, named, kind = maps.turns_of(home, row)
        if keys & evidence:
            return i + 1, kind
        if named & evidence:
            return i + 1, "said"
    return None, None


@dataclass
class Listing:
    """What a home's index holds, as its memory list shows it."""

    transcript_chats: set[str]
    fact_contents: set[str]
    index_bytes: int
    rows_by_type: dict[str, int]
    bytes_by_part: dict[str, int] = field(default_factory=dict)  # the table's data, _indices, _versions, ...
    versions_kept: int = 0


def du(path: Path) -> int:
    """Bytes on disk under ``path`` (``du -s``: allocated blocks)."""
    total = 0
    for base, _, files in os.walk(path):
        for name in files:
            with suppress(OSError):
                total += os.lstat(os.path.join(base, name)).st_blocks * 512
    return total


def list_home(client: httpx.Client, server: Server, user: str) -> Listing:
    def every(params: dict[str, Any]) -> Iterable[dict[str, Any]]:
        cursor = None
        while True:
            page = call(
                client,
                "GET",
                f"/v1/users/{user}/memories",
                params={**params, "limit": 100, **({"cursor": cursor} if cursor else {})},
            )
            yield from page["memories"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    status = call(client, "GET", f"/v1/users/{user}/status")
    by_type = dict(status.get("index_rows_by_source_type") or {})
    chats: set[str] = set()
    if by_type.get("transcript"):
        for m in every({"source_type": "transcript"}):
            chat = ((m.get("provenance") or {}).get("block") or {}).get("chat")
            chats.add(chat if isinstance(chat, str) else Path(str(m.get("source_file"))).stem)
    facts = {norm(m["content"]) for m in every({})}
    index = server.root / "users" / user / str(status.get("index_uri") or "index")
    parts: Counter[str] = Counter()
    for table_dir in index.glob("*.lance"):
        for part in table_dir.iterdir():
            parts[part.name if part.is_dir() else "files"] += (
                du(part) if part.is_dir() else os.lstat(part).st_blocks * 512
            )
    return Listing(chats, facts, du(index), by_type, dict(parts), int(status.get("index_versions_kept") or 0))


@dataclass
class SideResult:
    found: dict[str, dict[str, Found]]  # qid -> level -> Found
    listings: dict[str, Listing] = field(default_factory=dict)
    records: dict[str, Record] = field(default_factory=dict)
    seconds_asking: float = 0.0
    seconds_posting: float = 0.0  # the sum over homes of their posting time (from the records)
    top10: Counter[str] = field(default_factory=Counter)  # the kinds of the rows returned in the top 10s
    today: bool = False
    search_ms: list[float] = field(default_factory=list)  # each question's search (limit 10) over HTTP


def ask_side(server: Server, dev: DevSet, records: Path, workers: int) -> SideResult:
    """List every home, then ask every question (``workers`` requests at once; a question's
    answer does not depend on another's)."""
    recs = {u: read_record(records / f"{u}.jsonl") for u in dev.homes}
    incomplete = [u for u, r in recs.items() if not r.done or r.digest != digest(dev.homes[u])]
    if incomplete:
        raise BenchError(
            f"{server.side}: the homes {', '.join(incomplete[:5])}{' ...' if len(incomplete) > 5 else ''} of "
            f"{dev.name} are not complete in {records}; run without --reuse to post them"
        )
    maps = Maps(dev.chat_turn(), {u: r.written for u, r in recs.items()})
    home_of = dev.home_of()
    start = time.perf_counter()
    result = SideResult({}, records=recs, today=server.today)
    local = threading.local()
    clients: list[httpx.Client] = []
    lock = threading.Lock()

    def client() -> httpx.Client:
        if not hasattr(local, "client"):
            local.client = server.client()
            with lock:
                clients.append(local.client)
        return local.client  # type: ignore[no-any-return]

    def one(q: Question) -> tuple[dict[str, Found], list[str]]:
        sent = time.perf_counter()
        rows = ask(client(), server, q, 10)
        with lock:
            result.search_ms.append((time.perf_counter() - sent) * 1000.0)
        found = {level: Found(*first_hit(rows, maps, q.evidence[level])) for level in dev.levels}
        for level in dev.levels:
            found[level].ndcg = ndcg_at(row_units(rows, maps, level), units(level, q.evidence[level]))
        missed = [lv for lv in dev.levels if found[lv].rank is None]
        if missed:
            wide = ask(client(), server, q, DIAGNOSE_LIMIT)
            for level in missed:
                f = found[level]
                f.rank50, f.kind50 = first_hit(wide, maps, q.evidence[level])
                f.cause = cause_of(q, level, f, home_of, left)
                if f.rank50 is not None and len(wide) >= 10:
                    hit, top = wide[f.rank50 - 1][1], [r for _, r in wide[:10]]
                    f.closer = float(hit.get("semantic", 0.0)) > min(
                        float(r.get("semantic", 0.0)) for r in top
                    )
                    f.score_gap = float(top[-1].get("score", 0.0)) - float(hit.get("score", 0.0))
                    f.above = ["transcript" if r.get("source_type") == "transcript" else "fact" for r in top]
        return found, ["transcript" if r.get("source_type") == "transcript" else "fact" for _, r in rows]

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            listed = pool.map(lambda u: (u, list_home(client(), server, u)), list(dev.homes))
            result.listings = dict(listed)
            left = {u: left_rows(result.listings[u], recs[u], dev.homes[u]) for u in dev.homes}
            for n, (q, (found, kinds)) in enumerate(
                zip(dev.questions, pool.map(one, dev.questions), strict=True)
            ):
                result.found[q.qid] = found
                result.top10.update(kinds)
                if (n + 1) % 200 == 0:
                    log(f"  {server.side}/{dev.name}: {n + 1}/{len(dev.questions)} questions asked")
    finally:
        for c in clients:
            c.close()
    result.seconds_asking = time.perf_counter() - start
    result.seconds_posting = sum(r.seconds for r in recs.values())
    return result


def left_rows(listing: Listing, rec: Record, turns: Sequence[PostTurn]) -> dict[str, set[str]]:
    """Per turn key of a home: the kinds of row it left in the index ("transcript", "fact")."""
    out: dict[str, set[str]] = {t.key: set() for t in turns}
    for t in turns:
        if t.chat in listing.transcript_chats:
            out[t.key].add("transcript")
    for content, keys in rec.written.items():
        if content in listing.fact_contents:
            for key in keys:
                out.setdefault(key, set()).add("fact")
    return out


CAUSES = {
    "other home": "evidence in the other speaker's home only",
    "no row": "the evidence turn left no row",
    "11-50, fact": "ranked 11-50, by a fact row",
    "11-50, transcript": "ranked 11-50, by a transcript row",
    "past 50, fact": "not in the top 50, though a fact row was written from it",
    "past 50, transcript": "not in the top 50, its transcript row the only row it left",
    "no evidence": "no evidence turn in the data",
}


def cause_of(
    q: Question, level: str, found: Found, home_of: dict[str, str], left: dict[str, dict[str, set[str]]]
) -> str:
    """Why a question missed at 10 (a key of ``CAUSES``)."""
    evidence = q.evidence[level]
    if not evidence:
        return "no evidence"
    asked = [k for k in evidence if home_of.get(k) in q.homes]
    if not asked:
        return "other home"
    kinds = set().union(*(left[home_of[k]].get(k, set()) for k in asked))
    if not kinds:
        return "no row"
    if found.rank50 is not None:
        return "11-50, transcript" if found.kind50 == "transcript" else "11-50, fact"
    return "past 50, fact" if "fact" in kinds else "past 50, transcript"


# ---------------------------------------------------------------------------------------------
# The cosine anchor
# ---------------------------------------------------------------------------------------------


def cosine_side(dev: DevSet, cache: Path | None, per_home: bool, pair: bool = False) -> SideResult:
    """Plain cosine over the raw turns: the turns posted to the homes a question is asked in
    (``per_home``: a plain vector store of each home's raw user messages, routed as the memory
    is), or every turn of its conversation (LoCoMo's ``cosine-all``). ``pair``: each turn's text
    is its user message and the assistant's text after it, as posted (``cosine-pair``)."""
    from memory_assets.core.models.embedder import shared_embedder

    emb = shared_embedder()
    start = time.perf_counter()
    keys = [k for g in dev.corpus.values() for k, _ in g]
    texts = [t for g in dev.corpus.values() for _, t in g]
    if pair:
        posted = {t.key: t for turns in dev.homes.values() for t in turns}
        texts = [
            f"{posted[k].user}\n{posted[k].assistant}" if posted[k].assistant else posted[k].user
            for k in keys
        ]
    queries = [q.text for q in dev.questions]
    tag = hashlib.sha256(json.dumps([emb.model_name, keys, texts, queries]).encode()).hexdigest()[:16]
    path = cache / f"cosine-{dev.name}-{tag}.npz" if cache else None
    if path is not None and path.exists():
        data = np.load(path)
        turns, asked = data["turns"], data["queries"]
        log(f"  cosine/{dev.name}: vectors read from {path}")
    else:
        log(f"  cosine/{dev.name}: embedding {len(texts):,} raw turns and {len(queries)} questions")
        turns = np.asarray(emb.embed(texts), dtype=np.float32)
        asked = np.asarray(emb.embed(queries), dtype=np.float32)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, turns=turns, queries=asked)
    turns = turns / np.linalg.norm(turns, axis=1, keepdims=True)
    asked = asked / np.linalg.norm(asked, axis=1, keepdims=True)
    span: dict[str, tuple[int, int]] = {}
    at = 0
    for g, items in dev.corpus.items():
        span[g] = (at, at + len(items))
        at += len(items)
    home_of = dev.home_of()
    result = SideResult({})
    for i, q in enumerate(dev.questions):
        lo, hi = span[q.group]
        scores = turns[lo:hi] @ asked[i]
        if per_home:
            scores = np.where([home_of[keys[j]] in q.homes for j in range(lo, hi)], scores, -np.inf)
        order = [j for j in np.argsort(-scores, kind="stable")[:DIAGNOSE_LIMIT] if scores[j] > -np.inf]
        ranked = [keys[lo + j] for j in order]
        result.found[q.qid] = {}
        for level in dev.levels:
            rank = next((n + 1 for n, k in enumerate(ranked[:10]) if k in q.evidence[level]), None)
            rank50 = next((n + 1 for n, k in enumerate(ranked) if k in q.evidence[level]), None)
            result.found[q.qid][level] = Found(rank, "turn" if rank else None, rank50)
            result.found[q.qid][level].ndcg = ndcg_at(
                [units(level, [k]) for k in ranked[:10]], units(level, q.evidence[level])
            )
    result.seconds_asking = time.perf_counter() - start
    return result


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------


def rate(dev: DevSet, res: SideResult, level: str, k: int, kind: str | None = None) -> float:
    """Recall@k in % over the questions measured at ``level`` (of ``kind``; "all but abstention"
    for every kind but the abstention questions)."""
    qs = _asked(dev, level, kind)
    if not qs:
        return float("nan")
    hit = sum(1 for q in qs if (r := res.found[q.qid][level].rank) is not None and r <= k)
    return 100.0 * hit / len(qs)


ALL_BUT_ABSTENTION = "all but abstention"


def _asked(dev: DevSet, level: str, kind: str | None) -> list[Question]:
    if kind == ALL_BUT_ABSTENTION:
        return [q for q in dev.measured(level) if q.kind != ABSTENTION]
    return dev.measured(level, kind)


def ndcg(dev: DevSet, res: SideResult, level: str, kind: str | None = None) -> float:
    """The mean NDCG@10 over the questions measured at ``level`` (a question of LoCoMo whose
    evidence names no turn of the data counts 0, as it counts a miss)."""
    qs = _asked(dev, level, kind)
    if not qs:
        return float("nan")
    return sum(res.found[q.qid][level].ndcg or 0.0 for q in qs) / len(qs)


def fmt(x: float, digits: int = 1) -> str:
    return "-" if x != x else f"{x:.{digits}f}"


def kinds_and_all(dev: DevSet) -> list[str | None]:
    """The rows of a per-type table: each kind, "all but abstention" when the set has abstention
    questions (the figure others publish leaves them out), then all (None)."""
    return [*dev.kinds, *([ALL_BUT_ABSTENTION] if ABSTENTION in dev.kinds else []), None]


def recall_tables(dev: DevSet, results: dict[str, SideResult], level: str) -> tuple[str, str]:
    n = len(dev.measured(level))
    rows = []
    for side, res in results.items():
        rows.append([side, *(fmt(rate(dev, res, level, k)) for k in KS), fmt(ndcg(dev, res, level), 3)])
    overall = (
        table(rows, ["side", *(f"@{k}" for k in KS), "NDCG@10"])
        + f"\n\n({n} questions measured at this level)"
    )
    rows = []
    shown = [k for k in kinds_and_all(dev) if k is not None]
    for side, res in results.items():
        rows.append(
            [
                side,
                *(fmt(rate(dev, res, level, 10, kind)) for kind in shown),
                fmt(rate(dev, res, level, 10)),
            ]
        )
    per = table(
        rows,
        [
            "@10",
            *(f"{k} ({len(_asked(dev, level, k))})" for k in shown),
            f"all ({n})",
        ],
    )
    return overall, per


def per_kind_at(dev: DevSet, results: dict[str, SideResult], level: str) -> str:
    rows = []
    for kind in kinds_and_all(dev):
        for n, (side, res) in enumerate(results.items()):
            rows.append(
                [
                    (kind or "all") if n == 0 else "",
                    len(_asked(dev, level, kind)) if n == 0 else "",
                    side,
                    *(fmt(rate(dev, res, level, k, kind)) for k in KS),
                    fmt(ndcg(dev, res, level, kind), 3),
                ]
            )
    return table(rows, ["type", "questions", "side", *(f"@{k}" for k in KS), "NDCG@10"])


def hit_kinds(dev: DevSet, results: dict[str, SideResult], level: str) -> tuple[str, dict[str, Any]]:
    """Per served side and type: hits @10 by the kind of the first hitting row; misses by cause."""
    causes = [c for c in CAUSES if c != "no evidence" or not dev.name.startswith("longmemeval")]
    if dev.name != "locomo":
        causes.remove("other home")
    rows, out = [], {}
    for side, res in results.items():
        if side not in SERVED:
            continue
        out[side] = {}
        for kind in (*dev.kinds, None):
            qs = dev.measured(level, kind)
            found = [res.found[q.qid][level] for q in qs]
            by_row = Counter(f.kind for f in found if f.rank is not None)
            by_cause = Counter(f.cause for f in found if f.rank is None)
            out[side][kind or "all"] = {
                "questions": len(qs),
                "hit_by": dict(by_row),
                "missed_by": dict(by_cause),
            }
            rows.append(
                [
                    side if kind is None or kind == dev.kinds[0] else "",
                    kind or "all",
                    len(qs),
                    by_row.get("fact", 0),
                    by_row.get("said", 0),
                    by_row.get("transcript", 0),
                    *(by_cause.get(c, 0) for c in causes),
                ]
            )
    header = [
        "side",
        "type",
        "questions",
        "hit: fact row",
        "hit: fact row, by its said only",
        "hit: transcript row",
        *(f"miss: {c}" for c in causes),
    ]
    legend = "; ".join(f"{c}: {CAUSES[c]}" for c in causes)
    return table(rows, header) + f"\n\nmisses: {legend}", out


def against(dev: DevSet, res: dict[str, SideResult], level: str) -> tuple[str, dict[str, Any]]:
    """Now against each anchor, question by question: hit by both, now only, the anchor only,
    neither; the questions the anchor hits and now misses, by now's cause; and now's misses ranked
    11-50: how often the evidence row is more similar to the question than a row of the top 10
    (the ranking's other terms put it below), the score it lacks, and what fills the top 10."""
    now = res["now"]
    rows, out = [], {}
    for anchor in (*ANCHORS, "before"):
        if anchor not in res:
            continue
        a = res[anchor]
        split: Counter[str] = Counter()
        lost: Counter[str] = Counter()
        for q in dev.measured(level):
            n_hit = now.found[q.qid][level].rank is not None
            a_hit = a.found[q.qid][level].rank is not None
            split[
                {(True, True): "both", (True, False): "now only", (False, True): "anchor only"}.get(
                    (n_hit, a_hit), "neither"
                )
            ] += 1
            if a_hit and not n_hit:
                lost[str(now.found[q.qid][level].cause)] += 1
        out[anchor] = {"split": dict(split), "anchor_only_by_now_cause": dict(lost)}
        rows.append(
            [
                anchor,
                split["both"],
                split["now only"],
                split["anchor only"],
                split["neither"],
                ", ".join(f"{c} {n}" for c, n in lost.most_common()) or "-",
            ]
        )
    text = table(
        rows,
        ["anchor", "both hit", "now only", "anchor only", "neither", "anchor only: now's miss, by cause"],
    )
    ranked = [
        f
        for q in dev.measured(level)
        if (f := now.found[q.qid][level]).rank is None and f.score_gap is not None
    ]
    if ranked:
        gaps = sorted(f.score_gap for f in ranked if f.score_gap is not None)
        above: Counter[str] = Counter(k for f in ranked for k in f.above)
        closer = sum(1 for f in ranked if f.closer)
        by_kind = Counter(f.kind50 for f in ranked)
        out["ranked_11_50"] = {
            "misses": len(ranked),
            "by_kind": dict(by_kind),
            "closer_than_a_top10_row": closer,
            "score_gap_p50": percentile(gaps, 50),
            "top10_rows_above": dict(above),
        }
        text += (
            f"\n\nnow's {len(ranked)} misses ranked 11-50 ({', '.join(f'{k} row {n}' for k, n in by_kind.items())}): "
            f"in {closer} the evidence row is more similar to the question than a row of the top 10; "
            f"the score it lacks to the 10th row, p50 {percentile(gaps, 50):.3f}; the top 10 above it: "
            + ", ".join(
                f"{k} {100.0 * n / max(sum(above.values()), 1):.0f} %" for k, n in above.most_common()
            )
        )
    return text, out


def coverage(dev: DevSet, res: SideResult) -> dict[str, Any]:
    """Of the evidence turns (turn level) of the questions asked: the share that left any row."""
    home_of = dev.home_of()
    left = {u: left_rows(res.listings[u], res.records[u], turns) for u, turns in dev.homes.items()}
    evidence = sorted({k for q in dev.questions for k in q.evidence["turn"]})
    kinds: Counter[str] = Counter()
    for key in evidence:
        kinds_left = left[home_of[key]].get(key, set())
        kinds["any"] += bool(kinds_left)
        kinds["transcript"] += "transcript" in kinds_left
        kinds["fact"] += "fact" in kinds_left
    n = len(evidence)
    return {
        "evidence_turns": n,
        **{k: (100.0 * kinds[k] / n if n else float("nan")) for k in ("any", "fact", "transcript")},
    }


def index_size(dev: DevSet, res: SideResult) -> dict[str, Any]:
    turns = sum(len(t) for t in dev.homes.values())
    size = sum(res.listings[u].index_bytes for u in dev.homes)
    rows: Counter[str] = Counter()
    parts: Counter[str] = Counter()
    for u in dev.homes:
        rows.update(res.listings[u].rows_by_type)
        parts.update(res.listings[u].bytes_by_part)
    return {
        "turns": turns,
        "index_bytes": size,
        "mb_per_1000_turns": size / 1e6 / turns * 1000 if turns else float("nan"),
        "mb_per_1000_turns_by_part": {k: v / 1e6 / turns * 1000 for k, v in sorted(parts.items())}
        if turns
        else {},
        "versions_kept_mean": sum(res.listings[u].versions_kept for u in dev.homes) / max(len(dev.homes), 1),
        "rows_per_1000_turns": {k: v / turns * 1000 for k, v in sorted(rows.items())} if turns else {},
        "facts_written": sum(res.records[u].facts_written for u in dev.homes),
        "turns_with_facts": sum(res.records[u].turns_with_facts for u in dev.homes),
        "truncated_texts": sum(res.records[u].truncated for u in dev.homes),
        "reindex_errors": sum(res.records[u].reindex_errors for u in dev.homes),
        "post_ms_p50": percentile([m for u in dev.homes for m in res.records[u].ms], 50),
        "post_ms_p95": percentile([m for u in dev.homes for m in res.records[u].ms], 95),
    }


def targets(dev: DevSet, results: dict[str, SideResult]) -> list[tuple[str, str, str, str | None]]:
    """(figure, value, target, verdict: ok / MISSED / None when a side is missing)."""
    out: list[tuple[str, str, str, str | None]] = []
    level = "turn"
    now, before = results.get("now"), results.get("before")
    for anchor in ("cosine", "cosine-all"):
        cos = results.get(anchor)
        if not (now and cos):
            continue
        a, b = rate(dev, now, level, 10), rate(dev, cos, level, 10)
        out.append(
            (
                f"{dev.name}: now @10 vs {anchor} @10 ({level} level)",
                f"{a:.1f} vs {b:.1f} ({a - b:+.1f})",
                f">= {anchor} + {TARGET_GAIN:.0f}",
                "ok" if a >= b + TARGET_GAIN else "MISSED",
            )
        )
    if now and before:
        for lv in dev.levels:
            worse = [
                f"{k} {rate(dev, now, lv, 10, k):.1f} < {rate(dev, before, lv, 10, k):.1f}"
                for k in dev.kinds
                if rate(dev, now, lv, 10, k) < rate(dev, before, lv, 10, k)
            ]
            out.append(
                (
                    f"{dev.name}: question types below before, @10 ({lv} level)",
                    "; ".join(worse) or "none",
                    "none",
                    "MISSED" if worse else "ok",
                )
            )
    if now:
        cov = coverage(dev, now)
        out.append(
            (
                f"{dev.name}: evidence turns that left any row (now)",
                f"{cov['any']:.1f} % of {cov['evidence_turns']}",
                "100 %",
                "ok" if cov["any"] >= 100.0 else "MISSED",
            )
        )
    return out


# ---------------------------------------------------------------------------------------------


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--locomo", type=Path, help="LoCoMo's data/locomo10.json (downloaded by you)")
    parser.add_argument(
        "--longmemeval",
        type=Path,
        default=LONGMEMEVAL_DEFAULT,
        help=f"the LongMemEval-S dev sample's folder (default {LONGMEMEVAL_DEFAULT})",
    )
    parser.add_argument(
        "--only",
        help=f"these sets only, comma-separated, of {', '.join(SETS)} (default: locomo,longmemeval, the dev sets)",
    )
    parser.add_argument(
        "--lme-source",
        type=Path,
        help="a clone of github.com/hussainzs/Memoria (work tree or git directory): LongMemEval's files for "
        "longmemeval-s / longmemeval-m, brought into --lme-cache once",
    )
    parser.add_argument(
        "--lme-cache",
        type=Path,
        help="where LongMemEval's question files are brought in (outside the repository: never committed)",
    )
    parser.add_argument(
        "--lme-sample",
        type=int,
        metavar="N",
        help="of longmemeval-s / -m, N questions (a fixed pseudo-random order of ids), the same ids in each",
    )
    parser.add_argument(
        "--shard",
        metavar="I/N",
        help="of longmemeval-s / -m, the I-th of N disjoint shards of the questions (every N-th of the "
        "fixed order of ids, from the I-th): one home a question, so the shards' per-question results "
        "(--json) add up to the whole set's; benchmarks/lme_shards.py merges them",
    )
    parser.add_argument(
        "--cost",
        action="store_true",
        help="after asking the now side: what its homes cost in process (search() against the LanceDB "
        "queries it awaits, each set's homes), beside the index size and posting time",
    )
    parser.add_argument(
        "--cost-rounds", type=int, default=3, help="rounds of --cost's interleaved timing (3)"
    )
    parser.add_argument(
        "--heldout",
        type=Path,
        default=HELDOUT_DEFAULT,
        help=f"question ids left out of every LongMemEval run (default {HELDOUT_DEFAULT})",
    )
    parser.add_argument(
        "--sides", default=",".join(SIDES), help=f"comma-separated, of {', '.join(SIDES)} (default all)"
    )
    parser.add_argument(
        "--limit-questions",
        type=int,
        metavar="N",
        help="the first N questions of each set (and the homes they need)",
    )
    parser.add_argument(
        "--root",
        type=Path,
        help="keep the roots, the POST records and the vectors here (default: a temporary directory, removed)",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="post nothing: ask the homes already built under --root"
    )
    parser.add_argument(
        "--workers", type=int, default=3, help="homes posted at once, and questions asked at once (default 3)"
    )
    parser.add_argument(
        "--build",
        choices=("post", "ingest"),
        default="post",
        help="how the served sides' homes are built: every turn POSTed to the server (post, the default), or "
        "the bulk import, ingest-transcripts in --workers processes (ingest; the homes are then asked "
        "through the server as always)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON here")
    parser.add_argument(
        "--misses", action="store_true", help="list the questions now misses @10 (dev data: never commit)"
    )
    parser.add_argument(
        "--split", choices=("dev", "test"), default="dev", help="LoCoMo's split (default dev)"
    )
    parser.add_argument(
        "--external-check", action="store_true", help="required with --split test (measured only)"
    )
    args = parser.parse_args()
    sides = tuple(s.strip() for s in args.sides.split(",") if s.strip())
    if not sides or any(s not in SIDES for s in sides):
        parser.error(f"--sides takes a comma-separated list of {', '.join(SIDES)}")
    if args.build == "ingest" and "before" in sides:
        parser.error("--build ingest imports with this checkout's memory_assets: leave the before side out")
    if args.reuse and args.root is None:
        parser.error("--reuse asks the homes kept under --root: give --root DIR")
    if args.limit_questions is not None and args.limit_questions < 1:
        parser.error("--limit-questions takes a positive number")
    wanted = bench_locomo.split_of(parser, args.split, args.external_check, inspecting=args.misses)
    names = (
        tuple(n.strip() for n in args.only.split(",") if n.strip())
        if args.only
        else ("locomo", "longmemeval")
    )
    if not names or any(n not in SETS for n in names):
        parser.error(f"--only takes a comma-separated list of {', '.join(SETS)}")
    if "locomo" in names and args.locomo is None:
        parser.error("LoCoMo needs --locomo PATH/locomo10.json (you download it), or pass --only longmemeval")
    full = [n for n in names if n in LME_VARIANTS]
    padded = "longmemeval-s-padded" in names
    if padded and "longmemeval-s" not in full:
        full.append("longmemeval-s")  # the padded homes are -S haystacks
    if full and args.lme_cache is None:
        parser.error(f"{', '.join(full)} need --lme-cache DIR (and --lme-source PATH the first time)")
    if args.lme_sample is not None and args.lme_sample < 1:
        parser.error("--lme-sample takes a positive number")
    shard: tuple[int, int] | None = None
    if args.shard is not None:
        i, _, n = args.shard.partition("/")
        if not (i.isdigit() and n.isdigit() and 1 <= int(i) <= int(n)):
            parser.error(f"--shard takes I/N with 1 <= I <= N, e.g. 2/6, not {args.shard!r}")
        shard = (int(i), int(n))
    devs: list[DevSet] = []
    try:
        heldout = read_heldout(args.heldout) if any(n.startswith("longmemeval") for n in names) else set()
        folders = {n: bring_in_longmemeval(args.lme_source, args.lme_cache.resolve(), n) for n in full}
        counts = m_session_counts(args.lme_source, args.lme_cache.resolve()) if padded else {}
        only = None
        if (args.lme_sample is not None or shard is not None) and folders:
            have = [{f.stem for f in d.glob("*.json")} for d in folders.values()] + (
                [set(counts)] if padded else []
            )
            order = sorted(set.intersection(*have) - heldout, key=sample_order)
            if shard is not None:  # every N-th of the fixed order, from the I-th: the shards partition it
                order = order[shard[0] - 1 :: shard[1]]
            only = set(order[: args.lme_sample] if args.lme_sample is not None else order)
        for name in names:
            if name == "locomo":
                dev = locomo_set(args.locomo, wanted)
            elif name == "longmemeval":
                dev = longmemeval_set(args.longmemeval, heldout)
            elif name == "longmemeval-s-padded":
                dev = longmemeval_padded(folders["longmemeval-s"], counts, heldout, only)
            else:
                dev = longmemeval_full(folders[name], name, heldout, only)
            devs.append(dev.limited(args.limit_questions))
    except bench_locomo.DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    import torch

    t0 = time.perf_counter()
    command = ".venv/bin/python benchmarks/bench_e2e.py " + " ".join(map(shlex.quote, sys.argv[1:]))
    dirty = sorted(
        {
            *git("diff", "--name-only", "HEAD", "--", "memory_assets").split(),
            *git("ls-files", "--others", "--exclude-standard", "--", "memory_assets").split(),
        }
    )
    print("# memory-assets end to end: turns posted to the real server, questions asked over HTTP")
    print(f"\ncommand : {command.strip()}")
    print(f"started : {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC")
    print(
        f"machine : {platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}, "
        f"Python {platform.python_version()}"
    )
    print(
        f"now     : the working tree at {git('rev-parse', '--short', 'HEAD')}"
        + (f" with uncommitted changes to {', '.join(dirty)}" if dirty else "")
    )
    print(f"before  : commit {BEFORE_COMMIT} (the parent of b6c9f24, the recall tier's first commit)")
    for dev in devs:
        turns = sum(len(t) for t in dev.homes.values())
        print(
            f"data    : {dev.name}: {len(dev.questions)} questions, {len(dev.homes)} homes, {turns:,} turns posted a side"
            + (f"; {dev.note}" if dev.note else "")
        )

    root = args.root.resolve() if args.root else Path(tempfile.mkdtemp(prefix="bench_e2e_"))
    root.mkdir(parents=True, exist_ok=True)
    print(
        "build   : "
        + (
            "the bulk import (ingest-transcripts, in process); asked through the server"
            if args.build == "ingest"
            else "every turn POSTed to the server"
        )
    )
    summary: dict[str, Any] = {
        "build": args.build,
        "commit": git("rev-parse", "HEAD"),
        "uncommitted": dirty,
        "shard": args.shard,
        "command": command.strip(),
        "started": datetime.now(UTC).isoformat(),
        "sets": {},
    }
    results: dict[str, dict[str, SideResult]] = {d.name: {} for d in devs}
    build_wall: dict[str, float] = {}
    costs: dict[str, dict[str, Any]] = {}
    try:
        for side in sides:
            if side in ANCHORS:
                for dev in devs:
                    if side == "cosine-all" and dev.name != "locomo":
                        continue  # one home holds all of a question's turns: the same as cosine
                    results[dev.name][side] = cosine_side(
                        dev, root / "cosine", per_home=side != "cosine-all", pair=side == "cosine-pair"
                    )
                continue
            side_root, records = root / side, root / "records" / side
            place: AbstractContextManager[Path] = (
                Worktree(BEFORE_COMMIT) if side == "before" else nullcontext(REPO)
            )
            with place as code:
                where = check_code(code)
                log(f"{side}: memory_assets from {where}")
                if not args.reuse:
                    for dev in devs:
                        cleared = clear_incomplete(side_root, records, dev)
                        if cleared:
                            log(
                                f"{side}: {len(cleared)} incomplete home(s) of {dev.name} cleared, to post again"
                            )
                if not args.reuse and args.build == "ingest":
                    for dev in devs:
                        build_wall[f"{side}/{dev.name}"] = ingest_side(side_root, dev, records, args.workers)
                elif not args.reuse:
                    server = start_server(side, code, side_root, root / "logs")
                    try:
                        log(f"{side}: serving {side_root} on {server.url}, to post")
                        for dev in devs:
                            build_wall[f"{side}/{dev.name}"] = build_side(server, dev, records, args.workers)
                    finally:
                        server.stop()
                # Asked from a fresh start, as a --reuse run asks: its start-up catch-up brings in
                # what the writes left to a sweep (MEMORY.md's rows), so both see the same index.
                server = start_server(side, code, side_root, root / "logs")
                try:
                    log(
                        f"{side}: serving {side_root} on {server.url}, to ask (search takes today: {server.today})"
                    )
                    for dev in devs:
                        results[dev.name][side] = ask_side(server, dev, records, args.workers)
                        log(f"{side}/{dev.name}: asked in {results[dev.name][side].seconds_asking:.0f} s")
                finally:
                    server.stop()
                if args.cost and side == "now":
                    for dev in devs:
                        log(f"{side}/{dev.name}: what a home costs, in process")
                        costs[dev.name] = home_cost(side_root, dev, args.cost_rounds)
        report(devs, results, sides, build_wall, summary, args.misses)
        if any(d.name.startswith("longmemeval") for d in devs) and "now" in sides:
            cost_report(devs, results, costs, summary)
        print(f"\ntotal wall time {time.perf_counter() - t0:.0f} s")
        summary["wall_seconds"] = time.perf_counter() - t0
        if args.json:
            args.json.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    finally:
        if args.root is None:
            shutil.rmtree(root, ignore_errors=True)
        else:
            log(f"kept {root}: re-ask with --root {root} --reuse")
    return 0


def home_cost(side_root: Path, dev: DevSet, rounds: int) -> dict[str, Any]:
    """In process, on the homes the server built (stopped by now): each question's ``search()``
    (limit 10, its ``today``, the query's embedding excluded, no recall logged) against the LanceDB
    queries it awaits, recorded from a search of it and replayed alone on the same table handle as
    ``search()`` awaits them (``bench_retrieval``'s recording), interleaved question by question
    for ``rounds`` rounds: the p50s and their ratio."""
    import bench_retrieval
    from memory_assets.core.home import Home
    from memory_assets.core.index.async_reads import run
    from memory_assets.core.models.embedder import shared_embedder
    from memory_assets.core.ops.users import user_settings
    from memory_assets.core.search import retrieval
    from memory_assets.core.search.filters import SearchFilters
    from memory_assets.core.search.retrieval import search

    vectors = shared_embedder().embed([q.text for q in dev.questions])
    cases: list[tuple[Callable[[], Any], Any, list[Any]]] = []
    original = retrieval._latest
    for q, vector in zip(dev.questions, vectors, strict=True):
        settings = user_settings(side_root, q.homes[0])
        store = Home(settings).store

        def one(store: Any = store, q: Question = q, vector: Any = vector, settings: Any = settings) -> Any:
            return search(
                store, q.text, SearchFilters(limit=10, today=date.fromisoformat(q.today)),
                query_vector=vector, settings=settings, log_recall=False,
            )  # fmt: skip

        chains: list[Any] = []

        def recording(st: Any, chains: list[Any] = chains) -> Any:
            facts, reader = original(st)
            return facts, bench_retrieval._Recording(reader, [], chains)

        retrieval._latest = recording  # type: ignore[assignment]
        try:
            one()
        finally:
            retrieval._latest = original  # type: ignore[assignment]
        cases.append((one, run(store.read_latest())[1], chains))  # type: ignore[index]
    searches: list[float] = []
    queries: list[float] = []
    for one, reader, chains in cases:  # warm
        one()
        run(bench_retrieval.replay(reader, chains))
    for _ in range(rounds):
        for one, reader, chains in cases:
            begin = time.perf_counter()
            one()
            searches.append((time.perf_counter() - begin) * 1000.0)
            begin = time.perf_counter()
            run(bench_retrieval.replay(reader, chains))
            queries.append((time.perf_counter() - begin) * 1000.0)
    return {
        "searches": len(searches),
        "search_p50_ms": percentile(searches, 50),
        "search_p95_ms": percentile(searches, 95),
        "queries_p50_ms": percentile(queries, 50),
        "queries_p95_ms": percentile(queries, 95),
        "ratio_p50": percentile(searches, 50) / max(percentile(queries, 50), 1e-9),
        "queries_per_search": sum(len(c) for _, _, c in cases) / max(len(cases), 1),
    }


def cost_report(
    devs: Sequence[DevSet],
    results: dict[str, dict[str, SideResult]],
    costs: dict[str, dict[str, Any]],
    summary: dict[str, Any],
) -> None:
    """What a home of each LongMemEval set cost the memory, side by side (the now side)."""
    rows = []
    for dev in devs:
        res = results[dev.name].get("now")
        if res is None or not dev.name.startswith("longmemeval"):
            continue
        turns = sum(len(t) for t in dev.homes.values())
        sessions = sum(len({session_of(t.key) for t in ts}) for ts in dev.homes.values())
        n = max(len(dev.homes), 1)
        size = sum(res.listings[u].index_bytes for u in dev.homes)
        posting = sum(res.records[u].seconds for u in dev.homes)
        post_ms = [m for u in dev.homes for m in res.records[u].ms]
        cost = costs.get(dev.name, {})
        figures = {
            "homes": len(dev.homes),
            "sessions_per_home": sessions / n,
            "turns_per_home": turns / n,
            "index_mb_per_home": size / 1e6 / n,
            "index_mb_per_1000_turns": size / 1e6 / max(turns, 1) * 1000,
            "posting_s_per_1000_turns": posting / max(turns, 1) * 1000,
            "post_ms_p50": percentile(post_ms, 50),
            "http_search_ms_p50": percentile(res.search_ms, 50),
            "http_search_ms_p95": percentile(res.search_ms, 95),
            **cost,
        }
        summary.setdefault("cost", {})[dev.name] = figures
        rows.append(
            [
                TITLES[dev.name],
                len(dev.homes),
                f"{figures['sessions_per_home']:.0f}",
                f"{figures['turns_per_home']:,.0f}",
                f"{figures['index_mb_per_home']:.1f}",
                f"{figures['index_mb_per_1000_turns']:.1f}",
                f"{figures['posting_s_per_1000_turns']:.0f} (POST p50 {fmt(figures['post_ms_p50'], 0)} ms)",
                f"{fmt(figures['http_search_ms_p50'], 0)} / {fmt(figures['http_search_ms_p95'], 0)}",
                (
                    f"{cost['search_p50_ms']:.1f} / {cost['queries_p50_ms']:.1f} = {cost['ratio_p50']:.2f}"
                    if cost
                    else "-"
                ),
            ]
        )
    if not rows:
        return
    print("\n## What a home costs, each LongMemEval set side by side (now)\n")
    print(
        table(
            rows,
            [
                "set",
                "homes",
                "sessions a home",
                "turns a home",
                "index MB a home",
                "index MB per 1,000 turns",
                "posting s per 1,000 turns",
                "search over HTTP ms, p50 / p95",
                "in process: search() p50 / its LanceDB queries p50 (ms)",
            ],
        )
    )
    print(
        "\n(posting: each home's turns posted in order, homes three at once; the index: du of each home's "
        "index directory after the posting and the server's start-up sweep; in process: query embedding "
        "excluded, interleaved, --cost-rounds rounds)"
    )


TITLES = {
    "locomo": "LoCoMo, dev split",
    "longmemeval": "LongMemEval-S, dev sample",
    "longmemeval-s": "LongMemEval-S",
    "longmemeval-m": "LongMemEval-M",
    "longmemeval-s-padded": "LongMemEval-S padded to -M's size",
}


def report(
    devs: Sequence[DevSet],
    results: dict[str, dict[str, SideResult]],
    sides: Sequence[str],
    build_wall: dict[str, float],
    summary: dict[str, Any],
    misses: bool,
) -> None:
    verdicts: list[tuple[str, str, str, str | None]] = []
    for dev in devs:
        res = {s: results[dev.name][s] for s in sides if s in results[dev.name]}
        out: dict[str, Any] = {"questions": len(dev.questions), "homes": len(dev.homes), "levels": {}}
        title = TITLES[dev.name]
        for level in dev.levels:
            what = {"turn": "an evidence turn", "session": "a turn of an answer session"}[level]
            print(f"\n## {title}: recall, {level} level (a row that is, or was written from, {what})\n")
            overall, per = recall_tables(dev, res, level)
            print(overall)
            print()
            print(per)
            print()
            print(per_kind_at(dev, res, level))
            rows_table, rows_json = hit_kinds(dev, res, level)
            if rows_json:
                print(f"\n### {title}, {level} level: the row that hit, and why the misses missed (@10)\n")
                print(rows_table)
            if "now" in res and ("cosine" in res or "before" in res):
                table_text, versus = against(dev, res, level)
                print(f"\n### {title}, {level} level: now against the anchors, question by question (@10)\n")
                print(table_text)
                out.setdefault("versus", {})[level] = versus
            out["levels"][level] = {
                side: {
                    "questions": len(dev.measured(level)),
                    "all": {**{f"@{k}": rate(dev, r, level, k) for k in KS}, "ndcg@10": ndcg(dev, r, level)},
                    "by_type": {
                        kind: {
                            **{f"@{k}": rate(dev, r, level, k, kind) for k in KS},
                            "ndcg@10": ndcg(dev, r, level, kind),
                            "questions": len(_asked(dev, level, kind)),
                        }
                        for kind in kinds_and_all(dev)
                        if kind is not None
                    },
                    **({"rows": rows_json[side]} if side in rows_json else {}),
                }
                for side, r in res.items()
            }
        served = {s: r for s, r in res.items() if s in SERVED}
        if served:
            print(f"\n### {title}: what the turns left, and the index on disk\n")
            rows = []
            for side, r in served.items():
                cov, size = coverage(dev, r), index_size(dev, r)
                out.setdefault("coverage", {})[side] = cov
                out.setdefault("index", {})[side] = size
                top = sum(r.top10.values())
                out.setdefault("top10_rows", {})[side] = dict(r.top10)
                out.setdefault("seconds", {})[side] = {
                    "posting_sum_over_homes": r.seconds_posting,
                    "posting_wall": build_wall.get(f"{side}/{dev.name}"),
                    "asking": r.seconds_asking,
                }
                rows.append(
                    [
                        side,
                        f"{cov['any']:.1f} % (fact {cov['fact']:.1f} %, transcript {cov['transcript']:.1f} %) of {cov['evidence_turns']}",
                        f"{size['turns_with_facts']:,} of {size['turns']:,} ({100.0 * size['turns_with_facts'] / max(size['turns'], 1):.1f} %)",
                        f"{size['mb_per_1000_turns']:.1f} MB ("
                        + ", ".join(f"{k} {v:.1f}" for k, v in size["mb_per_1000_turns_by_part"].items())
                        + f"; {size['versions_kept_mean']:.0f} versions kept a home)",
                        ", ".join(f"{k} {v:,.0f}" for k, v in size["rows_per_1000_turns"].items()),
                        f"transcript {100.0 * r.top10['transcript'] / max(top, 1):.0f} %",
                        f"p50 {fmt(size['post_ms_p50'], 0)} ms, p95 {fmt(size['post_ms_p95'], 0)} ms",
                        f"{r.seconds_asking:.0f} s",
                    ]
                )
            print(
                table(
                    rows,
                    [
                        "side",
                        "evidence turns that left any row",
                        "turns that wrote a fact",
                        "index on disk per 1,000 turns",
                        "rows per 1,000 turns",
                        "top-10 rows",
                        "POST latency",
                        "asking (with listing)",
                    ],
                )
            )
            if any(size.get("truncated_texts") for size in out["index"].values()):
                print(
                    f"\n(texts cut to {MAX_TEXT:,} characters: {[s['truncated_texts'] for s in out['index'].values()]})"
                )
        if misses and "now" in res:
            print(f"\n### {title}: the questions now misses @10 (dev data: never commit this output)\n")
            for q in dev.measured("turn"):
                f = res["now"].found[q.qid]["turn"]
                if f.rank is None:
                    print(f"  [{q.qid} {q.kind}] {q.text}  ({CAUSES[f.cause or 'no evidence']})")
        verdicts += targets(dev, res)
        # Each question's result, so that shards of one set add up (benchmarks/lme_shards.py).
        measured = {level: {q.qid for q in dev.measured(level)} for level in dev.levels}
        out["per_question"] = {
            side: {
                q.qid: {
                    "kind": q.kind,
                    **{
                        level: {"rank": r.found[q.qid][level].rank, "ndcg": r.found[q.qid][level].ndcg}
                        for level in dev.levels
                        if q.qid in measured[level]
                    },
                }
                for q in dev.questions
            }
            for side, r in res.items()
        }
        summary["sets"][dev.name] = out
    print("\n## Targets\n")
    print(
        table(
            [[f, v, t, verdict or "-"] for f, v, t, verdict in verdicts],
            ["figure", "value", "target", "verdict"],
        )
    )
    summary["targets"] = [
        {"figure": f, "value": v, "target": t, "verdict": verdict} for f, v, t, verdict in verdicts
    ]


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
