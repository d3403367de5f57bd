"""Many homes in one code location (``MEMORY_ROOT``): the code location is loaded afresh with the
root set (``location``), the homes sensor ticks on a real instance, and its requests run as the
daemon would run them (``execute_in_process`` with the request's partition and tags), with the
real model and LanceDB in each user's home."""

import contextlib
import importlib
import os
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from types import ModuleType

import dagster as dg
import pytest

import memory_assets
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.root_feed import load_home_state, note_change
from memory_assets.core.ops.users import open_user_home
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.defs.daemon import apply_tick

FACTS = {
    "alice": (date(2026, 11, 10), "Alice keeps bees on the roof of her flat"),
    "bob": (date(2026, 11, 11), "Bob plays the cello every Sunday morning"),
    "carol": (date(2026, 11, 12), "Carol is training for the Lisbon marathon"),
}


@contextlib.contextmanager
def location(**env: str) -> Iterator[ModuleType]:
    """``memory_assets.definitions`` imported afresh with ``env`` set (the code location reads
    MEMORY_ROOT when it loads); the modules and the environment as they were afterwards."""
    names = [n for n in sys.modules if n == "memory_assets.definitions" or n.startswith("memory_assets.defs")]
    saved = {n: sys.modules.pop(n) for n in names}
    attributes = {n: getattr(memory_assets, n) for n in ("defs", "definitions") if hasattr(memory_assets, n)}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield importlib.import_module("memory_assets.definitions")
    finally:
        for name in [
            n for n in sys.modules if n == "memory_assets.definitions" or n.startswith("memory_assets.defs")
        ]:
            del sys.modules[name]
        sys.modules.update(saved)
        for name, module in attributes.items():
            setattr(memory_assets, name, module)
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def seed(root: Path, user: str, day: date, *facts: str) -> Settings:
    home = open_user_home(root, user, create=True)
    write_facts(home.settings, day, *facts)
    return home.settings


def tick(loc: ModuleType, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    from memory_assets.defs.homes.sensors import homes_sensor
    from memory_assets.defs.resources import MemoryHomeResource

    with dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"memory": MemoryHomeResource()}
    ) as context:
        result = homes_sensor(context)
    apply_tick(instance, result)
    return result


def members(result: dg.SensorResult) -> dict[str, dict]:
    """The users of a tick's upkeep batches, each with the hints its batch carries."""
    out: dict[str, dict] = {}
    for request in result.run_requests:
        assert request.job_name == "upkeep_batch", request.job_name
        for member in request.run_config["ops"]["upkeep_users"]["config"]["members"]:
            assert member["user"] not in out, f"{member['user']} is in two batches"
            out[member["user"]] = member
    return out


def materialisations(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, dg.AssetMaterialization]:
    """A batch run's materialisations of ``asset``, by the user's partition."""
    return {
        m.partition: m
        for m in (e.event_specific_data.materialization for e in result.get_asset_materialization_events())
        if m.asset_key == dg.AssetKey(asset) and m.partition
    }


def run(loc: ModuleType, instance: dg.DagsterInstance, request: dg.RunRequest) -> dg.ExecuteInProcessResult:
    """A request as the daemon launches it: its job, partition (or range) and tags."""
    job = loc.defs.resolve_job_def(request.job_name)
    selection = request.asset_selection
    if selection:
        job = job.get_subset(asset_selection=set(selection))
    return job.execute_in_process(
        instance=instance,
        partition_key=request.partition_key,
        tags=request.tags,
        run_config=request.run_config or None,
    )


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> Path:
    for name in ("MEMORY_HOME", "MEMORY_INDEX_URI", "MEMORY_INDEX_URI_TEMPLATE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_DREAM_MIN_FACTS", "1000000")  # the dream's gates shut: index runs only
    monkeypatch.setenv("MEMORY_UPKEEP_WAIT_S", "0")  # a tick's open batch is requested at its end
    return tmp_path / "root"


@pytest.mark.slow
def test_three_users_logs_lead_to_three_users_partitions_each_index_holding_only_its_rows(root: Path) -> None:
    for user, (day, fact) in FACTS.items():
        seed(root, user, day, fact)
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        assert sorted(instance.get_dynamic_partitions("users")) == sorted(FACTS)
        assert instance.get_dynamic_partitions("log_days") == []  # days are inside a user's runs
        [batch] = first.run_requests  # one run for the three users
        found = members(first)
        assert sorted(found) == sorted(FACTS)
        for user, member in found.items():  # each names its user's stale day
            assert member["keys"] == [f"archive:{FACTS[user][0].isoformat()}.md"]
        done = run(loc, instance, batch)
        assert done.success

        materialized = instance.get_materialized_partitions(dg.AssetKey("archive_index"))
        assert materialized == set(FACTS)
        for user, (_, fact) in FACTS.items():
            rows = open_user_home(root, user).store.contents()
            contents = {c for _, c, _ in rows}
            archive = [c for _, c, source in rows if source == "archive_log"]
            assert archive == [fact], f"{user}'s daily-log rows: {archive}"
            others = {f for u, (_, f) in FACTS.items() if u != user}
            assert not others & contents, f"{user}'s index holds another user's rows"

        # The batch ended: the next tick looks at its users' homes again, finds them current, and
        # asks for no catch-up (the day's dedup measurement was made in the batch, after it).
        second = tick(loc, instance, first.cursor)
        assert not any(m["keys"] for m in members(second).values())

        # A new home appears: the sensor registers it and puts its day in a batch of its own.
        day = date(2026, 11, 13)
        seed(root, "dave", day, "Dave moved to Porto in the spring")
        third = tick(loc, instance, second.cursor)
        assert "dave" in instance.get_dynamic_partitions("users")
        found = members(third)
        assert found["dave"]["keys"] == [f"archive:{day.isoformat()}.md"]
        assert not any(m["keys"] for u, m in found.items() if u != "dave")


@pytest.mark.slow
def test_a_tick_looks_only_at_the_homes_that_changed(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """30 homes: after a first look at every home, a tick looks at the two the feed names and the
    sweep's slice of one, and at no other home (its state file untouched)."""
    users = [f"user{n:02d}" for n in range(30)]
    for n, user in enumerate(users):
        seed(root, user, date(2026, 11, 1 + n % 20), f"{user} likes the number {n} very much")
    monkeypatch.setenv("MEMORY_HOMES_SWEEP_PER_TICK", "1")
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        cursor = None
        for _ in range(6):  # the first ticks see every (new) home; their batches run as launched
            result = tick(loc, instance, cursor)
            cursor = result.cursor
            for request in result.run_requests:
                assert run(loc, instance, request).success
        result = tick(loc, instance, cursor)  # the batches' users looked at again: all current
        assert not result.run_requests
        cursor = result.cursor
        states = {u: root / "state" / "homes_sensor" / f"{u}.json" for u in users}
        assert all(p.exists() for p in states.values())
        before = {u: p.stat().st_mtime_ns for u, p in states.items()}
        time.sleep(0.05)
        note_change(root, "user07", "turns")
        note_change(root, "user21", "forget")
        tick(loc, instance, cursor)
        looked = {u for u, p in states.items() if p.stat().st_mtime_ns != before[u]}
        assert {"user07", "user21"} <= looked and len(looked) <= 3, looked
        assert load_home_state(root, "homes_sensor", "user07")["days"]


@pytest.mark.slow
def test_a_new_home_with_several_days_is_one_member_of_one_batch(root: Path) -> None:
    """Five days of one new home are one member of the tick's one batch naming the five days, not
    five runs; run as the daemon runs it, it indexes every day of each user's and no other's, and
    each user's partition shows the batch's materialisation with the asset's own metadata."""
    days = [date(2026, 10, 1 + 7 * n) for n in range(5)]
    for n, day in enumerate(days):
        seed(root, "erin", day, f"Erin planted {n + 2} lemon trees in the allotment")
    seed(root, "frank", date(2026, 10, 10), "Frank repairs old radios in the shed")
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        result = tick(loc, instance, None)
        [request] = result.run_requests
        found = members(result)
        assert found["erin"]["keys"] == [f"archive:{d.isoformat()}.md" for d in days]
        assert found["frank"]["keys"] == ["archive:2026-10-10.md"]
        assert request.tags["memory_assets/users"] == "2"
        done = run(loc, instance, request)
        assert done.success
        assert "dagster/partition" not in done.dagster_run.tags  # a batch is no one user's run
        by_user = materialisations(done, "archive_index")
        assert by_user["erin"].metadata["days_reindexed"].value == 5
        assert by_user["erin"].metadata["embedded"].value == 5
        assert by_user["frank"].metadata["days_reindexed"].value == 1
        assert instance.get_materialized_partitions(dg.AssetKey("archive_index")) == {"erin", "frank"}
        archive = sorted(
            c for _, c, source in open_user_home(root, "erin").store.contents() if source == "archive_log"
        )
        assert archive == sorted(f"Erin planted {n + 2} lemon trees in the allotment" for n in range(5))
        frank = [
            c for _, c, source in open_user_home(root, "frank").store.contents() if source == "archive_log"
        ]
        assert frank == ["Frank repairs old radios in the shed"]


def test_the_sweep_goes_round_every_home_listing_them_only_when_one_appears(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_assets.core.ops.upkeep import plan
    from memory_assets.defs.homes import sensors

    root = tmp_path / "root"
    for n in range(25):
        (root / "users" / f"u{n:02d}").mkdir(parents=True)
    listings: list[Path] = []
    real = plan.list_users
    monkeypatch.setattr(plan, "list_users", lambda r: listings.append(r) or real(r))
    planner = plan.Planner(root)

    after, slices = "", []
    for _ in range(4):
        everyone = planner.homes(planner.users_signature())
        picked, after = sensors._sweep_slice(everyone, after, 10)
        slices.append(picked)
    names = [f"u{n:02d}" for n in range(25)]
    assert slices == [names[:10], names[10:20], names[20:] + names[:5], names[5:15]]
    assert len(listings) == 1  # one listing for four ticks: the directory did not change

    time.sleep(0.01)
    (root / "users" / "u99").mkdir()
    assert "u99" in planner.homes(planner.users_signature()) and len(listings) == 2
    assert sensors._sweep_slice(["a", "b"], "b", 10) == (["a", "b"], "b")
    assert sensors._sweep_slice([], "", 10) == ([], "")


def test_the_user_of_a_run_comes_from_its_tags(root: Path) -> None:
    with location(MEMORY_ROOT=str(root)), dg.instance_for_test() as instance:
        from memory_assets.defs.resources import users_of_run

        assert users_of_run({"user": "alice", "dagster/partition": "bob"}, None) == ["alice"]
        assert users_of_run({"dagster/partition": "bob"}, None) == ["bob"]
        same = {"dagster/asset_partition_range_start": "carol", "dagster/asset_partition_range_end": "carol"}
        assert users_of_run(same, None) == ["carol"]
        instance.add_dynamic_partitions("users", ["alice", "bob", "carol"])
        span = {"dagster/asset_partition_range_start": "alice", "dagster/asset_partition_range_end": "carol"}
        assert users_of_run(span, instance) == ["alice", "bob", "carol"]
        assert users_of_run({}, None) == []


def test_without_a_root_the_single_home_location_is_unchanged() -> None:
    from memory_assets.defs.partitions import MANY_HOMES, day_partitions, home_partitions

    assert not MANY_HOMES and home_partitions is None and day_partitions.name == "log_days"
    import memory_assets.definitions as single

    names = {s.name for s in single.defs.sensors}
    assert {"daily_log_sensor", "vault_sensor", "dream_sensor"} <= names and "homes_sensor" not in names


def test_the_hand_off_and_the_days_dedup_measurement_go_in_the_users_batch_only_where_there_is_work(
    root: Path,
) -> None:
    """The reconcile goes to the users whose dream hand-off holds lines, the dedup measurement to
    the users whose index changed since an earlier day's report (or who have none)."""
    homes = {user: open_user_home(root, user, create=True).settings for user in ("alice", "bob", "carol")}
    homes["alice"].superseded_path.parent.mkdir(parents=True, exist_ok=True)
    homes["alice"].superseded_path.write_text("Drives to work\n")
    homes["bob"].superseded_path.parent.mkdir(parents=True, exist_ok=True)
    homes["bob"].superseded_path.write_text("")  # an empty hand-off: nothing to retire
    for user in ("bob", "carol"):
        homes[user].index_state_path.parent.mkdir(parents=True, exist_ok=True)
        homes[user].index_state_path.write_text("{}")
    time.sleep(0.05)
    homes["carol"].dedup_dir.mkdir(parents=True, exist_ok=True)
    (homes["carol"].dedup_dir / "report.json").write_text("{}")  # measured after its last change
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        found = members(tick(loc, instance, None))
        assert [u for u, m in sorted(found.items()) if m["reconcile"]] == ["alice"]
        assert [u for u, m in sorted(found.items()) if m["dedup"]] == ["bob"]


def test_every_asset_of_a_home_is_partitioned_by_user_with_no_backfill_policy(root: Path) -> None:
    """A backfill over many users is then one run per user, each carrying Dagster's
    ``dagster/partition=<user>`` tag (what the per-user limit keys on), and no cell of a user
    and a day exists to show as missing."""
    with location(MEMORY_ROOT=str(root)) as loc:
        graph = loc.defs.resolve_asset_graph()
        home_assets = [
            k for k in graph.materializable_asset_keys if k.to_user_string() != "dedup_across_users"
        ]
        assert {"archive_index", "vault", "vault_index", "archival_memories"} <= {
            k.to_user_string() for k in home_assets
        }
        for key in home_assets:
            node = graph.get(key)
            assert node.partitions_def is not None and node.partitions_def.name == "users", key
            assert node.backfill_policy is None, key
        external = {k.to_user_string(): graph.get(k) for k in graph.external_asset_keys}
        assert external["daily_logs"].partitions_def.name == "users"


def failures(result: dg.ExecuteInProcessResult) -> str:
    """Every failure event's error of a run, with its causes, as text."""
    texts = []
    for event in result.all_events:
        error = getattr(event.event_specific_data, "error", None) if event.is_failure else None
        if error is not None:
            texts.append(error.to_string())
    return "\n".join(texts)


def test_a_run_over_several_users_is_refused_before_it_opens_a_home(root: Path) -> None:
    for user in ("alice", "bob"):
        seed(root, user, date(2026, 11, 10), f"{user} keeps a diary")
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("users", ["alice", "bob"])
        result = loc.defs.resolve_job_def("reindex").execute_in_process(
            instance=instance,
            tags={"dagster/asset_partition_range_start": "alice", "dagster/asset_partition_range_end": "bob"},
            raise_on_error=False,
        )
        assert not result.success
        errors = failures(result)
        assert "works on 2 users' homes (alice, bob)" in errors and "one run per user" in errors, errors
        assert not instance.get_materialized_partitions(dg.AssetKey("archive_index"))
        for user in ("alice", "bob"):
            assert not open_user_home(root, user).store.exists()  # no table written


def test_archive_index_refuses_a_day_that_is_not_a_date(root: Path) -> None:
    seed(root, "alice", date(2026, 11, 10), "Alice keeps bees")
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("users", ["alice"])
        result = loc.defs.resolve_job_def("reindex").execute_in_process(
            instance=instance,
            partition_key="alice",
            run_config={"ops": {"archive_index": {"config": {"days": ["2026-11-31"]}}}},
            raise_on_error=False,
        )
        assert not result.success
        errors = failures(result)
        assert "archive_index config `days`: '2026-11-31' is not a day" in errors, errors


@pytest.mark.slow
def test_a_user_partition_shows_as_missing_only_while_there_is_work(root: Path, embedder: Embedder) -> None:
    """alice's home is indexed as the memory service leaves it; bob's home has no log yet. The
    first tick records once, per user, each asset with nothing to do (and each file Dagster never
    writes) as materialised, and leaves missing what has work: alice's dedup measurement (her
    index changed since her last one, none) and her dream (her days wait for consolidation),
    bob's lint (due on a home never linted, and in his batch). A second tick records nothing again."""
    alice = open_user_home(root, "alice", create=True, embedder=embedder)
    write_facts(alice.settings, date(2026, 11, 10), "Alice keeps bees on the roof")
    write_facts(alice.settings, date(2026, 11, 12), "Alice sells honey at the market")
    alice.ready().indexer.sweep()
    open_user_home(root, "bob", create=True)
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        found = members(first)
        assert found["bob"]["dream"] and not found["alice"]["dream"]  # bob's lint is due
        assert found["alice"]["dedup"]

        def materialized(user: str) -> set[str]:
            graph = loc.defs.resolve_asset_graph()
            return {
                key.to_user_string()
                for key in graph.get_all_asset_keys()
                if user in instance.get_materialized_partitions(key)
            }

        every = {
            k.to_user_string()
            for k in loc.defs.resolve_asset_graph().get_all_asset_keys()
            if k.to_user_string() != "dedup_across_users"
        }
        assert every - materialized("alice") == {"dedup_history", "dedup_report", "vault"}
        assert every - materialized("bob") == {"vault_lint"}
        reasons = {
            (e.asset_key.to_user_string(), e.partition): e.metadata["reason"]
            for e in first.asset_events
            if "reason" in e.metadata
        }
        assert (
            reasons[("archive_index", "alice")].text
            == "the index already matches every daily log of the user's"
        )
        assert reasons[("daily_logs", "bob")].text == "no daily log yet"
        assert (
            reasons[("superseded_retired", "alice")].text
            == "the dream's hand-off is empty: nothing to retire"
        )
        assert ("daily_logs", "alice") not in reasons  # her logs are recorded as grown, with their days
        [grown] = [
            e
            for e in first.asset_events
            if e.asset_key.to_user_string() == "daily_logs" and e.partition == "alice"
        ]
        assert grown.metadata["days_grown"].value == 2

        second = tick(loc, instance, first.cursor)
        assert not second.asset_events


def test_a_day_with_its_request_in_flight_is_never_recorded_as_nothing_to_do(root: Path) -> None:
    """bob's logs are not indexed: the first tick puts his day in a batch; a second look at his
    home while that batch has not run must not record his partition as done, nor put his day in
    a second batch before the first one's backoff."""
    seed(root, "bob", date(2026, 11, 5), "Bob tunes pianos for a living")
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        assert members(first)["bob"]["keys"] == ["archive:2026-11-05.md"]
        note_change(root, "bob", "turns")  # the feed names him: looked at again
        second = tick(loc, instance, first.cursor)
        assert not any(m["keys"] for m in members(second).values())  # pending: not again yet
        recorded = {e.asset_key.to_user_string() for e in [*first.asset_events, *second.asset_events]}
        assert "archive_index" not in recorded
        assert "bob" not in instance.get_materialized_partitions(dg.AssetKey("archive_index"))
        assert "daily_logs" in recorded  # his log, seen as it grew
