"""Many users' upkeep in one process (``run_batch``), on real homes with the real model: one
user's broken page fails that user alone, is recorded with its backoff and retried by a later
batch; a user another process holds is skipped and named; a home that cannot be opened is that
user's error, and a user without a home (deleted since the batch was planned) is skipped and
recorded nowhere; each step asks again, so a batch finds nothing left to do once it is done; a batch
killed inside a user's dream is finished by the next."""

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_assets.core.audit.checks import run_all
from memory_assets.core.backoff import UPKEEP_RETRY
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.upkeep.batch import SKIPPED_GONE, run_batch
from memory_assets.core.ops.upkeep.outcomes import load_outcome
from memory_assets.core.ops.upkeep.work import Work
from memory_assets.core.ops.users import open_user_home
from memory_assets.core.reconcile import handoff_pending
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.core.ops.upkeep.test_exclusion import ROOT, held_by_another

BROKEN = "---\ntitle: [unclosed\n---\n- a claim\n"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> Path:
    """Three homes, each with yesterday's log indexed (as the memory service leaves a home)."""
    for name in ("MEMORY_HOME", "MEMORY_INDEX_URI", "MEMORY_INDEX_URI_TEMPLATE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_DREAM_MIN_FACTS", "1")  # the dream's gates open on any fact ...
    monkeypatch.setenv("MEMORY_DREAM_MIN_HOURS", "0")  # ... and a failed batch is tried again at once
    root = tmp_path / "root"
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date()
    for user in ("ana", "bea", "cai"):
        home = open_user_home(root, user, create=True, embedder=embedder)
        write_facts(
            home.settings, yesterday, f"{user} prefers green tea in the morning", f"{user} likes hiking"
        )
        home.ready().indexer.sweep()
    return root


def page(root: Path, user: str) -> Path:
    return open_user_home(root, user).settings.notebook_dir / "3_Personal" / "Preferences.md"


def settings(root: Path, user: str) -> Settings:
    return open_user_home(root, user).settings


@pytest.mark.slow
def test_a_broken_page_fails_its_user_alone_and_a_later_batch_retries_it(
    root: Path, embedder: Embedder
) -> None:
    page(root, "bea").parent.mkdir(parents=True, exist_ok=True)
    page(root, "bea").write_text(BROKEN)
    done = run_batch(
        root, [(u, Work(dream=True)) for u in ("ana", "bea", "cai")], holder="B1", embedder=embedder
    )
    by_user = {e.user: e for e in done}
    assert [u for u, e in by_user.items() if e.ok] == ["ana", "cai"]
    assert list(by_user["bea"].failed) == ["dream"]
    assert "no vault page holds any of the batch's 2 fact(s)" in by_user["bea"].failed["dream"]
    for user in ("ana", "cai"):  # dreamed, reconciled, measured, optimized
        steps = [s.step for s in by_user[user].steps]
        assert steps == ["dream", "reconcile", "dedup", "optimize"], steps
        assert f"{user} prefers green tea in the morning" in page(root, user).read_text()
        assert not handoff_pending(settings(root, user))  # the folded lines are retired
    outcome = load_outcome(root, "bea")
    assert outcome is not None and not outcome.ok and outcome.failures == 1 and outcome.run == "B1"
    assert outcome.retry_at == pytest.approx(outcome.at + UPKEEP_RETRY.first_s)
    assert load_outcome(root, "ana").ok  # type: ignore[union-attr]

    # Failing again doubles the backoff; fixed, the retry (as the planner gives it) succeeds.
    again = run_batch(root, [("bea", Work(retry=["dream"]))], holder="B2", embedder=embedder)
    assert not again[0].ok
    second = load_outcome(root, "bea")
    assert second is not None and second.failures == 2
    assert second.retry_at == pytest.approx(second.at + 2 * UPKEEP_RETRY.first_s)
    page(root, "bea").unlink()
    [fixed] = run_batch(root, [("bea", Work(retry=["dream"]))], holder="B3", embedder=embedder)
    assert fixed.ok, fixed.failed
    assert "bea prefers green tea in the morning" in page(root, "bea").read_text()
    assert load_outcome(root, "bea").ok  # type: ignore[union-attr]

    # Done: asked again, every step finds nothing to do (no dream tick ingests, nothing to retire).
    [idle] = run_batch(root, [("ana", Work(dream=True))], holder="B4", embedder=embedder)
    assert idle.ok and [s.step for s in idle.steps] == ["dream"]
    assert all(r.kind in ("idle", "lint") for r in idle.steps[0].result)


@pytest.mark.slow
def test_a_held_user_is_skipped_and_named_and_the_others_are_kept(
    root: Path, embedder: Embedder, tmp_path: Path
) -> None:
    barrier = tmp_path / "release"
    holder = held_by_another(settings(root, "bea"), barrier)
    try:
        start = time.monotonic()
        done = run_batch(
            root, [(u, Work(dream=True)) for u in ("ana", "bea", "cai")], holder="B1", embedder=embedder
        )
        elapsed = time.monotonic() - start
    finally:
        barrier.touch()
        holder.wait(timeout=30)
    by_user = {e.user: e for e in done}
    assert by_user["ana"].ok and by_user["cai"].ok
    assert by_user["bea"].skipped.startswith(f"held by upkeep batch run B1 (pid {holder.pid}")
    assert by_user["bea"].steps == [] and not page(root, "bea").exists()  # nothing done to her home
    outcome = load_outcome(root, "bea")
    assert outcome is not None and outcome.skipped and outcome.failures == 0
    assert elapsed < 300  # never waited for her (the holder waits up to 300 s)


def test_a_home_that_cannot_be_opened_is_its_users_error(root: Path, embedder: Embedder) -> None:
    done = run_batch(root, [("nobody", Work(dream=True)), ("../ana", Work())], holder="B1", embedder=embedder)
    assert done[0].skipped == SKIPPED_GONE and not done[0].failed and not done[0].ok
    assert "is not valid" in done[1].failed["home"]
    assert load_outcome(root, "nobody") is None  # no home: no record at the root names the user
    assert not (root / "state" / "upkeep" / "nobody.json").exists()


@pytest.mark.slow
def test_a_batch_killed_inside_a_users_dream_is_finished_by_the_next(root: Path, embedder: Embedder) -> None:
    """A batch process killed (SIGKILL) in bea's dream, after its commit and before its follow-up:
    ana is kept, bea's index is behind her commit (the one check that says so names her day and
    the reindex, as after any kill between a write and its reindex), cai is untouched; the next
    batch finishes bea's dream (its step 0) and keeps cai, and every home passes every check."""
    env = {**os.environ, "MEMORY_FAILPOINTS": "dream.committed=kill@2"}
    killed = subprocess.run(
        [sys.executable, "-m", "memory_assets_tests.core.ops.upkeep.batch_worker", str(root), "B1", "ana", "bea", "cai"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert blocking(root, "ana", embedder) == [] and blocking(root, "cai", embedder) == []
    assert [name for name, _ in blocking(root, "bea", embedder)] == ["rows_match_logs"]
    assert load_outcome(root, "cai") is None  # never reached

    done = run_batch(root, [(u, Work(dream=True)) for u in ("bea", "cai")], holder="B2", embedder=embedder)
    assert all(e.ok for e in done), [e.failed for e in done]
    for user in ("ana", "bea", "cai"):
        assert blocking(root, user, embedder) == [], user
        assert f"{user} prefers green tea in the morning" in page(root, user).read_text()


def blocking(root: Path, user: str, embedder: Embedder) -> list[tuple[str, str]]:
    """The failing checks of error severity on ``user``'s home (``memory-assets check``'s)."""
    home = open_user_home(root, user, embedder=embedder)
    return [(o.name, o.summary) for o in run_all(home.settings, home.store, embedder) if o.blocking]


@pytest.mark.slow
def test_days_skipped_while_a_page_was_broken_are_folded_by_the_next_batch_once_it_is_fixed(
    root: Path, embedder: Embedder
) -> None:
    """Issue 40: bea's ``3_Personal`` page is a directory for several batches. Each batch records
    her failure and goes on; her batch is retried, then skipped (its days left unconsolidated),
    then retried alone until it too gives up. ``status`` and ``check`` say which days she skipped
    and why. Once the page is fixed, the next batch folds every skipped day, and the confirmation
    lines the skipped runs were shown; ``check`` is green."""
    from memory_assets.core.audit.checks import days_consolidated
    from memory_assets.core.knowledge.confirmations import Confirmation, append_confirmations
    from memory_assets.core.knowledge.dream_state import load_dream_state
    from memory_assets.core.ops.status import home_status

    home = open_user_home(root, "bea", embedder=embedder)
    s = home.settings
    before = (datetime.now(UTC) - timedelta(days=2)).date()
    write_facts(s, before, "bea keeps bees on the allotment", "bea reads crime novels")
    home.indexer.sweep()
    append_confirmations(
        s.confirmations_path,
        [
            Confirmation(
                f"2026-12-0{n}T09:00:00+00:00",
                "bea likes hiking",
                "bea likes hiking",
                "archive_log",
                None,
                0.97,
                "c0ffee00",
            )
            for n in range(1, 4)
        ],
    )
    page(root, "bea").mkdir(parents=True)  # a directory where her page goes
    runs = 2 * s.dream_max_retries + 2
    for n in range(runs):
        [entry] = run_batch(root, [("bea", Work(dream=True))], holder=f"B{n}", embedder=embedder)
    assert entry.ok, entry.failed  # given up on: the last batches tried nothing, nothing changed
    state = load_dream_state(s.dream_state_path, s.log_md)
    skipped = sorted(state.unconsolidated)
    assert len(skipped) == 2 and not state.failures.get(skipped[-1])  # skipped, then given up on
    status = home_status(s, home.store)
    assert status["unconsolidated_days"] == skipped and status["unconsolidated_given_up_at"]
    why = status["unconsolidated_why"]
    assert sorted(why) == skipped, why
    assert all(w.startswith("IsADirectoryError") and "3_Personal/Preferences.md" in w for w in why.values())
    warning = days_consolidated(s)
    assert not warning.passed and warning.severity == "warn"
    assert all(day in warning.problems[0] for day in skipped) and why[skipped[0]] in warning.problems[0]
    assert len(s.confirmations_path.read_text().splitlines()) == 3  # shown to failed runs only

    page(root, "bea").rmdir()  # fixed
    [fixed] = run_batch(root, [("bea", Work(dream=True))], holder="B-fixed", embedder=embedder)
    assert fixed.ok, fixed.failed
    state = load_dream_state(s.dream_state_path, s.log_md)
    assert state.unconsolidated == [] and state.failures == {}
    text = page(root, "bea").read_text()
    for fact in (
        "bea prefers green tea in the morning",
        "bea likes hiking",
        "bea keeps bees on the allotment",
    ):
        assert fact in text
    assert s.confirmations_path.read_text() == ""  # folded by the run
    assert days_consolidated(s).passed
    outcomes = run_all(s, open_user_home(root, "bea").store, embedder)
    assert all(o.passed for o in outcomes), [o for o in outcomes if not o.passed]
