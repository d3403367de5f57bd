"""The reads of a table, held across processes, so that a prune can wait for them (design §8.6).

A prune removes the versions before the latest and the files only they held. A read holds none
of the writers' locks: it opens the latest version and reads its files, and a version pruned
under it is gone from under it (LanceDB's own cleanup says so). So every read of the store
(``MemoryStore.read``) holds the table's reads, and a prune that would remove a version a read
may be on first waits until none is in flight:

* ``table-reads:<uri>|<table>`` (a ``durable.named_lock``, in the lock directory of design §8.2):
  held shared by each read for its whole length, exclusively by a prune while it removes;
* ``table-prune:<uri>|<table>``: a prune's turn. The prune holds it exclusively while it waits
  for the reads in flight and removes; a read takes it shared for a moment before it starts, so
  a prune waiting is never starved by reads that keep starting (each waits the reads in flight
  and the prune's few milliseconds).

``reading`` waits for a prune at most ``READ_WAITS_S``, then reads unheld: a prune that stops
(a process stopped, not killed: a killed one's locks go with it) never stops the reads. ``pruning``
yields True once no read is in flight and none can start until the block ends, or False when
reads were still in flight after ``wait`` seconds: the prune then keeps every version a read may
be on (``MEMORY_LANE_VERSION_RETENTION_S``), and a read it outlasts reads again at the latest
(``MemoryStore.read``). Locks are named by the index URI as the store spells it: every process
of a deployment opens a home through the same settings.
"""

import contextlib
from collections.abc import Iterator

from memory_assets.core.durable import LockTimeout, named_lock

READ_WAITS_S = 10.0  # a read waits this long at most for a prune's turn, then reads unheld
PRUNE_WAITS_S = 2.0  # a prune waits this long at most for the reads in flight (reads wait meanwhile)


def lock_names(uri: str, table_name: str) -> tuple[str, str]:
    """The two locks' names (a user's deletion removes their files: ``core/ops/delete_user.py``)."""
    base = f"{uri}|{table_name}"
    return f"table-prune:{base}", f"table-reads:{base}"


@contextlib.contextmanager
def reading(uri: str, table_name: str) -> Iterator[None]:
    """Hold the table's reads for the block (see the module docstring)."""
    turn, reads = lock_names(uri, table_name)
    held = contextlib.ExitStack()
    try:
        with named_lock(turn, shared=True, timeout=READ_WAITS_S):
            held.enter_context(named_lock(reads, shared=True, timeout=READ_WAITS_S))
    except (LockTimeout, OSError):  # a prune still at it, or no lock directory: read unheld
        pass
    with held:
        yield


@contextlib.contextmanager
def pruning(uri: str, table_name: str, wait: float = PRUNE_WAITS_S) -> Iterator[bool]:
    """Hold off the table's reads for the block: True once none is in flight (and none can start
    until the block ends), False when some still were after ``wait`` seconds (nothing held)."""
    turn, reads = lock_names(uri, table_name)
    held = contextlib.ExitStack()
    try:
        held.enter_context(named_lock(turn, timeout=wait))
        held.enter_context(named_lock(reads, timeout=wait))
    except (LockTimeout, OSError, RuntimeError):  # RuntimeError: this very thread is in a read
        held.close()
        yield False
        return
    with held:
        yield True
