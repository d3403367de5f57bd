"""The recall tier through the real service (issue 25): a turn from which no rule extracts a fact
is acknowledged with ``facts: []`` and is still found by search, after the server is killed
and started again; a fact and the turn it was written from come back as one hit (the fact, with
the turn as its ``said``); and a turn the user forgets is found nowhere."""

from pathlib import Path

import pytest

from memory_assets_tests.server.serving import start

NO_FACT = "The smell of pine after the rain on that hike with my grandfather is what stuck with me most."
WITH_FACT = "I'm allergic to peanuts."


@pytest.mark.slow
def test_a_turn_with_no_fact_is_found_by_search_after_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "root"
    server = start(root)
    try:
        with server.client() as http:
            said = http.post("/v1/users/ana/turns", json={"user": NO_FACT, "chat_id": "hike"})
            assert said.status_code == 200, said.text
            assert said.json()["facts"] == []  # no rule extracts a fact: only the turn is kept
            fact = http.post(
                "/v1/users/ana/turns", json={"user": WITH_FACT, "assistant": "Noted.", "chat_id": "food"}
            )
            assert fact.status_code == 200 and len(fact.json()["facts"]) == 1, fact.text
    finally:
        server.kill()  # no shutdown: what was acknowledged must already be durable

    again = start(root)  # waits for the model and the catch-up
    try:
        with again.client() as http:
            hits = http.post(
                "/v1/users/ana/search", json={"query": "what do I remember about hiking with my grandfather?"}
            ).json()["hits"]
            assert hits and hits[0]["source_type"] == "transcript", hits
            assert hits[0]["content"] == NO_FACT and hits[0]["chat"] == "hike"

            # The fact and its turn are one hit: the fact answers, the turn is its provenance, and
            # the turn takes no second place in the top k.
            hits = http.post("/v1/users/ana/search", json={"query": "is she allergic to peanuts?"}).json()[
                "hits"
            ]
            top = hits[0]
            assert top["source_type"] == "archive_log" and "peanuts" in top["content"], hits
            assert top["said"] is not None and top["said"]["content"] == WITH_FACT, top
            assert not [h for h in hits if h["source_type"] == "transcript" and h["content"] == WITH_FACT]

            # Forgetting reaches the turn: nothing holding the text is found any more.
            gone = http.post("/v1/users/ana/forget", json={"text": "grandfather"})
            assert gone.status_code == 200, gone.text
            hits = http.post(
                "/v1/users/ana/search", json={"query": "what do I remember about hiking with my grandfather?"}
            ).json()["hits"]
            assert not [h for h in hits if "grandfather" in h["content"]], hits
    finally:
        again.stop()
