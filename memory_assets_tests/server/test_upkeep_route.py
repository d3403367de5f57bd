"""``GET /v1/users/{id}/upkeep`` answers what a user's home needs (issue 41), over a real
``memory-assets serve``: an admin token only; the look that ``memory-assets upkeep --dry-run``
prints for the same user, less the dream's reason; no person's words; nothing done or kept."""

import json
import signal
import subprocess
from datetime import date
from pathlib import Path

import pytest

from memory_assets.core.ops.upkeep.look_state import NAME
from memory_assets.core.ops.users import user_settings
from memory_assets.server.auth import add_token
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.server.serving import CLI, start
from memory_assets_tests.server.test_api import expect_error

DAY = date(2026, 11, 20)
SAID = "I moved to Berlin in 2024 and I have a dog named Rex."
WRITTEN = "Keeps bees on the roof of the flat"


@pytest.mark.slow
def test_an_admin_asks_what_a_home_needs_and_nothing_is_done(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    alice, admin = add_token(path, "alice"), add_token(path, None, admin=True)
    root = tmp_path / "root"
    server = start(root, "--tokens-file", str(path))
    try:
        with server.client(alice) as http:
            turn = http.post("/v1/users/alice/turns", json={"user": SAID, "chat_id": "chat-a"})
            assert turn.status_code == 200, turn.text
            # A day written beside the server (as a Dagster run would): the index is behind on it.
            write_facts(user_settings(root, "alice"), DAY, WRITTEN)
            expect_error(http.get("/v1/users/alice/upkeep"), 403, "forbidden")  # her own: not admin
            expect_error(http.get("/v1/users/bob/upkeep"), 403, "forbidden")

        with server.client(admin) as http:
            answer = http.get("/v1/users/alice/upkeep")
            assert answer.status_code == 200, answer.text
            look = answer.json()
            assert look["needs"] and look["work"]["keys"] == [f"archive:{DAY.isoformat()}.md"]
            assert look["days_grown"] == [DAY.isoformat()]
            assert look["dream"] is not None and "reason" not in look["dream"]
            for word in ("Berlin", "Rex", "bees", "roof"):
                assert word not in answer.text

            # Nothing was done or kept: the same look again, no planner state at the root.
            assert http.get("/v1/users/alice/upkeep").json() == look
            assert not (root / "state" / NAME).exists()

            expect_error(http.get("/v1/users/nobody/upkeep"), 404, "unknown_user")
            expect_error(http.get("/v1/users/a%2Fb/upkeep"), 400, "invalid_user_id")

        # The CLI's dry run over the same home finds the same look (it also shows the reason).
        printed = subprocess.run(
            [CLI, "--json", "upkeep", "--dry-run", "--root", str(root), "--user", "alice"],
            capture_output=True,
            text=True,
            check=True,
        )
        by_cli = json.loads(printed.stdout)["look"]
        assert by_cli["dream"].pop("reason")
        assert by_cli == look
    finally:
        assert server.stop() in (0, -signal.SIGTERM), server.output()[-3000:]
    assert "Traceback" not in server.output()
    assert SAID not in server.output()
