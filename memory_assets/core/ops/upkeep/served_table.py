"""``ServedTable``: one home's table kept within bounds by the process that writes it.

A process that holds a home open and writes it all day (the memory service's write lane) asks
this instead of a sensor: ``due`` says when the table wants an optimize (the maintenance clock's
reasons, ``core/index/maintenance.py``, or its growth rule against the table directory's size
after the last optimize and prune); ``optimize`` folds the new rows into the indexes and compacts,
pruning between the two unless the home's upkeep holds it; ``prune`` then removes every version
but the latest once no read of the table is in flight in any process, unless the upkeep holds the
home; ``prune_again_after`` is how long after a prune that had to keep versions for reads the
next one comes.

The clock starts at the object's creation, counted as an optimize (as a planner's first look
counts it). Each step runs on the caller's thread and raises what the table raised; the caller
orders them (an optimize, then its prune) and says who holds the home's exclusion meanwhile.
"""

import contextlib
import time

from memory_assets.core.home import Home
from memory_assets.core.index.indexer import Pruned
from memory_assets.core.index.maintenance import MaintenanceClock, disk_bytes, prune_again_after
from memory_assets.core.ops.upkeep.exclusion import UserHeld, exclusive


class ServedTable:
    """One served home's table maintenance (see the module docstring)."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.clock = MaintenanceClock(optimized_at=time.time())

    def due(self) -> bool:
        """Whether the table is due an optimize now: never for a legacy table; else any of the
        clock's reasons, or the directory grown past the growth rule."""
        stats = self.home.store.stats()
        if stats.legacy:
            return False
        if self.clock.reasons(stats, time.time()):
            return True
        return self.clock.grown(disk_bytes(self.home.settings))

    def optimize(self, holder: str) -> None:
        """The core's optimize under its exclusive table lock, pruning between the fold and the
        compaction when the home's exclusion is free (taken as ``holder`` for it, never waited
        for), without that prune when the upkeep holds it. The clock counts an optimize now
        whether it succeeded or raised."""
        try:
            indexer = self.home.indexer_without_embedder()
            try:
                with exclusive(self.home.settings, holder, timeout=0):
                    after = indexer.optimize(prune_between=True).after
            except UserHeld:
                after = indexer.optimize().after
            self.clock.optimized_version = after.version
        finally:
            self.clock.optimized_at = time.time()

    def prune(self, holder: str) -> Pruned | None:
        """Every version but the latest pruned under the home's exclusion (taken as ``holder``,
        never waited for), and the files only they held, once no read of the table is in flight
        (``Indexer.prune_versions``); None when the upkeep holds the home (its versions stay until
        a later optimize). Pruned or not, the directory's size now is the growth rule's baseline."""
        try:
            with exclusive(self.home.settings, holder, timeout=0):
                return self.home.indexer_without_embedder().prune_versions()
        except UserHeld:
            return None
        finally:
            with contextlib.suppress(OSError):
                self.clock.bytes_after = disk_bytes(self.home.settings)

    def prune_again_after(self) -> float:
        """Seconds from a prune that kept versions for reads in flight to the next: the home's
        lane retention (``MEMORY_LANE_VERSION_RETENTION_S``) and a margin."""
        return prune_again_after(self.home.settings.lane_version_retention_s)
