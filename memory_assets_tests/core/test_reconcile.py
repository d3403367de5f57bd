"""The reconcile with real processes: a SIGKILL at every step boundary replays rather than loses
(the index ends equal to a rebuild from the markdown, every superseded line retired exactly once),
an appender running throughout loses nothing, forget is immediate and survives a full reindex,
and bad input is reported without losing anything."""

import json
import os
import subprocess
import sys
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.index.target import Target
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.reconcile import ReconcileError, forget, reconcile, unforget
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings
from memory_assets.core.text import normalise
from memory_assets_tests.conftest import write_facts

REPO = Path(__file__).resolve().parents[2]
DAYS = [date(2026, 11, 20) + timedelta(days=n) for n in range(4)]
FOLDED = [f"Folded fact number {n}, now held by a vault page" for n in range(6)]


def hold_in_page(settings: Settings, *texts: str) -> None:
    """A vault page holding ``texts``, as the dream writes them before it hands them off (the
    reconcile retires only facts a page holds)."""
    page = settings.notebook_dir / "3_Personal" / "Preferences.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("---\ntitle: Preferences\n---\n\n## Key Facts\n\n" + "".join(f"- {t}\n" for t in texts))


def build(settings: Settings, embedder: Embedder) -> None:
    """Four days of logs (each folded fact on two of them), indexed; a page holding the folded
    facts; a hand-off naming them, plus one line too short and one no log holds."""
    hold_in_page(settings, *FOLDED, "A fact that no daily log has ever held")
    for i, day in enumerate(DAYS):
        texts = [FOLDED[(i + k) % len(FOLDED)] for k in range(3)] + [
            f"Unfolded fact of {day}, which stays indexed"
        ]
        write_facts(settings, day, *texts)
    Indexer(settings, embedder=embedder).sweep()
    lines = [f"- [preference] {t} `tag`" for t in FOLDED] + [
        "too short",
        "A fact that no daily log has ever held",
    ]
    settings.superseded_path.write_text("".join(f"{line}\n" for line in lines))


def rows(uri: str) -> list[tuple[str, str]]:
    return sorted((i, c) for i, c, _ in MemoryStore(uri).contents())


def rebuilt(settings: Settings, embedder: Embedder, tmp: Path) -> list[tuple[str, str]]:
    fresh = Settings.load(settings.home, env={}, index_uri=str(tmp / "fresh-index"))
    Indexer(fresh, embedder=embedder).sweep()
    return rows(fresh.index_uri)


def reconcile_process(home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_assets.cli", "--home", str(home), "--json", "reconcile"],
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_reconcile_retires_the_hand_off_and_reports_what_it_refused(
    settings: Settings, embedder: Embedder
) -> None:
    build(settings, embedder)
    result = reconcile(settings, Indexer(settings, embedder=embedder))
    assert result.retired == 6 and result.refused == ["too short"]
    assert result.unmatched == ["A fact that no daily log has ever held"]
    assert sorted(result.days_reindexed) == [d.isoformat() for d in DAYS]
    assert settings.superseded_path.read_text() == ""
    logs = [c for _, c, kind in MemoryStore(settings.index_uri).contents() if kind == "archive_log"]
    assert sorted(logs) == sorted(f"Unfolded fact of {d}, which stays indexed" for d in DAYS)
    again = reconcile(settings, Indexer(settings, embedder=embedder))
    assert again.handoff_lines == 0 and again.retired == 0


def test_a_hand_off_line_no_page_holds_is_never_retired(settings: Settings, embedder: Embedder) -> None:
    """D8: a bad model's or a hand-edited hand-off naming a live fact no page holds tombstones
    nothing; the fact stays searchable, and so does a later restatement of it."""
    live = "Taru batorkel tormiro ludrana draphpe is the name of the boat"
    write_facts(settings, DAYS[0], live)
    indexer = Indexer(settings, embedder=embedder)
    indexer.sweep()
    settings.superseded_path.write_text(f"{live}\n")
    result = reconcile(settings, indexer)
    assert result.retired == 0 and result.not_held == [live]
    assert any("no vault page holds" in w for w in result.warnings)
    assert not settings.tombstones_path.exists() or live.lower() not in settings.tombstones_path.read_text()
    assert settings.superseded_path.read_text() == ""  # reported and dropped, never retried blindly
    hits = search(indexer.store, live, embedder=embedder, settings=settings, log_recall=False)
    assert hits and hits[0].content == live


CRASH_POINTS = [
    "index.locked=kill",  # a day's reindex: the lock held and the plan made
    "index.embedded=kill",  # ... vectors computed (none needed here), nothing written
    "index.deleted=kill",  # ... the delete committed, the add not yet
    "index.deleted=kill@2",  # ... on the second day
    "retire.tombstoned=kill",  # tombstones written, no day reindexed
    "retire.reindexed_one=kill@1",  # one day reindexed
    "retire.reindexed_one=kill@3",  # three days reindexed
    "reconcile.retired=kill",  # all retired, the hand-off not yet truncated
    "reconcile.truncating=kill",  # during the truncate, under its lock
    "reconcile.swept=kill",  # the sweep done, optimize not yet
    "index.planned=kill",  # the sweep's plan made, nothing applied
]


@pytest.mark.slow
@pytest.mark.parametrize("point", CRASH_POINTS)
def test_a_sigkill_at_any_step_replays_rather_than_loses(
    settings: Settings, embedder: Embedder, tmp_path: Path, point: str
) -> None:
    build(settings, embedder)
    if point == "index.planned=kill":  # make the sweep have work: a page changed behind its back
        (settings.notebook_dir / "3_Personal" / "Notes.md").write_text("- Keeps a journal every evening.\n")
    killed = reconcile_process(settings.home, MEMORY_FAILPOINTS=point)
    assert killed.returncode == -9, (killed.returncode, killed.stderr[-2000:])
    done = reconcile_process(settings.home)
    assert done.returncode == 0, done.stderr[-2000:]
    assert rows(settings.index_uri) == rebuilt(settings, embedder, tmp_path)  # same ids, same contents
    tombstones = [json.loads(line)["content"] for line in settings.tombstones_path.read_text().splitlines()]
    assert Counter(tombstones) == Counter(normalise(t) for t in FOLDED)  # each retired exactly once
    assert settings.superseded_path.read_text() == ""


@pytest.mark.slow
def test_an_appender_running_throughout_loses_no_line_and_no_row(
    settings: Settings, embedder: Embedder
) -> None:
    build(settings, embedder)
    today = datetime.now(UTC).date()
    code = (
        "import sys, time\nfrom datetime import datetime, UTC\n"
        "from memory_assets.core.capture.daily_log import LogFact, append_facts\n"
        "for n in range(1000):\n"
        "    append_facts(__import__('pathlib').Path(sys.argv[1]), 'appender', [LogFact(f'Live fact {n} written during a reconcile')])\n"
        "    time.sleep(0.002)\n"
    )
    appender = subprocess.Popen(
        [sys.executable, "-c", code, str(settings.archive_dir)], env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    runs = 0
    while appender.poll() is None:
        more = [f"- [context] Live fact {runs * 7} written during a reconcile"]  # folded while it is written
        with open(settings.superseded_path, "a") as fh:
            fh.write("".join(f"{m}\n" for m in more))
        assert reconcile_process(settings.home).returncode == 0
        runs += 1
    assert appender.wait() == 0 and runs >= 1
    Indexer(settings, embedder=embedder).sweep()
    log = read_daily_log(settings.archive_dir / f"{today.isoformat()}.md")
    assert len([f for f in log.facts if f.content.startswith("Live fact")]) == 1000  # no line lost
    tombs = {json.loads(x)["content"] for x in settings.tombstones_path.read_text().splitlines()}
    expected = {f.content for f in log.facts if normalise(f.content) not in tombs}
    indexed = {c for _, c in rows(settings.index_uri) if c.startswith("Live fact")}
    assert indexed == {c for c in expected if c.startswith("Live fact")}  # no row lost


def test_forget_is_immediate_survives_a_full_reindex_and_unforget_restores(
    settings: Settings, embedder: Embedder
) -> None:
    write_facts(
        settings, DAYS[0], "Keeps bees on the roof of the flat", "Prefers metric units in all answers"
    )
    (settings.notebook_dir / "3_Personal" / "Home.md").write_text("- Keeps bees on the roof of the flat\n")
    indexer = Indexer(settings, embedder=embedder)
    indexer.sweep()
    done = forget(settings, indexer, Target(text="keeps bees on the roof of the flat"))
    assert done["tombstoned"] and sorted(done["files"]) == [
        "archive:2026-11-20.md",
        "notebook:3_Personal/Home.md",
    ]
    assert not any(
        "bees" in h.content for h in search(indexer.store, "bees", embedder=embedder, settings=settings)
    )
    Indexer(settings, embedder=embedder).sweep(full=True)
    assert not any("bees" in c for _, c in rows(settings.index_uri))  # the full reindex honours it
    back = unforget(settings, indexer, "Keeps bees on the roof of the flat")
    assert back["tombstones_removed"] == 1 and not back["still_forgotten"]
    assert any(
        "bees" in h.content for h in search(indexer.store, "bees", embedder=embedder, settings=settings)
    )
    row_id = next(i for i, c in rows(settings.index_uri) if c.startswith("Prefers metric"))
    assert forget(settings, indexer, Target(row_id=row_id))["tombstoned"]
    assert not any(c.startswith("Prefers metric") for _, c in rows(settings.index_uri))


def test_bad_input_is_reported_and_nothing_is_lost(settings: Settings, embedder: Embedder) -> None:
    build(settings, embedder)
    with open(settings.tombstones_path, "a") as fh:
        fh.write('{"content": "unfolded fact of 2026-11-20, which stays indexed"}\n["corrupt"]\n')
    result = reconcile(settings, Indexer(settings, embedder=embedder))
    assert any("line 2" in w and "not a tombstone" in w for w in result.warnings)
    contents = [c for _, c in rows(settings.index_uri)]
    assert "Unfolded fact of 2026-11-20, which stays indexed" not in contents  # the good tombstone holds
    assert not any(c.startswith("Folded fact") for c in contents)
    settings.superseded_path.unlink()
    settings.superseded_path.mkdir()  # an unreadable hand-off
    with pytest.raises(ReconcileError, match="unreadable .* left in place"):
        reconcile(settings, Indexer(settings, embedder=embedder))
    assert settings.superseded_path.is_dir()


def test_the_reconcile_job_runs_after_a_successful_dream_and_on_a_schedule() -> None:
    from memory_assets.definitions import defs

    schedules = {s.name: s for s in defs.schedules or []}
    sensors = {s.name: s for s in defs.sensors or []}
    assert schedules["reconcile_schedule"].job_name == "reconcile"
    assert sensors["reconcile_after_dream"].default_status.value == "RUNNING"
    job = defs.resolve_job_def("reconcile")
    assert {k.to_user_string() for k in job.asset_layer.selected_asset_keys} >= {
        "superseded_retired",
        "index_swept",
        "archival_memories",
    }


def test_forget_of_a_part_of_a_fact_hides_every_row_that_holds_it_and_unforget_brings_them_back(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """Forget hides a text from everything served, inside longer text too (issue 39): a few words
    of a fact hide the fact's row and the claim's row; text inside words only is refused."""
    from memory_assets.cli import main

    day = date(2026, 11, 20)
    write_facts(
        settings, day, "Gulsanph romorxo morte velistra in the old harbour town", "Plain other fact kept here"
    )
    (settings.notebook_dir / "3_Personal" / "Preferences.md").write_text(
        "---\ntitle: Preferences\n---\n\n## Key Facts\n\n- Likes Gulsanph romorxo morte tea. (confirmed 2x, last 2026-11-20)\n"
    )
    Indexer(settings, embedder=embedder).sweep()
    home = ["--home", str(settings.home), "--json"]

    def found(query: str) -> list[str]:
        assert main([*home, "search", query, "--no-embed"]) == 0
        return [h["content"] for h in json.loads(capsys.readouterr()[0])]

    # Text only inside words would hide nothing: refused, no tombstone.
    code = main([*home, "forget", "romorx"])
    _, err = capsys.readouterr()
    assert code == 2 and "nothing forgotten: the text appears only inside words" in err
    assert "archive/2026-11-20.md" in err
    assert not settings.tombstones_path.exists()

    assert main([*home, "forget", "Gulsanph romorxo morte"]) == 0
    out = json.loads(capsys.readouterr()[0])
    assert out["tombstoned"] is True and out["rows_deleted"] == 2
    assert not any("gulsanph" in c.lower() for c in found("Gulsanph romorxo morte"))
    assert "Plain other fact kept here" in found("Plain other fact kept here")

    assert main([*home, "unforget", "Gulsanph romorxo morte"]) == 0
    assert json.loads(capsys.readouterr()[0])["tombstones_removed"] == 1
    back = found("Gulsanph romorxo morte")
    assert "Gulsanph romorxo morte velistra in the old harbour town" in back
    assert any("Likes Gulsanph romorxo morte tea" in c for c in back)
