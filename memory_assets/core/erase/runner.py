"""The erase, end to end: plan, journal, rewrite every place, purge the index, check every byte,
receipt (design §5.11).

``erase(settings, indexer, target, confirm=False)``: without ``confirm`` it only plans and
returns what it would remove (nothing is changed). With it, under the home's dream, reconcile and
ingestion locks (no dream, reconcile or transcript ingestion runs meanwhile; a turn written
meanwhile waits on the lock of the one file being replaced, then is kept):

1. ``planned``: the plan is written to the journal (``journal.py``);
2. ``logs``: the planned lines of the daily logs emptied, the logs' ledger told (``rewrite.erase_log``);
3. ``transcripts``: the needles cut out of every turn, the planned turns erased whole;
4. ``vault``: the planned bullets and every line holding a needle removed from the pages;
   ``MEMORY.md`` (both zones), ``persona.md`` and ``user.md`` the same;
5. ``state``: tombstones turned to keyed hashes (and the erased texts' own keyed-hash tombstones
   added), the confirmations, the hand-off, the recall log, the write path's in-flight turn and
   every other text file of ``.state/`` and ``memory/`` rid of the needles; the MEMORY.md
   refresh's candidates dropped;
6. ``index``: every rewritten file reindexed (its rows go: the index is a function of the
   files), the legacy rows holding a needle deleted, then the table compacted, its indexes that
   hold text built again and every older version pruned (``Indexer.purge``); the dedup files
   measured again;
7. ``verified``: every file under the home read, byte by byte, and every row of the table through
   LanceDB: the places that still hold a needle are named in the receipt (``left``);
8. the receipt appended to ``.state/erasures.jsonl`` (``receipt.py``), the journal removed.

Each step is idempotent, so a run killed at any point (failpoints ``erase.<step>``) is finished by
the next erase of the home, which first completes the journalled one. Refusals, before anything is
changed: a legacy backup of the index (a copy erase cannot rewrite: each is named, with the command
that removes it) or a tagged table version; a text that reaches more than the set share of the home
without ``force``; a home that is busy (a dream running).
"""

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_assets.core.audit.measurement import measure_home, write_measurement, write_report_html
from memory_assets.core.durable import LockTimeout, named_lock
from memory_assets.core.erase.cut import Needle
from memory_assets.core.erase.journal import Journal, read_journal
from memory_assets.core.erase.receipt import Receipt, append_receipt
from memory_assets.core.erase.rewrite import (
    Needles,
    erase_any_text_file,
    erase_core_file,
    erase_jsonl_records,
    erase_lines_file,
    erase_log,
    erase_page,
    erase_pending_turn,
    erase_tombstones,
    erase_transcript,
    now_iso,
)
from memory_assets.core.erase.scope import EraseError, Plan, Request, plan_erase
from memory_assets.core.failpoints import failpoint
from memory_assets.core.index.best_facts import drop_candidates
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.reach import ReachError, check_text, reach
from memory_assets.core.index.target import Target
from memory_assets.core.knowledge.keyed_hash import KEY_NAME, read_key
from memory_assets.core.knowledge.memory_md import manual_lines
from memory_assets.core.knowledge.recall_log import rotated
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.search.retrieval import flush_recalls
from memory_assets.core.settings import Settings
from memory_assets.core.sources import CORE_FILES, LEGACY_SOURCE_TYPE, IndexKey

LOCK_WAIT_S = 30.0
_SKIP_STATE = {KEY_NAME, "erasures.jsonl", "erase_journal.json", "tombstones.jsonl"}


@dataclass
class _Run:
    settings: Settings
    indexer: Indexer
    journal: Journal
    key: bytes
    changed_keys: set[str] = field(default_factory=set)


def erase(
    settings: Settings,
    indexer: Indexer,
    target: Target,
    *,
    confirm: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Plan (``confirm`` False: the dry run) or carry out an erase of ``target``; see the module
    docstring."""
    _check_target(settings, target, force)
    request = Request.of(target)
    _refuse_copies(settings, indexer)
    if not confirm:
        pending = read_journal(settings.erase_journal_path)
        plan = plan_erase(settings, indexer.store, request)
        return {
            "dry_run": True,
            "would_remove": plan.counts(),
            "files": _planned_files(settings, plan),
            "near_matches_left": plan.near,
            "unfinished_erase": pending.id if pending is not None else None,
            "confirm": 'nothing was changed; run again with --yes (REST: "confirm": true) to erase',
        }
    try:
        with (
            named_lock(f"dream:{settings.home}", timeout=LOCK_WAIT_S),
            named_lock(f"reconcile:{settings.home}", timeout=LOCK_WAIT_S),
            named_lock(f"write-path-ingest:{settings.home}", timeout=LOCK_WAIT_S),
        ):
            finished = None
            pending = read_journal(settings.erase_journal_path)
            if pending is not None:
                finished = _carry_out(settings, indexer, pending).to_dict()
            plan = plan_erase(settings, indexer.store, request)
            journal = Journal.start(settings.erase_journal_path, plan, now_iso())
            failpoint("erase.planned")
            out = _carry_out(settings, indexer, journal).to_dict()
            if finished is not None:
                out["finished_first"] = finished
            return out
    except LockTimeout as exc:
        raise EraseError(
            f"the home is busy (a dream, reconcile or transcript ingestion holds it: {exc}); nothing was "
            "changed. Try again in a minute"
        ) from exc


def resume(settings: Settings, indexer: Indexer) -> dict[str, Any] | None:
    """Finish an erase a crash left (None: there is none)."""
    with (
        named_lock(f"dream:{settings.home}", timeout=LOCK_WAIT_S),
        named_lock(f"reconcile:{settings.home}", timeout=LOCK_WAIT_S),
        named_lock(f"write-path-ingest:{settings.home}", timeout=LOCK_WAIT_S),
    ):
        pending = read_journal(settings.erase_journal_path)
        return _carry_out(settings, indexer, pending).to_dict() if pending is not None else None


def _check_target(settings: Settings, target: Target, force: bool) -> None:
    if len(target.given()) != 1:
        raise EraseError("erase takes exactly one of a text, --id ROW, --chat ID and --day YYYY-MM-DD")
    if target.chat is not None and not target.chat.strip():
        raise EraseError("erase --chat needs a chat id (search hits carry it as `chat`)")
    if target.text is not None:
        try:
            check_text(target.text, "erase")
            found = reach(settings, target.text)
        except ReachError as exc:
            raise EraseError(str(exc)) from exc
        if not found.places:
            raise EraseError(
                "no line or turn of this home holds the text (case and spacing aside); nothing "
                "to erase. `memory-assets search` shows what the memory holds"
            )
        if found.too_wide(settings.forget_max_share) and not force:
            raise EraseError(
                f"erase: the text is held by {len(found.places)} of the home's {found.total} lines and turns "
                f"({found.share:.0%}, over MEMORY_FORGET_MAX_SHARE={settings.forget_max_share:.0%}); nothing "
                "was changed. Give a longer, more specific text, or pass --yes --force to erase it everywhere"
            )


def _refuse_copies(settings: Settings, indexer: Indexer) -> None:
    """Copies of the index erase cannot rewrite: a legacy backup's directory, a tagged version."""
    problems: list[str] = []
    if settings.index_is_local:
        base = Path(settings.index_uri)
        for copy in sorted(base.glob("*.lance.*")) if base.is_dir() else []:
            problems.append(f"{copy} (a legacy backup's copy of the index)")
    table = indexer.store.table() if indexer.store.exists() else None
    if table is not None:
        for tag in sorted(table.tags.list()):
            problems.append(f"the table's version tagged {tag!r} (a legacy backup)")
    if problems:
        raise EraseError(
            "erase cannot reach these copies of the index, which may hold the text: "
            + "; ".join(problems)
            + ". Nothing was changed. Remove each with `memory-assets legacy forget-backup NAME --remove-copy` "
            "(or restore and forget it), then erase again"
        )


def _planned_files(settings: Settings, plan: Plan) -> list[str]:
    files = {f"memory/archive/{name}" for name in plan.log_lines}
    files |= {t.path for t in plan.turns}
    files |= {f"notebook/{rel}" for rel in plan.bullets}
    return sorted(files)


def _carry_out(settings: Settings, indexer: Indexer, journal: Journal) -> Receipt:
    start = time.perf_counter()
    run = _Run(settings, indexer, journal, read_key(settings.state_dir, create=True) or b"")
    needles = Needles(journal.plan)
    for name, step in (
        ("logs", _logs),
        ("transcripts", _transcripts),
        ("vault", _vault),
        ("state", _state),
        ("index", _index),
    ):
        if name not in journal.done:
            journal.step(name, step(run, needles))
        failpoint(f"erase.{name}")
    left = _verify(settings, indexer, journal.plan)
    failpoint("erase.verified")
    receipt = Receipt.of(journal, left, run.key, time.perf_counter() - start)
    append_receipt(settings.state_dir, receipt)
    journal.finish()
    return receipt


def _logs(run: _Run, needles: Needles) -> dict[str, Any]:
    from memory_assets.core.capture.daily_log import list_logs

    plan, settings = run.journal.plan, run.settings
    out: dict[str, int] = {}
    for _, path in list_logs(settings.archive_dir):
        n = erase_log(settings.memory_dir, path, plan.log_lines.get(path.name, []), needles, run.key)
        if n:
            out[f"memory/archive/{path.name}"] = n
            failpoint("erase.log_rewritten")
    return {"files": out}


def _transcripts(run: _Run, needles: Needles) -> dict[str, Any]:
    from memory_assets.core.capture.transcripts import list_transcripts

    plan, settings = run.journal.plan, run.settings
    out: dict[str, int] = {}
    for rel, path in list_transcripts(settings.transcripts_dir):
        where = f"transcripts/{rel}"
        n = erase_transcript(path, [t for t in plan.turns if t.path == where], needles)
        if n:
            out[where] = n
    return {"files": out}


def _vault(run: _Run, needles: Needles) -> dict[str, Any]:
    plan, settings = run.journal.plan, run.settings
    out: dict[str, int] = {}
    for rel in list_pages(settings.notebook_dir):
        n = erase_page(settings.notebook_dir / rel, plan.bullets.get(rel, []), needles)
        if n:
            out[f"notebook/{rel}"] = n
    own = 0
    for name in CORE_FILES:
        path = settings.core_file_path(name)

        def manual(lines: list[str], path: Path = path, name: str = name) -> set[int]:
            if name != "MEMORY.md":
                return set(range(1, len(lines) + 1))
            return {n for n, _ in manual_lines(path, lambda _line: True)}

        removed, mine = erase_core_file(path, needles, manual)
        if removed:
            out[f"memory/{name}"] = removed
            own += mine
    return {"files": out, "your_own_lines": own}


def _state(run: _Run, needles: Needles) -> dict[str, Any]:
    plan, settings = run.journal.plan, run.settings
    state = settings.state_dir
    out: dict[str, int] = {}

    def count(where: str, n: int) -> None:
        if n:
            out[where] = out.get(where, 0) + n

    count(
        "notebook/.state/tombstones.jsonl", erase_tombstones(settings.tombstones_path, needles, plan, run.key)
    )
    count(
        "notebook/.state/confirmations.jsonl",
        erase_jsonl_records(settings.confirmations_path, needles, ("content", "matched")),
    )
    count("notebook/.state/superseded.txt", erase_lines_file(settings.superseded_path, needles))
    # This process's searches log their recalls off the caller's path: one made before the erase
    # could land after the recall log was scrubbed and bring the text back. They land first.
    flush_recalls()
    for path in (settings.recall_log_path, rotated(settings.recall_log_path)):
        count(f"notebook/.state/{path.name}", erase_jsonl_records(path, needles, ("snippet",)))
    count("notebook/.state/write_path.json", erase_pending_turn(state / "write_path.json", needles))
    drop_candidates(state)
    handled = {
        settings.tombstones_path,
        settings.confirmations_path,
        settings.superseded_path,
        settings.recall_log_path,
        rotated(settings.recall_log_path),
    }
    for folder in (state, settings.memory_dir):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            if path in handled or path.name in _SKIP_STATE or path.parent == settings.archive_dir:
                continue
            count(str(path.relative_to(settings.home)), erase_any_text_file(path, needles))
    return {"files": out}


def _index(run: _Run, needles: Needles) -> dict[str, Any]:
    settings, indexer = run.settings, run.indexer
    done = run.journal.done
    keys: set[str] = set()
    for step in ("logs", "transcripts", "vault"):
        for where in done.get(step, {}).get("files", {}):
            key = _key_of(where)
            if key is not None:
                keys.add(key)
    for key in sorted(keys):
        indexer.reindex_key(key)
    legacy = 0
    if indexer.store.exists():
        rows = indexer.store.scan(["id", "content", "source_type"]).to_pylist()
        stale = [
            r["id"]
            for r in rows
            if (r.get("source_type") in (None, LEGACY_SOURCE_TYPE))
            and needles.found(str(r.get("content") or ""))
        ]
        legacy = indexer.delete_rows(stale)
        indexer.sweep()  # anything the rewrite reached that the keys missed
        indexer.purge()
    failpoint("erase.purged")
    remeasured = False
    if settings.dedup_dir.is_dir() and indexer.store.exists():
        paths = write_measurement(measure_home(settings, indexer.store), settings.dedup_dir, source="erase")
        if (settings.dedup_dir / "report.html").exists():
            write_report_html(settings.dedup_dir)
        remeasured = bool(paths)
    return {"files_reindexed": len(keys), "legacy_rows_deleted": legacy, "dedup_measured_again": remeasured}


def _key_of(where: str) -> str | None:
    parts = where.split("/", 1)
    if where.startswith("memory/archive/"):
        return str(IndexKey.for_log(where.rsplit("/", 1)[1]))
    if where.startswith("transcripts/"):
        return str(IndexKey.for_transcript(parts[1]))
    if where.startswith("notebook/"):
        return str(IndexKey.for_page(parts[1]))
    if where.startswith("memory/") and where.rsplit("/", 1)[1] in CORE_FILES:
        return str(IndexKey.for_core_file(where.rsplit("/", 1)[1]))
    return None


def _verify(settings: Settings, indexer: Indexer, plan: Plan) -> list[str]:
    """The places that still hold one of the plan's needles: every file under the home, read byte
    by byte, and every row of the table's retained versions read through LanceDB."""
    needles = [Needle(n) for n in plan.needles]
    left: list[str] = []
    skip = {settings.erase_journal_path}
    for path in sorted(p for p in settings.home.rglob("*") if p.is_file() and not p.is_symlink()):
        if path in skip:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            left.append(f"{path.relative_to(settings.home)} (unreadable)")
            continue
        if any(n.in_bytes(data) for n in needles):
            left.append(str(path.relative_to(settings.home)))
    for turn in plan.turns:
        if turn.whole and not _turn_erased(settings.home / turn.path, turn.offset):
            left.append(f"{turn.path} line {turn.line} (a turn to erase whole)")
    if indexer.store.exists():
        for version, contents in indexer.store.retained_contents():
            if any(n.found(c) for c in contents for n in needles):
                left.append(f"index version {version}")
    return left


def _turn_erased(path: Path, offset: int) -> bool:
    from memory_assets.core.capture.transcripts import read_turns
    from memory_assets.core.erase.cut import ERASED

    if not path.is_file():
        return True
    for turn in read_turns(path, cap=None).turns:
        if turn.offset == offset:
            return turn.user.strip() in ("", ERASED)
    return True
