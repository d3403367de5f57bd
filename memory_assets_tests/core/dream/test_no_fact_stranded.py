"""No fact stranded (issue: the fault probe's reproductions, D1, D3, D4, D5, D7 and D10, on real
homes). Each case ends with ``facts_accounted_for`` passing: every fact line is indexed, folded
into a page that holds it, or forgotten by a person."""

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_assets.cli import main
from memory_assets.core.audit.facts_accounted import account, facts_accounted_for
from memory_assets.core.dream.rule_consolidator import RuleConsolidator
from memory_assets.core.dream.runner import run_dream
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.folds import load_folds
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.reconcile import reconcile
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.core.dream.test_agent import agent, call, tool_calls
from memory_assets_tests.core.models.test_language_model import ChatServer, completion

REPO = Path(__file__).resolve().parents[3]
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TODAY = NOW.date()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def accounted(settings: Settings, embedder: Embedder) -> None:
    """Bring the index up to date, then assert no fact line is stranded."""
    indexer = Indexer(settings, embedder=embedder)
    indexer.sweep()
    outcome = facts_accounted_for(settings, indexer.store)
    assert outcome.passed, outcome.problems


def hits_for(capsys: pytest.CaptureFixture[str], settings: Settings, text: str) -> list[str]:
    code, out = run(
        capsys, "--home", str(settings.home), "--json", "search", text, "--no-embed", "--limit", "20"
    )
    assert code == 0, out
    return [h["source_type"] for h in json.loads(out) if text.lower() in h["content"].lower()]


# -- D1: writes to past days --------------------------------------------------------------------
def test_a_fact_written_to_a_day_the_dream_passed_is_indexed_then_folded(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    today = datetime.now(UTC).date()
    home = ["--home", str(settings.home), "--json"]
    alpha = "Alpha fact written two days ago for the watermark"
    bravo = "Bravo fact written three days ago after the dream"
    code, _ = run(capsys, *home, "remember", alpha, "--at", f"{today - timedelta(days=2)}T10:00:00")
    assert code == 0
    code, out = run(capsys, *home, "dream", "--force")
    assert code == 0 and json.loads(out)["runs"][0]["watermark"] == (today - timedelta(days=2)).isoformat()
    code, out = run(capsys, *home, "remember", bravo, "--at", f"{today - timedelta(days=3)}T10:00:00")
    assert code == 0 and json.loads(out)["rows_embedded"] == 1  # below the watermark, and indexed
    assert hits_for(capsys, settings, bravo) == ["archive_log"]
    accounted(settings, embedder)
    code, out = run(capsys, *home, "dream", "--force")
    [ran] = json.loads(out)["runs"]
    assert (
        code == 0
        and ran["ok"]
        and ran["folded"] == 1
        and ran["days"] == [(today - timedelta(days=3)).isoformat()]
    )
    assert bravo in (settings.notebook_dir / "3_Personal" / "General.md").read_text()
    found = hits_for(capsys, settings, bravo)
    assert "notebook" in found and "archive_log" not in found  # the page answers for it now
    accounted(settings, embedder)


def test_a_late_transcript_turn_older_than_the_watermark_is_consolidated(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    today = datetime.now(UTC).date()
    home = ["--home", str(settings.home), "--json"]
    run(
        capsys,
        *home,
        "remember",
        "Charlie owns a canoe called Bluewake",
        "--at",
        f"{today - timedelta(days=2)}T09:00:00",
    )
    code, _ = run(capsys, *home, "dream", "--force")
    assert code == 0
    late = today - timedelta(days=4)
    (settings.home / "transcripts" / "late.jsonl").write_text(
        json.dumps(
            {"ts": f"{late}T10:00:00Z", "role": "user", "content": "I own a trombone called Slidewell."}
        )
        + "\n"
    )
    code, out = run(capsys, *home, "ingest-transcripts")
    assert code == 0 and json.loads(out)["days"] == [late.isoformat()]
    assert hits_for(capsys, settings, "Slidewell") == ["archive_log"]
    accounted(settings, embedder)
    code, out = run(capsys, *home, "dream", "--force")
    assert code == 0 and json.loads(out)["runs"][0]["folded"] >= 1
    assert "notebook" in hits_for(capsys, settings, "Slidewell")
    accounted(settings, embedder)


# -- D3: facts for a page that cannot be written stay indexed ----------------------------------
@pytest.mark.parametrize(
    "broken",
    [
        "---\ntitle: [unclosed\n---\n\n## Key Facts\n\n- Likes tea.\n",
        "---\ntitle: General\n\n## Key Facts\n\n- Likes tea.\n",
        "---\n- a\n- list\n---\n\n## Key Facts\n",
    ],
)
def test_facts_for_a_page_with_broken_frontmatter_stay_indexed(
    settings: Settings, embedder: Embedder, broken: str
) -> None:
    day = TODAY - timedelta(days=2)
    write_facts(
        settings, day, "Rubaxo wenba nakuni luteru tero", "Zargul kelyator rindra niyakel", category="general"
    )
    write_facts(
        settings, day, "Prefers the window seat on long trains", "Prefers oat milk in coffee", hour=10
    )
    page = settings.notebook_dir / "3_Personal" / "General.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(broken)
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0")
    result = run_dream(s, RuleConsolidator(), now=NOW)
    assert result.ok and result.folded == 2 and result.left == 2
    assert any("stay in the index" in w for w in result.warnings)
    assert page.read_text() == broken  # left alone, byte for byte
    indexer = Indexer(s, embedder=embedder)
    reconcile(s, indexer)
    archive = [c for _, c, kind in indexer.store.contents() if kind == "archive_log"]
    assert sorted(archive) == ["Rubaxo wenba nakuni luteru tero", "Zargul kelyator rindra niyakel"]
    accounted(s, embedder)


# -- D5: supersession keeps history; numbered things are not values --------------------------------
def test_a_long_chain_of_supersessions_keeps_every_value(settings: Settings, embedder: Embedder) -> None:
    day = TODAY - timedelta(days=2)
    for n in range(1, 9):
        write_facts(
            settings, day, f"The storage locker in the basement is number {n}", category="general", hour=n
        )
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0")
    result = run_dream(s, RuleConsolidator(), now=NOW)
    assert result.ok and result.outcomes == {"add": 1, "supersede": 7} and result.folded == 8
    text = (settings.notebook_dir / "3_Personal" / "General.md").read_text()
    assert "- The storage locker in the basement is number 8" in text
    for n in range(1, 8):
        assert f"previously: The storage locker in the basement is number {n}" in text
    reconcile(s, Indexer(s, embedder=embedder))
    accounted(s, embedder)


def test_numbered_things_are_separate_claims_not_new_values(settings: Settings, embedder: Embedder) -> None:
    day = TODAY - timedelta(days=2)
    facts = [f"Race trial 1 fact number {n:02d} written while the dream runs" for n in range(7)]
    write_facts(settings, day, *facts, category="general")
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0")
    result = run_dream(s, RuleConsolidator(), now=NOW)
    assert result.ok and result.outcomes == {"add": 7}
    text = (settings.notebook_dir / "3_Personal" / "General.md").read_text()
    assert all(f"- {f}" in text for f in facts) and "previously" not in text
    accounted(s, embedder)


# -- D7: a bad model's run never advances past facts no page holds ---------------------------------
@pytest.fixture
def server() -> ChatServer:
    srv = ChatServer()
    yield srv
    srv.close()


BATCH = [
    "Rubaxo wenba nakuni luteru tero lives on the third floor",
    "Taru batorkel tormiro ludrana draphpe plays the oboe",
]


def test_an_agent_that_writes_a_junk_page_folds_nothing_and_is_rolled_back(
    server: ChatServer, settings: Settings, embedder: Embedder
) -> None:
    write_facts(settings, TODAY - timedelta(days=2), *BATCH, category="general")
    Indexer(settings, embedder=embedder).sweep()
    server.answer_with(
        tool_calls(call("1", "write", {"path": "0_Inbox/junk.md", "content": "# junk\n\nnothing here\n"})),
        tool_calls(*[call(str(i + 2), "retire", {"fact": f}) for i, f in enumerate(BATCH)]),
        completion("Done."),
    )
    result = run_dream(settings, agent(server, settings), now=NOW, force=True)
    assert not result.ok and "no vault page holds any" in result.reason and result.failures == 1
    assert not (settings.notebook_dir / "0_Inbox" / "junk.md").exists()  # rolled back
    assert not settings.superseded_path.exists() or settings.superseded_path.read_text() == ""
    assert not settings.tombstones_path.exists()
    assert load_folds(settings).records == 1  # the baseline only: nothing committed
    reconcile(settings, Indexer(settings, embedder=embedder))
    accounted(settings, embedder)
    # A later restatement is written and indexed: nothing hides it.
    indexer = Indexer(settings, embedder=embedder)
    write_facts(settings, TODAY, BATCH[0], hour=11)
    indexer.sweep()
    assert [c for _, c, _ in indexer.store.contents()].count(BATCH[0]) == 2


def test_an_agent_that_wipes_a_page_holding_earlier_claims_is_rolled_back(
    server: ChatServer, settings: Settings, embedder: Embedder
) -> None:
    earlier = [
        "Kelyator rindra niyakel likelro keeps three hives",
        "Phniru peludra liphfe quiba runs on Sundays",
    ]
    write_facts(settings, TODAY - timedelta(days=3), *earlier, category="general")
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0")
    assert run_dream(s, RuleConsolidator(), now=NOW).ok
    page = settings.notebook_dir / "3_Personal" / "General.md"
    kept = page.read_text()
    write_facts(settings, TODAY - timedelta(days=2), *BATCH, category="general")
    server.answer_with(
        tool_calls(
            call("1", "write", {"path": "3_Personal/General.md", "content": "---\ntitle: [x\n---\n- wiped\n"})
        ),
        tool_calls(
            call(
                "2",
                "write",
                {"path": "3_Personal/Other.md", "content": "".join(f"- {f}\n" for f in BATCH)},
            )
        ),
        completion("Done."),
    )
    result = run_dream(s, agent(server, s), now=NOW + timedelta(hours=1), force=True)
    assert not result.ok and "took away the claims" in result.reason
    assert page.read_text() == kept and not (settings.notebook_dir / "3_Personal" / "Other.md").exists()
    reconcile(s, Indexer(s, embedder=embedder))
    accounted(s, embedder)


# -- D10: folding is idempotent: a crash or a failure never counts a mention twice -----------------
def _dream_process(home: Path, failpoints: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_assets.cli", "--home", str(home), "--json", "dream", "--force"],
        env={**os.environ, "PYTHONPATH": str(REPO), "MEMORY_FAILPOINTS": failpoints},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("point", ["dream.consolidated", "dream.committed"])
def test_a_dream_killed_mid_run_counts_every_mention_once(
    settings: Settings, embedder: Embedder, point: str
) -> None:
    today = datetime.now(UTC).date()
    facts = [f"Rukulu phniru peludra liphfe quiba number {n} is a plant" for n in range(5)]
    write_facts(settings, today - timedelta(days=2), *facts, category="general")
    killed = _dream_process(settings.home, f"{point}=kill")
    assert killed.returncode == -9, killed.stderr[-2000:]
    page = settings.notebook_dir / "3_Personal" / "General.md"
    assert page.exists()  # the pages were written before the kill
    again = _dream_process(settings.home, "")
    assert again.returncode == 0, again.stderr[-2000:]
    [ran] = json.loads(again.stdout)["runs"]
    assert any("was interrupted" in w for w in ran["warnings"])
    text = page.read_text()
    assert "(confirmed" not in text and all(text.count(f"- {f}") == 1 for f in facts)
    if point == "dream.committed":  # committed: the follow-up was finished, nothing re-folded
        assert ran["kind"] in ("idle", "lint")
    else:
        assert ran["ok"] and ran["folded"] == 5
    # The reconcile after the dream retired each folded line exactly once.
    tombstones = [json.loads(line)["content"] for line in settings.tombstones_path.read_text().splitlines()]
    assert sorted(tombstones) == sorted(f.lower() for f in facts)
    accounted(settings, embedder)


def test_a_failed_run_is_rolled_back_so_its_retry_counts_nothing_twice(
    settings: Settings, embedder: Embedder
) -> None:
    day = TODAY - timedelta(days=2)
    write_facts(settings, day, "Zargul kelyator rindra niyakel likelro is the cat", category="context")
    write_facts(settings, day, "Quiba liphfe peludra phniru is the dog", category="general", hour=10)
    (settings.notebook_dir / "3_Personal" / "General.md").mkdir(parents=True)  # every run fails on it
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0", dream_max_retries="3")
    context = settings.notebook_dir / "3_Personal" / "Context.md"
    for attempt in range(1, 4):
        result = run_dream(s, RuleConsolidator(), now=NOW)
        assert not result.ok and result.failures == attempt
        assert not context.exists()  # rolled back every time
    (settings.notebook_dir / "3_Personal" / "General.md").rmdir()
    assert run_dream(s, RuleConsolidator(), now=NOW).kind == "skip"
    result = run_dream(s, RuleConsolidator(), now=NOW + timedelta(days=1))
    assert result.ok and result.folded == 2
    assert "(confirmed" not in context.read_text()
    accounted(s, embedder)


# -- D4: lines appended to a pending day while the dream runs (real processes) ----------------------
WRITER = """
import sys, time
from datetime import datetime, timedelta, UTC
from memory_assets.core.home import Home
from memory_assets.core.settings import Settings
from memory_assets.core.write_path.extraction import ExtractedFact, GivenFacts, Turn
from memory_assets.core.write_path.process import process_turn
home = Home(Settings.load(sys.argv[1])).ready()
day = datetime.now(UTC) - timedelta(days=1)
with open(sys.argv[2], "a") as acked:
    for n in range(int(sys.argv[3])):
        text = f"Race trial fact number {n:02d} written while the dream runs"
        process_turn(Turn(text, chat_id="race", at=day.replace(hour=10, minute=n % 60)), home.settings,
                     extractor=GivenFacts([ExtractedFact(text, "general")]), store=home.store, embedder=None)
        acked.write(text + "\\n"); acked.flush()
        if n == 3:
            open(sys.argv[2] + ".started", "w").close()
        time.sleep(0.05)
"""


@pytest.mark.slow
def test_lines_appended_to_a_pending_day_while_the_dream_runs_are_never_stranded(
    settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    today = datetime.now(UTC).date()
    write_facts(
        settings, today - timedelta(days=1), *[f"Seed fact {n} about the garden shed" for n in range(20)]
    )
    acked = tmp_path / "acked.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(settings.home), str(acked), "60"], env=env)
    deadline = time.monotonic() + 120
    while not Path(f"{acked}.started").exists():
        assert time.monotonic() < deadline and writer.poll() is None
        time.sleep(0.05)
    dream = subprocess.run(
        [
            sys.executable,
            "-m",
            "memory_assets.cli",
            "--home",
            str(settings.home),
            "--json",
            "dream",
            "--force",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert writer.wait(timeout=300) == 0
    assert dream.returncode == 0, dream.stderr[-2000:]
    written = acked.read_text().splitlines()
    assert len(written) == 60
    accounted(settings, embedder)  # nothing stranded even before the next dream
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0")
    while (result := run_dream(s, RuleConsolidator(), force=True)).kind == "ingest":
        assert result.ok
    reconcile(s, Indexer(s, embedder=embedder))
    accounting = account(s, Indexer(s, embedder=embedder).store)
    assert accounting.stranded == [] and accounting.indexed + accounting.folded == 80
    page = (settings.notebook_dir / "3_Personal" / "General.md").read_text()
    assert all(f"- {t}" in page for t in written) and "(confirmed" not in page
