"""The table's reads held across processes: a prune waits for the reads in flight, holds new
ones off meanwhile, and gives up (keeping the versions) when a read outlasts its wait. Each side
runs on a thread of its own, with its own lock files' descriptors, as separate processes do."""

import threading
import time

from memory_assets.core.index import table_reads

URI, TABLE = "/nowhere/index", "archival_memories"


def test_a_prune_gives_up_on_a_read_that_outlasts_its_wait() -> None:
    inside, release = threading.Event(), threading.Event()

    def read() -> None:
        with table_reads.reading(URI, TABLE):
            inside.set()
            release.wait(10)

    reader = threading.Thread(target=read)
    reader.start()
    inside.wait(10)
    start = time.monotonic()
    with table_reads.pruning(URI, TABLE, wait=0.3) as clear:
        waited = time.monotonic() - start
    release.set()
    reader.join()
    assert not clear and waited >= 0.3
    with table_reads.pruning(URI, TABLE, wait=0.3) as clear:
        assert clear  # no read in flight any more


def test_reads_that_start_while_a_prune_holds_them_off_wait_for_it() -> None:
    order: list[str] = []
    holding = threading.Event()

    def read() -> None:
        holding.wait(10)
        with table_reads.reading(URI, TABLE):
            order.append("read")

    reader = threading.Thread(target=read)
    reader.start()
    with table_reads.pruning(URI, TABLE, wait=1.0) as clear:
        assert clear
        holding.set()
        time.sleep(0.3)  # the read has started meanwhile, and waits
        order.append("pruned")
    reader.join()
    assert order == ["pruned", "read"]
