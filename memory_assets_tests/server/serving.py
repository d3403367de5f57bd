"""A real ``memory-assets serve`` for the tests: a subprocess on a free port, waited for until
ready, stopped by its own pid (SIGTERM, then SIGKILL after a grace period)."""

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from memory_assets_tests.processes import free_port

CLI = str(Path(sys.executable).parent / "memory-assets")
READY_WAIT_S = 180.0


@dataclass
class Server:
    root: Path
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    log: IO[bytes] = field(repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120.0, **kwargs)

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = READY_WAIT_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited ({self.proc.returncode}):\n{self.output()[-4000:]}")
            try:
                answer = httpx.get(f"{self.url}/ready", timeout=5)
                last = answer.json()
                if answer.status_code == 200 and last["catch_up"]["finished"]:
                    return dict(last)
            except httpx.HTTPError as exc:
                last = exc
            time.sleep(0.25)
        raise AssertionError(f"the server was not ready in {timeout} s ({last}):\n{self.output()[-4000:]}")

    def stop(self, grace: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()
        return int(self.proc.returncode)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)


def start(
    root: Path, *args: str, env: dict[str, str] | None = None, ready: bool = True, log_dir: Path | None = None
) -> Server:
    """``memory-assets serve --root ROOT --port <free> ARGS`` with the tests' environment (the
    session's lock directory included) plus ``env``; its output to ``log_dir`` (default: beside
    the root)."""
    port = free_port()
    log_path = (log_dir or root.parent) / f"server-{port}.log"
    log = open(log_path, "wb")  # noqa: SIM115 (closed by stop)
    proc = subprocess.Popen(
        [CLI, "serve", "--root", str(root), "--port", str(port), *args],
        env={**os.environ, "LANCEDB_LOG": "error", **(env or {})},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Server(root, port, proc, log_path, log)
    if ready:
        try:
            server.wait_ready()
        except BaseException:
            server.stop(grace=5)
            raise
    return server
