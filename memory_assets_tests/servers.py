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
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_assets_tests.processes import free_port, stop_tree, wait_for_port

BIN = Path(sys.executable).parent
UNPRIVILEGED = "nobody"


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
