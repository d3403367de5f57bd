"""The write lanes, in process with real homes and the real model (through the cache of open
homes): a user's turns that queue meanwhile are written as one group, in order; a job runs alone;
a caller that goes away does not stop its write; the table kept within bounds and its old versions
pruned; a turn's transcript rows written after its answer."""

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import pytest

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.models.batching import BatchingEmbedder
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.group_write import Pending
from memory_assets.core.ops.users import user_settings
from memory_assets.core.write_path.extraction import ExtractedFact, GivenFacts, Turn
from memory_assets.server.home_cache import HomeCache

T = TypeVar("T")
FACT_ROWS = "source_type = 'archive_log'"


async def run(fn: Callable[[], T]) -> T:
    return await anyio.to_thread.run_sync(fn)


def cache(root: Path, embedder: Embedder, max_homes: int = 8) -> HomeCache:
    return HomeCache(root, BatchingEmbedder(embedder), run, max_homes=max_homes, batch_turns=16)


def facts(root: Path, user: str) -> list[str]:
    archive = user_settings(root, user).archive_dir
    return [f.content for p in sorted(archive.glob("*.md")) for f in read_daily_log(p).facts]


def said(text: str) -> Pending:
    return Pending(Turn(text, chat_id="lane"), GivenFacts([ExtractedFact(text, "personal")]))


def test_turns_queued_meanwhile_are_one_group_in_order(tmp_path: Path, embedder: Embedder) -> None:
    homes = cache(tmp_path, embedder)
    texts = [f"Plays the oboe in ensemble number {i}" for i in range(6)]

    async def scenario() -> list[Any]:
        async with homes.use("ann", create=True) as home:
            return await asyncio.gather(*(home.lane.turn(said(t)) for t in texts))

    results = asyncio.run(scenario())
    assert [r.facts[0].content for r in results] == texts
    assert facts(tmp_path, "ann") == texts  # in arrival order, each once
    lane = homes._homes["ann"].lane
    assert lane.groups < len(texts)  # the first alone, the rest (queued meanwhile) together
    assert all(r.reindex_error is None for r in results) and results[-1].rows_embedded >= 1


def test_a_job_runs_alone_after_the_writes_before_it(tmp_path: Path, embedder: Embedder) -> None:
    homes = cache(tmp_path, embedder)

    async def scenario() -> list[Any]:
        async with homes.use("ben", create=True) as home:
            first = home.lane.turn(said("Bakes sourdough every Saturday morning"))
            seen = home.lane.job(lambda: facts(tmp_path, "ben"))
            later = home.lane.turn(said("Runs along the canal on Thursdays"))
            return await asyncio.gather(first, seen, later)

    _, seen_by_job, _ = asyncio.run(scenario())
    assert seen_by_job == ["Bakes sourdough every Saturday morning"]
    assert facts(tmp_path, "ben") == [
        "Bakes sourdough every Saturday morning",
        "Runs along the canal on Thursdays",
    ]


def test_a_caller_that_goes_away_does_not_stop_its_write(tmp_path: Path, embedder: Embedder) -> None:
    homes = cache(tmp_path, embedder)

    async def scenario() -> None:
        async with homes.use("cid", create=True) as home:
            # The lane is held by a job until the caller has gone, so the turn is surely still
            # unwritten when it is cancelled (a bare sleep raced a turn written in under 50 ms).
            release = threading.Event()
            holding = asyncio.ensure_future(home.lane.job(lambda: release.wait(30)))
            task = asyncio.ensure_future(home.lane.turn(said("Keeps a logbook of every hike")))
            await asyncio.sleep(0.05)
            assert facts(tmp_path, "cid") == []
            task.cancel()
            await asyncio.sleep(0)
            release.set()
            assert await holding is True
            with pytest.raises(asyncio.CancelledError):
                await task
            while home.lane.busy:
                await asyncio.sleep(0.05)

    asyncio.run(scenario())
    assert facts(tmp_path, "cid") == ["Keeps a logbook of every hike"]


@pytest.mark.slow
def test_a_day_whose_reindex_failed_is_retried_in_the_background(tmp_path: Path, embedder: Embedder) -> None:
    import threading

    from memory_assets.core.durable import named_lock
    from memory_assets.core.index.store import MemoryStore

    homes = cache(tmp_path, embedder)
    held, release = threading.Event(), threading.Event()

    async def scenario() -> Any:
        async with homes.use("dee", create=True) as home:
            await home.lane.turn(said("Sings in a choir on Wednesdays"))  # the table exists now
            settings = home.writer.settings
            day_key = f"index-key:{settings.index_uri}|{settings.table_name}|archive:"

            def hold() -> None:  # another writer holds the day's index key past the write path's wait
                log = sorted(settings.archive_dir.glob("*.md"))[-1].name
                with named_lock(day_key + log):
                    held.set()
                    release.wait(30)

            threading.Thread(target=hold, daemon=True).start()
            held.wait(10)
            result = await home.lane.turn(said("Sings bass in the choir since 2019"))
            release.set()
            assert result.reindex_error is not None and "LockTimeout" in result.reindex_error
            assert MemoryStore.of(settings).count(FACT_ROWS) == 1  # the second fact is not indexed
            for _ in range(100):  # the retry comes 5 s later
                if MemoryStore.of(settings).count(FACT_ROWS) == 2:
                    return result
                await asyncio.sleep(0.2)
            return result

    asyncio.run(scenario())
    # The facts' rows only: the turns' own rows are written by another job, whatever the day's lock.
    assert MemoryStore.of(user_settings(tmp_path, "dee")).count(FACT_ROWS) == 2


def test_the_lane_keeps_the_table_within_bounds(tmp_path: Path, embedder: Embedder) -> None:
    from memory_assets.core.index.maintenance import FRAGMENTS_SOFT
    from memory_assets.core.index.store import MemoryStore

    homes = cache(tmp_path, embedder)

    async def scenario() -> int:
        async with homes.use("eli", create=True) as home:
            for i in range(FRAGMENTS_SOFT + 4):  # one group each: a fragment or more each
                await home.lane.turn(said(f"Logged a run of {i} kilometres along the river"))
            while home.lane.busy:
                await asyncio.sleep(0.05)
            return home.lane.optimized

    optimized = asyncio.run(scenario())
    stats = MemoryStore.of(user_settings(tmp_path, "eli")).stats()
    # Each turn is one fact row and one turn row (the recall tier keeps what was said).
    assert optimized >= 1 and stats.fragments <= FRAGMENTS_SOFT and stats.rows == 2 * (FRAGMENTS_SOFT + 4)


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _compacted_bytes(index_dir: Path, table_name: str, into: Path) -> int:
    """A copy of the index optimized keeping only its latest version: the home compacted."""
    import shutil
    import warnings
    from datetime import timedelta

    import lancedb

    shutil.copytree(index_dir, into)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        lancedb.connect(str(into)).open_table(table_name).optimize(cleanup_older_than=timedelta(0))
    return _bytes(into)


async def _until(done: Callable[[], bool], what: str) -> None:
    for _ in range(600):
        if done():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def test_the_lane_prunes_the_versions_its_optimize_left(tmp_path: Path, embedder: Embedder) -> None:
    """Each optimize compacts by rewriting the new rows and the indexes; the versions before it hold
    the old files. Pruned right after (no read in flight), the index stays within 2x of the home
    compacted (a day's versions kept: 6x and more, benchmarks/paced_day.py)."""
    from memory_assets.core.index.maintenance import FRAGMENTS_SOFT

    homes = cache(tmp_path, embedder)

    async def scenario() -> tuple[int, int]:
        async with homes.use("fay", create=True) as home:
            for i in range(2 * FRAGMENTS_SOFT + 4):
                await home.lane.turn(said(f"Planted row {i} of tomatoes by the shed"))
                await home.lane.turns_indexed()  # each turn's rows too: a commit each, as served
            while home.lane.busy:
                await asyncio.sleep(0.05)
            return home.lane.optimized, home.lane.pruned

    optimized, pruned = asyncio.run(scenario())
    settings = user_settings(tmp_path, "fay")
    index_dir = Path(settings.index_uri)
    as_left = _bytes(index_dir)
    compacted = _compacted_bytes(index_dir, settings.table_name, tmp_path / "compacted")
    assert optimized >= 2 and pruned == optimized
    assert as_left <= 2 * compacted, (as_left, compacted)


def test_a_prune_keeps_what_a_read_in_flight_may_be_on_until_the_retention_passed(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read elsewhere holds the table's reads past the prune's wait: the prune keeps the versions
    replaced within the retention (``MEMORY_LANE_VERSION_RETENTION_S``), and the lane prunes again
    once it has passed, whether or not another turn comes: the index is back within 2x."""
    from memory_assets.core.index import table_reads

    monkeypatch.setenv("MEMORY_LANE_VERSION_RETENTION_S", "3")
    homes = cache(tmp_path, embedder)
    settings = user_settings(tmp_path, "hal")
    index_dir = Path(settings.index_uri)
    reading, done = threading.Event(), threading.Event()

    def a_long_read() -> None:  # another thread: its own lock, as another process's
        with table_reads.reading(settings.index_uri, settings.table_name):
            reading.set()
            done.wait(30)

    async def scenario() -> tuple[bool, int]:
        async with homes.use("hal", create=True) as home:
            lane = home.lane
            for i in range(4):
                await lane.turn(said(f"Sowed carrots in bed {i}"))
                await lane.turns_indexed()
            while lane.busy or lane._optimizing:
                await asyncio.sleep(0.05)
            reader = threading.Thread(target=a_long_read)
            reader.start()
            await anyio.to_thread.run_sync(reading.wait)
            for i in range(2):  # new versions, then the optimize that replaces them
                await lane.turn(said(f"Sowed leeks in bed {i}"))
                await lane.turns_indexed()
            _optimize_now(lane)
            await _until(lambda: lane._prune_timer is not None and not lane._optimizing, "a prune that held")
            held, kept = lane._pruned_held, _bytes(index_dir)
            done.set()
            reader.join()
            await _until(
                lambda: lane._prune_timer is None and not lane._optimizing and not lane._pruned_held,
                "the prune once the retention passed",
            )
            while lane.busy:
                await asyncio.sleep(0.05)
            return held, kept

    held, kept = asyncio.run(scenario())
    as_left = _bytes(index_dir)
    compacted = _compacted_bytes(index_dir, settings.table_name, tmp_path / "compacted")
    assert held
    assert as_left < kept and as_left <= 2 * compacted, (as_left, kept, compacted)


def _optimize_now(lane: Any) -> None:
    """The lane's optimize (and its prune) queued, as after a group that found the table due."""
    lane._queue_optimize()
    if lane._task is None:
        lane._task = asyncio.get_running_loop().create_task(lane._drain())


def test_the_prune_waits_for_the_homes_reads_and_skips_a_home_its_upkeep_holds(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The prune removes the versions a read may be on: it runs with the home's reads held off
    (the read gate a read holds), and not while a Dagster run holds the home's exclusion."""
    from memory_assets.core.ops.upkeep.exclusion import exclusive

    homes = cache(tmp_path, embedder)
    settings = user_settings(tmp_path, "gus")

    async def scenario() -> None:
        async with homes.use("gus", create=True) as home:
            lane = home.lane
            await lane.turn(said("Keeps bees on the allotment"))
            # The turn's row written first: its indexing job, if it came after the prune, would
            # find the table due again and optimize and prune a second time.
            await lane.turns_indexed()
            async with home.read_lock:  # a read in flight
                _optimize_now(lane)
                await _until(lambda: lane.optimized == 1, "the optimize ran")
                await asyncio.sleep(0.5)
                assert lane.pruned == 0 and lane._optimizing  # the prune waits for the read
            await _until(lambda: not lane._optimizing, "the prune ran after the read")
            assert lane.pruned == 1
            with exclusive(settings, "a test's upkeep", timeout=0):
                _optimize_now(lane)
                await _until(lambda: lane.optimized == 2 and not lane._optimizing, "the second optimize")
            assert lane.pruned == 1  # skipped: the home's upkeep held it

    asyncio.run(scenario())


def test_every_write_of_a_lane_is_noted_in_the_roots_change_feed(tmp_path: Path, embedder: Embedder) -> None:
    """So a Dagster sensor over the root looks at exactly the homes the server wrote to: the turn,
    its transcript's rows (written by a job of the lane after the acknowledgement: here, ahead of
    the job asked for), the job."""
    from memory_assets.core.ops.root_feed import read_changes

    homes = cache(tmp_path, embedder)

    async def scenario() -> None:
        async with homes.use("fay", create=True) as home:
            await home.lane.turn(said("Grows tomatoes on the balcony"))
            await home.lane.job(lambda: None)

    asyncio.run(scenario())
    changes, _ = read_changes(tmp_path, ("", 0))
    assert [(c.user, c.what) for c in changes] == [("fay", "turns"), ("fay", "turns"), ("fay", "job")]


def test_a_turns_transcript_rows_are_written_after_the_answer_and_reads_wait_for_them(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The acknowledgement comes once the turn is kept (fsync'd) and its facts are indexed; its
    transcript's rows are written by a job of the lane after it, and ``turns_indexed`` (what every
    read awaits) returns only once they are in the table."""
    from memory_assets.core.write_path.rule_extractor import RuleExtractor

    homes = cache(tmp_path, embedder)

    async def scenario() -> tuple[Any, int, int, bool]:
        async with homes.use("gus", create=True) as home:
            result = await home.lane.turn(
                Pending(Turn("Could you suggest a pasta recipe?", chat_id="kitchen"), RuleExtractor())
            )
            pending = not home.lane._turns_indexed.is_set()  # the turn's rows are still to be written
            await home.lane.turns_indexed()
            turns = _transcript_rows(tmp_path, "gus")
            return result, turns, home.lane.groups, pending

    result, turns, groups, pending = asyncio.run(scenario())
    assert result.facts == [] and result.transcript == "captured/kitchen.jsonl"
    assert result.turn_rows_embedded == 0 and result.reindex_error is None  # not in the answer's write
    assert pending and groups == 1 and turns == 1
    kept = (user_settings(tmp_path, "gus").transcripts_dir / "captured" / "kitchen.jsonl").read_text()
    assert "Could you suggest a pasta recipe?" in kept


def _transcript_rows(root: Path, user: str) -> int:
    from memory_assets.core.index.store import MemoryStore

    return MemoryStore.of(user_settings(root, user)).count("source_type = 'transcript'")


def test_a_turn_sent_right_after_an_answer_does_not_wait_for_the_previous_turns_rows(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Back to back, a user's next turn is written first; the pending rows of both turns are then
    one job, which a read starts at once. (The idle wait is made long here, so "not yet written"
    cannot be a matter of timing.)"""
    from memory_assets.core.ops.root_feed import read_changes
    from memory_assets.server import lane as lanes

    monkeypatch.setattr(lanes, "INDEX_TURNS_IDLE_S", 60.0)
    monkeypatch.setattr(lanes, "INDEX_TURNS_MAX_WAIT_S", 120.0)
    homes = cache(tmp_path, embedder)

    async def scenario() -> tuple[int, bool, int]:
        async with homes.use("hal", create=True) as home:
            await home.lane.turn(said("Repairs old radios in the garage"))
            await home.lane.turn(said("Collects valve amplifiers from the fifties"))
            before, busy = _transcript_rows(tmp_path, "hal"), home.lane.busy
            await home.lane.turns_indexed()
            return before, busy, _transcript_rows(tmp_path, "hal")

    before, busy, after = asyncio.run(scenario())
    assert before == 0 and busy  # both answered; their rows pending, and the home counts as busy
    assert after == 2
    changes, _ = read_changes(tmp_path, ("", 0))
    assert [c.what for c in changes] == ["turns", "turns", "turns"]  # two turns, one job for their rows


@pytest.mark.parametrize("idle, most", [(0.05, 120.0), (60.0, 0.3)], ids=["idle", "at-most"])
def test_pending_rows_are_written_without_any_read(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch, idle: float, most: float
) -> None:
    """Once the lane has been idle long enough, or at the latest the longest wait after the first
    pending turn, the rows are written with nothing asking for them."""
    from memory_assets.server import lane as lanes

    monkeypatch.setattr(lanes, "INDEX_TURNS_IDLE_S", idle)
    monkeypatch.setattr(lanes, "INDEX_TURNS_MAX_WAIT_S", most)
    homes = cache(tmp_path, embedder)

    async def scenario() -> int:
        async with homes.use("ida", create=True) as home:
            await home.lane.turn(said("Swims in the lake before work"))
            for _ in range(600):  # 30 s at most; no read, no job
                if not home.lane.busy:
                    break
                await asyncio.sleep(0.05)
            return _transcript_rows(tmp_path, "ida")

    assert asyncio.run(scenario()) == 1


def test_a_job_and_the_stop_write_the_pending_rows_first_and_the_cache_keeps_their_home(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any other job (a forget, a sweep) sees the rows of the turns answered before it; the cache
    never closes a home whose rows are pending; ``flush`` (the server's stop) writes them."""
    from memory_assets.server import lane as lanes

    monkeypatch.setattr(lanes, "INDEX_TURNS_IDLE_S", 60.0)
    monkeypatch.setattr(lanes, "INDEX_TURNS_MAX_WAIT_S", 120.0)
    homes = cache(tmp_path, embedder, max_homes=1)

    async def scenario() -> tuple[int, bool, int]:
        async with homes.use("jo", create=True) as home:
            await home.lane.turn(said("Keeps bees on the allotment"))
            seen = await home.lane.job(lambda: _transcript_rows(tmp_path, "jo"))
            await home.lane.turn(said("Sells the honey at the Sunday market"))
        async with homes.use("kim", create=True):
            pass
        kept = "jo" in homes  # over the bound, but its second turn's row is pending
        await homes.flush()
        return seen, kept, _transcript_rows(tmp_path, "jo")

    seen, kept, rows = asyncio.run(scenario())
    assert seen == 1 and kept and rows == 2
