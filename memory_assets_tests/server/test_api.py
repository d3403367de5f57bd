"""The memory service over real HTTP: a real ``memory-assets serve`` (uvicorn, its own model) with a
token file, a real HTTP client and the MCP SDK's streamable-HTTP client. Every route and tool,
isolation between users, the tokens, and bad input (none of it a 500)."""

import http.client
import json
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.ops.users import user_settings
from memory_assets.server.auth import add_token
from memory_assets_tests.server.serving import Server, start

MAX_TEXT = 2000
TOOLS = {
    "erase_memory",
    "add_memory",
    "record_turn",
    "search_memory",
    "list_memories",
    "forget_memory",
    "unforget_memory",
    "memory_status",
}


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("tokens") / "tokens.json"
    return {
        "path": path,
        "alice": add_token(path, "alice"),
        "bob": add_token(path, "bob"),
        "admin": add_token(path, None, admin=True),
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, Any]) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("service") / "root"
    running = start(
        root, "--tokens-file", str(tokens["path"]), env={"MEMORY_SERVER_MAX_TEXT_CHARS": str(MAX_TEXT)}
    )
    yield running
    assert running.stop() in (0, -signal.SIGTERM), running.output()[-3000:]  # uvicorn re-raises SIGTERM
    assert "Traceback" not in running.output()


def expect_error(answer: httpx.Response, status: int, code: str) -> dict[str, str]:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"error", "detail", "fix"} and body["error"] == code, body
    assert body["detail"] and body["fix"]
    return dict(body)


def facts_in_logs(root: Path, user: str) -> list[str]:
    archive = user_settings(root, user).archive_dir
    return [f.content for p in sorted(archive.glob("*.md")) for f in read_daily_log(p).facts]


def test_every_route_for_one_user(server: Server, tokens: dict[str, Any]) -> None:
    with server.client(tokens["alice"]) as alice:
        turn = alice.post(
            "/v1/users/alice/turns",
            json={"user": "I moved to Berlin in 2024 and I have a dog named Rex.", "chat_id": "chat-1"},
        )
        assert turn.status_code == 200, turn.text
        body = turn.json()
        assert [(f["content"], f["outcome"]) for f in body["facts"]] == [
            ("Moved to Berlin in 2024.", "new"),
            ("Has a dog named Rex.", "new"),
        ]
        assert body["counts"] == {"new": 2, "revision": 0, "confirmation": 0} and body["rows_embedded"] == 2
        assert body["log"].startswith("memory/archive/")  # relative to the home: no server path
        memory = alice.post(
            "/v1/users/alice/memories",
            json={"text": "Is allergic to peanuts", "category": "personal", "importance": 0.8},
        )
        assert memory.status_code == 200 and memory.json()["facts"][0]["outcome"] == "new"
        again = alice.post("/v1/users/alice/memories", json={"text": "Is allergic to peanuts"})
        assert again.json()["facts"][0]["outcome"] == "confirmation"
        assert facts_in_logs(server.root, "alice") == [
            "Moved to Berlin in 2024.",
            "Has a dog named Rex.",
            "Is allergic to peanuts",
        ]

        hits = alice.post("/v1/users/alice/search", json={"query": "which city does the user live in?"})
        assert hits.status_code == 200
        assert hits.json()["hits"][0]["content"] == "Moved to Berlin in 2024."
        filtered = alice.post(
            "/v1/users/alice/search",
            json={
                "query": "dog",
                "limit": 1,
                "context": 1,
                "source_types": ["archive_log"],
                "since": "2000-01-01",
            },
        )
        [hit] = filtered.json()["hits"]
        assert hit["content"] == "Has a dog named Rex." and hit["context"]

        first = alice.get("/v1/users/alice/memories", params={"limit": 2})
        page = first.json()
        assert len(page["memories"]) == 2 and page["next_cursor"]
        rest = alice.get(
            "/v1/users/alice/memories", params={"limit": 2, "cursor": page["next_cursor"]}
        ).json()
        assert len(rest["memories"]) == 1 and rest["next_cursor"] is None
        listed = {m["content"]: m for m in page["memories"] + rest["memories"]}
        assert set(listed) == {"Moved to Berlin in 2024.", "Has a dog named Rex.", "Is allergic to peanuts"}
        only_logs = alice.get("/v1/users/alice/memories", params={"source_type": ["archive_log"]}).json()
        assert len(only_logs["memories"]) == 3
        peanuts = listed["Is allergic to peanuts"]
        one = alice.get(f"/v1/users/alice/memories/{peanuts['id']}").json()
        provenance = one["provenance"]
        assert provenance["file"].startswith("memory/archive/") and provenance["confirmations"] == 2
        assert provenance["block"]["chat"] == "default"
        assert listed["Has a dog named Rex."]["provenance"]["block"]["chat"] == "chat-1"

        status = alice.get("/v1/users/alice/status").json()
        assert status["home"] == "." and status["daily_logs"] >= 1 and status["index_rows"] == 4
        # three facts, and the one turn said (memories added directly are no turn)
        assert status["index_rows_by_source_type"] == {"archive_log": 3, "transcript": 1}

        dog = listed["Has a dog named Rex."]["id"]
        gone = alice.delete(f"/v1/users/alice/memories/{dog}")
        assert gone.status_code == 200 and gone.json()["tombstoned"] is True
        expect_error(alice.get(f"/v1/users/alice/memories/{dog}"), 404, "unknown_memory")
        expect_error(alice.delete(f"/v1/users/alice/memories/{dog}"), 404, "unknown_memory")
        forgot = alice.post("/v1/users/alice/forget", json={"text": "Is allergic to peanuts"})
        # The fact's row, and MEMORY.md's chunk that listed it (the generated zone loses the line
        # at once and is indexed without it): forgetting reaches everything served (issue 39).
        assert forgot.status_code == 200 and forgot.json()["rows_deleted"] == 2
        assert forgot.json()["memory_md_lines_removed"] == 1 and "facts:MEMORY.md" in forgot.json()["files"]
        # Letters inside a word hide nothing (whole words inside longer text do): refused.
        expect_error(alice.post("/v1/users/alice/forget", json={"text": "allerg"}), 422, "not_a_whole_fact")
        expect_error(
            alice.post("/v1/users/alice/forget", json={"text": "Never said this at all"}), 404, "not_found"
        )
        contents = [
            h["content"]
            for h in alice.post("/v1/users/alice/search", json={"query": "peanut dog"}).json()["hits"]
        ]
        assert "Is allergic to peanuts" not in contents and "Has a dog named Rex." not in contents
        back = alice.post("/v1/users/alice/unforget", json={"text": "Is allergic to peanuts"})
        assert back.status_code == 200 and back.json()["tombstones_removed"] == 1
        expect_error(
            alice.post("/v1/users/alice/unforget", json={"text": "Is allergic to peanuts"}),
            404,
            "not_forgotten",
        )
        contents = [
            h["content"]
            for h in alice.post("/v1/users/alice/search", json={"query": "peanuts"}).json()["hits"]
        ]
        assert "Is allergic to peanuts" in contents
        # Forgetting never rewrote a log: the history is all there.
        assert "Has a dog named Rex." in facts_in_logs(server.root, "alice")

    with server.client(tokens["admin"]) as admin:
        assert "alice" in admin.get("/v1/users").json()["users"]
    with httpx.Client(base_url=server.url) as anyone:
        assert anyone.get("/health").json() == {"status": "ok"}
        ready = anyone.get("/ready").json()
        assert ready["ready"] and ready["model_loaded"] and ready["root_writable"]
        assert "/v1/users/{user_id}/turns" in anyone.get("/openapi.json").json()["paths"]
        assert anyone.get("/docs").status_code == 200


def test_user_b_never_sees_or_forgets_user_a(server: Server, tokens: dict[str, Any]) -> None:
    with server.client(tokens["alice"]) as alice, server.client(tokens["bob"]) as bob:
        secret = "Keeps the spare key under the blue flowerpot"
        a = alice.post("/v1/users/alice/memories", json={"text": secret})
        assert a.status_code == 200
        alice_ids = {
            m["id"] for m in alice.get("/v1/users/alice/memories", params={"limit": 100}).json()["memories"]
        }
        [secret_id] = [
            m["id"]
            for m in alice.get("/v1/users/alice/memories", params={"limit": 100}).json()["memories"]
            if m["content"] == secret
        ]
        assert (
            bob.post("/v1/users/bob/memories", json={"text": "Grows tomatoes on the balcony"}).status_code
            == 200
        )
        hits = bob.post("/v1/users/bob/search", json={"query": "spare key flowerpot", "limit": 100}).json()[
            "hits"
        ]
        assert secret not in [h["content"] for h in hits] and not {h["id"] for h in hits} & alice_ids
        listed = bob.get("/v1/users/bob/memories", params={"limit": 100}).json()["memories"]
        assert [m["content"] for m in listed] == ["Grows tomatoes on the balcony"]
        expect_error(bob.get(f"/v1/users/bob/memories/{secret_id}"), 404, "unknown_memory")
        expect_error(bob.delete(f"/v1/users/bob/memories/{secret_id}"), 404, "unknown_memory")
        expect_error(bob.post("/v1/users/bob/forget", json={"text": secret}), 404, "not_found")
        # Bob's token cannot reach Alice's routes at all.
        expect_error(bob.delete(f"/v1/users/alice/memories/{secret_id}"), 403, "forbidden")
        expect_error(bob.post("/v1/users/alice/forget", json={"text": secret}), 403, "forbidden")
        expect_error(bob.post("/v1/users/alice/search", json={"query": "key"}), 403, "forbidden")
        # Alice's fact is untouched, and Bob's home holds no tombstone of it.
        assert alice.get(f"/v1/users/alice/memories/{secret_id}").status_code == 200
        assert not user_settings(server.root, "bob").tombstones_path.exists()


def test_tokens(server: Server, tokens: dict[str, Any]) -> None:
    with server.client() as nobody:
        missing = nobody.get("/v1/users/alice/status")
        expect_error(missing, 401, "missing_token")
        assert missing.headers["www-authenticate"] == "Bearer"
        expect_error(nobody.post("/v1/users/alice/turns", json={"user": "hi"}), 401, "missing_token")
    for header in ("Bearer not-a-real-token", f"Basic {tokens['alice']}", "Bearer", tokens["alice"]):
        with httpx.Client(base_url=server.url, headers={"Authorization": header}) as wrong:
            expect_error(wrong.get("/v1/users/alice/status"), 401, "invalid_token")
    with server.client(tokens["bob"]) as bob:
        expect_error(bob.get("/v1/users/alice/memories"), 403, "forbidden")
        expect_error(bob.get("/v1/users"), 403, "forbidden")
        expect_error(bob.post("/v1/users/alice/turns", json={"user": "I like jazz."}), 403, "forbidden")
    with server.client(tokens["admin"]) as admin:
        assert admin.get("/v1/users/alice/status").status_code == 200
        assert admin.get("/v1/users/bob/status").status_code == 200


def homes(server: Server) -> list[str]:
    users = server.root / "users"
    return sorted(p.name for p in users.iterdir()) if users.is_dir() else []


def declared_too_large(server: Server, path: str, size: int, headers: dict[str, str]) -> httpx.Response:
    """Send only the head of a request that declares ``size`` bytes, and read the answer (the
    server answers before the body, so no client has to push the whole of it)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.putrequest("POST", path)
    for key, value in {**headers, "Content-Length": str(size)}.items():
        conn.putheader(key, value)
    conn.endheaders(b'{"user": "')
    answer = conn.getresponse()
    response = httpx.Response(answer.status, headers=dict(answer.getheaders()), content=answer.read())
    conn.close()
    return response


def raw(
    server: Server, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> httpx.Response:
    """A request sent as written (no path normalisation), answered as an httpx response."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request(method, path, body=body, headers=headers or {})
    answer = conn.getresponse()
    response = httpx.Response(answer.status, headers=dict(answer.getheaders()), content=answer.read())
    conn.close()
    return response


DEEP = b'{"user": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"  # 200 kB, within the body limit

# (route, body, status, code, what the detail names: the field, or the problem)
BAD_BODIES = [
    ("turns", b'{"user": "x"', 400, "invalid_json", "character 12"),
    ("turns", b"not json at all", 400, "invalid_json", "Expecting value"),
    ("turns", b'{"user": "\xff\xfe caf\xe9"}', 400, "invalid_json", "UTF-8"),
    ("turns", DEEP, 400, "invalid_json", "nest too deeply"),
    ("turns", b'{"user": 5}', 422, "validation_error", "user:"),
    ("turns", b'{"user": "hi", "bogus": 1}', 422, "validation_error", "bogus:"),
    ("turns", b"{}", 422, "validation_error", "user: Field required"),
    ("turns", b"[]", 422, "validation_error", "body:"),
    ("turns", b'{"user": "a\\u0000b"}', 422, "validation_error", "user:"),
    ("turns", b'{"user": " \\n\\t  "}', 422, "validation_error", "user: Value error, holds only whitespace"),
    (
        "turns",
        b'{"user": "\\u0001\\u200b"}',
        422,
        "validation_error",
        "user: Value error, holds only whitespace",
    ),
    ("turns", b'{"user": "hi", "chat_id": "c\\u0000"}', 422, "validation_error", "chat_id:"),
    ("turns", b'{"user": "hi", "at": "yesterday"}', 422, "validation_error", "at:"),
    ("turns", b'{"user": "hi", "at": "9999-12-31T23:59:59-05:00"}', 422, "validation_error", "at:"),
    ("turns", b'{"user": "hi", "at": 1700000000}', 422, "validation_error", "at:"),
    (
        "turns",
        b'{"user": "hi", "at": "1970-01-01"}',
        422,
        "validation_error",
        "at: Value error, is outside the window this server accepts: give a time from 2000-01-01 to",
    ),
    (
        "turns",
        b'{"user": "hi", "at": "2099-01-01T10:00"}',
        422,
        "validation_error",
        "at: Value error, is outside the window",
    ),
    (
        "turns",
        b'{"user": "hi", "at": "20261206"}',
        422,
        "validation_error",
        "at: Value error, is not an ISO date-time",
    ),
    ("turns", json.dumps({"user": "x" * (MAX_TEXT + 1)}).encode(), 422, "validation_error", "user:"),
    ("memories", b'{"text": "x", "importance": "high"}', 422, "validation_error", "importance:"),
    ("memories", b'{"text": "x", "importance": 1.5}', 422, "validation_error", "importance:"),
    ("memories", b'{"text": "x", "category": "astrology"}', 422, "validation_error", "category:"),
    ("memories", b'{"text": "   "}', 422, "invalid_value", "text: a memory needs at least one word"),
    ("memories", b'{"text": "!!! ... ???"}', 422, "invalid_value", "text: a memory needs at least one word"),
    (
        "memories",
        b'{"text": "x", "at": "0001-01-01"}',
        422,
        "validation_error",
        "at: Value error, is outside the window",
    ),
    ("search", b'{"query": "x", "limit": "5"}', 422, "validation_error", "limit:"),
    ("search", b'{"query": "x", "limit": 101}', 422, "validation_error", "limit:"),
    ("search", b'{"query": "x", "limit": 0}', 422, "validation_error", "limit:"),
    ("search", b'{"query": "x", "context": 6}', 422, "validation_error", "context:"),
    ("search", b'{"query": "x", "since": "2026-13-01"}', 422, "validation_error", "since:"),
    (
        "search",
        b'{"query": "x", "since": "20261206"}',
        422,
        "validation_error",
        "since: Value error, is not an ISO date written YYYY-MM-DD",
    ),
    (
        "search",
        b'{"query": "x", "since": "2026-12-06", "until": "2026-12-01"}',
        422,
        "validation_error",
        "since is after until",
    ),
    (
        "search",
        b'{"query": "x", "today": "0001-01-01"}',
        422,
        "validation_error",
        "today: Value error, is outside the window",
    ),
    (
        "search",
        b'{"query": "last week", "today": "9999-12-31"}',
        422,
        "validation_error",
        "today: Value error, is outside the window",
    ),
    ("search", b'{"query": "x", "source_types": ["email"]}', 422, "validation_error", "source_types.0:"),
    ("search", b'{"query": ""}', 422, "validation_error", "query:"),
    ("forget", b'{"text": null}', 422, "validation_error", "give exactly one of text, chat_id and day"),
    ("forget", b'{"day": "20261206"}', 422, "validation_error", "day: Value error, is not an ISO date"),
    ("unforget", b'{"text": ["a"]}', 422, "validation_error", "text:"),
]


@pytest.mark.parametrize(("route", "body", "status", "code", "named"), BAD_BODIES)
def test_bad_bodies_are_named_never_a_500(
    server: Server, tokens: dict[str, Any], route: str, body: bytes, status: int, code: str, named: str
) -> None:
    headers = {"Authorization": f"Bearer {tokens['alice']}", "Content-Type": "application/json"}
    before = written(server.root, "alice")
    answer = raw(server, "POST", f"/v1/users/alice/{route}", body, headers)
    detail = expect_error(answer, status, code)["detail"]
    assert named in detail, detail
    for value in (b"astrology", b"yesterday", b"high", b"20261206", b"1700000000", b"0001-01-01"):
        assert value not in body or value.decode() not in detail, detail  # the value sent is never echoed
    assert written(server.root, "alice") == before  # nothing written


def written(root: Path, user: str) -> dict[str, bytes]:
    """Every file of the user's home but its index and its locks, with its bytes: what a refused
    request must leave as it was."""
    home = user_settings(root, user).home
    if not home.is_dir():
        return {}
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and "index" not in p.relative_to(home).parts[:1] and "recall" not in p.name
    }


def test_a_nul_in_a_header_is_answered_in_json(server: Server) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(
            b"GET /v1/users/alice/status HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Authorization: Bearer abc\x00def\r\n\r\n"
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), answer[:300]
    assert b"application/json" in head.lower()
    parsed = json.loads(body)
    assert parsed["error"] == "invalid_request" and "NUL" in parsed["detail"] and parsed["fix"]


def test_bad_paths_sizes_and_readers(server: Server, tokens: dict[str, Any]) -> None:
    auth = {"Authorization": f"Bearer {tokens['admin']}", "Content-Type": "application/json"}
    body = b'{"user": "hello"}'
    before = homes(server)
    for path in (
        "/v1/users/../turns",
        "/v1/users/..%2Fetc/turns",
        "/v1/users/a%2Fb/turns",
        "/v1/users/a%00b/turns",
        "/v1/users/.hidden/turns",
        "/v1/users/%C3%A9/status",
        "/v1/users/" + "x" * 65 + "/status",
    ):
        expect_error(
            raw(server, "POST" if path.endswith("turns") else "GET", path, body, auth), 400, "invalid_user_id"
        )
    assert homes(server) == before
    # The body limit: 1 MiB by default, declared or streamed.
    big = json.dumps({"user": "x" * 1_100_000}).encode()
    expect_error(declared_too_large(server, "/v1/users/alice/turns", len(big), auth), 413, "body_too_large")
    with server.client(tokens["admin"]) as admin:

        def chunks() -> Iterator[bytes]:
            for start in range(0, len(big), 65536):
                yield big[start : start + 65536]

        expect_error(
            admin.post("/v1/users/alice/turns", content=chunks(), headers=auth), 413, "body_too_large"
        )
        # A read of a user without a home is a 404 and creates nothing.
        expect_error(admin.get("/v1/users/nobody/memories"), 404, "unknown_user")
        expect_error(admin.post("/v1/users/nobody/search", json={"query": "x"}), 404, "unknown_user")
        expect_error(admin.get("/v1/users/nobody/status"), 404, "unknown_user")
        expect_error(admin.get("/v1/users/nobody/memories/abc"), 404, "unknown_user")
        expect_error(admin.post("/v1/users/nobody/forget", json={"text": "x"}), 404, "unknown_user")
        expect_error(admin.delete("/v1/users/nobody/memories/abc"), 404, "unknown_user")
        assert not (server.root / "users" / "nobody").exists()
        expect_error(
            admin.get("/v1/users/alice/memories", params={"cursor": "not-a-cursor"}), 422, "invalid_cursor"
        )
        expect_error(admin.get("/v1/users/alice/memories", params={"limit": "many"}), 422, "validation_error")
        expect_error(admin.get("/v1/users/alice/memories", params={"since": "soon"}), 422, "validation_error")
        expect_error(admin.post("/v1/users/alice/status"), 405, "method_not_allowed")
        expect_error(admin.get("/v1/nowhere"), 404, "not_found")
        plain = admin.post(
            "/v1/users/alice/turns", content=b'{"user": "x"}', headers={"Content-Type": "text/plain"}
        )
        assert plain.status_code in (400, 422) and "error" in plain.json()
    assert "Traceback" not in server.output()


def call(server: Server, token: str, query: str = "") -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    return Client(streamable_http_client(f"{server.url}/mcp{query}", http_client=http))


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_mcp_over_streamable_http_reaches_the_tokens_user(server: Server, tokens: dict[str, Any]) -> None:
    async def scenario() -> None:
        async with call(server, tokens["alice"]) as alice:
            listed = await alice.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            for tool in listed.tools:
                assert tool.description and len(tool.description) > 40
                assert tool.input_schema["type"] == "object"
            schema = {t.name: t.input_schema for t in listed.tools}
            assert schema["search_memory"]["properties"]["limit"]["maximum"] == 100
            assert schema["record_turn"]["required"] == ["user"]

            added = await alice.call_tool(
                "add_memory", {"text": "Speaks Portuguese at home", "category": "personal"}
            )
            assert not added.is_error and json.loads(text_of(added))["facts"][0]["outcome"] == "new"
            turned = await alice.call_tool(
                "record_turn", {"user": "I work as a nurse in Porto.", "assistant": "Nice!"}
            )
            assert not turned.is_error and json.loads(text_of(turned))["counts"]["new"] >= 1
            found = json.loads(
                text_of(await alice.call_tool("search_memory", {"query": "which language", "limit": 3}))
            )
            assert found["hits"][0]["content"] == "Speaks Portuguese at home"
            page = json.loads(text_of(await alice.call_tool("list_memories", {"limit": 100})))
            assert "Speaks Portuguese at home" in [m["content"] for m in page["memories"]]
            status = json.loads(text_of(await alice.call_tool("memory_status", {})))
            assert status["index_rows"] >= 2
            forgot = await alice.call_tool("forget_memory", {"text": "Speaks Portuguese at home"})
            assert not forgot.is_error and json.loads(text_of(forgot))["tombstoned"]
            by_id = [m for m in page["memories"] if m["content"] != "Speaks Portuguese at home"][0]
            assert not (await alice.call_tool("forget_memory", {"id": by_id["id"]})).is_error
            back = await alice.call_tool("unforget_memory", {"text": "Speaks Portuguese at home"})
            # Only the fact's: add_memory keeps no turn, and the turn recorded in the same minute
            # and chat shares no word with it, so forgetting the fact hid no turn.
            assert not back.is_error and json.loads(text_of(back))["tombstones_removed"] == 1
            # Errors are tool errors naming the code and the fix; bounds are the REST ones.
            both = await alice.call_tool("forget_memory", {})
            assert both.is_error and "invalid_arguments" in text_of(both)
            too_many = await alice.call_tool("search_memory", {"query": "x", "limit": 101})
            assert too_many.is_error and "less than or equal to 100" in text_of(too_many)
            nul = await alice.call_tool("add_memory", {"text": "a\x00b"})
            assert nul.is_error and "NUL" in text_of(nul)
            unknown = await alice.call_tool("forget_memory", {"id": "no-such-row"})
            assert unknown.is_error and "unknown_memory" in text_of(unknown) and "Fix:" in text_of(unknown)
        async with call(server, tokens["admin"], "?user=bob") as admin:
            page = json.loads(text_of(await admin.call_tool("list_memories", {})))
            assert [m["content"] for m in page["memories"]] == ["Grows tomatoes on the balcony"]

    anyio.run(scenario)
    assert "Speaks Portuguese at home" in facts_in_logs(server.root, "alice")
    assert "Speaks Portuguese at home" not in facts_in_logs(server.root, "bob")


@pytest.mark.parametrize(
    ("who", "query", "status", "code"),
    [
        ("bob", "?user=alice", 403, "forbidden"),
        ("nobody", "", 401, "invalid_token"),
        ("bob", "?user=..", 400, "invalid_user_id"),
    ],
)
def test_mcp_over_http_refuses_what_rest_refuses(
    server: Server, tokens: dict[str, Any], who: str, query: str, status: int, code: str
) -> None:
    token = tokens.get(who, "not-a-token")
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with httpx.Client(base_url=server.url, timeout=60) as client:
        expect_error(client.post(f"/mcp{query}", json=request, headers=headers), status, code)


def test_mcp_refuses_unknown_arguments_and_never_echoes_a_value(
    server: Server, tokens: dict[str, Any]
) -> None:
    secret = "sekrit-value-9931"

    async def scenario() -> None:
        async with call(server, tokens["alice"]) as alice:
            listed = await alice.list_tools()
            assert all(t.input_schema.get("additionalProperties") is False for t in listed.tools)
            refused = {
                "'bogus': not an argument of add_memory": (
                    "add_memory",
                    {"text": "Plays the oboe", "bogus": secret},
                ),
                "since: String should have at most 10 characters": (
                    "search_memory",
                    {"query": "x", "since": secret},
                ),
                "importance: Input should be a valid number": (
                    "add_memory",
                    {"text": "x", "importance": secret},
                ),
                "chat_id: String should have at most": (
                    "record_turn",
                    {"user": "hi", "chat_id": secret * 40},
                ),
                "user: Value error, holds only whitespace": ("record_turn", {"user": " \n "}),
                "at: Value error, is outside the window": (
                    "record_turn",
                    {"user": "I like tea.", "at": "1970-01-01"},
                ),
                "invalid_value: text: a memory needs at least one word": (
                    "add_memory",
                    {"text": "!!! ... ???"},
                ),
                "validation_error: since: is after until. Fix: give since on or before until": (
                    "search_memory",
                    {"query": "x", "since": "2026-12-06", "until": "2026-12-01"},
                ),
            }
            for named, (tool, arguments) in refused.items():
                answer = await alice.call_tool(tool, arguments)
                text = text_of(answer)
                assert answer.is_error and named in text and "Fix:" in text, (tool, text)
                assert secret not in text, text

    before = written(server.root, "alice")
    anyio.run(scenario)
    assert written(server.root, "alice") == before
