"""Each user's last upkeep outcome, kept at the root, and when a failed user is due again.

``<root>/state/upkeep/<user>.json`` (``root_feed.save_home_state``: atomic, not fsync'd) holds
what the last upkeep of the user did: ``ok``, ``skipped`` (held by another run, and by whom),
the steps that failed with their errors, the run, the time, the failures in a row and
``retry_at``. The planner (the homes sensor) reads it before it puts a user in a batch:

* a failed user is due again after the ``UPKEEP_RETRY`` backoff (``core/backoff.py``; the caller
  may give another first wait: the Dagster layer's ``MEMORY_UPKEEP_RETRY_S``), doubling with each
  failure in a row up to its most, so a home that fails every time (a broken page) costs one attempt
  an hour, not one a tick, and every other user's batches go on without it;
* a skipped user is due again after the first backoff (the run holding it is short);
* a user whose upkeep succeeded is due whenever a look finds work.

A user without a home (deleted while the batch ran, or never made) gets no record: the root keeps
no trace of a home that is gone (``root_feed.save_home_state``, ``core/ops/delete_user.py``).

It is a record, not the truth of what is due: every failed step leaves its work for the planner's
look to find again (a stale file, a non-empty hand-off, the dream's own failure count), so a lost
record only lets a failed user be tried sooner.
"""

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memory_assets.core.backoff import UPKEEP_RETRY
from memory_assets.core.ops.root_feed import load_home_state, save_home_state

NAME = "upkeep"
MAX_ERROR_CHARS = 500


@dataclass
class Outcome:
    """One user's upkeep, as recorded."""

    ok: bool
    at: float
    run: str = ""
    skipped: str = ""
    failed: dict[str, str] = field(default_factory=dict)
    """Step -> its error, for the steps that failed."""
    failures: int = 0
    """Failed upkeeps in a row, this one included."""
    retry_at: float = 0.0
    optimized_at: float = 0.0
    """When an upkeep last optimized the user's table (0: none recorded), and its version then:
    the planner's maintenance clock counts from it (``core/index/maintenance.py``)."""
    optimized_version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_outcome(root: Path, user: str) -> Outcome | None:
    data = load_home_state(root, NAME, user)
    try:
        return Outcome(**data) if data else None
    except TypeError:  # a record of another shape: only a record, so start afresh
        return None


def record_outcome(
    root: Path,
    user: str,
    *,
    at: float,
    run: str,
    failed: dict[str, str],
    skipped: str = "",
    optimized_version: int | None = None,
    retry_base_s: float = UPKEEP_RETRY.first_s,
) -> Outcome:
    """Record one upkeep of ``user``: failed steps (empty: none), or ``skipped`` (held);
    ``optimized_version``: the table's version after this upkeep's optimize, when it ran one;
    ``retry_base_s``: the first wait of ``UPKEEP_RETRY`` (doubling with each failure in a row)."""
    before = load_outcome(root, user)
    if skipped:
        outcome = Outcome(
            ok=False,
            at=at,
            run=run,
            skipped=skipped[:MAX_ERROR_CHARS],
            failures=before.failures if before else 0,
            retry_at=at + retry_base_s,
        )
    elif failed:
        failures = (before.failures if before else 0) + 1
        outcome = Outcome(
            ok=False,
            at=at,
            run=run,
            failed={step: error[:MAX_ERROR_CHARS] for step, error in failed.items()},
            failures=failures,
            retry_at=at + UPKEEP_RETRY.starting_at(retry_base_s).wait(failures - 1),
        )
    else:
        outcome = Outcome(ok=True, at=at, run=run)
    if optimized_version is not None:
        outcome.optimized_at, outcome.optimized_version = at, optimized_version
    elif before is not None:
        outcome.optimized_at, outcome.optimized_version = before.optimized_at, before.optimized_version
    save_home_state(root, NAME, user, outcome.to_dict())
    return outcome


def retry_due(outcome: Outcome | None, now: float) -> bool:
    """Whether the user may go in a batch now: no record, the last upkeep succeeded, or its
    backoff has passed."""
    return outcome is None or outcome.ok or now >= outcome.retry_at
