"""The analysts' files: the history every measurement appends to, and the self-contained HTML
report rendered from it (no external reference; it holds the stored history's figures)."""

import json
import re
from datetime import UTC, date, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from memory_assets.core.audit.dedup_history import HISTORY_FILE, append_history, read_history
from memory_assets.core.audit.measurement import measure_home, write_measurement, write_report_html
from memory_assets.core.capture.transcripts import keep_turn
from memory_assets.core.home import Home
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

WATER_LONG = "The user wants to be reminded to drink water hourly from 9 AM to 9 PM daily."
WATER_SHORT = "User wants to be reminded to drink water daily."


class References(HTMLParser):
    """Every URL the document would load or link to: src/href/srcset/action/data/poster/content
    attributes, and url(...) / @import in <style> and style attributes. Script bodies are code,
    not references (plotly.js names URLs in strings for features this report does not use)."""

    ATTRS = {"src", "href", "srcset", "action", "data", "poster", "xlink:href", "formaction", "background"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self.tags: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_style = tag == "style"
        for name, value in attrs:
            if value is None:
                continue
            if name in self.ATTRS:
                self.urls.append(value)
            if name == "style":
                self.urls += _css_urls(value)
            if tag == "meta" and name == "content" and "url=" in value.lower():
                self.urls.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.urls += _css_urls(data)


def _css_urls(css: str) -> list[str]:
    return re.findall(r"url\(\s*['\"]?([^'\")]+)", css) + re.findall(r"@import\s+['\"]([^'\"]+)", css)


def measured_home(settings: Settings, embedder: object, measurements: int) -> Path:
    write_facts(settings, date(2026, 11, 1), WATER_LONG, "Lives in Lisbon and works remotely")
    write_facts(settings, date(2026, 11, 2), WATER_LONG, WATER_SHORT)
    Indexer(settings, embedder=embedder).sweep()  # type: ignore[arg-type]
    home = Home(settings)
    for n in range(measurements):
        if n:  # the log grows between measurements, so the trend moves
            write_facts(settings, date(2026, 11, 3 + n), WATER_SHORT, f"Bought {n} new plants")
            Indexer(settings, embedder=embedder).sweep()  # type: ignore[arg-type]
        write_measurement(measure_home(settings, home.store), settings.dedup_dir)
    return settings.dedup_dir


def test_every_measurement_appends_one_row_per_write_path_and_threshold(
    settings: Settings, embedder: object
) -> None:
    out = measured_home(settings, embedder, 3)
    history = pl.read_parquet(out / HISTORY_FILE)  # polars reads it directly
    assert history["measured_at"].n_unique() == 3
    per_measurement = history.group_by("measured_at").len()["len"].to_list()
    assert per_measurement == [3 * 2] * 3  # (archive_log, all_write_paths) x 3 thresholds
    assert set(history["write_path"]) == {"archive_log", "all_write_paths"}
    assert sorted(set(history["threshold"])) == [0.92, 0.95, 0.995]
    assert set(history["source"]) == {"cli"}
    last = history.filter(pl.col("measured_at") == history["measured_at"].max())
    report = json.loads((out / "report.json").read_text())
    for row in last.iter_rows(named=True):
        path = "across_write_paths" if row["write_path"] == "all_write_paths" else row["write_path"]
        entry = report[path] if path == "across_write_paths" else report["by_write_path"][path]
        assert row["rate"] == entry[f"{row['threshold']:g}"] and row["rows"] == entry["rows"]
        assert row["fact_lines"] == report["backlog"]["fact_lines"] == 8
    # The rows grew between measurements: the history keeps each one's own figures.
    assert history.sort("measured_at")["table_rows"].unique(maintain_order=True).to_list() == [4, 6, 8]


def test_an_unreadable_history_is_never_overwritten(settings: Settings) -> None:
    settings.dedup_dir.mkdir(parents=True)
    (settings.dedup_dir / HISTORY_FILE).write_bytes(b"not parquet")
    report = {
        "rows": 0,
        "by_write_path": {},
        "across_write_paths": {"rows": 0, "0.95": 0.0},
        "backlog": {
            "fact_lines": 0,
            "logs": 0,
            "exact_repeats": 0,
            "near_duplicates": 0,
            "clusters": 0,
            "largest_cluster": {"size": 0},
        },
    }
    from datetime import UTC, datetime

    with pytest.raises(
        ValueError, match=r"history.parquet: the dedup history cannot be read .* move it aside"
    ):
        append_history(settings.dedup_dir, report, datetime.now(UTC), "cli")
    assert (settings.dedup_dir / HISTORY_FILE).read_bytes() == b"not parquet"


def test_the_html_report_is_self_contained_and_holds_the_stored_figures(
    settings: Settings, embedder: object
) -> None:
    out = measured_home(settings, embedder, 2)
    path = write_report_html(out, settings.home / "exports" / "dedup.html")
    text = path.read_text(encoding="utf-8")

    parser = References()
    parser.feed(text)
    assert "script" in parser.tags and "table" in parser.tags
    external = [u for u in parser.urls if not u.startswith("#")]
    assert external == [], f"the report references outside itself: {external}"
    assert not re.search(r"<script[^>]+src=", text) and not re.search(r"<link[^>]+href=", text)
    assert "plotly.js v" in text  # the charting library is inlined, not fetched

    history = read_history(out)
    # Every stored figure is in the history table, and in the trend chart's data.
    for row in history.iter_rows(named=True):
        cells = f'<td>{row["write_path"]}</td><td class="num">{row["threshold"]:g}</td><td class="num">{100 * row["rate"]:.1f}%</td><td class="num">{row["rows"]}</td>'
        assert cells in text, cells
    figure_data = [
        json.loads(m) for m in re.findall(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*\{", text, re.S)
    ]
    assert len(figure_data) == 2  # the trend and the backlog
    traces = {(t["name"], t.get("xaxis", "x")): t for t in figure_data[0]}
    assert len(traces) == 2 * 3  # two write paths, one subplot per threshold
    archive_995 = history.filter((pl.col("write_path") == "archive_log") & (pl.col("threshold") == 0.995))
    assert traces[("archive_log", "x")]["y"] == pytest.approx(archive_995["rate"].to_list())
    backlog = {t["name"]: t["y"] for t in figure_data[1]}
    assert backlog["fact lines"] == [4, 6]
    # The largest cluster and the paraphrase pair, with the less informative side named.
    assert (
        "drink water" in text
        and '<td class="less">User wants to be reminded to drink water daily.</td>' in text
    )


def test_the_html_report_says_what_to_run_when_nothing_was_measured(settings: Settings) -> None:
    with pytest.raises(ValueError, match="report.json does not exist: run `memory-assets dedup-report`"):
        write_report_html(settings.dedup_dir)


@pytest.mark.slow
@pytest.mark.ui
def test_the_html_report_opens_offline_in_a_browser_and_draws_the_trend(
    settings: Settings, embedder: object
) -> None:
    """Debian's chromium-headless-shell opens the file with every network request refused: the
    page asks for nothing but itself, and plotly draws the trend from the stored history."""
    from memory_assets_tests.test_definitions_ui import CHROMIUM, SCREENSHOTS, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    out = measured_home(settings, embedder, 2)
    path = write_report_html(out)
    history = read_history(out)
    requested: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})

            def refuse_the_network(route: object) -> None:
                url = route.request.url  # type: ignore[attr-defined]
                requested.append(url)
                if url.startswith("file://"):
                    route.continue_()  # type: ignore[attr-defined]
                else:
                    route.abort()  # type: ignore[attr-defined]

            page.route("**/*", refuse_the_network)
            page.goto(path.as_uri(), wait_until="load")
            page.locator(".js-plotly-plot .main-svg").first.wait_for()
            drawn = page.evaluate(
                "() => [...document.querySelectorAll('.js-plotly-plot')].map(p => p.data.map(t => [t.name, t.y]))"
            )
            target = SCREENSHOTS / "dedup-report"
            target.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(target / "report-offline.png"), full_page=True)
        finally:
            browser.close()
    assert requested == [path.as_uri()], requested  # nothing but the file itself
    trend, backlog = drawn
    assert len(trend) == 2 * 3
    for name, ys in trend:
        stored = history.filter(pl.col("write_path") == name).sort("measured_at")
        assert any(
            ys == pytest.approx(stored.filter(pl.col("threshold") == t)["rate"].to_list())
            for t in (0.995, 0.95, 0.92)
        )
    assert dict(backlog)["fact lines"] == [4, 6]
    assert (SCREENSHOTS / "dedup-report" / "report-offline.png").stat().st_size > 10_000


def test_the_transcript_tier_is_a_write_path_of_its_own_in_every_table(
    settings: Settings, embedder: object
) -> None:
    """Kept turns are measured as the write path ``transcript``: in the report, the history, the
    markdown table and the HTML report's latest table, beside the logs' ``archive_log``. A turn
    said twice is redundant within its own path."""
    write_facts(settings, date(2026, 11, 1), WATER_LONG, "Lives in Lisbon and works remotely")
    at = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    for minute, said in enumerate(
        ["Remind me to drink water every hour", "Remind me to drink water every hour"]
    ):
        keep_turn(settings.transcripts_dir, "chat-1", said, "", at + timedelta(minutes=minute))
    keep_turn(settings.transcripts_dir, "chat-2", "We adopted a cat called Miso", "", at)
    Indexer(settings, embedder=embedder).sweep()  # type: ignore[arg-type]
    measurement = measure_home(settings, Home(settings).store)
    turns = measurement.report["by_write_path"]["transcript"]
    assert turns["rows"] == 3 and turns["0.995"] == pytest.approx(1 / 3)
    assert measurement.report["by_write_path"]["archive_log"]["rows"] == 2
    assert "| transcript | 3 |" in measurement.markdown
    write_measurement(measurement, settings.dedup_dir)
    history = read_history(settings.dedup_dir)
    assert set(history["write_path"]) == {"archive_log", "transcript", "all_write_paths"}
    latest = history.filter(pl.col("write_path") == "transcript").sort("threshold")
    assert latest["rows"].to_list() == [3, 3, 3] and latest["rate"].to_list()[-1] == pytest.approx(1 / 3)
    html = write_report_html(settings.dedup_dir).read_text(encoding="utf-8")
    assert '<tr><td>transcript</td><td class="num">0.995</td><td class="num">33.3%</td>' in html
