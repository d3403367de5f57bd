"""``restore_stranded``: make every stranded fact findable again (``memory-assets restore-stranded``).

What ``facts_accounted_for`` reports as stranded is repaired by kind, and nothing is deleted:

* a line the ledger calls folded that no page holds now gets an ``unfold`` record in
  ``folds.jsonl``: it is pending again, so it returns to the index and the next dream folds it;
* a line the reconcile retired that no page holds gets its reconcile tombstone lifted (only
  tombstones marked ``by: reconcile`` for that text; a person's tombstone is never touched);
* a line whose row is missing is reindexed.

Then every affected day is reindexed explicitly (the ledger and the tombstones change no log's
bytes). ``dry_run`` reports what it would do and writes nothing. Running it twice does nothing
the second time: the first leaves no line stranded.
"""

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from memory_assets.core.audit.facts_accounted import (
    FOLDED_NOT_HELD,
    NOT_INDEXED,
    RETIRED_NOT_HELD,
    account,
)
from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.folds import append_record, ensure_ledger
from memory_assets.core.knowledge.tombstones import RECONCILE
from memory_assets.core.sources import IndexKey
from memory_assets.core.text import normalise
from memory_assets.core.textfile import read_text


@dataclass
class RestoreResult:
    stranded: int = 0
    unfolded: dict[str, list[int]] = field(default_factory=dict)  # file -> lines returned to the index
    tombstones_lifted: list[str] = field(default_factory=list)
    reindexed: list[str] = field(default_factory=list)
    rows_embedded: int = 0
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def restore_stranded(indexer: Indexer, *, dry_run: bool = False) -> RestoreResult:
    settings = indexer.settings
    accounting = account(settings, indexer.store)
    result = RestoreResult(stranded=len(accounting.stranded), dry_run=dry_run, warnings=accounting.warnings)
    unfold: dict[str, set[int]] = defaultdict(set)
    lift: set[str] = set()
    days: set[str] = set()
    for line in accounting.stranded:
        days.add(line.file)
        if line.why == FOLDED_NOT_HELD:
            unfold[line.file].add(line.line)
        if line.retired:
            lift.add(normalise(line.content))
        assert line.why in (FOLDED_NOT_HELD, RETIRED_NOT_HELD, NOT_INDEXED)
    result.unfolded = {name: sorted(lines) for name, lines in sorted(unfold.items())}
    result.tombstones_lifted = sorted(lift)
    result.reindexed = [str(IndexKey.for_log(name)) for name in sorted(days)]
    if dry_run or not accounting.stranded:
        return result
    if unfold:
        ensure_ledger(settings)
        append_record(
            settings.folds_path,
            {
                "kind": "unfold",
                "lines": result.unfolded,
                "why": "no vault page holds them any more (memory-assets restore-stranded)",
            },
        )
    if lift:
        _lift_reconcile_tombstones(settings.tombstones_path, lift)
    for key in result.reindexed:
        result.rows_embedded += indexer.reindex_key(key).embedded
    return result


def _lift_reconcile_tombstones(path: Any, contents: set[str]) -> None:
    """Drop the reconcile's tombstone lines for these normalised contents (an atomic rewrite under
    the tombstones' writers' lock); every other line is kept as written."""
    with file_lock(path):
        kept: list[str] = []
        for line in read_text(path).text.splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                kept.append(line)
                continue
            if (
                isinstance(value, dict)
                and value.get("by") == RECONCILE
                and isinstance(value.get("content"), str)
                and normalise(value["content"]) in contents
            ):
                continue
            kept.append(line)
        write_atomic(path, "".join(f"{k}\n" for k in kept))
