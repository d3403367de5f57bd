"""A loopback server without tokens: the loopback guard, MCP's ``?user=``, the in-flight bound, and
MCP over stdio through the SDK's stdio client starting ``memory-assets mcp``; the refusal to
listen beyond loopback without tokens, and ``memory-assets token``."""

import concurrent.futures
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.ops.users import user_settings
from memory_assets.server.auth import hash_token, parse_token_file
from memory_assets_tests.server.serving import CLI, Server, free_port, start

MAX_IN_FLIGHT = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("open") / "root"
    running = start(root, env={"MEMORY_SERVER_MAX_IN_FLIGHT": str(MAX_IN_FLIGHT)})
    yield running
    running.stop()
    assert "Traceback" not in running.output()


def facts(root: Path, user: str) -> list[str]:
    archive = user_settings(root, user).archive_dir
    return [f.content for p in sorted(archive.glob("*.md")) for f in read_daily_log(p).facts]


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_without_tokens_only_loopback_names_and_origins_are_answered(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        assert client.get("/health").status_code == 200
        assert client.get("/health", headers={"Host": f"localhost:{server.port}"}).status_code == 200
        for headers in (
            {"Host": "attacker.example:80"},
            {"Host": f"192.168.1.7:{server.port}"},
            {"Origin": "https://attacker.example"},
            {"Origin": "http://127.0.0.1.attacker.example"},
        ):
            refused = client.post("/v1/users/eve/turns", json={"user": "I like jazz."}, headers=headers)
            assert refused.status_code == 403 and refused.json()["error"] == "not_loopback", headers
        ok = client.post(
            "/v1/users/eve/memories",
            json={"text": "Likes jazz"},
            headers={"Origin": f"http://localhost:{server.port}"},
        )
        assert ok.status_code == 200
        assert client.get("/v1/users").json() == {"users": ["eve"]}  # no tokens: every caller is admin
    assert facts(server.root, "eve") == ["Likes jazz"]


def test_mcp_user_comes_from_the_url_default_default(server: Server) -> None:
    async def scenario() -> None:
        async with Client(f"{server.url}/mcp") as anyone:
            assert not (await anyone.call_tool("add_memory", {"text": "Owns a tandem bicycle"})).is_error
        async with Client(f"{server.url}/mcp?user=carol") as carol:
            assert not (await carol.call_tool("add_memory", {"text": "Collects vinyl records"})).is_error
            hits = json.loads(text_of(await carol.call_tool("search_memory", {"query": "bicycle"})))["hits"]
            assert [h["content"] for h in hits] == ["Collects vinyl records"]  # never default's row

    anyio.run(scenario)
    assert facts(server.root, "default") == ["Owns a tandem bicycle"]
    assert facts(server.root, "carol") == ["Collects vinyl records"]


def test_past_the_in_flight_bound_the_answer_is_503_with_retry_after(server: Server) -> None:
    def post(i: int) -> httpx.Response:
        with httpx.Client(base_url=server.url, timeout=120) as client:
            return client.post(
                "/v1/users/frank/memories", json={"text": f"Fact number {i} about frank's garden"}
            )

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(post, range(16)))
    busy = [a for a in answers if a.status_code == 503]
    done = [a for a in answers if a.status_code == 200]
    assert len(busy) + len(done) == 16 and busy and done
    for answer in busy:
        assert answer.headers["retry-after"] == "1" and answer.json()["error"] == "busy"
    # Exactly the acknowledged facts are in the log: none lost, none written twice, no refused one.
    written = sorted(a.json()["facts"][0]["content"] for a in done)
    assert sorted(facts(server.root, "frank")) == written


def test_mcp_over_stdio_started_by_the_sdk_client(server: Server) -> None:
    params = StdioServerParameters(
        command=CLI,
        args=["mcp", "--root", str(server.root), "--user", "dave"],
        env={**os.environ, "LANCEDB_LOG": "error"},
    )

    async def scenario() -> None:
        async with Client(params, read_timeout_seconds=180) as dave:
            tools = await dave.list_tools()
            assert len(tools.tools) == 8  # erase_memory the eighth
            turned = await dave.call_tool("record_turn", {"user": "My sister Ana lives in Madrid."})
            assert not turned.is_error, text_of(turned)
            hits = json.loads(text_of(await dave.call_tool("search_memory", {"query": "sister"})))["hits"]
            assert hits and "Ana" in hits[0]["content"]
            status = json.loads(text_of(await dave.call_tool("memory_status", {})))
            assert status["daily_logs"] == 1
            unknown = await dave.call_tool("forget_memory", {"text": "Never said anything like this"})
            assert unknown.is_error and "not_found" in text_of(unknown)

    anyio.run(scenario)
    assert any("Ana" in fact for fact in facts(server.root, "dave"))


def test_beyond_loopback_it_refuses_to_start_without_tokens(tmp_path: Path) -> None:
    for args, message in (
        (["--host", "0.0.0.0"], "refusing to listen on 0.0.0.0"),
        (["--host", "0.0.0.0", "--tokens-file", str(tmp_path / "none.json")], "does not exist"),
    ):
        done = subprocess.run(
            [CLI, "serve", "--root", str(tmp_path / "root"), "--port", str(free_port()), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "root").exists()


def test_token_command_adds_a_hash_and_prints_the_token_once(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    made = subprocess.run(
        [CLI, "token", "--user", "alice", "--tokens-file", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert len(token) >= 40 and token not in path.read_text()
    entries = parse_token_file(path)
    assert entries[hash_token(token)].user == "alice" and oct(path.stat().st_mode & 0o777) == "0o600"
    bad = subprocess.run(
        [CLI, "token", "--user", "../x", "--tokens-file", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "user id" in bad.stderr and len(parse_token_file(path)) == 1
