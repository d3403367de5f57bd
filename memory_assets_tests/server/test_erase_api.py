"""Erase over REST and MCP on a real server: the plan, the receipt, the bytes gone, the errors."""

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_assets.server.auth import add_token
from memory_assets_tests.server.serving import Server, start
from memory_assets_tests.server.test_api import call, expect_error, text_of


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("tokens") / "tokens.json"
    return {"path": path, "alice": add_token(path, "alice"), "bob": add_token(path, "bob")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, Any]) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("service") / "root"
    running = start(root, "--tokens-file", str(tokens["path"]))
    yield running
    assert running.stop() in (0, -signal.SIGTERM), running.output()[-3000:]
    assert "Traceback" not in running.output()


def holding(root: Path, needle: str) -> list[str]:
    low = needle.lower().encode()
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and low in p.read_bytes().lower()
    )


def test_erase_over_rest_plans_then_removes_every_byte_and_reaches_only_its_user(
    server: Server, tokens: dict[str, Any]
) -> None:
    secret = "QWERTY55810"
    with server.client(tokens["alice"]) as alice, server.client(tokens["bob"]) as bob:
        said = alice.post(
            "/v1/users/alice/turns",
            json={"user": f"My locker code is {secret} at the gym.", "assistant": f"Got it, {secret}."},
        )
        assert said.status_code == 200, said.text
        assert (
            alice.post("/v1/users/alice/memories", json={"text": "Grows basil on the balcony"}).status_code
            == 200
        )
        assert (
            bob.post("/v1/users/bob/memories", json={"text": f"Bob's own note {secret}"}).status_code == 200
        )
        home = server.root / "users" / "alice"
        assert holding(home, secret)

        plan = alice.post("/v1/users/alice/erase", json={"text": secret})
        assert plan.status_code == 200 and plan.json()["dry_run"] is True, plan.text
        assert holding(home, secret), "the plan changed nothing"

        expect_error(
            bob.post("/v1/users/alice/erase", json={"text": secret, "confirm": True}), 403, "forbidden"
        )
        expect_error(alice.post("/v1/users/a%2Fb/erase", json={"text": secret}), 400, "invalid_user_id")
        expect_error(
            alice.post("/v1/users/alice/erase", json={"text": "", "confirm": True}), 422, "validation_error"
        )
        expect_error(
            alice.post("/v1/users/alice/erase", json={"text": "abc", "confirm": True}), 422, "cannot_erase"
        )
        expect_error(
            alice.post("/v1/users/alice/erase", json={"id": "no-such-row", "confirm": True}),
            422,
            "cannot_erase",
        )
        expect_error(
            alice.post("/v1/users/alice/erase", json={"text": secret, "force": True}), 422, "validation_error"
        )
        expect_error(
            alice.post("/v1/users/alice/erase", json={"chat_id": "never-said", "confirm": True}),
            422,
            "cannot_erase",
        )
        assert holding(home, secret), "a refused erase changed nothing"

        done = alice.post("/v1/users/alice/erase", json={"text": secret, "confirm": True})
        assert done.status_code == 200, done.text
        receipt = done.json()
        assert receipt["complete"] and receipt["left"] == [] and receipt["changed"]["transcripts"]
        assert holding(home, secret) == []
        hits = alice.post("/v1/users/alice/search", json={"query": "basil balcony"}).json()["hits"]
        assert hits[0]["content"] == "Grows basil on the balcony"
        # Bob's words are his own: untouched.
        assert holding(server.root / "users" / "bob", secret)
        assert (
            secret
            in bob.post("/v1/users/bob/search", json={"query": "Bob's own note"}).json()["hits"][0]["content"]
        )


def test_erase_memory_over_mcp_plans_without_confirm_and_erases_with_it(
    server: Server, tokens: dict[str, Any]
) -> None:
    secret = "Zanzibar-Oboe-3317"

    async def scenario() -> None:
        async with call(server, tokens["alice"]) as alice:
            added = await alice.call_tool("add_memory", {"text": f"Password hint is {secret}"})
            assert not added.is_error
            plan = await alice.call_tool("erase_memory", {"text": secret})
            assert not plan.is_error and json.loads(text_of(plan))["dry_run"] is True
            bad = await alice.call_tool("erase_memory", {"text": secret, "force": True})
            assert bad.is_error and "invalid_arguments" in text_of(bad)
            done = await alice.call_tool("erase_memory", {"text": secret, "confirm": True})
            assert not done.is_error and json.loads(text_of(done))["complete"] is True

    anyio.run(scenario)
    assert holding(server.root / "users" / "alice", "Zanzibar") == []
