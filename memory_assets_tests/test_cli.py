"""The CLI, run in process against a real home, index and model."""

import json
from pathlib import Path

import pytest

from memory_assets.cli import main
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import DAY, write_facts


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_init_is_idempotent_and_status_reports_the_home(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = str(tmp_path / "h")
    code, out, _ = run(capsys, "--home", home, "--json", "init")
    assert code == 0 and len(json.loads(out)["created"]) > 5
    code, out, _ = run(capsys, "--home", home, "--json", "init")
    assert json.loads(out)["created"] == []
    code, out, _ = run(capsys, "--home", home, "--json", "status")
    status = json.loads(out)
    assert status["daily_logs"] == 0 and status["index_rows"] == 0 and status["watermark"] is None


def test_missing_home_says_run_init(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--home", str(tmp_path / "nope"), "reindex")
    assert code == 2 and "run `memory-assets --home" in err and "init` first" in err
    assert not (tmp_path / "nope").exists()


def test_reindex_and_search_json(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers", "Keeps bees on the roof of the flat")
    home = str(settings.home)
    code, out, _ = run(capsys, "--home", home, "--json", "reindex")
    summary = json.loads(out)
    assert code == 0
    assert {k: summary[k] for k in ("files_checked", "files_updated", "embedded", "deleted", "rows")} == {
        "files_checked": 1,
        "files_updated": 1,
        "embedded": 2,
        "deleted": 0,
        "rows": 2,
    }
    code, out, _ = run(capsys, "--home", home, "--json", "reindex", "--full")
    assert json.loads(out)["embedded"] == 0

    code, out, _ = run(capsys, "--home", home, "--json", "search", "beekeeping", "--limit", "1")
    [hit] = json.loads(out)
    assert set(hit) == {
        "id",
        "content",
        "score",
        "source_type",
        "source_file",
        "source_date",
        "importance",
        "duplicates",
        "truncated",
    }
    assert hit["content"] == "Keeps bees on the roof of the flat" and hit["source_date"] == DAY.isoformat()

    queries = settings.home / "queries.txt"
    queries.write_text("beekeeping\n\nunits of measure\n")
    code, out, _ = run(
        capsys, "--home", home, "--json", "search", "--queries-file", str(queries), "--limit", "1"
    )
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line[0]["content"] for line in lines] == [
        "Keeps bees on the roof of the flat",
        "Prefers metric units in all answers",
    ]


def test_search_context_json(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    write_facts(
        settings,
        DAY,
        "Marco's sister is called Ana",
        "Ana works as a paediatric nurse in Porto",
        "Prefers metric units in all answers",
    )
    write_facts(settings, DAY, "Keeps bees on the roof of the flat", hour=15, chat="beef0000")
    home = str(settings.home)
    run(capsys, "--home", home, "reindex")
    code, out, _ = run(
        capsys, "--home", home, "--json", "search", "Marco's sister", "--limit", "1", "--context", "1"
    )
    [hit] = json.loads(out)
    assert code == 0 and hit["content"] == "Marco's sister is called Ana"
    # The next line of the same block, scored; never a line of another block.
    assert [(c["content"], c["offset"]) for c in hit["context"]] == [
        ("Ana works as a paediatric nurse in Porto", 1)
    ]
    assert set(hit["context"][0]) == {"id", "content", "score", "offset", "truncated"}
    code, out, _ = run(capsys, "--home", home, "search", "Marco's sister", "--limit", "1", "--context", "1")
    assert code == 0 and "after " in out and "paediatric nurse" in out


def test_search_filters_are_checked_and_named_before_any_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = str(tmp_path / "h")
    run(capsys, "--home", home, "init")
    for flags, named in (
        (("--since", "2026-12-06", "--until", "2026-12-01"), "since is after until; give since on or before"),
        (("--limit", "0"), "limit is below 1; ask for 1 hit or more"),
        (("--context", "-1"), "context is below 0"),
        (("--source-type", "email"), "source_types[0] is not a source type; give one of archive_log"),
    ):
        code, out, err = run(capsys, "--home", home, "--json", "search", "bees", *flags)
        assert code == 2 and out == "" and named in err, (flags, err)


def test_dedup_report_json_shape(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers", "Prefers metric units in all answers")
    home = str(settings.home)
    run(capsys, "--home", home, "reindex")
    code, out, _ = run(capsys, "--home", home, "--json", "dedup-report")
    report = json.loads(out)
    assert code == 0 and report["rows"] == 2
    assert report["by_write_path"] == {"archive_log": {"rows": 2, "0.995": 0.5, "0.95": 0.5, "0.92": 0.5}}
    assert report["backlog"]["fact_lines"] == 2 and report["backlog"]["exact_repeats"] == 1
    assert (settings.dedup_dir / "clusters.parquet").exists()
    # --html: the measurement is appended to the history, and the report written where asked.
    target = settings.home.parent / "out" / "dedup.html"
    code, out, _ = run(capsys, "--home", home, "--json", "dedup-report", "--html", str(target))
    assert code == 0 and json.loads(out)["html"] == str(target)
    text = target.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "2 measurement(s)" in text
    import polars as pl

    assert pl.read_parquet(settings.dedup_dir / "history.parquet")["measured_at"].n_unique() == 2
    code, out, _ = run(capsys, "--home", home, "dedup-report", "--html", str(target))
    assert code == 0 and str(target) in out and "3 measurement(s)" in target.read_text(encoding="utf-8")


def test_reads_never_change_an_assistant_era_table(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """search, status, dedup-report and check read the assistant's table as it is (or fail naming
    `migrate`); only `migrate` (or `reindex`) changes it."""
    from memory_assets.core.index.store import MemoryStore
    from memory_assets_tests.core.index.test_store import assistant_table

    assistant_table(
        settings, vectors=embedder.embed(["Prefers metric units in all answers", "Was born in Coimbra"])
    )
    store = MemoryStore(settings.index_uri)
    version = store.version()
    home = str(settings.home)
    code, out, _ = run(capsys, "--home", home, "search", "born", "--json")
    assert code == 0 and json.loads(out)[0]["content"] == "Was born in Coimbra"
    code, out, _ = run(capsys, "--home", home, "status", "--json")
    status = json.loads(out)
    assert (
        code == 0
        and status["index_needs_migration"]
        and status["index_rows_by_source_type"] == {"unmigrated": 2}
    )
    code, _, err = run(capsys, "--home", home, "dedup-report")
    assert code == 2 and "memory-assets migrate" in err
    code, out, _ = run(capsys, "--home", home, "check")
    assert code == 1 and "memory-assets migrate" in out
    assert store.version() == version and store.is_legacy()

    code, out, _ = run(capsys, "--home", home, "--json", "migrate")
    assert code == 0 and json.loads(out)["migrated"] is True and not store.is_legacy()
    code, out, _ = run(capsys, "--home", home, "migrate", "--json")
    assert json.loads(out)["migrated"] is False  # idempotent


def test_optimize_compacts_and_prunes(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import timedelta

    # A first day that is most of the table (the home's history), then four days of one fact each.
    first = [f"Fact number {i} about the orchard" for i in range(12)]
    write_facts(settings, DAY, *first)
    run(capsys, "--home", str(settings.home), "reindex")
    for n in range(1, 5):
        write_facts(settings, DAY + timedelta(days=n), f"Fact number {n} about the garden")
        run(capsys, "--home", str(settings.home), "reindex")
    code, out, _ = run(capsys, "--home", str(settings.home), "optimize", "--json")
    result = json.loads(out)
    # The compaction merges the four fragments added since the history into one and leaves the
    # history's fragment alone (it merges at most half the rows: core/index/compaction.py).
    assert code == 0 and result["optimized"] and result["fragments"] == 2 < result["fragments_before"] == 5
    # Nothing more to merge: the history is never rewritten for a tail smaller than itself.
    code, out, _ = run(capsys, "--home", str(settings.home), "optimize", "--json")
    assert code == 0 and json.loads(out)["fragments"] == 2


def test_no_progress_bars_on_stderr(settings: Settings, embedder: Embedder) -> None:
    """A real CLI process that loads the model and embeds prints no progress bar."""
    import subprocess
    import sys

    write_facts(settings, DAY, "Keeps bees on the roof of the flat")
    for argv in (["reindex"], ["search", "bees"]):
        done = subprocess.run(
            [sys.executable, "-m", "memory_assets.cli", "--home", str(settings.home), *argv],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        assert "%|" not in done.stderr and "it/s" not in done.stderr, done.stderr


AT_FORMAT = "(YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][+HH:MM])"


@pytest.mark.parametrize(
    ("at", "problem"),
    [
        ("yesterday", "'yesterday' is not an ISO date-time"),
        ("2026-02-30", "'2026-02-30' is not an ISO date-time"),
        ("9999-12-31T23:59:59-05:00", "'9999-12-31T23:59:59-05:00' is outside the years 1-9999 in UTC"),
        ("0001-01-01T00:00:00+05:00", "'0001-01-01T00:00:00+05:00' is outside the years 1-9999 in UTC"),
    ],
)
@pytest.mark.parametrize(
    "command", [["remember", "I own a kayak called Pellam"], ["write-turn", "--user", "hi"]]
)
def test_a_bad_at_names_the_expected_format_and_writes_nothing(
    settings: Settings, capsys: pytest.CaptureFixture[str], command: list[str], at: str, problem: str
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--home", str(settings.home), "--json", *command, "--at", at])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert f"error: argument --at: {problem}" in err and AT_FORMAT in err
    assert "Traceback" not in err and "_utc" not in err
    assert not list(settings.archive_dir.glob("*.md"))


def test_at_the_edges_of_the_calendar_files_the_fact_under_its_utc_day(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    for at in ("9999-12-31T23:59:59Z", "0001-01-01", "2026-07-01T01:12+02:00"):
        code, _, err = run(
            capsys, "--home", str(settings.home), "--json", "remember", f"Owns a kayak {at}", "--at", at
        )
        assert code == 0, err
    assert sorted(p.name for p in settings.archive_dir.glob("*.md")) == [
        "0001-01-01.md",
        "2026-06-30.md",
        "9999-12-31.md",
    ]


def test_a_chat_id_with_a_newline_writes_no_fact_line(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory_assets.core.capture.daily_log import list_logs, read_daily_log

    home = str(settings.home)
    code, _, err = run(
        capsys, "--home", home, "--json", "remember", "Legit fact with odd chat id", "--chat-id", "\n-[x]pwn"
    )
    assert code == 0, err
    ((_, log),) = list_logs(settings.archive_dir)
    parsed = read_daily_log(log)
    assert parsed.warnings == [] and [f.content for f in parsed.facts] == ["Legit fact with odd chat id"]
    code, out, _ = run(capsys, "--home", home, "--json", "search", "pwn", "--no-embed")
    assert code == 0 and json.loads(out) == []


def test_dream_exits_1_when_its_run_failed_and_0_when_it_folded(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers", "Likes quiet trains in the morning")
    page = settings.notebook_dir / "3_Personal" / "Preferences.md"
    page.write_text("---\ntitle: Preferences\n\n## Key Facts\n")  # never closed: left alone
    home = str(settings.home)
    code, out, _ = run(capsys, "--home", home, "--json", "dream", "--force")
    [failed] = json.loads(out)["runs"]
    assert failed["ok"] is False and code == 1
    page.unlink()
    code, out, _ = run(capsys, "--home", home, "--json", "dream", "--force")
    [folded] = json.loads(out)["runs"]
    assert folded["ok"] is True and folded["advanced"] is True and code == 0


def test_search_explain_prints_each_hits_lineage(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    home = ["--home", str(settings.home)]
    said = "I moved to Berlin in 2024 and I have a dog named Rex."
    code, _, err = run(capsys, *home, "write-turn", "--user", said, "--chat-id", "chat-a")
    assert code == 0, err
    code, out, _ = run(capsys, *home, "--json", "search", "dog named Rex", "--limit", "1", "--explain")
    [hit] = json.loads(out)
    assert hit["content"] == "Has a dog named Rex." and hit["lineage"]["id"] == hit["id"]
    [line] = hit["lineage"]["log_lines"]
    assert line["text"] == "Has a dog named Rex." and line["fold"] == "pending"
    [turn] = line["turns"]
    assert (turn["transcript"], turn["offset"], turn["said"]) == ("captured/chat-a.jsonl", 0, said)
    code, out, _ = run(capsys, *home, "--json", "search", "dog named Rex", "--limit", "1")
    assert "lineage" not in json.loads(out)[0]  # only when asked for

    code, out, _ = run(capsys, *home, "search", "dog named Rex", "--limit", "1", "--explain")
    lines = out.splitlines()
    assert code == 0 and lines[1].strip() == "Has a dog named Rex."
    assert (
        lines[2]
        .strip()
        .startswith(f"from: memory/archive/{line['file']} line {line['line']} (no dream has read it yet):")
    )
    assert lines[3].strip() == (
        f"said: transcripts/captured/chat-a.jsonl line 1 (chat chat-a, {turn['at']}): {said}"
    )


def test_upkeep_prints_what_a_home_needs_then_does_it_with_the_batchs_outcomes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime, timedelta

    from memory_assets.core.ops.upkeep.outcomes import load_outcome
    from memory_assets.core.ops.users import open_user_home
    from memory_assets_tests.core.ops.upkeep.test_exclusion import held_by_another

    for name in ("MEMORY_HOME", "MEMORY_INDEX_URI", "MEMORY_INDEX_URI_TEMPLATE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_DREAM_MIN_FACTS", "1")  # the dream's gates open on any fact
    monkeypatch.setenv("MEMORY_DREAM_MIN_HOURS", "0")
    root = tmp_path / "root"
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date()
    home = open_user_home(root, "ana", create=True)
    write_facts(home.settings, yesterday, "Ana prefers green tea in the morning", "Ana likes hiking")
    ana = ("--root", str(root), "--user", "ana")
    # The homes sensor looked first and asked a batch for the day: a person's upkeep still finds it.
    from memory_assets.core.index.freshness import RunState
    from memory_assets.core.ops.upkeep.plan import Planner

    planner = Planner(root)
    found = planner.look(
        "ana", home.settings, lambda _: RunState.IN_FLIGHT, run_key="ana:batch", now=planner.now()
    )
    assert found is not None and found[0].work.keys == [f"archive:{yesterday.isoformat()}.md"]
    found[1].save(root, "ana")

    code, out, _ = run(capsys, "upkeep", "--dry-run", *ana)
    assert code == 0, out
    assert f"needs index: the index is behind on archive:{yesterday.isoformat()}.md" in out
    assert "needs dream: ingest" in out and out.rstrip().endswith("# dry run: nothing was done")
    assert not home.store.exists() and load_outcome(root, "ana") is None  # nothing done, nothing kept

    code, out, _ = run(capsys, "upkeep", "--json", *ana)
    done = json.loads(out)
    assert code == 0 and done["ok"] and not done["dry_run"], out
    assert [s["step"] for s in done["steps"]] == ["index", "dream", "reconcile", "dedup", "optimize"]
    assert all(s["ok"] for s in done["steps"])
    recorded = load_outcome(root, "ana")
    assert recorded is not None and recorded.ok and recorded.run == "memory-assets upkeep"
    assert done["outcome"] == recorded.to_dict()
    page = home.settings.notebook_dir / "3_Personal" / "Preferences.md"
    assert "Ana prefers green tea in the morning" in page.read_text(encoding="utf-8")

    code, out, _ = run(capsys, "upkeep", "--dry-run", "--json", *ana)
    work = json.loads(out)["look"]["work"]
    assert code == 0 and work["keys"] == [] and not work["dream"] and not work["ingest"], out

    barrier = tmp_path / "release"
    holder = held_by_another(home.settings, barrier)
    try:
        code, out, _ = run(capsys, "upkeep", *ana)
    finally:
        barrier.touch()
        holder.wait(timeout=30)
    assert code == 1 and "nothing was done: held by upkeep batch run B1" in out, out


def test_upkeep_of_a_home_alone_does_its_catch_up(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    write_facts(settings, DAY, "Keeps bees on the roof of the flat")
    home = str(settings.home)
    code, out, _ = run(capsys, "--home", home, "--json", "upkeep", "--dry-run")
    look = json.loads(out)["look"]
    assert code == 0 and look["needs"] and look["work"]["keys"] == [f"archive:{DAY.isoformat()}.md"]

    code, out, _ = run(capsys, "--home", home, "upkeep")
    assert code == 0 and "index: ok" in out and "outcome recorded" not in out, out  # no root: no record
    code, out, _ = run(capsys, "--home", home, "--json", "upkeep", "--dry-run")
    assert json.loads(out)["look"]["work"]["keys"] == []


def test_upkeep_dry_run_names_only_the_days_that_grew(
    tmp_path: Path, settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """A home alone: a day counts as grown while the index is behind on it. A user's home under a
    root: since the planner's last reading of it, kept at the root, as the homes batch reports."""
    from datetime import timedelta

    from memory_assets.core.index.freshness import RunState
    from memory_assets.core.ops.upkeep.plan import Planner
    from memory_assets.core.ops.users import open_user_home

    later = DAY + timedelta(days=1)
    write_facts(settings, DAY, "Keeps bees on the roof of the flat")
    write_facts(settings, later, "Drinks green tea in the morning")
    alone = ("--home", str(settings.home), "--json", "upkeep")

    def grown(*argv: str) -> list[str]:
        code, out, _ = run(capsys, *argv, "--dry-run")
        assert code == 0, out
        return json.loads(out)["look"]["days_grown"]

    assert grown(*alone) == [DAY.isoformat(), later.isoformat()]  # never indexed
    code, out, _ = run(capsys, *alone)
    assert code == 0 and json.loads(out)["ok"], out
    assert grown(*alone) == []  # indexed: nothing grew since
    write_facts(settings, later, "Walks the dog after lunch")
    assert grown(*alone) == [later.isoformat()]

    root = tmp_path / "root"
    ana = open_user_home(root, "ana", create=True)
    write_facts(ana.settings, DAY, "Ana prefers green tea in the morning")
    write_facts(ana.settings, later, "Ana likes hiking")
    under_root = ("--json", "upkeep", "--root", str(root), "--user", "ana")
    planner = Planner(root)
    found = planner.look(
        "ana", ana.settings, lambda _: RunState.IN_FLIGHT, run_key="ana:batch", now=planner.now()
    )
    assert found is not None and [g.day for g in found[0].days.grown] == [DAY, later]
    found[1].save(root, "ana")  # the planner read both days (and reported them as grown)
    assert grown(*under_root) == []
    write_facts(ana.settings, DAY, "Ana sails on Saturdays")
    assert grown(*under_root) == [DAY.isoformat()]
