"""Many homes and the recall tier: the homes sensor asks each home's transcripts what
``transcript_index_sensor`` asks a single home, and the batch it requests, run as the daemon runs
it, puts a kept turn in that user's index and no other's."""

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_assets.core.capture.transcripts import keep_turn
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.users import open_user_home
from memory_assets_tests.defs.homes.test_homes import location, materialisations, members, run, seed, tick


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> Path:
    for name in ("MEMORY_HOME", "MEMORY_INDEX_URI", "MEMORY_INDEX_URI_TEMPLATE", "MEMORY_PARTITIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_DREAM_MIN_FACTS", "1000000")  # the dream's gates shut: index runs only
    monkeypatch.setenv("MEMORY_UPKEEP_WAIT_S", "0")  # a tick's open batch is requested at its end
    return tmp_path / "root"


def turn_rows(root: Path, user: str) -> list[str]:
    store = open_user_home(root, user).store
    return sorted(c for _, c, source in store.contents() if source == "transcript")


@pytest.mark.slow
def test_the_homes_sensor_batches_a_homes_stale_transcripts_and_a_kept_turn_ends_as_its_row(
    root: Path,
) -> None:
    seed(root, "gina", date(2026, 11, 10), "Gina keeps chickens in the back garden")
    seed(root, "hugo", date(2026, 11, 10), "Hugo sings in a choir on Wednesdays")
    said = open_user_home(root, "gina").settings.transcripts_dir
    keep_turn(
        said, "chat-g", "Our hen Pepper laid her first egg today", "", datetime.now(UTC) - timedelta(hours=1)
    )
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        found = members(first)
        assert "transcript:captured/chat-g.jsonl" in found["gina"]["keys"]
        assert not [k for k in found["hugo"]["keys"] if k.startswith("transcript:")]
        for each in first.run_requests:
            assert run(loc, instance, each).success
        assert turn_rows(root, "gina") == ["Our hen Pepper laid her first egg today"]
        assert turn_rows(root, "hugo") == []

        # Looked at again (the batch ended, and the sweep's slice holds both homes): nothing for the
        # transcripts.
        second = tick(loc, instance, first.cursor)
        assert not [k for m in members(second).values() for k in m["keys"] if k.startswith("transcript:")]
        # An appended turn: exactly that home's transcript again.
        keep_turn(said, "chat-g", "Pepper laid another egg", "", datetime.now(UTC))
        third = tick(loc, instance, second.cursor)
        found = members(third)
        assert found["gina"]["keys"] == ["transcript:captured/chat-g.jsonl"]
        [again] = third.run_requests
        done = run(loc, instance, again)
        [materialization] = materialisations(done, "transcript_index").values()
        assert materialization.metadata["embedded"].value == 1
        assert turn_rows(root, "gina") == [
            "Our hen Pepper laid her first egg today",
            "Pepper laid another egg",
        ]
