"""The dedup measurement core: exact index redundancy, the on-disk backlog, and the report."""

import json
import random
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rapidfuzz import fuzz, process

from memory_assets.core.audit.dedup import (
    BacklogResult,
    clusters_frame,
    dedup_report,
    load_logs,
    markdown_table,
    measure_backlog,
    measure_redundancy,
    pairs_frame,
    threshold_key,
    token_set_near_pairs,
)
from memory_assets.core.capture.daily_log import LogFact
from memory_assets.core.text import fold

THRESHOLDS = (0.995, 0.95, 0.92)
KEYS = ["0.995", "0.95", "0.92"]


# ---------------------------------------------------------------------------------------------
# index redundancy
# ---------------------------------------------------------------------------------------------


def _clustered_index(seed: int, n: int = 160, d: int = 16) -> tuple[np.ndarray, list[str], list[tuple]]:
    """Random vectors plus near copies of earlier ones at several noise levels, over three paths."""
    rng = np.random.default_rng(seed)
    paths = ["archive_log", "notebook", "legacy_direct"]
    bases = rng.standard_normal((n // 3, d))
    vectors = [bases[k] for k in range(len(bases))]
    while len(vectors) < n:
        src = vectors[rng.integers(len(vectors))]
        noise = rng.choice([0.0, 0.02, 0.05, 0.2, 0.3, 0.4, 0.6])
        vectors.append(src + noise * np.linalg.norm(src) / np.sqrt(d) * rng.standard_normal(d))
    x = np.array(vectors, dtype=np.float64)
    x[5] = 0.0  # a zero vector matches nothing
    write_paths = [paths[k] for k in rng.integers(0, 3, size=n)]
    days = [f"2026-0{1 + k % 9}-{1 + k % 28:02d}" for k in rng.integers(0, 500, size=n)]
    days[7] = ""  # a row without a fact date sorts first
    keys = [(days[k], f"id{k:04d}") for k in range(n)]
    return x, write_paths, keys


def _brute_force(x: np.ndarray, write_paths: list[str], keys: list[tuple]) -> dict:
    """O(n^2) reference: full similarity matrix, strict lower triangle in (date, id) order."""
    order = sorted(range(len(keys)), key=keys.__getitem__)
    v = x[order].astype(np.float32)
    norms = np.linalg.norm(v, axis=1)
    v[norms > 0] /= norms[norms > 0, None]
    sims = v @ v.T
    sims[np.triu_indices(len(v))] = -np.inf
    p = np.array([write_paths[k] for k in order])
    same = np.where(p[:, None] == p[None, :], sims, -np.inf)
    best_same, best_any = same.max(axis=1), sims.max(axis=1)
    out: dict = {"by": {}, "across": {"rows": len(v)}}
    for t in THRESHOLDS:
        out["across"][threshold_key(t)] = float(np.mean(best_any >= np.float32(t)))
    for name in sorted(set(write_paths)):
        mask = p == name
        entry: dict = {"rows": int(mask.sum())}
        for t in THRESHOLDS:
            entry[threshold_key(t)] = float(np.mean(best_same[mask] >= np.float32(t)))
        out["by"][name] = entry
    return out


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("block", [7, 64, 2048])
def test_rates_equal_brute_force(seed: int, block: int) -> None:
    x, write_paths, keys = _clustered_index(seed)
    result = measure_redundancy(x, write_paths, keys, THRESHOLDS, block=block)
    expected = _brute_force(x, write_paths, keys)
    assert result.by_write_path == expected["by"]
    assert result.across_write_paths == expected["across"]
    assert result.rows == len(keys)
    # the construction makes every threshold bite, within paths and across them
    for name, entry in result.by_write_path.items():
        assert all(entry[k] > 0 for k in KEYS), name
    assert all(result.across_write_paths[k] >= max(e[k] for e in result.by_write_path.values()) for k in KEYS)


def test_best_match_is_an_earlier_row_of_the_same_path_with_the_maximum_similarity() -> None:
    x, write_paths, keys = _clustered_index(11)
    result = measure_redundancy(x, write_paths, keys, THRESHOLDS, block=7)
    v = x.astype(np.float32)
    norms = np.linalg.norm(v, axis=1)
    v[norms > 0] /= norms[norms > 0, None]
    redundant = np.flatnonzero(result.same_max >= np.float32(0.92))
    assert redundant.size > 0
    for row in redundant:
        match = result.same_match[row]
        assert write_paths[match] == write_paths[row]
        assert keys[match] < keys[row]
        earlier = [k for k in range(len(keys)) if keys[k] < keys[row] and write_paths[k] == write_paths[row]]
        best = max(float(v[row] @ v[k]) for k in earlier)
        assert float(v[row] @ v[match]) == pytest.approx(best, abs=1e-5)
        assert result.same_max[row] == pytest.approx(best, abs=1e-5)
    assert np.all(result.same_match[result.same_max < np.float32(0.92)] == -1)


def test_redundancy_follows_date_then_id_order_not_input_order() -> None:
    x, write_paths, keys = _clustered_index(5)
    base = measure_redundancy(x, write_paths, keys, THRESHOLDS, block=7)
    perm = np.random.default_rng(9).permutation(len(keys))
    shuffled = measure_redundancy(
        x[perm], [write_paths[k] for k in perm], [keys[k] for k in perm], THRESHOLDS, block=7
    )
    assert shuffled.by_write_path == base.by_write_path
    assert shuffled.across_write_paths == base.across_write_paths
    # the same rows, moved: shuffled row i is base row perm[i], and so are their matches
    mapped = np.where(shuffled.same_match >= 0, perm[np.maximum(shuffled.same_match, 0)], -1)
    assert np.array_equal(mapped, base.same_match[perm])
    assert np.array_equal(shuffled.same_max, base.same_max[perm])


@pytest.mark.parametrize("block", [1, 2, 2048])
def test_the_earlier_row_is_decided_by_fact_date_then_id(block: int) -> None:
    v = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    paths = ["archive_log"] * 3
    # input order c, a, b; (date, id) order: a (no date), b, c
    keys = [("2026-07-02", "c"), ("", "a"), ("2026-07-01", "b")]
    result = measure_redundancy(v, paths, keys, THRESHOLDS, block=block)
    assert result.same_match.tolist() == [1, -1, 1]  # c's best earlier match is a (ties: earliest)
    assert result.by_write_path["archive_log"] == {"rows": 3, "0.995": 2 / 3, "0.95": 2 / 3, "0.92": 2 / 3}


def test_hand_made_index_report_and_markdown_table() -> None:
    vectors = np.array(
        [
            [1.0, 0.0, 0.0],  # a
            [0.96, 0.28, 0.0],  # b: cos(a, b) = 0.96
            [0.0, 0.0, 1.0],  # c
            [2.0, 0.0, 0.0],  # n1: a, in the notebook
            [0.0, 1.0, 0.0],  # n2
        ]
    )
    paths = ["archive_log", "archive_log", "archive_log", "notebook", "notebook"]
    ids = ["a", "b", "c", "n1", "n2"]
    keys = [(f"2026-01-0{k + 1}", i) for k, i in enumerate(ids)]
    texts = ["likes tea", "likes green tea", "lives in Oslo", "likes tea", "plays chess"]
    result = measure_redundancy(vectors, paths, keys, ids=ids, texts=texts)
    report = dedup_report(result, measure_backlog([]))
    assert report["by_write_path"] == {
        "archive_log": {"rows": 3, "0.995": 0.0, "0.95": 1 / 3, "0.92": 1 / 3},
        "notebook": {"rows": 2, "0.995": 0.0, "0.95": 0.0, "0.92": 0.0},
    }
    assert report["across_write_paths"] == {"rows": 5, "0.995": 0.2, "0.95": 0.4, "0.92": 0.4}

    within = pairs_frame(result)
    assert within.select("index", "match_index", "id", "match_id", "text", "match_text").rows() == [
        (1, 0, "b", "a", "likes green tea", "likes tea")
    ]
    assert within["similarity"][0] == pytest.approx(0.96, abs=1e-6)
    across = pairs_frame(result, across=True)
    assert across.select("id", "match_id", "write_path", "match_write_path").rows() == [
        ("b", "a", "archive_log", "archive_log"),
        ("n1", "a", "notebook", "archive_log"),
    ]

    table = markdown_table(report)
    assert table.splitlines()[:5] == [
        "| write path | rows | ≥0.995 | ≥0.95 | ≥0.92 |",
        "|---|---:|---:|---:|---:|",
        "| archive_log | 3 | 0.0% | 33.3% | 33.3% |",
        "| notebook | 2 | 0.0% | 0.0% | 0.0% |",
        "| across write paths | 5 | 20.0% | 40.0% | 40.0% |",
    ]
    assert "On disk: 0 fact lines across 0 daily logs, 0 exact repeats" in table


def test_empty_index_reports_zeros() -> None:
    result = measure_redundancy(np.zeros((0, 384), dtype=np.float32), [], [])
    assert result.rows == 0
    assert result.by_write_path == {}
    assert result.across_write_paths == {"rows": 0, "0.995": 0.0, "0.95": 0.0, "0.92": 0.0}
    assert pairs_frame(result).height == 0
    assert measure_redundancy(np.array([]), [], []).rows == 0


def test_threshold_keys_and_bad_input() -> None:
    assert [threshold_key(t) for t in THRESHOLDS] == KEYS
    with pytest.raises(ValueError):
        measure_redundancy(np.ones((2, 3)), ["a"], [("", "x")])
    with pytest.raises(ValueError):
        measure_redundancy(np.ones((1, 3)), ["a"], [("", "x")], thresholds=(1.5,))
    with pytest.raises(ValueError):
        measure_redundancy(np.full((1, 3), np.nan), ["a"], [("", "x")])


# ---------------------------------------------------------------------------------------------
# the backlog
# ---------------------------------------------------------------------------------------------

WATER_LONG = "User wants to be reminded to drink water hourly from 9 AM to 9 PM daily."
WATER_SHORT = "User wants to be reminded to drink water daily."

HAND_LOGS: list[tuple[date, list[str]]] = [
    (
        date(2026, 7, 1),
        [
            "User prefers metric units.",  # 0 first
            WATER_LONG,  # 1 first
            "User lives in Berlin.",  # 2 first
            "User's favourite colour is teal.",  # 3 first
        ],
    ),
    (
        date(2026, 7, 2),
        [
            "user prefers  metric UNITS.",  # 4 exact repeat of 0 (case, whitespace)
            WATER_SHORT,  # 5 near duplicate of 1 (a strict token subset)
            "User has a cat named Miso.",  # 6 first
        ],
    ),
    (
        date(2026, 7, 3),
        [
            "User prefers metric units!",  # 7 near duplicate of 0 (same fold, different normalise)
            "User lives in Berlin.",  # 8 exact repeat of 2
            "User enjoys hiking on weekends.",  # 9 first
            "User prefers metric units.",  # 10 exact repeat of 0
            "User's favorite colour is teal.",  # 11 near duplicate of 3 (a spelling variant)
        ],
    ),
]


def _as_logs(spec: list[tuple[date, list[str]]]) -> list[tuple[date, list[LogFact]]]:
    return [
        (day, [LogFact(text, "preference", line=5 + 2 * k) for k, text in enumerate(texts)])
        for day, texts in spec
    ]


def test_hand_made_backlog_counts() -> None:
    result = measure_backlog(_as_logs(HAND_LOGS))
    assert result.fact_lines == 12
    assert result.logs == 3
    assert result.exact_repeats == 3
    assert result.near_duplicates == 3
    assert result.clusters == 4
    assert result.largest_cluster == {"size": 4, "distinct_days": 3, "text": "user prefers metric units."}
    assert result.lines["kind"].to_list() == [
        "first",
        "first",
        "first",
        "first",
        "exact_repeat",
        "near_duplicate",
        "first",
        "near_duplicate",
        "exact_repeat",
        "first",
        "exact_repeat",
        "near_duplicate",
    ]
    frame = clusters_frame(result)
    assert frame.columns == ["cluster_id", "day", "line", "text", "kind"]
    groups = frame.group_by("cluster_id", maintain_order=True).agg(pl.col("text")).rows()
    assert [(cid, len(texts)) for cid, texts in groups] == [(0, 4), (1, 2), (2, 2), (3, 2)]
    assert frame.filter(pl.col("cluster_id") == 1)["text"].to_list() == [WATER_LONG, WATER_SHORT]


def test_paraphrase_pair_names_the_strictly_less_informative_side() -> None:
    result = measure_backlog(_as_logs(HAND_LOGS))
    assert result.paraphrase_pairs == [
        {"a": WATER_LONG, "b": WATER_SHORT, "similarity": 100.0, "less_informative": "b"}
    ]
    # written the other way round, the short one comes first and is still the less informative
    flipped = measure_backlog(_as_logs([(date(2026, 7, 1), [WATER_SHORT]), (date(2026, 7, 2), [WATER_LONG])]))
    assert flipped.near_duplicates == 1
    assert flipped.paraphrase_pairs == [
        {"a": WATER_SHORT, "b": WATER_LONG, "similarity": 100.0, "less_informative": "a"}
    ]


def _synthetic_logs(seed: int, days: int = 12, per_day: int = 30) -> list[tuple[date, list[LogFact]]]:
    rng = random.Random(seed)
    words = ["tea", "coffee", "python", "rust", "berlin", "hiking", "chess", "vim", "metric", "dark"]
    words += ["mode", "daily", "hourly", "water", "reminded", "cat", "miso", "teal", "colour", "jazz"]
    pool: list[str] = []
    out = []
    for k in range(days):
        facts = []
        for m in range(per_day):
            roll = rng.random()
            if pool and roll < 0.2:
                text = rng.choice(pool)
            elif pool and roll < 0.35:
                text = rng.choice(pool).rstrip(".") + " " + rng.choice(words) + "."
            else:
                text = "User " + " ".join(rng.sample(words, rng.randint(3, 7))) + "."
                pool.append(text)
            facts.append(LogFact(text, "preference", line=3 + m))
        out.append((date(2026, 6, 1) + timedelta(days=k), facts))
    return out


def test_backlog_is_stable_across_runs_and_day_order() -> None:
    logs = _synthetic_logs(3)
    first = measure_backlog(logs)
    again = measure_backlog(logs)
    shuffled_days = list(logs)
    random.Random(4).shuffle(shuffled_days)
    shuffled = measure_backlog(shuffled_days)
    assert first.clusters > 0 and first.near_duplicates > 0 and first.exact_repeats > 0
    for other in (again, shuffled):
        assert other.summary() == first.summary()
        assert other.lines.equals(first.lines)
        assert clusters_frame(other).equals(clusters_frame(first))


def test_backlog_matches_an_all_pairs_reference() -> None:
    logs = _synthetic_logs(8, days=6, per_day=25)
    result = measure_backlog(logs)
    contents = [f.content for _, facts in logs for f in facts]  # already in (day, line) order
    folded = [fold(c) for c in contents]
    scores = process.cdist(folded, folded, scorer=fuzz.token_set_ratio, score_cutoff=90.0)
    norm = [" ".join(c.lower().split()) for c in contents]
    exact = [norm[i] in norm[:i] for i in range(len(norm))]
    near = [not exact[i] and bool((scores[i, :i] >= 90.0).any()) for i in range(len(norm))]
    assert result.exact_repeats == sum(exact)
    assert result.near_duplicates == sum(near)


def test_backlog_reads_real_daily_logs(tmp_path: Path) -> None:
    for day, texts in HAND_LOGS:
        body = f"# Daily Log - {day.isoformat()}\n\n## 09:12 — 5c1e0a9f\n\n"
        body += "".join(f"- [preference] {t}\n" for t in texts)
        (tmp_path / f"{day.isoformat()}.md").write_text(body, encoding="utf-8")
    (tmp_path / "notes.md").write_text("- [x] not a log\n", encoding="utf-8")
    result = measure_backlog(load_logs(tmp_path))
    hand = measure_backlog(_as_logs(HAND_LOGS))
    assert result.summary() == hand.summary()
    assert result.lines["line"].to_list()[:2] == [5, 6]


def test_empty_backlog_reports_zeros() -> None:
    for logs in ([], [(date(2026, 7, 1), []), (date(2026, 7, 2), [])]):
        result = measure_backlog(logs)
        assert result.summary() == {
            "fact_lines": 0,
            "logs": len(logs),
            "exact_repeats": 0,
            "near_duplicates": 0,
            "clusters": 0,
            "largest_cluster": {"size": 0, "distinct_days": 0, "text": None},
            "paraphrase_pairs": [],
            "near_threshold": 90.0,
        }
        assert clusters_frame(result).height == 0


def _random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 7))) for _ in range(60)]
    texts: list[str] = []
    for _ in range(n):
        roll = rng.random()
        if texts and roll < 0.3:  # typo
            chars = list(rng.choice(texts) or "x")
            chars[rng.randrange(len(chars))] = rng.choice("abcdefgh ")
            texts.append("".join(chars))
        elif texts and roll < 0.5:  # subset / superset
            toks = rng.choice(texts).split()
            texts.append(" ".join(toks[:-1] if len(toks) > 1 and rng.random() < 0.5 else toks + ["zz"]))
        else:
            texts.append(" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 9))))
    return sorted(set(texts + ["", "a", "colour", "color"]))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("threshold", [90.0, 75.0])
def test_token_set_near_pairs_equal_all_pairs_cdist(seed: int, threshold: float) -> None:
    texts = _random_texts(seed, 400)
    i, j, s = token_set_near_pairs(texts, threshold)
    full = process.cdist(texts, texts, scorer=fuzz.token_set_ratio, score_cutoff=threshold)
    ref_i, ref_j = np.nonzero(np.triu(full, 1))
    assert len(ref_i) > 20
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == list(
        zip(ref_i.tolist(), ref_j.tolist(), strict=True)
    )
    assert np.allclose(s, full[ref_i, ref_j])


# ---------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------


def test_report_json_shape() -> None:
    x, write_paths, keys = _clustered_index(2)
    report = dedup_report(
        measure_redundancy(x, write_paths, keys, block=7), measure_backlog(_as_logs(HAND_LOGS))
    )
    assert json.loads(json.dumps(report)) == report
    assert list(report) == ["rows", "by_write_path", "across_write_paths", "backlog"]
    assert report["rows"] == len(keys)
    assert list(report["by_write_path"]) == ["archive_log", "legacy_direct", "notebook"]
    for entry in [*report["by_write_path"].values(), report["across_write_paths"]]:
        assert list(entry) == ["rows", *KEYS]
        assert all(0.0 <= entry[k] <= 1.0 for k in KEYS)
    assert sum(e["rows"] for e in report["by_write_path"].values()) == report["rows"]
    assert list(report["backlog"]) == [
        "fact_lines",
        "logs",
        "exact_repeats",
        "near_duplicates",
        "clusters",
        "largest_cluster",
        "paraphrase_pairs",
        "near_threshold",
    ]
    table = markdown_table(report)
    assert "12 fact lines across 3 daily logs, 3 exact repeats, and 3 token-set near-duplicates" in table
    assert "in 4 clusters" in table
    assert isinstance(measure_backlog([]), BacklogResult)


def test_core_does_not_import_dagster_or_lancedb() -> None:
    code = (
        "import sys, memory_assets.core.audit.dedup\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('dagster', 'lancedb')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
