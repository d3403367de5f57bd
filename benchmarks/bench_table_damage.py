"""What looking for damage to the index table costs, side by side in one run, in temporary dirs.

    .venv/bin/python benchmarks/bench_table_damage.py            # 100k-row table for the reader
    .venv/bin/python benchmarks/bench_table_damage.py --quick    # 10k rows

Real LanceDB (``core/index/table_damage.py``, design §9):

(a) the file ledger: ``record`` (after each commit of the writer) and ``suspects`` (once per table
    version, before the first read), for tables of 16, 206 and 2,006 files, each beside one
    single-row LanceDB add to a table of that many fragments (the commit it follows);
(b) the bounded reader (``verify``: the whole table read in a child process): its wall time and
    the child's peak RSS, beside an in-process scan of the same columns.

Figures go to stdout, progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import resource
import statistics
import sys
import tempfile
import time

import lancedb
import numpy as np
import pyarrow as pa

from memory_assets.core.index import table_damage
from memory_assets.core.index.store import schema

DIM = 384


def _rows(n: int, start: int = 0) -> pa.Table:
    sch = schema(DIM, "bench", "bench")
    rng = np.random.default_rng(start)
    cols: dict[str, pa.Array] = {}
    for field in sch:
        if field.name == "vector":
            flat = pa.array(rng.standard_normal(n * DIM).astype(np.float32))
            cols[field.name] = pa.FixedSizeListArray.from_arrays(flat, DIM)
        elif pa.types.is_string(field.type):
            cols[field.name] = pa.array([f"{field.name} {start + i} " + "word " * (i % 30) for i in range(n)])
        else:
            cols[field.name] = pa.nulls(n, field.type)
    return pa.table(cols, schema=sch)


def _median_ms(fn: object, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def ledger(files: int) -> dict[str, float]:
    """(a): record/suspects on a table of ``files`` data files, beside one add commit to it."""
    uri = tempfile.mkdtemp(prefix="bench-damage-")
    table = lancedb.connect(uri).create_table("archival_memories", data=_rows(1))
    for i in range(files - 1):  # one fragment (one data file) per add, like the write path's turns
        table.add(_rows(1, i + 1))
    directory = table_damage.table_dir(uri, "archival_memories")
    assert directory is not None
    table_damage.record(directory, afresh=True)
    counter = [files]

    def add() -> None:
        counter[0] += 1
        table.add(_rows(1, counter[0]))

    adds, records = [], []
    for _ in range(20):  # each commit timed, then the record that follows it
        start = time.perf_counter()
        add()
        adds.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        table_damage.record(directory)
        records.append((time.perf_counter() - start) * 1000)
    add_ms, record_ms = statistics.median(adds), statistics.median(records)
    suspects_ms = _median_ms(lambda: table_damage.suspects(directory), 20)
    n = len(table_damage.files_of(directory))
    return {"files": n, "add_ms": add_ms, "record_ms": record_ms, "suspects_ms": suspects_ms}


def reader(rows: int) -> dict[str, float]:
    """(b): the bounded child read of a ``rows``-row table with its indexes, beside a scan."""
    from lancedb.index import FTS, Bitmap, BTree

    uri = tempfile.mkdtemp(prefix="bench-damage-")
    table = lancedb.connect(uri).create_table("archival_memories", data=_rows(rows))
    table.create_index("content", config=FTS())
    table.create_index("id", config=BTree())
    table.create_index("source_type", config=Bitmap())
    start = time.perf_counter()
    for _ in table.search().select(table.schema.names).limit(None).to_batches(4096):
        pass
    scan_s = time.perf_counter() - start
    start = time.perf_counter()
    damage = table_damage.verify(uri, "archival_memories")
    verify_s = time.perf_counter() - start
    assert damage is None, damage
    child_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "rows": rows,
        "bytes": int(table.stats()["total_bytes"]),
        "scan_s": scan_s,
        "verify_s": verify_s,
        "child_peak_mib": child_mib,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 10k-row table for the reader")
    args = parser.parse_args()
    print("(a) the file ledger, per commit and per table version (medians of 20)")
    print("| files | one add commit | record after it | suspects before a read |")
    print("|---|---|---|---|")
    for files in (10, 200, 2000):
        print(f"building a table of {files} fragments", file=sys.stderr)
        r = ledger(files)
        print(
            f"| {r['files']:.0f} | {r['add_ms']:.1f} ms | {r['record_ms']:.2f} ms "
            f"({r['record_ms'] / r['add_ms']:.0%} of the add) | {r['suspects_ms']:.2f} ms |"
        )
    rows = 10_000 if args.quick else 100_000
    print(f"building a {rows}-row table", file=sys.stderr)
    r = reader(rows)
    print("\n(b) the bounded reader")
    print(
        f"rows {r['rows']}, {r['bytes'] / 1e6:.0f} MB: in-process scan {r['scan_s']:.1f} s; child read "
        f"(scan + every index) {r['verify_s']:.1f} s ({r['verify_s'] / r['scan_s']:.1f}x), child peak RSS "
        f"{r['child_peak_mib']:.0f} MiB"
    )


if __name__ == "__main__":
    main()
