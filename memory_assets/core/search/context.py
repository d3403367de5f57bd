"""A hit's neighbouring lines: what ``search(context=N)`` attaches (design §5.7).

A row's block is its log's conversation block (its ``## HH:MM — chat`` header), its page's
section (its heading) or its core file's zone (``_block_key``); the lines of one block are
ordered by ``chunk_index``. One query fetches the lines near every hit, and each is scored as a
hit of the same query would be (``ranking.Scorer``). What a caller can rely on:

* a neighbour that outscores a returned hit is returned as a hit of its own, unless it is a
  near-duplicate (cosine >= 0.95) of a hit already kept;
* each final hit carries up to N lines on each side from its own block (``Hit.context``), each
  with its score and its ``offset`` (-1: the line before);
* no line is ever both a hit and context, nor the context of two hits (the better hit keeps it).

Rows without a chunk index, source file or source type get no context; the caller asks for none
on an assistant-era table. Reads only.
"""

from typing import Any

import numpy as np

from memory_assets.core.index.store import quote
from memory_assets.core.search.ranking import (
    DUPLICATE_COSINE,
    ContextLine,
    Scored,
    Scorer,
    and_clauses,
    normalised,
    sort_key,
    vector_matrix,
)
from memory_assets.core.sources import ARCHIVE
from memory_assets.core.text import json_object


def _block_key(row: dict[str, Any]) -> tuple[object, ...]:
    """The block a row belongs to: a log's conversation block (its ``## HH:MM — chat`` header), a
    page's section (its heading), a core file's zone. Rows of one block are ordered by chunk_index."""
    meta = json_object(row.get("metadata"))
    kind = row.get("source_type")
    if kind == "archive_log":
        part: tuple[object, ...] = (meta.get("time"), meta.get("chat"))
    elif kind == "notebook":
        part = (meta.get("section"),)
    else:
        part = (meta.get("zone"),)
    return (kind, row.get("source_file"), *part)


async def with_neighbours(
    kept: list[tuple[Scored, int]], scorer: Scorer, columns: list[str], context: int, limit: int
) -> tuple[list[tuple[Scored, int]], dict[str, list[ContextLine]]]:
    """Fetch the hits' neighbours (one query), score them as hits, lift the lines next to the best
    hits (``Ranking.neighbour``), let a neighbour that then outscores a returned hit take its place,
    and, with ``context`` > 0, attach each final hit's remaining neighbours as context."""
    ranking = scorer.ranking
    lift = ranking.neighbour if ranking.neighbour_anchors > 0 else 0.0
    # A page section or a zone lists separate claims (a log block is one conversation); a hit there
    # on a date or a prior alone says nothing of what its neighbours are about.
    anchors = [
        s
        for s, _ in kept[: ranking.neighbour_anchors]
        if lift > 0 and s.row.get("source_type") == ARCHIVE and s.semantic >= ranking.neighbour_floor
    ]
    reach = max(context, 1 if anchors else 0)
    if reach == 0:
        return kept, {}
    # Lines either side: with context, a promoted neighbour's own neighbours are in reach too.
    sources = kept if context > 0 else [(s, 0) for s in anchors]
    span = 2 * context + 2 if context > 0 else 1
    ranges: dict[tuple[str, str], tuple[int, int]] = {}
    for s, _ in sources:
        row = s.row
        index = row.get("chunk_index")
        if index is None or row.get("source_file") is None or row.get("source_type") is None:
            continue
        key = (row["source_type"], row["source_file"])
        low, high = ranges.get(key, (index, index))
        ranges[key] = (min(low, index), max(high, index))
    if not ranges:
        return kept, {}
    near = " OR ".join(
        f"(source_type = {quote(t)} AND source_file = {quote(f)} AND chunk_index >= {low - span} "
        f"AND chunk_index <= {high + span})"
        for (t, f), (low, high) in ranges.items()
    )
    data = (
        await scorer.table.query().where(and_clauses(scorer.where, near) or near).select(columns).to_arrow()
    )
    known = {s.id: s for s, _ in kept}
    fresh: list[dict[str, Any]] = []
    if data.num_rows:
        rows = data.drop_columns(["vector"]).to_pylist()
        matrix = vector_matrix(data.column("vector"))
        for i, row in enumerate(rows):
            if row["id"] not in known:
                scorer.vectors.setdefault(row["id"], matrix[i])
                fresh.append(row)
    neighbours = {s.id: s for s in scorer.scored(fresh)}
    by_block: dict[tuple[object, ...], list[Scored]] = {}
    for s in [*known.values(), *neighbours.values()]:
        by_block.setdefault(_block_key(s.row), []).append(s)
    for members in by_block.values():
        members.sort(key=lambda s: (s.row.get("chunk_index") or 0, s.id))
    position = {s.id: (key, i) for key, members in by_block.items() for i, s in enumerate(members)}

    def around(s: Scored, n: int) -> list[tuple[int, Scored]]:
        key, i = position[s.id]
        members = by_block[key]
        return [(j - i, members[j]) for j in range(max(0, i - n), min(len(members), i + n + 1)) if j != i]

    # The lift: a line next to one of the best hits takes a share of that hit's lead over it in
    # meaning (the semantic term; a date or a prior the two share is no reason to lift). In a
    # conversation the line that answers often sits beside the one that matches the question; only
    # log blocks are conversations (a page section's bullets are separate claims).
    pool: dict[str, Scored] = dict(known)
    lifted: dict[str, float] = {}
    for anchor in anchors:
        for _, n in around(anchor, 1):
            lead = ranking.semantic * (anchor.semantic - n.semantic)  # the anchor's lead on meaning alone
            if n.id in neighbours and lead > 0:
                lifted[n.id] = max(lifted.get(n.id, n.score), n.score + lift * lead)
    for row_id, score in lifted.items():
        neighbours[row_id].score = score
        pool[row_id] = neighbours[row_id]
    # A neighbour stands on its own when it outscores a returned hit (never as a near-duplicate).
    for s, _ in kept if context > 0 else []:
        for _, n in around(s, context):
            if n.id not in pool:
                pool[n.id] = n
    counts = {s.id: duplicates for s, duplicates in kept}
    final: list[tuple[Scored, int]] = []
    final_vectors: list[np.ndarray] = []
    for s in sorted(pool.values(), key=sort_key):
        if len(final) == limit:
            break
        vector = normalised(scorer.vectors[s.id])
        if (
            s.id not in counts
            and final_vectors
            and float(np.max(np.stack(final_vectors) @ vector)) >= DUPLICATE_COSINE
        ):
            continue
        final.append((s, counts.get(s.id, 0)))
        final_vectors.append(vector)
    if context == 0:
        return final, {}
    # Context: each final hit's neighbours, never a hit, never a line already shown with a better hit.
    shown = {s.id for s, _ in final}
    contexts: dict[str, list[ContextLine]] = {}
    for s, _ in final:
        lines = []
        for offset, n in around(s, context):
            if n.id in shown:
                continue
            shown.add(n.id)
            lines.append(
                ContextLine(
                    id=n.id,
                    content=n.row["content"],
                    score=round(n.score, 6),
                    offset=offset,
                    semantic=round(n.semantic, 6),
                    bm25=round(n.bm25, 6),
                )
            )
        contexts[s.id] = lines
    return final, contexts
