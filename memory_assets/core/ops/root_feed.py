"""The root's change feed, and the per-home state of whoever follows it (design §11.3).

Many homes under one root (``core/ops/users.py``) change independently; something that keeps
them all current (the Dagster homes sensor) must find the few that changed without looking at
every home. The writers of a root tell it:

* ``note_change(root, user, what)`` appends one line, ``<unix time> <user> <what>``, to the
  feed file of the current UTC day, ``<root>/changes/YYYY-MM-DD.log``. One ``write`` of a line
  under 4 KiB to a file opened with ``O_APPEND`` lands whole and in order even with several
  writer processes, so no lock is taken. It is not fsync'd: the feed is a hint, never the truth
  (a line lost in a crash only delays the home until the follower's sweep comes round to it);
  it must never slow a write. The memory service notes every write of a user, and Dagster
  runs over a root note each home they opened.
* ``read_changes(root, position)`` returns the changes after ``position`` (a feed file and an
  offset) and the position after them: work proportional to the changes, not to the homes. A
  position of ``None`` starts at the end (a new follower sweeps every home first anyway). A
  line cut short by a crash mid-write is skipped; a feed file gone (pruned) moves on to the next.
* ``prune_feed(root, keep_days)`` deletes feed files older than ``keep_days``.

Writers that do not know the root (an assistant writing to ``MEMORY_HOME=<root>/users/<id>``
directly, or the CLI's ``--home``) note nothing; the follower's sweep (a bounded slice of homes
each tick) catches them.

Per-home state: ``load_home_state``/``save_home_state`` keep a follower's state of one home
(the sensors' freshness cursors) at ``<root>/state/<name>/<user>.json``, atomically replaced
without fsync: a cache, so a lost or garbled file only costs a fresh look at that home. It is
written only while the user's home exists, under the state file's lock: a home deleted while a
follower looked at it (``core/ops/delete_user.py`` removes the file under that lock, after the
home is gone) leaves no state at the root.

A deleted user's feed lines are blanked in place (spaces, the newline kept), so positions held
by followers stay valid; ``read_changes`` skips a blank line like any line that is not a change.
"""

import contextlib
import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.ops.users import USER_ID_RE, check_user_id, user_home

FEED_DIR = "changes"
STATE_DIR = "state"
FEED_SUFFIX = ".log"
MAX_WHAT = 64


@dataclass(frozen=True)
class Change:
    at: float
    user: str
    what: str


def feed_dir(root: Path) -> Path:
    return Path(root) / FEED_DIR


def _feed_file(root: Path, at: float) -> Path:
    return feed_dir(root) / (datetime.fromtimestamp(at, UTC).date().isoformat() + FEED_SUFFIX)


def note_change(root: Path, user: str, what: str = "write", *, at: float | None = None) -> None:
    """Append ``user`` changed (``what``: a word, e.g. ``turns``, ``forget``, ``run``) to the feed."""
    check_user_id(user)
    now = time.time() if at is None else at
    word = "".join(c for c in what if c.isalnum() or c in "._-")[:MAX_WHAT] or "write"
    line = f"{now:.3f} {user} {word}\n".encode()
    path = _feed_file(root, now)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _files(root: Path) -> list[str]:
    try:
        return sorted(n for n in os.listdir(feed_dir(root)) if n.endswith(FEED_SUFFIX))
    except FileNotFoundError:
        return []


def end_position(root: Path) -> tuple[str, int]:
    """The position after every change noted so far."""
    files = _files(root)
    if not files:
        return ("", 0)
    return (files[-1], (feed_dir(root) / files[-1]).stat().st_size)


def read_changes(root: Path, position: tuple[str, int] | None) -> tuple[list[Change], tuple[str, int]]:
    """The changes noted after ``position``, oldest first, and the position after them."""
    if position is None:
        return [], end_position(root)
    name, offset = position
    changes: list[Change] = []
    for file in (f for f in _files(root) if f >= name):
        start = offset if file == name else 0
        try:
            with (feed_dir(root) / file).open("rb") as fh:
                fh.seek(start)
                data = fh.read()
        except FileNotFoundError:
            continue
        complete = data.rfind(b"\n") + 1  # a line still being written is read next time
        for raw in data[:complete].splitlines():
            parts = raw.decode("utf-8", "replace").split(" ")
            if len(parts) == 3 and USER_ID_RE.fullmatch(parts[1]):
                with contextlib.suppress(ValueError):
                    changes.append(Change(float(parts[0]), parts[1], parts[2]))
        name, offset = file, start + complete
    return changes, (name, offset)


def prune_feed(root: Path, keep_days: int = 7, now: float | None = None) -> list[str]:
    """Delete feed files older than ``keep_days`` days; returns their names."""
    cutoff = datetime.fromtimestamp(time.time() if now is None else now, UTC).date() - timedelta(
        days=keep_days
    )
    gone = []
    for name in _files(root):
        if name.removesuffix(FEED_SUFFIX) < cutoff.isoformat():
            with contextlib.suppress(FileNotFoundError):
                (feed_dir(root) / name).unlink()
            gone.append(name)
    return gone


def _state_path(root: Path, name: str, user: str) -> Path:
    return Path(root) / STATE_DIR / name / f"{check_user_id(user)}.json"


def load_home_state(root: Path, name: str, user: str) -> dict[str, Any]:
    """A follower's saved state of one home (``{}`` when none, or unreadable)."""
    try:
        data = json.loads(_state_path(root, name, user).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_home_state(root: Path, name: str, user: str, state: dict[str, Any]) -> bool:
    """Keep ``state``; False (nothing written) when the user has no home (see the module docstring)."""
    path, home = _state_path(root, name, user), user_home(root, user)
    if not home.is_dir():  # before the lock too: its file would name the user
        return False
    with file_lock(path):
        if not home.is_dir():
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(state, separators=(",", ":")), sync=False)
    return True
