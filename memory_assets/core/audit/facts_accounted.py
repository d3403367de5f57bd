"""``facts_accounted_for``: every written fact stays findable (design §7, invariant 8).

Every fact line of every daily log must be in exactly one of these states:

* **indexed**: the fold ledger leaves it in the index (pending, or read and left) and its row is
  in the table, so search and recall find it;
* **folded**: the ledger records a dream run folding it into a page, or the reconcile retired it
  (a tombstone marked ``by: reconcile``), and a vault page holds it now (``page_index``), so the
  page answers for it. The ledger names the page, so the line can be traced to it;
* **forgotten**: a person's tombstone hides it (``forget``, or the assistant's delete route).

A line in none of them is **stranded**: still on disk, but no search, recall or dream can reach
it. The check names each stranded line (file, line), how it got there when the ledger knows, and
the fix: ``memory-assets restore-stranded`` returns folded lines no page holds to the index (and
to the dream), and lifts the reconcile's tombstones that hide facts no page holds;
``memory-assets reindex`` writes rows that are missing. It also refuses a ``watermark=`` line of
``log.md`` that cannot be right (``knowledge/watermark.py``), naming the line.

It reads only: the logs, the ledger, the tombstones, the vault and the table's archive ids. A
page lookup is a set lookup plus a few claim comparisons (an index by key word), so the check
runs on every reconcile.
"""

from dataclasses import dataclass, field

from memory_assets.core.capture.daily_log import list_logs, read_daily_log
from memory_assets.core.index.rows import plan_archive
from memory_assets.core.index.store import LegacyTableError, MemoryStore, quote
from memory_assets.core.knowledge.folds import Folds, LineState, load_folds
from memory_assets.core.knowledge.page_index import PageIndex
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.knowledge.watermark import WatermarkError, read_watermark
from memory_assets.core.outcome import CheckOutcome, capped
from memory_assets.core.settings import Settings
from memory_assets.core.sources import ARCHIVE

NAME = "facts_accounted_for"
RESTORE = "run `memory-assets restore-stranded`, which returns it to the index and to the next dream"
REINDEX = "run `memory-assets reindex`, which writes the missing row"

# Why a line is stranded (the ``why`` of ``Stranded``), and the command that repairs each.
FOLDED_NOT_HELD = "folded_not_held"
RETIRED_NOT_HELD = "retired_not_held"
NOT_INDEXED = "not_indexed"


@dataclass(frozen=True)
class Stranded:
    file: str  # "YYYY-MM-DD.md"
    line: int
    content: str
    why: str  # one of the three kinds above
    how: str  # what the ledger knows of how it got there
    retired: bool = False  # a reconcile tombstone hides it too

    def problem(self) -> str:
        fix = REINDEX if self.why == NOT_INDEXED else RESTORE
        return f"archive/{self.file} line {self.line}: {self.content[:80]!r} is stranded: {self.how}; {fix}"


@dataclass
class Accounting:
    indexed: int = 0
    folded: int = 0
    forgotten: int = 0
    stranded: list[Stranded] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what is wrong besides stranded lines


def _stranded(
    name: str, line: int, content: str, state: LineState, retired: bool, folded: bool
) -> "Stranded":
    """A folded or retired line no page holds, with what the ledger and the tombstones tell of it."""
    if folded and state.page:
        how = (
            f"dream run {state.run} folded it into notebook/{state.page} on {(state.at or '?')[:10]}, but no "
            "vault page holds it now (the page was edited, overwritten or deleted)"
        )
    elif folded:
        how = "it was consolidated before the fold ledger existed (at or below the watermark), but no vault page holds it"
    else:
        how = "the reconcile retired it (a tombstone hides it), but no vault page holds it"
    if folded and retired:
        how += ", and the reconcile's tombstone hides it"
    return Stranded(name, line, content, FOLDED_NOT_HELD if folded else RETIRED_NOT_HELD, how, retired)


def _archive_ids(store: MemoryStore) -> set[str] | None:
    """The ids of the table's archive rows (None when there is no table)."""
    if store.table() is None:
        return None
    return set(store.scan(["id"], where=f"source_type = {quote(ARCHIVE)}").column("id").to_pylist())


def account(settings: Settings, store: MemoryStore) -> Accounting:
    """Every fact line's state (see the module docstring)."""
    out = Accounting()
    logs = list_logs(settings.archive_dir)
    try:
        read_watermark(settings.log_md, newest_log=logs[-1][0] if logs else None)
    except WatermarkError as exc:
        out.problems.append(str(exc))
    try:
        folds = load_folds(settings)
    except WatermarkError:  # reported above; without a ledger nothing is folded but by the watermark
        folds = Folds()
    out.warnings += folds.warnings
    tombs = read_tombstones(settings.tombstones_path)
    out.warnings += tombs.warnings
    ids = _archive_ids(store)
    pages = PageIndex.of_vault(settings.notebook_dir, warnings=out.warnings)
    for day, path in logs:
        file = folds.of(path.name)
        try:
            parsed = read_daily_log(path, f"archive/{path.name}")
        except OSError as exc:
            out.warnings.append(
                f"archive/{path.name}: cannot be read ({exc.strerror or exc}); its facts were not accounted "
                "for this run. Fix: make it readable by the user running memory-assets."
            )
            continue
        planned = {row.chunk_index: row.id for row in plan_archive(path, day, tombs, file, parsed).rows}
        for fact in parsed.facts:
            if tombs.by_person(fact.content):
                out.forgotten += 1
                continue
            retired = tombs.hides(fact.content)  # by the reconcile only: a page must hold it
            state = file.state(fact.line)
            if retired or file.folded(fact.line):
                if pages.holder(fact.content, prefer=[state.page] if state.page else []) is not None:
                    out.folded += 1
                    continue
                out.stranded.append(
                    _stranded(path.name, fact.line, fact.content, state, retired, file.folded(fact.line))
                )
                continue
            row = planned.get(fact.line)
            if ids is not None and row in ids:
                out.indexed += 1
            else:
                out.stranded.append(
                    Stranded(
                        path.name,
                        fact.line,
                        fact.content,
                        NOT_INDEXED,
                        f"it is {state.kind} (no page holds it for the index), but its row is not in the index",
                    )
                )
    return out


def facts_accounted_for(settings: Settings, store: MemoryStore) -> CheckOutcome:
    """The check (see the module docstring)."""
    try:
        store.require_current(f"the {NAME} check")
    except LegacyTableError as exc:
        return CheckOutcome(NAME, False, "error", "the index table needs migrating first", [str(exc)])
    result = account(settings, store)
    lines = result.problems + [s.problem() for s in result.stranded]
    total = result.indexed + result.folded + result.forgotten + len(result.stranded)
    kinds = {
        k: sum(1 for s in result.stranded if s.why == k)
        for k in (FOLDED_NOT_HELD, RETIRED_NOT_HELD, NOT_INDEXED)
    }
    passed = not result.stranded and not result.problems
    summary = (
        f"{total} fact line(s) accounted for: {result.indexed} indexed, {result.folded} folded into pages "
        f"that hold them, {result.forgotten} forgotten"
        if passed
        else f"{len(result.stranded)} of {total} fact line(s) stranded (findable by nothing)"
        + (f"; {len(result.problems)} other problem(s)" if result.problems else "")
    )
    return CheckOutcome(
        NAME,
        passed=passed,
        severity="error",
        summary=summary,
        problems=capped(lines),
        metadata={
            "fact_lines": total,
            "indexed": result.indexed,
            "folded": result.folded,
            "forgotten": result.forgotten,
            "stranded": len(result.stranded),
            **{f"stranded_{k}": v for k, v in kinds.items()},
        },
        details=[
            {"file": f"archive/{s.file}", "line": s.line, "fact": s.content[:80], "why": s.why}
            for s in result.stranded
        ],
        warnings=result.warnings,
    )
