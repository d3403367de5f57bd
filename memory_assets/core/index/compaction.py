"""Which of a table's fragments a compaction rewrites, so that no compaction rewrites more than half
of the table's rows.

LanceDB's ``optimize`` takes no compaction options: it rewrites every fragment of fewer than a
million rows, which for a memory home is the whole table, and remaps every index onto the new
fragment, so until the prune the old files and a full new copy are on disk together. Here Lance's
own compaction is called with the fragments to leave alone named (``excluded_fragment_ids``).

The rule (``fragments_to_merge``): the tail of fragments written since the last compaction is
merged when it holds at most half the table's rows, and, when too many fragments would be left,
a run of the small ones before it too, the whole within the half. A home whose day adds a small
part of it keeps a few fragments, each holding about as many rows as all after it or more, and
its first (the home's history) is not rewritten by a day's turns. Every
index is folded (the rows no index covers yet added) before the compaction, and remapped by it.
A fragment with more than a tenth of its rows deleted is rewritten too, alone: this is the one
rewrite that may exceed the half (an erase compacts the whole table anyway: ``TableWriter.purge``).
"""

from collections.abc import Callable, Sequence
from typing import Any

MAX_LEFT = 6  # fragments left after the tail's merge at most; more, and a run of them is merged
DELETED_SHARE = 0.1  # a fragment with more of its rows deleted is rewritten (Lance's default)


def fragments_to_merge(rows: Sequence[int]) -> list[int]:
    """The fragments (their positions in ``rows``: each one's rows, in the table's order) a
    compaction merges, together holding at most half the table's rows; Lance merges each run of
    consecutive ones into one fragment.

    The tail, from the first fragment holding fewer rows than all after it together, when it holds
    at most half the rows (``tail``: the rows added since the last compaction, mostly). When more
    than ``MAX_LEFT`` fragments would be left (a table growing fast, whose merged tails each
    outgrew the fragments before them), also the run of consecutive fragments before the tail with
    the most fragments in it, the fewest rows among those, within the half (none when no two
    consecutive ones fit)."""
    start, count = tail(rows), len(rows)
    merged = list(range(start, count)) if count - start > 1 else []
    if count - len(merged) + min(len(merged), 1) <= MAX_LEFT:
        return merged
    room = sum(rows) / 2 - sum(rows[i] for i in merged)
    best, most = range(0), (1, 0.0)
    for i in range(start):
        held = rows[i]
        for j in range(i + 1, start):
            held += rows[j]
            if held > room:
                break
            if (j - i + 1, -held) > most:
                best, most = range(i, j + 1), (j - i + 1, -held)
    return sorted({*best, *merged})


def tail(rows: Sequence[int]) -> int:
    """Where the tail a compaction merges starts: the first fragment holding fewer rows than all
    after it together, when it and they hold at most half the rows (``len(rows)``: none does). The
    fragments before it each hold at least as many rows as all after them: they shrink by half or
    more from one to the next."""
    total = after = sum(rows)
    for i, count in enumerate(rows):
        after -= count
        if count < after and count + after <= total / 2:
            return i
    return len(rows)


def compact(table: Any, between: Callable[[], object] | None = None) -> None:
    """Fold the rows no index covers yet into the indexes of the LanceDB ``table`` (at its latest
    version), call ``between`` (a prune: the indexes the fold replaced leave the disk before the
    compaction writes the remapped ones), then merge the fragments ``fragments_to_merge`` picks
    (Lance remaps the indexes onto the merged fragment; it merges no fragment an index covers with
    one none does, hence the indexes first)."""
    table.checkout_latest()
    dataset = table.to_lance()
    dataset.optimize.optimize_indices()
    table.checkout_latest()
    if between is not None:
        between()
        table.checkout_latest()
    dataset = table.to_lance()
    fragments = dataset.get_fragments()
    chosen = {fragments[i].fragment_id for i in fragments_to_merge([f.count_rows() for f in fragments])}
    # A fragment with more than Lance's share of its rows deleted is compacted too (alone: its
    # deleted rows' bytes leave the disk only so).
    chosen |= {f.fragment_id for f in fragments if _deleted_share(f) > DELETED_SHARE}
    if chosen:
        dataset.optimize.compact_files(
            excluded_fragment_ids=[f.fragment_id for f in fragments if f.fragment_id not in chosen],
            materialize_deletions_threshold=DELETED_SHARE,
        )
    table.checkout_latest()


def _deleted_share(fragment: Any) -> float:
    physical = fragment.metadata.physical_rows or 0
    return 1 - fragment.count_rows() / physical if physical else 0.0
