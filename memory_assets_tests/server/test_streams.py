"""MCP event streams (``GET /mcp``) against a real ``memory-assets serve`` with a token file: one
user's 64 idle streams take no request slot and never reach another user's service, the user's
pool keeps only the newest few, and an idle stream is closed. Bob's streams are raw sockets (an
event stream is a request that never ends); alice is the official MCP client over HTTP."""

import json
import socket
import statistics
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory_assets.server.auth import add_token
from memory_assets_tests.server.serving import Server, start

STREAMS = 64
PER_USER = 4
IDLE_S = 6


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("tokens") / "tokens.json"
    return {"path": path, "alice": add_token(path, "alice"), "bob": add_token(path, "bob")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, Any]) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("streams") / "root"
    running = start(
        root,
        "--tokens-file",
        str(tokens["path"]),
        env={
            "MEMORY_SERVER_MAX_STREAMS_PER_USER": str(PER_USER),
            "MEMORY_SERVER_STREAM_IDLE_S": str(IDLE_S),
            # the request limit the streams would have exhausted when they counted against it
            "MEMORY_SERVER_MAX_IN_FLIGHT": str(STREAMS),
        },
    )
    yield running
    code = running.stop(grace=30)
    assert code in (0, -15), running.output()[-3000:]
    assert "Traceback" not in running.output()


def open_stream(port: int, token: str) -> socket.socket:
    """``GET /mcp`` as an event stream; returns once the server has answered its head."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head, head[:400]
    return sock


def ended(sock: socket.socket, wait: float) -> bool:
    """Whether the stream's response ended (its terminating chunk, or the connection closed)
    within ``wait`` seconds; keep-alive comments are read past."""
    sock.settimeout(wait)
    data = b""
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline:
            chunk = sock.recv(4096)
            if not chunk:
                return True
            data += chunk
            if data.endswith(b"0\r\n\r\n"):
                return True
    except TimeoutError:
        return False
    return False


def call(server: Server, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    return Client(streamable_http_client(f"{server.url}/mcp", http_client=http))


def alice_calls(server: Server, token: str, rounds: int) -> list[float]:
    """Alice's tool calls over MCP (a write, then searches and her status): each one's latency."""
    seconds: list[float] = []

    async def scenario() -> None:
        async with call(server, token) as alice:
            for n in range(rounds):
                for tool, arguments in (
                    ("search_memory", {"query": "where does the user swim?"}),
                    ("memory_status", {}),
                ):
                    t0 = time.perf_counter()
                    result = await alice.call_tool(tool, arguments)
                    seconds.append(time.perf_counter() - t0)
                    assert not result.is_error, result
                    if tool == "memory_status":
                        assert json.loads(result.content[0].text)["daily_logs"] >= 1, n  # type: ignore[union-attr]

    anyio.run(scenario)
    return seconds


def test_one_users_idle_streams_never_reach_another_users_calls(
    server: Server, tokens: dict[str, Any]
) -> None:
    async def seed() -> None:
        async with call(server, tokens["alice"]) as alice:
            assert not (
                await alice.call_tool("add_memory", {"text": "Swims in the lake on Sundays"})
            ).is_error

    anyio.run(seed)
    baseline = alice_calls(server, tokens["alice"], 4)
    streams = [open_stream(server.port, tokens["bob"]) for _ in range(STREAMS)]
    try:
        # Bob's pool keeps his newest streams open ...
        assert not any(ended(sock, 0.1) for sock in streams[STREAMS - PER_USER :])
        during = alice_calls(server, tokens["alice"], 4)
        # ... and ended each older one as a newer one came.
        closed = [sock for sock in streams[: STREAMS - PER_USER] if ended(sock, 10)]
        assert len(closed) == STREAMS - PER_USER
        with server.client(tokens["bob"]) as bob:  # bob's own requests are served too
            assert bob.post("/v1/users/bob/memories", json={"text": "Sails a dinghy"}).status_code == 200
    finally:
        for sock in streams:
            sock.close()
    assert statistics.median(during) <= 4 * statistics.median(baseline), (baseline, during)


def test_an_idle_stream_is_closed(server: Server, tokens: dict[str, Any]) -> None:
    t0 = time.monotonic()
    sock = open_stream(server.port, tokens["alice"])
    try:
        assert ended(sock, IDLE_S * 15)
        assert time.monotonic() - t0 >= IDLE_S  # closed for being idle, not sooner
    finally:
        sock.close()


def refused(server: Server, head: str) -> bytes:
    """The whole answer, as received, to a request sent as written: its head, then as many bytes
    of body as its Content-Length says."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(head.encode())
        data = b""
        while b"\r\n\r\n" not in data and (chunk := sock.recv(65536)):
            data += chunk
        top, _, body = data.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in top.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        while len(body) < length and (chunk := sock.recv(65536)):
            body += chunk
    return top + b"\r\n\r\n" + body


def test_a_stream_of_another_user_or_without_a_token_is_refused_in_json(
    server: Server, tokens: dict[str, Any]
) -> None:
    port, bob = server.port, tokens["bob"]
    answer = refused(
        server,
        f"GET /mcp?user=alice HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {bob}\r\n"
        "Accept: text/event-stream\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 403") and b'"forbidden"' in answer
    answer = refused(
        server, f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 401") and b'"missing_token"' in answer
    # The SDK's own transport check (a Host without the port), answered in the API's JSON too
    answer = refused(
        server,
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {bob}\r\nAccept: text/event-stream\r\n\r\n",
    )
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 421") and b"application/json" in head
    assert json.loads(body)["error"] == "invalid_host"
