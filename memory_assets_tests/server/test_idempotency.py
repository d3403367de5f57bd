"""``Idempotency-Key`` on a real ``memory-assets serve``: a retry gets the first answer and writes
nothing, before and after a restart; the same key with another body is refused; retries sent at
once are written once; the records are bounded and an erase reaches them."""

import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from memory_assets.core.ops.users import user_settings
from memory_assets.server.auth import add_token
from memory_assets.server.idempotency import DIRECTORY, Keyed, KeyReused, Records
from memory_assets_tests.server.serving import start
from memory_assets_tests.server.test_api import expect_error, facts_in_logs


def said(root: Path, user: str) -> Counter[str]:
    """The user messages kept in the user's captured transcripts, by text."""
    out: Counter[str] = Counter()
    for path in sorted((user_settings(root, user).transcripts_dir / "captured").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and (entry := json.loads(line))["role"] == "user":
                out[entry["content"]] += 1
    return out


def records(root: Path, user: str) -> list[Path]:
    return sorted((user_settings(root, user).state_dir / DIRECTORY).glob("*.json"))


@pytest.fixture
def tokens(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "tokens.json"
    return {"path": path, "alice": add_token(path, "alice"), "bob": add_token(path, "bob")}


def test_a_retry_is_answered_as_the_first_time_and_writes_nothing_across_a_restart(
    tmp_path: Path, tokens: dict[str, Any]
) -> None:
    root = tmp_path / "root"
    server = start(root, "--tokens-file", str(tokens["path"]))
    turn = {"user": "I moved to Lisbon last spring and I teach chemistry.", "chat_id": "c1"}
    try:
        with server.client(tokens["alice"]) as alice:
            first = alice.post("/v1/users/alice/turns", json=turn, headers={"Idempotency-Key": "turn-0001"})
            assert first.status_code == 200 and "idempotent-replayed" not in first.headers
            again = alice.post("/v1/users/alice/turns", json=turn, headers={"Idempotency-Key": "turn-0001"})
            assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
            assert again.json() == first.json()
            memory = {"text": "Has a cat called Miso", "importance": 0.8}
            m1 = alice.post("/v1/users/alice/memories", json=memory, headers={"Idempotency-Key": "mem-1"})
            m2 = alice.post("/v1/users/alice/memories", json=memory, headers={"Idempotency-Key": "mem-1"})
            assert m1.status_code == m2.status_code == 200 and m2.json() == m1.json()
            assert m1.json()["facts"][0]["outcome"] == "new"  # not a confirmation of itself
            # The same key for another request: refused, nothing written.
            other = alice.post(
                "/v1/users/alice/memories", json={"text": "Has a dog"}, headers={"Idempotency-Key": "mem-1"}
            )
            expect_error(other, 422, "idempotency_key_reused")
            reused = alice.post(
                "/v1/users/alice/turns", json={"user": "I like chess."}, headers={"Idempotency-Key": "mem-1"}
            )
            expect_error(reused, 422, "idempotency_key_reused")  # another route is another request
            for bad in (b"", b"x" * 256, "caf\u00e9".encode()):
                answer = alice.post(
                    "/v1/users/alice/memories", json={"text": "Plays chess"}, headers={"Idempotency-Key": bad}
                )
                expect_error(answer, 400, "invalid_idempotency_key")
            # Without a key, a repeat is a new request, as ever (a confirmation).
            plain = alice.post("/v1/users/alice/memories", json=memory)
            assert plain.json()["facts"][0]["outcome"] == "confirmation"
        first_answer = first.json()
    finally:
        assert server.stop() in (0, -signal.SIGTERM)
    logged = facts_in_logs(root, "alice")
    assert (
        logged.count("Has a cat called Miso") == 1
        and "Has a dog" not in logged
        and "Plays chess" not in logged
    )
    assert said(root, "alice")[turn["user"]] == 1
    assert len(records(root, "alice")) == 2
    record_text = "\n".join(p.read_text() for p in records(root, "alice"))
    assert "turn-0001" not in record_text and "mem-1" not in record_text  # the key itself is not kept

    again_server = start(root, "--tokens-file", str(tokens["path"]))
    try:
        with again_server.client(tokens["alice"]) as alice:
            replay = alice.post("/v1/users/alice/turns", json=turn, headers={"Idempotency-Key": "turn-0001"})
            assert replay.status_code == 200 and replay.headers["idempotent-replayed"] == "true"
            assert replay.json() == first_answer
            # Another user's same key is another request: keys are per user.
            with again_server.client(tokens["bob"]) as bob:
                theirs = bob.post("/v1/users/bob/turns", json=turn, headers={"Idempotency-Key": "turn-0001"})
                assert theirs.status_code == 200 and "idempotent-replayed" not in theirs.headers
            # A record quotes the facts as written: an erase of the user's words reaches it.
            secret = "Locker code QWERTY55810"
            kept = alice.post(
                "/v1/users/alice/memories", json={"text": secret}, headers={"Idempotency-Key": "k9"}
            )
            assert kept.status_code == 200 and any(secret in p.read_text() for p in records(root, "alice"))
            erased = alice.post("/v1/users/alice/erase", json={"text": "QWERTY55810", "confirm": True})
            assert erased.status_code == 200 and erased.json()["left"] == [], erased.text
            home = user_settings(root, "alice").home
            assert not [p for p in home.rglob("*") if p.is_file() and b"QWERTY55810" in p.read_bytes()]
    finally:
        assert again_server.stop() in (0, -signal.SIGTERM)
        assert "Traceback" not in again_server.output()
    assert said(root, "alice")[turn["user"]] == 1 and said(root, "bob")[turn["user"]] == 1


def test_retries_sent_at_once_are_written_once(tmp_path: Path, tokens: dict[str, Any]) -> None:
    root = tmp_path / "root"
    server = start(root, "--tokens-file", str(tokens["path"]))
    answers: list[httpx.Response] = []
    lock = threading.Lock()
    body = {"user": "My sister Ines lives in Porto and works as a pilot."}

    def post() -> None:
        with server.client(tokens["alice"]) as alice:
            answer = alice.post("/v1/users/alice/turns", json=body, headers={"Idempotency-Key": "same-key"})
        with lock:
            answers.append(answer)

    try:
        threads = [threading.Thread(target=post) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        server.stop()
    assert [a.status_code for a in answers] == [200] * 8
    assert len({json.dumps(a.json(), sort_keys=True) for a in answers}) == 1
    assert sum("idempotent-replayed" in a.headers for a in answers) == 7
    assert said(root, "alice")[body["user"]] == 1
    facts = facts_in_logs(root, "alice")
    assert facts and all(n == 1 for n in Counter(facts).values())


def test_records_expire_are_bounded_and_name_a_reused_key(tmp_path: Path) -> None:
    store = Records(tmp_path / ".state", ttl_s=3600, max_records=3)
    keys = [Keyed.of(f"k{n}", "turns", {"user": f"turn {n}"}) for n in range(5)]
    for n, keyed in enumerate(keys):
        store.write(keyed, {"n": n})
    assert store.find(keys[4]) == {"n": 4}
    with pytest.raises(KeyReused, match="another request"):
        store.find(Keyed.of("k4", "turns", {"user": "something else"}))
    with pytest.raises(KeyReused):
        store.find(Keyed.of("k4", "memories", {"user": "turn 4"}))  # the route is part of the request
    assert store.prune() == 2 and store.find(keys[0]) is None and store.find(keys[2]) == {"n": 2}
    old = store.directory / f"{keys[2].key_id}.json"
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert store.find(keys[2]) is None  # past its time: a new request
    assert store.prune() == 1 and not old.exists()
