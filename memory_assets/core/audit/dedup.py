"""The dedup measurement: how redundant the archival index and the on-disk backlog are.

Two pure measurements and their report (no Dagster, no LanceDB; the caller reads the rows):

* :func:`measure_redundancy` - the index table of the dedup measurement (design §5.11): per write
  path, the share of rows whose embedding has cosine >= t with some *earlier* row (earlier =
  ordered by ``(fact_date, id)``), within the row's own write path and across all paths. Exact,
  computed by blocked matrix products with bounded memory.
* :func:`measure_backlog` - the daily logs on disk: fact lines, exact repeats, token-set near
  duplicates, their clusters and a sample of "strictly less informative" paraphrase pairs.
* :func:`dedup_report`, :func:`pairs_frame`, :func:`clusters_frame`, :func:`markdown_table` -
  a JSON-serialisable report, polars frames for parquet, and the page's markdown table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp
from rapidfuzz import fuzz, process
from scipy.sparse.csgraph import connected_components

from memory_assets.core.capture.daily_log import LogFact, list_logs, read_daily_log
from memory_assets.core.outcome import fields_of
from memory_assets.core.text import fold, normalise

DEFAULT_THRESHOLDS: tuple[float, ...] = (0.995, 0.95, 0.92)
DEFAULT_NEAR_THRESHOLD = 90.0
ACROSS_WRITE_PATHS = "across write paths"


def threshold_key(threshold: float) -> str:
    """The report key of a cosine threshold: ``0.995 -> "0.995"``, ``0.95 -> "0.95"``."""
    return f"{threshold:g}"


# --------------------------------------------------------------------------------------------
# 1. The index: exact blocked redundancy
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RedundancyResult:
    """What :func:`measure_redundancy` found. Per-row arrays are in the caller's input order.

    ``by_write_path`` maps each path to ``{"rows": n, "0.995": rate, ...}`` and
    ``across_write_paths`` is the same over all rows (keys from :func:`threshold_key`).
    ``write_paths`` is each input row's path and ``order`` the input indices in (fact date, id)
    order. ``same_max``/``same_match``: the best similarity to an earlier row of the same write path and
    that row's input index, recorded only when it reaches the lowest threshold (else ``-inf`` and
    ``-1``). ``any_max`` is the exact best similarity to any earlier row (``-inf`` for the first
    row); ``any_match`` is its input index when it reaches the lowest threshold, else ``-1``.
    """

    thresholds: tuple[float, ...]
    rows: int
    by_write_path: dict[str, dict[str, float | int]]
    across_write_paths: dict[str, float | int]
    write_paths: tuple[str, ...]
    order: np.ndarray
    same_max: np.ndarray
    same_match: np.ndarray
    any_max: np.ndarray
    any_match: np.ndarray
    ids: tuple[str, ...] | None = None
    texts: tuple[str, ...] | None = None


def _check_thresholds(thresholds: Sequence[float]) -> tuple[float, ...]:
    out = tuple(dict.fromkeys(float(t) for t in thresholds))
    if not out:
        raise ValueError("at least one threshold is needed")
    for t in out:
        if not 0.0 < t <= 1.0:
            raise ValueError(f"a cosine threshold must be in (0, 1], got {t}")
    return out


def _normalised_rows(vectors: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The rows in ``order``, as float32 unit vectors (a zero row stays zero)."""
    x = np.empty(vectors.shape, dtype=np.float32)
    for s0 in range(0, len(order), 8192):  # gather and cast in chunks: no float64 copy of the whole
        x[s0 : s0 + 8192] = vectors[order[s0 : s0 + 8192]]
    if not np.isfinite(x).all():
        raise ValueError("vectors contain NaN or infinite values")
    norms = np.linalg.norm(x, axis=1)
    norms[norms == 0] = 1.0
    x /= norms[:, None]
    return x


def _update_best(
    best: np.ndarray, arg: np.ndarray, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray
) -> None:
    """Raise ``best[row]`` to the row's largest value in ``vals`` (ties: smallest column).

    Only a strictly larger value replaces the running maximum, and column blocks arrive in
    ascending order, so the earliest row wins ties overall.
    """
    if rows.size == 0:
        return
    pick = np.lexsort((cols, -vals, rows))
    rows, cols, vals = rows[pick], cols[pick], vals[pick]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = rows[1:] != rows[:-1]
    rows, cols, vals = rows[first], cols[first], vals[first]
    better = vals > best[rows]
    best[rows[better]] = vals[better]
    arg[rows[better]] = cols[better]


def measure_redundancy(
    vectors: np.ndarray,
    write_paths: Sequence[str],
    order_keys: Sequence[tuple[Any, ...]],
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    block: int = 2048,
    ids: Sequence[str] | None = None,
    texts: Sequence[str] | None = None,
) -> RedundancyResult:
    """Measure near-duplicate rates in an embedding index, exactly, in bounded memory.

    Rows are ordered by ``order_keys`` (the caller passes ``(fact_date or "", id)``; the sort is
    stable). Vectors are L2-normalised to float32 here (zero vectors stay zero, so they match
    nothing). A row is *redundant within its write path* at ``t`` when an earlier row of the same
    write path has cosine >= t, and *redundant across write paths* when an earlier row of any path
    does. Rates are fractions in [0, 1] of the path's (or all) rows.

    One pass over the lower block triangle: for each i-block, the products with every j-block
    ``j <= i`` (the diagonal block's upper triangle, diagonal included, masked out). Each product's
    row maxima give the exact any-path maximum; only rows whose maximum reaches the lowest threshold
    are scanned for their entries >= it, which update the running same-path and any-path maxima
    and their argmax. Temporaries are O(block**2) beside the n x d float32 matrix.
    """
    ts = _check_thresholds(thresholds)
    if block < 1:
        raise ValueError("block must be >= 1")
    n = len(write_paths)
    if len(order_keys) != n:
        raise ValueError(f"{len(order_keys)} order keys for {n} rows")
    for name, extra in (("ids", ids), ("texts", texts)):
        if extra is not None and len(extra) != n:
            raise ValueError(f"{len(extra)} {name} for {n} rows")
    arr = np.asarray(vectors)
    if n == 0:
        arr = arr.reshape(0, arr.shape[-1] if arr.ndim == 2 else 0)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise ValueError(f"vectors must be an (n, d) array with n = {n} rows, got shape {arr.shape}")

    names = tuple(sorted(set(write_paths)))
    code_of = {name: k for k, name in enumerate(names)}
    order = np.array(sorted(range(n), key=order_keys.__getitem__), dtype=np.int64)
    codes = np.fromiter((code_of[write_paths[k]] for k in order), dtype=np.int64, count=n)
    x = _normalised_rows(arr, order)

    t_min = np.float32(min(ts))
    same_max = np.full(n, -np.inf, dtype=np.float32)
    same_arg = np.full(n, -1, dtype=np.int64)
    any_max = np.full(n, -np.inf, dtype=np.float32)
    any_top = np.full(n, -np.inf, dtype=np.float32)  # any_max restricted to entries >= t_min
    any_arg = np.full(n, -1, dtype=np.int64)
    side = min(block, n)
    upper = np.triu(np.ones((side, side), dtype=bool))
    buffer = np.empty(side * side, dtype=np.float32)  # every product lands here: no fresh pages

    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        xi = x[i0:i1]
        for j0 in range(0, i1, block):
            j1 = min(j0 + block, i1)
            sims = buffer[: (i1 - i0) * (j1 - j0)].reshape(i1 - i0, j1 - j0)
            np.matmul(xi, x[j0:j1].T, out=sims)
            if j0 == i0:  # the diagonal block: only strictly earlier rows count
                np.copyto(sims, -np.inf, where=upper[: i1 - i0, : j1 - j0])
            row_max = sims.max(axis=1)
            np.maximum(any_max[i0:i1], row_max, out=any_max[i0:i1])
            hit = np.flatnonzero(row_max >= t_min)
            if hit.size == 0:
                continue
            sub = sims[hit]
            r, c = np.nonzero(sub >= t_min)
            vals = sub[r, c]
            rows = hit[r] + i0
            cols = c.astype(np.int64) + j0
            _update_best(any_top, any_arg, rows, cols, vals)
            same = codes[rows] == codes[cols]
            _update_best(same_max, same_arg, rows[same], cols[same], vals[same])

    def to_input(values: np.ndarray) -> np.ndarray:
        out = np.empty_like(values)
        out[order] = values
        return out

    def match_to_input(arg: np.ndarray) -> np.ndarray:
        mapped = np.where(arg >= 0, order[np.maximum(arg, 0)], -1)
        return to_input(mapped)

    counts = np.bincount(codes, minlength=len(names))
    by_path: dict[str, dict[str, float | int]] = {}
    for k, name in enumerate(names):
        entry: dict[str, float | int] = {"rows": int(counts[k])}
        for t in ts:
            hits = np.count_nonzero((same_max >= np.float32(t)) & (codes == k))
            entry[threshold_key(t)] = float(hits / counts[k]) if counts[k] else 0.0
        by_path[name] = entry
    across: dict[str, float | int] = {"rows": n}
    for t in ts:
        across[threshold_key(t)] = float(np.count_nonzero(any_max >= np.float32(t)) / n) if n else 0.0

    return RedundancyResult(
        thresholds=ts,
        rows=n,
        by_write_path=by_path,
        across_write_paths=across,
        write_paths=tuple(write_paths),
        order=order,
        same_max=to_input(same_max),
        same_match=match_to_input(same_arg),
        any_max=to_input(any_max),
        any_match=match_to_input(any_arg),
        ids=tuple(ids) if ids is not None else None,
        texts=tuple(texts) if texts is not None else None,
    )


# --------------------------------------------------------------------------------------------
# 2. The backlog: exact repeats and token-set near duplicates in the daily logs
# --------------------------------------------------------------------------------------------

_HIST_BUCKETS = 32  # character histogram buckets of the edit-distance filter
_HIST_CAP = 8  # counts are capped here; both keep the filter a lower bound


def _overlap_candidates(tokens: list[list[str]], tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Ordered pairs (a, b) that may satisfy token_set_ratio's intersection terms from a's side.

    rapidfuzz scores a pair with a shared token set ``I`` as 100 when one side is a subset of the
    other, and otherwise with ``1 - (a+1) / (2s+1+a)`` (s, a: the joined lengths of ``I`` and
    ``A - I``). With token weight ``len + 1`` either needs ``w(I) >= tau * w(A) / (2 - tau)``, so
    ``I`` must meet A's prefix (its rarest tokens, until the rest weighs less than that): prefix
    filtering over an inverted index, then the suffix bound, then the exact weighted overlap.
    """
    n = len(tokens)
    vocab: dict[str, int] = {}
    rows_l: list[int] = []
    cols_l: list[int] = []
    for i, toks in enumerate(tokens):
        for tok in set(toks):
            rows_l.append(i)
            cols_l.append(vocab.setdefault(tok, len(vocab)))
    empty = np.zeros(0, dtype=np.int64)
    if not vocab:
        return empty, empty
    n_vocab = len(vocab)
    rows = np.asarray(rows_l, dtype=np.int64)
    cols = np.asarray(cols_l, dtype=np.int64)
    names = np.array(list(vocab), dtype=str)
    weight = np.char.str_len(names).astype(np.float64) + 1.0
    doc_freq = np.bincount(cols, minlength=n_vocab)
    rank = np.empty(n_vocab, dtype=np.int64)
    rank[np.lexsort((names, doc_freq))] = np.arange(n_vocab)  # rarest first, ties by token

    member = sp.csr_matrix((np.ones(rows.size, dtype=np.float32), (rows, cols)), shape=(n, n_vocab))
    weighted = sp.csr_matrix((weight[cols], (rows, cols)), shape=(n, n_vocab))
    total = np.asarray(weighted.sum(axis=1)).ravel()
    need = tau / (2.0 - tau) * total - 1.0  # minus one: a safety margin, the filter stays a superset

    by_rank = np.lexsort((rank[cols], rows))
    r_s, c_s = rows[by_rank], cols[by_rank]
    w_s = weight[c_s]
    cum = np.cumsum(w_s)
    row_start = np.searchsorted(r_s, r_s, side="left")
    before = cum - w_s - (cum[row_start] - w_s[row_start])
    in_prefix = total[r_s] - before >= need[r_s]
    prefix = sp.csr_matrix((w_s[in_prefix], (r_s[in_prefix], c_s[in_prefix])), shape=(n, n_vocab))
    prefix_weight = np.asarray(prefix.sum(axis=1)).ravel()

    hits = (prefix @ member.T).tocoo()  # value: weight of a's prefix tokens that b contains
    a = hits.row.astype(np.int64)
    b = hits.col.astype(np.int64)
    keep = (a != b) & (total[b] >= need[a]) & (hits.data + (total[a] - prefix_weight[a]) >= need[a])
    a, b = a[keep], b[keep]
    chunk = 500_000
    exact = np.zeros(a.size, dtype=bool)
    for s0 in range(0, a.size, chunk):
        aa, bb = a[s0 : s0 + chunk], b[s0 : s0 + chunk]
        overlap = np.asarray(weighted[aa].multiply(member[bb]).sum(axis=1)).ravel()
        exact[s0 : s0 + chunk] = overlap >= need[aa]
    return a[exact], b[exact]


def _edit_candidates(tokens: list[list[str]], tau: float, block: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i > j) that may reach ``tau`` through token_set_ratio's sorted-difference term.

    That term is ``1 - indel(diff_ab, diff_ba) / (J_a + J_b)`` (J: length of the joined token
    set). An indel distance is at least the L1 distance of the character histograms, and the
    histograms of the two differences differ exactly as those of the two token sets do. Capped,
    bucketed counts keep it a lower bound; in unary (thermometer) code the L1 distance is
    ``|u| + |v| - 2 u.v``, so all pairs are screened with blocked matrix products.
    """
    n = len(tokens)
    joined = ["".join(sorted(set(toks))) for toks in tokens]
    length = np.array([len(" ".join(sorted(set(toks)))) for toks in tokens], dtype=np.float64)
    char_freq: Counter[str] = Counter()
    hists = [Counter(text) for text in joined]
    for hist in hists:
        char_freq.update(hist.keys())
    ranked = sorted(char_freq.items(), key=lambda kv: (-kv[1], kv[0]))
    bucket = {ch: min(k, _HIST_BUCKETS - 1) for k, (ch, _) in enumerate(ranked)}
    h_rows = [i for i, hist in enumerate(hists) for _ in hist]
    h_cols = [bucket[ch] for hist in hists for ch in hist]
    h_vals = [k for hist in hists for k in hist.values()]
    counts = sp.coo_matrix((h_vals, (h_rows, h_cols)), shape=(n, _HIST_BUCKETS)).toarray()
    counts = np.minimum(counts, _HIST_CAP)
    levels = counts.max(axis=0)
    unary = (counts[:, np.repeat(np.arange(_HIST_BUCKETS), levels)] >= _unary_levels(levels)).astype(
        np.float32
    )
    size = unary.sum(axis=1)
    # L1 <= (1 - tau)(J_i + J_j) + 2   <=>   u_i.u_j - beta_j >= beta_i,  beta = (|u| - (1 - tau) J - 1) / 2
    beta = ((size - (1.0 - tau) * length - 1.0) / 2.0).astype(np.float32)
    found_i: list[np.ndarray] = []
    found_j: list[np.ndarray] = []
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        for j0 in range(0, i1, block):
            j1 = min(j0 + block, i1)
            prod = unary[i0:i1] @ unary[j0:j1].T
            prod -= beta[None, j0:j1]
            hit = np.flatnonzero(prod.max(axis=1) >= beta[i0:i1])
            if hit.size == 0:
                continue
            r, c = np.nonzero(prod[hit] >= beta[i0:i1][hit, None])
            r = hit[r] + i0
            c = c + j0
            below = c < r
            found_i.append(r[below].astype(np.int64))
            found_j.append(c[below].astype(np.int64))
    if not found_i:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(found_i), np.concatenate(found_j)


def _unary_levels(levels: np.ndarray) -> np.ndarray:
    """For per-bucket maxima ``levels``, the thresholds 1..level of every bucket, concatenated."""
    total = int(levels.sum())
    starts = np.repeat(np.cumsum(levels) - levels, levels)
    return np.arange(total) - starts + 1


def token_set_near_pairs(
    texts: Sequence[str], threshold: float = DEFAULT_NEAR_THRESHOLD
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs ``i < j`` with ``fuzz.token_set_ratio(texts[i], texts[j]) >= threshold``.

    Texts are first whitespace-collapsed with ``str.split`` (a no-op on ``fold()``ed text; it
    pins the tokens down, since rapidfuzz does not split on a few characters Python treats as
    whitespace, e.g. U+00A0). The result is exactly the pairs ``rapidfuzz.process.cdist(clean,
    clean, scorer=fuzz.token_set_ratio, score_cutoff=threshold)`` keeps on those collapsed texts,
    found without scoring every pair: two filters that can only over-approximate
    (:func:`_overlap_candidates` for the shared-token terms, :func:`_edit_candidates` for the
    sorted-difference term) propose candidates, and ``process.cpdist`` scores exactly those.
    Returns ``(i, j, score)`` sorted by ``(i, j)``, scores on rapidfuzz's 0-100 scale.
    """
    if not 0.0 < threshold <= 100.0:
        raise ValueError(f"a token-set threshold must be in (0, 100], got {threshold}")
    clean = [" ".join(t.split()) for t in texts]
    n = len(clean)
    if n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float64)
    tokens = [t.split() for t in clean]
    tau = threshold / 100.0
    oa, ob = _overlap_candidates(tokens, tau)
    ei, ej = _edit_candidates(tokens, tau)
    lo = np.concatenate([np.minimum(oa, ob), np.minimum(ei, ej)])
    hi = np.concatenate([np.maximum(oa, ob), np.maximum(ei, ej)])
    keys = np.unique(lo * n + hi)
    i, j = keys // n, keys % n
    scores = process.cpdist(
        [clean[k] for k in i],
        [clean[k] for k in j],
        scorer=fuzz.token_set_ratio,
        score_cutoff=threshold,
        dtype=np.float64,
        workers=-1,
    )
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    ok = scores >= threshold
    return i[ok], j[ok], scores[ok]


@dataclass(frozen=True)
class BacklogResult:
    """What :func:`measure_backlog` found on disk.

    ``lines`` has one row per fact line in (day, line) order: ``position``, ``day``, ``line``,
    ``text`` (the fact's content), ``normalised``, ``kind`` (``first`` / ``exact_repeat`` /
    ``near_duplicate``), ``cluster_id`` and ``cluster_size`` (a line outside any cluster is its own
    cluster of size 1).
    """

    fact_lines: int
    logs: int
    exact_repeats: int
    near_duplicates: int
    clusters: int
    largest_cluster: dict[str, Any]
    paraphrase_pairs: list[dict[str, Any]]
    near_threshold: float
    lines: pl.DataFrame = field(repr=False)

    def summary(self) -> dict[str, Any]:
        """The JSON-serialisable figures (everything but ``lines``)."""
        return {
            **fields_of(self, "fact_lines", "logs", "exact_repeats", "near_duplicates", "clusters"),
            "largest_cluster": dict(self.largest_cluster),
            "paraphrase_pairs": [dict(p) for p in self.paraphrase_pairs],
            "near_threshold": self.near_threshold,
        }


_LINES_SCHEMA = {
    "position": pl.Int64,
    "day": pl.Date,
    "line": pl.Int64,
    "text": pl.String,
    "normalised": pl.String,
    "kind": pl.String,
    "cluster_id": pl.Int64,
    "cluster_size": pl.Int64,
}


def load_logs(archive_dir: Path) -> list[tuple[date, list[LogFact]]]:
    """Every daily log in ``archive_dir`` (oldest first) with its fact lines, for :func:`measure_backlog`."""
    return [(day, read_daily_log(path).facts) for day, path in list_logs(archive_dir)]


def measure_backlog(
    logs: Iterable[tuple[date, Sequence[LogFact]]],
    near_threshold: float = DEFAULT_NEAR_THRESHOLD,
    paraphrase_sample: int = 20,
) -> BacklogResult:
    """Measure repetition among all daily-log fact lines.

    Lines are taken in (day, line number) order, whatever order the logs arrive in; ``logs``
    counts distinct days given, with or without facts. Each line is then exactly one of:

    * an **exact repeat**: its ``normalise()``d content equals that of an earlier line (any day);
    * a **near duplicate**: not an exact repeat, and
      ``fuzz.token_set_ratio(fold(line), fold(earlier)) >= near_threshold`` for some earlier line
      (an earlier line with the same non-empty ``fold()`` but different ``normalise()`` counts,
      scoring 100). The score is rapidfuzz's: 100 when one token set contains the other. So both
      counts are "lines a deduplication would drop", and every pair is compared (exactly, see
      :func:`token_set_near_pairs`), not only pairs sharing a rare token;
    * otherwise a **first** occurrence.

    Clusters are the connected components of the graph whose edges are exact repeats and near
    duplicate pairs (in either direction); ``clusters`` counts components of two or more lines and
    a cluster's id is the position of its first line. ``largest_cluster`` is the biggest (ties: the
    lower id) with its distinct days and most frequent normalised text (ties: earliest).
    ``paraphrase_pairs`` samples near-duplicate pairs of distinct folded texts where one token set
    is a strict subset of the other: the ``paraphrase_sample`` best by (token-set score, then
    ``fuzz.ratio``, both descending; then the texts), ``a`` being the side seen first and
    ``less_informative`` naming the subset side.
    """
    if not 0.0 < near_threshold <= 100.0:
        raise ValueError(f"near_threshold must be in (0, 100], got {near_threshold}")
    days: set[date] = set()
    entries: list[tuple[date, int, int, int, LogFact]] = []
    for k, (day, facts) in enumerate(logs):
        days.add(day)
        entries.extend((day, fact.line, k, m, fact) for m, fact in enumerate(facts))
    entries.sort(key=lambda e: e[:4])
    n = len(entries)
    contents = [e[4].content for e in entries]
    normalised = [normalise(c) for c in contents]
    pos = np.arange(n, dtype=np.int64)

    first_norm: dict[str, int] = {}
    norm_first = np.fromiter((first_norm.setdefault(t, p) for p, t in enumerate(normalised)), np.int64, n)
    fold_index: dict[str, int] = {}
    line_fold = np.fromiter((fold_index.setdefault(fold(c), len(fold_index)) for c in contents), np.int64, n)
    folds = list(fold_index)
    fold_first = np.full(len(folds), n, dtype=np.int64)
    np.minimum.at(fold_first, line_fold, pos)
    fold_nonempty = np.array([bool(f) for f in folds], dtype=bool)

    pi, pj, pscore = token_set_near_pairs(folds, near_threshold)
    nearest_first = np.full(len(folds), n, dtype=np.int64)
    np.minimum.at(nearest_first, pi, fold_first[pj])
    np.minimum.at(nearest_first, pj, fold_first[pi])

    exact = norm_first < pos
    same_fold_earlier = fold_nonempty[line_fold] & (fold_first[line_fold] < pos)
    near = ~exact & (same_fold_earlier | (nearest_first[line_fold] < pos))

    has_fold = fold_nonempty[line_fold]
    edge_a = np.concatenate([pos, pos[has_fold], fold_first[pi]])
    edge_b = np.concatenate([norm_first, fold_first[line_fold][has_fold], fold_first[pj]])
    graph = sp.coo_matrix((np.ones(edge_a.size, dtype=np.int8), (edge_a, edge_b)), shape=(n, n))
    n_comp, labels = connected_components(graph, directed=False) if n else (0, pos)
    comp_first = np.full(n_comp, n, dtype=np.int64)
    np.minimum.at(comp_first, labels, pos)
    comp_size = np.bincount(labels, minlength=n_comp)
    cluster_id = comp_first[labels]
    cluster_size = comp_size[labels]

    largest: dict[str, Any] = {"size": 0, "distinct_days": 0, "text": None}
    multi = np.flatnonzero(comp_size >= 2)
    if multi.size:
        best = multi[np.lexsort((comp_first[multi], -comp_size[multi]))[0]]
        members = np.flatnonzero(labels == best)
        freq = Counter(normalised[p] for p in members)
        first_at = {}
        for p in members:
            first_at.setdefault(normalised[p], int(p))
        text = min(freq, key=lambda t: (-freq[t], first_at[t]))
        largest = {
            "size": int(members.size),
            "distinct_days": len({entries[p][0] for p in members}),
            "text": text,
        }

    kinds = np.where(exact, "exact_repeat", np.where(near, "near_duplicate", "first"))
    lines = pl.DataFrame(
        {
            "position": pos,
            "day": [e[0] for e in entries],
            "line": [e[1] for e in entries],
            "text": contents,
            "normalised": normalised,
            "kind": kinds.tolist(),
            "cluster_id": cluster_id,
            "cluster_size": cluster_size.astype(np.int64),
        },
        schema=_LINES_SCHEMA,
    )
    return BacklogResult(
        fact_lines=n,
        logs=len(days),
        exact_repeats=int(exact.sum()),
        near_duplicates=int(near.sum()),
        clusters=int(multi.size),
        largest_cluster=largest,
        paraphrase_pairs=_paraphrase_sample(folds, fold_first, contents, pi, pj, pscore, paraphrase_sample),
        near_threshold=float(near_threshold),
        lines=lines,
    )


def _paraphrase_sample(
    folds: list[str],
    fold_first: np.ndarray,
    contents: list[str],
    pi: np.ndarray,
    pj: np.ndarray,
    scores: np.ndarray,
    limit: int,
) -> list[dict[str, Any]]:
    """Near-duplicate pairs where one token set strictly contains the other, best first."""
    picked: list[tuple[int, int, float, str]] = []
    for i, j, score in zip(pi.tolist(), pj.tolist(), scores.tolist(), strict=True):
        a, b = (i, j) if fold_first[i] < fold_first[j] else (j, i)
        ta, tb = set(folds[a].split()), set(folds[b].split())
        if ta < tb:
            picked.append((a, b, score, "a"))
        elif tb < ta:
            picked.append((a, b, score, "b"))
    if not picked or limit <= 0:
        return []
    ratios = process.cpdist(
        [folds[p[0]] for p in picked], [folds[p[1]] for p in picked], scorer=fuzz.ratio, workers=-1
    )
    ranked = sorted(
        zip(picked, np.asarray(ratios, dtype=np.float64).reshape(-1).tolist(), strict=True),
        key=lambda pr: (-pr[0][2], -pr[1], contents[fold_first[pr[0][0]]], contents[fold_first[pr[0][1]]]),
    )
    return [
        {
            "a": contents[fold_first[a]],
            "b": contents[fold_first[b]],
            "similarity": round(score, 2),
            "less_informative": side,
        }
        for (a, b, score, side), _ in ranked[:limit]
    ]


# --------------------------------------------------------------------------------------------
# 3. The report
# --------------------------------------------------------------------------------------------


def dedup_report(redundancy: RedundancyResult, backlog: BacklogResult) -> dict[str, Any]:
    """The JSON-serialisable report: the index table (per write path and across) and the backlog."""
    return {
        "rows": redundancy.rows,
        "by_write_path": {name: dict(entry) for name, entry in redundancy.by_write_path.items()},
        "across_write_paths": dict(redundancy.across_write_paths),
        "backlog": backlog.summary(),
    }


_PAIRS_SCHEMA = {
    "index": pl.Int64,
    "match_index": pl.Int64,
    "write_path": pl.String,
    "match_write_path": pl.String,
    "similarity": pl.Float64,
}


def pairs_frame(result: RedundancyResult, across: bool = False) -> pl.DataFrame:
    """One row per row redundant at the lowest threshold, with its best earlier match.

    Within write paths by default (the match is of the same path); ``across=True`` uses the best
    earlier match of any path. ``index``/``match_index`` are input positions; ``id``/``match_id``
    and ``text``/``match_text`` are added when the measurement was given ids or texts. Rows come
    in (fact date, id) order.
    """
    best = result.any_max if across else result.same_max
    match = result.any_match if across else result.same_match
    t_min = np.float32(min(result.thresholds))
    ordered = result.order
    rows = ordered[(best[ordered] >= t_min) & (match[ordered] >= 0)]
    matches = match[rows]
    paths = result.write_paths
    data: dict[str, Any] = {
        "index": rows,
        "match_index": matches,
        "write_path": [paths[k] for k in rows],
        "match_write_path": [paths[k] for k in matches],
        "similarity": best[rows].astype(np.float64),
    }
    schema = dict(_PAIRS_SCHEMA)
    for name, values in (("id", result.ids), ("text", result.texts)):
        if values is not None:
            data[name] = [values[k] for k in rows]
            data[f"match_{name}"] = [values[k] for k in matches]
            schema[name] = pl.String
            schema[f"match_{name}"] = pl.String
    return pl.DataFrame(data, schema=schema)


def clusters_frame(backlog: BacklogResult) -> pl.DataFrame:
    """The lines of every backlog cluster (two or more lines): cluster_id, day, line, text, kind."""
    return (
        backlog.lines.filter(pl.col("cluster_size") >= 2)
        .sort(["cluster_id", "position"])
        .select(["cluster_id", "day", "line", "text", "kind"])
    )


def _percent(rate: float) -> str:
    return f"{100.0 * rate:.1f}%"


def markdown_table(report: dict[str, Any]) -> str:
    """The write-path table of the dedup measurement (design §5.11), then the backlog figures."""
    keys = [k for k in report["across_write_paths"] if k != "rows"]
    lines = [
        "| write path | rows | " + " | ".join(f"≥{k}" for k in keys) + " |",
        "|---|---:|" + "---:|" * len(keys),
    ]
    entries = [*report["by_write_path"].items(), (ACROSS_WRITE_PATHS, report["across_write_paths"])]
    for name, entry in entries:
        cells = [name, str(entry["rows"]), *(_percent(entry[k]) for k in keys)]
        lines.append("| " + " | ".join(cells) + " |")
    b = report["backlog"]
    lines += [
        "",
        f"On disk: {b['fact_lines']:,} fact lines across {b['logs']:,} daily logs, "
        f"{b['exact_repeats']:,} exact repeats, and {b['near_duplicates']:,} token-set near-duplicates "
        f"(token_set_ratio ≥ {b['near_threshold']:g}) in {b['clusters']:,} clusters.",
    ]
    largest = b["largest_cluster"]
    if largest["size"]:
        lines.append(
            f"The largest cluster is {largest['size']:,} lines across {largest['distinct_days']:,} "
            f"distinct days: {largest['text']!r}."
        )
    if b["paraphrase_pairs"]:
        lines += ["", "Paraphrase pairs where one side is strictly less informative:", ""]
        for pair in b["paraphrase_pairs"]:
            lines.append(
                f"- {pair['similarity']:g}  A: {pair['a']}  /  B: {pair['b']}"
                f"  (less informative: {pair['less_informative'].upper()})"
            )
    return "\n".join(lines) + "\n"


__all__ = [
    "ACROSS_WRITE_PATHS",
    "DEFAULT_NEAR_THRESHOLD",
    "DEFAULT_THRESHOLDS",
    "BacklogResult",
    "RedundancyResult",
    "clusters_frame",
    "dedup_report",
    "load_logs",
    "markdown_table",
    "measure_backlog",
    "measure_redundancy",
    "pairs_frame",
    "threshold_key",
    "token_set_near_pairs",
]
