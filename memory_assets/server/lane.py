"""``WriteLane``: one user's writes, one group at a time, in arrival order.

Turns (and memories, which are turns with their fact given) that queue while a group is being
written go together as the next group (``core/ops/group_write.GroupWriter``: each appended durably
in order, each day reindexed once), up to ``batch_turns``; any other write (forget, unforget, the start-up catch-up)
runs alone. The core's locks still guard every file and index key, so the lane orders this
process's writes while the CLI, the Dagster sensors and backfills write beside it safely.
Different users' lanes run in parallel. A caller that goes away does not stop its write: a write
that started finishes.

The lane also keeps its home's table within bounds, as the Dagster optimize sensor would: after a
group, when the maintenance clock (``core/ops/upkeep/served_table.py``: too many fragments or
versions, a day since the last optimize with changes, or the table directory grown past its size
after the last optimize and prune) says so, an optimize runs as the lane's next job. After a group of turns
that question is asked by the job that writes their transcripts' rows, after the answers: it lists
the table's versions, and is no part of acknowledging a turn. The optimize is followed by a prune
of the versions it replaced, once no read of the table is in flight in any process (``_prune``,
design §8.6).

A turn's transcript rows are written after its acknowledgement, not before it: the turn is kept
(fsync'd) and its facts appended and indexed before the answer, as ever, and then a job of the
lane indexes the transcripts of the turns it acknowledged (``process_turns(index_transcripts=
False)``: embedding every message in the answer's path would make an acknowledgement several
times slower, docs/benchmarks.md). That job waits until the lane has had no turn for
``INDEX_TURNS_IDLE_S``, so a user's next turn, posted right after the answer, is written first
instead of waiting behind it; it waits ``INDEX_TURNS_MAX_WAIT_S`` at most after the first turn it
holds, and then writes every pending turn's rows in one model call. Anything that needs the rows
runs it at once, ahead of itself: a read (``turns_indexed``), any other job (forget, unforget, a
sweep: the order a transcript's rows and a forget are written in stays the order they were asked
in), the server's stop (``HomeCache.flush``). A lane with turns not yet indexed counts as busy, so
the cache never closes its home before their rows are written. A search after a write still finds
its turn; a crash before the job leaves the turn in its transcript for the start-up catch-up.

A turn sent with an ``Idempotency-Key`` (``idempotency.py``) goes through the lane like any
other: if its key has a record, it is answered from it and not written; else its record is
written with it, as part of the turn's write; a turn whose key is in flight waits for it.

A day whose reindex failed after its turns were appended (its locks held by another writer past
the write path's wait, say) has its facts in the log but not yet in the index; the lane retries
that day's reindex in the background (``core/backoff.LANE_REINDEX_RETRY``), as the Dagster sensor
would (design §8.6).

A lane closed by its user's deletion (``close``) writes nothing more: its timers and retries are
cancelled and a write asked of it is ``LaneClosed``.
"""

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from memory_assets.core.backoff import LANE_REINDEX_RETRY
from memory_assets.core.home import Home
from memory_assets.core.ops.group_write import GroupWriter, Pending
from memory_assets.core.ops.upkeep.served_table import ServedTable
from memory_assets.core.sources import IndexKey
from memory_assets.core.write_path.process import REINDEX_LOCK_WAIT_S, TurnResult
from memory_assets.server.idempotency import Keyed, KeyReused, Records, Replay

T = TypeVar("T")
# The turns' rows are written once the lane has had no turn for this long (a user's next turn, sent
# right after the answer, comes well within it; one every second leaves the job most of it) ...
INDEX_TURNS_IDLE_S = 0.25
# ... and at most this long after the first acknowledged turn they hold (a user posting without a
# pause gets them in one model call every few seconds; a read never waits for this).
INDEX_TURNS_MAX_WAIT_S = 5.0
log = logging.getLogger("memory_assets.server")
Run = Callable[[Callable[[], Any]], Awaitable[Any]]  # runs a function on a worker thread


class LaneClosed(RuntimeError):
    """A write for a lane closed by its user's deletion; nothing was done."""


@dataclass
class _Write:
    future: asyncio.Future[Any]
    turn: tuple[Pending, Keyed | None] | None = None
    job: Callable[[], Any] | None = None
    what: str = "job"  # what the root's change feed is told the job wrote
    gated: bool = False  # runs with the home's reads held off (the lane's read gate)
    prune: bool = False  # a prune (``_prune``): another follows when it had to keep versions


class WriteLane:
    """One user's writes (see the module docstring)."""

    def __init__(
        self,
        writer: GroupWriter,
        run: Run,
        batch_turns: int,
        note: Callable[[str], None] | None = None,
        read_gate: asyncio.Lock | None = None,
        records: Records | None = None,
        answer: Callable[[TurnResult], dict[str, Any]] = TurnResult.summary,
    ) -> None:
        self.writer = writer  # the home's writes in groups, with its extractor
        self.home: Home = writer.home
        self.run = run
        # The home's Idempotency-Key records (``idempotency.py``), and the answer a face gives for
        # a turn's result (what a record holds, so a retry gets exactly the first answer).
        self.records = records
        self.answer = answer
        self._keyed: dict[str, asyncio.Future[Any]] = {}  # keys of turns in flight
        # Held by every read of this home (``Service._read``); the prune after an optimize takes it.
        self.read_gate = read_gate or asyncio.Lock()
        # Tells the root's change feed that this home changed (core/ops/root_feed.py), on the
        # worker thread after each write, so a Dagster sensor over the root looks at it again.
        self.note = note
        self.batch_turns = max(1, batch_turns)
        self._queue: deque[_Write] = deque()
        self._task: asyncio.Task[None] | None = None
        self._retries: set[asyncio.Task[None]] = set()
        # The table's maintenance: its clock counts the lane's start as an optimize (as a first look does).
        self.table = ServedTable(self.home)
        self._optimizing = False
        # the prune once the retention has passed, after a prune that kept versions for reads
        self._prune_timer: asyncio.TimerHandle | None = None
        self._pruned_held = False  # the last prune kept versions for reads in flight
        self.groups = 0  # groups of turns written (one process_turns call each)
        self.optimized = 0  # optimizes the lane ran
        self.pruned = 0  # prunes after them that removed the old versions
        # Transcripts holding acknowledged turns whose rows are not written yet, and the job that
        # writes them (queued at most once); set when none is left: what reads wait for.
        self._unindexed: set[str] = set()
        self._indexing_queued = False
        self._index_timer: asyncio.TimerHandle | None = None  # the job's start, while it waits
        self._unindexed_since = 0.0  # when the first turn of ``_unindexed`` was acknowledged
        self._failed_turn_keys: list[str] = []
        self._due_after_index = False  # the table is due an optimize, as the job writing them found
        self._turns_indexed = asyncio.Event()
        self._turns_indexed.set()
        self.closed = False

    def close(self) -> None:
        """No write after this: the background retries and the pending rows' timer are cancelled,
        and a write asked for later is ``LaneClosed`` (the user's deletion; ``HomeCache.closed_for``)."""
        self.closed = True
        for task in list(self._retries):
            task.cancel()
        if self._index_timer is not None:
            self._index_timer.cancel()
            self._index_timer = None

    @property
    def busy(self) -> bool:
        """Writing, or holding writes: queued ones, or acknowledged turns whose rows are pending."""
        return self._task is not None or bool(self._queue) or bool(self._unindexed)

    async def turn(self, turn: Pending, keyed: Keyed | None = None) -> TurnResult | Replay:
        """Write ``turn``: its result, or, for a key already answered, the first answer
        (``Replay``). A turn whose key is in flight waits for it first, then is answered as a
        retry (or written, when the first failed)."""
        if keyed is None:
            result: TurnResult = await self._submit(_Write(self._future(), turn=(turn, None)))
            return result
        while (first := self._keyed.get(keyed.key_id)) is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(first)
        write = _Write(self._future(), turn=(turn, keyed))
        self._keyed[keyed.key_id] = write.future
        write.future.add_done_callback(lambda _: self._keyed.pop(keyed.key_id, None))
        answered: TurnResult | Replay = await self._submit(write)
        return answered

    async def turns_indexed(self) -> None:
        """Wait until the transcript rows of every turn acknowledged so far are written (or their
        write failed: the retries, the next start's catch-up or a sensor write them then). A
        pending job writing them starts now."""
        self._queue_index_job()
        await self._turns_indexed.wait()

    async def job(self, fn: Callable[[], T]) -> T:
        self._queue_index_job()  # the rows of the turns acknowledged before this job go first
        result: T = await self._submit(_Write(self._future(), job=fn))
        return result

    @staticmethod
    def _future() -> asyncio.Future[Any]:
        future = asyncio.get_running_loop().create_future()
        # A caller that went away never reads its write's error: read here, so none is "never retrieved".
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        return future

    async def _submit(self, write: _Write) -> Any:
        self._enqueue(write)
        # The write goes on if the caller goes away (shield): it is durable or it failed, never torn.
        return await asyncio.shield(write.future)

    def _enqueue(self, write: _Write) -> None:
        """``write`` at the end of the queue, the drain started if it is not running."""
        if self.closed:
            raise LaneClosed(f"{self.home.settings.home.name}: the user is being deleted")
        self._queue.append(write)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self._queue:
                if self._queue[0].turn is None:
                    write = self._queue.popleft()
                    assert write.job is not None
                    try:
                        job = write.job
                        async with self.read_gate if write.gated else contextlib.nullcontext():
                            _settle(write, await self.run(lambda job=job, w=write.what: self._noted(job, w)))
                    except Exception as exc:
                        _settle(write, exc)
                    if write.prune and self._pruned_held:  # reads were in flight: what they may be
                        self._prune_later()  # on goes once the retention has passed
                    self._after_job()
                    continue
                group: list[_Write] = []
                while self._queue and self._queue[0].turn is not None and len(group) < self.batch_turns:
                    group.append(self._queue.popleft())
                turns = [w.turn for w in group if w.turn is not None]
                due = False
                try:
                    results, due = await self.run(
                        lambda turns=turns: self._noted(lambda: self._write(turns), "turns")
                    )
                except Exception as exc:
                    results = [exc] * len(group)
                self.groups += 1
                for write, result in zip(group, results, strict=True):
                    _settle(write, result)
                self._retry_failed_days(results)
                self._index_turns_next(results)
                if due:
                    self._queue_optimize()
        finally:
            self._task = None

    def _queue_optimize(self) -> None:
        """The optimize as the lane's next job, after the writes already queued (once at a time),
        and the prune of the versions it replaced right after it (``_prune``)."""
        if not self._optimizing:
            self._optimizing = True
            self._queue.append(_Write(self._future(), job=self._optimize))
            self._queue.append(_Write(self._future(), job=self._prune, gated=True, prune=True))

    def _prune_later(self) -> None:
        """A prune queued once the retention has passed since now (one at a time), after a prune
        that kept versions for the reads in flight: what they may be on leaves the disk then,
        whether or not another turn comes."""
        if self._prune_timer is not None:
            self._prune_timer.cancel()
        wait = self.table.prune_again_after()
        self._prune_timer = asyncio.get_running_loop().call_later(wait, self._queue_prune)

    def _queue_prune(self) -> None:
        self._prune_timer = None
        if not self._optimizing:
            self._optimizing = True
            self._enqueue(_Write(self._future(), job=self._prune, gated=True, prune=True))

    def _index_turns_next(self, results: list[Any]) -> None:
        """After a group's answers: its turns' transcripts are pending, to be indexed by a job of
        the lane once it has been idle for ``INDEX_TURNS_IDLE_S`` (or asked to: ``_queue_index_job``)."""
        keys = {
            str(IndexKey.for_transcript(result.transcript))
            for result in results
            if isinstance(result, TurnResult) and result.transcript
        }
        if not keys:
            return
        loop = asyncio.get_running_loop()
        if not self._unindexed:
            self._unindexed_since = loop.time()
        self._unindexed |= keys
        self._turns_indexed.clear()
        if self._indexing_queued:
            return  # the job is queued already (it reads ``_unindexed`` when it starts)
        if self._index_timer is not None:
            self._index_timer.cancel()
        wait = min(INDEX_TURNS_IDLE_S, self._unindexed_since + INDEX_TURNS_MAX_WAIT_S - loop.time())
        self._index_timer = loop.call_later(max(wait, 0.0), self._queue_index_job)

    def _queue_index_job(self) -> None:
        """The job writing the pending turns' rows, queued now (once; nothing when none is pending)."""
        if self._index_timer is not None:
            self._index_timer.cancel()
            self._index_timer = None
        if not self._unindexed or self._indexing_queued:
            return
        self._indexing_queued = True
        self._enqueue(_Write(self._future(), job=self._index_turns, what="turns"))

    def _index_turns(self) -> None:
        """The rows of the transcripts holding acknowledged turns, as one write (their new
        messages embedded in one model call). On the lane's worker thread, between its writes."""
        keys, self._unindexed, self._indexing_queued = sorted(self._unindexed), set(), False
        home = self.home
        indexer = home.indexer_with(home.write_path_embedder(), lock_timeout=REINDEX_LOCK_WAIT_S)
        try:
            indexer.reindex_keys(keys)
        except Exception as exc:
            self._failed_turn_keys = keys
            log.warning(
                f"{home.settings.home.name}: indexing the turns' transcripts failed ({type(exc).__name__})"
            )
        self._due_after_index = self._due()

    def _after_job(self) -> None:
        """After any job: retry the transcripts whose indexing failed; queue the optimize the table
        is due; tell the waiting reads."""
        self._retry_later(self._failed_turn_keys)
        self._failed_turn_keys = []
        if self._due_after_index:
            self._queue_optimize()
        self._due_after_index = False
        if not self._unindexed and not self._indexing_queued:
            self._turns_indexed.set()

    def _retry_failed_days(self, results: list[Any]) -> None:
        keys = {
            str(IndexKey.for_log(Path(result.log).name))
            for result in results
            if isinstance(result, TurnResult) and result.reindex_error and result.log
        }
        self._retry_later(keys)

    def _retry_later(self, keys: Iterable[str]) -> None:
        """Each file's reindex retried in the background (``_reindex_later``)."""
        for key in keys:
            task = asyncio.get_running_loop().create_task(self._reindex_later(key))
            self._retries.add(task)
            task.add_done_callback(self._retries.discard)

    async def _reindex_later(self, key: str) -> None:
        """Retry one file's reindex through the lane, a few times, then leave it to the next
        write of that day, the catch-up at the next start, or a sensor."""
        home = self.home
        for wait in LANE_REINDEX_RETRY.retries():
            await asyncio.sleep(wait)
            indexer = home.indexer_with(home.embedder, lock_timeout=REINDEX_LOCK_WAIT_S)
            try:
                await self.job(lambda indexer=indexer: indexer.reindex_key(key))
                return
            except Exception as exc:
                log.warning(
                    f"{home.settings.home.name}: reindexing {key} failed again ({type(exc).__name__})"
                )

    def _noted(self, fn: Callable[[], T], what: str) -> T:
        """``fn()``, then the home noted as changed (even when ``fn`` failed part way: a write may
        have landed). The feed is a hint: a failure to note is logged, never raised."""
        try:
            return fn()
        finally:
            if self.note is not None:
                try:
                    self.note(what)
                except OSError as exc:
                    log.warning(f"{self.home.settings.home.name}: the change feed was not written ({exc})")

    def _write(
        self, turns: list[tuple[Pending, Keyed | None]]
    ) -> tuple[list[TurnResult | Replay | Exception], bool]:
        """The group's results, and whether the table is due an optimize now. When its turns were
        kept in transcripts, the job that writes their rows then looks at the table
        (``_index_turns``): the look lists the table's versions, which is not the answer's work.

        A keyed turn whose key has a record is not written: its result is the recorded answer. A
        keyed turn that is written has its record written with it (``GroupWriter.write``'s
        ``on_written``: a turn whose record fails is taken back and refused), then rewritten with
        the whole answer after the reindex (best effort)."""
        results: list[TurnResult | Replay | Exception | None] = [None] * len(turns)
        todo: list[int] = []
        for i, (_, keyed) in enumerate(turns):
            if keyed is not None and self.records is not None:
                try:
                    found = self.records.find(keyed)
                except (KeyReused, OSError) as exc:
                    results[i] = exc
                    continue
                if found is not None:
                    results[i] = Replay(found)
                    continue
            todo.append(i)

        def commit(keyed: Keyed | None) -> Callable[[TurnResult], None] | None:
            records = self.records
            if keyed is None or records is None:
                return None
            return lambda result: records.write(keyed, self.answer(result))

        written = self.writer.write(
            [turns[i][0] for i in todo], on_written=[commit(turns[i][1]) for i in todo]
        )
        for i, result in zip(todo, written, strict=True):
            results[i] = result
            keyed = turns[i][1]
            if keyed is not None and self.records is not None and isinstance(result, TurnResult):
                with contextlib.suppress(OSError):  # the record of the append stands
                    self.records.write(keyed, self.answer(result))
        out = [r for r in results if r is not None]
        if any(isinstance(r, TurnResult) and r.transcript for r in out):
            return out, False
        return out, self._due()

    def _due(self) -> bool:
        """Whether the table is due an optimize (the maintenance clock's reasons, or its growth
        rule against the directory's size after the lane's last optimize and prune)."""
        try:
            return self.table.due()
        except Exception:  # the writes stand; maintenance waits for the next group
            return False

    def _optimize(self) -> None:
        """Fold new rows into the table's indexes, prune, compact (the core's optimize, under its
        exclusive table lock; the prune between as ``_prune`` does, when no upkeep holds the home)."""
        try:
            # The home's retention (a day): the versions it replaced are pruned by ``_prune``, next,
            # once no read is on them.
            self.table.optimize("the memory service (optimizing)")
            self.optimized += 1
        except Exception as exc:
            log.warning(f"{self.home.settings.home.name}: optimize failed ({type(exc).__name__}: {exc})")

    def _prune(self) -> None:
        """Right after the optimize, with this home's reads in the service held off (the job is
        gated) and its upkeep exclusion held (no Dagster run on this home is between steps): every
        version but the latest pruned, and the files only they held, once no read of the table in
        any process is in flight (``Indexer.prune_versions``: it waits for them, a moment, with new
        reads waiting). The optimize keeps the day's versions; each compaction rewrites the new
        rows and the indexes, and every version before it holds the old files, so without this
        prune a day of turns keeps many times the compacted table (docs/benchmarks.md). When
        reads were still in flight, the versions replaced within ``MEMORY_LANE_VERSION_RETENTION_S``
        stay, and the lane prunes again once it has passed (``_prune_later``). A home held by its
        upkeep is pruned after a later optimize."""
        self._pruned_held = False
        try:
            # pruned or not (a held home keeps its versions): the next growth is measured from here
            pruned = self.table.prune("the memory service (pruning versions)")
            if pruned is not None:
                self.pruned += pruned.done
                self._pruned_held = pruned.held
        except Exception as exc:
            log.warning(f"{self.home.settings.home.name}: prune failed ({type(exc).__name__}: {exc})")
        finally:
            self._optimizing = False


def _settle(write: _Write, result: Any) -> None:
    if write.future.done():  # cancelled: the caller went away after the write
        return
    if isinstance(result, BaseException):
        write.future.set_exception(result)
    else:
        write.future.set_result(result)
