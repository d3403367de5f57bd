"""The transcripts sensor: requests the write path while any transcript has turns not yet ingested.

Freshness again, as for the index sensors: the truth is the write path's own progress
(``.state/write_path.json``: the offset each session was ingested to), compared with each
transcript's size, asked as the homes planner asks it (``core/ops/upkeep/look.transcripts_look``).
A run is requested while a session is behind (or a crashed run left a turn pending), never while a
write-path run is in flight, and a failed run is requested again with the same backoff as the
index sensors. The cursor keeps only the requests in flight.
"""

import dagster as dg

from memory_assets.core.home import Home
from memory_assets.core.index.freshness import Cursor
from memory_assets.core.ops.upkeep.look import transcripts_look
from memory_assets.defs.automation import in_flight, single_home_sensor
from memory_assets.defs.index.sensors import run_states
from memory_assets.defs.write_path.jobs import write_path_job


@single_home_sensor(
    [write_path_job],
    "Requests the write_path job while a transcript has turns the write path has not ingested "
    "(or a crashed run left one pending); a failed run is requested again with backoff.",
    folder=lambda home: home.settings.transcripts_dir,
)
def transcripts_sensor(context: dg.SensorEvaluationContext, home: Home) -> dg.SensorResult:
    cursor = Cursor.load(context.cursor)
    transcripts = transcripts_look(home.settings, cursor, run_states(context.instance))
    if transcripts.current:
        return dg.SensorResult(
            skip_reason="every transcript turn has been through the write path", cursor=cursor.dump()
        )
    if in_flight(context.instance, write_path_job) or transcripts.attempt is None:
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
