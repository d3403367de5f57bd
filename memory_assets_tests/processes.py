"""Processes the tests and benchmarks start themselves, and how they are stopped: a free port of
127.0.0.1, the wait for a listener, a process tree found from /proc and stopped by PID (its own
shutdown signal first, then SIGKILL to whatever of the tree is left after a grace period; never
a signal by name or to a group we did not make), and ``dagster dev``'s GraphQL endpoint."""

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float = 60.0, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before listening on {port}")
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def descendants(pid: int) -> list[int]:
    """``pid`` and every process under it (from /proc), parents first."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop(0)
        found.append(current)
        todo += children.get(current, [])
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop_tree(process: subprocess.Popen, sig: int = signal.SIGINT, grace: float = 15.0) -> None:
    """``sig`` to ``process``, then, after ``grace`` seconds, SIGKILL to each process of its tree
    still alive (``dagster dev`` and ``dagster-daemon`` children may ignore their parent's end)."""
    if process.poll() is not None:
        return
    tree = descendants(process.pid)
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(sig)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in tree):
        time.sleep(0.3)
    for pid in tree:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)


# -- dagster dev's GraphQL --------------------------------------------------------------------------

LAUNCH_BACKFILL = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message }
  ... on InvalidSubsetError { message } } }"""
BACKFILL_STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill {
  status numPartitions runs(limit: 1000) { runId status endTime } } } }"""


def graphql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``data`` of one GraphQL request to the webserver at ``url``; an error answer raises."""
    response = requests.post(
        f"{url}/graphql", json={"query": query, "variables": variables or {}}, timeout=60
    )
    response.raise_for_status()
    body = response.json()
    if "errors" in body:
        raise RuntimeError(body["errors"])
    return body["data"]
