"""``facts_accounted_for`` fails on every way a fact can be stranded (the fault probe's cases, built
directly on disk as older versions left them) and passes on a healthy home; ``restore-stranded``
makes each one findable again, and a second run finds nothing to do."""

import json
from datetime import UTC, date, datetime, timedelta

import pytest

from memory_assets.cli import main
from memory_assets.core.audit.facts_accounted import (
    FOLDED_NOT_HELD,
    NOT_INDEXED,
    RETIRED_NOT_HELD,
    facts_accounted_for,
)
from memory_assets.core.dream.rule_consolidator import RuleConsolidator
from memory_assets.core.dream.runner import run_dream
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.tombstones import append_tombstone, tombstone_line
from memory_assets.core.knowledge.watermark import append_ingest_entry
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.restore import restore_stranded
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
D1, D2 = date(2026, 11, 26), date(2026, 11, 27)
FACTS = [
    "Rubaxo wenba nakuni luteru tero keeps a kayak",
    "Taru batorkel tormiro ludrana draphpe plays the oboe",
    "Zargul kelyator rindra niyakel likelro is the cat",
]


def dreamt(settings: Settings, embedder: Embedder) -> Indexer:
    """Two days of facts, folded by a real dream and retired by a real reconcile."""
    write_facts(settings, D1, *FACTS[:2], category="general")
    write_facts(settings, D2, FACTS[2], category="general")
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0")
    assert run_dream(s, RuleConsolidator(), now=NOW).ok
    indexer = Indexer(s, embedder=embedder)
    from memory_assets.core.reconcile import reconcile

    reconcile(s, indexer)
    return indexer


def stranded(settings: Settings, indexer: Indexer) -> dict[str, int]:
    outcome = facts_accounted_for(settings, indexer.store)
    return {k: v for k, v in outcome.metadata.items() if k.startswith("stranded") and v}


def test_a_healthy_home_passes_with_every_state_counted(settings: Settings, embedder: Embedder) -> None:
    indexer = dreamt(settings, embedder)
    write_facts(settings, NOW.date(), "Quiba liphfe peludra phniru is the dog", category="general")
    write_facts(settings, NOW.date(), "Forgotten fact about the secret drawer", hour=11)
    main(["--home", str(settings.home), "--json", "forget", "Forgotten fact about the secret drawer"])
    indexer.sweep()
    outcome = facts_accounted_for(settings, indexer.store)
    assert outcome.passed and outcome.problems == [], outcome.problems
    assert (outcome.metadata["folded"], outcome.metadata["indexed"], outcome.metadata["forgotten"]) == (
        3,
        1,
        1,
    )


def test_a_folded_fact_whose_page_lost_it_is_stranded_named_and_restored(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    indexer = dreamt(settings, embedder)
    page = settings.notebook_dir / "3_Personal" / "General.md"
    page.write_text(page.read_text().replace(f"- {FACTS[1]}\n", ""))  # a person (or a model) removed it
    indexer.sweep()
    outcome = facts_accounted_for(settings, indexer.store)
    assert not outcome.passed and outcome.metadata["stranded"] == 1
    [problem] = outcome.problems
    assert f"archive/{D1}.md line " in problem and FACTS[1][:40] in problem
    assert "folded it into notebook/3_Personal/General.md" in problem and "restore-stranded" in problem
    # The CLI names it too, and exits 1.
    assert main(["--home", str(settings.home), "check"]) == 1
    assert "FAILED  facts_accounted_for" in capsys.readouterr().out
    # A dry run writes nothing; the real one brings the fact back, and a second does nothing.
    assert restore_stranded(indexer, dry_run=True).unfolded == {f"{D1}.md": [outcome.details[0]["line"]]}
    assert stranded(settings, indexer) == {"stranded": 1, f"stranded_{FOLDED_NOT_HELD}": 1}
    restored = restore_stranded(indexer)
    assert restored.stranded == 1 and restored.rows_embedded >= 1
    assert facts_accounted_for(settings, indexer.store).passed
    assert FACTS[1] in [c for _, c, _ in indexer.store.contents()]
    assert restore_stranded(indexer).stranded == 0
    # It is pending again, so the next dream folds it back into a page.
    s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0")
    assert run_dream(s, RuleConsolidator(), now=NOW + timedelta(days=1)).folded == 1
    assert FACTS[1] in page.read_text()


def test_a_line_the_reconcile_retired_that_no_page_holds_is_stranded_and_restored(
    settings: Settings, embedder: Embedder
) -> None:
    """D8 as older versions left it: the reconcile tombstoned a hand-off line no page held."""
    write_facts(settings, NOW.date(), FACTS[0])
    indexer = Indexer(settings, embedder=embedder)
    indexer.sweep()
    settings.tombstones_path.write_text(tombstone_line(FACTS[0], by="reconcile"))
    indexer.sweep()
    outcome = facts_accounted_for(settings, indexer.store)
    assert outcome.metadata[f"stranded_{RETIRED_NOT_HELD}"] == 1
    assert "the reconcile retired it" in outcome.problems[0]
    restored = restore_stranded(indexer)
    assert restored.tombstones_lifted == [FACTS[0].lower()]
    assert settings.tombstones_path.read_text() == ""
    assert facts_accounted_for(settings, indexer.store).passed


def test_a_persons_tombstone_is_never_lifted(settings: Settings, embedder: Embedder) -> None:
    write_facts(settings, NOW.date(), FACTS[0])
    append_tombstone(settings.tombstones_path, FACTS[0])  # the assistant's delete route: a person's
    indexer = Indexer(settings, embedder=embedder)
    indexer.sweep()
    outcome = facts_accounted_for(settings, indexer.store)
    assert outcome.passed and outcome.metadata["forgotten"] == 1
    assert restore_stranded(indexer).tombstones_lifted == []
    assert FACTS[0].lower() in settings.tombstones_path.read_text()


def test_days_an_older_version_passed_with_no_page_holding_them_are_stranded(
    settings: Settings, embedder: Embedder
) -> None:
    """D1 and D2 as older versions left them: a watermark past days whose facts no page holds."""
    write_facts(settings, D1, FACTS[0])
    write_facts(settings, D2, FACTS[1])
    append_ingest_entry(settings.log_md, D2, D2)  # no ledger: the watermark says both are consolidated
    indexer = Indexer(settings, embedder=embedder)
    indexer.sweep()
    outcome = facts_accounted_for(settings, indexer.store)
    assert outcome.metadata[f"stranded_{FOLDED_NOT_HELD}"] == 2
    assert "before the fold ledger existed" in outcome.problems[0]
    restored = restore_stranded(indexer)
    assert restored.unfolded == {f"{D1}.md": [5], f"{D2}.md": [5]}  # each log: H1, block header, fact
    assert facts_accounted_for(settings, indexer.store).passed
    assert sorted(c for _, c, _ in indexer.store.contents()) == sorted(FACTS[:2])


def test_a_fact_whose_row_is_missing_is_stranded_until_reindexed(
    settings: Settings, embedder: Embedder
) -> None:
    write_facts(settings, NOW.date(), *FACTS)
    indexer = Indexer(settings, embedder=embedder)
    indexer.sweep()
    indexer.store.table().delete(f"content = '{FACTS[2]}'")  # behind the indexer's back
    outcome = facts_accounted_for(settings, indexer.store)
    assert (
        outcome.metadata[f"stranded_{NOT_INDEXED}"] == 1 and "`memory-assets reindex`" in outcome.problems[0]
    )
    assert restore_stranded(indexer).rows_embedded == 1
    assert facts_accounted_for(settings, indexer.store).passed


def test_the_cli_restores_and_reports_as_json(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    dreamt(settings, embedder)
    page = settings.notebook_dir / "3_Personal" / "General.md"
    page.write_text("---\ntitle: General\n---\n\n## Key Facts\n\n- Something else entirely\n")
    home = ["--home", str(settings.home), "--json"]
    assert main([*home, "restore-stranded", "--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["dry_run"] and dry["stranded"] == 3 and dry["rows_embedded"] == 0
    assert main([*home, "restore-stranded"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["stranded"] == 3 and sorted(done["reindexed"]) == [f"archive:{D1}.md", f"archive:{D2}.md"]
    assert main([*home, "check"]) == 0, capsys.readouterr().out
