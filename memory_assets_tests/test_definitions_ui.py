"""The code location in the Dagster UI, as a person uses it, in a real browser.

The test seeds a home with a year of sparse daily logs (a few days a month), brings it to the
state ``make demo`` leaves (indexed, dreamed, reconciled, measured twice) through the code
location's jobs on a real instance, starts ``dagster dev`` on it (a free port, a temp
``DAGSTER_HOME``), and drives the UI with Playwright and Debian's ``chromium-headless-shell``:
dismiss the first-visit dialog, see the tier groups in the lineage, open ``archive_index``'s
partitions (one per day that has a log; none missing), pick a range of days in the Materialize
dialog and launch the backfill by clicking, wait for it to succeed in a handful of runs and see
the materialisations, open ``dedup_report``'s plots, open an asset check's result, and turn a
sensor off and on. Meanwhile it checks that the first start requested no run by itself.

Each step's screenshot goes to ``ui-screenshots/`` at the repository root (README), and is
checked: a PNG of the viewport's size, not blank, and different from the step before.
"""

import json
import os
import sys
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_assets.core.capture.daily_log import LogFact, append_facts
from memory_assets.core.ops.status import init_home
from memory_assets.core.settings import Settings
from memory_assets_tests.processes import graphql, serve_dagster_dev, stop_tree

pytestmark = [pytest.mark.slow, pytest.mark.ui]

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "ui-screenshots"
CHROMIUM = Path("/usr/bin/chromium-headless-shell")
VIEWPORT = {"width": 1440, "height": 900}
BIN = Path(sys.executable).parent
LOCATION = {"repositoryLocationName": "memory_assets", "repositoryName": "__repository__"}

FACTS = [
    ("personal", "Lives in Lisbon and works remotely as a data engineer"),
    ("preference", "Prefers metric units in all answers"),
    ("goal", "Wants to finish the marathon training plan by October"),
    ("preference", "User wants to be reminded to drink water daily"),
    ("technical", "Uses Dagster and LanceDB for the memory pipeline"),
    ("personal", "Has a sister called Ana who lives in Porto"),
]


def require_browser() -> None:
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} is not installed: `apt-get install chromium-headless-shell` (as root, `make test` "
            "and `make test-ui` install it)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed: `make setup` installs the dev extras")


def sparse_year(today: date) -> list[date]:
    """Two or three days a month over the past year, and the last three days: 33 days of 366."""
    days = {today - timedelta(days=n) for n in (0, 1, 2)}
    for month in range(12):
        for offset in (3, 11, 19) if month % 2 else (5, 16):
            days.add(today - timedelta(days=30 * month + offset))
    return sorted(days)


def sensor_status(url: str, name: str) -> str:
    data = graphql(
        url,
        "query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor { sensorState { status } } } }",
        {"s": {**LOCATION, "sensorName": name}},
    )
    return str(data["sensorOrError"]["sensorState"]["status"])


def prepare_home(home: Path, dagster_home: Path) -> list[date]:
    """A year of sparse logs, brought to the state `make demo` leaves: indexed (one reindex run
    over every log day), pages and core files indexed, optimized with its checks, dreamed and
    reconciled, and measured twice; all through the code location's jobs on the real instance."""
    import dagster as dg

    from memory_assets.demo import MEMORY_MD, PAGES, dream_and_reconcile

    settings = Settings.load(home, env={})
    init_home(settings)
    today = datetime.now(UTC).date()
    days = sparse_year(today)
    for n, day in enumerate(days):
        # A fact that recurs (the dedup report's material) and one the day alone has (so each of
        # the dream's batches has something new to fold).
        category, recurring = FACTS[n % len(FACTS)]
        facts = [
            LogFact(recurring, category),
            LogFact(f"Finished reading book number {n + 1} of the year, a {day:%B} pick", "personal"),
        ]
        append_facts(
            settings.archive_dir,
            f"ui{n:06d}",
            facts,
            now=datetime(day.year, day.month, day.day, 9, tzinfo=UTC),
        )
    for rel, text in PAGES.items():
        (settings.notebook_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings.notebook_dir / rel).write_text(text, encoding="utf-8")
    (settings.memory_dir / "MEMORY.md").write_text(MEMORY_MD, encoding="utf-8")

    from memory_assets.definitions import defs
    from memory_assets.defs.partitions import day_range_tags, register_days

    quiet = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        register_days(instance, days)
        result = defs.resolve_job_def("reindex").execute_in_process(
            instance=instance, run_config=quiet, tags=day_range_tags(days[0], days[-1])
        )
        assert result.success
        for job in ("index_files", "optimize_index"):
            assert defs.resolve_job_def(job).execute_in_process(instance=instance, run_config=quiet).success
        assert dream_and_reconcile(settings, defs, instance, quiet)
        for _ in range(2):
            assert (
                defs.resolve_job_def("dedup_measurement")
                .execute_in_process(instance=instance, run_config=quiet)
                .success
            )
    return days


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_browser()
    base = tmp_path_factory.mktemp("ui")
    home, dagster_home = base / "home", base / "dagster_home"
    dagster_home.mkdir()
    # The instance `make setup` writes: one run at a time on 2 cores.
    (dagster_home / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\nconcurrency:\n  runs:\n    max_concurrent_runs: 1\n"
    )
    env_before = {k: os.environ.get(k) for k in ("MEMORY_HOME", "DAGSTER_HOME")}
    os.environ.update({"MEMORY_HOME": str(home), "DAGSTER_HOME": str(dagster_home)})
    try:
        days = prepare_home(home, dagster_home)
        env = {**os.environ, "MEMORY_HOME": str(home), "DAGSTER_HOME": str(dagster_home)}
        started = time.time()
        # No -m: pyproject.toml names the code location.
        process, url = serve_dagster_dev(BIN / "dagster", [], env, base / "dagster_dev.log", ROOT, 120)
        try:
            yield {"url": url, "days": days, "dagster_home": dagster_home, "started": started}
        finally:
            stop_tree(process)
    finally:
        for key, value in env_before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Steps:
    """Screenshots of each step in ``folder`` (``ui-screenshots/``), numbered in order."""

    def __init__(self, page: Any, folder: Path = SCREENSHOTS) -> None:
        self.page = page
        self.folder = folder
        self.paths: list[Path] = []
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.png"):  # a previous run's steps (subfolders are other tests')
            old.unlink()

    def shot(self, name: str) -> Path:
        self.page.wait_for_load_state("networkidle")
        path = self.folder / f"{len(self.paths) + 1:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        self.paths.append(path)
        return path


def check_screenshots(paths: list[Path], folder: Path = SCREENSHOTS) -> None:
    """Each is a PNG of the viewport's size, not blank (many colours, not one flat tone), and no
    two steps look the same."""
    from PIL import Image, ImageStat

    assert paths and [p.name for p in sorted(folder.glob("*.png"))] == [p.name for p in paths]
    seen: set[bytes] = set()
    for path in paths:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", path
        with Image.open(path) as image:
            assert image.size == (VIEWPORT["width"], VIEWPORT["height"]), (path, image.size)
            rgb = image.convert("RGB")
            colours = rgb.getcolors(maxcolors=1 << 16)
            assert colours is None or len(colours) > 50, f"{path.name}: nearly blank ({len(colours)} colours)"
            assert max(ImageStat.Stat(rgb).stddev) > 10, f"{path.name}: one flat tone"
            pixels = rgb.tobytes()
        assert pixels not in seen, f"{path.name} shows the same as an earlier step"
        seen.add(pixels)


def runs_since(dagster_home: Path, started: float) -> list[Any]:
    import dagster as dg

    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        return [r for r in instance.get_run_records() if r.create_timestamp.timestamp() >= started]


def test_a_person_backfills_reads_the_report_checks_and_sensors_in_the_ui(ui: dict[str, Any]) -> None:
    from playwright.sync_api import expect, sync_playwright

    url, days = ui["url"], ui["days"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(60_000)
            expect.set_options(timeout=30_000)  # a shared 2-core machine: the UI loads slowly at times
            steps = Steps(page)

            # 1. The first visit: the community dialog covers the page; skip it.
            page.goto(url + "/", wait_until="networkidle")
            skip = page.get_by_role("button", name="Skip")
            skip.wait_for(timeout=30_000)
            steps.shot("first-visit-dialog")
            skip.click()
            expect(skip).to_be_hidden()

            # 2. The lineage, with the tier groups.
            page.locator('a[href="/asset-groups"]').first.click()
            expect(page.get_by_text("Global asset lineage")).to_be_visible()
            for group in ("capture", "knowledge", "index", "dedup", "legacy"):
                expect(page.get_by_text(group, exact=True).first).to_be_visible()
            steps.shot("lineage-tier-groups")

            # 3. archive_index's partitions: one per day that has a log, none missing.
            page.goto(url + "/assets/archive_index?view=partitions", wait_until="networkidle")
            expect(page.get_by_text(f"{len(days)} Partitions Selected", exact=True)).to_be_visible()
            expect(page.get_by_text("Missing (0)", exact=True)).to_be_visible()
            expect(page.get_by_text(f"Materialized ({len(days)})", exact=True)).to_be_visible()
            steps.shot("archive-index-partitions")

            # 4. A range of days in the Materialize dialog: the days of the last six months
            #    (sparse: a few a month), ticked one by one, then Launch backfill.
            chosen = [d.isoformat() for d in days if d >= days[-1] - timedelta(days=182)]
            page.get_by_role("button", name="Materialize…").first.click()
            dialog = page.get_by_role("dialog")
            expect(
                dialog.get_by_text("Backfills in multiple runs, with a maximum of 100 partitions per run.")
            ).to_be_visible()
            dialog.get_by_text("Select a partition or create one").click()
            for key in chosen:
                page.locator("label").filter(has_text=key).first.click()
                expect(page.get_by_role("checkbox", name=key)).to_be_checked()
            page.keyboard.press("Escape")  # closes the list, not the dialog
            expect(dialog.get_by_text(f"{len(chosen)} partitions", exact=True)).to_be_visible()
            steps.shot("materialize-dialog-range")
            launched = time.time()
            dialog.get_by_role("button", name="Launch backfill").click()
            expect(page.get_by_text("Created backfill").first).to_be_visible()
            page.get_by_text("View", exact=True).first.click()  # the toast's link to the backfill
            expect(page.get_by_text("Partition selection")).to_be_visible()

            # 5. The backfill succeeds in one run (not one per day) and the days are materialised.
            backfill = wait_for_backfill(url, launched)
            assert backfill["status"] == "COMPLETED_SUCCESS", backfill
            assert sorted(backfill["partitionNames"]) == chosen
            runs = backfill["runs"]
            assert len(runs) == 1 and runs[0]["status"] == "SUCCESS", runs
            assert page.url.endswith(f"/runs/b/{backfill['id']}"), page.url
            page.reload(wait_until="networkidle")
            expect(page.get_by_text("Succeeded").first).to_be_visible()
            expect(page.get_by_text("100% completed", exact=True)).to_be_visible()
            steps.shot("backfill-succeeded")
            page.goto(url + "/assets/archive_index?view=events", wait_until="networkidle")
            expect(page.get_by_text(f"materialized in run {runs[0]['runId'][:8]}").first).to_be_visible()
            expect(page.get_by_text("days_in_run", exact=True).first).to_be_visible()
            steps.shot("archive-index-materialisations")

            # 6. dedup_report's metadata, plotted over its two measurements.
            page.goto(url + "/assets/dedup_report", wait_until="networkidle")
            page.get_by_role("button", name="Plots").click()
            title = page.get_by_text("all_write_paths/0.95", exact=True).first
            title.scroll_into_view_if_needed()
            expect(title).to_be_visible()
            expect(page.locator("canvas").first).to_be_visible()
            steps.shot("dedup-report-plots")

            # 7. An asset check's result.
            page.goto(url + "/assets/archival_memories?view=checks", wait_until="networkidle")
            page.get_by_text("ids_unique", exact=True).first.click()
            expect(page.get_by_text("Passed").first).to_be_visible()
            expect(page.get_by_text("every id unique").first).to_be_visible()
            steps.shot("asset-check-ids-unique")

            # 8. A sensor turned off, then on again.
            assert sensor_status(url, "daily_log_sensor") == "RUNNING"
            page.goto(url + "/locations/memory_assets/sensors/daily_log_sensor", wait_until="networkidle")
            switch = page.get_by_role("checkbox").first  # the sensor's on/off switch
            toggle = page.locator("label:has(input[type=checkbox])").first  # what a person clicks
            expect(switch).to_be_checked()
            toggle.click()
            expect(switch).not_to_be_checked()
            wait_until(lambda: sensor_status(url, "daily_log_sensor") == "STOPPED")
            steps.shot("sensor-off")
            toggle.click()
            expect(switch).to_be_checked()
            wait_until(lambda: sensor_status(url, "daily_log_sensor") == "RUNNING")
            steps.shot("sensor-on")
        finally:
            browser.close()
    check_screenshots(steps.paths)

    # The first start flooded nothing: the only run since `dagster dev` started is the backfill's.
    started = runs_since(ui["dagster_home"], ui["started"])
    assert [r.dagster_run.run_id for r in started] == [runs[0]["runId"]], [
        (r.dagster_run.job_name, r.dagster_run.tags) for r in started
    ]


def wait_until(predicate: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(1)


def wait_for_backfill(url: str, launched: float, seconds: float = 420) -> dict[str, Any]:
    query = """{ partitionBackfillsOrError(limit: 5) { ... on PartitionBackfills { results {
        id status timestamp partitionNames runs(limit: 50) { runId status } } } } }"""
    deadline = time.monotonic() + seconds
    while True:
        results = graphql(url, query)["partitionBackfillsOrError"]["results"]
        mine = [b for b in results if b["timestamp"] >= launched - 5]
        if mine and mine[0]["status"] not in ("REQUESTED",):
            return dict(mine[0])
        assert time.monotonic() < deadline, f"the backfill did not finish in {seconds} s: {json.dumps(mine)}"
        time.sleep(2)
