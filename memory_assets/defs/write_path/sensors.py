"""The transcripts sensor: requests the write path while any transcript has turns not yet ingested.

Freshness again, as for the index sensors: the truth is the write path's own progress
(``.state/write_path.json``: the offset each session was ingested to), compared with each
transcript's size. A run is requested while a session is behind (or a crashed run left a turn
pending), never while a write-path run is in flight, and a failed run is requested again with
the same backoff as the index sensors. The cursor keeps only the requests in flight.
"""

import json

import dagster as dg

from memory_assets.core.capture.transcripts import list_sessions
from memory_assets.core.index.freshness import Cursor, Freshness
from memory_assets.core.settings import Settings
from memory_assets.defs.index.sensors import IN_FLIGHT, run_states
from memory_assets.defs.resources import MemoryHomeResource
from memory_assets.defs.write_path.jobs import write_path_job

ALL = "transcripts:*"


def sessions_behind(settings: Settings) -> tuple[list[str], str]:
    """The sessions whose transcript is longer than the write path has ingested, and the state
    the freshness check compares ("-" when none is behind and no turn is pending)."""
    path = settings.write_path_state_path
    try:
        progress = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except ValueError:
        progress = {}  # the run reports the unreadable file with the fix
    done = {s: int(v.get("offset", 0)) for s, v in (progress.get("sessions") or {}).items()}
    behind = sorted(
        session
        for session, file in list_sessions(settings.transcripts_dir)
        if file.stat().st_size > done.get(session, 0)
    )
    # One key for the whole job: "recorded" is the sessions behind, "desired" is none behind.
    return behind, "behind:" + ",".join(behind) if behind or progress.get("pending") else "-"


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
    behind, recorded = sessions_behind(settings)
    cursor = Cursor.load(context.cursor)
    freshness = Freshness(cursor, {ALL: recorded} if recorded != "-" else {}, run_states(context.instance))
    if freshness.up_to_date(ALL, None):
        return dg.SensorResult(
            skip_reason="every transcript turn has been through the write path", cursor=cursor.dump()
        )
    busy = context.instance.get_runs(
        dg.RunsFilter(job_name=write_path_job.name, statuses=list(IN_FLIGHT)), limit=1
    )
    attempt = freshness.due(ALL, None)
    if busy or attempt is None:
        return dg.SensorResult(
            skip_reason="a write_path run is in flight or backing off", cursor=cursor.dump()
        )
    run_key = f"write_path:{cursor.generation}"
    freshness.requested(ALL, None, run_key, attempt)
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(run_key=run_key, tags={"memory_assets/sessions_behind": ",".join(behind)[:200]})
        ],
        cursor=cursor.dump(),
    )
