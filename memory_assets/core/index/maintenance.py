"""When a table is due its maintenance: an optimize (compaction, index folding), and the prune of
the versions it replaced. One clock for every caller: the homes planner
(``core/ops/upkeep/look.py``), the single home's maintenance sensor and the memory service's
write lane (``core/ops/upkeep/served_table.py``) all ask ``MaintenanceClock``.

An optimize is due (``MaintenanceClock.reasons``) when the table holds more than
``FRAGMENTS_SOFT`` fragments or ``VERSIONS_SOFT`` versions (a quarter of the ``table_bounded``
check's bounds, so it compacts well before them), or when ``OPTIMIZE_EVERY_S`` has passed since
the last optimize and the table changed since (its version is not the one optimised).

A caller that measures the table directory's bytes (``disk_bytes``) also asks the growth rule
(``MaintenanceClock.grown``): the directory grew past ``DISK_GROWTH_SOFT`` times its size after the
last optimize and prune. It is for a small home, whose first turns of a day add versions and
fragments of a few kilobytes each and take its table past twice its compacted size before the
fragment rule (docs/benchmarks.md, "Disk during a paced day"); a large home's turns are a small
part of it, and the fragment rule comes first. An optimize writes before its prune removes: the
indexes again and the fragments it merges (at most half the rows, ``compaction.py``), on top of
what the table had grown to; the lower the trigger, the lower that peak, at the cost of an
optimize every few turns for the smallest homes.

A look with no table opened asks ``MaintenanceClock.ruled_out`` of the table directory's bounds
(``table_directory.bounds``) first, and a planner that looks at many homes asks the table at most
every ``CHECK_EVERY_S`` a home (``MaintenanceClock.check_due``). A first look (no optimize known)
counts the table as it is as optimised then (``MaintenanceClock.look``).

The prune follows each optimize. When reads of the table were in flight and it kept the versions
they may be on, it runs again ``prune_again_after(retention_s)`` later: the retention, and
``PRUNE_AFTER_RETENTION_S`` more.
"""

import contextlib
from dataclasses import dataclass
from typing import Any

from memory_assets.core.index import table_damage
from memory_assets.core.index.store import MAX_FRAGMENTS, MAX_VERSIONS, TableStats
from memory_assets.core.index.table_directory import Bounds
from memory_assets.core.settings import Settings

FRAGMENTS_SOFT = MAX_FRAGMENTS // 4
VERSIONS_SOFT = MAX_VERSIONS // 4
OPTIMIZE_EVERY_S = 24 * 3600
CHECK_EVERY_S = 600
DISK_GROWTH_SOFT = 1.15
PRUNE_AFTER_RETENTION_S = 1.0


@dataclass
class MaintenanceClock:
    """A table's last optimize as its caller knows it, and the questions asked against it."""

    optimized_at: float = 0.0
    """When the table was last optimised (0: not known; a first look counts it optimised then)."""
    optimized_version: int | None = None
    """The table's version right after that optimize."""
    checked_at: float = 0.0
    """When a planner last asked the table (``check_due``)."""
    bytes_after: int | None = None
    """The table directory's bytes after the last optimize and prune (None: not measured yet)."""

    @classmethod
    def load(cls, raw: Any) -> "MaintenanceClock":
        """From ``dump``'s ``[checked_at, optimized_at, optimized_version]`` (anything else: unknown)."""
        if not isinstance(raw, list | tuple) or len(raw) < 3:
            return cls()
        checked_at, optimized_at, version = raw[:3]
        return cls(float(optimized_at), int(version) if version is not None else None, float(checked_at))

    def dump(self) -> list[Any]:
        return [self.checked_at, self.optimized_at, self.optimized_version]

    def optimized(self, version: int | None, at: float) -> None:
        """An optimize left the table at ``version`` at ``at``."""
        self.optimized_at, self.optimized_version = at, version

    def reasons(self, stats: TableStats, now: float) -> list[str]:
        """Why the table wants an optimize now (empty: it does not; see the module docstring)."""
        found = []
        if stats.fragments > FRAGMENTS_SOFT:
            found.append(f"{stats.fragments} fragments > {FRAGMENTS_SOFT}")
        if stats.versions > VERSIONS_SOFT:
            found.append(f"{stats.versions} versions > {VERSIONS_SOFT}")
        if now - self.optimized_at >= OPTIMIZE_EVERY_S and self.optimized_version != stats.version:
            found.append("a day since the last optimize and the table changed")
        return found

    def ruled_out(self, bounds: Bounds | None, now: float) -> bool:
        """Whether ``reasons`` can only find nothing, told by the table directory's ``bounds`` with
        no table opened: there is no table; or the directory holds no more data files than
        ``FRAGMENTS_SOFT`` (so no more fragments), no more versions than ``VERSIONS_SOFT``, and it is
        less than ``OPTIMIZE_EVERY_S`` since the last optimize or the latest version is the one
        optimised. False whenever the directory cannot tell (a table on an object store, a first
        look, a manifest whose name is not a version): open the table and ask ``reasons``."""
        if bounds is None:
            return False
        if not bounds.exists:
            return True
        if self.optimized_at == 0.0 or bounds.data_files > FRAGMENTS_SOFT or bounds.versions > VERSIONS_SOFT:
            return False
        if now - self.optimized_at < OPTIMIZE_EVERY_S:
            return True
        return bounds.version is not None and bounds.version == self.optimized_version

    def check_due(self, now: float) -> bool:
        """Whether a planner asks the table again (at most every ``CHECK_EVERY_S``)."""
        return now - self.checked_at >= CHECK_EVERY_S

    def look(self, stats: TableStats, now: float) -> list[str]:
        """A planner's look at the table: ``reasons``, with the optimize they ask for counted as
        done now (its batch runs it); a first look finds none and counts the table optimised now."""
        self.checked_at = now
        if self.optimized_at == 0.0:
            self.optimized(stats.version, now)
            return []
        found = self.reasons(stats, now)
        if found:
            self.optimized(stats.version, now)
        return found

    def grown(self, size: int | None) -> bool:
        """The growth rule for the directory's ``size`` now (None: not measurable, never grown); the
        first measure is the baseline."""
        if size is None:
            return False
        if self.bytes_after is None:
            self.bytes_after = size
        return size > DISK_GROWTH_SOFT * self.bytes_after


def disk_bytes(settings: Settings) -> int | None:
    """The table directory's bytes on disk now (None: an index on an object store, or no table)."""
    directory = table_damage.table_dir(settings.index_uri, settings.table_name)
    if directory is None or not directory.is_dir():
        return None
    total = 0
    for f in directory.rglob("*"):
        with contextlib.suppress(FileNotFoundError):
            total += f.stat().st_size if f.is_file() else 0
    return total


def prune_again_after(retention_s: float) -> float:
    """How long after a prune that kept versions for reads in flight the next prune comes."""
    return retention_s + PRUNE_AFTER_RETENTION_S
