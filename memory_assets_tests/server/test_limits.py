"""Hostile clients against a real ``memory-assets serve`` with a token file: connections that
declare a body and send one byte of it (without a token, and with one), and a client that sends
more requests than its share, while another user's authorised requests keep being answered.

Raw sockets play the slow clients (no HTTP library sends a body that slowly); httpx plays the
well-behaved user. Latencies are compared with the same requests' latencies measured in the same
run before the attack (a ratio, never an absolute time)."""

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memory_assets.server.auth import add_token
from memory_assets_tests.server.serving import Server, start

BODY_TIMEOUT_S = 3
PER_CLIENT = 8
SLOW = 64  # connections of the slow client


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("tokens") / "tokens.json"
    return {"path": path, "alice": add_token(path, "alice"), "bob": add_token(path, "bob")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, Any]) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("limits") / "root"
    running = start(
        root,
        "--tokens-file",
        str(tokens["path"]),
        env={
            "MEMORY_SERVER_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
            "MEMORY_SERVER_MAX_IN_FLIGHT_PER_CLIENT": str(PER_CLIENT),
        },
    )
    with running.client(tokens["alice"]) as alice:
        assert (
            alice.post("/v1/users/alice/memories", json={"text": "Keeps bees on the roof"}).status_code == 200
        )
    yield running
    running.stop()
    assert "Traceback" not in running.output()


def slow_request(port: int, token: str | None, path: str = "/v1/users/bob/memories") -> socket.socket:
    """A connection that sends a request's head declaring a 100-byte body, then one byte of it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"{auth}Content-Length: 100\r\n\r\n{{".encode()
    )
    return sock


def read_answer(sock: socket.socket, timeout: float = 60) -> tuple[int, bytes, bool]:
    """The status, the body, and whether the server closed the connection after it."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1]) if head else 0
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    try:
        closed = sock.recv(1) == b""
    except TimeoutError:
        closed = False
    return status, body, closed


def alice_answers(server: Server, token: str, rounds: int) -> tuple[list[int], list[float]]:
    """Alice's status, a search and a listing, ``rounds`` times: the codes and each latency."""
    codes, seconds = [], []
    with server.client(token) as alice:
        for _ in range(rounds):
            for method, path, body in (
                ("GET", "/v1/users/alice/status", None),
                ("POST", "/v1/users/alice/search", {"query": "bees"}),
                ("GET", "/v1/users/alice/memories", None),
            ):
                t0 = time.perf_counter()
                answer = alice.request(method, path, json=body)
                seconds.append(time.perf_counter() - t0)
                codes.append(answer.status_code)
    return codes, seconds


def test_slow_bodies_without_a_token_hold_nothing(server: Server, tokens: dict[str, Any]) -> None:
    _, baseline = alice_answers(server, tokens["alice"], 5)
    conns = [slow_request(server.port, None) for _ in range(SLOW)]
    try:
        during_codes, during = alice_answers(server, tokens["alice"], 5)
        for sock in conns:
            status, body, closed = read_answer(sock)
            # answered at once, with the body never read, and the connection closed after it
            assert status == 401 and b"missing_token" in body and closed
    finally:
        for sock in conns:
            sock.close()
    assert set(during_codes) == {200}, during_codes
    assert statistics.median(during) <= 4 * statistics.median(baseline), (baseline, during)


def test_a_slow_body_with_a_token_holds_its_own_share_until_its_time_limit(
    server: Server, tokens: dict[str, Any]
) -> None:
    before = server_log_lines(server)
    t0 = time.monotonic()  # before the requests: each one's time limit starts after this
    conns = [slow_request(server.port, tokens["bob"]) for _ in range(SLOW)]
    answers: list[tuple[int, bytes, bool]] = [(0, b"", False)] * SLOW
    threads = []

    def read(n: int) -> None:
        answers[n] = read_answer(conns[n], timeout=BODY_TIMEOUT_S * 20)

    for n in range(SLOW):
        threads.append(threading.Thread(target=read, args=(n,)))
        threads[-1].start()
    try:
        codes, _ = alice_answers(server, tokens["alice"], 3)  # while bob holds his share
        assert set(codes) == {200}, codes
        with server.client(tokens["bob"]) as bob:  # bob himself is at his share: told so, not queued
            refused = bob.get("/v1/users/bob/status")
            assert refused.status_code == 429 and refused.json()["error"] == "too_many_requests"
            assert refused.headers["retry-after"] == "1"
        for t in threads:
            t.join()
    finally:
        for sock in conns:
            sock.close()
    elapsed = time.monotonic() - t0
    statuses = sorted(a[0] for a in answers)
    assert statuses.count(408) == PER_CLIENT and statuses.count(429) == SLOW - PER_CLIENT, statuses
    for status, body, closed in answers:
        assert closed and body.startswith(b"{")
        if status == 408:
            assert (
                b'"body_timeout"' in body
                and b"MEMORY_SERVER_BODY_TIMEOUT_S" in body
                and b"(1 of the 100 bytes came)" in body
            )
    assert elapsed >= BODY_TIMEOUT_S  # the time limit, not sooner
    with server.client(tokens["bob"]) as bob:  # the slots came back
        assert bob.post("/v1/users/bob/memories", json={"text": "Rides a red bicycle"}).status_code == 200
    assert "Rides a red bicycle" not in "\n".join(server_log_lines(server)[len(before) :])  # never logged
    with httpx.Client(base_url=server.url) as anyone:  # the probes took no slot, whatever the load
        assert anyone.get("/health").status_code == 200


def server_log_lines(server: Server) -> list[str]:
    return server.output().splitlines()
