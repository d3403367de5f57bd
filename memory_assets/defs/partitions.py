"""Partitions of every day-shaped asset: the days that have a daily log. The one place that says
what a day partition is, so the rest of ``defs/`` speaks only through the helpers below.

**Why dynamic partitions of the log days** (design §2.1). A user's logs are sparse: on the demo
home 19 days of 401 have one. Daily time-window partitions gave every calendar day from the
oldest log to today a partition, so the UI listed 382 empty days as "missing" and invited a
backfill of each, one run per day. Here a partition exists exactly for a day that has (or had)
a log, or that the index still holds rows for, so nothing empty is ever shown as missing, and
the partition list is the history of the capture tier. Two facts of Dagster shaped the choice:

* a ``DailyPartitionsDefinition`` is fixed when the code location loads (its ``exclusions``
  too), so the days that gain a log later would again show as missing until a reload, and a
  log older than the start had no partition at all; dynamic partitions live in the instance
  and are added as logs appear (by ``daily_log_sensor``, the runs that append to logs, and the
  dream sensor), with no reload;
* a backfill over a range of dynamic partitions still runs a range per run: ``archive_index``
  has ``BackfillPolicy.multi_run(DAYS_PER_RUN)``, so a year of sparse logs is a handful of runs.

**Order.** Dagster keeps dynamic partitions in the order they were added, and a range (a
backfill's, the dream's batch) is a range in that order. Days are added oldest first, so the
order is the calendar's; a day older than the newest registered one (a log restored from a
backup, a turn replayed with ``--at`` into the past) is appended at the end of the list. A run
over a range still indexes exactly the days of its range, whatever their order.

**Extending it.** Issue-sized changes to the partitioning (one home per user, say: a key per
user and day) belong here: ``day_key``/``day_of`` are the only code that turns a day into a key
and back, and ``register_days``/``register_days_request`` the only code that adds keys.
"""

from collections.abc import Iterable
from datetime import date

import dagster as dg

LOG_DAYS = "log_days"

log_days = dg.DynamicPartitionsDefinition(name=LOG_DAYS)
"""One partition per UTC day that has a daily log (``archive/YYYY-MM-DD.md``); the key is the
day in ISO form."""

DAYS_PER_RUN = 100
"""Days per run when a backfill of ``archive_index`` covers a range: a year of daily logs is
four runs or fewer. A run's cost is mostly its start (a process, the imports, the model when a
row needs embedding); each day is then a diff that embeds only new lines. Bounded rather than
one run for everything, so a failure repeats at most this many days and a long backfill shows
its progress run by run."""


def day_key(day: date | str) -> str:
    """The partition key of a day."""
    return day if isinstance(day, str) else day.isoformat()


def day_of(key: str) -> date:
    """The day of a partition key."""
    return date.fromisoformat(key)


def unregistered(instance: dg.DagsterInstance, days: Iterable[date | str]) -> list[str]:
    """The keys of ``days`` that have no partition yet, oldest first."""
    known = set(instance.get_dynamic_partitions(LOG_DAYS))
    return sorted({day_key(d) for d in days} - known)


def register_days_request(
    instance: dg.DagsterInstance, days: Iterable[date | str]
) -> dg.AddDynamicPartitionsRequest | None:
    """A sensor's request adding the days that have no partition yet (``None`` when all have)."""
    new = unregistered(instance, days)
    return log_days.build_add_request(new) if new else None


def register_days(instance: dg.DagsterInstance, days: Iterable[date | str]) -> list[str]:
    """Add the days that have no partition yet (from a run, the demo or a test); returns them."""
    new = unregistered(instance, days)
    if new:
        instance.add_dynamic_partitions(LOG_DAYS, new)
    return new


def day_range_tags(first: date | str, last: date | str) -> dict[str, str]:
    """Run tags for one run over the day partitions ``first`` to ``last`` (both registered)."""
    return {
        "dagster/asset_partition_range_start": day_key(first),
        "dagster/asset_partition_range_end": day_key(last),
    }
