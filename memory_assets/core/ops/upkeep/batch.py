"""``run_batch``: many users' upkeep in one process, one after another, with one embedder.

For each member (a user and the planner's ``Work`` for them), in order:

1. the user's exclusion is tried once (``exclusive(..., timeout=0)``): a user another run holds is
   **skipped**, recorded with the holder (``outcomes.record_outcome(skipped=...)``), and left for a
   later batch; the batch never waits for one user;
2. the user's home is opened with the batch's embedder (the model is loaded once, on the first
   row any user needs embedded) and ``upkeep_home`` runs its steps;
3. the outcome is recorded at the root (ok, or the failed steps and the backoff before a retry),
   then ``on_user`` is called (the Dagster layer reports the user's materialisations there, so a
   batch killed later keeps what it reported).

A member whose home is gone (deleted since the batch was planned: ``core/ops/delete_user.py``)
is skipped, and nothing of it is recorded at the root.

One user's failure, whatever raises (a home that cannot be opened, a broken page, a damaged
table, a bad model answer), is that user's recorded outcome, never the batch's end. Only
``BaseException`` (a kill, an interrupt) stops the loop, and each home is then as its runners'
crash safety leaves it: what was not reached is still due, and the next batch finds it.

Failpoints: ``upkeep.held`` (a user's exclusion taken, no step run yet) and ``upkeep.user_done``
(a user's outcome recorded and reported).
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memory_assets.core.dream.consolidator import Consolidator
from memory_assets.core.failpoints import failpoint
from memory_assets.core.home import Home
from memory_assets.core.models.embedder import Embedder, HttpEmbedder
from memory_assets.core.ops.upkeep.exclusion import UserHeld, exclusive
from memory_assets.core.ops.upkeep.home_upkeep import StepResult, upkeep_home
from memory_assets.core.ops.upkeep.outcomes import UPKEEP_RETRY, Outcome, record_outcome
from memory_assets.core.ops.upkeep.work import Work
from memory_assets.core.ops.users import DeletionPending, UnknownUserError, open_user_home

SKIPPED_GONE = "no home: the user was deleted (or is being deleted) since the batch was planned"


@dataclass
class UserUpkeep:
    """One member's upkeep in a batch."""

    user: str
    steps: list[StepResult] = field(default_factory=list)
    skipped: str = ""
    """Why nothing was done (held by another run), else empty."""
    error: str = ""
    """What stopped the user before any step (the home could not be opened), else empty."""
    outcome: Outcome | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> dict[str, str]:
        """Step -> error, for the steps that failed (``home`` when the home could not be opened)."""
        out = {s.step: s.error for s in self.steps if not s.ok}
        if self.error:
            out["home"] = self.error
        return out

    @property
    def ok(self) -> bool:
        return not self.skipped and not self.failed

    @property
    def optimized_version(self) -> int | None:
        """The table's version after this upkeep's optimize (None: it ran none)."""
        for step in self.steps:
            if step.step == "optimize" and step.ok:
                return int(step.result.after.version)
        return None


def run_batch(
    root: Path,
    members: Sequence[tuple[str, Work]],
    *,
    holder: str,
    embedder: Embedder | HttpEmbedder | None = None,
    now: Callable[[], datetime] | None = None,
    source: str = "upkeep",
    consolidator: Callable[[Home], Consolidator] | None = None,
    on_user: Callable[[UserUpkeep], None] | None = None,
    on_start: Callable[[str], None] | None = None,
    retry_base_s: float = UPKEEP_RETRY.first_s,
) -> list[UserUpkeep]:
    """Each member's upkeep (see the module docstring); ``holder`` names this batch in the users'
    exclusion notes and outcome records (a Dagster run's id); ``on_start(user)``: called once the
    user's exclusion is held, before any step; ``retry_base_s``: a failed user's first backoff
    (``outcomes.py``)."""
    done: list[UserUpkeep] = []
    for user, work in members:
        start = time.perf_counter()
        entry = UserUpkeep(user)
        try:
            home = open_user_home(root, user, embedder=embedder)
            with exclusive(home.settings, holder, timeout=0):
                if on_start is not None:
                    on_start(user)
                failpoint("upkeep.held")
                entry.steps = upkeep_home(
                    home,
                    work,
                    now=now() if now is not None else None,
                    source=source,
                    consolidator=consolidator,
                )
        except UserHeld as held:
            entry.skipped = f"held by {held.holder}"
        except (UnknownUserError, DeletionPending):
            entry.skipped = SKIPPED_GONE
        except Exception as exc:  # the user's, never the batch's
            entry.error = f"{type(exc).__name__}: {exc}"
        entry.seconds = time.perf_counter() - start
        try:
            entry.outcome = record_outcome(
                root,
                user,
                at=time.time(),
                run=holder,
                failed=entry.failed,
                skipped=entry.skipped,
                optimized_version=entry.optimized_version,
                retry_base_s=retry_base_s,
            )
        except Exception as exc:  # a user id that is not valid cannot even be recorded
            entry.error = entry.error or f"{type(exc).__name__}: {exc}"
        done.append(entry)
        if on_user is not None:
            on_user(entry)
        failpoint("upkeep.user_done")
    return done
