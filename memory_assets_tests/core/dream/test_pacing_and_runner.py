"""The dream's pacing and runner on real homes: every gate, counters that survive a new process,
no advance on a failure or an empty run, today never ingested, skipped days kept retrievable,
confirmations appended during a run kept, the dry run touching nothing."""

import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from memory_assets.core.dream.consolidator import Batch, ConsolidationResult
from memory_assets.core.dream.dry_run import dry_run
from memory_assets.core.dream.pacing import IDLE, INGEST, LINT, SKIP, decide
from memory_assets.core.dream.runner import run_dream
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.confirmations import Confirmation, append_confirmations, read_confirmations
from memory_assets.core.knowledge.dream_state import DreamState, load_dream_state, save_dream_state
from memory_assets.core.knowledge.watermark import append_ingest_entry, read_watermark
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TODAY = NOW.date()
REPO = Path(__file__).resolve().parents[3]


class PageWriter:
    """A consolidator that writes one page per run (the runner, not consolidation, is under test)."""

    name = "test-pages"

    def __init__(self, during: object = None) -> None:
        self.batches: list[Batch] = []
        self.during = during

    def consolidate(self, settings: Settings, batch: Batch) -> ConsolidationResult:
        self.batches.append(batch)
        if callable(self.during):
            self.during()
        page = settings.notebook_dir / "3_Personal" / "General.md"
        lines = [f"- {f.content}" for f in batch.facts]
        page.write_text("## Key Facts\n" + "\n".join(lines) + f"\n<!-- run {len(self.batches)} -->\n")
        return ConsolidationResult(
            pages_changed=["3_Personal/General.md"],
            outcomes=Counter(add=len(lines)),
            folded=[f.content for f in batch.facts],
            confirmations_folded=len(batch.confirmations),
            summary=f"{len(lines)} facts",
        )


class NoChange:
    name = "test-no-change"

    def consolidate(self, settings: Settings, batch: Batch) -> ConsolidationResult:
        return ConsolidationResult(summary="nothing")


class Broken:
    name = "test-broken"

    def consolidate(self, settings: Settings, batch: Batch) -> ConsolidationResult:
        raise RuntimeError("the model is down")


def days_with_facts(settings: Settings, first: date, count: int, per_day: int = 3) -> list[date]:
    days = [first + timedelta(days=n) for n in range(count)]
    for day in days:
        write_facts(settings, day, *[f"Fact {k} of {day}" for k in range(per_day)])
    return days


def test_gates_min_facts_min_hours_behind_and_today(settings: Settings) -> None:
    days_with_facts(settings, TODAY - timedelta(days=3), 4, per_day=2)  # 3 past days + today
    state = DreamState()
    few = Settings.load(settings.home, env={}, dream_min_facts="20")
    decision = decide(few, state, now=NOW)
    assert decision.kind == IDLE and "min_facts" in decision.reason
    assert TODAY not in decision.pending  # today's log is never consolidated
    enough = Settings.load(settings.home, env={}, dream_min_facts="5")
    assert decide(enough, state, now=NOW).kind == INGEST
    recent = DreamState(last_attempt_at=NOW - timedelta(hours=3))
    assert decide(enough, recent, now=NOW).kind == IDLE  # min_hours since the last attempt
    assert decide(enough, recent, now=NOW, force=True).kind == INGEST  # --force skips both gates
    small_batches = Settings.load(settings.home, env={}, dream_min_facts="500", dream_max_days="2")
    behind = decide(small_batches, recent, now=NOW)
    assert behind.kind == INGEST and "max_days" in behind.reason and len(behind.days) == 2  # behind: at once


def test_lint_only_when_caught_up_and_due(settings: Settings) -> None:
    assert decide(settings, DreamState(), now=NOW).kind == LINT  # never linted, nothing pending
    assert decide(settings, DreamState(last_lint_attempt_at=NOW - timedelta(hours=2)), now=NOW).kind == IDLE
    settings.log_md.write_text(f"# Notebook Log\n\n## [{TODAY - timedelta(days=2)}] lint\n")
    assert decide(settings, DreamState(), now=NOW).kind == IDLE  # linted 2 days ago, min 7
    days_with_facts(settings, TODAY - timedelta(days=20), 1)
    settings.log_md.write_text(f"# Notebook Log\n\n## [{TODAY - timedelta(days=30)}] lint\n")
    forced = Settings.load(settings.home, env={}, dream_min_facts="1")
    assert decide(forced, DreamState(), now=NOW).kind == INGEST  # ingest before lint, always


def test_a_productive_run_advances_hands_off_and_keeps_confirmations_appended_meanwhile(
    settings: Settings,
) -> None:
    days = days_with_facts(settings, TODAY - timedelta(days=3), 3)
    shown = Confirmation("2026-11-27T09:00:00+00:00", "Fact 0", "Fact 0", "archive_log", "x.md", 1.0, "c")
    append_confirmations(settings.confirmations_path, [shown, shown])
    late = Confirmation("2026-11-30T11:59:00+00:00", "Late", "Late", "archive_log", "y.md", 1.0, "d")
    writer = PageWriter(during=lambda: append_confirmations(settings.confirmations_path, [late]))
    result = run_dream(Settings.load(settings.home, env={}, dream_min_facts="1"), writer, now=NOW)
    assert result.ok and result.advanced and result.watermark == days[-1].isoformat()
    assert read_watermark(settings.log_md) == days[-1]
    assert len(writer.batches[0].confirmations) == 2
    remaining, _ = read_confirmations(settings.confirmations_path)
    assert remaining == [late]  # exactly the lines shown were removed
    handed = settings.superseded_path.read_text().splitlines()
    assert handed == [f"Fact {k} of {d}" for d in days for k in range(3)]
    state = load_dream_state(settings.dream_state_path, settings.log_md)
    assert state.last_attempt_at == NOW and state.failures == {}


@pytest.mark.parametrize("consolidator", [NoChange(), Broken()], ids=["no-change", "raises"])
def test_no_advance_on_a_failure_or_an_empty_run_and_the_count_survives_a_new_process(
    settings: Settings, consolidator: object
) -> None:
    days_with_facts(settings, TODAY - timedelta(days=2), 2)
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0")
    result = run_dream(s, consolidator, now=NOW)  # type: ignore[arg-type]
    assert not result.ok and not result.advanced and result.failures == 1
    assert read_watermark(settings.log_md) is None and not settings.superseded_path.exists()
    # A new process reads the persisted counter and counts on from it.
    code = (
        "import sys; from datetime import datetime, UTC\n"
        "from memory_assets.core.settings import Settings\n"
        "from memory_assets.core.dream.runner import run_dream\n"
        "from memory_assets_tests.core.dream.test_pacing_and_runner import NoChange\n"
        "s = Settings.load(sys.argv[1], env={}, dream_min_facts='1', dream_min_hours='0')\n"
        "print(run_dream(s, NoChange(), now=datetime(2026, 11, 30, 13, tzinfo=UTC)).failures)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(settings.home)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "2"


def test_retry_then_skip_keeps_the_days_retrievable(settings: Settings, embedder: Embedder) -> None:
    days = days_with_facts(settings, TODAY - timedelta(days=2), 2)
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0", dream_max_retries="2")
    indexer = Indexer(s, embedder=embedder)
    indexer.sweep()
    for _ in range(2):
        assert not run_dream(s, NoChange(), now=NOW).ok
    skipped = run_dream(s, NoChange(), now=NOW)
    assert skipped.kind == SKIP and skipped.advanced and read_watermark(settings.log_md) == days[-1]
    state = load_dream_state(settings.dream_state_path, settings.log_md)
    assert state.unconsolidated == [d.isoformat() for d in days] and state.failures == {}
    # The skip is recorded in log.md too, so losing the state file does not lose it.
    good = settings.dream_state_path.read_bytes()
    settings.dream_state_path.write_text("{lost")
    rebuilt = load_dream_state(settings.dream_state_path, settings.log_md)
    assert rebuilt.unconsolidated == [d.isoformat() for d in days] and rebuilt.warnings
    settings.dream_state_path.write_bytes(good)
    indexer.sweep()  # the watermark passed them, yet their rows stay: skipping loses nothing
    assert indexer.store.count("source_type = 'archive_log'") == 6
    # A later productive dream folds them, and only then do they leave the index.
    folded = run_dream(s, PageWriter(), now=NOW + timedelta(days=1))
    assert folded.ok and folded.days == [d.isoformat() for d in days]
    assert load_dream_state(settings.dream_state_path, settings.log_md).unconsolidated == []
    Indexer(s, embedder=embedder).sweep()
    assert indexer.store.count("source_type = 'archive_log'") == 0


def test_days_given_up_on_are_tried_again_once_the_vault_changes_or_a_day_later(settings: Settings) -> None:
    """Skipped days that failed alone ``max_retries`` times too are given up on, with why; they
    are tried once more (at once, no gate) when the vault changes after that (a person fixed a
    page), or a day later (a cause outside the vault), or when a person forces a run; a failure
    gives up again, a success folds them."""
    days = days_with_facts(settings, TODAY - timedelta(days=2), 2)
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0", dream_max_retries="2")
    ticks = [run_dream(s, Broken(), now=NOW + timedelta(minutes=n)) for n in range(5)]
    assert [t.kind for t in ticks] == ["ingest", "ingest", "skip", "ingest", "ingest"]
    state = load_dream_state(s.dream_state_path, s.log_md)
    assert state.unconsolidated == [d.isoformat() for d in days] and state.gave_up is not None
    assert set(state.skipped_why.values()) == {"RuntimeError: the model is down"}
    later = NOW + timedelta(hours=1)
    waiting = decide(s, state, now=later)
    assert waiting.kind != INGEST and not waiting.pending  # given up: nothing changed since
    assert decide(s, state, now=later, force=True).retry_round  # a person asks
    # A page edited by a person: tried once more, at once; still failing, given up on again.
    (s.notebook_dir / "3_Personal").mkdir(parents=True, exist_ok=True)
    (s.notebook_dir / "3_Personal" / "Notes.md").write_text("- a note\n")
    retry = decide(s, state, now=later)
    assert retry.kind == INGEST and retry.retry_round and "the vault changed" in retry.reason
    again = run_dream(s, Broken(), now=later)
    assert not again.ok and again.failures == 2
    state = load_dream_state(s.dream_state_path, s.log_md)
    assert decide(s, state, now=later + timedelta(minutes=1)).kind != INGEST
    # A day later: tried once more; this time the model answers and the days fold.
    next_day = later + timedelta(hours=24)
    assert "hours since they last failed" in decide(s, state, now=next_day).reason
    folded = run_dream(s, PageWriter(), now=next_day)
    assert folded.ok and folded.days == [d.isoformat() for d in days]
    state = load_dream_state(s.dream_state_path, s.log_md)
    assert state.unconsolidated == [] and state.skipped_why == {} and state.gave_up is None
    assert state.failures == {} and state.last_failure is None


def test_an_unreadable_state_is_reported_and_rebuilt_from_log_md(settings: Settings) -> None:
    days_with_facts(settings, TODAY - timedelta(days=2), 2)
    append_ingest_entry(settings.log_md, TODAY - timedelta(days=5), TODAY - timedelta(days=6))
    settings.dream_state_path.write_text("{not json")
    result = run_dream(Settings.load(settings.home, env={}, dream_min_facts="1"), PageWriter(), now=NOW)
    assert any("unreadable" in w and "rebuilt from log.md" in w for w in result.warnings)
    assert (settings.state_dir / "dream_state.json.corrupt").read_text() == "{not json"
    assert json.loads(settings.dream_state_path.read_text())["version"] == 1
    save_dream_state(settings.dream_state_path, DreamState())


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_the_dry_run_leaves_every_byte_of_the_home_unchanged(settings: Settings, embedder: Embedder) -> None:
    days_with_facts(settings, TODAY - timedelta(days=3), 3)
    Indexer(settings, embedder=embedder).sweep()
    before = tree_hash(settings.home)
    preview = dry_run(
        Settings.load(settings.home, env={}, dream_min_facts="1"), PageWriter(), ticks=5, now=NOW
    )
    assert preview.results[0].ok and preview.files_changed and "+- Fact 0 of" in preview.diff
    assert "log.md" in preview.files_changed  # the clone's watermark moved ...
    assert tree_hash(settings.home) == before  # ... and nothing of the real home did
