"""The Dagster instance this project runs on: ``$DAGSTER_HOME/dagster.yaml``, written by
``memory-assets dagster-yaml`` (and by ``make setup``), never kept by hand.

What it holds (docs/guides/scale.md shows the file, and the PostgreSQL variant in full):

* ``telemetry: enabled: false``;
* the run queue: ``max_concurrent_runs`` (default 1, for a 2-core machine), and tag concurrency
  limits with ``applyLimitPerUniqueValue``, each at 1, so two runs never write one index at once:

  - ``dagster/partition``: never two runs of one partition at once. Dagster puts it on every run
    of one partition, whatever launched it: a sensor's or a schedule's request, a backfill's run,
    a launch from the UI. For a single home it is a day (a sensor's request and a backfill of
    that day queue instead of racing); with many homes (``MEMORY_ROOT``) every asset of a home is
    partitioned by user and none has a backfill policy (``defs/partitions.py``), so every run
    that touches a user's home, a backfill over many users included (one run per user), carries
    ``dagster/partition=<user>``: one run per user at a time. A run over a range of partitions
    carries no such tag (only ``dagster/asset_partition_range_start``/``_end``); with many homes
    a range over several users is refused when the run starts (``defs/resources.py``);
  - ``user``: a tag a run launched by hand may carry with many homes (beside its partition):
    one run per user at a time for those too. Neither tag names a user on a single home's runs,
    nor an upkeep batch's (it works on many users, each under the user's exclusion instead:
    ``core/ops/upkeep/exclusion.py``);

  the limits hold the runs the instance's queue launches (the daemon's run coordinator); a run
  executed in the caller's process (``dagster asset materialize``, ``execute_in_process``) never
  enters the queue, and the indexer's key locks (design §8.1) still order its writes;

* ``storage``: SQLite under ``$DAGSTER_HOME`` (Dagster's default, when omitted) or PostgreSQL
  through ``dagster-postgres``. The PostgreSQL block names environment variables only
  (``DAGSTER_PG_HOST``, ``DAGSTER_PG_PORT``, ``DAGSTER_PG_USERNAME``, ``DAGSTER_PG_PASSWORD``,
  ``DAGSTER_PG_DB``), so the file holds no secret, and sets ``scheme: postgresql+psycopg2``:
  with SQLAlchemy 2.1 a bare ``postgresql://`` means the psycopg 3 driver, which is not installed;
  dagster-postgres drives psycopg2.
"""

from dataclasses import dataclass

STORAGES = ("sqlite", "postgres")
PG_VARIABLES = {
    "hostname": "DAGSTER_PG_HOST",
    "port": "DAGSTER_PG_PORT",
    "username": "DAGSTER_PG_USERNAME",
    "password": "DAGSTER_PG_PASSWORD",
    "db_name": "DAGSTER_PG_DB",
}
PG_SCHEME = "postgresql+psycopg2"
USER_TAG = "user"
"""The run tag naming the user whose home a run works on (many homes)."""
TAG_LIMITS = (
    (
        "dagster/partition",
        "never two runs of one partition at once: one home's day; many homes: a user, any run",
    ),
    (USER_TAG, "many homes: one run per user at a time (a run launched with the user tag)"),
)


@dataclass(frozen=True)
class InstanceConfig:
    """What varies between deployments; everything else is fixed by the project."""

    storage: str = "sqlite"
    max_concurrent_runs: int = 1

    def __post_init__(self) -> None:
        if self.storage not in STORAGES:
            raise ValueError(f"storage {self.storage!r}: choose one of {', '.join(STORAGES)}")
        if self.max_concurrent_runs < 1:
            raise ValueError(f"max_concurrent_runs {self.max_concurrent_runs}: must be 1 or more")


def instance_yaml(config: InstanceConfig = InstanceConfig()) -> str:
    """The text of ``dagster.yaml`` for ``config`` (see the module docstring)."""
    lines = [
        "# Written by `memory-assets dagster-yaml` (docs/guides/scale.md); edit the command's options,",
        "# not this file.",
        "telemetry:",
        "  enabled: false",
        "concurrency:",
        "  runs:",
        f"    max_concurrent_runs: {config.max_concurrent_runs}",
        "    tag_concurrency_limits:",
    ]
    for key, why in TAG_LIMITS:
        lines += [
            f"      # {why}",
            f'      - key: "{key}"',
            "        value:",
            "          applyLimitPerUniqueValue: true",
            "        limit: 1",
        ]
    if config.storage == "postgres":
        lines += [
            "# Runs, events and schedules in PostgreSQL (dagster-postgres). Only variable names here:",
            "# export them where the webserver, the daemon and the runs start.",
            "storage:",
            "  postgres:",
            "    postgres_db:",
            *(f"      {field}:\n        env: {variable}" for field, variable in PG_VARIABLES.items()),
            f"      scheme: {PG_SCHEME}",
        ]
    return "\n".join(lines) + "\n"
