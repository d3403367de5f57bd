"""The per-turn MEMORY.md writer: after a turn with an important fact, the generated zone lists
the index's best facts (design §4.8, step 6 of §5.6).

``refresh_from_index`` is deterministic, in three steps after one rule:

* **Stand down** (write nothing) once the vault has any ``3_Personal/`` page: the dream's
  promoter (``dream/promote.py``) owns the generated zone from then on. Without an index yet,
  nothing is written either.
* **Read** the store's user's fact rows, tombstoned ones left out, through the index's read
  model (``index/best_facts.read_user_facts``, which keeps the best candidates between turns in
  ``.state/memory_md_candidates.json``).
* **Render** them best first by importance then recency, one bullet per fact under a ``##``
  heading per category, at most ``max_lines`` lines (``memory_md.rank_facts``, ``render_facts``),
  and **write** the generated zone only (``memory_md.write_generated_zone``: the manual zone is
  copied byte for byte; an entirely manual file is refused, not overwritten).

Each outcome is a ``MemoryMdResult`` (stood_down | no_index | a writer's outcome), never an error
for a stand-down or refusal. ``refresh_memory_md`` is the write path's call: the result in words,
and any failure reported as text, so MEMORY.md never fails a turn whose facts are already logged.
"""

from pathlib import Path

from memory_assets.core.home import Home
from memory_assets.core.index.best_facts import CANDIDATES_STATE, read_user_facts
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.memory_md import (
    DEFAULT_MAX_LINES,
    MemoryMdResult,
    rank_facts,
    render_facts,
    write_generated_zone,
)
from memory_assets.core.knowledge.personal_pages import PERSONAL_DIR, list_personal_pages
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.settings import Settings

REFRESH_GENERATOR = "refresh_from_index"


def refresh_from_index(
    settings: Settings,
    store: MemoryStore,
    *,
    max_lines: int = DEFAULT_MAX_LINES,
    path: Path | None = None,
) -> MemoryMdResult:
    """The per-turn MEMORY.md writer (``refresh_core_memory_facts``), deterministic.

    Stands down (writes nothing) once the vault has any ``3_Personal/`` page: the dream's
    promoter owns the generated zone from then on. Otherwise rebuilds the generated zone from the
    index's fact rows (daily-log and legacy rows of the store's user, tombstoned ones left out),
    best first by importance then recency, grouped by category, at most ``max_lines`` lines. No
    importance threshold: the indexer stamps daily-log rows 0.5, and a threshold of 0.7 is what
    rebuilt the old file from legacy rows alone. Writes nothing when the index does not exist yet."""
    target = Path(path) if path is not None else settings.memory_md_path
    pages = list_personal_pages(settings)
    if pages:
        return MemoryMdResult(
            False,
            f"stood down: the vault has {len(pages)} page(s) under {PERSONAL_DIR}/ (e.g. {pages[0]}); "
            "the dream's promoter writes MEMORY.md's generated zone now",
            target,
            "stood_down",
            REFRESH_GENERATOR,
        )
    if not store.opened() and not store.exists():
        return MemoryMdResult(
            False,
            f"no index yet at {store.uri}: nothing to list (run `memory-assets reindex`); "
            f"{target.name} was not written",
            target,
            "no_index",
            REFRESH_GENERATOR,
        )
    tombstoned = read_tombstones(settings.tombstones_path)
    facts = read_user_facts(  # the zone lists fewer than max_lines facts
        store, tombstoned, candidates=max_lines, state_path=settings.state_dir / CANDIDATES_STATE
    )
    body, count = render_facts(rank_facts(facts, tombstoned), max_lines)
    written = write_generated_zone(target, body, generator=REFRESH_GENERATOR)
    return MemoryMdResult(
        written.written,
        f"{written.reason} ({count} fact(s) listed)",
        target,
        written.outcome,
        REFRESH_GENERATOR,
        written.stripped,
        count,
    )


def refresh_memory_md(settings: Settings, store: MemoryStore | None) -> str:
    """The per-turn MEMORY.md writer, as the write path calls it: what it did, in words (never
    raises into the write)."""
    try:
        outcome = refresh_from_index(settings, store or Home(settings).store)
    except Exception as exc:
        return f"not refreshed: {type(exc).__name__}: {exc}"[:300]
    return str(getattr(outcome, "reason", outcome))
