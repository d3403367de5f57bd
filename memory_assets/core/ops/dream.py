"""The dream and its reconcile as a face asks for them (``memory-assets dream``, ``reconcile``).

``dream_then_reconcile``: the dream followed by its reconcile, as one call.

A productive dream (the watermark advanced, or pages changed) is followed at once by the
reconcile: retire what it folded, sweep, optimize. So is any dream that leaves the hand-off
non-empty: a run killed after its commit is finished by the next tick's step 0, which is not
itself productive, and a dream killed before its reconcile left the hand-off for the next one. A reconcile that fails leaves the dream's
work standing and is reported in the result; the next ``reconcile`` (the CLI's, or the
reconcile schedule's in Dagster) retries it, because the hand-off is truncated only after its
lines are retired. Dagster runs the same pair as two jobs joined by a run-status sensor.

``dream_once``: one dream run past the gates (a sensor or a person decided it is due), a batch's
consolidation or, with ``lint_only``, the vault's lint; no reconcile follows (Dagster runs it as
its own job).

``dream_preview``: what the dream would write to the vault, run on a clone of the home
(``core/dream/dry_run.py``); the home is not touched. ``reconcile_home``: the reconcile alone.

The consolidator is the home's configured one (``make_consolidator``) unless one is given.
"""

from typing import Any

from memory_assets.core.dream.consolidator import Consolidator
from memory_assets.core.dream.consolidator_choice import make_consolidator
from memory_assets.core.dream.dry_run import DryRun, dry_run
from memory_assets.core.dream.runner import DreamResult, run_dream
from memory_assets.core.home import Home
from memory_assets.core.reconcile import ReconcileResult, handoff_pending, reconcile


def dream_then_reconcile(
    home: Home,
    consolidator: Consolidator | None = None,
    *,
    ticks: int = 1,
    force: bool = False,
    lint_only: bool = False,
) -> dict[str, Any]:
    """Up to ``ticks`` dream runs (stopping at an idle, busy or failed one, or after a lint), then
    the reconcile when any was productive. Returns ``{"runs": [...], "reindex": {...}}``."""
    consolidator = consolidator or make_consolidator(home.settings)
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


def dream_once(home: Home, *, lint_only: bool = False) -> DreamResult:
    """One forced dream run with the home's configured consolidator: the runner still owns the
    batch and its retry-then-skip, only the pacing gates are passed (see the module docstring)."""
    return run_dream(home.settings, make_consolidator(home.settings), force=True, lint_only=lint_only)


def dream_preview(
    home: Home,
    consolidator: Consolidator | None = None,
    *,
    ticks: int = 1,
    force: bool = False,
    lint_only: bool = False,
) -> DryRun:
    """What up to ``ticks`` dream runs would change in the vault (its diff), the home untouched."""
    return dry_run(
        home.settings,
        consolidator or make_consolidator(home.settings),
        ticks=ticks,
        force=force,
        lint_only=lint_only,
    )


def reconcile_home(home: Home) -> ReconcileResult:
    """The reconcile alone: the hand-off's folded lines retired, the index swept, the table optimised."""
    return reconcile(home.settings, home.indexer)
