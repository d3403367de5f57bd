"""The transcripts sensor: requests the write path while any transcript has turns not yet ingested.

Freshness again, as for the index sensors: the truth is the write path's own progress
(``.state/write_path.json``: the offset each session was ingested to), compared with each
transcript's size, asked as the homes planner asks it (``core/ops/upkeep/look.transcripts_look``).
A run is requested while a session is behind (or a crashed run left a turn pending), never while a
write-path run is in flight, and a failed run is requested again with the same backoff as the
index sensors. The cursor keeps only the requests in flight.
"""

import dagster as dg

from memory_assets.core.index.freshness import Cursor
from memory_assets.core.ops.upkeep.look import transcripts_look
from memory_assets.defs.index.sensors import IN_FLIGHT, run_states
from memory_assets.defs.resources import MemoryHomeResource
from memory_assets.defs.write_path.jobs import write_path_job


@dg.sensor(
    job=write_path_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests the write_path job while a transcript has turns the write path has not ingested "
    "(or a crashed run left one pending); a failed run is requested again with backoff.",
)
def transcripts_sensor(context: dg.SensorEvaluationContext, memory: MemoryHomeResource) -> dg.SensorResult:
    settings = memory.settings()
    if not settings.transcripts_dir.is_dir():
        return dg.SensorResult(
            skip_reason=f"{settings.transcripts_dir} does not exist; run `memory-assets init`"
        )
    cursor = Cursor.load(context.cursor)
    transcripts = transcripts_look(settings, cursor, run_states(context.instance))
    if transcripts.current:
        return dg.SensorResult(
            skip_reason="every transcript turn has been through the write path", cursor=cursor.dump()
        )
    busy = context.instance.get_runs(
        dg.RunsFilter(job_name=write_path_job.name, statuses=list(IN_FLIGHT)), limit=1
    )
    if busy or transcripts.attempt is None:
        return dg.SensorResult(
            skip_reason="a write_path run is in flight or backing off", cursor=cursor.dump()
        )
    run_key = f"write_path:{cursor.generation}"
    transcripts.request(run_key)
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=run_key, tags={"memory_assets/sessions_behind": ",".join(transcripts.behind)[:200]}
            )
        ],
        cursor=cursor.dump(),
    )
