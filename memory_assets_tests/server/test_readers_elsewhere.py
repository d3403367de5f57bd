"""Readers in other processes while a real server writes, optimizes and prunes (issue 40, item 3).

A real ``memory-assets serve`` is posted turns for a minute, so its write lane optimizes and
prunes the home's table again and again. Meanwhile other processes read that home as an
assistant or a person would, holding none of the server's locks: the library's ``search`` every
few milliseconds and its ``home_status`` (one process), and the CLI's ``search`` and ``status``
(processes of their own, one after another). Not one read fails, and the versions the readers
lived through were really pruned (a watcher counts the manifests that vanished)."""

import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_assets.core.ops.users import user_settings
from memory_assets_tests.server.serving import CLI, start

USER = "rea"
READ_SECONDS = 60.0
LIBRARY_READER = """
import json, sys, time
from memory_assets.core.ops.status import home_status
from memory_assets.core.ops.users import open_user_home
from memory_assets.core.search.retrieval import search

root, user, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
home = open_user_home(__import__("pathlib").Path(root), user)
queries = ["tomatoes in the garden", "which bed did I sow", "the shed"]
vectors = home.embedder.embed(queries)
print("ready", flush=True)
reads = failed = 0
errors = []
end = time.monotonic() + seconds
k = 0
while time.monotonic() < end:
    try:
        if k % 10 == 9:
            status = home_status(home.settings, home.store)
            if "index_error" in status:
                raise RuntimeError(status["index_error"])
        else:
            search(home.store, queries[k % 3], query_vector=vectors[k % 3], settings=home.settings, log_recall=False)
    except Exception as exc:
        failed += 1
        errors.append(f"{type(exc).__name__}: {exc}"[:300])
    reads += 1
    k += 1
    time.sleep(0.005)
print(json.dumps({"reads": reads, "failed": failed, "errors": errors[:5], "reread": home.store.reread}), flush=True)
"""


def _turn(n: int) -> dict[str, str]:
    at = datetime(2026, 11, 20, 9, tzinfo=UTC) + timedelta(minutes=n)
    return {
        "user": f"I sowed tomatoes in bed number {n} by the shed",
        "chat_id": "garden",
        "at": at.isoformat(),
    }


def _watch(versions: Path, stop: threading.Event, pruned: list[int]) -> None:
    known: set[str] = set()
    while not stop.is_set():
        try:
            now = {n for n in os.listdir(versions) if n.endswith(".manifest")}
        except FileNotFoundError:
            now = set()
        pruned[0] += len(known - now)
        known = now
        stop.wait(0.1)


@pytest.mark.slow
def test_reads_from_other_processes_never_fail_while_the_lane_optimizes_and_prunes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    server = start(root)
    stop = threading.Event()
    pruned = [0]
    try:
        with server.client() as client:
            for n in range(10):  # the home and its table, before the readers open it
                client.post(f"/v1/users/{USER}/turns", json=_turn(n)).raise_for_status()
            settings = user_settings(root, USER)
            versions = Path(settings.index_uri) / f"{settings.table_name}.lance" / "_versions"
            library = subprocess.Popen(
                [sys.executable, "-c", LIBRARY_READER, str(root), USER, str(READ_SECONDS)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert library.stdout is not None and library.stdout.readline().strip() == "ready"
            # the versions pruned while the readers read
            watcher = threading.Thread(target=_watch, args=(versions, stop, pruned), daemon=True)
            watcher.start()
            cli_runs: list[subprocess.CompletedProcess[str]] = []
            cli_done = threading.Event()

            def cli_reads() -> None:
                end = time.monotonic() + READ_SECONDS
                while time.monotonic() < end:
                    for command in (["search", "tomatoes in bed"], ["status"]):
                        cli_runs.append(
                            subprocess.run(
                                [CLI, "--home", str(settings.home), "--json", *command],
                                capture_output=True,
                                text=True,
                                env={**os.environ, "LANCEDB_LOG": "error"},
                            )
                        )
                cli_done.set()

            threading.Thread(target=cli_reads, daemon=True).start()
            n = 10
            while library.poll() is None or not cli_done.is_set():
                client.post(f"/v1/users/{USER}/turns", json=_turn(n)).raise_for_status()
                n += 1
                time.sleep(0.2)
            stop.set()
            out, err = library.communicate(timeout=60)
    finally:
        stop.set()
        server.stop()
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["failed"] == 0, (figures, err[-2000:])
    failed_cli = [r for r in cli_runs if r.returncode != 0 or "index_error" in r.stdout]
    assert cli_runs and not failed_cli, [(r.returncode, r.stderr[-500:]) for r in failed_cli]
    assert figures["reads"] > 0 and pruned[0] > 0, ("no version was pruned while they read", figures)
