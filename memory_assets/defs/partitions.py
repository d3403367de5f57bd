"""Partitions of every day-shaped asset, and of a home's assets with many homes. The one place
that says what a partition is, so the rest of ``defs/`` speaks only through the helpers below.

**One home.** ``log_days`` holds a key (the ISO day) for each UTC day that has (or had) a daily
log, or that the index still holds rows for, so no empty day shows as missing (design §2.1 says
why dynamic partitions and not time windows). Keys are kept in calendar order, because Dagster
keeps them in the order they were added and a range (a backfill's, the dream's batch) is a range
in that order: a day older than a registered one re-registers the later days after it (their keys
deleted and added again; materialisations, checks and runs are recorded by key and stay). A
backfill of ``archive_index`` over a range runs ``DAYS_PER_RUN`` days a run.

**Many homes** (``MEMORY_ROOT`` set when the code location loads). Each home under the root is a
user, and users are the dynamic partitions ``users``: every asset of a home, the day-shaped ones
too, is partitioned by user alone, a user's days inside the user's runs (design §11.2 says why
not users x days). Those assets have no backfill policy (``day_backfill_policy``), so every run
that touches a home is tagged with its one user and held by the per-user run limit
(``defs/instance.py``); a run that would span users is refused (``defs/resources.py``).

``day_key``/``day_of``/``user_of`` are the only code that turns a day (and a user) into a key
and back, and ``register_days``/``register_days_requests`` the only code that adds keys.
"""

import warnings
from collections.abc import Iterable
from datetime import date

import dagster as dg

from memory_assets.core.ops.users import ROOT_ENV, check_user_id
from memory_assets.defs.env import text

LOG_DAYS = "log_days"
USERS = "users"
GUIDANCE_PARTITIONS = 100_000
"""Dagster's guidance: at most about this many partitions per asset."""

log_days = dg.DynamicPartitionsDefinition(name=LOG_DAYS)
"""One partition per UTC day that has a daily log (``archive/YYYY-MM-DD.md``); the key is the
day in ISO form. A single home's day partitions."""

users = dg.DynamicPartitionsDefinition(name=USERS)
"""With many homes: one partition per user (a home under the root); the key is the user id."""

SHAPE = "user" if text(ROOT_ENV) else "day"
"""Read once, when the code location loads: ``day`` (a single home) or ``user`` (many homes)."""
MANY_HOMES = SHAPE == "user"

day_partitions: dg.PartitionsDefinition = users if MANY_HOMES else log_days
"""The partitions of the day-shaped assets (``daily_logs``, ``archive_index``, ``vault``)."""

home_partitions: dg.DynamicPartitionsDefinition | None = users if MANY_HOMES else None
"""The partitions of every other asset of a home: none for a single home, else ``users``."""

DAYS_PER_RUN = 100
"""Days per run when a backfill of a single home's ``archive_index`` covers a range: a year of
daily logs is four runs or fewer. A run's cost is mostly its start (a process, the imports, the
model when a row needs embedding); each day is then a diff that embeds only new lines. Bounded
rather than one run for everything, so a failure repeats at most this many days and a long
backfill shows its progress run by run."""


def day_backfill_policy(days_per_run: int | None) -> dg.BackfillPolicy | None:
    """A day-shaped asset's backfill policy. A single home: ``days_per_run`` days a run (all of a
    backfill's days in one run when None). Many homes: none, so a backfill over many users is one
    run per user, each tagged ``dagster/partition=<user>`` by Dagster, which the per-user limit
    keys on (a policy's runs carry only range tags; see the module docstring)."""
    if MANY_HOMES:
        return None
    with warnings.catch_warnings():
        # BackfillPolicy is beta in dagster 1.13 (pinned): it is what makes a backfill over a long
        # range of days a few runs instead of one run per day.
        warnings.simplefilter("ignore", dg.BetaWarning)
        if days_per_run is None:
            return dg.BackfillPolicy.single_run()
        return dg.BackfillPolicy.multi_run(max_partitions_per_run=days_per_run)


def _iso(day: date | str) -> str:
    return day if isinstance(day, str) else day.isoformat()


def day_key(day: date | str, user: str | None = None) -> str:
    """The partition key of a day (a single home), or of the user whose day it is (many homes)."""
    if not MANY_HOMES:
        return _iso(day)
    if user is None:
        raise ValueError("with many homes a day's partition is its user's")
    return user


def day_of(key: str) -> date:
    """The day of a single home's day partition key (many homes' keys are users)."""
    if MANY_HOMES:
        raise ValueError(f"{key!r} is a user's partition: with many homes a partition holds no day")
    return date.fromisoformat(key)


def user_of(key: str) -> str | None:
    """The user of a partition key (None for a single home's day keys)."""
    return check_user_id(str(key)) if MANY_HOMES else None


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
    all have one); with many homes, ``user`` one instead (the days are inside the user's); the
    daemon applies them in order, before the tick's run requests."""
    if MANY_HOMES:
        if user is not None and not instance.has_dynamic_partition(USERS, user):
            return [users.build_add_request([user])]
        return []
    requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    delete, add = _reordering(instance, days)
    if delete:
        requests.append(log_days.build_delete_request(delete))
    if add:
        requests.append(log_days.build_add_request(add))
    return requests


def register_days(
    instance: dg.DagsterInstance, days: Iterable[date | str], user: str | None = None
) -> list[str]:
    """Give every day of ``days`` a partition, in calendar order (with many homes, ``user`` one),
    from a run, the demo or a test; returns the day keys added (re-added ones included)."""
    if MANY_HOMES:
        if user is not None and not instance.has_dynamic_partition(USERS, user):
            instance.add_dynamic_partitions(USERS, [user])
        return []
    delete, add = _reordering(instance, days)
    for key in delete:
        instance.delete_dynamic_partition(LOG_DAYS, key)
    if add:
        instance.add_dynamic_partitions(LOG_DAYS, add)
    return add


def day_materializations(
    asset: dg.AssetKey | str, days: Iterable[date | str], user: str | None, metadata: dict[str, str]
) -> list[dg.AssetMaterialization]:
    """One materialisation of ``asset`` for each of ``days`` (of ``user``'s, with many homes), in
    that day's partition, each with ``metadata``: how a run records the days it wrote to an asset
    it does not materialise itself."""
    return [
        dg.AssetMaterialization(asset_key=asset, partition=day_key(day, user), metadata=metadata)
        for day in days
    ]


def day_range_tags(first: date | str, last: date | str, user: str | None = None) -> dict[str, str]:
    """Run tags for one run over the day partitions ``first`` to ``last`` (both registered) of a
    single home; with many homes, the run of ``user``'s partition (its days are the run's)."""
    if MANY_HOMES:
        return {"dagster/partition": day_key(first, user)}
    return {
        "dagster/asset_partition_range_start": day_key(first),
        "dagster/asset_partition_range_end": day_key(last),
    }
