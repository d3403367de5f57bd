"""The one door between the core's outcomes and Dagster's storage: no person's words pass it.

Dagster keeps for good what a run records, in storage no erase reaches: run config and tags,
materialisation and observation metadata, check results, log messages (the event log, and the
compute log the console logger writes to), failures, sensor cursors and skip reasons. So what the
Dagster layer records holds counts, ids, days, file names with line numbers, and at most a short
keyed hash of a text, never the text. Every message or table of the core that reaches Dagster
comes through here:

* ``TextFree.line``: a message of the core (a warning, a problem, a summary, a note, an error).
  The core quotes a person's words with ``repr`` (``'Lives in Lisbon.'``); each quoted span
  becomes a tag, ``#`` and 8 hex digits of its keyed hash under the home's erase key
  (``core/ops/text_tags.py``): one text gives one tag within a home, so two messages about it
  can be matched, and without the key a tag cannot be tested against a guess.
* ``TextFree.texts``: a list of texts (the reconcile's refused and unmatched lines) as tags.
* ``TextFree.check_result``: a check outcome, its lines as above and its table's text columns
  (any column not in ``SAFE_COLUMNS``) as tags.
* ``TextFree.dedup_markdown``: the dedup report without the largest cluster's text and the
  paraphrase pairs (both stay in the home, in ``dedup/report.html``).

The CLI shows a person the core's messages as they are: their own words, on their own terminal.
A message a core site builds with a person's words unquoted is a bug of that site: quote them.
"""

import ast
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from memory_assets.core.ops.dedup_report import markdown_without_texts
from memory_assets.core.ops.text_tags import TextTags
from memory_assets.core.outcome import CheckOutcome

MAX_TABLE_ROWS = 50
SAFE_COLUMNS = frozenset(
    {
        "id",
        "row",
        "top hit",
        "day",
        "file",
        "line",
        "source",
        "transcript",
        "recorded_in",
        "kind",
        "why",
        "copies",
        "planned",
        "stored",
        "missing",
        "unexpected",
        "stale",
        "missing_rows",
    }
)
"""Columns of a check's table that hold ids, days, paths, counts or the core's own words; the
strings of any other column (``content``, ``fact``, ``turn``, ``now``...) are tagged."""

# A Python string literal as ``repr`` writes one, starting where a quotation starts (not inside a
# word: "the dream's pacing" is no quotation) and ending where one ends.
_QUOTED = re.compile(r"""(?<![\w'"])(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")(?!\w)""")
_SEVERITY = {"error": dg.AssetCheckSeverity.ERROR, "warn": dg.AssetCheckSeverity.WARN}


class TextFree:
    """The translations for one home (``state_dir``: where its erase key is, created on the first
    tag it needs, as an erase creates it, in a home that has its state directory; None, or a home
    without one: every tag is ``#withheld``)."""

    def __init__(self, state_dir: Path | None) -> None:
        self._tags = TextTags(state_dir)

    def tag(self, text: str) -> str:
        """A text's tag: ``#`` and the first hex digits of its keyed hash (``TextTags``)."""
        return self._tags.tag(text)

    def line(self, message: str) -> str:
        """``message`` with each quoted text replaced by its tag."""

        def replace(match: re.Match[str]) -> str:
            try:
                text = ast.literal_eval(match.group(0))
            except (ValueError, SyntaxError):
                text = match.group(0)[1:-1]
            return self.tag(text if isinstance(text, str) else match.group(0))

        return _QUOTED.sub(replace, message)

    def lines(self, messages: Iterable[str]) -> list[str]:
        return [self.line(m) for m in messages]

    def texts(self, texts: Iterable[str]) -> str:
        """Texts as their tags, comma-separated ("-" for none)."""
        return ", ".join(self.tag(t) for t in texts) or "-"

    def log(self, log: Any, level: str, messages: Iterable[str]) -> None:
        """Each message through ``line``, to a Dagster logger (``context.log``) at ``level``."""
        for message in messages:
            getattr(log, level)(self.line(message))

    def cell(self, column: str, value: object) -> str:
        if isinstance(value, int | float):
            return str(value)
        text = str(value)
        return self.line(text) if column in SAFE_COLUMNS else self.tag(text)

    def table(self, rows: Sequence[dict[str, str | int]]) -> str:
        """A check's table as markdown, its text columns as tags."""
        if not rows:
            return "_none_"
        columns = list(rows[0])
        out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for row in rows[:MAX_TABLE_ROWS]:
            cells = (_cell(self.cell(c, row.get(c, ""))) for c in columns)
            out.append("| " + " | ".join(cells) + " |")
        if len(rows) > MAX_TABLE_ROWS:
            out.append(f"\n_… and {len(rows) - MAX_TABLE_ROWS} more_")
        return "\n".join(out)

    def bullets(self, messages: Sequence[str]) -> str:
        return "\n".join(f"- {_cell(self.line(m))}" for m in messages) or "_none_"

    def check_result(
        self, outcome: CheckOutcome, table: str | None = None, **kwargs: Any
    ) -> dg.AssetCheckResult:
        """The outcome as a check result: its numbers, its problems (each with the fix) and, under
        ``table``, its details as a markdown table; ``kwargs`` go to ``AssetCheckResult``."""
        metadata: dict[str, Any] = {
            k: v if isinstance(v, int | float) else self.line(str(v)) for k, v in outcome.metadata.items()
        }
        summary = self.line(outcome.summary)
        metadata["summary"] = summary
        metadata["problems"] = dg.MetadataValue.md(self.bullets(outcome.problems))
        if table is not None:
            metadata[table] = dg.MetadataValue.md(self.table(outcome.details))
        if outcome.warnings:
            metadata["warnings"] = dg.MetadataValue.md(self.bullets(outcome.warnings))
        return dg.AssetCheckResult(
            passed=outcome.passed,
            severity=_SEVERITY[outcome.severity],
            metadata=metadata,
            description=summary,
            **kwargs,
        )

    def dedup_markdown(self, report: dict[str, Any]) -> str:
        """The dedup report's markdown with the largest cluster as a tag and the paraphrase pairs
        counted (their texts are in the home's report.html)."""
        return markdown_without_texts(report, self.tag)


def _cell(value: str) -> str:
    return value.replace("|", "/").replace("\n", " ")
