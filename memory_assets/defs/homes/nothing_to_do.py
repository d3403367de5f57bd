"""Many homes: what keeps a user's partitions from showing as missing when there is no work.

Every asset of a home is partitioned by user (``defs/partitions.py``), and the UI shows a user's
partition of an asset as missing until something materialises it. For one home an asset never
run shows as never materialised; here it would show as missing for every user with nothing to
do: a reconcile with an empty hand-off, a home without transcripts, a table with no legacy rows,
files Dagster never writes. So, as the single home's sensor records a day the index already
matches, the homes sensor records once per user and asset a materialisation of each asset it
finds nothing to do for when it looks at the home (``reported_by: homes_sensor`` and the reason
in its metadata). Work found later is requested as ever; a partition with work waiting that was
never materialised still shows as missing, which is what missing should mean.

What counts as nothing to do, per asset:

* ``archive_index``, ``vault_index``, ``core_file_index``, ``transcript_index``: no stale file of
  the asset's kind (the freshness the sensor requests runs from);
* ``archival_memories``, ``legacy_rows_exported``, ``legacy_rows_deleted``: no optimize requested;
  no legacy row in the table (or no table);
* ``ingested_turns``: no transcript session behind;
* ``vault``, ``vault_lint``: the dream's pacing is idle with no day pending consolidation;
* ``superseded_retired``, ``index_swept``: the dream's hand-off is empty (the look's
  ``work.reconcile`` is not set);
* ``dedup_history``, ``dedup_report``: the index did not change since the last measurement;
* ``daily_logs``: no log (a home with logs is recorded when its logs grow);
* ``transcripts``, ``consolidation_log``, ``vault_pages``, ``core_files``, ``tombstones``: files
  the assistant, the dream and people write, which Dagster never materialises: recorded as seen.

An asset the home's batch may materialise (``defs/upkeep/events.work_assets`` of the work the
sensor found) is never recorded: the batch materialises it, or fails it, which the UI shows as
failed rather than missing. A run may materialise an asset before the sensor first finds it idle;
the record then follows the run's, saying what the sensor found.

The stat-level question (the dedup measurement) is asked only of the assets not recorded yet, so
after a home's first look this costs a set difference.
"""

from collections.abc import Iterable

import dagster as dg

from memory_assets.core.ops.upkeep.look import Look
from memory_assets.core.ops.upkeep.work import dedup_due
from memory_assets.core.settings import Settings

REPORTED_BY = "homes_sensor"
SEEN = ("transcripts", "consolidation_log", "vault_pages", "core_files", "tombstones")
"""The files of a home Dagster never writes: nothing for Dagster to do, ever."""
REASONS = {
    "archive_index": "the index already matches every daily log of the user's",
    "vault_index": "the index already matches every vault page of the user's",
    "core_file_index": "the index already matches every core file of the user's",
    "transcript_index": "the index already matches every transcript of the user's",
    "archival_memories": "no optimize due: the table as found counts as optimised",
    "legacy_rows_exported": "no legacy row in the user's table: nothing to export",
    "legacy_rows_deleted": "no legacy row in the user's table: nothing to delete",
    "ingested_turns": "no transcript session behind",
    "vault": "no day pending consolidation",
    "vault_lint": "no lint due",
    "superseded_retired": "the dream's hand-off is empty: nothing to retire",
    "index_swept": "the dream's hand-off is empty: nothing to sweep",
    "dedup_history": "the index has not changed since the last dedup measurement",
    "dedup_report": "the index has not changed since the last dedup measurement",
    "daily_logs": "no daily log yet",
    **{name: "a file the assistant, the dream and people write: seen by the homes sensor" for name in SEEN},
}


LEGACY = ("legacy_rows_exported", "legacy_rows_deleted")
FILE_ASSETS = {"vault_index": "notebook", "core_file_index": "core", "transcript_index": "transcript"}
"""The index asset of each group of files a look asks about."""


def idle_assets(look: Look) -> set[str]:
    """The assets a look at a home found nothing to do for (``archival_memories`` aside: the
    sensor decides it against what it reported)."""
    idle: set[str] = set()
    if not look.days.stale and not look.days_in_flight:  # no day out of date, none in flight
        idle.add("archive_index")
    if not (look.days.grown or look.days.current or look.days.stale):
        idle.add("daily_logs")  # no log yet
    for asset, group in FILE_ASSETS.items():
        if not look.files.get(group) and group not in look.files_in_flight:
            idle.add(asset)
    if look.transcripts is None or look.transcripts.current:
        idle.add("ingested_turns")
    if look.dream is not None and not look.dream.pending:
        idle.add("vault")  # no day to consolidate
    if not look.work.dream:
        idle.add("vault_lint")  # no lint due
    if look.legacy_rows is False:  # no table, or none in the assistant's format
        idle.update(LEGACY)
    if not look.work.reconcile:  # the dream's hand-off is empty
        idle |= {"superseded_retired", "index_swept"}
    return idle


def _stat_level(settings: Settings, wanted: set[str]) -> set[str]:
    idle: set[str] = set()
    if wanted & {"dedup_history", "dedup_report"} and not dedup_due(settings):
        idle |= {"dedup_history", "dedup_report"}
    return idle


def nothing_to_do(
    user: str, settings: Settings, idle: Iterable[str], reported: set[str]
) -> list[dg.AssetMaterialization]:
    """The materialisations, once each, of the assets with nothing to do for ``user``'s home:
    ``idle`` as the sensor found them, the files it never writes, and the stat-level question;
    ``reported`` (the home's record of those already made) is updated."""
    wanted = set(REASONS) - reported
    if not wanted:
        return []
    found = (set(idle) | set(SEEN) | _stat_level(settings, wanted)) & wanted
    reported |= found
    return [
        dg.AssetMaterialization(
            asset_key=name,
            partition=user,
            metadata={"reported_by": REPORTED_BY, "reason": REASONS[name]},
        )
        for name in sorted(found)
    ]
