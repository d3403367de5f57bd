"""Setting up and describing a memory home (``init`` and ``status``)."""

from pathlib import Path

from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.index.store import BrokenTableError, MemoryStore
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.knowledge.vault import bootstrap_vault, list_pages
from memory_assets.core.knowledge.watermark import WatermarkError, read_watermark
from memory_assets.core.settings import Settings
from memory_assets.core.sources import LEGACY_SOURCE_TYPE


def init_home(settings: Settings) -> list[Path]:
    """Idempotent: creates what is missing (folders, vault skeleton), never overwrites a file.
    Safe when two processes (or threads) initialise one home at once: what the other created
    first is left as it is."""
    created: list[Path] = []
    dirs = [settings.memory_dir, settings.archive_dir, settings.transcripts_dir]
    if settings.index_is_local:
        dirs.append(Path(settings.index_uri))
    for path in dirs:
        if not path.exists():
            try:
                path.mkdir(parents=True)
                created.append(path)
            except FileExistsError:
                pass
    created += bootstrap_vault(settings.notebook_dir)
    return created


def home_status(settings: Settings, store: MemoryStore) -> dict[str, object]:
    logs = list_logs(settings.archive_dir)
    try:
        wm = read_watermark(settings.log_md, newest_log=logs[-1][0] if logs else None)
        wm_error = None
    except WatermarkError as exc:  # reported, not fatal: status describes the home as it is
        wm, wm_error = None, str(exc)
    try:
        index = _index_status(store)
    except BrokenTableError as exc:  # reported, not fatal: the rest of the home is still described
        index = {"index_error": str(exc)}
    return {
        "home": str(settings.home),
        "profile": settings.profile,
        "memory_dir": str(settings.memory_dir),
        "notebook_dir": str(settings.notebook_dir),
        "index_uri": settings.index_uri,
        "daily_logs": len(logs),
        "first_log": logs[0][0].isoformat() if logs else None,
        "last_log": logs[-1][0].isoformat() if logs else None,
        "watermark": wm.isoformat() if wm else None,
        **({"watermark_error": wm_error} if wm_error else {}),
        "pending_logs": sum(1 for d, _ in logs if wm is None or d > wm),
        "vault_pages": len(list_pages(settings.notebook_dir)),
        "tombstones": len(read_tombstones(settings.tombstones_path).contents),
        **index,
        **_dream_status(settings, wm_error),
    }


def _index_status(store: MemoryStore) -> dict[str, object]:
    """The index's part of ``status``. A damaged table (``BrokenTableError``: files missing,
    changed since written, or unreadable) raises, naming what is wrong and the fix."""
    stats = store.stats()
    by_type: dict[str, int] = {}
    if stats.legacy:  # read as it is: reads never migrate (run `memory-assets migrate`)
        by_type["unmigrated"] = stats.rows
    else:
        for source_type in store.scan(["source_type"]).column("source_type").to_pylist():
            key = source_type or LEGACY_SOURCE_TYPE
            by_type[key] = by_type.get(key, 0) + 1
    return {
        "index_rows": stats.rows,
        "index_rows_by_source_type": dict(sorted(by_type.items())),
        "index_fragments": stats.fragments,
        "index_version": stats.version,
        "index_versions_kept": stats.versions,
        "index_needs_migration": stats.legacy,
        "embedding_model": store.model(),
        "vector_width": store.vector_width(),
    }


def _dream_status(settings: Settings, wm_error: str | None = None) -> dict[str, object]:
    """The dream's part of ``status``: what it would do now and why, read-only. A refused
    watermark makes the next dream ``refused``, with the error as its reason."""
    from datetime import UTC, datetime

    from memory_assets.core.dream.batch import revisit_queue
    from memory_assets.core.dream.runner import next_dream

    if wm_error is not None:
        return {
            "pending_days": [],
            "unconsolidated_days": [],
            "unconsolidated_why": {},
            "unconsolidated_given_up_at": None,
            "next_dream": {"kind": "refused", "reason": wm_error, "days": []},
            "revisit_queue": revisit_queue(settings, datetime.now(UTC).date()),
        }
    nxt = next_dream(settings)
    return {
        "pending_days": nxt["pending"],
        "unconsolidated_days": nxt["unconsolidated_days"],
        # why each skipped day was skipped, and when the dream gave up on them (tried again once the
        # vault changes, or a day later: core/dream/pacing.py)
        "unconsolidated_why": nxt["unconsolidated_why"],
        "unconsolidated_given_up_at": nxt["unconsolidated_given_up_at"],
        "next_dream": {"kind": nxt["kind"], "reason": nxt["reason"], "days": nxt["days"]},
        "revisit_queue": revisit_queue(settings, datetime.now(UTC).date()),
    }
