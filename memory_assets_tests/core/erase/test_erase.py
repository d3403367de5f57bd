"""Erase on a real home: every path that writes plants a text, erase removes every byte of it."""

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_assets.core.index.store import MemoryStore
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings

SECRET = "XK7741239"


def _run(home: Path, *args: str, capsys: Any) -> tuple[int, Any]:
    from memory_assets.cli import main

    code = main(["--home", str(home), "--json", *args])
    out = capsys.readouterr()[0]
    return code, (json.loads(out) if out.strip() else None)


def holders(root: Path, needle: str) -> list[str]:
    """Every file under ``root`` whose bytes hold ``needle`` (case aside)."""
    low = needle.lower().encode()
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and low in p.read_bytes().lower()
    )


Runner = Callable[..., tuple[int, Any]]


def _legacy_row(settings: Settings, text: str, when: datetime) -> None:
    """A row as the assistant wrote it before this project (no source file): what ``legacy export``
    then appends to a daily log. The test plays that old writer, adding to the table directly."""
    from memory_assets.core.models.embedder import shared_embedder

    table = MemoryStore.of(settings).table()
    vector = shared_embedder().embed([text])[0]
    table.add(
        [
            {
                "id": "legacy-planted",
                "content": text,
                "vector": [float(x) for x in vector],
                "user_id": settings.user_id,
                "metadata": json.dumps({"category": "personal"}),
                "importance": 0.5,
                "created_at": when.replace(tzinfo=None),
                "updated_at": when.replace(tzinfo=None),
            }
        ]
    )


def planted_home(
    settings: Settings, capsys: pytest.CaptureFixture[str] | None = None, cli: Runner | None = None
) -> Path:
    """A home where every path that writes put ``SECRET``: a turn, a remember, an ingested
    transcript, an assistant-era row exported to a log, the dream's page and MEMORY.md's promotion,
    the dedup report. ``cli`` runs a
    command (default: in process, read through ``capsys``)."""
    home = settings.home

    def run(home: Path, *args: str, capsys: object = None) -> tuple[int, Any]:
        return cli(*args) if cli is not None else _run(home, *args, capsys=capsys)

    before = (datetime.now(UTC) - timedelta(days=2)).replace(microsecond=0)
    at = before.isoformat().replace("+00:00", "")
    assert (
        run(
            home,
            "write-turn",
            "--user",
            f"My passport number is {SECRET} and I live in Lisbon.",
            "--chat-id",
            "c1",
            "--at",
            at,
            capsys=capsys,
        )[0]
        == 0
    )
    assert (
        run(
            home,
            "write-turn",
            "--user",
            "I have a cat named Miso.",
            "--chat-id",
            "c1",
            "--at",
            at,
            capsys=capsys,
        )[0]
        == 0
    )
    assert run(home, "remember", f"Their passport {SECRET} expires in 2030", capsys=capsys)[0] == 0
    session = settings.transcripts_dir / "s1.jsonl"
    session.write_text(
        json.dumps(
            {
                "ts": before.isoformat().replace("+00:00", "Z"),
                "role": "user",
                "content": f"Please remember the number {SECRET} for the embassy form.",
            }
        )
        + "\n"
        + json.dumps(
            {
                "ts": before.isoformat().replace("+00:00", "Z"),
                "role": "assistant",
                "content": f"Noted: {SECRET}.",
            }
        )
        + "\n"
    )
    assert run(home, "ingest-transcripts", capsys=capsys)[0] == 0
    _legacy_row(settings, f"Old assistant note: passport {SECRET} renewed", before)
    assert run(home, "legacy", "export", capsys=capsys)[0] == 0
    assert run(home, "dream", "--force", "--all", capsys=capsys)[0] == 0
    assert run(home, "dedup-report", "--html", str(settings.dedup_dir / "report.html"), capsys=capsys)[0] == 0
    assert run(home, "search", SECRET, "--no-embed", capsys=capsys)[1]
    return home


def test_erase_removes_every_byte_of_a_text_and_keeps_everything_else(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    home = planted_home(settings, capsys)
    planted = holders(home, SECRET)
    assert any(p.startswith("memory/archive/") for p in planted)
    assert any(p.startswith("transcripts/") for p in planted)
    assert any(p.startswith("index/") for p in planted)

    # The dry run changes nothing.
    snapshot = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    code, plan = _run(home, "erase", SECRET, capsys=capsys)
    assert code == 0 and plan["dry_run"] and plan["would_remove"]["log_lines"] >= 2
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == snapshot

    code, receipt = _run(home, "erase", SECRET, "--yes", capsys=capsys)
    assert code == 0, receipt
    assert receipt["complete"] and receipt["left"] == [], receipt
    assert holders(home, SECRET) == []
    store = MemoryStore.of(settings)
    for _version, contents in store.retained_contents():
        assert not any(SECRET.lower() in c.lower() for c in contents)
    kept = json.loads((settings.state_dir / "erasures.jsonl").read_text().splitlines()[-1])
    assert kept["id"] == receipt["id"] and SECRET.lower() not in json.dumps(kept).lower()

    # Everything else stays: the cat, Lisbon; check is green.
    code, hits = _run(home, "search", "cat named Miso", capsys=capsys)
    assert any("Miso" in h["content"] for h in hits)
    assert _run(home, "check", capsys=capsys)[0] == 0
    # A copy of the text that comes back later is hidden (the keyed-hash tombstone).
    assert _run(home, "remember", f"The number {SECRET} is on the embassy form", capsys=capsys)[0] == 0
    assert not [
        h for h in _run(home, "search", SECRET, "--no-embed", capsys=capsys)[1] if SECRET in h["content"]
    ]
