"""What a planner found due for one home: the hints a batch is given for each of its users.

A hint says which steps to try; it never makes a step do work its home no longer needs. Each step
asks its own question again under the user's exclusion (``home_upkeep.py``): a reindex is a diff
(a file already current costs a read and a comparison), the dream decides from the home's
persisted pacing state, the reconcile runs only for a non-empty hand-off or after a productive
dream, the dedup measurement only when the index changed since the last one.

``dedup_due_today`` is the daily measurement's rule: the index changed since the last measurement
and that measurement is from an earlier UTC day (or there is none). A batch that ran the dream or
the reconcile measures whenever the index changed, so the day's measurement follows the day's
consolidation.
"""

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_assets.core.settings import Settings

STEPS = ("ingest", "index", "dream", "reconcile", "dedup", "optimize")
"""The steps of a home's upkeep, in the order they run."""


@dataclass
class Work:
    """The steps a planner found due for a home (see the module docstring)."""

    keys: list[str] = field(default_factory=list)
    """Index keys (``label:filename``) the index is behind on: the catch-up."""
    ingest: bool = False
    """Transcript sessions the write path is behind on."""
    dream: bool = False
    """The dream's pacing has a batch to ingest or skip, or a lint due."""
    reconcile: bool = False
    """The dream's hand-off holds lines to retire."""
    dedup: bool = False
    """The day's dedup measurement is due."""
    optimize: list[str] = field(default_factory=list)
    """Why the table wants an optimize (``MaintenanceClock.reasons``, ``core/index/maintenance.py``)."""
    retry: list[str] = field(default_factory=list)
    """The steps of an earlier upkeep that failed, tried again."""

    def __bool__(self) -> bool:
        return bool(
            self.keys
            or self.ingest
            or self.dream
            or self.reconcile
            or self.dedup
            or self.optimize
            or self.retry
        )

    @classmethod
    def everything(cls) -> "Work":
        """Every step (a person naming a user without hints): the write path, the dream, the
        reconcile (its sweep is the whole catch-up), the dedup measurement when the index changed,
        and the optimize."""
        return cls(ingest=True, dream=True, dedup=True, optimize=["asked for by hand"], retry=["reconcile"])

    def wants(self, step: str) -> bool:
        """Whether the hints ask for ``step`` (a retried step counts)."""
        if step in self.retry:
            return True
        if step == "index":
            return bool(self.keys)
        if step == "optimize":
            return bool(self.optimize)
        return bool(getattr(self, step))

    def merge(self, other: "Work") -> "Work":
        """Both sets of hints (a home found again with more work before its batch started)."""
        return Work(
            keys=sorted(set(self.keys) | set(other.keys)),
            ingest=self.ingest or other.ingest,
            dream=self.dream or other.dream,
            reconcile=self.reconcile or other.reconcile,
            dedup=self.dedup or other.dedup,
            optimize=list(dict.fromkeys([*self.optimize, *other.optimize])),
            retry=sorted(set(self.retry) | set(other.retry)),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Work":
        unknown = set(data) - {f for f in cls.__dataclass_fields__}
        if unknown:
            raise ValueError(
                f"unknown upkeep work field(s) {sorted(unknown)}: the fields are "
                f"{', '.join(cls.__dataclass_fields__)}"
            )
        retry = [str(s) for s in data.get("retry") or []]
        if bad := [s for s in retry if s not in STEPS]:
            raise ValueError(f"retry names unknown step(s) {bad}: the steps are {', '.join(STEPS)}")
        return cls(
            keys=[str(k) for k in data.get("keys") or []],
            ingest=bool(data.get("ingest")),
            dream=bool(data.get("dream")),
            reconcile=bool(data.get("reconcile")),
            dedup=bool(data.get("dedup")),
            optimize=[str(r) for r in data.get("optimize") or []],
            retry=retry,
        )


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def last_measured_at(settings: Settings) -> float:
    """When the home's last dedup measurement was written (0: never)."""
    return _mtime(settings.dedup_dir / "report.json")


def dedup_due(settings: Settings) -> bool:
    """Whether the user's index changed since their last dedup measurement (two stats, no read)."""
    return _mtime(settings.index_state_path) > last_measured_at(settings)


def dedup_due_today(settings: Settings, now: datetime | None = None) -> bool:
    """The daily rule: ``dedup_due`` and the last measurement is from an earlier UTC day (or none)."""
    if not dedup_due(settings):
        return False
    last = last_measured_at(settings)
    today = (now or datetime.now(UTC)).astimezone(UTC).date()
    return last == 0.0 or datetime.fromtimestamp(last, UTC).date() < today
