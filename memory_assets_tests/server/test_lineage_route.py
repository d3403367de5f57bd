"""``GET /v1/users/{id}/memories/{memory_id}`` answers with the memory's lineage (issue 39, item 4),
over a real ``memory-assets serve``: a turn posted to the service, a dream (run beside the server,
as Dagster runs it) that folds its facts into a vault page, then the page row's lineage names the
log line and the turn it was said in; a turn's row names its turn; an unknown id is still a 404."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.dream.rule_consolidator import RuleConsolidator
from memory_assets.core.dream.runner import run_dream
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.users import user_settings
from memory_assets.core.settings import Settings
from memory_assets_tests.server.serving import start

SAID = "I moved to Berlin in 2024 and I have a dog named Rex."
OTHER = "The weather was lovely this morning, nothing else."


@pytest.mark.slow
def test_a_memory_answers_with_its_lineage_back_to_the_turn(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "root"
    server = start(root)
    try:
        with server.client() as http:
            for user, at in ((SAID, "2026-11-20T09:00:00Z"), (OTHER, "2026-11-20T11:00:00Z")):
                turn = http.post("/v1/users/ana/turns", json={"user": user, "chat_id": "chat-a", "at": at})
                assert turn.status_code == 200, turn.text
            settings = user_settings(root, "ana")
            [rex] = [
                f for f in read_daily_log(settings.archive_dir / "2026-11-20.md").facts if "Rex" in f.content
            ]

            # The log row, before any dream: its line and its turn.
            logs = http.get("/v1/users/ana/memories", params={"source_type": ["archive_log"]}).json()
            [log_row] = [m for m in logs["memories"] if "Rex" in m["content"]]
            one = http.get(f"/v1/users/ana/memories/{log_row['id']}")
            assert one.status_code == 200, one.text
            [line] = one.json()["lineage"]["log_lines"]
            assert (line["file"], line["line"], line["fold"]) == ("2026-11-20.md", rex.line, "pending")
            assert [(t["transcript"], t["offset"], t["said"]) for t in line["turns"]] == [
                ("captured/chat-a.jsonl", 0, SAID)
            ]

            # A dream folds the facts into a page; the index follows (both beside the server).
            s = Settings.load(settings.home, env={}, dream_min_facts="1", dream_min_hours="0")
            dream = run_dream(s, RuleConsolidator(), now=datetime(2026, 11, 23, 12, tzinfo=UTC))
            assert dream.ok and dream.folded == 2, dream
            Indexer(s, embedder=embedder).sweep()

            pages = http.get("/v1/users/ana/memories", params={"source_type": ["notebook"]}).json()
            [page_row] = [m for m in pages["memories"] if "Rex" in m["content"]]
            lineage = http.get(f"/v1/users/ana/memories/{page_row['id']}").json()["lineage"]
            assert lineage["source_type"] == "notebook" and lineage["notes"] == []
            [bullet] = lineage["bullets"]
            page_lines = (s.notebook_dir / bullet["page"]).read_text().splitlines()
            assert (
                page_lines[bullet["line"] - 1] == bullet["text"] and "Has a dog named Rex" in bullet["text"]
            )
            [folded] = bullet["log_lines"]
            assert (folded["file"], folded["line"], folded["fold"], folded["page"]) == (
                "2026-11-20.md",
                rex.line,
                "folded",
                bullet["page"],
            )
            assert [(t["transcript"], t["offset"], t["said"]) for t in folded["turns"]] == [
                ("captured/chat-a.jsonl", 0, SAID)
            ]

            turns = http.get("/v1/users/ana/memories", params={"source_type": ["transcript"]}).json()
            [weather] = [m for m in turns["memories"] if m["content"] == OTHER]
            [turn] = http.get(f"/v1/users/ana/memories/{weather['id']}").json()["lineage"]["turns"]
            assert (
                turn["said"] == OTHER and turn["transcript"] == "captured/chat-a.jsonl" and turn["offset"] > 0
            )

            gone = http.get("/v1/users/ana/memories/no-such-row")
            assert gone.status_code == 404 and gone.json()["error"] == "unknown_memory"
    finally:
        assert server.stop() in (0, -15), server.output()[-3000:]
    assert "Traceback" not in server.output()
