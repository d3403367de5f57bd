"""Erase with real processes: SIGKILLed at each named failpoint and run again it converges; racing a
writer that appends to the same day's log and the same transcript, every other line is kept."""

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_assets.core.index.store import MemoryStore
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets_tests.core.erase.test_erase import SECRET, holders, planted_home

CLI = str(Path(sys.executable).parent / "memory-assets")
FAILPOINTS = [
    "erase.planned",
    "erase.log_rewritten",
    "erase.logs",
    "erase.transcripts",
    "erase.vault",
    "erase.state",
    "erase.purged",
    "erase.index",
    "erase.verified",
]


def cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "--home", str(home), "--json", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MEMORY_HOME": str(home), **env},
    )


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One planted home, copied for each case (building it takes a dream and a dedup report)."""
    from memory_assets.core.ops.status import init_home

    home = tmp_path_factory.mktemp("planted") / "home"
    settings = Settings.load(home)
    init_home(settings)

    def run(*args: str) -> tuple[int, Any]:
        done = cli(home, *args)
        return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None

    planted_home(settings, cli=run)
    return home


@pytest.mark.slow
@pytest.mark.parametrize("point", FAILPOINTS)
def test_an_erase_killed_at_each_failpoint_converges_when_run_again(
    planted: Path, tmp_path: Path, point: str, embedder: Embedder
) -> None:
    home = tmp_path / "home"
    shutil.copytree(planted, home)
    killed = cli(home, "erase", SECRET, "--yes", MEMORY_FAILPOINTS=f"{point}=kill")
    assert killed.returncode == -9, killed.stderr[-2000:]
    journal = home / "notebook" / ".state" / "erase_journal.json"
    if journal.exists():  # an unfinished erase is named by check, with its fix
        check = cli(home, "check")
        assert check.returncode == 1 and "erase --resume" in check.stdout + check.stderr
    again = cli(home, "erase", SECRET, "--yes")
    if again.returncode != 0:  # killed after its last change: nothing left for a new erase to find
        assert "no line or turn of this home holds" in again.stderr, again.stderr[-2000:]
        assert cli(home, "erase", "--resume").returncode == 0
    assert not journal.exists()
    assert holders(home, SECRET) == []
    settings = Settings.load(home)
    for _version, contents in MemoryStore.of(settings).retained_contents():
        assert not any(SECRET.lower() in c.lower() for c in contents)
    assert cli(home, "check").returncode == 0, cli(home, "check").stdout[-3000:]
    hits = json.loads(cli(home, "search", "cat named Miso").stdout)
    assert any("Miso" in h["content"] for h in hits)


WRITER = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from memory_assets.core.capture.daily_log import LogFact, append_facts
from memory_assets.core.capture.transcripts import keep_turn
archive, transcripts, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    now = datetime.now(UTC)
    append_facts(archive, "c1", [LogFact(f"Racing writer fact number {i:03d}", "context")], now=now)
    keep_turn(transcripts, "c1", f"Racing turn number {i:03d}", "ok", now)
"""


@pytest.mark.slow
def test_erase_racing_a_writer_on_the_same_log_and_transcript_keeps_every_other_line(
    planted: Path, tmp_path: Path, embedder: Embedder
) -> None:
    home = tmp_path / "home"
    shutil.copytree(planted, home)
    settings = Settings.load(home)
    writes = 150
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(settings.archive_dir), str(settings.transcripts_dir), str(writes)]
    )
    erased = cli(home, "erase", SECRET, "--yes")
    assert writer.wait(timeout=600) == 0
    assert erased.returncode == 0, erased.stderr[-2000:]
    today = settings.archive_dir / f"{datetime.now(UTC).date().isoformat()}.md"
    log = today.read_text()
    assert all(f"Racing writer fact number {i:03d}" in log for i in range(writes))
    said = (settings.transcripts_dir / "captured" / "c1.jsonl").read_text()
    assert all(f"Racing turn number {i:03d}" in said for i in range(writes))
    assert holders(home, SECRET) == []
    assert cli(home, "reindex").returncode == 0
    check = cli(home, "check")
    assert check.returncode == 0, check.stdout[-3000:]
