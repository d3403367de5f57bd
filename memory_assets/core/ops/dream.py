"""The dream followed by its reconcile, as one call (``memory-assets dream``).

A productive dream (the watermark advanced, or pages changed) is followed at once by the
reconcile: retire what it folded, sweep, optimize. So is any dream that leaves the hand-off
non-empty: a run killed after its commit is finished by the next tick's step 0, which is not
itself productive, and a dream killed before its reconcile left the hand-off for the next one. A reconcile that fails leaves the dream's
work standing and is reported in the result; the next ``reconcile`` (the CLI's, or the
reconcile schedule's in Dagster) retries it, because the hand-off is truncated only after its
lines are retired. Dagster runs the same pair as two jobs joined by a run-status sensor.
"""

from typing import Any

from memory_assets.core.dream.consolidator import Consolidator
from memory_assets.core.dream.runner import run_dream
from memory_assets.core.home import Home
from memory_assets.core.reconcile import handoff_pending, reconcile


def dream_then_reconcile(
    home: Home, consolidator: Consolidator, *, ticks: int = 1, force: bool = False, lint_only: bool = False
) -> dict[str, Any]:
    """Up to ``ticks`` dream runs (stopping at an idle, busy or failed one, or after a lint), then
    the reconcile when any was productive. Returns ``{"runs": [...], "reindex": {...}}``."""
    runs = []
    for _ in range(ticks):
        result = run_dream(home.settings, consolidator, force=force, lint_only=lint_only)
        runs.append(result)
        if result.kind in ("idle", "busy") or not result.ok or lint_only:
            break
    out: dict[str, Any] = {"runs": [r.to_dict() for r in runs]}
    if any(r.advanced or r.pages_changed for r in runs) or handoff_pending(home.settings):
        try:
            out["reindex"] = reconcile(home.settings, home.indexer).to_dict()
        except Exception as exc:  # the dream's work stands; the reconcile schedule retries
            out["reindex"] = {"error": f"{type(exc).__name__}: {exc}"}
    return out
