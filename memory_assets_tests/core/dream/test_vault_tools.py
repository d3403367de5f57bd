"""The agent's vault tools against hostile patterns and files: every call ends, with a tool error.

Calls that could hang on a regression run in a child process with a time limit, so the test
fails instead of hanging."""

import json
import os
import subprocess
import sys
import time

from memory_assets.core.dream.vault_files import MATCH_TIMEOUT_S
from memory_assets.core.dream.vault_tools import VaultTools
from memory_assets.core.settings import Settings


def call_in_child(
    settings: Settings, calls: list[tuple[str, dict[str, object]]], timeout: float = 60
) -> list:
    """``VaultTools(settings).call(...)`` for each call in a child process: [(answer, seconds)]."""
    code = f"""
import json, sys, time
from memory_assets.core.dream.vault_tools import VaultTools
from memory_assets.core.settings import Settings
tools = VaultTools(Settings.load({str(settings.home)!r}))
out = []
for name, args in json.loads(sys.argv[1]):
    start = time.perf_counter()
    out.append((tools.call(name, args), time.perf_counter() - start))
print(json.dumps(out))
"""
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(calls)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_pattern_that_backtracks_without_bound_fails_its_call_within_the_time_bound(
    settings: Settings,
) -> None:
    page = settings.notebook_dir / "2_Wiki" / "Concepts" / "Aaa.md"
    page.write_text("# Aaa\n\n" + "a" * 40 + "!\n", encoding="utf-8")
    [(answer, seconds), (ok, _)] = call_in_child(
        settings, [("grep", {"pattern": "(a|aa)+$"}), ("grep", {"pattern": "a{40}!"})]
    )
    assert answer.startswith("error: matching '(a|aa)+$' took longer than")
    assert "backtracks without bound" in answer and "simpler pattern" in answer
    assert seconds < MATCH_TIMEOUT_S + 10  # the bound plus slack for a loaded machine
    assert ok == "2_Wiki/Concepts/Aaa.md:3: " + "a" * 40 + "!"  # an ordinary pattern still works


def test_glob_and_grep_patterns_keep_pythons_syntax(settings: Settings) -> None:
    (settings.notebook_dir / "3_Personal" / "Preferences.md").write_text("- Likes Jazz.\n- likes tea\n")
    tools = VaultTools(settings)
    started = time.perf_counter()
    assert (
        tools.call("grep", {"pattern": r"(?i)^-\s+likes\b", "path_glob": "3_Personal/*.md"}).count("\n") == 1
    )
    assert (
        tools.call("grep", {"pattern": "jazz", "ignore_case": True})
        == "3_Personal/Preferences.md:1: - Likes Jazz."
    )
    assert tools.call("glob", {"pattern": "3_*/[pq]*.md"}) == "3_Personal/Preferences.md"
    assert tools.call("grep", {"pattern": "("}).startswith("error: '(' is not a valid regular expression")
    assert time.perf_counter() - started < MATCH_TIMEOUT_S


def test_a_fifo_in_the_vault_is_refused_by_every_tool_and_never_hangs_one(settings: Settings) -> None:
    os.mkfifo(settings.notebook_dir / "2_Wiki" / "fifo.md")
    (settings.notebook_dir / "2_Wiki" / "Page.md").write_text("fifo is a word here\n")
    answers = [
        answer
        for answer, _ in call_in_child(
            settings,
            [
                ("write", {"path": "2_Wiki/fifo.md", "content": "x"}),
                ("edit", {"path": "2_Wiki/fifo.md", "old": "a", "new": "b"}),
                ("read", {"path": "2_Wiki/fifo.md"}),
                ("glob", {"pattern": "2_Wiki/*"}),
                ("grep", {"pattern": "fifo"}),
            ],
            timeout=30,
        )
    ]
    refusal = "error: 2_Wiki/fifo.md is a FIFO, not a page; the agent reads and writes regular files only"
    assert [a.startswith(refusal) for a in answers[:3]] == [True, True, True]
    assert answers[3] == "2_Wiki/Page.md" and answers[4] == "2_Wiki/Page.md:1: fifo is a word here"
    assert (settings.notebook_dir / "2_Wiki" / "fifo.md").is_fifo()


def test_a_hard_link_is_never_read_through_and_a_name_with_a_control_character_is_refused(
    settings: Settings,
) -> None:
    outside = settings.home.parent / "outside.md"
    outside.write_text("TOPSECRET outside the vault\n")
    os.link(outside, settings.notebook_dir / "2_Wiki" / "hardlink.md")
    tools = VaultTools(settings)
    refusal = "error: 2_Wiki/hardlink.md is a hard link (the file has 2 names"
    assert tools.call("read", {"path": "2_Wiki/hardlink.md"}).startswith(refusal)
    assert tools.call("write", {"path": "2_Wiki/hardlink.md", "content": "x"}).startswith(refusal)
    assert tools.call("edit", {"path": "2_Wiki/hardlink.md", "old": "TOP", "new": "x"}).startswith(refusal)
    assert tools.call("grep", {"pattern": "TOPSECRET"}).startswith("no line matches")
    assert tools.call("glob", {"pattern": "**/*.md"}) == "index.md\nschema.md"
    assert outside.read_text() == "TOPSECRET outside the vault\n" and tools.written == []

    before = sorted(p for p in settings.notebook_dir.rglob("*"))
    for name in (
        "2_Wiki/a\nb.md",
        "2_Wiki/a\rb.md",
        "2_Wiki/a\tb.md",
        "2_Wiki/\x1b[31mred.md",
        "a\u2028b.md",
    ):
        answer = tools.call("write", {"path": name, "content": "- a claim\n"})
        assert answer.startswith(f"error: the path {name!r} holds a control character"), answer
    assert sorted(p for p in settings.notebook_dir.rglob("*")) == before
    assert tools.call("write", {"path": "2_Wiki/Plain name.md", "content": "ok\n"}).startswith("created")


def test_the_agent_is_never_shown_a_forgotten_line_and_its_writes_keep_it(settings: Settings) -> None:
    """A page line that holds a forgotten text is a placeholder to the agent (read, grep); a write or
    an edit of the page puts the line back where the placeholder is, or at the end when the agent
    left it out: the dream's prompt never serves it, and the markdown keeps its history."""
    from memory_assets.core.dream.vault_tools import FORGOTTEN_LINE, VaultTools
    from memory_assets.core.knowledge.tombstones import append_tombstone

    page = settings.notebook_dir / "3_Personal" / "Personal.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(
        "## Key Facts\n\n- Lives in Lisbon.\n- Their passport number is XK7741239.\n- Has a cat.\n"
    )
    append_tombstone(settings.tombstones_path, "Their passport number is XK7741239.", claims=True)
    tools = VaultTools(settings)
    shown = tools.call("read", {"path": "3_Personal/Personal.md"})
    assert "XK7741239" not in shown and FORGOTTEN_LINE in shown and "Lives in Lisbon." in shown
    assert "no line matches" in tools.call("grep", {"pattern": "XK7741239"})
    edited = tools.call(
        "edit", {"path": "3_Personal/Personal.md", "old": "- Has a cat.", "new": "- Has two cats."}
    )
    assert edited.startswith("edited"), edited
    assert page.read_text() == (
        "## Key Facts\n\n- Lives in Lisbon.\n- Their passport number is XK7741239.\n- Has two cats.\n"
    )
    assert tools.call(
        "write", {"path": "3_Personal/Personal.md", "content": shown.replace("Lisbon", "Porto")}
    )
    assert "- Lives in Porto.\n- Their passport number is XK7741239.\n" in page.read_text()
    tools.call("write", {"path": "3_Personal/Personal.md", "content": "## Key Facts\n\n- Lives in Porto.\n"})
    assert page.read_text() == "## Key Facts\n\n- Lives in Porto.\n- Their passport number is XK7741239.\n"
