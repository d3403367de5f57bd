"""Deleting a user through a real ``memory-assets serve`` (uvicorn, its own model, a token file):
a unique text planted through the service (a turn, a memory), the root's traces made by real
runs (the change feed, a batch's outcomes, a follower's state, the across-users dedup), then
``DELETE /v1/users/{id}?confirm=true``; every byte under the root is read back and the text is
nowhere, the user's id only in the token file (kept, as the receipt says), the home gone, the
other users untouched (their search, their ``check``). Who may: the user's own token or admin.
While the deletion runs the user's requests are refused and the others' served; a server
SIGKILLed part-way finishes the deletion at its next start."""

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memory_assets.cli import main
from memory_assets.core.audit.measurement import measure_home, write_measurement
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.dedup_across_users import latest_by_user, write_across_users
from memory_assets.core.ops.delete_user import deletions_log, pending_deletions
from memory_assets.core.ops.root_feed import read_changes, save_home_state
from memory_assets.core.ops.upkeep.batch import run_batch
from memory_assets.core.ops.upkeep.outcomes import load_outcome
from memory_assets.core.ops.upkeep.work import Work
from memory_assets.core.ops.users import list_users, open_user_home, user_home
from memory_assets.server.auth import add_token
from memory_assets_tests.core.ops.test_delete_user import every_byte, holding
from memory_assets_tests.server.serving import Server, start
from memory_assets_tests.server.test_api import expect_error

# A user id no other text under the root holds by chance (the dedup report's scripts hold "aliceblue").
LOCKER = "My locker code at the harbour gym is Quixotic-5519, do not tell anyone."
PASSPORT = "Quokka's passport number is QX-5519-ZED"
BOB = "Bob restores old sailing boats in the harbour"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A root holding its token file and, so that their names are read too, the lock directory
    (the server and this process share it)."""
    for name in ("MEMORY_HOME", "MEMORY_INDEX_URI", "MEMORY_INDEX_URI_TEMPLATE", "MEMORY_FAILPOINTS"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("MEMORY_LOCK_DIR", str(root / "locks"))
    return root


@pytest.fixture
def tokens(root: Path) -> dict[str, Any]:
    path = root / "tokens.json"
    return {
        "path": path,
        "quokka": add_token(path, "quokka"),
        "bob": add_token(path, "bob"),
        "admin": add_token(path, None, admin=True),
    }


@pytest.fixture
def server(root: Path, tokens: dict[str, Any]) -> Iterator[Server]:
    running = start(root, "--tokens-file", str(tokens["path"]))
    yield running
    running.stop()
    assert "Traceback" not in running.output()
    assert "Quixotic" not in running.output()


def post(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = client.post(path, json=body)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def search(client: httpx.Client, user: str, query: str) -> list[str]:
    answer = client.post(f"/v1/users/{user}/search", json={"query": query, "limit": 20})
    assert answer.status_code == 200, answer.text
    return [hit["content"] for hit in answer.json()["hits"]]


def root_traces(root: Path, embedder: Embedder) -> None:
    """What the root keeps of its users besides their homes, made by the real parts: a batch's
    outcomes (``run_batch``, beside the running server), a follower's state of each home, the
    dedup measurement of each home and across users."""
    users = list_users(root)
    done = run_batch(root, [(u, Work(optimize=["test"])) for u in users], holder="B1", embedder=embedder)
    assert all(entry.ok for entry in done), [entry.failed for entry in done]
    for user in users:
        home = open_user_home(root, user, embedder=embedder)
        save_home_state(root, "homes_sensor", user, {"days": "cursor"})
        write_measurement(measure_home(home.settings, home.store), home.settings.dedup_dir)
    write_across_users(root, latest_by_user(root)[0])


@pytest.mark.slow
def test_a_user_deleted_through_rest_leaves_no_byte_under_the_root(
    root: Path, tokens: dict[str, Any], server: Server, embedder: Embedder
) -> None:
    with server.client(tokens["quokka"]) as quokka, server.client(tokens["bob"]) as bob:
        post(quokka, "/v1/users/quokka/turns", {"user": LOCKER, "chat_id": "gym"})
        post(quokka, "/v1/users/quokka/memories", {"text": PASSPORT})
        post(bob, "/v1/users/bob/memories", {"text": BOB})
        assert PASSPORT in search(quokka, "quokka", "passport number")
        root_traces(root, embedder)
        assert holding(root, "Quixotic") and holding(root, "QX-5519") and len(holding(root, "quokka")) > 5
        assert {c.user for c in read_changes(root, ("", 0))[0]} == {"quokka", "bob"}

        # Without confirm=true: what would go, nothing changed.
        error = expect_error(quokka.delete("/v1/users/quokka"), 400, "confirmation_required")
        assert (
            "confirm=true" in error["fix"] and "files" in error["detail"] and "index rows" in error["detail"]
        )
        assert PASSPORT in search(quokka, "quokka", "passport number")
        expect_error(bob.delete("/v1/users/quokka?confirm=true"), 403, "forbidden")
        expect_error(bob.delete("/v1/users/a%2Fb?confirm=true"), 400, "invalid_user_id")
        assert user_home(root, "quokka").is_dir()

        answer = quokka.delete("/v1/users/quokka?confirm=true")
        assert answer.status_code == 200, answer.text
        receipt = answer.json()

        assert receipt["user"] == "quokka" and not receipt["resumed"]
        assert receipt["home"]["files"] > 10 and receipt["home"]["index_rows"] >= 2
        assert receipt["root"]["change_feed_lines"] >= 2 and receipt["root"]["follower_state_files"] == 2
        assert receipt["root"]["dedup_across_users_rows"] > 0 and receipt["lock_files"] > 0
        assert any("token file" in kept for kept in receipt["kept"])
        # Every byte under the root: the words nowhere, the id only in the token file.
        assert holding(root, "Quixotic") == [] and holding(root, "QX-5519") == []
        assert holding(root, "quokka") == ["tokens.json"]
        assert not user_home(root, "quokka").exists() and pending_deletions(root) == []
        assert load_outcome(root, "quokka") is None
        [line] = deletions_log(root).read_text().splitlines()
        assert json.loads(line)["receipt"] == receipt["receipt"]

        # After: a read is the unknown user's 404; the others are served as before.
        expect_error(quokka.post("/v1/users/quokka/search", json={"query": "passport"}), 404, "unknown_user")
        expect_error(quokka.delete("/v1/users/quokka?confirm=true"), 404, "unknown_user")
        assert BOB in search(bob, "bob", "who restores sailing boats?")
        with server.client(tokens["admin"]) as admin:
            assert admin.get("/v1/users").json() == {"users": ["bob"]}
    assert main(["--home", str(user_home(root, "bob")), "check"]) == 0

    with server.client(tokens["quokka"]) as quokka:  # a write makes a new, empty home
        post(quokka, "/v1/users/quokka/memories", {"text": "Quokka started again from a clean slate"})
        found = search(quokka, "quokka", "passport number locker code clean slate")
        assert found == ["Quokka started again from a clean slate"]


@pytest.mark.slow
def test_admin_deletes_and_the_users_requests_wait_out_the_deletion(
    root: Path, tokens: dict[str, Any], embedder: Embedder
) -> None:
    """The deletion paused inside (a failpoint's barrier, in the server process): the user's
    requests are refused with 409 and Retry-After, another user's are served; released, the
    deletion ends with its receipt."""
    barrier = root.parent / "barrier"
    server = start(
        root,
        "--tokens-file",
        str(tokens["path"]),
        env={"MEMORY_FAILPOINTS": f"delete_user.traces=pause:{barrier}"},
    )
    try:
        with server.client(tokens["admin"]) as admin:
            post(admin, "/v1/users/carol/memories", {"text": "Carol's bank PIN is Zyzzyva-0042"})
            post(admin, "/v1/users/bob/memories", {"text": BOB})
            answers: list[httpx.Response] = []

            def delete() -> None:  # a client of its own: an httpx client is not shared between threads
                with server.client(tokens["admin"]) as own:
                    answers.append(own.delete("/v1/users/carol?confirm=true"))

            deleting = threading.Thread(target=delete)
            deleting.start()
            reached = Path(f"{barrier}.reached")
            deadline = time.monotonic() + 120
            while not reached.exists():
                assert time.monotonic() < deadline and deleting.is_alive(), answers
                time.sleep(0.05)
            refused = admin.post("/v1/users/carol/memories", json={"text": "a write during the deletion"})
            expect_error(refused, 409, "user_being_deleted")
            assert refused.headers["Retry-After"] == "1"
            expect_error(admin.get("/v1/users/carol/status"), 409, "user_being_deleted")
            assert BOB in search(admin, "bob", "who restores sailing boats?")
            barrier.touch()
            deleting.join(120)
            [answer] = answers
            assert answer.status_code == 200, answer.text
            assert answer.json()["user"] == "carol"
            expect_error(admin.get("/v1/users/carol/status"), 404, "unknown_user")
        assert holding(root, "Zyzzyva") == [] and holding(root, "carol") == []
    finally:
        server.stop()


@pytest.mark.slow
def test_a_server_killed_mid_deletion_finishes_it_at_its_next_start(
    root: Path, tokens: dict[str, Any]
) -> None:
    server = start(
        root, "--tokens-file", str(tokens["path"]), env={"MEMORY_FAILPOINTS": "delete_user.aside=kill"}
    )
    with server.client(tokens["admin"]) as admin:
        post(admin, "/v1/users/dave/memories", {"text": "Dave's alarm code is Xylophone-8080"})
        post(admin, "/v1/users/bob/memories", {"text": BOB})
        with pytest.raises(httpx.HTTPError):  # the server dies inside the deletion (SIGKILL)
            admin.delete("/v1/users/dave?confirm=true")
    server.proc.wait(30)
    assert server.proc.returncode == -9
    server.stop()
    assert pending_deletions(root) == ["dave"] and not user_home(root, "dave").exists()

    again = start(root, "--tokens-file", str(tokens["path"]))  # ready once its catch-up has finished
    try:
        assert pending_deletions(root) == [] and holding(root, "Xylophone") == []
        assert holding(root, "dave") == []
        [line] = deletions_log(root).read_text().splitlines()
        assert json.loads(line)["resumed"] is True and json.loads(line)["home"]["index_rows"] >= 1
        with again.client(tokens["admin"]) as admin:
            expect_error(admin.get("/v1/users/dave/status"), 404, "unknown_user")
            assert BOB in search(admin, "bob", "who restores sailing boats?")
    finally:
        again.stop()
    assert "Traceback" not in again.output()


def test_every_byte_reads_the_whole_root(tmp_path: Path) -> None:
    """The helper the tests above trust: it finds a needle in a file's bytes and in a file's name."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.bin").write_bytes(b"\x00\x01needle\xff")
    (tmp_path / "a" / "Needle-named.txt").write_text("nothing")
    assert holding(tmp_path, "needle") == ["a/Needle-named.txt", "a/x.bin"]
    assert len(every_byte(tmp_path)) == 2
