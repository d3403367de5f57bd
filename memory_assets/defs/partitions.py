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
backfill's, the dream's batch) is a range in that order, so the keys must stay in calendar
order. New days are added oldest first; a day older than a registered one (a log restored from
a backup, a turn replayed with ``--at`` into the past, a legacy row exported to its own day)
re-registers the later days after it: their keys are deleted and added again in order. That
touches only the list of keys: materialisations, checks and runs are recorded by key and stay.

**Extending it.** Issue-sized changes to the partitioning (one home per user, say: a key per
user and day) belong here: ``day_key``/``day_of`` are the only code that turns a day into a key
and back, and ``register_days``/``register_days_requests`` the only code that adds keys.
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


def _reordering(instance: dg.DagsterInstance, days: Iterable[date | str]) -> tuple[list[str], list[str]]:
    """(keys to delete, keys to add, in this order) so that every day of ``days`` has a partition
    and the keys stay in calendar order: the registered keys from the first one out of place on
    are deleted and added again with the new ones."""
    known = list(instance.get_dynamic_partitions(LOG_DAYS))
    target = sorted(set(known) | {day_key(d) for d in days})
    if target == known:
        return [], []
    keep = 0
    while keep < len(known) and known[keep] == target[keep]:
        keep += 1
    return known[keep:], target[keep:]


def register_days_requests(
    instance: dg.DagsterInstance, days: Iterable[date | str]
) -> list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest]:
    """A sensor's requests giving every day of ``days`` a partition, in calendar order (none when
    all have one); the daemon applies them in order, before the tick's run requests."""
    delete, add = _reordering(instance, days)
    requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    if delete:
        requests.append(log_days.build_delete_request(delete))
    if add:
        requests.append(log_days.build_add_request(add))
    return requests


def register_days(instance: dg.DagsterInstance, days: Iterable[date | str]) -> list[str]:
    """Give every day of ``days`` a partition, in calendar order (from a run, the demo or a test);
    returns the keys added (re-added ones included)."""
    delete, add = _reordering(instance, days)
    for key in delete:
        instance.delete_dynamic_partition(LOG_DAYS, key)
    if add:
        instance.add_dynamic_partitions(LOG_DAYS, add)
    return add


def day_range_tags(first: date | str, last: date | str) -> dict[str, str]:
    """Run tags for one run over the day partitions ``first`` to ``last`` (both registered)."""
    return {
        "dagster/asset_partition_range_start": day_key(first),
        "dagster/asset_partition_range_end": day_key(last),
    }
