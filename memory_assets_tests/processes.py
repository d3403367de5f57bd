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


def serve_dagster_dev(
    dagster: Path, args: list[str], env: dict[str, str], log_path: Path, cwd: Path, timeout: float
) -> tuple[subprocess.Popen, str]:
    """``dagster dev`` on a free loopback port (``args`` after ``-h 127.0.0.1 -p PORT``), its output
    to ``log_path``, waited for until ``/server_info`` answers: the process and its URL. The
    caller stops it with ``stop_tree``; a process that dies or never serves fails with its log."""
    port = free_port()
    with log_path.open("wb") as log:  # the child keeps its own handle
        process = subprocess.Popen(
            [str(dagster), "dev", "-h", "127.0.0.1", "-p", str(port), *args],
            cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    try:
        while True:
            assert process.poll() is None, log_path.read_text(errors="replace")[-3000:]
            try:
                if requests.get(f"{url}/server_info", timeout=2).ok:
                    return process, url
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, f"dagster dev did not serve within {timeout:.0f} s"
            time.sleep(1)
    except BaseException:
        stop_tree(process)
        raise


def many_homes_env(
    root: Path, dagster_home: Path, barrier: Path, drop: tuple[str, ...] = ()
) -> dict[str, str]:
    """The environment of a many-homes ``dagster dev``: ``MEMORY_ROOT`` and ``DAGSTER_HOME`` set,
    the dream's gates shut (index runs only), every index write paused until ``barrier`` exists
    (so runs stay in flight while a test looks), offline model; ``MEMORY_HOME`` and ``drop`` unset."""
    return {
        **{k: v for k, v in os.environ.items() if k not in ("MEMORY_HOME", *drop)},
        "MEMORY_ROOT": str(root),
        "DAGSTER_HOME": str(dagster_home),
        "MEMORY_DREAM_MIN_FACTS": "1000000",
        "MEMORY_FAILPOINTS": f"index.locked=pause:{barrier}",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


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
