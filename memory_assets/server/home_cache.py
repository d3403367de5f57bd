"""``HomeCache``: the open homes of the memory service, a bounded cache.

It keeps at most ``max_homes`` users' homes open (their settings, LanceDB handles and
extractor: ``core/ops/group_write.GroupWriter``), the least recently used closed first; a home in use by a request is never closed
under it, nor one whose write lane holds writes (the bound is exceeded instead, until they end).
Every home shares the one embedder of the process. A home is opened by a read only if it exists
(``UnknownUserError`` otherwise) and created by a write (``open_user_home``).

Each open home (``UserHome``) has two sides, each with its own ``MemoryStore`` (a store is not
shared between threads that both write): ``reader`` serves search, listing and status, one call
at a time per user; ``writer`` belongs to the user's write lane (``lane.py``), which tells the
root's change feed of every write.

Deleting a user (``HomeCache.closed_for``): the user's requests are refused from then on
(``UserBeingDeleted``), the requests in flight finish, the lane is drained and closed (its
pending rows written, its timers and retries cancelled, so nothing of it writes afterwards), and
the home leaves the cache; the deletion runs inside, and once it ends a read of the user finds no
home and a write makes a new one.
"""

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_assets.core.home import Home, HomeEmbedder
from memory_assets.core.ops.group_write import GroupWriter
from memory_assets.core.ops.root_feed import note_change
from memory_assets.core.ops.users import open_user_home
from memory_assets.core.settings import Settings
from memory_assets.core.write_path.process import TurnResult
from memory_assets.server.idempotency import Records
from memory_assets.server.lane import Run, WriteLane


class UserBeingDeleted(RuntimeError):
    """A request for a user whose deletion is running; nothing was done."""


@dataclass
class UserHome:
    """One user's open home: its two sides and its lane."""

    user_id: str
    reader: Home
    writer: Home
    lane: WriteLane
    read_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    in_use: int = 0


class HomeCache:
    def __init__(
        self,
        root: Path,
        embedder: HomeEmbedder,
        run: Run,
        max_homes: int,
        batch_turns: int,
        records: Callable[[Settings], Records] | None = None,
        answer: Callable[[TurnResult, Settings], dict[str, Any]] | None = None,
    ):
        self.root = root
        self.embedder = embedder
        self.run = run
        self.max_homes = max(1, max_homes)
        self.batch_turns = batch_turns
        self.records = records  # a home's Idempotency-Key records, from its settings
        self.answer = answer  # a turn's result as the face answers it
        self._homes: OrderedDict[str, UserHome] = OrderedDict()
        self._opening: dict[str, asyncio.Lock] = {}  # one opening at a time per user
        self._closed: set[str] = set()  # users being deleted: every request refused
        self.opened = 0  # homes opened since start
        self.closed = 0  # homes closed to keep the bound

    def __len__(self) -> int:
        return len(self._homes)

    def __contains__(self, user_id: str) -> bool:
        return user_id in self._homes

    @contextlib.asynccontextmanager
    async def use(self, user_id: str, *, create: bool) -> AsyncIterator[UserHome]:
        """The user's open home for the time of one request (opened, or created by a write)."""
        home = await self._get(user_id, create)
        home.in_use += 1
        try:
            yield home
        finally:
            home.in_use -= 1
            self._evict()

    async def _get(self, user_id: str, create: bool) -> UserHome:
        """The open home, or open it: one opening per user at a time (a read and a first write
        arriving together open it once, and a home is initialised once)."""
        lock = self._opening.setdefault(user_id, asyncio.Lock())
        try:
            async with lock:
                if user_id in self._closed:
                    raise UserBeingDeleted(user_id)
                home = self._homes.get(user_id)
                if home is None:
                    home = await self._open(user_id, create)
                elif create and not home.writer.settings.archive_dir.is_dir():  # removed behind our back
                    await self.run(lambda: open_user_home(self.root, user_id, create=True))
                else:
                    self._homes.move_to_end(user_id)
                return home
        finally:
            if not lock.locked():
                self._opening.pop(user_id, None)

    async def _open(self, user_id: str, create: bool) -> UserHome:
        def open_home() -> tuple[Home, GroupWriter]:
            reader = open_user_home(self.root, user_id, create=create, embedder=self.embedder)
            return reader, GroupWriter(Home(reader.settings, self.embedder))

        reader, writes = await self.run(open_home)
        writer = writes.home
        read_lock = asyncio.Lock()
        shape = self.answer
        lane = WriteLane(
            writes,
            self.run,
            self.batch_turns,
            lambda what: note_change(self.root, user_id, what),
            read_gate=read_lock,
            records=self.records(writer.settings) if self.records is not None else None,
            answer=(lambda result: shape(result, writer.settings))
            if shape is not None
            else TurnResult.summary,
        )
        home = UserHome(user_id, reader, writer, lane, read_lock)
        self._homes[user_id] = home
        self.opened += 1
        self._evict()
        return home

    @contextlib.asynccontextmanager
    async def closed_for(self, user_id: str, wait_s: float = 60.0) -> AsyncIterator[None]:
        """The user's home closed for the block (see the module docstring): new requests refused
        (``UserBeingDeleted``), those in flight waited for (at most ``wait_s``, else
        ``TimeoutError`` and the home stays open), the lane drained and closed, the home out of
        the cache."""
        lock = self._opening.setdefault(user_id, asyncio.Lock())
        try:
            async with lock:  # no opening of the user half done: one waiting for this sees it closed
                if user_id in self._closed:
                    raise UserBeingDeleted(user_id)
                self._closed.add(user_id)
        finally:
            if not lock.locked():
                self._opening.pop(user_id, None)
        try:
            home = self._homes.get(user_id)
            if home is not None:
                await asyncio.wait_for(self._drain(home), wait_s)
                home.lane.close()
                self._homes.pop(user_id, None)
            yield
        finally:
            self._closed.discard(user_id)

    @staticmethod
    async def _drain(home: UserHome) -> None:
        """Until no request uses the home and its lane holds nothing (its turns' rows written)."""
        while home.in_use or home.lane.busy or home.read_lock.locked():
            await home.lane.turns_indexed()  # the rows of its acknowledged turns: written now
            await asyncio.sleep(0.02)

    async def flush(self) -> None:
        """Write the rows of every open home's acknowledged turns still pending (the server's stop:
        a turn's rows are otherwise written a moment after its answer, see ``WriteLane``)."""
        for home in list(self._homes.values()):
            await home.lane.turns_indexed()

    def _evict(self) -> None:
        """Close the least recently used homes past the bound, skipping any in use or writing."""
        if len(self._homes) <= self.max_homes:
            return
        for user_id in list(self._homes):
            if len(self._homes) <= self.max_homes:
                break
            home = self._homes[user_id]
            if home.in_use == 0 and not home.lane.busy and not home.read_lock.locked():
                del self._homes[user_id]  # its LanceDB handles close with their last reference
                self.closed += 1
