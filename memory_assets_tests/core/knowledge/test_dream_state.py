"""The dream's pacing state: an attempt time in the future cannot wedge the pacing."""

import json
import os
import time
from datetime import UTC, datetime, timedelta

import pytest

from memory_assets.cli import main
from memory_assets.core.knowledge.dream_state import load_dream_state
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import DAY, write_facts


def test_a_future_last_attempt_is_read_as_when_the_state_was_written_and_the_dream_runs(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    write_facts(
        settings,
        DAY,
        *(f"Prefers tea blend number {i} in the morning" for i in range(settings.dream_min_facts)),
    )
    path = settings.dream_state_path
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "failures": {},
                "last_attempt_at": "2999-01-01T00:00:00+00:00",
                "last_lint_attempt_at": "2999-01-01T00:00:00+00:00",
                "unconsolidated": [],
            }
        )
    )
    written = time.time() - 2 * 86400
    os.utime(path, (written, written))
    state = load_dream_state(path, settings.log_md)
    when = datetime.fromtimestamp(written, UTC)
    assert abs(state.last_attempt_at - when) < timedelta(seconds=1)  # type: ignore[operator]
    assert abs(state.last_lint_attempt_at - when) < timedelta(seconds=1)  # type: ignore[operator]
    assert len(state.warnings) == 2
    assert state.warnings[0].startswith(
        f"{path}: last_attempt_at is 2999-01-01T00:00:00+00:00, later than now"
    )
    assert "the dream writes the corrected time back" in state.warnings[0]

    # Not forced: the time gate counts from two days ago, so the dream runs now.
    code, out, _ = main(["--home", str(settings.home), "--json", "dream"]), *capsys.readouterr()
    [run] = json.loads(out)["runs"]
    assert code == 0 and run["kind"] == "ingest" and run["ok"] and run["advanced"]
    assert any("later than now" in w for w in run["warnings"])
    saved = json.loads(path.read_text())
    assert saved["last_attempt_at"] < datetime.now(UTC).isoformat()
    assert load_dream_state(path, settings.log_md).warnings == []
