"""Shared fixtures: real files in temp dirs, a real LanceDB, the real model loaded once per session."""

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LANCEDB_LOG", "error")
# The tests' lock files stay out of the user's lock directory (one per test session).
os.environ.setdefault("MEMORY_LOCK_DIR", tempfile.mkdtemp(prefix="memory-assets-test-locks-"))

from datetime import UTC, date, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from memory_assets.core.capture.daily_log import LogFact, append_facts  # noqa: E402
from memory_assets.core.index.indexer import Indexer  # noqa: E402
from memory_assets.core.models.embedder import Embedder, shared_embedder  # noqa: E402
from memory_assets.core.ops.status import init_home  # noqa: E402
from memory_assets.core.settings import Settings  # noqa: E402

DAY = date(2026, 11, 20)


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2, loaded once for the whole session."""
    model = shared_embedder()
    model.embed(["warm up"])
    return model


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    home = tmp_path / "home"
    monkeypatch.setenv("MEMORY_HOME", str(home))
    monkeypatch.delenv("MEMORY_PROFILE", raising=False)
    monkeypatch.delenv("MEMORY_INDEX_URI", raising=False)
    monkeypatch.delenv("MEMORY_NOTEBOOK_DIR", raising=False)
    s = Settings.load(home)
    init_home(s)
    return s


@pytest.fixture
def indexer(settings: Settings, embedder: Embedder) -> Indexer:
    return Indexer(settings, embedder=embedder, today=date(2026, 11, 29))


def write_facts(
    settings: Settings,
    day: date,
    *contents: str,
    category: str = "preference",
    hour: int = 9,
    chat: str = "c0ffee00",
) -> None:
    append_facts(
        settings.archive_dir,
        chat,
        [LogFact(c, category) for c in contents],
        now=datetime(day.year, day.month, day.day, hour, 0, tzinfo=UTC),
    )
