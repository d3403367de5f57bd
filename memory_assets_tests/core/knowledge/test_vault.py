"""The vault's page list: a symlinked file leading outside the vault is never a page."""

import json
import logging
from pathlib import Path

import pytest

from memory_assets.cli import main
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import DAY, write_facts


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_a_symlinked_file_leading_outside_the_vault_is_not_indexed_and_the_link_is_named(
    settings: Settings,
    embedder: Embedder,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    write_facts(settings, DAY, "Keeps bees on the roof of the flat")
    vault = settings.notebook_dir
    secret = settings.home.parent / "secret_outside.md"
    secret.write_text("Zorblatt TOPSECRET outside the vault\n")
    (vault / "2_Wiki" / "Concepts" / "Inside.md").write_text("Quillfeather notes inside the vault\n")
    (vault / "2_Wiki" / "alias.md").symlink_to(vault / "2_Wiki" / "Concepts" / "Inside.md")
    (vault / "2_Wiki" / "leak.md").symlink_to(secret)
    outside: list[str] = []
    assert list_pages(vault, outside=outside) == ["2_Wiki/Concepts/Inside.md", "2_Wiki/alias.md"]
    assert outside == ["2_Wiki/leak.md"]

    home = str(settings.home)
    with caplog.at_level(logging.WARNING, logger="memory_assets"):
        code, _ = run(capsys, "--home", home, "--json", "reindex")
    assert code == 0
    [warning] = [r.getMessage() for r in caplog.records if "leak.md" in r.getMessage()]
    assert warning.startswith(
        f"notebook/2_Wiki/leak.md is a symlink to {secret}, outside the vault: not indexed"
    )
    assert "replace the link with a copy" in warning
    code, out = run(capsys, "--home", home, "--json", "search", "Zorblatt TOPSECRET", "--no-embed")
    assert code == 0 and [h for h in json.loads(out) if "TOPSECRET" in h["content"]] == []
    code, out = run(capsys, "--home", home, "--json", "search", "Quillfeather notes", "--no-embed")
    found = {h["source_file"] for h in json.loads(out)}  # the two copies may collapse into one hit
    assert found and found <= {"2_Wiki/Concepts/Inside.md", "2_Wiki/alias.md"}

    # A page indexed as a file, then swapped for a link leading outside: its rows leave the index.
    page = vault / "2_Wiki" / "Concepts" / "Inside.md"
    page.unlink()
    page.symlink_to(secret)
    code, _ = run(capsys, "--home", home, "--json", "reindex")
    code, out = run(capsys, "--home", home, "--json", "search", "Zorblatt TOPSECRET", "--no-embed")
    assert code == 0 and [h for h in json.loads(out) if "TOPSECRET" in h["content"]] == []
    assert secret.read_text() == "Zorblatt TOPSECRET outside the vault\n"


def test_a_dangling_or_looping_page_link_is_no_page(tmp_path: Path) -> None:
    vault = tmp_path / "notebook"
    (vault / "2_Wiki").mkdir(parents=True)
    (vault / "2_Wiki" / "gone.md").symlink_to(tmp_path / "nowhere.md")
    (vault / "2_Wiki" / "loop.md").symlink_to(vault / "2_Wiki" / "loop.md")
    outside: list[str] = []
    assert list_pages(vault, outside=outside) == [] and sorted(outside) == [
        "2_Wiki/gone.md",
        "2_Wiki/loop.md",
    ]
