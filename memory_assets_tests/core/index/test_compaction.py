"""A compaction rewrites at most half the table's rows, leaves the large fragments alone, and keeps
the table one that LanceDB reads and searches as before."""

from datetime import timedelta
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memory_assets.core.index.compaction import fragments_to_merge, tail
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.index.table_writer import TableWriter
from memory_assets.core.settings import Settings
from memory_assets_tests.core.index.test_table_writer import _row


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    """``fragments_to_merge`` as [start, stop) runs of consecutive positions."""
    runs: list[tuple[int, int]] = []
    for i in fragments_to_merge(rows):
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def test_the_tail_after_the_large_fragments_is_merged() -> None:
    # a home's history, then earlier merges, each at least the rest after it, then the day's
    # turns: from the first fragment smaller than what follows it (3 < 1 + 2 + 3), 9 rows of 535
    assert _runs([255, 145, 81, 45, 3, 1, 2, 3]) == [(4, 8)]
    assert _runs([255, 145, 81, 45, 30, 20]) == [(2, 6)]  # 81 < 45 + 30 + 20
    assert _runs([255, 1, 2]) == [(1, 3)]  # the day's turns alone
    assert _runs([271]) == []  # compacted: nothing to merge
    assert _runs([255, 10, 3, 1, 1]) == []  # each at least the rest after it
    # a tail holding more than half the rows is not merged as one: the smaller one after it is
    assert _runs([100, 60, 50, 1, 2]) == [(3, 5)]


def test_a_fast_growing_table_also_merges_a_run_before_the_tail() -> None:
    # a day's merged tails outgrew the fragments before them: merging the tail alone would leave 7
    # fragments, so the small ones before it go too, within what the tail left of the half
    # (11 + 5 + 1 + 14 = 31 rows, with the tail's 11: 42 of 122)
    assert _runs([11, 5, 1, 14, 30, 47, 1, 1, 1, 1, 1, 1, 1, 1, 3]) == [(0, 4), (6, 15)]
    # few enough left after the tail: the tail alone
    assert _runs([20, 18, 30, 42, 30, 18, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1]) == [(4, 16)]
    assert _runs([1] * 20) == [(10, 20)]  # the tail holds the half: nothing more fits


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=40))
def test_no_compaction_rewrites_more_than_half_the_rows(rows: list[int]) -> None:
    merged = fragments_to_merge(rows)
    assert merged == sorted(set(merged)) and all(0 <= i < len(rows) for i in merged)
    assert sum(rows[i] for i in merged) <= sum(rows) / 2
    if len(rows) - tail(rows) > 1 and sum(rows[tail(rows) :]) <= sum(rows) / 2:
        assert set(range(tail(rows), len(rows))) <= set(merged)  # the tail is always merged


def _add(store: MemoryStore, writer: TableWriter, first: int, contents: list[str]) -> None:
    vectors = np.random.default_rng(first).normal(size=(len(contents), 4)).astype(np.float32)
    rows = [_row(first + i, c) for i, c in enumerate(contents)]
    writer.apply_diff(store.table(), [], rows, vectors, [None] * len(rows))


def test_an_optimize_leaves_the_large_fragment_and_folds_the_new_rows(settings: Settings) -> None:
    store = MemoryStore(settings.index_uri)
    writer = TableWriter(store)
    writer.table_for_write("test-model", 4)
    _add(store, writer, 0, [f"Fact number {n} about gardening" for n in range(60)])
    writer.optimize()  # builds the indexes over the first fragment
    data = Path(settings.index_uri) / "archival_memories.lance" / "data"
    first = set(data.iterdir())
    dataset = store.table().to_lance()
    version = dataset.data_storage_version
    for n in range(6):  # a day's turns: a fragment a commit
        _add(store, writer, 100 + n, [f"Turn {n} mentions a zanzibar quokka"])
    assert len(store.table().to_lance().get_fragments()) == 7
    writer.optimize()
    writer.prune_versions(grace=timedelta(0))
    table = store.table()
    fragments = table.to_lance().get_fragments()
    assert [f.count_rows() for f in fragments] == [60, 6]  # the turns merged, the history left alone
    assert first <= set(data.iterdir())  # the first fragment's file was not rewritten
    assert table.to_lance().data_storage_version == version  # Lance wrote the format LanceDB reads
    assert table.count_rows() == 66
    assert all(table.index_stats(i.name).num_unindexed_rows == 0 for i in table.list_indices())
    found = table.search("quokka", query_type="fts").limit(10).to_list()
    assert sorted(r["id"] for r in found) == [f"row-{100 + n}" for n in range(6)]
    assert len(store.contents()) == 66
