"""The operations the REST routes and the MCP tools share, each a call into the core.

``MemoryService`` holds the process's one embedder (wrapped so concurrent requests share model
calls, ``core/ops/users.shared_embedder``), the cache of open homes and the worker threads. Every
call into the core (the model, LanceDB, the files) runs on a worker thread, never on the event
loop; at most ``workers`` run at once. Writes go through the user's write lane (``lane.py``); reads take
the user's reader, one at a time per user. Results are the core's own (``TurnResult.summary()``,
``Hit.to_dict()``, ``Memory.to_dict()`` with its ``Lineage.to_dict()``, ``home_status``), and the
core's errors become ``ApiError``s here, each with its status, code and fix.

A full disk is named as such: a write is refused with 507 ``disk_full`` when the disk holding
the root has less than ``min_free_bytes`` free (before anything is written), and any write that
fails for want of space (``durable.is_disk_full``) is a 507 too, with nothing of it kept
(``process_turns`` takes a failed turn's appends back). ``/ready`` is not ready under the same
threshold. An answer never carries an error of the server's internals: a turn's
``reindex_error``, ``recall.error`` and ``memory_md`` say what happened in words, and the log
has the rest.

The model loads once, in the background, at start (``warm``); ``/ready`` says when it has. The
start-up catch-up (``catch_up``) then sweeps every existing home through its lane, so an index
left behind by a crash (a turn appended, its day not yet reindexed) is brought in line with the
files before long, as the Dagster sensors would. Before it, a deletion of a user that was cut
short (a journal beside the homes) is finished.

Deleting a user (``delete_user``) closes the user's home in the cache and refuses the user's
requests (409 ``user_being_deleted``) while the core deletes the home and its traces at the root
(``core/ops/delete_user.py``); its log line names the receipt, never the user.
"""

import asyncio
import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from memory_assets.core.durable import LockTimeout, free_bytes, is_disk_full
from memory_assets.core.erase import EraseError
from memory_assets.core.index.store import LegacyTableError, VectorWidthMismatch
from memory_assets.core.models.embedder import EmbedderError
from memory_assets.core.ops.delete_user import delete_user, finish_deletions, plan, user_target
from memory_assets.core.ops.forget import Target, erase, forget, unforget
from memory_assets.core.ops.group_write import Pending
from memory_assets.core.ops.status import home_status
from memory_assets.core.ops.upkeep.one_home import look_now
from memory_assets.core.ops.users import (
    USER_ID_RULE,
    DeletionPending,
    UnknownUserError,
    UserIdError,
    list_users,
    shared_embedder,
    user_settings,
)
from memory_assets.core.reconcile import ReconcileError
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.listing import CursorError, get_memory, list_memories
from memory_assets.core.search.retrieval import EmptyIndexError
from memory_assets.core.settings import Settings, SettingsError
from memory_assets.core.write_path.process import DISK_FULL_REINDEX, TurnResult
from memory_assets.server.config import ServerConfig
from memory_assets.server.errors import ApiError
from memory_assets.server.home_cache import HomeCache, UserBeingDeleted, UserHome
from memory_assets.server.idempotency import Keyed, KeyReused, Records, Replay
from memory_assets.server.lane import LaneClosed

T = TypeVar("T")
log = logging.getLogger("memory_assets.server")
DELETER = "the memory service (deleting a user)"


class MemoryService:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.root = config.root
        self.embedder = shared_embedder(self.root)
        self.limiter = anyio.CapacityLimiter(config.workers)
        self.homes = HomeCache(
            self.root,
            self.embedder,
            self.run,
            config.max_homes,
            config.batch_turns,
            records=self.records,
            answer=answer_of,
        )
        self.model_loaded = False
        self.model_error: str | None = None
        self.catch_up_state: dict[str, Any] = {"done": 0, "of": None, "finished": not config.catch_up}
        self._background: set[asyncio.Task[None]] = set()

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on a worker thread (the event loop never waits on the model or LanceDB)."""
        return await anyio.to_thread.run_sync(fn, limiter=self.limiter)

    # -- the process --------------------------------------------------------------------------
    def start(self) -> None:
        """Load the model in the background, then catch up every home."""
        task = asyncio.get_running_loop().create_task(self._warm_then_catch_up())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def stop(self) -> None:
        try:
            await self.homes.flush()  # acknowledged turns' rows still pending are written now
        except Exception as exc:  # they are in their transcripts: the next start's catch-up writes them
            log.warning(f"writing the pending turns' rows at stop failed ({type(exc).__name__}: {exc})")
        for task in list(self._background):
            task.cancel()
        for task in list(self._background):
            with contextlib.suppress(BaseException):
                await task

    async def _warm_then_catch_up(self) -> None:
        start = time.perf_counter()
        try:
            await self.run(lambda: self.embedder.embed(["warm up the model"]))
            self.model_loaded = True
            log.info(
                f"embedding model {self.embedder.model_name} loaded in {time.perf_counter() - start:.1f} s"
            )
        except Exception as exc:  # reads fall back to full text; writes still append
            self.model_error = f"{type(exc).__name__}: {exc}"
            log.error(f"embedding model failed to load: {self.model_error}")
        if self.config.catch_up:
            await self.catch_up()

    async def catch_up(self) -> None:
        """Finish the deletions cut short, then sweep every existing home's index through its lane
        (see the module docstring)."""
        try:
            finished = await self.run(lambda: finish_deletions(self.root, holder=DELETER))
            for receipt in finished:
                log.info(f"finished a user's deletion cut short (receipt {receipt['receipt']})")
        except Exception as exc:  # each is finished by its next DELETE too
            log.error(f"finishing the deletions cut short failed: {type(exc).__name__}")
        users = await self.run(lambda: list_users(self.root))
        self.catch_up_state.update({"done": 0, "of": len(users), "finished": False, "errors": 0})
        for user_id in users:
            try:
                async with self.homes.use(user_id, create=False) as home:
                    await home.lane.job(lambda home=home: home.writer.indexer.sweep())
            except Exception as exc:  # reported; the next write of that day reindexes it anyway
                self.catch_up_state["errors"] += 1
                log.error(f"catching up {user_id}'s index failed: {type(exc).__name__}: {exc}")
            self.catch_up_state["done"] += 1
        self.catch_up_state["finished"] = True

    def records(self, settings: Settings) -> Records:
        """A home's Idempotency-Key records (``idempotency.py``)."""
        return Records(settings.state_dir, self.config.idempotency_ttl_s, self.config.idempotency_max_records)

    def disk_short(self) -> str | None:
        """What is wrong when the disk holding the root has less free than writes need; None when
        it has enough (or cannot be asked)."""
        free = free_bytes(self.root)
        if free is None or free >= self.config.min_free_bytes:
            return None
        return (
            f"the disk holding {self.root} has {free} bytes free, under the {self.config.min_free_bytes} "
            "the server keeps free for writes (MEMORY_SERVER_MIN_FREE_BYTES)"
        )

    def _check_space(self, user_id: str) -> None:
        """A 507 before anything is written, when the disk is short of space."""
        if self.disk_short() is not None:
            raise _disk_full(user_id)

    async def ready(self) -> dict[str, Any]:
        # Not on the workers' limiter: a probe must answer while every worker is busy.
        writable, why = await anyio.to_thread.run_sync(self._root_writable)
        short = self.disk_short()
        return {
            "ready": self.model_loaded and writable and short is None,
            "model_loaded": self.model_loaded,
            **({"model_error": self.model_error} if self.model_error else {}),
            "root_writable": writable,
            **({"root_error": why} if why else {}),
            "disk_free_bytes": free_bytes(self.root),
            "disk_ok": short is None,
            **({"disk_error": f"{short}; free space on that disk"} if short else {}),
            "catch_up": dict(self.catch_up_state),
            "homes_open": len(self.homes),
        }

    def _root_writable(self) -> tuple[bool, str | None]:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=".ready-"):
                pass
        except OSError as exc:
            return False, f"{self.root}: {exc.strerror or exc}"
        return os.access(self.root, os.W_OK), None

    # -- writes -------------------------------------------------------------------------------
    async def record_turn(
        self,
        user_id: str,
        user: str,
        assistant: str = "",
        chat_id: str = "default",
        at: datetime | None = None,
        keyed: Keyed | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """The turn's answer, and whether it is a replay of a keyed request's first answer."""
        return await self._write_turn(user_id, Pending.said(user, assistant, chat_id, at), keyed)

    async def add_memory(
        self,
        user_id: str,
        text: str,
        category: str | None = None,
        importance: float = 0.5,
        chat_id: str = "default",
        at: datetime | None = None,
        keyed: Keyed | None = None,
    ) -> tuple[dict[str, Any], bool]:
        try:
            memory = Pending.memory(text, category=category, importance=importance, chat_id=chat_id, at=at)
        except ValueError as exc:  # no words, or an importance outside [0, 1]
            raise ApiError(422, "invalid_value", str(exc), "correct the value named in the detail") from None
        return await self._write_turn(user_id, memory, keyed)

    async def _write_turn(
        self, user_id: str, turn: Pending, keyed: Keyed | None
    ) -> tuple[dict[str, Any], bool]:
        with _errors(user_id):
            if self.disk_short() is not None:  # nothing can be written; a retry may still be answered
                if keyed is not None and (found := await self._recorded(user_id, keyed)) is not None:
                    return found, True
                raise _disk_full(user_id)
            async with self.homes.use(user_id, create=True) as home:
                result = await home.lane.turn(turn, keyed)
        if isinstance(result, Replay):
            return result.answer, True
        return answer_of(result, home.writer.settings), False

    async def _recorded(self, user_id: str, keyed: Keyed) -> dict[str, Any] | None:
        """The recorded answer of a keyed request, read without opening (or creating) the home."""
        try:
            settings = await self.run(lambda: user_settings(self.root, user_id))
        except UserIdError:
            return None
        return await self.run(lambda: self.records(settings).find(keyed))

    async def forget(self, user_id: str, target: Target, *, force: bool = False) -> dict[str, Any]:
        with _errors(user_id):
            self._check_space(user_id)
            async with self.homes.use(user_id, create=False) as home:
                return await home.lane.job(lambda: _forget(home, target, force))

    async def erase(
        self, user_id: str, target: Target, *, confirm: bool = False, force: bool = False
    ) -> dict[str, Any]:
        """Erase (``confirm``) or plan an erase of the user's words (``target``: one of a text, a
        row, a chat or a day); through the user's write lane, so it never runs beside the user's
        turns' index writes or the lane's maintenance."""
        with _errors(user_id):
            async with self.homes.use(user_id, create=False) as home:
                return await home.lane.job(lambda: erase(home.writer, target, confirm=confirm, force=force))

    async def unforget(
        self, user_id: str, text: str | None, *, chat: str | None = None, day: date | None = None
    ) -> dict[str, Any]:
        with _errors(user_id):
            self._check_space(user_id)
            async with self.homes.use(user_id, create=False) as home:
                result: dict[str, Any] = await home.lane.job(
                    lambda: unforget(home.writer, text, chat=chat, day=day)
                )
        if result["tombstones_removed"] == 0:
            what = _shown(text) if text else f"chat {chat!r}" if chat is not None else f"the day {day}"
            raise ApiError(
                404,
                "not_forgotten",
                f"no tombstone of user {user_id!r} holds {what}",
                "unforget the text, chat or day exactly as it was forgotten (case and spacing aside)",
            )
        return result

    async def delete_user(self, user_id: str, *, confirm: bool) -> dict[str, Any]:
        """Delete the user's home and every trace at the root, with the receipt; without
        ``confirm`` a 400 saying what would go, nothing changed."""
        with _errors(user_id):
            if not confirm:
                counted = await self.run(lambda: plan(user_target(self.root, user_id)))
                raise ApiError(
                    400,
                    "confirmation_required",
                    f"deleting user {user_id!r} removes {counted.describe('of the user')}; nothing was changed",
                    f"send DELETE /v1/users/{user_id}?confirm=true to delete it: irreversible",
                )
            async with self.homes.closed_for(user_id):
                receipt = await self.run(lambda: delete_user(self.root, user_id, holder=DELETER))
        log.info(f"deleted a user's memory (receipt {receipt['receipt']})")
        receipt["deletions_log"] = os.path.relpath(
            receipt["deletions_log"], self.root
        )  # the root's layout only
        return receipt

    # -- reads --------------------------------------------------------------------------------
    async def _read(self, user_id: str, fn: Callable[[UserHome], T]) -> T:
        with _errors(user_id):
            async with self.homes.use(user_id, create=False) as home:
                await home.lane.turns_indexed()  # the turns acknowledged before this read are in its index
                async with home.read_lock:
                    return await self.run(lambda: fn(home))

    async def search(self, user_id: str, query: str, filters: SearchFilters) -> list[dict[str, Any]]:
        """The user's hits for ``query`` among the rows ``filters`` keeps (``Home.search``); full
        text only while the embedding model cannot load; none while nothing is indexed yet."""

        def run(home: UserHome) -> list[dict[str, Any]]:
            try:
                hits = home.reader.search(query, filters, embed=self.model_error is None)
            except EmptyIndexError:  # nothing indexed yet: no hits
                return []
            return [hit.to_dict() for hit in hits]

        return await self._read(user_id, run)

    async def list_memories(
        self,
        user_id: str,
        *,
        cursor: str | None = None,
        limit: int = 50,
        since: date | None = None,
        until: date | None = None,
        source_types: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        def run(home: UserHome) -> dict[str, Any]:
            page = list_memories(
                home.reader.store,
                home.reader.settings,
                cursor=cursor,
                limit=limit,
                source_types=source_types,
                since=since,
                until=until,
            )
            return page.to_dict()

        return await self._read(user_id, run)

    async def get_memory(self, user_id: str, row_id: str) -> dict[str, Any]:
        """The memory with its provenance and its lineage (``core/index/lineage.py``): where it
        came from, back to the turns it was said in."""

        def run(home: UserHome) -> dict[str, Any] | None:
            reader = home.reader
            memory = get_memory(reader.store, reader.settings, row_id)
            if memory is None:
                return None
            lineage = reader.lineage([row_id]).get(row_id)
            return {**memory.to_dict(), "lineage": lineage.to_dict() if lineage is not None else None}

        found = await self._read(user_id, run)
        if found is None:
            raise _unknown_memory(user_id, row_id)
        return found

    async def status(self, user_id: str) -> dict[str, Any]:
        return await self._read(
            user_id,
            lambda home: _in_home(
                home_status(home.reader.settings, home.reader.store), home.reader.settings.home
            ),
        )

    async def look(self, user_id: str) -> dict[str, Any]:
        """What the user's home needs now, as the upkeep's planner finds it
        (``core/ops/upkeep/one_home.look_now``: the planner's state at the root read, nothing
        done or kept), without a person's words (``Look.without_words``)."""
        return await self._read(
            user_id, lambda home: look_now(home.reader, self.root, user_id).without_words()
        )

    async def users(self) -> list[str]:
        return await self.run(lambda: list_users(self.root))


def _forget(home: UserHome, target: Target, force: bool) -> dict[str, Any]:
    row_id, chat = target.row_id, target.chat
    if row_id is not None and get_memory(home.writer.store, home.writer.settings, row_id) is None:
        raise _unknown_memory(home.user_id, row_id)
    result = forget(home.writer, target, force=force)
    if chat is not None or target.day is not None:
        if result["turns"] == 0:
            what = f"chat {chat!r}" if chat is not None else f"the day {target.day}"
            raise ApiError(
                404,
                "not_found",
                f"no turn of user {home.user_id!r} was said in {what}",
                "give a chat id as search hits carry it (`chat`), or a day (YYYY-MM-DD, UTC) with talk",
            )
        return result
    if result["held_by_no_file"]:
        raise ApiError(
            404,
            "not_found",
            f"no fact in user {home.user_id!r}'s memory holds {_shown(target.text or '')}",
            "forget a fact's full text as search or the memory list shows it, or its row by id",
        )
    return result


def _in_home(out: dict[str, Any], home: Path) -> dict[str, Any]:
    """The home's paths in ``out`` made relative to the home: a client sees its memory's layout,
    not where the server keeps it."""
    root = str(home)
    for key in ("home", "memory_dir", "notebook_dir", "index_uri", "log"):
        value = out.get(key)
        if isinstance(value, str) and (value == root or value.startswith(root + os.sep)):
            out[key] = os.path.relpath(value, root)
    return out


NOTHING_TO_RECALL = "nothing to recall yet: the home's index is not built (its first writes build it)"
RECALL_FAILED = "recall failed (the server's log names the cause); the turn was classified without it"
REINDEX_FAILED = (
    "the index was not updated (the server's log names the cause); the facts are in the log, and "
    "the server retries the day's reindex"
)


def answer_of(result: TurnResult, settings: Settings) -> dict[str, Any]:
    """A turn's result as the server answers it: the core's summary, its paths relative to the
    home, and its failures in words (the error itself goes to the log: an answer never carries a
    server's exception, path or stack)."""
    out = _in_home(result.summary(), settings.home)
    who = settings.home.name
    if out.get("reindex_error") and out["reindex_error"] != DISK_FULL_REINDEX:
        log.warning(f"{who}: a turn's reindex failed: {out['reindex_error']}")
        out["reindex_error"] = REINDEX_FAILED
    recall = out.get("recall")
    if isinstance(recall, dict) and recall.get("error"):
        if str(recall["error"]).startswith(EmptyIndexError.__name__):  # a new home: nothing to recall
            recall["error"] = NOTHING_TO_RECALL
        else:
            log.warning(f"{who}: a turn's recall failed: {recall['error']}")
            recall["error"] = RECALL_FAILED
    memory_md = out.get("memory_md")
    if isinstance(memory_md, str) and memory_md.startswith("not refreshed:"):
        log.warning(f"{who}: MEMORY.md {memory_md}")
        out["memory_md"] = "not refreshed (the server's log names the cause)"
    return out


def _disk_full(user_id: str) -> ApiError:
    return ApiError(
        507,
        "disk_full",
        f"the disk holding user {user_id!r}'s home (users/{user_id}/ under the server's root) is full: "
        "nothing of this request was kept",
        "the server's operator must free space on the disk holding the server's root (its /ready "
        "says how much is free); then retry, with the same Idempotency-Key if you sent one",
        {"Retry-After": "60"},
    )


def _unknown_memory(user_id: str, row_id: str) -> ApiError:
    return ApiError(
        404,
        "unknown_memory",
        f"user {user_id!r} has no memory with id {_shown(row_id)}",
        "use an id from this user's search results or memory list",
    )


def _shown(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:79] + "…")


@contextlib.contextmanager
def _errors(user_id: str) -> Iterator[None]:
    """The core's errors as ``ApiError``s, around one call into the core."""
    try:
        yield
    except ApiError:
        raise
    except Exception as exc:
        translated = _translate(user_id, exc)
        if translated is exc:
            raise
        raise translated from exc


def _busy(detail: str) -> ApiError:
    """503 ``busy``: the request did nothing and may be sent again in a second."""
    return ApiError(503, "busy", detail, "retry shortly", {"Retry-After": "1"})


def _translate(user_id: str, exc: Exception) -> Exception:
    if isinstance(exc, UserIdError):
        return ApiError(400, "invalid_user_id", str(exc), f"use a user id of {USER_ID_RULE}")
    if is_disk_full(exc):
        log.error(f"{user_id}: a write failed for want of space: {exc}")
        return _disk_full(user_id)
    if isinstance(exc, KeyReused):
        return ApiError(
            422,
            "idempotency_key_reused",
            str(exc),
            "send a new Idempotency-Key for a new request; the same key only to retry the same request",
        )
    if isinstance(exc, UnknownUserError):
        return ApiError(
            404,
            "unknown_user",
            f"user {user_id!r} has no memory (none was written yet, or it was deleted)",
            "write to it first (POST a turn or a memory for this user); reads never create a home",
        )
    if isinstance(exc, (UserBeingDeleted, LaneClosed)):
        return ApiError(
            409,
            "user_being_deleted",
            f"user {user_id!r} is being deleted; nothing was done",
            "retry once the deletion has ended: the user then has no memory, and a write makes a new one",
            {"Retry-After": "1"},
        )
    if isinstance(exc, DeletionPending):
        return ApiError(
            409, "deletion_pending", str(exc), "finish the deletion as the detail says, then retry"
        )
    if isinstance(exc, TimeoutError) and not isinstance(exc, LockTimeout):
        return _busy(f"user {user_id!r}'s requests in flight did not end in time; nothing was deleted")
    if isinstance(exc, CursorError):
        return ApiError(422, "invalid_cursor", str(exc), "pass the previous page's next_cursor unchanged")
    if isinstance(exc, LegacyTableError):
        return ApiError(409, "index_needs_migration", str(exc), "run `memory-assets migrate` on this home")
    if isinstance(exc, VectorWidthMismatch):
        return ApiError(409, "index_model_mismatch", str(exc), "rebuild with `memory-assets reindex --full`")
    if isinstance(exc, EraseError):
        return ApiError(
            422, "cannot_erase", str(exc), "correct the request as the detail says; nothing was changed"
        )
    if isinstance(exc, ReconcileError):
        return ApiError(
            422,
            "not_a_whole_fact",
            str(exc),
            "forget a fact's full text as search or the memory list shows it, or its row by id",
        )
    if isinstance(exc, LockTimeout):  # its text names a lock file of the server's: logged, not answered
        log.warning(f"{user_id}: {exc}")
        return _busy(f"another writer (a command or a Dagster run) holds a lock on user {user_id!r}'s home")
    if isinstance(exc, EmbedderError):
        return ApiError(
            503, "model_unavailable", str(exc), "check the embedding model's settings, then retry"
        )
    if isinstance(exc, SettingsError):  # the server's environment, not the request
        return ApiError(
            500, "server_misconfigured", str(exc), "the server's operator must fix the setting named"
        )
    return exc
