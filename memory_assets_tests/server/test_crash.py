"""Acknowledged means durable: a real SIGKILL of the server during a stream of writes from several
clients loses no acknowledged fact and writes none twice, and no acknowledged turn (each is in its
chat's transcript exactly once, the recall tier), and after a restart (its catch-up)
``memory-assets check`` passes on every home. SIGTERM stops accepting, finishes the requests in
flight, writes the rows of the turns it kept that were still pending, and exits."""

import json
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from memory_assets.cli import main
from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.users import user_settings
from memory_assets_tests.server.serving import Server, start

USERS = ("u0", "u1", "shared")
CLIENTS = 6  # two per user: concurrent writes of one user, and of different users


def logged(root: Path, user: str) -> Counter[str]:
    archive = user_settings(root, user).archive_dir
    return Counter(f.content for p in sorted(archive.glob("*.md")) for f in read_daily_log(p).facts)


def kept(root: Path, user: str) -> Counter[str]:
    """The user messages of the user's captured transcripts (suzent's lines), by text."""
    out: Counter[str] = Counter()
    for path in sorted((user_settings(root, user).transcripts_dir / "captured").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and (entry := json.loads(line))["role"] == "user":
                out[entry["content"]] += 1
    return out


def write_stream(
    server: Server,
    stop: threading.Event,
    done_at: list[float] | None = None,
    said: dict[str, list[str]] | None = None,
) -> tuple[dict[str, list[str]], list[str], list[threading.Thread]]:
    """CLIENTS threads each writing one new fact at a time until ``stop`` (or the server dies);
    returns the acknowledged facts per user, and any answer that was neither 200 nor a
    connection failure. ``done_at`` collects when each 200 arrived (time.monotonic)."""
    acked: dict[str, list[str]] = {u: [] for u in USERS}
    odd: list[str] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        user = USERS[n % len(USERS)]
        with httpx.Client(base_url=server.url, timeout=60) as http:
            i = 0
            while not stop.is_set():
                i += 1
                kind = "turns" if i % 2 else "memories"
                body = (
                    {"user": f"I bought {i} kilograms of clay for project {n}-{i}."}
                    if kind == "turns"
                    else {"text": f"Client {n} fired pot number {i} in the kiln"}
                )
                try:
                    answer = http.post(f"/v1/users/{user}/{kind}", json=body)
                except httpx.HTTPError:
                    if server.proc.poll() is not None:
                        return
                    continue
                with lock:
                    if answer.status_code == 200:  # its facts, but a confirmation, are in the log
                        written = [
                            f["content"] for f in answer.json()["facts"] if f["outcome"] != "confirmation"
                        ]
                        assert len(written) == len(answer.json()["lines_written"]) == 1
                        acked[user] += written
                        if said is not None and kind == "turns":
                            said[user].append(body["user"])
                        if done_at is not None:
                            done_at.append(time.monotonic())
                    else:
                        odd.append(f"{answer.status_code} {answer.text[:200]}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for t in threads:
        t.start()
    return acked, odd, threads


@pytest.mark.slow
def test_sigkill_during_writes_loses_nothing_acknowledged_and_check_passes_after_restart(
    tmp_path: Path, embedder: Embedder
) -> None:
    root = tmp_path / "root"
    server = start(root)
    stop = threading.Event()
    said: dict[str, list[str]] = {u: [] for u in USERS}
    acked, odd, threads = write_stream(server, stop, said=said)
    deadline = time.monotonic() + 60
    while sum(len(v) for v in acked.values()) < 30 and time.monotonic() < deadline:
        time.sleep(0.1)
    server.kill()  # SIGKILL, mid-stream
    stop.set()
    for t in threads:
        t.join(60)
    assert server.proc.returncode == -signal.SIGKILL
    assert sum(len(v) for v in acked.values()) >= 30 and not odd, odd
    for user in USERS:
        in_logs = logged(root, user)
        for fact in acked[user]:
            assert in_logs[fact] == 1, f"{user}: acknowledged {fact!r} is logged {in_logs[fact]} times"
        assert all(n == 1 for n in in_logs.values()), "a fact was written twice"
        in_transcripts = kept(root, user)
        assert said[user], user
        for text in said[user]:
            assert in_transcripts[text] == 1, (
                f"{user}: acknowledged turn {text!r} kept {in_transcripts[text]} times"
            )
        assert all(n == 1 for n in in_transcripts.values()), "a turn was kept twice"

    again = start(root)  # waits for the model and the catch-up of every home
    try:
        with again.client() as http:
            for user in USERS:
                # every logged fact and every kept turn (each one short message: one row) is a row
                rows = http.get(f"/v1/users/{user}/status").json()["index_rows_by_source_type"]
                assert rows == {
                    "archive_log": sum(logged(root, user).values()),
                    "transcript": sum(kept(root, user).values()),
                }
    finally:
        again.stop()
    for user in USERS:
        assert main(["--home", str(user_settings(root, user).home), "check"]) == 0, user


@pytest.mark.slow
def test_sigterm_finishes_the_requests_in_flight_then_exits(tmp_path: Path) -> None:
    root = tmp_path / "root"
    server = start(root)
    stop = threading.Event()
    done_at: list[float] = []
    acked, odd, threads = write_stream(server, stop, done_at)
    deadline = time.monotonic() + 60
    while sum(len(v) for v in acked.values()) < 20 and time.monotonic() < deadline:
        time.sleep(0.1)
    term_at = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    server.proc.wait(60)
    stop.set()
    for t in threads:
        t.join(60)
    assert server.proc.returncode in (0, -signal.SIGTERM)
    output = server.output()
    assert "Shutting down" in output and "Finished server process" in output and "Traceback" not in output
    assert not odd, odd  # every answer was a 200: no request in flight was cut off with an error
    # The writes in flight when the signal came were finished and answered, not dropped.
    assert any(t > term_at for t in done_at)
    for user in USERS:
        in_logs = logged(root, user)
        assert all(in_logs[fact] == 1 for fact in acked[user])
        # The rows of every turn it kept were written before it exited (a turn's rows wait for the
        # lane to be idle; the stop writes the pending ones), with no restart's catch-up.
        messages = kept(root, user)
        store = MemoryStore.of(user_settings(root, user))
        rows = Counter(store.scan(["content"], "source_type = 'transcript'").column("content").to_pylist())
        assert messages and rows == messages, user
    server.stop()
