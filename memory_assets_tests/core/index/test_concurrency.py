"""One writer per file, proven with real processes (never threads): racing reindexes, a stale plan
held at a barrier, and a table damaged by duplicate ids repaired by the next reindex."""

import json
import os
import subprocess
import sys
import time
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.ops.status import init_home
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import DAY, write_facts

REPO = Path(__file__).resolve().parents[3]


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def reindex_process(home: Path, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "memory_assets.cli", "--home", str(home), "--json", "reindex"],
        env=env(**extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 180) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out)


def wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(
                f"the process exited ({proc.returncode}) before {path.name}: {proc.stderr.read()}"
            )
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def stored(settings: Settings) -> list[str]:
    return sorted(c for _, c, _ in MemoryStore(settings.index_uri).contents())


def expected_ids(settings: Settings) -> list[str]:
    return sorted(r.id for p in Indexer(settings).plan_everything() for r in p.rows)


def stored_ids(settings: Settings) -> list[str]:
    return sorted(i for i, _, _ in MemoryStore(settings.index_uri).contents())


@pytest.mark.parametrize("pause_at", ["index.planned", "index.locked"])
def test_a_stale_plan_never_deletes_newer_rows(
    settings: Settings, indexer: Indexer, tmp_path: Path, pause_at: str
) -> None:
    """Process A plans (L1-L4) and is held at a barrier; meanwhile L5 is appended and process B
    reindexes. When A goes on, the table must still hold L5. ``index.planned``: A holds no lock,
    so B finishes first and A must re-plan rather than apply its stale plan. ``index.locked``: A
    holds the file's lock, so B must wait for it, then add L5 after A."""
    lines = [f"Line {n} of the day, about topic number {n}" for n in range(1, 6)]
    write_facts(settings, DAY, *lines[:3])
    indexer.sweep()
    write_facts(settings, DAY, lines[3], hour=10)
    barrier = tmp_path / "barrier"
    a = reindex_process(settings.home, MEMORY_FAILPOINTS=f"{pause_at}=pause:{barrier}")
    wait_for(Path(f"{barrier}.reached"), a)
    write_facts(settings, DAY, lines[4], hour=11)
    b = reindex_process(settings.home)
    if pause_at == "index.planned":
        finish(b)
        assert stored(settings) == sorted(lines)  # B indexed L4 and L5 while A was held
    else:
        time.sleep(3)
        assert b.poll() is None, "B must wait for the lock A holds"
    barrier.touch()
    result_a = finish(a)
    if pause_at == "index.locked":
        result_b = finish(b)
        assert result_b["embedded"] == 1  # L5, after A's L4
    assert result_a["deleted"] == 0
    assert stored(settings) == sorted(lines)
    assert stored_ids(settings) == expected_ids(settings)


def test_a_table_with_duplicate_ids_is_repaired_by_the_next_reindex(
    settings: Settings, indexer: Indexer
) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers", "Keeps bees on the roof of the flat")
    write_facts(settings, date(2026, 11, 21), "Drinks oat milk in coffee")
    indexer.sweep()
    table = MemoryStore(settings.index_uri).table()
    damage = table.search().where("source_file = '2026-11-20.md'").limit(None).to_arrow()
    table.add(damage)  # what two unlocked writers used to leave behind: every row of the day twice
    table.add(damage)
    assert Counter(stored_ids(settings)).most_common(1)[0][1] == 3
    result = finish(reindex_process(settings.home))
    assert result["repaired"] == 4 and result["files_updated"] == 1
    assert stored_ids(settings) == expected_ids(settings)  # each id once, exactly the planned rows


@pytest.mark.slow
def test_racing_reindexes_and_an_appender_never_duplicate_rows(tmp_path: Path) -> None:
    """4 processes run `reindex` on the same home while a fifth appends 500 lines across 3 logs;
    20 repetitions, each on a fresh home (the processes serve every repetition, so the model loads
    once per process). At the end of each, rows equal fact lines, no id repeats, and no reindex
    ever found a duplicate to repair."""
    reps, lines = 20, 500
    root = tmp_path / "race"
    for rep in range(reps):
        init_home(Settings.load(root / f"rep{rep}", env={}))
    worker = [sys.executable, "-m", "memory_assets_tests.race_worker"]
    common = ["--root", str(root), "--reps", str(reps)]
    procs = [
        subprocess.Popen(
            [*worker, "reindex", *common, "--id", str(i)], env=env(), stderr=subprocess.PIPE, text=True
        )
        for i in range(4)
    ]
    procs.append(
        subprocess.Popen(
            [*worker, "append", *common, "--lines", str(lines), "--id", "7"],
            env=env(),
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    try:
        for rep in range(reps):
            home = root / f"rep{rep}"
            (home / "go").touch()
            deadline = time.monotonic() + 300
            while not all((home / f"reindexer-{i}.json").exists() for i in range(4)):
                for proc in procs:
                    if proc.poll() is not None and proc.returncode != 0:
                        raise AssertionError(proc.stderr.read()[-3000:])
                assert time.monotonic() < deadline, f"repetition {rep} did not finish"
                time.sleep(0.05)
            settings = Settings.load(home, env={})
            runs = [r for i in range(4) for r in json.loads((home / f"reindexer-{i}.json").read_text())]
            ids = stored_ids(settings)
            assert len(ids) == lines, f"repetition {rep}: {len(ids)} rows for {lines} fact lines"
            assert len(set(ids)) == len(ids), f"repetition {rep}: duplicate ids"
            assert ids == expected_ids(settings)
            assert sum(r["repaired"] for r in runs) == 0, f"repetition {rep}: a reindex met duplicates"
            assert len(runs) >= 8  # every process reindexed while the appends ran, and once after
    except BaseException:  # never mask the failure: workers waiting for their next "go" are killed
        for proc in procs:
            proc.kill()
        raise
    finally:
        for proc in procs:
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
