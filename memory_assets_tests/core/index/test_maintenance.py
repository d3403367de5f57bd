"""The maintenance clock: when a table is due an optimize (the fragment, version and daily rules,
and the growth rule), a planner's first look, the clock as the homes planner keeps it, and the
prune's second pass after the retention."""

from pathlib import Path

from memory_assets.core.index.maintenance import (
    CHECK_EVERY_S,
    DISK_GROWTH_SOFT,
    FRAGMENTS_SOFT,
    OPTIMIZE_EVERY_S,
    PRUNE_AFTER_RETENTION_S,
    VERSIONS_SOFT,
    MaintenanceClock,
    disk_bytes,
    prune_again_after,
)
from memory_assets.core.index.store import TableStats
from memory_assets.core.settings import Settings

NOW = 1_800_000_000.0


def stats(fragments: int = 1, versions: int = 1, version: int = 7) -> TableStats:
    return TableStats(rows=10, fragments=fragments, version=version, bytes=0, indices=[], versions=versions)


def test_an_optimize_is_due_for_fragments_versions_or_a_changed_day() -> None:
    clock = MaintenanceClock(optimized_at=NOW, optimized_version=7)
    assert clock.reasons(stats(), NOW) == []
    assert clock.reasons(stats(fragments=FRAGMENTS_SOFT + 1), NOW) == [
        f"{FRAGMENTS_SOFT + 1} fragments > {FRAGMENTS_SOFT}"
    ]
    assert clock.reasons(stats(versions=VERSIONS_SOFT + 1), NOW) == [
        f"{VERSIONS_SOFT + 1} versions > {VERSIONS_SOFT}"
    ]
    a_day = NOW + OPTIMIZE_EVERY_S
    assert clock.reasons(stats(version=7), a_day) == []  # a day, but the table is the one optimised
    assert clock.reasons(stats(version=8), a_day - 1) == []  # changed, but within the day
    assert clock.reasons(stats(version=8), a_day) == ["a day since the last optimize and the table changed"]


def test_a_planners_first_look_counts_the_table_optimised_and_a_due_look_counts_its_optimize() -> None:
    clock = MaintenanceClock()
    assert clock.check_due(NOW)
    assert clock.look(stats(version=3), NOW) == []
    assert clock.dump() == [NOW, NOW, 3]
    assert not clock.check_due(NOW + CHECK_EVERY_S - 1) and clock.check_due(NOW + CHECK_EVERY_S)

    later = NOW + OPTIMIZE_EVERY_S
    assert clock.look(stats(version=9), later) == ["a day since the last optimize and the table changed"]
    assert clock.dump() == [later, later, 9]  # its batch optimises it: the clock counts from now
    assert MaintenanceClock.load(clock.dump()) == MaintenanceClock(later, 9, later)
    assert MaintenanceClock.load(None) == MaintenanceClock() == MaintenanceClock.load(["not", "a clock"])


def test_the_growth_rule_measures_from_the_size_after_the_last_optimize(settings: Settings) -> None:
    clock = MaintenanceClock()
    assert not clock.grown(None)  # an object store: never measured
    assert not clock.grown(1000) and clock.bytes_after == 1000  # the first measure is the baseline
    assert not clock.grown(int(1000 * DISK_GROWTH_SOFT))
    assert clock.grown(int(1000 * DISK_GROWTH_SOFT) + 1)
    clock.bytes_after = 5000  # measured again after an optimize and its prune
    assert not clock.grown(5000)

    assert disk_bytes(settings) is None  # no table yet
    table = Path(settings.index_uri) / f"{settings.table_name}.lance"
    (table / "data").mkdir(parents=True)
    (table / "data" / "a.lance").write_bytes(b"x" * 300)
    (table / "b.manifest").write_bytes(b"y" * 12)
    assert disk_bytes(settings) == 312


def test_a_prune_that_kept_versions_comes_again_after_the_retention() -> None:
    assert prune_again_after(30.0) == 30.0 + PRUNE_AFTER_RETENTION_S
