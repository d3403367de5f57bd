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

**Extending it.** Issue-sized changes to the partitioning belong here: ``day_key``/``day_of``/
``user_of`` are the only code that turns a day (and a user) into a key and back, and
``register_days``/``register_days_requests`` the only code that adds keys.

**Many homes** (``MEMORY_ROOT`` set when the code location loads; design §11). Each home under
the root is a user, and users are the dynamic partitions ``users`` (added by ``homes_sensor``
when a home appears, and by the runs that write). The shape, ``MEMORY_PARTITIONS``:

* ``user_day`` (the default): the day-shaped assets (``daily_logs``, ``archive_index``, the
  dream's ``vault``) are partitioned by user and day, a ``MultiPartitionsDefinition`` of
  ``users`` and ``log_days``. ``log_days`` then holds every day some user has a log, so the grid
  is users x days; Dagster's guidance is at most about 100,000 partitions per asset (its UI
  slows well before), which is 273 users with a year of logs, or 2,700 users with a month.
  Past it, the homes sensor warns on each tick that registers a user or a day, and names the fix;
* ``user``: the day-shaped assets are partitioned by user only, and a run reindexes the days it
  is given (or all of the user's days) inside it: partitions grow with users alone (a million
  users is a million keys, past the guidance too; then shard the root over code locations,
  design §11).

Every other asset of a home (the vault's index, the table, the reconcile, the dedup report,
the write path, the legacy jobs) is partitioned by ``users``. Without ``MEMORY_ROOT`` nothing
here changes: the single home's day partitions are ``log_days`` and nothing else is partitioned.
"""

import os
from collections.abc import Iterable
from datetime import date

import dagster as dg

from memory_assets.core.ops.users import ROOT_ENV, check_user_id
from memory_assets.core.settings import SettingsError

LOG_DAYS = "log_days"
USERS = "users"
PARTITIONS_ENV = "MEMORY_PARTITIONS"
SHAPES = ("user_day", "user")
GUIDANCE_PARTITIONS = 100_000
"""Dagster's guidance: at most about this many partitions per asset."""

log_days = dg.DynamicPartitionsDefinition(name=LOG_DAYS)
"""One partition per UTC day that has a daily log (``archive/YYYY-MM-DD.md``); the key is the
day in ISO form. With many homes, every day some user has a log."""

users = dg.DynamicPartitionsDefinition(name=USERS)
"""With many homes: one partition per user (a home under the root); the key is the user id."""


def _shape() -> str:
    """``day`` (one home), else the many-homes shape ``MEMORY_PARTITIONS`` names."""
    if not os.environ.get(ROOT_ENV):
        return "day"
    shape = os.environ.get(PARTITIONS_ENV) or "user_day"
    if shape not in SHAPES:
        raise SettingsError(f"{PARTITIONS_ENV}={shape!r}: choose one of {', '.join(SHAPES)}")
    return shape


SHAPE = _shape()
"""Read once, when the code location loads: ``day`` (a single home), ``user_day`` or ``user``."""
MANY_HOMES = SHAPE != "day"

day_partitions: dg.PartitionsDefinition = (
    log_days
    if SHAPE == "day"
    else users
    if SHAPE == "user"
    else dg.MultiPartitionsDefinition({"day": log_days, "user": users})
)
"""The partitions of the day-shaped assets (``daily_logs``, ``archive_index``, ``vault``)."""

home_partitions: dg.DynamicPartitionsDefinition | None = users if MANY_HOMES else None
"""The partitions of every other asset of a home: none for a single home, else ``users``."""

DAYS_PER_RUN = 100
"""Days per run when a backfill of ``archive_index`` covers a range: a year of daily logs is
four runs or fewer. A run's cost is mostly its start (a process, the imports, the model when a
row needs embedding); each day is then a diff that embeds only new lines. Bounded rather than
one run for everything, so a failure repeats at most this many days and a long backfill shows
its progress run by run."""


def _iso(day: date | str) -> str:
    return day if isinstance(day, str) else day.isoformat()


def day_key(day: date | str, user: str | None = None) -> str:
    """The partition key of a day (of ``user``'s home, with many homes)."""
    if SHAPE == "day":
        return _iso(day)
    if user is None:
        raise ValueError("with many homes a day's partition names its user")
    if SHAPE == "user":
        return user
    return dg.MultiPartitionKey({"day": _iso(day), "user": user})


def day_of(key: str) -> date:
    """The day of a day partition's key (not defined for the ``user`` shape's keys)."""
    return date.fromisoformat(_split(key)["day"] if SHAPE == "user_day" else key)


def _split(key: str) -> dict[str, str]:
    """A user-and-day key's parts (``2026-11-20|alice``: dimensions in name order)."""
    day, _, user = str(key).partition("|")
    return {"day": day, "user": user}


def user_of(key: str) -> str | None:
    """The user of a partition key (None for a single home's day keys)."""
    if SHAPE == "day":
        return None
    if SHAPE == "user_day" and "|" in str(key):
        return check_user_id(_split(key)["user"])
    return check_user_id(str(key))


def _reordering(instance: dg.DagsterInstance, days: Iterable[date | str]) -> tuple[list[str], list[str]]:
    """(keys to delete, keys to add, in this order) so that every day of ``days`` has a partition
    and the keys stay in calendar order: the registered keys from the first one out of place on
    are deleted and added again with the new ones."""
    known = list(instance.get_dynamic_partitions(LOG_DAYS))
    target = sorted(set(known) | {_iso(d) for d in days})
    if target == known:
        return [], []
    keep = 0
    while keep < len(known) and known[keep] == target[keep]:
        keep += 1
    return known[keep:], target[keep:]


def register_days_requests(
    instance: dg.DagsterInstance, days: Iterable[date | str], user: str | None = None
) -> list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest]:
    """A sensor's requests giving every day of ``days`` a partition, in calendar order (none when
    all have one), and ``user`` one (many homes); the daemon applies them in order, before the
    tick's run requests."""
    requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    if user is not None and MANY_HOMES and not instance.has_dynamic_partition(USERS, user):
        requests.append(users.build_add_request([user]))
    if SHAPE == "user":
        return requests
    delete, add = _reordering(instance, days)
    if delete:
        requests.append(log_days.build_delete_request(delete))
    if add:
        requests.append(log_days.build_add_request(add))
    return requests


def register_days(
    instance: dg.DagsterInstance, days: Iterable[date | str], user: str | None = None
) -> list[str]:
    """Give every day of ``days`` a partition, in calendar order, and ``user`` one (many homes),
    from a run, the demo or a test; returns the day keys added (re-added ones included)."""
    if user is not None and MANY_HOMES and not instance.has_dynamic_partition(USERS, user):
        instance.add_dynamic_partitions(USERS, [user])
    if SHAPE == "user":
        return []
    delete, add = _reordering(instance, days)
    for key in delete:
        instance.delete_dynamic_partition(LOG_DAYS, key)
    if add:
        instance.add_dynamic_partitions(LOG_DAYS, add)
    return add


def day_range_tags(first: date | str, last: date | str, user: str | None = None) -> dict[str, str]:
    """Run tags for one run over the day partitions ``first`` to ``last`` (both registered) of
    ``user`` (many homes; the ``user`` shape's run is the user's one partition)."""
    if SHAPE == "user":
        return {"dagster/partition": day_key(first, user)}
    return {
        "dagster/asset_partition_range_start": day_key(first, user),
        "dagster/asset_partition_range_end": day_key(last, user),
    }
