"""``LookState``: what a planner keeps of a home between its looks, at the root.

``<root>/state/homes_sensor/<user>.json`` (``root_feed.save_home_state``: atomic, not fsync'd;
deleted with the user) holds, for one home:

* ``days``, ``files``, ``transcripts``: the freshness cursors (``core/index/freshness.Cursor``)
  of its daily logs, of its vault pages, core files and transcripts, and of the write path over
  its transcripts: a cache of digests and the requests in flight;
* ``optimize``: its table's maintenance clock (``core/index/maintenance.MaintenanceClock``:
  when the planner last asked the table, when it was last optimised and its version then);
* ``table``: the table's id against the table directory's key (``table_directory.index_state``),
  so a look opens no table while the directory is the same;
* ``reported_assets``: what the face reported for the home (the Dagster layer: the assets it
  recorded as having nothing to do, ``defs/homes/nothing_to_do.py``).

Every part is a cache or a memo: a state lost or unreadable is started afresh, and the next look
finds the same work from the files (reading more of them once).
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_assets.core.index.freshness import Cursor
from memory_assets.core.index.maintenance import MaintenanceClock
from memory_assets.core.ops.root_feed import load_home_state, save_home_state

NAME = "homes_sensor"
"""The state's directory at the root (named for the planner's first face, the homes sensor)."""


@dataclass
class LookState:
    """One home's state between looks (see the module docstring)."""

    days: Cursor = field(default_factory=Cursor)
    files: Cursor = field(default_factory=Cursor)
    transcripts: Cursor = field(default_factory=Cursor)
    clock: MaintenanceClock = field(default_factory=MaintenanceClock)
    table: list[Any] | None = None
    reported: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, root: Path, user: str) -> "LookState":
        data = load_home_state(root, NAME, user)
        table = data.get("table")
        return cls(
            Cursor.load(data.get("days")),
            Cursor.load(data.get("files")),
            Cursor.load(data.get("transcripts")),
            MaintenanceClock.load(data.get("optimize")),
            table if isinstance(table, list) else None,
            set(data.get("reported_assets") or []),
        )

    def save(self, root: Path, user: str) -> None:
        """Kept at the root (nothing, for a user whose home went meanwhile: ``save_home_state``)."""
        save_home_state(
            root,
            NAME,
            user,
            {
                "days": self.days.dump(),
                "files": self.files.dump(),
                "transcripts": self.transcripts.dump(),
                "reported_assets": sorted(self.reported),
                "optimize": self.clock.dump(),
                "table": self.table,
            },
        )
