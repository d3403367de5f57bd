"""The agent consolidator against a real ``/v1/chat/completions`` server that scripts its tool calls.

Each test scripts the model: assistant messages with ``tool_calls``, then a final text. The tools
run for real on a real memory home, so confinement is checked on the file system itself: the whole
tree is hashed before and after, and only the pages legitimately written may differ.
"""

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from memory_assets.core.dream.agent import (
    SYSTEM_PROMPT,
    AgentConsolidator,
    AgentConsolidatorError,
    build_first_message,
)
from memory_assets.core.dream.consolidator import Batch, BatchFact
from memory_assets.core.dream.vault_files import glob_regex
from memory_assets.core.dream.vault_tools import VaultTools
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.confirmations import Confirmation
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.models.language_model import AssistantMessage, ChatClient, ToolCall
from memory_assets.core.search.retrieval import flush_recalls
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.core.models.test_language_model import Answer, ChatServer, completion

TODAY = date(2026, 11, 21)
DAY = date(2026, 11, 20)
METRIC = "Prefers metric units in all answers"
MARATHON = "Wants to finish the marathon training plan by October"
TEA = "Drinks green tea daily"  # under 24 characters: never retired
PAGE = "3_Personal/Preferences.md"
PAGE_TEXT = """---
type: personal
title: Preferences
category: preference
status: stable
updated: 2026-11-21
stale_after: 2027-11-21
---
# Preferences

- Prefers metric units in all answers. (confirmed 2x, last 2026-11-20)
"""
TOOL_NAMES = {"read", "write", "edit", "glob", "grep", "memory_search", "retire", "batch_facts"}


# -- the scripted model -----------------------------------------------------------------------------
def call(call_id: str, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
    """One tool call as the model writes it (arguments as JSON text, or a raw string as given)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def tool_calls(*calls: dict[str, Any], delay: float = 0.0) -> Answer:
    """A 200 answer whose assistant message only calls tools."""
    return Answer(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": list(calls)},
                    "finish_reason": "tool_calls",
                }
            ],
        },
        delay=delay,
    )


def tool_results(server: ChatServer) -> dict[str, str]:
    """Every ``role: tool`` answer the agent sent, by tool_call_id (from the last request)."""
    messages = server.bodies[-1]["messages"]
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


@pytest.fixture
def server() -> Iterator[ChatServer]:
    srv = ChatServer()
    yield srv
    srv.close()


def agent(server: ChatServer, settings: Settings, **limits: Any) -> AgentConsolidator:
    bounded = dataclasses.replace(settings, **limits) if limits else settings
    return AgentConsolidator(ChatClient(server.base_url, "test-model", None, backoff=0.01), bounded)


def fact(content: str, category: str = "preference", *tags: str, line: int = 5) -> BatchFact:
    return BatchFact(content, category, tags, DAY, line, f"{DAY.isoformat()}.md")


def batch(
    *facts: BatchFact, confirmations: list[Confirmation] | None = None, revisit: list[str] | None = None
) -> Batch:
    shown = confirmations or []
    return Batch(
        days=[DAY],
        facts=list(facts),
        confirmations=shown,
        confirmations_shown=len(shown),
        revisit=revisit or [],
        today=TODAY,
    )


def tree(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a folder, a file's sha256, or a symlink's target (never followed)."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in dirs + files:
            path = base / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                found[rel] = "dir"
            else:
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


# -- the happy path ---------------------------------------------------------------------------------
def test_the_agent_reads_the_schema_writes_a_page_retires_facts_and_summarises(
    server: ChatServer, settings: Settings
) -> None:
    confirmation = Confirmation(
        "2026-11-20T09:00:00Z", "Likes metric units", METRIC, "archive_log", "2026-11-19.md", 0.98, "c0ffee00"
    )
    work = batch(
        fact(METRIC, "preference", "units", "metric"),
        fact(MARATHON, "goal", "running", line=6),
        fact(TEA, "preference", line=7),
        confirmations=[confirmation],
        revisit=[PAGE],
    )
    server.answer_with(
        tool_calls(
            call("c1", "read", {"path": "schema.md"}), call("c2", "glob", {"pattern": "3_Personal/*.md"})
        ),
        tool_calls(
            call("c3", "write", {"path": PAGE, "content": PAGE_TEXT}),
            call("c4", "retire", {"fact": METRIC}),
            # the listing's own form of a fact is accepted too
            call("c5", "retire", {"fact": f"2. [2026-11-20] [goal] {MARATHON} `running`"}),
        ),
        completion("Confirmed the metric-units preference and folded the marathon goal."),
    )

    result = agent(server, settings).consolidate(settings, work)

    assert result.pages_changed == [PAGE]
    assert result.folded == [METRIC, MARATHON]
    assert result.summary == "Confirmed the metric-units preference and folded the marathon goal."
    assert result.revisited == [PAGE]
    assert result.warnings == []
    assert not result.outcomes  # the agent does not report outcomes (documented)
    assert (settings.notebook_dir / PAGE).read_text() == PAGE_TEXT
    assert not settings.superseded_path.exists()  # the runner writes the hand-off, not the agent

    assert len(server.requests) == 3
    first = server.bodies[0]
    assert first["model"] == "test-model"
    assert {t["function"]["name"] for t in first["tools"]} == TOOL_NAMES
    assert all(
        t["type"] == "function" and t["function"]["parameters"]["type"] == "object" for t in first["tools"]
    )
    system, user = first["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user"
    for text in (METRIC, MARATHON, TEA, "restated 1x", PAGE, "2026-11-21"):
        assert text in user["content"]
    # the tool answers went back with their ids, after the assistant message that asked for them
    second = server.bodies[1]["messages"]
    assert second[2]["role"] == "assistant" and [c["id"] for c in second[2]["tool_calls"]] == ["c1", "c2"]
    results = tool_results(server)
    assert "# Notebook Schema" in results["c1"]
    assert results["c2"] == "no vault file matches '3_Personal/*.md'"
    assert results["c3"].startswith("created 3_Personal/Preferences.md")
    assert results["c4"] == "retired (1 so far)" and results["c5"] == "retired (2 so far)"


def test_the_prompts_state_the_rules_in_the_agents_own_terms() -> None:
    for rule in ("confirm", "sharpen", "supersede", "add", "(confirmed 3x, last", "stale_after", "retire"):
        assert rule in SYSTEM_PROMPT
    assert "preference: +365 days" in SYSTEM_PROMPT and "personal: never" in SYSTEM_PROMPT
    assert "never a confirmation" in SYSTEM_PROMPT
    assert "log.md" in SYSTEM_PROMPT and ".state/" in SYSTEM_PROMPT


def test_a_large_batch_is_bounded_in_the_first_message_and_paged_by_a_tool(
    server: ChatServer, settings: Settings
) -> None:
    facts = [
        fact(f"Fact number {n:04d} about the user's many habits, " + "x" * 300, line=n) for n in range(400)
    ]
    first, shown = build_first_message(batch(*facts))
    assert 0 < shown < 400 and len(first) < 70_000
    assert f"call batch_facts with start={shown + 1}" in first
    server.answer_with(
        tool_calls(call("p1", "batch_facts", {"start": shown + 1}), call("p2", "batch_facts", {"start": 0})),
        completion("done"),
    )
    result = agent(server, settings).consolidate(settings, batch(*facts))
    assert result.summary == "done"
    results = tool_results(server)
    assert results["p1"].startswith(f"{shown + 1}. [2026-11-20] [preference] Fact number {shown:04d}")
    assert results["p2"].startswith("error: start must be between 1 and 400")


# -- confinement ------------------------------------------------------------------------------------
def test_every_path_out_of_the_vault_or_into_runner_state_is_refused_and_nothing_else_changes(
    server: ChatServer, settings: Settings, tmp_path: Path
) -> None:
    vault = settings.notebook_dir
    write_facts(settings, date(2026, 1, 1), "Lives in Lisbon and works as a data engineer")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("top secret\n")
    (vault / ".state" / "dream_state.json").write_text('{"version": 1, "failures": {}}\n')
    (vault / ".state" / "superseded.txt").write_text("")
    (vault / "2_Wiki" / "Entities" / "escape").symlink_to(outside, target_is_directory=True)
    (vault / "2_Wiki" / "leak.md").symlink_to(outside / "secret.md")
    (vault / "2_Wiki" / "alias.md").symlink_to(vault / "index.md")  # inside the vault, still never written
    (vault / "1_Projects" / "state.md").symlink_to(vault / ".state" / "dream_state.json")
    log = settings.archive_dir / "2026-01-01.md"
    refused = {
        "up-read": ("read", {"path": "../memory/archive/2026-01-01.md"}),
        "up-write": ("write", {"path": "../memory/archive/2026-01-01.md", "content": "- [x] forged\n"}),
        "up-edit": ("edit", {"path": "../memory/archive/2026-01-01.md", "old": "Lisbon", "new": "Porto"}),
        "up-nested": ("write", {"path": "3_Personal/../../memory/x.md", "content": "x"}),
        "abs-read": ("read", {"path": str(log)}),
        "abs-write": ("write", {"path": str(vault / "3_Personal" / "Abs.md"), "content": "x"}),
        "home-write": ("write", {"path": "~/x.md", "content": "x"}),
        "link-dir-read": ("read", {"path": "2_Wiki/Entities/escape/secret.md"}),
        "link-dir-write": ("write", {"path": "2_Wiki/Entities/escape/new.md", "content": "x"}),
        "link-file-read": ("read", {"path": "2_Wiki/leak.md"}),
        "link-file-write": ("write", {"path": "2_Wiki/leak.md", "content": "overwritten"}),
        "link-file-edit": ("edit", {"path": "2_Wiki/leak.md", "old": "top", "new": "no"}),
        "link-inside-write": ("write", {"path": "2_Wiki/alias.md", "content": "# replaced index"}),
        "link-to-state-read": ("read", {"path": "1_Projects/state.md"}),
        "state-superseded": ("write", {"path": ".state/superseded.txt", "content": "Lives in Lisbon\n"}),
        "state-dream": ("write", {"path": ".state/dream_state.json", "content": "{}"}),
        "state-dream-edit": ("edit", {"path": ".state/dream_state.json", "old": "1", "new": "2"}),
        "state-read": ("read", {"path": ".state/confirmations.jsonl"}),
        "state-dot": ("write", {"path": "./.state/tombstones.jsonl", "content": "{}"}),
        "log-write": (
            "write",
            {"path": "log.md", "content": "## [2026-11-21] ingest | x  watermark=2099-01-01\n"},
        ),
        "log-edit": ("edit", {"path": "log.md", "old": "# Notebook Log", "new": "watermark=2099-01-01"}),
        "log-case": ("write", {"path": "LOG.md", "content": "watermark=2099-01-01"}),
        "not-markdown": ("write", {"path": "3_Personal/run.sh", "content": "rm -rf /"}),
        "glob-up": ("glob", {"pattern": "../**"}),
        "grep-abs": ("grep", {"pattern": "Lisbon", "path_glob": str(settings.archive_dir) + "/*.md"}),
        "retire-foreign": ("retire", {"fact": "Lives in Lisbon and works as a data engineer"}),
    }
    allowed = {
        "ok-write": ("write", {"path": PAGE, "content": PAGE_TEXT}),
        "ok-read-inside-link": ("read", {"path": "2_Wiki/alias.md"}),
        "ok-schema": ("edit", {"path": "schema.md", "old": "# Notebook Schema", "new": "# Notebook Schema"}),
        "ok-glob": ("glob", {"pattern": "**/*"}),
        "ok-grep": ("grep", {"pattern": "secret|watermark|Lisbon", "path_glob": "**"}),
    }
    server.answer_with(
        tool_calls(*(call(i, name, args) for i, (name, args) in list(refused.items())[:13])),
        tool_calls(*(call(i, name, args) for i, (name, args) in list(refused.items())[13:])),
        tool_calls(*(call(i, name, args) for i, (name, args) in allowed.items())),
        completion("Wrote the preferences page."),
    )
    before = tree(tmp_path)

    result = agent(server, settings).consolidate(settings, batch(fact(METRIC)))

    results = tool_results(server)
    for call_id in refused:
        assert results[call_id].startswith("error: "), (call_id, results[call_id])
    for call_id in allowed:
        assert not results[call_id].startswith("error: "), (call_id, results[call_id])
    assert "outside the vault" in results["link-file-read"] and "symlink" in results["link-inside-write"]
    assert "absolute" in results["abs-read"] and "'..'" in results["up-read"]
    assert ".state/" in results["state-dream"] and "watermark" in results["log-write"]
    assert results["ok-read-inside-link"].startswith("# Notebook Index")
    listing = results["ok-glob"].splitlines()
    assert PAGE in listing and "schema.md" in listing and "2_Wiki/alias.md" in listing
    assert not any("secret" in p or "leak" in p or p.startswith((".state", "log.md")) for p in listing)
    assert results["ok-grep"] == "no line matches 'secret|watermark|Lisbon' in '**'"
    assert result.pages_changed == [PAGE] and result.folded == []
    assert len(result.warnings) == len(refused)

    after = tree(tmp_path)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    page = (vault / PAGE).relative_to(tmp_path).as_posix()
    assert changed == {page}
    assert (outside / "secret.md").read_text() == "top secret\n"


def test_a_symlinked_vault_is_followed_once_and_paths_are_checked_against_its_target(
    settings: Settings, tmp_path: Path
) -> None:
    linked = tmp_path / "vault-link"
    linked.symlink_to(settings.notebook_dir, target_is_directory=True)
    tools = VaultTools(dataclasses.replace(settings, notebook_dir=linked))
    assert tools.write(PAGE, PAGE_TEXT).startswith("created")
    assert (settings.notebook_dir / PAGE).read_text() == PAGE_TEXT
    assert tools.call("read", {"path": "../home/memory/MEMORY.md"}).startswith("error: ")


# -- the bounds -------------------------------------------------------------------------------------
def test_a_model_that_never_stops_calling_tools_ends_at_max_steps_and_rolls_back(
    server: ChatServer, settings: Settings, tmp_path: Path
) -> None:
    (settings.notebook_dir / "index.md").write_text("# Notebook Index\n\n- old\n")
    before = tree(tmp_path)

    def busy(body: dict[str, Any]) -> Answer:
        n = len(body["messages"])
        return tool_calls(
            call(f"w{n}", "write", {"path": "3_Personal/Loop.md", "content": f"- step {n}\n"}),
            call(f"e{n}", "write", {"path": "index.md", "content": f"# Notebook Index\n\n- step {n}\n"}),
        )

    server.answer_with(busy)
    started = time.monotonic()
    with pytest.raises(AgentConsolidatorError, match="after 3 model calls") as info:
        agent(server, settings, dream_agent_max_steps=3).consolidate(settings, batch(fact(METRIC)))
    assert "MEMORY_DREAM_AGENT_MAX_STEPS" in str(info.value)
    assert len(server.requests) == 3
    assert time.monotonic() - started < 10
    assert tree(tmp_path) == before  # the pages it wrote are rolled back (created ones removed)


@pytest.mark.parametrize("delay", [0.4, 30.0], ids=["slow-steps", "one-hung-call"])
def test_a_slow_server_hits_the_runs_time_limit(
    server: ChatServer, settings: Settings, tmp_path: Path, delay: float
) -> None:
    before = tree(tmp_path)
    server.answer_with(
        tool_calls(call("w", "write", {"path": "3_Personal/Slow.md", "content": "- slow\n"}), delay=delay)
    )
    started = time.monotonic()
    with pytest.raises(AgentConsolidatorError, match=r"1 s time limit \(MEMORY_DREAM_TIMEOUT_S\)"):
        agent(server, settings, dream_timeout_s=1.0, dream_agent_max_steps=100).consolidate(
            settings, batch(fact(METRIC))
        )
    assert time.monotonic() - started < 2.5
    assert len(server.requests) <= 3
    assert tree(tmp_path) == before


def test_a_failing_model_call_is_a_clear_failure(server: ChatServer, settings: Settings) -> None:
    server.answer_with(Answer(400, {"error": {"message": "this model does not support tools"}}))
    with pytest.raises(AgentConsolidatorError, match="model call 1 failed") as info:
        agent(server, settings).consolidate(settings, batch(fact(METRIC)))
    assert "tool (function) calling" in str(info.value)


# -- malformed calls --------------------------------------------------------------------------------
def test_malformed_tool_calls_get_tool_errors_and_the_loop_goes_on(
    server: ChatServer, settings: Settings
) -> None:
    server.answer_with(
        tool_calls(
            call("bad-json", "read", '{"path": "schema.md"'),
            call("not-object", "read", '["schema.md"]'),
            call("unknown", "delete_everything", {"path": "."}),
            call("nameless", "", {}),
            call("missing", "read", {}),
            call("wrong-type", "read", {"path": 3}),
            call("extra", "read", {"path": "schema.md", "mode": "rb"}),
            call("bad-regex", "grep", {"pattern": "(unclosed"}),
        ),
        tool_calls(call("fine", "read", {"path": "schema.md"})),
        completion("<think>let me see</think>Nothing to fold."),
    )
    result = agent(server, settings).consolidate(settings, batch(fact(METRIC)))
    assert result.summary == "Nothing to fold."
    assert result.pages_changed == [] and result.folded == []
    assert len(server.requests) == 3
    results = tool_results(server)
    expected = {
        "bad-json": "not valid JSON",
        "not-object": "one JSON object",
        "unknown": "unknown tool 'delete_everything'",
        "nameless": "unknown tool ''",
        "missing": "missing argument 'path'",
        "wrong-type": "'path' must be a string",
        "extra": "unknown argument(s) mode",
        "bad-regex": "not a valid regular expression",
    }
    for call_id, text in expected.items():
        assert results[call_id].startswith("error: ") and text in results[call_id], (
            call_id,
            results[call_id],
        )
    assert "# Notebook Schema" in results["fine"]
    assert len(result.warnings) == len(expected)


def test_chat_tools_reads_tool_calls_in_the_forms_servers_send(server: ChatServer) -> None:
    server.answer_with(
        Answer(
            body={
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "content": "",
                            "tool_calls": [{"function": {"name": "read", "arguments": {"path": "index.md"}}}],
                        },
                        "finish_reason": "tool_calls",
                    }
                ]
            }
        )
    )
    client = ChatClient(server.base_url, "test-model", None)
    reply = client.chat_tools(
        [{"role": "user", "content": "hi"}], [{"type": "function", "function": {"name": "read"}}]
    )
    assert reply == AssistantMessage("", (ToolCall("call_0", "read", '{"path": "index.md"}'),), "tool_calls")
    assert reply.to_message()["tool_calls"][0]["function"] == {
        "name": "read",
        "arguments": '{"path": "index.md"}',
    }
    assert server.bodies[0]["tools"] == [{"type": "function", "function": {"name": "read"}}]
    assert server.bodies[0]["temperature"] == 0.0


# -- the tools one by one ---------------------------------------------------------------------------
def test_edit_replaces_one_exact_passage(settings: Settings) -> None:
    tools = VaultTools(settings)
    tools.write(PAGE, PAGE_TEXT)
    assert tools.call("edit", {"path": PAGE, "old": "confirmed 2x", "new": "confirmed 3x"}).startswith(
        "edited"
    )
    assert "(confirmed 3x, last 2026-11-20)" in (settings.notebook_dir / PAGE).read_text()
    assert "occurs 2 times" in tools.call("edit", {"path": PAGE, "old": "Preferences", "new": "Prefs"})
    assert "does not occur" in tools.call("edit", {"path": PAGE, "old": "Lisbon", "new": "Porto"})
    assert "does not exist" in tools.call("edit", {"path": "3_Personal/None.md", "old": "a", "new": "b"})
    assert "unchanged" in tools.call(
        "write", {"path": PAGE, "content": (settings.notebook_dir / PAGE).read_text()}
    )
    assert tools.written == [PAGE]


def test_reads_are_cut_with_a_note_and_writes_are_bounded(settings: Settings) -> None:
    tools = VaultTools(settings, max_read_chars=100, max_write_bytes=1_000)
    body = "".join(f"- line {n:03d}\n" for n in range(50))
    tools.write("2_Wiki/Concepts/Long.md", body)
    first = tools.read("2_Wiki/Concepts/Long.md")
    assert first.startswith(body[:100]) and "read on with offset=100" in first
    rest = tools.call("read", {"path": "2_Wiki/Concepts/Long.md", "offset": 500})
    assert rest.startswith(body[500:600]) and "characters 500-550 of 550" in rest
    assert "at most 1000" in tools.call("write", {"path": "2_Wiki/Concepts/Big.md", "content": "x" * 1_001})
    assert not (settings.notebook_dir / "2_Wiki" / "Concepts" / "Big.md").exists()
    assert "is a folder" in tools.call("read", {"path": "3_Personal"})


def test_glob_and_grep_list_only_the_vault(settings: Settings) -> None:
    tools = VaultTools(settings)
    tools.write("3_Personal/Goals.md", "- Wants to run a marathon\n")
    tools.write("2_Wiki/Concepts/Running.md", "Marathon training notes\n")
    assert tools.glob("3_Personal/*.md") == "3_Personal/Goals.md"
    assert tools.glob("**/*.md").splitlines() == [
        "2_Wiki/Concepts/Running.md",
        "3_Personal/Goals.md",
        "index.md",
        "schema.md",
    ]
    assert tools.grep("marathon", ignore_case=True).splitlines() == [
        "2_Wiki/Concepts/Running.md:1: Marathon training notes",
        "3_Personal/Goals.md:1: - Wants to run a marathon",
    ]
    assert tools.grep("marathon", "3_Personal/*") == "3_Personal/Goals.md:1: - Wants to run a marathon"
    assert glob_regex("**/*.md").match("a/b/c.md") and glob_regex("**/*.md").match("c.md")
    assert not glob_regex("*.md").match("a/c.md") and glob_regex("[!x]?.md").match("ab.md")


def test_retire_takes_only_the_batchs_facts_once_each(settings: Settings) -> None:
    tools = VaultTools(settings, facts=[METRIC, MARATHON, TEA])
    assert tools.retire(f"- [preference] {METRIC} `units metric`") == "retired (1 so far)"
    assert tools.retire(METRIC.upper()) == "already retired (1 so far)"
    assert "not a log fact of this batch" in tools.call(
        "retire", {"fact": "Prefers imperial units in all answers"}
    )
    assert "shorter than 24 characters" in tools.call("retire", {"fact": TEA})
    assert "one fact per call" in tools.call("retire", {"fact": f"{METRIC}\n{MARATHON}"})
    assert tools.retired == [METRIC]


def test_memory_search_reads_the_index_and_logs_no_recall(
    settings: Settings, indexer: Indexer, embedder: Embedder
) -> None:
    tools = VaultTools(settings, embedder=embedder)
    assert tools.call("memory_search", {"query": "metric units"}).startswith("error: memory search failed")
    (settings.notebook_dir / PAGE).write_text(PAGE_TEXT)
    write_facts(settings, DAY, "Plays the cello on weekends")
    indexer.sweep()
    found = tools.call("memory_search", {"query": "which units does the user prefer", "limit": 3})
    assert found.splitlines()[1].startswith(f"- [notebook {PAGE}]") and "metric units" in found
    flush_recalls()
    assert not settings.recall_log_path.exists()


def test_rollback_restores_what_the_run_wrote_but_never_a_page_changed_since(settings: Settings) -> None:
    vault = settings.notebook_dir
    index_before = (vault / "index.md").read_bytes()
    tools = VaultTools(settings)
    tools.write("index.md", "# Notebook Index\n\n- [[Preferences]]\n")
    tools.write(PAGE, PAGE_TEXT)
    tools.write("3_Personal/Goals.md", "- Wants to run a marathon\n")
    (vault / "3_Personal" / "Goals.md").write_text("- A person's edit\n")  # someone else, meanwhile
    warnings = tools.rollback()
    assert warnings == [
        "3_Personal/Goals.md changed since the agent wrote it; left as it is, not rolled back"
    ]
    assert (vault / "index.md").read_bytes() == index_before
    assert not (vault / PAGE).exists()
    assert (vault / "3_Personal" / "Goals.md").read_text() == "- A person's edit\n"
    assert tools.written == []
