"""Deleting a user (``core/ops/delete_user.py``) on real homes under a real root, with the real
model and LanceDB: the home and every trace at the root go (every byte under the root read back:
the user's words and id nowhere, the lock files named after the home gone too), the other users
untouched (their search, their ``check``); a preview changes nothing; killed with SIGKILL at each
failpoint of a real ``memory-assets erase --all`` process and run again, it converges with one
receipt; a batch after it finds no home and records nothing; an index outside the home (a local
directory, or S3) goes with it."""

import json
import os
import subprocess
import sys
import uuid
from datetime import date
from pathlib import Path

import pytest

from memory_assets.cli import main
from memory_assets.core.audit.measurement import measure_home, write_measurement
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.recall_log import log_recalls
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.dedup_across_users import latest_by_user, write_across_users
from memory_assets.core.ops.delete_user import (
    DeletionRefused,
    delete_user,
    deletions_log,
    home_target,
    pending_deletions,
    plan,
    user_hash,
    user_target,
)
from memory_assets.core.ops.root_feed import note_change, read_changes, save_home_state
from memory_assets.core.ops.upkeep.batch import SKIPPED_GONE, run_batch
from memory_assets.core.ops.upkeep.outcomes import load_outcome
from memory_assets.core.ops.upkeep.work import Work
from memory_assets.core.ops.users import (
    DeletionPending,
    UnknownUserError,
    list_users,
    open_user_home,
    user_home,
)
from memory_assets.core.search.retrieval import flush_recalls, search
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.servers import S3, s3_server

CLI = str(Path(sys.executable).parent / "memory-assets")
DAY = date(2026, 11, 10)
SECRET = "Zanzibar-7741 is the code of the blue locker at the gym"
BOB = "Bob restores old sailing boats in the harbour"
FAILPOINTS = (
    "delete_user.journal",
    "delete_user.aside",
    "delete_user.traces",
    "delete_user.removed",
    "delete_user.logged",
)


def every_byte(root: Path) -> dict[Path, bytes]:
    """Every file under ``root``, read whole."""
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def holding(root: Path, needle: str) -> list[str]:
    """The files under ``root`` whose name or bytes hold ``needle`` (any case)."""
    low = needle.lower().encode()
    return [
        str(p.relative_to(root))
        for p, data in every_byte(root).items()
        if low in data.lower() or low in str(p.relative_to(root)).lower().encode()
    ]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> Path:
    """alice and bob under a root, each with a day's facts indexed, and every trace the root keeps
    of them: the change feed, the upkeep's outcomes (a real batch), a follower's state, the
    across-users dedup file. The lock directory is under the root too, so its files are read."""
    for name in ("MEMORY_HOME", "MEMORY_INDEX_URI", "MEMORY_INDEX_URI_TEMPLATE"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "root"
    monkeypatch.setenv("MEMORY_LOCK_DIR", str(root / "locks"))
    seed(root, embedder)
    return root


def seed(root: Path, embedder: Embedder) -> None:
    for user, fact in (("alice", SECRET), ("bob", BOB)):
        home = open_user_home(root, user, create=True, embedder=embedder)
        write_facts(home.settings, DAY, fact, f"{user} drinks green tea")
        home.indexer.sweep()
        note_change(root, user, "turns")
        save_home_state(root, "homes_sensor", user, {"days": "cursor", "reported_assets": []})
        write_measurement(measure_home(home.settings, home.store), home.settings.dedup_dir)
    done = run_batch(
        root, [("alice", Work(optimize=["test"])), ("bob", Work())], holder="B1", embedder=embedder
    )
    assert all(entry.ok for entry in done), [entry.failed for entry in done]
    frame, problems = latest_by_user(root)
    assert not problems and set(frame["user"]) == {"alice", "bob"}
    write_across_users(root, frame)


def assert_alice_gone(root: Path) -> None:
    assert not user_home(root, "alice").exists() and list_users(root) == ["bob"]
    assert holding(root, "Zanzibar") == [], "the user's words are still under the root"
    assert holding(root, "alice") == [], "a file under the root still names the user"
    assert pending_deletions(root) == []
    assert {c.user for c in read_changes(root, ("", 0))[0]} == {"bob"}
    assert load_outcome(root, "alice") is None and load_outcome(root, "bob") is not None
    assert set(latest_by_user(root)[0]["user"]) == {"bob"}


def assert_bob_untouched(root: Path, embedder: Embedder) -> None:
    home = open_user_home(root, "bob", embedder=embedder)
    hits = search(home.store, "who restores sailing boats?", embedder=embedder, settings=home.settings)
    assert hits and hits[0].content == BOB
    assert main(["--home", str(home.settings.home), "check"]) == 0


@pytest.mark.slow
def test_the_home_and_every_trace_at_the_root_go_and_the_others_stay(root: Path, embedder: Embedder) -> None:
    assert holding(root, "Zanzibar") and holding(root, "alice")  # planted where the root keeps traces
    named = sum("alice" in p.name for p in (root / "locks").iterdir())  # lock files named after her paths
    assert named > 0
    rows = MemoryStore.of(user_target(root, "alice").settings).count()
    preview = plan(user_target(root, "alice"))
    assert preview.files > 10 and preview.index_rows == rows and preview.feed_lines == 1
    assert preview.state_files == {"homes_sensor": 1, "upkeep": 1} and preview.dedup_rows > 0
    before = every_byte(root)
    assert every_byte(root) == before  # the preview changed nothing

    receipt = delete_user(root, "alice", holder="test")

    assert_alice_gone(root)
    assert_bob_untouched(root, embedder)
    assert receipt["user"] == "alice" and receipt["resumed"] is False
    assert receipt["home"] == {"files": preview.files, "bytes": preview.bytes, "index_rows": rows}
    assert receipt["root"] == {
        "change_feed_lines": 1,
        "follower_state_files": 2,
        "dedup_across_users_rows": preview.dedup_rows,
    }
    assert receipt["lock_files"] >= named and receipt["lock_files_in_use"] == 0
    [line] = deletions_log(root).read_text().splitlines()
    logged = json.loads(line)
    assert logged["user_hash"] == user_hash(root, "alice") != user_hash(root, "bob")
    assert logged["receipt"] == receipt["receipt"] and "user" not in logged and "kept" not in logged
    assert oct((root / "deletions" / "key").stat().st_mode & 0o777) == "0o600"

    # After: a read finds no home; nothing of her is left to delete; a write makes a new home.
    with pytest.raises(UnknownUserError):
        open_user_home(root, "alice")
    with pytest.raises(UnknownUserError, match="nothing to delete"):
        delete_user(root, "alice", holder="test")
    assert holding(root, "alice") == []  # refused before any lock file named after her was made
    home = open_user_home(root, "alice", create=True, embedder=embedder)
    write_facts(home.settings, DAY, "Alice started again with a clean slate")
    home.indexer.sweep()
    assert [c for _, c, _ in home.store.contents() if "Zanzibar" in c] == []


@pytest.mark.slow
def test_nothing_after_the_deletion_brings_anything_back(root: Path, embedder: Embedder) -> None:
    """A search's recall signal, written off its path, and a batch planned before the deletion."""
    home = open_user_home(root, "alice", embedder=embedder)
    assert search(home.store, "which locker code?", embedder=embedder, settings=home.settings)
    delete_user(root, "alice", holder="test")  # the search's recall signal still queued, maybe
    flush_recalls()
    log_recalls(
        home.settings.recall_log_path, [(SECRET, "archive_log")], 1_000_000
    )  # one from elsewhere, late
    assert not user_home(root, "alice").exists()
    done = run_batch(root, [("alice", Work(dream=True)), ("bob", Work())], holder="B2", embedder=embedder)
    assert done[0].skipped == SKIPPED_GONE and not done[0].failed and done[1].ok
    assert_alice_gone(root)  # no outcome, no follower state, no lock file brought back


@pytest.mark.slow
@pytest.mark.parametrize("point", FAILPOINTS)
def test_killed_at_each_step_and_run_again_it_converges(root: Path, embedder: Embedder, point: str) -> None:
    """A real ``erase --all`` process SIGKILLed at ``point``, then run again: one receipt, counting
    what was there before the first run; everything gone; bob untouched."""
    rows = MemoryStore.of(user_target(root, "alice").settings).count()
    command = [CLI, "--json", "erase", "--all", "--root", str(root), "--user", "alice", "--yes"]
    killed = subprocess.run(
        command, env={**os.environ, "MEMORY_FAILPOINTS": f"{point}=kill"}, capture_output=True, timeout=300
    )
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    assert pending_deletions(root) == ["alice"]  # the journal says a deletion is under way
    if point != "delete_user.journal":
        assert not user_home(root, "alice").exists()
    with pytest.raises(DeletionPending):  # no write makes her home again before it is finished
        open_user_home(root, "alice", create=True)

    again = subprocess.run(command, capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    receipt = json.loads(again.stdout)
    assert receipt["resumed"] is True and receipt["home"]["index_rows"] == rows
    assert receipt["root"]["change_feed_lines"] == 1 and receipt["root"]["follower_state_files"] == 2
    assert_alice_gone(root)
    assert_bob_untouched(root, embedder)
    lines = [json.loads(line) for line in deletions_log(root).read_text().splitlines()]
    assert [line["receipt"] for line in lines] == [receipt["receipt"]]  # logged once


def test_nothing_of_a_user_is_unknown_and_a_bad_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnknownUserError, match="nothing to delete"):
        delete_user(tmp_path, "nobody", holder="test")
    with pytest.raises(ValueError, match="is not valid"):
        delete_user(tmp_path, "../etc", holder="test")
    assert not (tmp_path / "deletions").exists() and not (tmp_path / "users").exists()


@pytest.mark.slow
def test_traces_without_a_home_are_still_removed(root: Path) -> None:
    """A home removed by hand leaves the root's traces: deleting the user removes them."""
    import shutil

    shutil.rmtree(user_home(root, "alice"))
    receipt = delete_user(root, "alice", holder="test")
    assert receipt["home"]["files"] == 0 and receipt["root"]["change_feed_lines"] == 1
    # Without the home its files' lock names cannot be worked out: those lock files stay (design §3.5).
    assert [p for p in holding(root, "alice") if not p.startswith("locks/")] == []
    assert load_outcome(root, "alice") is None and holding(root, "Zanzibar") == []


@pytest.mark.slow
def test_an_index_in_a_directory_outside_the_home_goes_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder
) -> None:
    indexes = tmp_path / "indexes"
    monkeypatch.setenv("MEMORY_INDEX_URI_TEMPLATE", f"{indexes}/{{user}}/index")
    root = tmp_path / "root"
    for user, fact in (("alice", SECRET), ("bob", BOB)):
        home = open_user_home(root, user, create=True, embedder=embedder)
        write_facts(home.settings, DAY, fact)
        home.indexer.sweep()
        write_measurement(measure_home(home.settings, home.store), home.settings.dedup_dir)
    assert (indexes / "alice" / "index").is_dir() and (indexes / "alice" / "dedup").is_dir()
    receipt = delete_user(root, "alice", holder="test")
    assert receipt["index_outside_home"] == "directory" and receipt["home"]["index_rows"] == 1
    assert not (indexes / "alice").exists() and (indexes / "bob" / "index").is_dir()
    assert holding(tmp_path, "Zanzibar") == []


@pytest.mark.slow
def test_an_index_on_s3_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder
) -> None:
    with s3_server() as s3:
        s3.make_bucket("memories")
        prefix = uuid.uuid4().hex
        monkeypatch.setenv("MEMORY_INDEX_URI_TEMPLATE", f"s3://memories/{prefix}/{{user}}/index")
        for name, value in s3.env().items():
            monkeypatch.setenv(name, value)
        root = tmp_path / "root"
        for user, fact in (("alice", SECRET), ("bob", BOB)):
            home = open_user_home(root, user, create=True, embedder=embedder)
            write_facts(home.settings, DAY, fact)
            home.indexer.sweep()
        keys = objects(s3, prefix)
        assert any(k.startswith(f"{prefix}/alice/") for k in keys) and any(
            k.startswith(f"{prefix}/bob/") for k in keys
        )
        receipt = delete_user(root, "alice", holder="test")
        assert receipt["index_outside_home"] == "object storage" and receipt["home"]["index_rows"] == 1
        keys = objects(s3, prefix)
        assert not [k for k in keys if k.startswith(f"{prefix}/alice/")], keys
        assert MemoryStore.of(user_target(root, "bob").settings).count() == 1


def objects(s3: S3, prefix: str) -> list[str]:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=s3.endpoint,
        aws_access_key_id=s3.access_key,
        aws_secret_access_key=s3.secret_key,
        region_name=s3.region,
    )
    pages = client.get_paginator("list_objects_v2").paginate(Bucket="memories", Prefix=prefix)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def test_a_single_home_goes_whole_and_one_with_places_outside_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("MEMORY_HOME", "MEMORY_INDEX_URI", "MEMORY_NOTEBOOK_DIR", "MEMORY_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    assert main(["--home", str(home), "init"]) == 0
    settings = Settings.load(home)
    write_facts(settings, DAY, SECRET)
    files = sum(1 for p in home.rglob("*") if p.is_file())
    before = every_byte(home)
    assert main(["--home", str(home), "erase", "--all"]) == 0 and every_byte(home) == before  # a preview
    receipt = json.loads(cli_json(["--home", str(home), "--json", "erase", "--all", "--yes"]))
    assert receipt["path"] == str(home) and receipt["home"]["files"] == files and not home.exists()
    assert receipt["kept"][0].startswith("no deletions log") and "user_hash" not in receipt
    assert [p for p in tmp_path.iterdir()] == []  # nothing beside it either (no journal, no aside)

    assert main(["--home", str(home), "init"]) == 0
    elsewhere = tmp_path / "vault"
    monkeypatch.setenv("MEMORY_NOTEBOOK_DIR", str(elsewhere))
    with pytest.raises(DeletionRefused, match="outside"):
        home_target(Settings.load(home))
    monkeypatch.delenv("MEMORY_NOTEBOOK_DIR")
    with pytest.raises(DeletionRefused, match="suzent"):
        home_target(Settings.load(tmp_path / "suzent", "suzent"))


def cli_json(argv: list[str]) -> str:
    result = subprocess.run([CLI, *argv], capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    return result.stdout.decode()
