"""Damage to the index table's files: named with the fix, rebuilt from the markdown by
``reindex --rebuild`` (the damaged table moved aside, never deleted), and a search on a garbled
table that fails fast within bounded memory. Real LanceDB in temp dirs, the real model."""

import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pytest

from memory_assets.cli import main
from memory_assets.core.index import table_damage
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import DamagedTableError, MemoryStore
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.status import init_home
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

REPO = Path(__file__).resolve().parents[3]
GARBLED = Path(__file__).parent / "data" / "garbled_table.tar.gz"
TODAY = datetime.now(UTC).date()
DAYS = [date.fromordinal(TODAY.toordinal() - k) for k in (3, 2, 1, 0)]
FACTS = {
    DAYS[0]: ["Keeps a sourdough starter called Bubbles", "Plays five-a-side football on Tuesdays"],
    DAYS[1]: ["Is learning Portuguese for a move to Porto", "Drinks oat milk flat whites"],
    DAYS[2]: ["Runs a Raspberry Pi cluster in the hallway cupboard", "Reads a chapter of Dune every night"],
    DAYS[3]: ["Booked a ferry to the Isle of Skye for August"],
}
ROWS = sum(len(v) for v in FACTS.values())


def _home(path: Path) -> Settings:
    settings = Settings.load(path)
    init_home(settings)
    return settings


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    """A home whose table went through what a real one does: a bulk fill, an optimize (the indexes
    cover those rows) and a later per-file write (a fragment the indexes do not cover yet)."""
    home = tmp_path_factory.mktemp("damage") / "home"
    settings = _home(home)
    for day in DAYS[:3]:
        write_facts(settings, day, *FACTS[day])
    indexer = Indexer(settings, embedder=embedder, today=TODAY)
    indexer.sweep()
    indexer.optimize()
    write_facts(settings, DAYS[3], *FACTS[DAYS[3]])
    indexer.reindex_day(DAYS[3])
    return home


def _table(settings: Settings) -> Path:
    return Path(settings.index_uri) / "archival_memories.lance"


def _data_files(settings: Settings) -> list[Path]:
    return sorted((_table(settings) / "data").glob("*.lance"), key=lambda p: p.stat().st_size, reverse=True)


def _all_data(settings: Settings) -> None:
    for path in _data_files(settings):
        path.unlink()


def _manifests(settings: Settings) -> None:
    table = _table(settings)
    for path in (table / "_versions").iterdir():
        path.unlink()
    hour_ago = time.time() - 3600  # long settled: no writer is creating this table
    for path in (table / "data").iterdir():
        os.utime(path, (hour_ago, hour_ago))


DAMAGE: dict[str, Callable[[Settings], None]] = {
    "indices_deleted": lambda s: shutil.rmtree(_table(s) / "_indices"),
    "all_data_files_deleted": _all_data,
    "one_data_file_deleted": lambda s: _data_files(s)[0].unlink(),
    "data_file_truncated": lambda s: os.truncate(_data_files(s)[0], _data_files(s)[0].stat().st_size // 2),
    "data_file_garbled": lambda s: _data_files(s)[0].write_bytes(random.Random(7).randbytes(4096)),
    "manifests_deleted": _manifests,
}


def _hits(settings: Settings, embedder: Embedder, query: str) -> list[str]:
    store = MemoryStore.of(settings)
    return [h.content for h in search(store, query, embedder=embedder, settings=settings, log_recall=False)]


@pytest.mark.parametrize("case", list(DAMAGE))
def test_reindex_rebuild_moves_a_damaged_table_aside_and_rebuilds_it_from_the_markdown(
    healthy: Path, tmp_path: Path, embedder: Embedder, case: str
) -> None:
    home = tmp_path / "home"
    shutil.copytree(healthy, home)  # keeps the mtimes the file ledger recorded
    settings = Settings.load(home)
    DAMAGE[case](settings)
    before = sorted(p.name for p in _table(settings).rglob("*") if p.is_file())

    # A read names the table, what is wrong and the fix (never a raw LanceDB error).
    with pytest.raises(DamagedTableError) as raised:
        _hits(settings, embedder, "sourdough starter")
    message = str(raised.value)
    assert f"index table archival_memories at {settings.index_uri} is damaged" in message
    assert (
        "memory-assets reindex --rebuild" in message and ".cargo" not in message and "/rustc/" not in message
    )

    result = Indexer(settings, embedder=embedder, today=TODAY).sweep(rebuild=True)

    assert result.rows == ROWS and result.embedded == ROWS
    asides = sorted(Path(settings.index_uri).glob("archival_memories.lance.damaged-*"))
    assert len(asides) == 1  # moved aside, beside the index, with every file it had: nothing deleted
    assert sorted(p.name for p in asides[0].rglob("*") if p.is_file()) == before
    assert any(str(asides[0]) in w and "moved aside" in w for w in result.warnings)
    assert "Booked a ferry to the Isle of Skye for August" in _hits(settings, embedder, "ferry to Skye")
    assert "Keeps a sourdough starter called Bubbles" in _hits(settings, embedder, "sourdough starter")
    # The rebuilt table reads cleanly, and the index lists only it.
    assert table_damage.suspects(_table(settings)) == []
    assert MemoryStore.of(settings).count() == ROWS


def test_a_sound_table_is_rebuilt_in_place_and_nothing_is_set_aside(
    healthy: Path, tmp_path: Path, embedder: Embedder
) -> None:
    home = tmp_path / "home"
    shutil.copytree(healthy, home)
    settings = Settings.load(home)
    result = Indexer(settings, embedder=embedder, today=TODAY).sweep(full=True)
    assert result.rows == ROWS and result.embedded == 0  # a diff, not a rebuild
    assert not list(Path(settings.index_uri).glob("*.damaged-*"))
    assert not any("moved aside" in w for w in result.warnings)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_names_the_damage_and_the_fix_and_status_and_check_keep_going(
    healthy: Path,
    tmp_path: Path,
    embedder: Embedder,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    shutil.copytree(healthy, home)
    settings = Settings.load(home)
    monkeypatch.setenv("MEMORY_HOME", str(home))
    DAMAGE["data_file_garbled"](settings)

    code, _, err = _run(capsys, "search", "sourdough starter")
    assert code == 2
    assert "archival_memories" in err and "is damaged" in err and "memory-assets reindex --rebuild" in err
    assert "Traceback" not in err and ".cargo" not in err

    code, out, err = _run(capsys, "--json", "status")
    status = json.loads(out)
    assert code == 0 and "memory-assets reindex --rebuild" in status["index_error"]
    assert status["daily_logs"] == len(DAYS)  # the rest of the home is still described

    code, out, err = _run(capsys, "--json", "check")
    outcomes = {o["name"]: o for o in json.loads(out)}
    assert code == 1 and "Traceback" not in err
    assert not outcomes["rows_match_logs"]["passed"]
    assert any("memory-assets reindex --rebuild" in p for p in outcomes["rows_match_logs"]["problems"])
    assert outcomes["logs_append_only"]["passed"]  # the checks that need no table still run

    code, out, err = _run(capsys, "--json", "reindex", "--rebuild")
    assert code == 0 and json.loads(out)["rows"] == ROWS
    assert "moved aside" in caplog.text  # the warning, logged to stderr
    code, out, _ = _run(capsys, "--json", "check")
    assert code == 0, out


def test_a_search_on_a_table_garbled_into_an_unbounded_allocation_fails_fast_within_bounded_memory(
    tmp_path: Path,
) -> None:
    """The probe's OOM: a data file garbled after the last commit made one uncapped search grow
    to 24 GB. The search runs in a child process capped at 6 GiB of address space (without the
    cap this table makes LanceDB allocate more than 10 GB); it must exit with the error naming the
    damage and the fix, having stayed far below the cap, not abort on a failed allocation."""
    home = tmp_path / "home"
    settings = _home(home)
    with tarfile.open(GARBLED) as archive:
        archive.extractall(settings.index_uri, filter="data")
    table = _table(settings)
    committed = time.time() - 3600  # the table's last commit an hour ago; the garble just now
    for path in [table, *table.rglob("*")]:
        os.utime(path, (committed, committed))
    os.utime(_data_files(settings)[0])
    cap = 6 << 30
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))\n"
        "from memory_assets.cli import main\n"
        f"sys.exit(main(['--home', {str(home)!r}, 'search', 'person likes the item']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "LANCEDB_LOG": "error"}
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
    child.stdout and child.stdout.close()
    child.stderr and child.stderr.close()
    peak_mib = usage.ru_maxrss / 1024  # the search and its bounded reader, whichever was larger
    assert os.WIFEXITED(status), (
        f"killed by signal {os.WTERMSIG(status)} after {seconds:.0f} s: {stderr[-500:]}"
    )
    assert os.WEXITSTATUS(status) == 2, stderr[-2000:]
    assert "is damaged" in stderr and "memory-assets reindex --rebuild" in stderr, stderr[-2000:]
    assert "Traceback" not in stderr
    assert peak_mib < 2048, f"peak RSS {peak_mib:.0f} MiB"


def test_the_file_ledger_never_launders_a_changed_file(tmp_path: Path) -> None:
    table = tmp_path / "t.lance"
    (table / "data").mkdir(parents=True)
    (table / "_versions").mkdir()
    first = table / "data" / "a.lance"
    first.write_bytes(b"x" * 100)
    past = time.time() - 60
    os.utime(first, (past, past))
    table_damage.record(table)
    assert table_damage.suspects(table) == []
    first.write_bytes(b"y" * 100)  # same size, changed after it was recorded
    (table / "data" / "b.lance").write_bytes(b"z")  # a new file written after the last commit
    table_damage.record(table)  # a later commit by the writer keeps a's old signature
    assert table_damage.suspects(table) == ["data/a.lance"]
    table_damage.record(table, afresh=True)  # what a clean bounded read does
    assert table_damage.suspects(table) == []
    aside = table_damage.set_aside(table)
    assert aside.name.startswith("t.lance.damaged-") and (aside / "data" / "a.lance").is_file()
    assert not table.exists() and not table_damage.ledger_path(table).exists()


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (
            "lance error: Not found: tmp/h/index/archival_memories.lance/data/0001.lance, "
            "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lance-io-13.0.0/src/local.rs:273:40",
            "a data file of the live version is missing (data/0001.lance)",
        ),
        (
            "lance error: LanceError(IO): Generic N/A error: Wrapped error: Not found: /h/index/archival_memories"
            ".lance/_indices/9125/bitmap_page_lookup.lance, /rustc/2d81/library/core/src/ops/function.rs:250:5",
            "an index file of the live version is missing (_indices/9125/bitmap_page_lookup.lance)",
        ),
        (
            "lance error: LanceError(IO): Generic LocalFileSystem error: failed to fill whole buffer, "
            "/rustc/2d81/library/core/src/ops/function.rs:250:5",
            "shorter than the table records",
        ),
        (
            "Invalid input, file does not appear to be a Lance file (invalid magic: [76, 65, 78, 67])",
            "not a Lance file",
        ),
    ],
)
def test_raw_lance_errors_are_said_in_words(raw: str, says: str) -> None:
    what = table_damage.explain(RuntimeError(raw))
    assert what is not None and says in what and ".cargo" not in what and "/rustc/" not in what


def test_errors_that_are_not_about_the_files_pass_unchanged() -> None:
    assert table_damage.explain(ValueError("Invalid user input: no such column: nope")) is None
    assert table_damage.explain(KeyboardInterrupt()) is None


def test_the_bounded_reader_reads_a_sound_table_cleanly(healthy: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(healthy, home, copy_function=shutil.copy)  # new mtimes: every file is doubtful
    settings = Settings.load(home)
    table_damage.forget(_table(settings))
    for path in (_table(settings) / "data").iterdir():
        os.utime(path)
    assert table_damage.suspects(_table(settings))
    vector = np.zeros(384, dtype=np.float32)
    vector[0] = 1.0
    store = MemoryStore.of(settings)
    assert len(search(store, "sourdough", query_vector=vector, settings=settings, log_recall=False)) > 0
    assert table_damage.suspects(_table(settings)) == []  # read once in the child, then recorded
