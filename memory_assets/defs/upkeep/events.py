"""What a batch reports for each of its users: the user's partition of every asset a step
materialised, with the metadata the asset's own run would give it, and the assets a failed step
did not materialise.

Per step (``core/ops/upkeep/home_upkeep.py``) and asset, the same metadata function the asset
uses (``defs/*/assets.py``):

| step | assets |
|---|---|
| ingest | ``ingested_turns``, and ``daily_logs`` when it wrote to a log |
| index | ``archive_index``, ``vault_index``, ``core_file_index``, ``transcript_index``, by the keys' kind |
| dream | ``vault`` for each tick that ingested or skipped, ``vault_lint`` for a lint |
| reconcile | ``superseded_retired`` (and ``tombstones`` when it added some), ``index_swept`` |
| dedup | ``dedup_report``, ``dedup_history`` |
| optimize | ``archival_memories`` |

``work_assets`` names the assets a member's hints ask for (the homes sensor never records them as
having nothing to do while the member's batch is pending; for the dream, the look's own findings
already keep ``vault`` or ``vault_lint`` unrecorded when it has work).
"""

from collections.abc import Iterable

import dagster as dg

from memory_assets.core.dream.runner import DreamResult
from memory_assets.core.index.indexer import SweepResult
from memory_assets.core.ops.upkeep.batch import UserUpkeep
from memory_assets.core.ops.upkeep.home_upkeep import StepResult
from memory_assets.core.ops.upkeep.work import Work
from memory_assets.core.sources import IndexKey
from memory_assets.defs.dedup.assets import history_metadata, report_metadata
from memory_assets.defs.dream.assets import dream_metadata, lint_metadata
from memory_assets.defs.index.assets import days_metadata, files_metadata, optimize_metadata
from memory_assets.defs.reconcile.assets import retire_metadata, swept_metadata
from memory_assets.defs.text_free import TextFree
from memory_assets.defs.write_path.assets import ingest_metadata

INDEX_ASSETS = {
    "archive": "archive_index",
    "notebook": "vault_index",
    "core": "core_file_index",
    "transcript": "transcript_index",
}
STEP_ASSETS = {
    "ingest": ("ingested_turns",),
    "index": tuple(INDEX_ASSETS.values()),
    "dream": ("vault",),
    "reconcile": ("superseded_retired", "index_swept"),
    "dedup": ("dedup_report", "dedup_history"),
    "optimize": ("archival_memories",),
}
"""Every asset a step may materialise (a failed step's are those its hints named, or these)."""


def _index_groups(keys: Iterable[str]) -> set[str]:
    return {INDEX_ASSETS[IndexKey.parse(k).group] for k in keys}


def work_assets(work: Work) -> set[str]:
    """The assets a member with these hints may materialise."""
    names: set[str] = set()
    for step, assets in STEP_ASSETS.items():
        if step == "dream" and step not in work.retry:
            continue  # the look's own idle findings say which of vault and vault_lint has work
        if step == "index" and work.keys and step not in work.retry:
            names |= _index_groups(work.keys)
        elif work.wants(step):
            names |= set(assets)
    return names


def planned_assets(work: Work) -> set[str]:
    """What a batch reports as planned for a member as it starts on it, so the user's partitions
    show as materialising: what the user is waiting on, the catch-up of its keys' kinds, the
    write path over its transcripts and the dream's ``vault``. The maintenance around them (the
    reconcile, the dedup measurement, the optimize) is not announced: each planned partition is
    one more event in the instance's log, paid by the batch for every user (design §11.4); a
    failed step's assets are reported planned when it fails."""
    names = _index_groups(work.keys) if work.keys else set()
    if work.wants("ingest"):
        names.add("ingested_turns")
    if work.wants("dream"):
        names.add("vault")
    return names


def _materialisation(asset: str, user: str, metadata: dict[str, object]) -> dg.AssetMaterialization:
    return dg.AssetMaterialization(asset_key=asset, partition=user, metadata=metadata)


def _index(user: str, sweep: SweepResult) -> list[dg.AssetMaterialization]:
    by_asset: dict[str, SweepResult] = {}
    for result in sweep.files:
        asset = INDEX_ASSETS[IndexKey.parse(result.key).group]
        part = by_asset.setdefault(asset, SweepResult(rows=sweep.rows))
        part.add(result)
        part.seconds += result.seconds
    events = []
    for asset, part in sorted(by_asset.items()):
        if asset == "archive_index":
            metadata = days_metadata(part)
        else:
            metadata = files_metadata(part, transcripts=asset == "transcript_index")
        events.append(_materialisation(asset, user, metadata))
    return events


def _dream(user: str, results: list[DreamResult], free: TextFree) -> list[dg.AssetMaterialization]:
    events = []
    for result in results:
        if result.kind == "lint" and result.ok:
            events.append(_materialisation("vault_lint", user, lint_metadata(result, free)))
        elif result.kind in ("ingest", "skip") and result.ok:
            events.append(_materialisation("vault", user, dream_metadata(result, free)))
    return events


def step_events(user: str, step: StepResult, free: TextFree) -> list[dg.AssetMaterialization]:
    """The materialisations of one successful step (``free``: the user's home's, ``text_free.py``)."""
    result = step.result
    if step.step == "ingest":
        events = [_materialisation("ingested_turns", user, ingest_metadata(result))]
        if result.days:
            events.append(_materialisation("daily_logs", user, {"written_by": "write_path"}))
        return events
    if step.step == "index":
        return _index(user, result)
    if step.step == "dream":
        return _dream(user, result, free)
    if step.step == "reconcile":
        events = [_materialisation("superseded_retired", user, retire_metadata(result))]
        if result.retired:
            events.append(_materialisation("tombstones", user, {"added": result.retired}))
        events.append(_materialisation("index_swept", user, swept_metadata(result.sweep)))
        return events
    if step.step == "dedup":
        return [
            _materialisation("dedup_report", user, report_metadata(result.measurement, result.paths, free)),
            _materialisation("dedup_history", user, history_metadata(result.history())),
        ]
    if step.step == "optimize":
        return [_materialisation("archival_memories", user, optimize_metadata(result))]
    raise ValueError(f"no events for step {step.step!r}")


def failed_assets(step: StepResult, work: Work) -> list[str]:
    """The assets a failed step did not materialise: a failed dream's ``vault`` (or ``vault_lint``),
    the kinds of the catch-up's keys, every asset of the other steps."""
    if step.step == "index" and work.keys and "index" not in work.retry:
        return sorted(_index_groups(work.keys))
    if step.step == "dream":
        results = step.result or []
        return ["vault_lint"] if results and results[-1].kind == "lint" else ["vault"]
    return list(STEP_ASSETS[step.step])


def user_events(
    entry: UserUpkeep, work: Work, free: TextFree
) -> tuple[list[dg.AssetMaterialization], list[str]]:
    """A member's materialisations, and the assets its failed steps (or a home that could not be
    opened: every asset its hints named) did not materialise."""
    events: list[dg.AssetMaterialization] = []
    failed: list[str] = []
    for step in entry.steps:
        if step.ok:
            events += step_events(entry.user, step, free)
        else:
            failed += failed_assets(step, work)
    if entry.error:
        failed += sorted(work_assets(work))
    return events, sorted(set(failed))
