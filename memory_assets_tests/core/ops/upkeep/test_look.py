"""A look at a real home: what it needs (a day and a page the index is behind on, sessions the
write path is behind on, the dream's decision, a failed step due again), the requests it records
in its state (asked again only once their run ended and the backoff passed), nothing found once
the home is current, and its state kept at the root and read back as it was."""

from datetime import date
from pathlib import Path

from memory_assets.core.home import Home
from memory_assets.core.index.freshness import RunState
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.upkeep.look import look_at
from memory_assets.core.ops.upkeep.look_state import LookState
from memory_assets.core.ops.upkeep.outcomes import Outcome
from memory_assets.core.ops.upkeep.plan import Planner
from memory_assets.core.ops.users import open_user_home, user_settings
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.core.write_path.test_ingest import write_transcripts

DAY = date(2026, 11, 20)
NOW = 1_800_000_000.0


def unknown(_run_key: str) -> RunState:
    return RunState.UNKNOWN


def test_a_look_finds_what_a_home_needs_and_nothing_once_it_is_current(
    settings: Settings, embedder: Embedder
) -> None:
    write_facts(settings, DAY, "Dana keeps bees on the roof")
    (settings.notebook_dir / "bees.md").write_text("# Bees\n\n- Dana keeps two hives\n", encoding="utf-8")
    write_transcripts(settings)
    state = LookState()
    look = look_at(Home(settings), state, unknown, run_key="test:1", now=NOW)
    assert look.work.keys == [
        f"archive:{DAY.isoformat()}.md",
        "notebook:bees.md",
        "transcript:sessA.jsonl",
        "transcript:sessB.jsonl",
    ]
    assert [g.day for g in look.days.grown] == [DAY]
    assert look.work.ingest and look.transcripts is not None and look.transcripts.behind == ["sessA", "sessB"]
    assert look.dream is not None and look.work.dream == (look.dream.kind != "idle")
    assert look.legacy_rows is False and look.work.optimize == []  # no table yet: nothing to optimise
    assert look.pending and look.work.retry == []

    # The requests are in flight: a second look asks for none of them again.
    def in_flight(_run_key: str) -> RunState:
        return RunState.IN_FLIGHT

    again = look_at(Home(settings), state, in_flight, run_key="test:2", now=NOW)
    assert again.work.keys == [] and not again.work.ingest
    assert again.days_in_flight and again.files_in_flight == {"notebook", "transcript"} and again.pending

    # Indexed and ingested: a fresh look finds the index and the write path current.
    home = Home(settings, embedder)
    home.indexer.sweep()
    from memory_assets.core.write_path.extractor_choice import make_extractor
    from memory_assets.core.write_path.ingest import ingest_transcripts

    ingest_transcripts(
        settings, make_extractor(settings), store=home.store, embedder=home.write_path_embedder()
    )
    home.indexer.sweep()
    current = look_at(Home(settings), LookState(), unknown, run_key="test:3", now=NOW)
    assert current.work.keys == [] and not current.work.ingest and not current.pending
    assert current.transcripts is not None and current.transcripts.current

    failed = Outcome(ok=False, at=NOW, failed={"dedup": "OSError: disk", "home": "not a step"})
    retry = look_at(Home(settings), LookState(), unknown, run_key="test:4", outcome=failed, now=NOW)
    assert retry.work.retry == ["dedup"]


def test_the_planner_keeps_a_homes_state_at_the_root_and_skips_a_home_not_made(tmp_path: Path) -> None:
    root = tmp_path / "root"
    home = open_user_home(root, "erin", create=True)
    write_facts(home.settings, DAY, "Erin sails on Saturdays")
    planner = Planner(root)
    assert planner.homes(planner.users_signature()) == ["erin"]
    found = planner.look("erin", home.settings, unknown, run_key="erin:batch", now=NOW)
    assert found is not None
    look, state = found
    assert look.work.keys == [f"archive:{DAY.isoformat()}.md"]
    assert LookState.load(root, "erin") == LookState()  # a look keeps nothing by itself
    state.reported.add("vault_pages")
    state.save(root, "erin")
    kept = LookState.load(root, "erin")
    assert kept.clock == state.clock and kept.reported == {"vault_pages"} and kept.table == state.table
    assert kept.days.pending == state.days.pending and kept.days.files == state.days.files

    assert planner.look("nobody", user_settings(root, "nobody"), unknown, run_key="x", now=NOW) is None
