"""The dream's pacing: a sensor that decides from persisted state only whether to dream now.

It reads ``dream_state.json`` and ``log.md`` (never in-memory counters, so a restarted daemon
decides exactly as a running one) and asks ``pacing.decide``, as the homes planner asks it
(``core/ops/upkeep/look.dream_pacing``): an ingest or a skip requests the
``dream`` job over the batch's days (one run for the batch), a lint requests ``dream_lint``.
Nothing is requested while a dream run is in flight. Run keys carry the attempt (the batch's
failure count and last attempt time), so a retry is a new run and a re-evaluated tick is not.
"""

import dagster as dg

from memory_assets.core.dream.pacing import IDLE, LINT
from memory_assets.core.home import Home
from memory_assets.core.ops.upkeep.look import dream_pacing
from memory_assets.defs.automation import in_flight, single_home_sensor
from memory_assets.defs.dream.jobs import dream_job, dream_lint_job
from memory_assets.defs.partitions import day_range_tags, register_days_requests


@single_home_sensor(
    [dream_job, dream_lint_job],
    "The dream's pacing from persisted state: a batch when days are pending past the watermark "
    "(at once when behind; else after min_hours with min_facts pending), a skip after max_retries failures, "
    "a lint when caught up and due.",
    folder=lambda home: home.settings.notebook_dir,
    interval_s=300,
)
def dream_sensor(context: dg.SensorEvaluationContext, home: Home) -> dg.SensorResult:
    for job in (dream_job, dream_lint_job):
        if in_flight(context.instance, job):
            return dg.SensorResult(skip_reason=f"a {job.name} run is in flight")
    state, decision = dream_pacing(home.settings)
    if decision.kind == IDLE:
        return dg.SensorResult(skip_reason=decision.reason)
    attempt = f"{state.failures.get(decision.batch_key, 0)}:{state.last_attempt_at.isoformat() if state.last_attempt_at else '-'}"
    if decision.kind == LINT:
        last = state.last_lint_attempt_at.isoformat() if state.last_lint_attempt_at else "-"
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(
                    run_key=f"lint:{last}",
                    job_name=dream_lint_job.name,
                    tags={"memory_assets/reason": decision.reason[:200]},
                )
            ]
        )
    # The batch's days have partitions (daily_log_sensor adds them); added here too if it has not yet.
    registers = register_days_requests(context.instance, decision.days)
    return dg.SensorResult(
        dynamic_partitions_requests=registers,
        run_requests=[
            dg.RunRequest(
                run_key=f"dream:{decision.batch_key}:{attempt}",
                job_name=dream_job.name,
                tags={
                    **day_range_tags(decision.days[0], decision.days[-1]),
                    "memory_assets/decision": decision.kind,
                    "memory_assets/reason": decision.reason[:200],
                },
            )
        ],
    )
