"""Indexes on object storage, against a real S3-compatible server the test starts (moto's server
mode, ``servers.s3_server``): the index at ``s3://...`` with LanceDB storage options from the
settings (``MEMORY_INDEX_STORAGE_OPTIONS``) or the environment, one index per user from
``MEMORY_INDEX_URI_TEMPLATE``, and every operation the index has: reindex, search, forget,
optimize; two writer processes committing at once; a writer SIGKILLed while its commit is in
flight (the server frozen mid-request); the secret key never printed or logged.
"""

import json
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from memory_assets.core.audit.checks import ids_unique, rows_match_logs
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.index.target import Target
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.status import init_home
from memory_assets.core.ops.users import open_user_home, user_settings
from memory_assets.core.reconcile import forget
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings, SettingsError, storage_options
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.servers import AWS_VARIABLES, S3, s3_server

REPO = Path(__file__).resolve().parents[3]
BUCKET = "memories"
DAYS = (date(2026, 11, 10), date(2026, 11, 11), date(2026, 11, 12))


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    with s3_server() as server:
        server.make_bucket(BUCKET)
        yield server


def _options(s3: S3) -> str:
    return (
        f"endpoint={s3.endpoint},allow_http=true,region={s3.region},"
        f"aws_access_key_id={s3.access_key},aws_secret_access_key={s3.secret_key}"
    )


@pytest.fixture
def s3_home(tmp_path: Path, s3: S3, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """A home whose markdown is local and whose index is on the S3 server, under a fresh prefix."""
    home = tmp_path / "home"
    for name in ("MEMORY_PROFILE", "MEMORY_NOTEBOOK_DIR", *AWS_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_HOME", str(home))
    monkeypatch.setenv("MEMORY_INDEX_URI", f"s3://{BUCKET}/{uuid.uuid4().hex}/index")
    monkeypatch.setenv("MEMORY_INDEX_STORAGE_OPTIONS", _options(s3))
    settings = Settings.load(home)
    init_home(settings)
    return settings


def _plan_ids(settings: Settings) -> list[str]:
    return sorted(r.id for p in Indexer(settings).plan_everything() for r in p.rows)


def _stored_ids(settings: Settings) -> list[str]:
    return sorted(i for i, _, _ in MemoryStore.of(settings).contents())


def test_storage_options_parse_both_forms_and_never_show_a_value() -> None:
    assert storage_options("endpoint=http://h:9,allow_http=true") == (
        ("allow_http", "true"),
        ("endpoint", "http://h:9"),
    )
    assert storage_options('{"region": "eu-west-1", "allow_http": true}') == (
        ("allow_http", "true"),
        ("region", "eu-west-1"),
    )
    with pytest.raises(SettingsError) as bad:
        storage_options("endpoint=http://h:9,aws_secret_access_key")
    assert "item 2 is not key=value" in str(bad.value) and "aws_secret_access_key" not in str(bad.value)
    with pytest.raises(SettingsError) as bad_json:
        storage_options('{"aws_secret_access_key": "s3cr3t"')
    assert "not valid JSON" in str(bad_json.value) and "s3cr3t" not in str(bad_json.value)
    settings = Settings.load("/tmp/h", env={"MEMORY_INDEX_STORAGE_OPTIONS": "aws_secret_access_key=s3cr3t"})
    assert settings.storage_options() == {"aws_secret_access_key": "s3cr3t"}
    assert "s3cr3t" not in repr(settings)


def test_a_template_without_the_user_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"has no \{user\}"):
        user_settings(tmp_path, "alice", {"MEMORY_INDEX_URI_TEMPLATE": "s3://b/all/index"})


@pytest.mark.slow
def test_reindex_search_forget_optimize_on_s3(
    s3_home: Settings, embedder: Embedder, caplog: pytest.LogCaptureFixture, s3: S3
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = s3_home
    write_facts(
        settings, DAYS[0], "Keeps bees on the roof of the flat", "Prefers metric units in all answers"
    )
    write_facts(settings, DAYS[1], "Is learning to play the cello", "Drinks oat milk in coffee")
    indexer = Indexer(settings, embedder=embedder, today=date(2026, 11, 29))
    sweep = indexer.sweep()
    assert sweep.files_updated >= 2 and not settings.index_is_local
    assert _stored_ids(settings) == _plan_ids(settings)
    assert rows_match_logs(settings, indexer.store).passed and ids_unique(indexer.store).passed

    hits = search(
        indexer.store, "what instrument is the user learning?", embedder=embedder, settings=settings
    )
    assert hits[0].content == "Is learning to play the cello"

    write_facts(settings, DAYS[1], "Runs five kilometres every Sunday", hour=10)
    day = indexer.reindex_day(DAYS[1])
    assert day.embedded == 1 and day.deleted == 0  # a diff on S3 too: only the new line embedded

    forgotten = forget(settings, indexer, Target(text="Drinks oat milk in coffee"))
    assert forgotten["tombstoned"] and forgotten["rows_deleted"] == 1
    contents = {c for _, c, _ in indexer.store.contents()}
    assert "Drinks oat milk in coffee" not in contents and "Runs five kilometres every Sunday" in contents

    before = indexer.store.stats()
    result = indexer.optimize()
    assert result.before.fragments == before.fragments and result.after.fragments <= 2
    assert result.after.rows == len(_plan_ids(settings))
    again = MemoryStore.of(settings)  # a fresh handle reads the optimized table from S3
    assert sorted(i for i, _, _ in again.contents()) == _plan_ids(settings)
    hits = search(again, "bees on the roof", embedder=embedder, settings=settings)
    assert hits[0].content == "Keeps bees on the roof of the flat"
    assert s3.secret_key not in caplog.text


@pytest.mark.slow
def test_each_user_has_an_index_of_their_own_on_s3(
    tmp_path: Path, s3: S3, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = uuid.uuid4().hex
    monkeypatch.setenv("MEMORY_INDEX_URI_TEMPLATE", f"s3://{BUCKET}/{prefix}/{{user}}/index")
    monkeypatch.delenv("MEMORY_INDEX_STORAGE_OPTIONS", raising=False)
    for name, value in s3.env().items():  # the index's settings from the standard AWS variables this time
        monkeypatch.setenv(name, value)
    root = tmp_path / "root"
    facts = {"alice": "Alice keeps bees on the roof", "bob": "Bob plays the cello on Sundays"}
    for user, fact in facts.items():
        home = open_user_home(root, user, create=True, embedder=embedder)
        assert home.settings.index_uri == f"s3://{BUCKET}/{prefix}/{user}/index"
        write_facts(home.settings, DAYS[0], fact)
        home.indexer.sweep()
    for user, fact in facts.items():
        home = open_user_home(root, user, embedder=embedder)
        assert [c for _, c, _ in home.store.contents()] == [fact]  # only this user's row
        assert (
            search(home.store, "bees or cello", embedder=embedder, settings=home.settings)[0].content == fact
        )


# -- writer processes ------------------------------------------------------------------------


def _env(settings: Settings, s3: S3, **extra: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if k not in AWS_VARIABLES},
        "PYTHONPATH": str(REPO),
        "MEMORY_HOME": str(settings.home),
        "MEMORY_INDEX_URI": settings.index_uri,
        "MEMORY_INDEX_STORAGE_OPTIONS": _options(s3),
        **extra,
    }


DAY_WRITER = (
    "import json, sys; from datetime import date; from memory_assets.core.home import Home; "
    "r = Home.load().ready().indexer.reindex_day(date.fromisoformat(sys.argv[1])); "
    "print(json.dumps({'embedded': r.embedded, 'rows': r.rows}))"
)


def _reindex(settings: Settings, s3: S3, day: date | None = None, **extra: str) -> subprocess.Popen[str]:
    """``memory-assets reindex`` (every file), or one day's reindex, in a new process."""
    command = (
        ["-m", "memory_assets.cli", "--json", "reindex"] if day is None else ["-c", DAY_WRITER, str(day)]
    )
    return subprocess.Popen(
        [sys.executable, *command],
        env=_env(settings, s3, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the writer exited ({proc.returncode}) first: {proc.stderr.read()[-3000:]}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _finish(proc: subprocess.Popen[str], s3: S3) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    assert s3.secret_key not in out + err
    return json.loads(out)


def _lines(day: date, n: int) -> list[str]:
    return [f"On {day} the user mentioned plan number {i} about topic {i * 7 % 101}" for i in range(n)]


@pytest.mark.slow
def test_two_writer_processes_commit_to_one_s3_table_at_once(
    s3_home: Settings, s3: S3, embedder: Embedder, tmp_path: Path
) -> None:
    """Two processes reindex the same home (different days; the table lock is shared by per-file
    writers) and are released together after embedding, so their commits race on S3."""
    settings = s3_home
    write_facts(settings, DAYS[0], "Keeps bees on the roof of the flat")
    Indexer(settings, embedder=embedder).sweep()  # the table exists; now two days to add at once
    for day in DAYS[1:]:
        write_facts(settings, day, *_lines(day, 60))
    barrier = tmp_path / "go"
    writers = [
        _reindex(settings, s3, day, MEMORY_FAILPOINTS=f"index.embedded=pause:{barrier}-{n}")
        for n, day in enumerate(DAYS[1:])
    ]
    for n, writer in enumerate(writers):
        _wait_for(Path(f"{barrier}-{n}.reached"), writer)
    for n in range(2):
        Path(f"{barrier}-{n}").touch()
    results = [_finish(w, s3) for w in writers]
    assert sum(r["embedded"] for r in results) == 120  # each day embedded once, by one of them
    ids = _stored_ids(settings)
    assert ids == _plan_ids(settings) and max(Counter(ids).values()) == 1
    assert rows_match_logs(settings, MemoryStore.of(settings)).passed


@pytest.mark.slow
def test_a_writer_killed_mid_commit_leaves_a_table_the_next_reindex_completes(
    s3_home: Settings, s3: S3, embedder: Embedder, tmp_path: Path
) -> None:
    """A writer is held after embedding; the S3 server is frozen (SIGSTOP); the writer is released
    and starts its commit, which hangs on the frozen server; the writer is SIGKILLed there; the
    server resumes (and may complete what the dead writer sent). The table still opens, no id is
    twice, and the next reindex brings it exactly to the logs. Then the same with the kill between
    the diff's delete and add commits (the ``index.deleted`` failpoint)."""
    settings = s3_home
    write_facts(settings, DAYS[0], "Keeps bees on the roof of the flat")
    Indexer(settings, embedder=embedder).sweep()
    write_facts(settings, DAYS[1], *_lines(DAYS[1], 200))
    barrier = tmp_path / "go"
    writer = _reindex(settings, s3, MEMORY_FAILPOINTS=f"index.embedded=pause:{barrier}")
    _wait_for(Path(f"{barrier}.reached"), writer)
    moto = s3.pid
    os.kill(moto, signal.SIGSTOP)
    try:
        barrier.touch()
        time.sleep(3)  # the writer leaves the barrier and blocks in its commit's requests
        assert writer.poll() is None, "the writer finished while the server was frozen"
        writer.kill()
        writer.wait(timeout=30)
    finally:
        os.kill(moto, signal.SIGCONT)
    store = MemoryStore.of(settings)
    ids = sorted(i for i, _, _ in store.contents())  # the table opens; whatever landed is whole
    assert max(Counter(ids).values()) == 1
    _finish(_reindex(settings, s3), s3)
    assert _stored_ids(settings) == _plan_ids(settings)

    # The kill between the delete and the add of one file's diff (a changed line of a day).
    write_facts(settings, DAYS[2], *_lines(DAYS[2], 20))
    _finish(_reindex(settings, s3), s3)
    log = settings.archive_dir / f"{DAYS[2].isoformat()}.md"
    log.write_text(log.read_text().replace("plan number 3 ", "plan number 303 "))  # an edit: delete + add
    killed = _reindex(settings, s3, MEMORY_FAILPOINTS="index.deleted=kill")
    killed.communicate(timeout=300)
    assert killed.returncode == -signal.SIGKILL
    _finish(_reindex(settings, s3), s3)
    ids = _stored_ids(settings)
    assert ids == _plan_ids(settings) and max(Counter(ids).values()) == 1
