"""The memory service against the library in process, side by side in one run.

    .venv/bin/python benchmarks/bench_server.py                 # 100k rows, 60 s per load phase, 100 homes
    .venv/bin/python benchmarks/bench_server.py --quick         # 10k rows, 10 s phases, 20 homes
    .venv/bin/python benchmarks/bench_server.py --cache DIR     # build the 100k-row home once, reuse it
    .venv/bin/python benchmarks/bench_server.py --only ack      # (d) alone: the acknowledgement, before/after

Every figure comes from a real ``memory-assets serve`` subprocess (uvicorn, its own model) on a
free loopback port, called over real HTTP (httpx, one keep-alive connection per client thread).

(a) **Search at 100k rows.** A user's home whose index holds 100,000 rows (2,000 real sentences
    embedded by the bundled model, the rest word-level variants, as in bench_index.py), optimized
    with its ANN index. The same distinct questions are asked through ``search()`` in this
    process and through ``POST /v1/users/bench/search`` (each side embeds each question once, as
    an assistant would), interleaved so both see the same machine. p50 and p95 end to end, query
    embedding included. Target: HTTP p50 <= 1.25 x in process. The rows' daily logs are not on
    disk (the table is written directly, like bench_index.py's), so this server runs with
    ``MEMORY_SERVER_CATCH_UP=0``: a catch-up sweep would rightly delete rows no file holds.
(b) **Writes under load.** 8 client threads each POST turns (user messages of the shipped
    extraction corpus) for 60 s, one turn at a time: spread over 8 users (one each), then all on
    one user. turns/s, per-turn latency p50 and p95, 503s; then every acknowledged fact is
    counted in the users' daily logs: lost (acknowledged, not logged) and duplicated (logged more
    often than acknowledged) must both be 0. Against a single in-process ``process_turn`` loop
    over the same messages for as long, on a fresh home: throughput as a ratio.
(c) **Memory.** The server's resident set (VmRSS) once the model is loaded, after (b), and after
    100 more users' homes are opened (one memory written and one search made for each, so both
    the writer's and the reader's LanceDB handles are open).
(d) **A turn's acknowledgement, before and after the recall tier** (issue 25: at most 1.2x). A
    temporary ``git worktree add --detach`` of 151b190 (``--ack-baseline``; the code before the
    recall tier) and the working tree (or ``--ack-after REV``) each serve a fresh home, started
    from a neutral directory with its code first on PYTHONPATH and this venv's python; each
    server's first log line names the ``memory_assets`` it imported, and the script stops unless
    it is that checkout's. The same turns (LongMemEval-S dev sample: each user message with the
    assistant's reply, its session as the chat, its date; ``--ack-turns-from corpus`` for the
    extraction corpus's messages) are posted one at a time to one server then the other, the
    order alternating, at most one every ``--ack-pace`` seconds (default 1: one user's turns come
    seconds apart; 0: back to back). p50 and p95 of the round trip and their ratio, each step's
    time as the server reports it (``timings``), the time outside ``process_turns``; then each
    home's index per 1,000 turns: rows (transcript rows among them), bytes as the server left it
    and after an optimize keeping only the latest version, and ``transcripts/``'s bytes.

Figures go to stdout, progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from _common import log, percentile, table
from bench_index import synth_rows
from fixtures.sentences import fact_sentences, query_sentences
from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.home import Home
from memory_assets.core.search.retrieval import search
from memory_assets.core.index.table_writer import TableWriter
from memory_assets.core.models.embedder import shared_embedder
from memory_assets.core.ops.users import open_user_home, user_settings
from memory_assets.core.write_path.extraction import Turn
from memory_assets.core.write_path.extractor_choice import make_extractor
from memory_assets.core.write_path.process import process_turn

CLI = str(Path(sys.executable).parent / "memory-assets")
REPO = Path(__file__).resolve().parent.parent
IMPORTED = "memory_assets imported from "
# Runs the CLI of whichever memory_assets PYTHONPATH puts first, saying which one it is.
LAUNCH = (
    "import sys, memory_assets; "
    f"print({IMPORTED!r} + memory_assets.__file__, flush=True); "
    "from memory_assets.cli import main; sys.exit(main(sys.argv[1:]))"
)
BASELINE_REV = "151b190"  # the code before the recall tier (issue 25): what "today's" acknowledgement was
ACK_OVER_BASELINE_TARGET = 1.2
LONGMEMEVAL = REPO.parent / "shared" / "data" / "longmemeval-dev"
CORPUS = Path(__file__).parent / "data" / "extraction_corpus.jsonl"
HTTP_OVER_INPROCESS_TARGET = 1.25


# -- a server ----------------------------------------------------------------------------------


class Server:
    """A ``memory-assets serve`` subprocess on a free loopback port. ``code``: a checkout whose
    ``memory_assets`` the server imports (through PYTHONPATH, with this venv's python; the
    launcher writes the package's path to the server's log first, ``imported_from``); default:
    the installed ``memory-assets`` command."""

    def __init__(
        self,
        root: Path,
        env: dict[str, str] | None = None,
        code: Path | None = None,
        log_dir: Path | None = None,
        wait: bool = True,
    ) -> None:
        """``log_dir``: where its log goes (default: beside the root); ``wait=False``: return once
        started (``wait_until_up`` waits for the model without asking the server to be ready)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = (log_dir or root.parent) / f"server-{self.port}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115
        started = time.perf_counter()
        serve = ["serve", "--root", str(root), "--port", str(self.port)]
        env = {**os.environ, **(env or {})}
        if code is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(code), *filter(None, [os.environ.get("PYTHONPATH")])])
        self.proc = subprocess.Popen(
            [CLI, *serve] if code is None else [sys.executable, "-c", LAUNCH, *serve],
            env=env,
            # not the repository: ``python -c`` puts the working directory ahead of PYTHONPATH
            cwd=root.parent if code is not None else None,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        while wait:
            if self.proc.poll() is not None:
                raise SystemExit(f"the server exited: {self.log_path.read_text()[-3000:]}")
            try:
                ready = httpx.get(f"{self.url}/ready", timeout=5).json()
                if ready.get("ready") and ready["catch_up"]["finished"]:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.ready_s = time.perf_counter() - started

    def wait_until_up(self) -> None:
        """Until the model is loaded and the catch-up done, ready or not (a full disk, say)."""
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"the server exited: {self.log_path.read_text()[-3000:]}")
            try:
                state = httpx.get(f"{self.url}/ready", timeout=5).json()
                if state.get("model_loaded") and state["catch_up"]["finished"]:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)

    def imported_from(self) -> Path:
        """The ``memory_assets`` package this server imported (from the launcher's first line)."""
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith(IMPORTED):
                return Path(line[len(IMPORTED) :].strip()).parent
        raise SystemExit(f"the server at {self.url} did not say which memory_assets it imported")

    def rss_mb(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) of the server process, in MB."""
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines()
        )
        return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


# -- (a) search ----------------------------------------------------------------------------------


def build_search_home(root: Path, rows: int) -> Path:
    """``<root>/users/bench`` with ``rows`` index rows, optimized (reused when already built)."""
    marker = root / f".built-{rows}"
    if marker.exists():
        log(f"(a) reusing the {rows:,}-row home under {root}")
        return root
    shutil.rmtree(root, ignore_errors=True)
    emb = shared_embedder()
    home = open_user_home(root, "bench", create=True, embedder=emb)
    log(f"(a) building a {rows:,}-row home: embedding 2,000 real sentences")
    base = fact_sentences(2000, seed=44)
    table_rows, vectors = synth_rows(base, emb.embed([t for _, t in base]), rows, 0.03, per_file=100)
    writer = TableWriter(home.store)
    target = writer.table_for_write(emb.model_name, emb.dimension)
    for b in range(0, rows, 10_000):
        part = table_rows[b : b + 10_000]
        writer.apply_diff(target, [], part, vectors[b : b + 10_000], [None] * len(part))
    start = time.perf_counter()
    TableWriter(home.store).optimize()
    log(f"(a) optimized in {time.perf_counter() - start:.1f} s (ANN index: {home.store.has_ann_index()})")
    marker.write_text(datetime.now(UTC).isoformat())
    return root


def bench_search(root: Path, rows: int, n_queries: int) -> list[list[object]]:
    build_search_home(root, rows)
    server = Server(root, {"MEMORY_SERVER_CATCH_UP": "0"})
    log(f"(a) server ready in {server.ready_s:.1f} s")
    try:
        home = Home(user_settings(root, "bench"), shared_embedder())
        warm = query_sentences(10, seed=56)
        queries = query_sentences(n_queries, seed=55)
        inproc: list[float] = []
        http_ms: list[float] = []
        with httpx.Client(base_url=server.url, timeout=60) as http:

            def local(q: str) -> list[str]:
                return [h.id for h in search(home.store, q, embedder=home.embedder, settings=home.settings)]

            def remote(q: str) -> list[str]:
                answer = http.post("/v1/users/bench/search", json={"query": q})
                answer.raise_for_status()
                return [h["id"] for h in answer.json()["hits"]]

            for q in warm:
                local(q)
                remote(q)
            same = 0
            for i, q in enumerate(queries):
                order = (local, remote) if i % 2 == 0 else (remote, local)
                got = {}
                for fn in order:
                    start = time.perf_counter()
                    got[fn] = fn(q)
                    (inproc if fn is local else http_ms).append((time.perf_counter() - start) * 1000)
                same += got[local] == got[remote]
        p50_in, p50_http = percentile(inproc, 50), percentile(http_ms, 50)
        ratio = p50_http / p50_in
        log(f"(a) {same}/{n_queries} queries gave the same hits both ways")
        return [
            ["search in process (p50 / p95 ms)", f"{p50_in:.1f} / {percentile(inproc, 95):.1f}", "", ""],
            ["search over HTTP (p50 / p95 ms)", f"{p50_http:.1f} / {percentile(http_ms, 95):.1f}", "", ""],
            [
                "HTTP / in process (p50)",
                f"{ratio:.2f}x",
                f"<= {HTTP_OVER_INPROCESS_TARGET}x",
                "met" if ratio <= HTTP_OVER_INPROCESS_TARGET else "MISSED",
            ],
            [
                "HTTP / in process (p95)",
                f"{percentile(http_ms, 95) / percentile(inproc, 95):.2f}x",
                "",
                "",
            ],
            ["same hits both ways", f"{same}/{n_queries}", "", ""],
        ]
    finally:
        server.stop()


# -- (b) writes ------------------------------------------------------------------------------------


def statements() -> list[str]:
    lines = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    return [item["user"] for item in lines if item["expected"]]


def load_phase(
    server: Server,
    users: list[str],
    clients: int,
    seconds: float,
    texts: list[str],
    acked: dict[str, Counter[str]],
) -> dict[str, Any]:
    latencies: list[float] = []
    busy = errors = 0
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(k: int) -> None:
        nonlocal busy, errors
        user = users[k % len(users)]
        i = 0
        with httpx.Client(base_url=server.url, timeout=120) as http:
            while time.monotonic() < stop_at:
                text = texts[(k * 131 + i) % len(texts)]
                i += 1
                start = time.perf_counter()
                try:
                    answer = http.post(f"/v1/users/{user}/turns", json={"user": text, "chat_id": f"c{k}"})
                except httpx.HTTPError:
                    with lock:
                        errors += 1
                    continue
                took = (time.perf_counter() - start) * 1000
                with lock:
                    if answer.status_code == 200:
                        latencies.append(took)
                        body = answer.json()
                        acked[user].update(
                            f["content"] for f in body["facts"] if f["outcome"] != "confirmation"
                        )
                    elif answer.status_code == 503:
                        busy += 1
                    else:
                        errors += 1

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return {
        "turns": len(latencies),
        "turns_s": len(latencies) / wall,
        "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95),
        "busy": busy,
        "errors": errors,
    }


def in_process_loop(root: Path, seconds: float, texts: list[str]) -> dict[str, Any]:
    home = open_user_home(root, "solo", create=True, embedder=shared_embedder())
    extractor = make_extractor(home.settings)
    embedder = home.write_path_embedder()
    process_turn(
        Turn("I have a cat named Tab."),
        home.settings,
        extractor=extractor,
        store=home.store,
        embedder=embedder,
    )
    latencies = []
    stop_at = time.monotonic() + seconds
    start = time.perf_counter()
    i = 0
    while time.monotonic() < stop_at:
        t0 = time.perf_counter()
        process_turn(
            Turn(texts[i % len(texts)], chat_id="solo"),
            home.settings,
            extractor=extractor,
            store=home.store,
            embedder=embedder,
        )
        latencies.append((time.perf_counter() - t0) * 1000)
        i += 1
    wall = time.perf_counter() - start
    return {
        "turns": i,
        "turns_s": i / wall,
        "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95),
    }


def logged(root: Path, user: str) -> Counter[str]:
    archive = user_settings(root, user).archive_dir
    return Counter(f.content for p in sorted(archive.glob("*.md")) for f in read_daily_log(p).facts)


def bench_writes_and_memory(root: Path, clients: int, seconds: float, homes: int) -> list[list[object]]:
    texts = statements()
    log(f"(b) baseline: one in-process process_turn loop for {seconds:.0f} s")
    solo = in_process_loop(root.parent / "solo", seconds, texts)
    server = Server(root)
    rows: list[list[object]] = []
    try:
        rss_ready, _ = server.rss_mb()
        log(f"(b) server ready in {server.ready_s:.1f} s, {rss_ready:.0f} MB resident")
        spread = [f"w{k}" for k in range(clients)]
        acked: dict[str, Counter[str]] = {u: Counter() for u in [*spread, "one"]}
        with httpx.Client(base_url=server.url, timeout=120) as http:  # each home exists before the clock
            for user in acked:
                body = http.post(f"/v1/users/{user}/turns", json={"user": "I have a cat named Tab."}).json()
                acked[user].update(f["content"] for f in body["facts"] if f["outcome"] != "confirmation")
        log(f"(b) {clients} clients over {clients} users for {seconds:.0f} s")
        over_users = load_phase(server, spread, clients, seconds, texts, acked)
        log(f"(b) {clients} clients on one user for {seconds:.0f} s")
        one_user = load_phase(server, ["one"], clients, seconds, texts, acked)
        lost = duplicated = 0
        for user, counts in acked.items():
            in_logs = logged(root, user)
            lost += sum(max(0, n - in_logs[c]) for c, n in counts.items())
            duplicated += sum(max(0, n - counts[c]) for c, n in in_logs.items())
        for name, phase in (
            (f"{clients} clients, {clients} users", over_users),
            (f"{clients} clients, 1 user", one_user),
        ):
            rows.append(
                [
                    f"{name}: turns/s (p50 / p95 ms per turn)",
                    f"{phase['turns_s']:.1f} ({phase['p50']:.0f} / {phase['p95']:.0f})",
                    "",
                    f"{phase['turns']} turns, {phase['busy']} busy, {phase['errors']} errors",
                ]
            )
            rows.append([f"{name}: / in-process loop", f"{phase['turns_s'] / solo['turns_s']:.2f}x", "", ""])
        rows.insert(
            0,
            [
                "in-process process_turn loop: turns/s (p50 / p95 ms)",
                f"{solo['turns_s']:.1f} ({solo['p50']:.0f} / {solo['p95']:.0f})",
                "",
                f"{solo['turns']} turns",
            ],
        )
        rows.append(["acknowledged facts lost", lost, "0", "met" if lost == 0 else "MISSED"])
        rows.append(
            ["acknowledged facts duplicated", duplicated, "0", "met" if duplicated == 0 else "MISSED"]
        )
        rss_after_b, _ = server.rss_mb()
        log(f"(c) opening {homes} more users' homes")
        with httpx.Client(base_url=server.url, timeout=120) as http:
            for k in range(homes):
                http.post(
                    f"/v1/users/h{k}/memories", json={"text": f"Keeps notebook number {k} on the shelf"}
                ).raise_for_status()
                http.post(f"/v1/users/h{k}/search", json={"query": "notebook"}).raise_for_status()
            open_now = http.get("/ready").json()["homes_open"]
        rss_homes, peak = server.rss_mb()
        rows += [
            ["(c) resident memory, model loaded (MB)", f"{rss_ready:.0f}", "", ""],
            [f"(c) after (b), {len(acked)} homes open (MB)", f"{rss_after_b:.0f}", "", ""],
            [
                f"(c) after {homes} more homes opened, {open_now} open (MB)",
                f"{rss_homes:.0f}",
                "",
                f"{(rss_homes - rss_after_b) / homes:.1f} MB a home; peak {peak:.0f} MB",
            ],
        ]
    finally:
        server.stop()
    return rows


# -- (d) a turn's acknowledgement, before and after the recall tier ------------------------------


@dataclass
class PostedTurn:
    user: str
    assistant: str
    chat_id: str
    at: str  # ISO, UTC

    def body(self) -> dict[str, str]:
        return {"user": self.user, "assistant": self.assistant, "chat_id": self.chat_id, "at": self.at}


def longmemeval_turns(n: int, max_chars: int = 32_768) -> list[PostedTurn]:
    """``n`` real turns, in order: each user message of LongMemEval-S's dev sample
    (``../shared/data/longmemeval-dev/``, MIT), with the assistant's reply that follows it, its
    session as the chat and the session's date (a minute a turn). The questions' files are read in
    name order, each one's sessions in order, until ``n`` turns are drawn."""
    out: list[PostedTurn] = []
    for path in sorted(LONGMEMEVAL.glob("*.json")):
        item = json.loads(path.read_text())
        for session, sid, when in zip(
            item["haystack_sessions"], item["haystack_session_ids"], item["haystack_dates"], strict=True
        ):
            start = datetime.strptime(when[:10] + when[-5:], "%Y/%m/%d%H:%M").replace(tzinfo=UTC)
            for k, message in enumerate(session):
                if message["role"] != "user" or not message["content"].strip():
                    continue
                reply = (
                    session[k + 1]["content"]
                    if k + 1 < len(session) and session[k + 1]["role"] == "assistant"
                    else ""
                )
                at = (start + timedelta(minutes=len(out) % 50)).isoformat()
                out.append(
                    PostedTurn(message["content"][:max_chars], reply[:max_chars], f"lme-{sid}"[:64], at)
                )
                if len(out) == n:
                    return out
    if not out:
        raise SystemExit(f"no LongMemEval dev sample under {LONGMEMEVAL}; pass --ack-turns-from corpus")
    return out


def corpus_turns(n: int) -> list[PostedTurn]:
    """``n`` turns from the shipped extraction corpus (user messages only, statements and not),
    one chat, a minute apart."""
    lines = [json.loads(line)["user"] for line in CORPUS.read_text().splitlines()]
    day = datetime(2026, 11, 1, 9, tzinfo=UTC)
    return [
        PostedTurn(lines[k % len(lines)], "", "bench", (day + timedelta(minutes=k)).isoformat())
        for k in range(n)
    ]


def baseline_worktree(rev: str, into: Path) -> Path:
    """A detached worktree of ``rev`` (removed by ``remove_worktree``)."""
    path = into / f"memory-assets-{rev}"
    done = subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"git worktree add {rev} failed: {done.stderr.strip()}")
    return path


def remove_worktree(path: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], capture_output=True)
    subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True)


def describe_code(path: Path) -> str:
    """The commit a checkout is at, and whether its memory_assets/ has uncommitted changes."""
    head = subprocess.run(
        ["git", "-C", str(path), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(path), "status", "--porcelain", "--", "memory_assets"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head[:72] + (" + uncommitted changes in memory_assets/" if dirty else "")


def du_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def index_size(settings: Any) -> dict[str, float]:
    """The index table of a stopped server's home: its rows by kind and its bytes on disk as the
    server left them, then compacted (every version but the latest pruned, as an optimize with no
    retention leaves it), measured the same way on both sides."""
    import lancedb

    index_dir = Path(settings.index_uri)
    as_left = du_bytes(index_dir)
    table = lancedb.connect(str(index_dir)).open_table(settings.table_name)
    rows = table.count_rows()
    turns = table.count_rows("source_type = 'transcript'") if "source_type" in table.schema.names else 0
    with warnings.catch_warnings():  # "removes every version except the latest": what is wanted here
        warnings.simplefilter("ignore", UserWarning)
        table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    return {
        "rows": rows,
        "turn_rows": turns,
        "bytes": as_left,
        "compacted": du_bytes(index_dir),
        "transcripts": du_bytes(settings.transcripts_dir),
    }


def bench_ack(
    tmp: Path, n: int, rev: str, source: str, pace: float, after_rev: str | None = None
) -> list[list[object]]:
    """The same turns posted, one at a time, to a server of the code at ``rev`` and to one of the
    current code, interleaved turn by turn (the order alternating), each on a fresh home of its
    own: the acknowledgement's latency (the POST's round trip) side by side; then each home's
    index size per 1,000 turns. A turn is posted to both at most every ``pace`` seconds (an
    assistant posts a turn after each reply, so one user's turns come seconds apart; 0: back to
    back, each server's next turn right after the other's answer). ``after_rev``: a commit for the
    "after" side too (another worktree), instead of the working tree."""
    turns = longmemeval_turns(n) if source == "longmemeval" else corpus_turns(n)
    warm = corpus_turns(5)
    for side in ("before", "after"):
        (tmp / side).mkdir(parents=True, exist_ok=True)
    tree = baseline_worktree(rev, tmp)
    after_tree = baseline_worktree(after_rev, tmp) if after_rev else None
    after_code = after_tree or REPO
    described = {"before": describe_code(tree), "after": describe_code(after_code)}
    servers: dict[str, Server] = {}
    try:
        code = {"before": tree, "after": after_code}
        for side, path in code.items():
            # Verify the import first: PYTHONPATH must win over the editable install.
            probe = subprocess.run(
                [sys.executable, "-c", "import memory_assets; print(memory_assets.__file__)"],
                env={**os.environ, "PYTHONPATH": str(path)},
                cwd=tmp,  # as the servers run: the working directory would come before PYTHONPATH
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            if Path(probe).resolve().parent != (path / "memory_assets").resolve():
                raise SystemExit(f"{side}: PYTHONPATH={path} imported memory_assets from {probe}")
        for side, path in code.items():
            servers[side] = Server(tmp / side / "root", code=path)
            got = servers[side].imported_from().resolve()
            if got != (path / "memory_assets").resolve():
                raise SystemExit(f"the {side} server imported memory_assets from {got}, not {path}")
            log(f"(d) {side}: server ready in {servers[side].ready_s:.1f} s, memory_assets from {got}")
        latency: dict[str, list[float]] = {side: [] for side in servers}
        steps: dict[str, dict[str, list[float]]] = {side: {} for side in servers}
        facts: dict[str, int] = dict.fromkeys(servers, 0)
        clients = {side: httpx.Client(base_url=srv.url, timeout=120) for side, srv in servers.items()}
        try:
            for t in warm:  # each home created, the model and the tables warm, before the clock
                for client in clients.values():
                    client.post("/v1/users/ack/turns", json=t.body()).raise_for_status()
            log(f"(d) posting {len(turns)} turns ({source}) to both servers, interleaved")
            began = time.perf_counter()
            for i, t in enumerate(turns):
                time.sleep(max(0.0, began + i * pace - time.perf_counter()))
                order = ["before", "after"] if i % 2 == 0 else ["after", "before"]
                for side in order:
                    start = time.perf_counter()
                    answer = clients[side].post("/v1/users/ack/turns", json=t.body())
                    took = (time.perf_counter() - start) * 1000
                    answer.raise_for_status()
                    latency[side].append(took)
                    body = answer.json()
                    facts[side] += sum(f["outcome"] != "confirmation" for f in body["facts"])
                    for step, seconds in body.get("timings", {}).items():
                        steps[side].setdefault(step, []).append(seconds * 1000)
                    # the rest of the round trip: HTTP, the lane (a write or an optimize before it)
                    outside = took - body.get("timings", {}).get("total", 0.0) * 1000
                    steps[side].setdefault("(outside process_turns)", []).append(outside)
        finally:
            for client in clients.values():
                client.close()
    finally:
        for srv in servers.values():
            srv.stop()
        remove_worktree(tree)
        if after_tree is not None:
            remove_worktree(after_tree)
    sizes = {side: index_size(user_settings(tmp / side / "root", "ack")) for side in servers}
    posted = len(turns) + len(warm)
    per_k = 1000 / posted
    b50, a50 = percentile(latency["before"], 50), percentile(latency["after"], 50)
    b95, a95 = percentile(latency["before"], 95), percentile(latency["after"], 95)
    rows: list[list[object]] = [
        ["(d) code before", described["before"], "", ""],
        ["(d) code after", described["after"], "", ""],
        [
            f"(d) acknowledgement, before ({rev}): p50 / p95 ms",
            f"{b50:.1f} / {b95:.1f}",
            "",
            f"{len(turns)} turns ({source}), "
            + (f"one every {pace:g} s" if pace > 0 else "back to back")
            + f"; {facts['before']} facts written",
        ],
        [
            f"(d) acknowledgement, after ({after_rev or 'now'}): p50 / p95 ms",
            f"{a50:.1f} / {a95:.1f}",
            "",
            f"{facts['after']} facts written",
        ],
        [
            "(d) after / before, p50 (p95)",
            f"{a50 / b50:.2f}x ({a95 / b95:.2f}x)",
            f"<= {ACK_OVER_BASELINE_TARGET}x",
            "met" if a50 / b50 <= ACK_OVER_BASELINE_TARGET else "MISSED",
        ],
    ]
    for step in sorted(set(steps["before"]) | set(steps["after"])):
        b, a = steps["before"].get(step, []), steps["after"].get(step, [])
        rows.append(
            [
                f"(d)   step {step}: p50 before / after ms",
                f"{percentile(b, 50):.1f} / {percentile(a, 50):.1f}" if b else f"- / {percentile(a, 50):.1f}",
                "",
                f"{len(b)} / {len(a)} turns",
            ]
        )
    for side in ("before", "after"):
        size = sizes[side]
        rows.append(
            [
                f"(d) index per 1,000 turns, {side}: rows (turn rows); MB as left / compacted",
                f"{size['rows'] * per_k:,.0f} ({size['turn_rows'] * per_k:,.0f}); "
                f"{size['bytes'] * per_k / 1e6:.2f} / {size['compacted'] * per_k / 1e6:.2f}",
                "",
                f"{posted} turns posted; transcripts/ {size['transcripts'] * per_k / 1e6:.2f} MB per 1,000",
            ]
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000, help="index rows for (a)")
    parser.add_argument("--queries", type=int, default=200, help="questions asked each way in (a)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each load phase in (b)")
    parser.add_argument("--homes", type=int, default=100, help="homes opened for (c)")
    parser.add_argument("--cache", help="keep (a)'s built home here and reuse it on the next run")
    parser.add_argument("--quick", action="store_true", help="10k rows, 50 queries, 10 s phases, 20 homes")
    parser.add_argument("--only", choices=("search", "writes", "ack"), help="run one part")
    parser.add_argument(
        "--ack-turns", type=int, default=400, help="turns posted to each side in (d) (default 400)"
    )
    parser.add_argument(
        "--ack-turns-from",
        choices=("longmemeval", "corpus"),
        default="longmemeval",
        help="(d)'s turns: LongMemEval-S dev sample's user messages with their replies (default), or the "
        "extraction corpus's messages",
    )
    parser.add_argument(
        "--ack-pace",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="(d) posts a turn (to both servers) at most every SECONDS (default 1: one user's turns come "
        "seconds apart, after each reply); 0: back to back",
    )
    parser.add_argument(
        "--ack-after", metavar="REV", help="(d)'s code after: a commit (default: the working tree)"
    )
    parser.add_argument(
        "--ack-baseline", default=BASELINE_REV, help=f"(d)'s code before (a commit; default {BASELINE_REV})"
    )
    args = parser.parse_args()
    if args.quick:
        args.rows, args.queries, args.seconds, args.homes = 10_000, 50, 10.0, 20
    tmp = Path(tempfile.mkdtemp(prefix="bench_server_"))
    cache = Path(args.cache).expanduser().absolute() if args.cache else tmp / "search"
    rows: list[list[object]] = []
    try:
        if args.only in (None, "search"):
            rows += bench_search(cache / "root", args.rows, args.queries)
        if args.only in (None, "writes"):
            rows += bench_writes_and_memory(tmp / "writes" / "root", args.clients, args.seconds, args.homes)
        if args.only in (None, "ack"):
            rows += bench_ack(
                tmp / "ack",
                args.ack_turns,
                args.ack_baseline,
                args.ack_turns_from,
                args.ack_pace,
                args.ack_after,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    parts = {
        "search": f"{args.rows:,} rows, {args.queries} queries",
        "writes": f"{args.clients} clients, {args.seconds:.0f} s phases, {args.homes} homes",
        "ack": f"{args.ack_turns} turns ({args.ack_turns_from}) "
        + (f"one every {args.ack_pace:g} s" if args.ack_pace > 0 else "back to back")
        + f", {args.ack_baseline} against {args.ack_after or 'the working tree'}",
    }
    print("bench_server.py: " + "; ".join(v for k, v in parts.items() if args.only in (None, k)))
    print(table(rows, ["figure", "measured", "target", "note"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
