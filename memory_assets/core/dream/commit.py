"""A dream run's verdict and commit: a run counts only for the facts a page holds (design §5.9).

After a consolidator ran, the runner asks the vault, not the consolidator, what happened:

* each fact of the batch is **folded** when a page holds it (``knowledge/page_index.py``), and
  **left** otherwise (it stays indexed, with a warning naming it);
* a run that left **every** fact of its batch unheld, or whose page writes took away claims that
  held facts folded earlier (a page overwritten, a claim dropped), has **failed**: its pages are
  rolled back from the journal and the watermark stays (``lost`` names the facts it would have
  stranded);
* otherwise its **commit** is one durable record in ``folds.jsonl`` (``knowledge/folds.py``):
  how far it read each log, which page holds each folded line, which lines it left. That append
  is the commit point. Everything after it (``follow_up``) is derived from the record and safe to
  replay after a crash: the hand-off of the folded lines to ``superseded.txt``, removing exactly
  the confirmation lines the run was shown (only while the file still starts with them), the
  watermark entry in ``log.md``, the dream state.
"""

import secrets
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from memory_assets.core.capture.daily_log import parse_daily_log
from memory_assets.core.dream.consolidator import Batch, BatchFact
from memory_assets.core.dream.journal import DreamJournal
from memory_assets.core.durable import append_durable
from memory_assets.core.knowledge.confirmations import lines_sha256, remove_first
from memory_assets.core.knowledge.dream_state import load_dream_state, save_dream_state
from memory_assets.core.knowledge.folds import (
    FOLDED,
    Folds,
    append_record,
    read_complete_lines,
)
from memory_assets.core.knowledge.page_index import PageIndex, clean_line
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.knowledge.watermark import append_ingest_entry, read_watermark
from memory_assets.core.settings import Settings

MAX_NAMED = 10  # facts a warning or an error names (the counts are complete)


def new_run_id(now: datetime) -> str:
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


@dataclass
class Verdict:
    folded: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # page -> file -> lines
    texts: list[str] = field(default_factory=list)  # the folded facts' texts, in batch order
    left: list[BatchFact] = field(default_factory=list)
    lost: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, text)
    changed: list[str] = field(default_factory=list)
    failure: str | None = None

    @property
    def held(self) -> int:
        return len(self.texts)


def named_texts(texts: list[str]) -> str:
    shown = "; ".join(repr(t if len(t) <= 80 else t[:79] + "…") for t in texts[:MAX_NAMED])
    more = f" and {len(texts) - MAX_NAMED} more" if len(texts) > MAX_NAMED else ""
    return shown + more


def verify(
    settings: Settings, batch: Batch, journal: DreamJournal, folds: Folds, changed: list[str]
) -> Verdict:
    """What the run did, read from the vault (see the module docstring)."""
    vault = settings.notebook_dir
    verdict = Verdict(changed=sorted(changed))
    warnings: list[str] = []
    after = PageIndex.of_vault(vault, warnings=warnings)
    folded: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for fact in batch.facts:
        holding = after.holder(fact.content, prefer=verdict.changed)
        if holding is None:
            verdict.left.append(fact)
            continue
        folded[holding.page][fact.source_file].append(fact.line)
        verdict.texts.append(fact.content)
    verdict.folded = {page: dict(files) for page, files in folded.items()}
    verdict.lost = _lost(settings, journal, folds, after)
    if verdict.lost:
        verdict.failure = (
            f"the run's page writes took away the claims that held {len(verdict.lost)} fact(s) folded "
            f"earlier ({named_texts([t for _, _, t in verdict.lost])}); a run may rewrite a claim, never drop "
            "one, so it was rolled back"
        )
    elif batch.facts and not verdict.texts:
        verdict.failure = (
            f"no vault page holds any of the batch's {len(batch.facts)} fact(s) after the run "
            f"({named_texts([f.content for f in batch.facts])}), so it was rolled back and they stay indexed"
        )
    elif not batch.facts and not verdict.changed:
        verdict.failure = "the consolidator changed no content page"
    return verdict


def _lost(
    settings: Settings, journal: DreamJournal, folds: Folds, after: PageIndex
) -> list[tuple[str, int, str]]:
    """Facts folded before this run that a line this run removed from a page held, and that no
    page holds now. Only lines that left the vault are looked at, so a run that only added or
    re-counted claims costs nothing here."""
    removed: dict[str, str] = {}
    for rel, before in journal.changed().items():
        if before is None:
            continue
        gone = [
            line
            for raw in before.decode("utf-8", errors="replace").splitlines()
            if (line := clean_line(raw)) and not line.startswith(("#", "---")) and not after.has_line(line)
        ]
        if gone:
            removed[rel] = "\n".join(gone)
    if not removed:
        return []
    gone_index = PageIndex(removed)
    lost: list[tuple[str, int, str]] = []
    for file, line, text in folded_facts(settings, folds):
        if gone_index.holder(text) is not None and after.holder(text) is None:
            lost.append((file, line, text))
    return lost


def folded_facts(settings: Settings, folds: Folds) -> list[tuple[str, int, str]]:
    """Every fact line the ledger calls folded (file, line, text), tombstoned lines left out."""
    tombs = read_tombstones(settings.tombstones_path)
    out: list[tuple[str, int, str]] = []
    for name in sorted(folds.files):
        file = folds.files[name]
        if not file.baseline and not any(s.kind == FOLDED for s in file.lines.values()):
            continue
        try:
            data = read_complete_lines(settings.archive_dir / name).data
        except OSError:
            continue
        for fact in parse_daily_log(data.decode("utf-8", errors="replace"), name).facts:
            if file.folded(fact.line) and not tombs.hides(fact.content):
                out.append((name, fact.line, fact.content))
    return out


def commit_record(run: str, batch: Batch, verdict: Verdict, watermark: date | None) -> dict[str, Any]:
    """The run's commit (see the module docstring)."""
    left: dict[str, list[int]] = defaultdict(list)
    for fact in verdict.left:
        left[fact.source_file].append(fact.line)
    return {
        "kind": "run",
        "run": run,
        "days": [d.isoformat() for d in batch.days],
        "read": {name: list(mark) for name, mark in sorted(batch.read.items())},
        "folded": verdict.folded,
        "left": dict(left),
        "confirmations": {
            "lines": batch.confirmations_shown,
            "sha256": lines_sha256(batch.confirmation_lines),
        },
        "watermark": watermark.isoformat() if watermark else None,
    }


def commit(settings: Settings, record: dict[str, Any]) -> None:
    """The commit point: one durable append to the ledger."""
    append_record(settings.folds_path, record)


def follow_up(settings: Settings, record: dict[str, Any], now: datetime) -> None:
    """Everything a commit implies, derived from its record; safe to run twice (a crash between
    the commit and the end of this replays it on the next tick)."""
    texts = _texts(settings, record.get("folded") or {})
    if texts:
        append_durable(settings.superseded_path, "".join(f"{' '.join(t.split())}\n" for t in texts))
    shown = record.get("confirmations") or {}
    remove_first(settings.confirmations_path, int(shown.get("lines") or 0), str(shown.get("sha256") or ""))
    state = load_dream_state(settings.dream_state_path, settings.log_md, now=now)
    state.folded([str(d) for d in record.get("days") or []])
    mark = record.get("watermark")
    if mark:
        current = read_watermark(settings.log_md)
        if current is None or date.fromisoformat(mark) > current:
            append_ingest_entry(settings.log_md, now.date(), date.fromisoformat(mark))
    save_dream_state(settings.dream_state_path, state)


def _texts(settings: Settings, folded: dict[str, dict[str, list[int]]]) -> list[str]:
    wanted: dict[str, set[int]] = defaultdict(set)
    for files in folded.values():
        for name, lines in files.items():
            wanted[name].update(lines)
    texts: list[str] = []
    for name in sorted(wanted):
        try:
            data = read_complete_lines(settings.archive_dir / name).data
        except OSError:
            continue
        for fact in parse_daily_log(data.decode("utf-8", errors="replace"), name).facts:
            if fact.line in wanted[name]:
                texts.append(fact.content)
    return texts
