"""How long to wait before trying a failed thing again: one ``Backoff`` type, one named policy
per use.

A policy gives the wait before each retry (``wait(0)`` before the first). Doubling policies start
at ``first_s`` and double with each retry, at most ``max_s``; a schedule (``waits``) gives each
wait in turn and then has no more (``retries()`` ends).

The policies, one per use:

* ``RUN_RETRY``: a run a sensor requested for a stale file or a session behind that failed, was
  cancelled or was lost (``core/index/freshness.py``), and a home the homes sensor looks at again
  while a request of it is in flight;
* ``UPKEEP_RETRY``: a home whose upkeep failed, before it goes in a batch again
  (``core/ops/upkeep/outcomes.py``; the Dagster layer may give another first wait,
  ``MEMORY_UPKEEP_RETRY_S``);
* ``LANE_REINDEX_RETRY``: a day whose reindex failed after the memory service appended its turns,
  retried by the user's write lane (``server/lane.py``), then left to the next write of that day,
  the start-up catch-up or a sensor;
* ``MODEL_REQUEST_RETRY``: a request to a model's OpenAI-compatible endpoint that met a connection
  error, a 5xx or a 429 (``core/models/openai_compat.py``, whose ``RetryPolicy`` bounds the number
  of retries and the call's total time, and may take another first wait); no most of its own, as
  the call's time limit bounds every wait.
"""

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Backoff:
    """The waits before the retries of one use (see the module docstring)."""

    name: str
    first_s: float = 0.0
    max_s: float = 0.0
    waits: tuple[float, ...] = ()
    """A schedule: each wait in turn, and no retry after the last (doubling when empty)."""

    def wait(self, retry: int) -> float:
        """The wait before retry ``retry`` (0: the first); a schedule past its end gives its last."""
        if self.waits:
            return self.waits[min(retry, len(self.waits) - 1)]
        return min(self.first_s * 2**retry, self.max_s)

    def retries(self) -> Iterator[float]:
        """Each retry's wait, in order: a schedule's, or a doubling policy's without end."""
        if self.waits:
            yield from self.waits
            return
        retry = 0
        while True:
            yield self.wait(retry)
            retry += 1

    def starting_at(self, first_s: float) -> "Backoff":
        """The same policy with another first wait (a setting that overrides it)."""
        return replace(self, first_s=first_s)


RUN_RETRY = Backoff("a requested run that failed or was lost", first_s=30.0, max_s=3600.0)
UPKEEP_RETRY = Backoff("a home whose upkeep failed", first_s=60.0, max_s=3600.0)
LANE_REINDEX_RETRY = Backoff("a day the write lane could not reindex", waits=(5.0, 30.0, 120.0))
MODEL_REQUEST_RETRY = Backoff("a failed request to a model's endpoint", first_s=0.5, max_s=math.inf)
