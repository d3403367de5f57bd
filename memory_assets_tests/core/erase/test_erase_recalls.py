"""A search's recall signal is written off the caller's path: neither a command nor an erase may
leave one of them in flight behind it."""

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from memory_assets.core.models.embedder import Embedder
from memory_assets.core.search import retrieval
from memory_assets.core.settings import Settings

SECRET = "QZ5518207"


def _run(home: Path, *args: str, capsys: Any) -> tuple[int, Any]:
    from memory_assets.cli import main

    code = main(["--home", str(home), "--json", *args])
    out = capsys.readouterr()[0]
    return code, (json.loads(out) if out.strip() else None)


def _hold_the_recall_writer() -> threading.Event:
    """The recall log's one writer thread kept busy until the event is set: every recall logged
    meanwhile waits behind it, as it would behind a slow disk."""
    release = threading.Event()
    retrieval._POOL.submit(release.wait, 30)
    return release


def _release_later(release: threading.Event, seconds: float = 1.0) -> None:
    threading.Timer(seconds, release.set).start()


def test_a_search_command_returns_with_its_recalls_written(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    home = settings.home
    assert _run(home, "remember", f"The locker code is {SECRET}", capsys=capsys)[0] == 0
    release = _hold_the_recall_writer()
    _release_later(release)
    code, hits = _run(home, "search", SECRET, "--no-embed", capsys=capsys)
    assert code == 0 and any(SECRET in h["content"] for h in hits)
    assert SECRET in settings.recall_log_path.read_text(encoding="utf-8")


def test_erase_waits_for_a_recall_logged_before_it(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory_assets.core.home import Home
    from memory_assets.core.ops.forget import Target, erase
    from memory_assets.core.search.filters import SearchFilters

    home_dir = settings.home
    assert _run(home_dir, "remember", f"The locker code is {SECRET}", capsys=capsys)[0] == 0
    assert _run(home_dir, "remember", "The gym opens at seven", capsys=capsys)[0] == 0
    home = Home(settings, embedder).ready()
    release = _hold_the_recall_writer()
    hits = home.search(SECRET, SearchFilters(limit=5))  # its recall waits behind the held writer
    assert any(SECRET in h.content for h in hits)
    _release_later(release)
    receipt = erase(home, Target(text=SECRET), confirm=True, force=True)
    retrieval.flush_recalls()
    assert receipt["complete"], receipt
    log = settings.recall_log_path
    assert not log.exists() or SECRET not in log.read_text(encoding="utf-8")
