"""Hostile clients against the memory service, before and after issue 40, side by side in one run.

    .venv/bin/python benchmarks/bench_hostile.py                  # before = 015eb0a, after = this tree
    .venv/bin/python benchmarks/bench_hostile.py --before REV --after REV --seconds 5

Two real ``memory-assets serve`` with one token file (users alice and bob), each on a fresh root
and a free loopback port: *before* runs the code of ``--before`` (a temporary ``git worktree``,
imported through PYTHONPATH and checked, as ``bench_server.py --only ack`` does), *after* this
tree. Each meets the same three attacks, one after the other:

(a) 64 connections without a token, each sending a request head that declares a 100-byte body
    and one byte of it (``POST /v1/users/bob/memories``);
(b) the same 64 with bob's token;
(c) 64 MCP event streams (``GET /mcp``) with bob's token, left idle.

While an attack holds, alice (her own token) asks her status, a search and her memory list in a
loop for ``--seconds``: how many of her answers were 2xx, and their p50 and worst latency. *Held*
is how many of the 64 connections the server has not answered (or, for streams, not ended) one
second after the last was opened: each is a request the server is holding for that client. For
(b), held is measured again after the server's body time limit (10 s) has passed.

Figures go to stdout, progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import os
import select
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from _common import log, percentile, table
from bench_server import REPO, Server, baseline_worktree, describe_code, remove_worktree
from memory_assets.server.auth import add_token

BEFORE_REV = "015eb0a"  # main before issue 40
CONNECTIONS = 64


def slow_body(port: int, token: str | None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    sock.sendall(
        f"POST /v1/users/bob/memories HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\n{auth}Content-Length: 100\r\n\r\n{{".encode()
    )
    return sock


def stream(port: int, token: str) -> socket.socket:
    """An MCP event stream, once the server has answered its head (kept for ``held``)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(65536)
        if not chunk:
            break
        head += chunk
    _seen[sock.fileno()] = head
    return sock


_seen: dict[int, bytes] = {}  # what each connection has received so far, by its file descriptor


def held(socks: list[socket.socket], streams: bool = False) -> int:
    """How many connections the server still holds: no answer yet (a request), or an open
    response not ended (a stream). Reads whatever has arrived, without waiting."""
    count = 0
    for sock in socks:
        data = _seen.get(sock.fileno(), b"")
        closed = False
        while select.select([sock], [], [], 0)[0]:
            try:
                chunk = sock.recv(65536)
            except OSError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            data += chunk
        _seen[sock.fileno()] = data
        if streams:
            ended = (
                closed
                or data.endswith(b"0\r\n\r\n")
                or (b"\r\n\r\n" in data and not data.startswith(b"HTTP/1.1 200"))
            )
            count += not ended
        else:
            count += not (closed or b"\r\n\r\n" in data)
    return count


def victim(server: Server, token: str, seconds: float) -> dict[str, Any]:
    """Alice's requests for ``seconds``: how many were 2xx, and their latencies."""
    codes: list[int] = []
    took: list[float] = []
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as alice:
        while time.monotonic() < deadline:
            for method, path, body in (
                ("GET", "/v1/users/alice/status", None),
                ("POST", "/v1/users/alice/search", {"query": "bees"}),
                ("GET", "/v1/users/alice/memories", None),
            ):
                t0 = time.perf_counter()
                try:
                    codes.append(alice.request(method, path, json=body).status_code)
                except httpx.HTTPError:
                    codes.append(0)
                took.append(time.perf_counter() - t0)
    ok = sum(200 <= c < 300 for c in codes)
    return {
        "ok": ok,
        "of": len(codes),
        "refused": sorted({c for c in codes if not 200 <= c < 300}),
        "p50_ms": percentile(took, 50) * 1000,
        "max_ms": max(took) * 1000,
    }


def attack(server: Server, tokens: dict[str, str], kind: str, seconds: float) -> dict[str, Any]:
    if kind == "slow body, no token":
        socks = [slow_body(server.port, None) for _ in range(CONNECTIONS)]
    elif kind == "slow body, bob's token":
        socks = [slow_body(server.port, tokens["bob"]) for _ in range(CONNECTIONS)]
    else:
        socks = [stream(server.port, tokens["bob"]) for _ in range(CONNECTIONS)]
    is_stream = kind.startswith("idle")
    try:
        time.sleep(1)
        out: dict[str, Any] = {"held": held(socks, is_stream)}
        out["alice"] = victim(server, tokens["alice"], seconds)
        if kind == "slow body, bob's token":
            time.sleep(max(0.0, 11 - seconds))  # past the 10 s body time limit since the attack began
            out["held_after_11s"] = held(socks)
        return out
    finally:
        for sock in socks:
            _seen.pop(sock.fileno(), None)
            sock.close()
        time.sleep(1)


def run_side(
    name: str, code: Path | None, tokens_file: Path, tokens: dict[str, str], seconds: float, tmp: Path
) -> list[list[object]]:
    root = tmp / name / "root"
    root.parent.mkdir(parents=True)
    server = Server(root, env={"MEMORY_SERVER_TOKENS_FILE": str(tokens_file)}, code=code)
    rows: list[list[object]] = []
    try:
        if code is not None and server.imported_from().resolve() != (code / "memory_assets").resolve():
            raise SystemExit(f"{name}: the server imported {server.imported_from()}, not {code}")
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {tokens['alice']}"}, timeout=60
        ) as alice:
            assert (
                alice.post("/v1/users/alice/memories", json={"text": "Keeps bees on the roof"}).status_code
                == 200
            )
        baseline = victim(server, tokens["alice"], seconds)
        rows.append(
            [
                name,
                "none",
                "-",
                f"{baseline['ok']}/{baseline['of']}",
                "",
                f"{baseline['p50_ms']:.0f}",
                f"{baseline['max_ms']:.0f}",
            ]
        )
        for kind in ("slow body, no token", "slow body, bob's token", "idle MCP streams, bob's token"):
            log(f"{name}: {kind}")
            got = attack(server, tokens, kind, seconds)
            a = got["alice"]
            held_text = str(got["held"]) + (
                f" -> {got['held_after_11s']} after 11 s" if "held_after_11s" in got else ""
            )
            rows.append(
                [
                    name,
                    kind,
                    held_text,
                    f"{a['ok']}/{a['of']}",
                    ",".join(map(str, a["refused"])),
                    f"{a['p50_ms']:.0f}",
                    f"{a['max_ms']:.0f}",
                ]
            )
    finally:
        server.stop()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--before", default=BEFORE_REV, help="the revision before (default: main before issue 40)"
    )
    parser.add_argument(
        "--after", help="serve the after side from this revision (a worktree) instead of this tree"
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="how long alice asks during each attack")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp_name:
        tmp = Path(tmp_name)
        tokens_file = tmp / "tokens.json"
        tokens = {"alice": add_token(tokens_file, "alice"), "bob": add_token(tokens_file, "bob")}
        tree = baseline_worktree(args.before, tmp)
        after_tree = baseline_worktree(args.after, tmp) if args.after else None
        try:
            log(f"before: {describe_code(tree)}; after: {describe_code(after_tree or REPO)}")
            rows = run_side(f"before ({args.before})", tree, tokens_file, tokens, args.seconds, tmp)
            rows += run_side(
                f"after ({args.after or 'this tree'})", after_tree, tokens_file, tokens, args.seconds, tmp
            )
        finally:
            remove_worktree(tree)
            if after_tree is not None:
                remove_worktree(after_tree)
    print(
        f"{CONNECTIONS} connections per attack; alice asks for {args.seconds:g} s during each (cwd {os.getcwd()})"
    )
    print(
        table(
            rows, ["server", "attack", "held of 64", "alice 2xx", "alice's other codes", "p50 ms", "max ms"]
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
