"""Real servers the scale-out tests start themselves, and stop: PostgreSQL (Debian's package, a
throwaway cluster), Redis (Debian's ``redis-server``) and an S3-compatible store (moto's server
mode, from PyPI), each on a free port of 127.0.0.1 in a temp dir.

A server that is not installed makes its test skip with the reason and the fix (``make test``
installs Debian's packages when it runs as root, as CI does). PostgreSQL refuses to run as root,
so as root the cluster runs as the unprivileged ``nobody`` (its files in a temp dir it owns, its
unix socket there too); otherwise as the current user.

Processes are stopped by PID: the server's own shutdown first, then SIGKILL to whatever of its
process tree is left after a grace period (never a signal by name or to a group we did not make).
"""

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
UNPRIVILEGED = "nobody"


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


# -- PostgreSQL ------------------------------------------------------------------------------


def postgres_bin(name: str) -> Path | None:
    """A PostgreSQL server program: on PATH, else from Debian's versioned directory."""
    found = shutil.which(name)
    if found:
        return Path(found)
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return Path(candidates[-1]) if candidates else None


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str
    db: str
    socket_dir: Path

    def env(self) -> dict[str, str]:
        """The variables the PostgreSQL dagster.yaml names (docs/guides/scale.md)."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USERNAME": self.user,
            "DAGSTER_PG_PASSWORD": "unused-with-trust-auth",
            "DAGSTER_PG_DB": self.db,
        }


def _as_unprivileged() -> dict[str, object]:
    """subprocess arguments that run a program as ``nobody`` when we are root (else nothing)."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(UNPRIVILEGED)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@contextlib.contextmanager
def postgres_server(db: str = "dagster") -> Iterator[Postgres]:
    """A throwaway PostgreSQL cluster (``initdb`` + ``pg_ctl``) on a free port of 127.0.0.1, its
    data and unix socket in a temp dir, trust authentication from 127.0.0.1 only; ``db`` created."""
    initdb, pg_ctl = postgres_bin("initdb"), postgres_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip(
            "PostgreSQL is not installed (no initdb/pg_ctl): `apt-get install postgresql` "
            "(`make test` installs it when it runs as root, as CI does)"
        )
    as_user = _as_unprivileged()
    base = Path(tempfile.mkdtemp(prefix="memory-assets-pg-"))
    data, sockets, log = base / "data", base / "sockets", base / "server.log"
    sockets.mkdir()
    if as_user:
        for path in (base, sockets):
            os.chown(path, int(as_user["user"]), int(as_user["group"]))  # type: ignore[call-overload]
    user = "memory_assets"
    port = free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", "HOME": str(base)}
    subprocess.run(
        [str(initdb), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
        env=env,
        cwd=base,
        **as_user,  # type: ignore[arg-type]
    )
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [str(pg_ctl), "-D", str(data), "-o", options, "-l", str(log), "-w", "-t", "60", "start"],
        check=True,
        capture_output=True,
        env=env,
        cwd=base,
        **as_user,  # type: ignore[arg-type]
    )
    try:
        import psycopg2

        connection = psycopg2.connect(host="127.0.0.1", port=port, user=user, dbname="postgres")
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{db}"')
        connection.close()
        yield Postgres("127.0.0.1", port, user, db, sockets)
    finally:
        subprocess.run(
            [str(pg_ctl), "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            env=env,
            cwd=base,
            **as_user,  # type: ignore[arg-type]
        )
        shutil.rmtree(base, ignore_errors=True)


# -- Redis -----------------------------------------------------------------------------------


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """Debian's ``redis-server`` on a free port of 127.0.0.1, no persistence; yields its URL."""
    program = shutil.which("redis-server")
    if program is None:
        pytest.skip(
            "redis-server is not installed: `apt-get install redis-server` (`make test` installs it "
            "when it runs as root, as CI does)"
        )
    port = free_port()
    base = Path(tempfile.mkdtemp(prefix="memory-assets-redis-"))
    process = subprocess.Popen(
        [
            program,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, 30, process)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_tree(process, signal.SIGTERM, grace=10)
        shutil.rmtree(base, ignore_errors=True)


# -- S3 (moto) -------------------------------------------------------------------------------


AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ALLOW_HTTP",
)


@dataclass(frozen=True)
class S3:
    endpoint: str
    pid: int  # the server's process (a test may freeze it with SIGSTOP, and must SIGCONT it)
    access_key: str = "testing"
    secret_key: str = "testing-secret-key-never-logged"
    region: str = "us-east-1"

    def env(self) -> dict[str, str]:
        """The environment a LanceDB client on this store reads (the standard AWS variables)."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }

    def make_bucket(self, name: str) -> None:
        import boto3

        boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
        ).create_bucket(Bucket=name)


@contextlib.contextmanager
def s3_server() -> Iterator[S3]:
    """moto's S3-compatible server (``moto_server``, from PyPI) on a free port of 127.0.0.1."""
    program = BIN / "moto_server"
    if not program.exists():
        pytest.skip("moto_server is not installed: `make setup` installs the dev extras (moto[server])")
    port = free_port()
    process = subprocess.Popen(
        [str(program), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, 60, process)
        yield S3(f"http://127.0.0.1:{port}", process.pid)
    finally:
        stop_tree(process, signal.SIGTERM, grace=10)
