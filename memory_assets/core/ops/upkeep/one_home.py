"""One home's upkeep asked for by a person (``memory-assets upkeep``): the look, then the day's
work, with the steps and outcomes a batch records.

* ``look_now``: what the home needs now (``look.py``). Its cursors start empty (every file read
  once), so whatever is stale is found, whoever asked for it already; when the home is a user's
  under a root (``--root``/``--user``) the planner's maintenance clock and table memo kept there,
  and the user's last upkeep outcome, are read. Nothing of the look is kept: the planner's own
  looks go on from theirs, and a look that only reports leaves nothing behind. A home outside a root has no record of its last optimize, so its first
  look counts its table optimised now: it is due one only past the fragment or version bounds.
  Its ``days.grown`` are the daily logs whose fact lines changed since the planner last read them
  (the days cursor kept at the root), as the homes batch reports them; a day the planner never
  read, and every day of a home outside a root, counts as grown while the index is behind on it.
* ``upkeep_now``: the look's work done. A user's home under a root runs as a batch of one
  (``batch.run_batch``: its exclusion tried once, a held home skipped, the outcome recorded at the
  root, where the planner reads it); a home alone runs ``upkeep_home`` under its exclusion,
  waiting at most ``lock_wait_s`` for another upkeep of it to end. Either way the answer is a
  ``UserUpkeep``: each step's result or error, or why nothing was done.
"""

from pathlib import Path

from memory_assets.core.home import Home
from memory_assets.core.index import freshness
from memory_assets.core.index.freshness import Cursor, LogGrowth, RunState
from memory_assets.core.ops.upkeep.batch import UserUpkeep, run_batch
from memory_assets.core.ops.upkeep.exclusion import UserHeld, exclusive
from memory_assets.core.ops.upkeep.home_upkeep import upkeep_home
from memory_assets.core.ops.upkeep.look import Look, look_at
from memory_assets.core.ops.upkeep.look_state import LookState
from memory_assets.core.ops.upkeep.outcomes import load_outcome
from memory_assets.core.sources import IndexKey

HOLDER = "memory-assets upkeep"
LOCK_WAIT_S = 30.0


def _no_run(_run_key: str) -> RunState:
    return RunState.UNKNOWN


def look_now(home: Home, root: Path | None = None, user: str | None = None) -> Look:
    """What ``home`` needs now (see the module docstring); ``root`` and ``user``: the home is that
    user's under the root."""
    state, outcome, read = LookState(), None, Cursor()
    if root is not None and user is not None:
        kept = LookState.load(root, user)
        state.clock, state.table, read = kept.clock, kept.table, kept.days
        outcome = load_outcome(root, user)
    look = look_at(home, state, _no_run, run_key=HOLDER, outcome=outcome, now=freshness.clock())
    look.days.grown = _grown(look, read)
    return look


def _grown(look: Look, read: Cursor) -> list[LogGrowth]:
    """The look's grown days (read from an empty cursor: every day) narrowed to those whose fact
    lines differ from ``read``'s reading of them, or, for a day ``read`` never read, that the
    index is behind on."""
    stale = {s.day for s in look.days.stale}
    out = []
    for g in look.days.grown:
        before = read.files.get(str(IndexKey.for_day(g.day)))
        if (g.day in stale) if before is None else before[3] != g.facts:
            out.append(g)
    return out


def upkeep_now(
    home: Home,
    look: Look,
    root: Path | None = None,
    user: str | None = None,
    lock_wait_s: float = LOCK_WAIT_S,
) -> UserUpkeep:
    """The work ``look`` found, done (see the module docstring)."""
    if root is not None and user is not None:
        [done] = run_batch(root, [(user, look.work)], holder=HOLDER, embedder=home.embedder)
        return done
    entry = UserUpkeep(home.settings.home.name)
    try:
        with exclusive(home.settings, HOLDER, timeout=lock_wait_s):
            entry.steps = upkeep_home(home, look.work)
    except UserHeld as held:
        entry.skipped = f"held by {held.holder}"
    return entry
