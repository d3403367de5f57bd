"""No person's words reach Dagster's storage, and forget and erase then reach what is left (issue
39, item 5 and the acceptance): one unique text is planted through every path that writes (a turn
through a real ``memory-assets serve``, a ``remember``, a transcript the write path ingests, an
assistant-era row the legacy export appends to a log, the dream's page and its MEMORY.md
promotion, the dedup report), every job of the code location and every sensor then run over that
home on a real instance in a temp DAGSTER_HOME, with the many-homes location's homes sensor and
upkeep batch over it too; no byte of the instance's directory holds the text. ``forget`` then
hides it from everything served while the markdown keeps it; the jobs run again and the instance
still holds nothing; ``erase`` removes it from every file of the home and every retained table
version. The other facts stay findable and ``check`` is green throughout."""

import json
import secrets
import signal
import string
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.memory_md import read_zones
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.users import user_settings
from memory_assets.core.outcome import CheckOutcome
from memory_assets.core.settings import Settings
from memory_assets.defs.instance import instance_yaml
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.text_free import TextFree
from memory_assets_tests.core.erase.test_erase import _legacy_row, holders
from memory_assets_tests.defs.daemon import apply_tick
from memory_assets_tests.defs.homes.test_homes import location
from memory_assets_tests.server.serving import start

USER = "alice"
KEPT = "Miso"  # the cat: a fact that must stay findable through the forget and the erase


def unique_token() -> str:
    """A word no model, seed or fixture holds: a place name the extractor writes as a fact."""
    return "Vexmoor" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(6))


def test_a_quoted_text_becomes_one_keyed_tag_and_the_rest_of_the_message_stays(settings: Settings) -> None:
    free = TextFree(settings.state_dir)
    message = "archive/2026-11-20.md line 4: 'Lives in Lisbon.' is stranded; the dream's pacing: \"It's me\""
    line = free.line(message)
    assert "Lisbon" not in line and "It's me" not in line
    assert line.startswith("archive/2026-11-20.md line 4: #") and "the dream's pacing" in line
    assert free.tag("Lives in Lisbon.") in line and free.tag("lives  in LISBON") == free.tag(
        "Lives in Lisbon."
    )
    # Another home's key gives another tag: a tag cannot be tested against a guess without the key.
    other = TextFree(settings.state_dir.parent / "elsewhere")
    assert other.tag("Lives in Lisbon.") == "#withheld"
    outcome = CheckOutcome(
        "demo",
        False,
        "error",
        "1 row holds 'Lives in Lisbon.'",
        problems=["archive/x.md: 'Lives in Lisbon.' is stranded; fix: reindex"],
        metadata={"rows": 1, "table": "index at /h ('Lives in Lisbon.')"},
        details=[{"id": "r1", "file": "archive/x.md", "line": 4, "content": "Lives in Lisbon"}],
        warnings=["'Lives in Lisbon.' unreadable"],
    )
    result = free.check_result(outcome, "rows")
    shown = repr(result.metadata) + str(result.description)
    assert "Lisbon" not in shown
    assert "| r1 | archive/x.md | 4 | " + free.tag("Lives in Lisbon") + " |" in result.metadata["rows"].value


def _cli(home: Path, *args: str) -> tuple[int, Any]:
    import contextlib
    import io

    from memory_assets.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--home", str(home), "--json", *args])
    text = out.getvalue()
    return code, json.loads(text) if text.strip() else None


def _plant(root: Path, token: str, logs: Path) -> Settings:
    """The token through every path that writes into a user's home, bar those Dagster runs."""
    server = start(root, log_dir=logs)
    try:
        with server.client() as client:
            for said in (
                f"My passport number is {token} and I live in {token}.",
                f"I have a cat named {KEPT}.",
                "I work as a nurse at the city hospital.",
                "My favourite food is grilled sardines.",
                "I play the piano on Sunday mornings.",
            ):
                answer = client.post(f"/v1/users/{USER}/turns", json={"user": said, "assistant": "Noted."})
                assert answer.status_code == 200, answer.text
    finally:
        assert server.stop() in (0, -signal.SIGTERM), server.output()[-3000:]
    output = server.output()
    assert token.lower() not in output.lower(), "the service logged the user's words"
    # Its access log names the route's template and the status, never the path as sent.
    assert "POST /v1/users/{user_id}/turns 200" in output, output[-2000:]
    assert f"/v1/users/{USER}/turns" not in output
    settings = user_settings(root, USER)
    home = settings.home
    for fact in (
        f"Their passport {token} expires in 2030",
        "Allergic to penicillin",
        "Drives a blue bicycle",
    ):
        assert _cli(home, "remember", fact)[0] == 0
    before = (datetime.now(UTC) - timedelta(days=2)).replace(microsecond=0)
    stamp = before.isoformat().replace("+00:00", "Z")
    (settings.transcripts_dir / "s1.jsonl").write_text(
        "".join(
            json.dumps({"ts": stamp, "role": role, "content": content}) + "\n"
            for role, content in (
                ("user", f"I moved to {token} last spring and I love it there."),
                ("assistant", "Lovely."),
                ("user", "I have a sister called Ines who lives in Porto."),
            )
        )
    )
    _legacy_row(settings, f"Old assistant note: lives in {token}", before)
    return settings


JOBS = (
    "write_path",
    "legacy_export",
    "reindex",
    "index_files",
    "dream",
    "reconcile",
    "dream_lint",
    "dedup_measurement",
    "optimize_index",
    "legacy_apply",
)


def _run_every_job(
    settings: Settings, instance: dg.DagsterInstance, token: str, backups: set[str]
) -> set[str]:
    """Every job of the single home's location over the home (the dream batch by batch, as the
    dream sensor requests it, each followed by the reconcile), then every sensor's tick applied as
    the daemon applies it. The names of the jobs run; ``backups`` gains the legacy backups made."""
    from memory_assets.core.capture.daily_log import list_logs
    from memory_assets.core.dream.pacing import INGEST, SKIP, decide
    from memory_assets.core.knowledge.dream_state import load_dream_state
    from memory_assets.definitions import defs
    from memory_assets.defs.partitions import day_range_tags, register_days

    resources = {"memory": MemoryHomeResource(home=str(settings.home)), "embedder": EmbedderResource()}
    ran: set[str] = set()

    def run(name: str, **kwargs: Any) -> dg.ExecuteInProcessResult:
        result = defs.resolve_job_def(name).execute_in_process(
            instance=instance, resources=resources, raise_on_error=False, **kwargs
        )
        assert result.success, name
        ran.add(name)
        return result

    run("write_path")
    run("legacy_export")
    days = [d.isoformat() for d, _ in list_logs(settings.archive_dir)]
    register_days(instance, days)
    run("reindex", tags=day_range_tags(days[0], days[-1]))
    run("index_files")
    run("dedup_measurement")
    while (
        decision := decide(settings, load_dream_state(settings.dream_state_path, settings.log_md), force=True)
    ).kind in (
        INGEST,
        SKIP,
    ):
        register_days(instance, decision.days)
        run("dream", tags=day_range_tags(decision.days[0], decision.days[-1]))
        run("reconcile")
    run("reconcile")
    run("dream_lint")
    run("dedup_measurement")
    run("optimize_index")
    # The legacy move finished: the rows the export recorded in the logs are deleted (backed up).
    applied = run("legacy_apply", run_config={"ops": {"legacy_rows_deleted": {"config": {"confirm": True}}}})
    backups.update(
        str(m.metadata["backup"].value)
        for m in applied.asset_materializations_for_node("legacy_rows_deleted")
        if m.asset_key == dg.AssetKey("legacy_rows_deleted") and m.metadata["backup"].value != "-"
    )
    repository = defs.get_repository_def()
    ticked = []
    for sensor in repository.sensor_defs:
        if isinstance(sensor, dg.RunStatusSensorDefinition):
            continue  # asks for a run's status only: its request names the run's id
        with dg.build_sensor_context(instance=instance, resources={"memory": resources["memory"]}) as context:
            result = sensor(context)
        ticked.append(repr(result))
        if isinstance(result, dg.SensorResult):
            apply_tick(instance, result)
    assert token.lower() not in "\n".join(ticked).lower(), "a sensor's cursor, skip reason or request"
    return ran


def _run_many_homes(root: Path, dagster_home: Path) -> None:
    """The many-homes location over the root: the homes sensor's tick applied, then the upkeep
    batch over the user (every step)."""
    with location(MEMORY_ROOT=str(root)) as loc:
        instance = dg.DagsterInstance.from_config(str(dagster_home))
        repository = loc.defs.get_repository_def()
        [homes] = [s for s in repository.sensor_defs if s.name == "homes_sensor"]
        with dg.build_sensor_context(
            instance=instance, resources={"memory": MemoryHomeResource()}
        ) as context:
            tick = homes(context)
        apply_tick(instance, tick)
        result = loc.defs.resolve_job_def("upkeep_batch").execute_in_process(
            instance=instance,
            run_config={"ops": {"upkeep_users": {"config": {"members": [{"user": USER}]}}}},
            raise_on_error=False,
        )
        assert result.success
        instance.dispose()


def _served(settings: Settings, token: str) -> list[str]:
    """Where a served surface still holds the token: search hits, MEMORY.md's generated zone."""
    found = []
    code, hits = _cli(settings.home, "search", token, "--no-embed")
    found += [h["content"] for h in hits or [] if token.lower() in h["content"].lower()]
    code, hits = _cli(settings.home, "search", f"where do I live {token}")
    found += [h["content"] for h in hits or [] if token.lower() in h["content"].lower()]
    if token.lower() in (read_zones(settings.memory_md_path).generated or "").lower():
        found.append("memory/MEMORY.md generated zone")
    return found


def _kept_findable(settings: Settings) -> None:
    code, hits = _cli(settings.home, "search", "cat named Miso")
    assert code == 0 and any(KEPT in h["content"] for h in hits), hits


@pytest.fixture
def dagster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "dagster_home"
    path.mkdir()
    (path / "dagster.yaml").write_text(instance_yaml())
    monkeypatch.setenv("DAGSTER_HOME", str(path))
    yield path


@pytest.mark.slow
def test_no_planted_text_reaches_dagster_and_forget_then_erase_reach_the_rest(
    tmp_path: Path, dagster_home: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORY_HOME", raising=False)
    token = unique_token()
    root = tmp_path / "root"
    settings = _plant(root, token, tmp_path)
    home = settings.home
    instance = dg.DagsterInstance.from_config(str(dagster_home))
    backups: set[str] = set()
    from memory_assets.definitions import defs

    # An apply before the export is refused, naming the rows it would lose: by their tags.
    refused = defs.resolve_job_def("legacy_apply").execute_in_process(
        instance=instance,
        resources={"memory": MemoryHomeResource(home=str(home)), "embedder": EmbedderResource()},
        run_config={"ops": {"legacy_rows_deleted": {"config": {"confirm": True}}}},
        raise_on_error=False,
    )
    assert not refused.success

    ran = _run_every_job(settings, instance, token, backups)
    assert ran == {j.name for j in defs.get_repository_def().get_all_jobs() if not j.name.startswith("__")}
    assert backups, "the legacy apply backed the table up"
    _run_many_homes(root, dagster_home)

    # Every path put the token in the home: the logs (the service's turn, the remember, the
    # ingested transcript, the exported legacy row), the transcripts, the dream's page, MEMORY.md,
    # the dedup report, the index.
    planted = holders(home, token)
    for where in ("memory/archive/", "transcripts/", "notebook/3_Personal/", "dedup/", "index/"):
        assert any(p.startswith(where) for p in planted), (where, planted)
    assert "memory/MEMORY.md" in planted
    exported = [p for p in planted if p.startswith("memory/archive/")]
    assert any("Old assistant note" in (home / p).read_text() for p in exported)
    # ... and no byte of the instance's directory holds it.
    assert holders(dagster_home, token) == []
    assert _cli(home, "check")[0] == 0

    # forget: nothing served holds it, the markdown keeps it, the jobs run again bring nothing back.
    code, out = _cli(home, "forget", token)
    assert code == 0, out
    assert _served(settings, token) == []
    kept = holders(home, token)
    assert any(p.startswith("memory/archive/") for p in kept)
    assert any(p.startswith("notebook/3_Personal/") for p in kept)
    _run_every_job(settings, instance, token, backups)
    assert _served(settings, token) == []
    assert holders(dagster_home, token) == []
    _kept_findable(settings)
    assert _cli(home, "check")[0] == 0

    # erase: refused while a legacy backup (a copy it cannot rewrite) is kept, changing nothing;
    # then no byte of the home, of the instance or of any retained table version holds it.
    before = holders(home, token)
    assert _cli(home, "erase", token, "--yes")[0] != 0
    assert holders(home, token) == before
    for name in sorted(backups):
        assert _cli(home, "legacy", "forget-backup", name, "--remove-copy")[0] == 0
    code, receipt = _cli(home, "erase", token, "--yes")
    assert code == 0 and receipt["complete"] and receipt["left"] == [], receipt
    assert holders(home, token) == []
    assert holders(dagster_home, token) == []
    for version, contents in MemoryStore.of(settings).retained_contents():
        assert not [c for c in contents if token.lower() in c.lower()], version
    _kept_findable(settings)
    assert _cli(home, "check")[0] == 0
    instance.dispose()
