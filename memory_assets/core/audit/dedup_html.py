"""The analysts' dedup report as one self-contained HTML file: it opens offline, anywhere.

It holds, from the stored history (``dedup_history.py``) and the latest measurement:

* the trend of the near-duplicate rate per write path, one chart per cosine threshold;
* the trend of the on-disk backlog (fact lines, exact repeats, near-duplicates, clusters);
* the latest rates as a table, and every stored measurement as a table (the figures the charts
  draw, for a reader who copies them);
* the largest clusters of the backlog (size, distinct days, a line of each);
* the paraphrase pairs where one side is strictly less informative, that side named.

The charts are plotly figures with plotly.js inlined (``include_plotlyjs=True``), so the file
loads nothing from the network: no CDN, no fonts, no images. Every text from the memory is
HTML-escaped.
"""

import html
from datetime import datetime
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from memory_assets.core.audit.dedup_history import ALL_WRITE_PATHS
from memory_assets.core.durable import write_atomic

LARGEST_CLUSTERS = 10
PLOT_CONFIG = {"displaylogo": False, "responsive": True}

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #1f2933; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .9rem; }
th, td { border: 1px solid #cbd2d9; padding: .25rem .6rem; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #52606d; font-size: .9rem; }
.less { background: #fde8e8; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _percent(rate: float) -> str:
    return f"{100.0 * rate:.1f}%"


def _when(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{_e(v)}</td>' if i in numeric else f"<td>{_e(v)}</td>"
            for i, v in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def trend_figure(history: pl.DataFrame) -> go.Figure:
    """The rate per write path over time, one subplot per threshold (highest first)."""
    thresholds = sorted(history["threshold"].unique().to_list(), reverse=True) or [0.95]
    fig = make_subplots(
        rows=1,
        cols=len(thresholds),
        shared_yaxes=True,
        subplot_titles=[f"cosine ≥ {t:g}" for t in thresholds],
    )
    paths = sorted(history["write_path"].unique().to_list(), key=lambda p: (p == ALL_WRITE_PATHS, p))
    for col, threshold in enumerate(thresholds, start=1):
        for n, path in enumerate(paths):
            points = history.filter((pl.col("threshold") == threshold) & (pl.col("write_path") == path))
            if points.is_empty():
                continue
            fig.add_trace(
                go.Scatter(
                    x=points["measured_at"].to_list(),  # datetimes: a time axis, to the microsecond
                    y=points["rate"].to_list(),
                    mode="lines+markers",
                    name=path,
                    legendgroup=path,
                    showlegend=col == 1,
                    line={
                        "color": _COLOURS[n % len(_COLOURS)],
                        "dash": "dot" if path == ALL_WRITE_PATHS else "solid",
                    },
                    hovertemplate=f"{path} ≥{threshold:g}: %{{y:.1%}}<br>%{{x}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    fig.update_yaxes(title_text="redundant rows", row=1, col=1)
    fig.update_layout(height=420, margin={"t": 60, "l": 60, "r": 20, "b": 40}, legend={"orientation": "h"})
    return fig


_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
_BACKLOG_SERIES = {
    "fact_lines": "fact lines",
    "exact_repeats": "exact repeats",
    "near_duplicates": "near-duplicates",
    "clusters": "clusters",
}


def backlog_figure(history: pl.DataFrame) -> go.Figure:
    """The on-disk backlog's figures over time (one point per measurement)."""
    per_measurement = history.unique(subset=["measured_at"], keep="first", maintain_order=True)
    fig = go.Figure()
    for n, (column, label) in enumerate(_BACKLOG_SERIES.items()):
        fig.add_trace(
            go.Scatter(
                x=per_measurement["measured_at"].to_list(),
                y=per_measurement[column].to_list(),
                mode="lines+markers",
                name=label,
                line={"color": _COLOURS[n % len(_COLOURS)]},
            )
        )
    fig.update_layout(height=360, margin={"t": 30, "l": 60, "r": 20, "b": 40}, legend={"orientation": "h"})
    return fig


def largest_clusters(clusters: pl.DataFrame, limit: int = LARGEST_CLUSTERS) -> pl.DataFrame:
    """The backlog's largest clusters: size, distinct days, first and last day, the first line."""
    if clusters.is_empty():
        return pl.DataFrame(
            schema={"cluster_id": pl.Int64, "size": pl.UInt32, "distinct_days": pl.UInt32, "text": pl.String}
        )
    return (
        clusters.group_by("cluster_id", maintain_order=True)
        .agg(
            pl.len().alias("size"),
            pl.col("day").n_unique().alias("distinct_days"),
            pl.col("day").min().cast(pl.String).alias("first_day"),
            pl.col("day").max().cast(pl.String).alias("last_day"),
            pl.col("text").first().alias("text"),
        )
        .sort(["size", "distinct_days", "cluster_id"], descending=[True, True, False])
        .head(limit)
    )


def render_html(
    history: pl.DataFrame, report: dict[str, Any], clusters: pl.DataFrame, *, title: str = "Dedup report"
) -> str:
    """The whole report as one HTML document (plotly.js inlined once)."""
    if history.is_empty():
        raise ValueError("the dedup history is empty: run `memory-assets dedup-report` to measure first")
    latest_at = history["measured_at"].max()
    latest = history.filter(pl.col("measured_at") == latest_at).sort(["write_path", "threshold"])
    measurements = history["measured_at"].n_unique()
    trend = trend_figure(history).to_html(full_html=False, include_plotlyjs=True, config=PLOT_CONFIG)
    backlog = backlog_figure(history).to_html(full_html=False, include_plotlyjs=False, config=PLOT_CONFIG)
    b = report["backlog"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="note">{measurements} measurement(s) from {_e(_when(history["measured_at"].min()))} to '
        f"{_e(_when(latest_at))}. A row is redundant at a threshold when an earlier row (by fact date, "
        "then id) reaches that cosine similarity: within its own write path, or against every path "
        f"({ALL_WRITE_PATHS}).</p>",
        '<h2 id="trend">Near-duplicate rate per write path and threshold</h2>',
        trend,
        '<h2 id="latest">Latest measurement</h2>',
        _table(
            ["write path", "threshold", "rate", "rows"],
            [
                [r["write_path"], f"{r['threshold']:g}", _percent(r["rate"]), r["rows"]]
                for r in latest.iter_rows(named=True)
            ],
            numeric={1, 2, 3},
        ),
        '<h2 id="backlog">The daily logs on disk</h2>',
        f"<p>{b['fact_lines']:,} fact lines across {b['logs']:,} daily logs: {b['exact_repeats']:,} exact repeats "
        f"and {b['near_duplicates']:,} token-set near-duplicates (token_set_ratio ≥ {b['near_threshold']:g}) in "
        f"{b['clusters']:,} clusters.</p>",
        backlog,
        '<h2 id="clusters">Largest clusters</h2>',
        _clusters_table(largest_clusters(clusters)),
        '<h2 id="paraphrases">Paraphrase pairs with a less informative side</h2>',
        _pairs_table(b.get("paraphrase_pairs") or []),
        '<h2 id="history">Every stored measurement</h2>',
        _table(
            [
                "measured at",
                "source",
                "write path",
                "threshold",
                "rate",
                "rows",
                "fact lines",
                "exact repeats",
                "near-duplicates",
                "clusters",
            ],
            [
                [
                    _when(r["measured_at"]),
                    r["source"],
                    r["write_path"],
                    f"{r['threshold']:g}",
                    _percent(r["rate"]),
                    r["rows"],
                    r["fact_lines"],
                    r["exact_repeats"],
                    r["near_duplicates"],
                    r["clusters"],
                ]
                for r in history.iter_rows(named=True)
            ],
            numeric={3, 4, 5, 6, 7, 8, 9},
        ),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _clusters_table(top: pl.DataFrame) -> str:
    if top.is_empty():
        return "<p>No clusters: no fact line repeats another.</p>"
    return _table(
        ["lines", "distinct days", "first day", "last day", "a line of it"],
        [
            [r["size"], r["distinct_days"], r["first_day"], r["last_day"], r["text"]]
            for r in top.iter_rows(named=True)
        ],
        numeric={0, 1},
    )


def _pairs_table(pairs: list[dict[str, Any]]) -> str:
    if not pairs:
        return "<p>No pair where one side only repeats part of the other.</p>"
    head = "<tr><th>similarity</th><th>A</th><th>B</th><th>less informative</th></tr>"
    rows = []
    for pair in pairs:
        side = str(pair["less_informative"]).lower()
        a_class = ' class="less"' if side == "a" else ""
        b_class = ' class="less"' if side == "b" else ""
        similarity = f"{pair['similarity']:g}"
        rows.append(
            f'<tr><td class="num">{_e(similarity)}</td><td{a_class}>{_e(pair["a"])}</td>'
            f"<td{b_class}>{_e(pair['b'])}</td><td>{_e(side.upper())}</td></tr>"
        )
    return f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


def write_html(path: Path, history: pl.DataFrame, report: dict[str, Any], clusters: pl.DataFrame) -> Path:
    """Render and write the report atomically; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, render_html(history, report, clusters))
    return path


__all__ = ["backlog_figure", "largest_clusters", "render_html", "trend_figure", "write_html"]
