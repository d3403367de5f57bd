"""Many homes in the Dagster UI, as a person sees them, in a real browser: two users whose days
differ, nothing shown as missing where there is nothing to do.

A root holds alice's home, indexed as the memory service leaves it (three days of logs), and
bob's, whose four days (none of them alice's) an assistant wrote straight into his logs, not
indexed yet. ``dagster dev`` runs on it with ``MEMORY_ROOT`` and the instance file
``memory-assets dagster-yaml`` writes; the homes sensor puts both homes in one upkeep batch, whose
every index write pauses at a failpoint until the test lets it go, so a person can see bob's work
in flight. Driven with Playwright in Debian's
``chromium-headless-shell``:

1. while bob's reindex is held: ``archive_index`` has two partitions, one per user (never users
   x days: design §11.2), alice's materialised (the homes sensor found her index matching every
   log of hers), bob's materialising (the batch is on his days), and none missing;
2. released: both materialised, "Missing (0)"; the batch reindexed exactly bob's four days;
3. ``daily_logs`` and ``vault_index``: "Missing (0)";
4. alice's partition of ``archive_index``: the homes sensor's record, with its reason; bob's:
   the batch's materialisation, as if by a run of his own (the batch run named, the days it
   reindexed for him).

Over GraphQL, every asset's partitions: the only ones not materialised are those with work
waiting (the dream of days not consolidated, its gates shut here; the batch measured both users'
changed indexes). Screenshots go to ``ui-screenshots/many-homes/``, checked as the single
home's UI test checks its own.
"""

from collections.abc import Iterator
from datetime import date
from typing import Any

import dagster as dg
import pytest

from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.users import open_user_home
from memory_assets.defs.instance import InstanceConfig, instance_yaml
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.processes import graphql, many_homes_env, serve_dagster_dev, stop_tree
from memory_assets_tests.test_definitions_ui import (
    BIN,
    CHROMIUM,
    ROOT,
    SCREENSHOTS,
    VIEWPORT,
    Steps,
    check_screenshots,
    require_browser,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.ui]

FOLDER = SCREENSHOTS / "many-homes"
DAYS = {
    "alice": [date(2026, 11, 3), date(2026, 11, 10), date(2026, 11, 17)],
    "bob": [date(2026, 11, 5), date(2026, 11, 12), date(2026, 11, 19), date(2026, 11, 26)],
}
WORK_WAITING = {"vault": ["alice", "bob"]}
"""The partitions with work waiting here: each user's days wait for the dream, whose gates the
test shuts (the batch measured both users' indexes, which changed since no measurement)."""
STATUSES = """{ assetNodes { assetKey { path } assetPartitionStatuses {
  ... on DefaultPartitionStatuses { unmaterializedPartitions } } } }"""
RUNS = """{ runsOrError(limit: 100) { ... on Runs { results { runId status jobName
  tags { key value } } } } }"""


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[dict[str, Any]]:
    require_browser()
    base = tmp_path_factory.mktemp("homes_ui")
    root, dagster_home, barrier = base / "root", base / "dagster_home", base / "release"
    for user, days in DAYS.items():
        home = open_user_home(root, user, create=True, embedder=embedder)
        for n, day in enumerate(days):
            write_facts(home.settings, day, f"{user.title()} noted thing number {n + 1} on {day:%d %B}")
        if user == "alice":
            home.ready().indexer.sweep()  # as the memory service leaves a home it wrote to
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text(instance_yaml(InstanceConfig(max_concurrent_runs=2)))
    env = {**many_homes_env(root, dagster_home, barrier), "MEMORY_UPKEEP_WAIT_S": "0"}
    try:
        process, url = serve_dagster_dev(
            BIN / "dagster", ["-m", "memory_assets.definitions"], env, base / "dagster_dev.log", ROOT, 180
        )
    except BaseException:
        barrier.touch()
        raise
    try:
        yield {"url": url, "root": root, "barrier": barrier, "dagster_home": dagster_home}
    finally:
        barrier.touch()  # never leave a run waiting for a release that will not come
        stop_tree(process)


def batches(url: str) -> list[dict[str, Any]]:
    """The upkeep batch runs (the homes sensor requests no run of one user)."""
    found = graphql(url, RUNS)["runsOrError"]["results"]
    assert all(r["jobName"] == "upkeep_batch" for r in found), [r["jobName"] for r in found]
    return found


def test_two_users_show_nothing_missing_where_there_is_nothing_to_do(ui: dict[str, Any]) -> None:
    from playwright.sync_api import expect, sync_playwright

    url = ui["url"]
    # The homes sensor's first tick: one batch of both homes, held at the failpoint on bob's days.
    wait_until(lambda: any(r["status"] == "STARTED" for r in batches(url)), seconds=420)
    [batch] = batches(url)
    assert {"key": "memory_assets/users", "value": "2"} in batch["tags"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(60_000)
            expect.set_options(timeout=30_000)
            steps = Steps(page, FOLDER)
            page.goto(url + "/", wait_until="networkidle")
            skip = page.get_by_role("button", name="Skip")
            skip.wait_for(timeout=30_000)
            skip.click()
            expect(skip).to_be_hidden()

            # 1. While bob's reindex is held: one partition per user, none missing.
            page.goto(url + "/assets/archive_index?view=partitions", wait_until="networkidle")
            expect(page.get_by_text("2 Partitions Selected", exact=True)).to_be_visible()
            expect(page.get_by_text("Materialized (1)", exact=True)).to_be_visible()
            expect(page.get_by_text("Materializing (1)", exact=True)).to_be_visible()
            expect(page.get_by_text("Missing (0)", exact=True)).to_be_visible()
            steps.shot("archive-index-bob-in-flight")

            # 2. Released: both users materialised, none missing.
            ui["barrier"].touch()
            wait_until(
                lambda: all(r["status"] in ("SUCCESS", "FAILURE", "CANCELED") for r in batches(url)),
                seconds=420,
            )
            assert [r["status"] for r in batches(url)] == ["SUCCESS"], batches(url)
            page.reload(wait_until="networkidle")
            expect(page.get_by_text("Materialized (2)", exact=True)).to_be_visible()
            expect(page.get_by_text("Missing (0)", exact=True)).to_be_visible()
            steps.shot("archive-index-both-users")

            # 3. The logs and the vault's index: none missing either.
            for asset in ("daily_logs", "vault_index"):
                page.goto(url + f"/assets/{asset}?view=partitions", wait_until="networkidle")
                expect(page.get_by_text("2 Partitions Selected", exact=True)).to_be_visible()
                expect(page.get_by_text("Materialized (2)", exact=True)).to_be_visible()
                expect(page.get_by_text("Missing (0)", exact=True)).to_be_visible()
                steps.shot(f"{asset.replace('_', '-')}-partitions")

            # 4. alice's partition: the homes sensor's record and its reason.
            page.goto(url + "/assets/archive_index?view=partitions", wait_until="networkidle")
            page.get_by_text("alice", exact=True).first.click()
            expect(page.get_by_text("homes_sensor").first).to_be_visible()
            expect(
                page.get_by_text("the index already matches every daily log of the user's").first
            ).to_be_visible()
            steps.shot("archive-index-alice-recorded")

            # 5. bob's partition: the batch's materialisation, which reindexed his four days, shown
            #    as a run's is: the batch run named beside the metadata.
            page.get_by_text("bob", exact=True).first.click()
            expect(page.get_by_text("days_reindexed", exact=True).first).to_be_visible()
            expect(page.get_by_text("days_changed", exact=True).first).to_be_visible()
            expect(page.get_by_text(batch["runId"][:8]).first).to_be_visible()
            expect(page.get_by_text("upkeep_batch", exact=True).first).to_be_visible()
            steps.shot("archive-index-bob-batch")
        finally:
            browser.close()
    check_screenshots(steps.paths, FOLDER)

    # Every asset: what is not materialised is exactly the work waiting.
    def missing() -> dict[str, list[str]]:
        found = {}
        for node in graphql(url, STATUSES)["assetNodes"]:
            statuses = node["assetPartitionStatuses"] or {}
            if statuses.get("unmaterializedPartitions"):
                found["/".join(node["assetKey"]["path"])] = sorted(statuses["unmaterializedPartitions"])
        return found

    try:
        wait_until(lambda: missing() == WORK_WAITING, seconds=120)
    finally:
        assert missing() == WORK_WAITING

    # The batch reindexed exactly bob's four days, and his index holds them.
    store = open_user_home(ui["root"], "bob").store
    assert store.count("source_type = 'archive_log'") == len(DAYS["bob"])
    with dg.DagsterInstance.from_config(str(ui["dagster_home"])) as instance:
        [record] = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("archive_index"), asset_partitions=["bob"]), limit=1
        ).records
        assert record.run_id == batch["runId"]
        metadata = record.asset_materialization.metadata
        assert metadata["days_reindexed"].value == len(DAYS["bob"])
        assert metadata["embedded"].value == len(DAYS["bob"])
