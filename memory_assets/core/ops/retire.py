"""``retire_handoff``: step 1 of the reconcile on one home, alone, and what it left.

The reconcile's steps run one at a time where each is recorded on its own (the Dagster assets
``superseded_retired`` then ``index_swept``): this retires the dream's hand-off with the home's
indexer (``core/reconcile.retire_superseded``: tombstones, the days holding them reindexed, the
hand-off truncated last) and then reads the hand-off again, so the caller can say whether any line
it retired is still there. The sweep that follows is the home's indexer's own (``home.indexer``).
"""

from memory_assets.core.home import Home
from memory_assets.core.reconcile import HandoffLeft, ReconcileResult, handoff_left, retire_superseded


def retire_handoff(home: Home) -> tuple[ReconcileResult, HandoffLeft]:
    """The retire step's result on ``home`` (initialised: ``Home.ready``), and the hand-off as
    found after it."""
    result = ReconcileResult()
    retire_superseded(home.settings, home.indexer, result)
    return result, handoff_left(home.settings)
