"""A real ``memory-assets serve`` whose root is on a small tmpfs filled to full.

The disk is a real file system the test mounts (``mount -t tmpfs``, which needs root: CI runs as
root; elsewhere the test skips and says so), filled by a file written until the kernel refuses
(ENOSPC). Then:

* with the server's free-space threshold in force: every write is a 507 ``disk_full`` naming the
  home and the fix, with nothing written; reads still answer; ``/ready`` says not ready and why;
* with the threshold off (``MEMORY_SERVER_MIN_FREE_BYTES=0``), so writes meet the full disk
  themselves at whatever step they reach: every answer is a 200 or a 507 (never a 500, never a
  raw error of Rust or Python), a 200's turn is kept once, a 507's turn is kept nowhere;
* once space is freed, each refused request retried with its key is written once, a second retry
  is answered from the first answer, nothing acknowledged is lost, and after the server's restart
  (its catch-up) ``memory-assets check`` passes on the home.
"""

import contextlib
import errno
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memory_assets.cli import main
from memory_assets.core.ops.users import user_settings
from memory_assets.server.auth import add_token
from memory_assets_tests.server.serving import Server, start
from memory_assets_tests.server.test_api import facts_in_logs
from memory_assets_tests.server.test_idempotency import said

pytestmark = pytest.mark.slow

DISK_MB = 24
RAW = ("Traceback", ".rs:", "OSError", "Errno", "os error", "lance error", "RuntimeError")


@contextlib.contextmanager
def small_disk(path: Path) -> Iterator[Path]:
    path.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m,mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a {DISK_MB} MB tmpfs ({done.stderr.strip() or 'mount failed'}): the test needs "
            "root, as CI runs it"
        )
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """A file written until the disk refuses more, then cut so that ``leave`` bytes are free."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    if leave:
        os.truncate(filler, filler.stat().st_size - leave)
    return filler


def no_internals(answer: httpx.Response) -> None:
    for raw in RAW:
        assert raw not in answer.text, answer.text[:600]


def held(root: Path, user: str, text: str) -> list[str]:
    """The files of the user's home holding ``text`` (its index aside)."""
    home = user_settings(root, user).home
    needle = text.encode()
    return sorted(
        str(p.relative_to(home))
        for p in home.rglob("*")
        if p.is_file() and "index" not in p.relative_to(home).parts[:1] and needle in p.read_bytes()
    )


def post(alice: httpx.Client, text: str, key: str) -> httpx.Response:
    answer = alice.post("/v1/users/alice/turns", json={"user": text}, headers={"Idempotency-Key": key})
    no_internals(answer)
    return answer


def test_a_full_disk_is_named_loses_nothing_acknowledged_and_recovers(tmp_path: Path) -> None:
    tokens_file = tmp_path / "tokens.json"
    token = add_token(tokens_file, "alice")
    acked: dict[str, str] = {}  # key -> the user text acknowledged
    refused: dict[str, str] = {}  # key -> the user text refused with 507
    with small_disk(tmp_path / "disk") as disk:
        root = disk / "root"
        args = ("--tokens-file", str(tokens_file))

        def serve(min_free: int) -> Server:
            return start(root, *args, env={"MEMORY_SERVER_MIN_FREE_BYTES": str(min_free)}, log_dir=tmp_path)

        # -- the threshold in force -----------------------------------------------------------
        server = serve(4 << 20)
        try:
            with server.client(token) as alice:
                for n in range(3):
                    text = f"I planted {n + 3} lemon trees in my garden in Faro."
                    assert post(alice, text, f"before-{n}").status_code == 200
                    acked[f"before-{n}"] = text
                filler = fill(disk)
                text = "I started learning the bandoneon this winter."
                full = post(alice, text, "while-full")
                assert full.status_code == 507, full.text
                body = full.json()
                assert body["error"] == "disk_full" and "users/alice" in body["detail"]
                assert "free space" in body["fix"] and "Idempotency-Key" in body["fix"]
                refused["while-full"] = text
                memory = alice.post("/v1/users/alice/memories", json={"text": "Owns a green kayak"})
                assert memory.status_code == 507 and memory.json()["error"] == "disk_full"
                gone = alice.post("/v1/users/alice/forget", json={"text": acked["before-0"]})
                assert gone.status_code == 507
                # Reads still answer.
                assert alice.post("/v1/users/alice/search", json={"query": "lemon trees"}).status_code == 200
                assert alice.get("/v1/users/alice/status").status_code == 200
                # A retry of an acknowledged request is answered from its record, full disk or not.
                replay = post(alice, acked["before-1"], "before-1")
                assert replay.status_code == 200 and replay.headers["idempotent-replayed"] == "true"
            ready = httpx.get(f"{server.url}/ready", timeout=30)
            assert ready.status_code == 503 and ready.json()["disk_ok"] is False
            assert "MEMORY_SERVER_MIN_FREE_BYTES" in ready.json()["disk_error"]
            assert held(root, "alice", "bandoneon") == [] and held(root, "alice", "kayak") == []
        finally:
            server.stop()
        filler.unlink()

        # -- the threshold off: writes meet the full disk wherever they are -------------------
        server = serve(0)
        try:
            with server.client(token) as alice:
                for n, leave in enumerate((0, 0, 2048, 4096, 8192, 16384, 65536, 262144)):
                    filler = fill(disk, leave)
                    text = f"My locker number at the pool is {4100 + n}."
                    answer = post(alice, text, f"probe-{n}")
                    assert answer.status_code in (200, 507), answer.text
                    if answer.status_code == 200:
                        acked[f"probe-{n}"] = text
                        assert said(root, "alice")[text] == 1
                        error = answer.json()["reindex_error"]  # kept, the index not written: said so
                        assert error is None or "the disk holding the home is full" in error
                    else:
                        assert answer.json()["error"] == "disk_full"
                        refused[f"probe-{n}"] = text
                        assert held(root, "alice", f"number at the pool is {4100 + n}") == [], n
                    filler.unlink()
            assert refused.keys() - {"while-full"}, "no write met the full disk"
            # Space is back: every refused request, retried with its key, is written once.
            with server.client(token) as alice:
                for key, text in refused.items():
                    first = post(alice, text, key)
                    assert first.status_code == 200 and "idempotent-replayed" not in first.headers, first.text
                    second = post(alice, text, key)
                    assert second.status_code == 200 and second.headers["idempotent-replayed"] == "true"
                    assert second.json() == first.json()
                for key, text in acked.items():
                    again = post(alice, text, key)
                    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
            assert httpx.get(f"{server.url}/ready", timeout=30).json()["disk_ok"] is True
        finally:
            server.stop()
        assert "Traceback" not in server.output()

        every = {**acked, **refused}
        kept = said(root, "alice")
        for text in every.values():
            assert kept[text] == 1, (text, kept[text])
        facts = Counter(facts_in_logs(root, "alice"))
        assert facts and all(n == 1 for n in facts.values()), facts

        again = serve(4 << 20)  # ready: its catch-up indexed what the full disk left, and the disk has room
        again.stop()
        home = user_settings(root, "alice").home
        assert main(["--home", str(home), "check"]) == 0
