"""The user's exclusion: one upkeep at a time per home, whatever runs it.

A batch of users and a per-user run (a person materialising one user's partition from the UI, a
retry) both take ``exclusive(settings, holder, timeout)`` before they work on a home, so they
never touch one home at once. It is a ``flock`` lock named by the home (``upkeep:<home>``, design
§8.2: on one machine, or across machines whose lock directory is on a shared NFSv4 volume), and
beside the lock file a note says who holds it (``holder``: the run, and since when), so a refusal
names the holder.

* A batch asks with ``timeout=0``: a held user is skipped (``UserHeld``), recorded with the
  holder, and left to a later batch; a batch never waits for one user.
* A per-user run waits a bounded time (the Dagster layer's ``MEMORY_UPKEEP_LOCK_WAIT_S``, default
  30 s: a batch holds a user for that user's work only, well under a second), then fails with
  ``UserHeld`` naming the holder and the fix.

The kernel drops a ``flock`` lock when its process dies, so a batch killed part-way holds no user
afterwards; a stale note is ignored (it is read only after the lock was refused).

The memory service, the CLI and an assistant writing a home directly do not take it: they are
ordered by the file and index locks (design §8.1) as before, and the upkeep's steps take those too.
"""

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from memory_assets.core.durable import LockTimeout, lock_file, named_lock, write_atomic
from memory_assets.core.settings import Settings


class UserHeld(LockTimeout):
    """The user's home is held by another upkeep; nothing was done to it."""

    def __init__(self, home: Path, holder: str, waited: float):
        self.home, self.holder, self.waited = home, holder, waited
        super().__init__(
            f"the memory home {home} is held by {holder} (its upkeep is running); nothing was done "
            f"to it after waiting {waited:g} s: run it again once that run ends (a batch retries "
            "a held user in its next batch)"
        )


def exclusion_name(settings: Settings) -> str:
    """The lock's name (``named_lock``): the home's."""
    return f"upkeep:{settings.home}"


def _note(settings: Settings) -> Path:
    return lock_file(exclusion_name(settings)).with_suffix(".holder.json")


def holder_of(settings: Settings) -> str:
    """Who the note says holds the home (only meaningful while the lock is held)."""
    try:
        data = json.loads(_note(settings).read_text(encoding="utf-8"))
        return f"{data['holder']} (pid {data['pid']}, since {data['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (it left no note)"


@contextlib.contextmanager
def exclusive(settings: Settings, holder: str, timeout: float) -> Iterator[None]:
    """Hold the user's exclusion for the block; ``UserHeld`` when another holds it past
    ``timeout`` seconds (0: try once). An error inside the block is never taken for a refusal."""
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(named_lock(exclusion_name(settings), timeout=max(0.0, timeout)))
    except LockTimeout:
        raise UserHeld(settings.home, holder_of(settings), timeout) from None
    with stack:
        note = _note(settings)
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_atomic(note, json.dumps({"holder": holder, "pid": os.getpid(), "since": since}), sync=False)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                note.unlink()
