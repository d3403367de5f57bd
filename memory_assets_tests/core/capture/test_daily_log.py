from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_assets.core.capture.daily_log import (
    LogFact,
    append_facts,
    format_block,
    format_fact_line,
    list_logs,
    parse_daily_log,
    read_daily_log,
    sanitise_fact,
)

EXISTING = """# Daily Log - 2026-07-01

## 09:12 — 5c1e0a9f

- [preference] Prefers metric units in all answers `units metric`
- [technical] Deploys the side project on a Hetzner VPS with Docker Compose `hosting docker`

## 17:40 — b27d4410

- [goal] Wants to finish the marathon training plan by October `running goal`
"""


def test_parses_existing_format_with_tags_times_and_chats() -> None:
    parsed = parse_daily_log(EXISTING, "2026-07-01.md")
    assert [f.content for f in parsed.facts] == [
        "Prefers metric units in all answers",
        "Deploys the side project on a Hetzner VPS with Docker Compose",
        "Wants to finish the marathon training plan by October",
    ]
    assert parsed.facts[0].tags == ("units", "metric")
    assert parsed.facts[0].category == "preference"
    assert (parsed.facts[2].time, parsed.facts[2].chat) == ("17:40", "b27d4410")
    assert parsed.facts[2].line == 10
    assert parsed.warnings == [] and parsed.skipped_lines == 0


def test_append_writes_the_existing_block_format(tmp_path: Path) -> None:
    now = datetime(2026, 7, 1, 9, 12, tzinfo=UTC)
    append_facts(
        tmp_path,
        "5c1e0a9f-long-chat-id",
        [LogFact("Prefers metric units in all answers", "preference", ("units", "metric"))],
        now=now,
    )
    append_facts(tmp_path, "b27d4410", [LogFact("No tags here", None)], now=now)  # type: ignore[arg-type]
    text = (tmp_path / "2026-07-01.md").read_text(encoding="utf-8")
    assert text == (
        "# Daily Log - 2026-07-01\n\n## 09:12 — 5c1e0a9f\n\n"
        "- [preference] Prefers metric units in all answers `units metric`\n"
        "\n## 09:12 — b27d4410\n\n- [general] No tags here\n"
    )


def test_append_only_never_rewrites_earlier_bytes(tmp_path: Path) -> None:
    now = datetime(2026, 7, 1, 9, 12, tzinfo=UTC)
    append_facts(tmp_path, "a", [LogFact("first fact", "goal")], now=now)
    before = (tmp_path / "2026-07-01.md").read_bytes()
    append_facts(tmp_path, "b", [LogFact("second fact", "goal")], now=now)
    assert (tmp_path / "2026-07-01.md").read_bytes().startswith(before)


def test_unparseable_lines_are_skipped_with_file_and_line() -> None:
    text = (
        "# Daily Log - 2026-07-01\n\n- [preference] good line\n- [broken line without bracket\nloose prose\n"
    )
    parsed = parse_daily_log(text, "archive/2026-07-01.md")
    assert [f.content for f in parsed.facts] == ["good line"]
    assert parsed.skipped_lines == 2
    assert parsed.warnings[0].startswith("archive/2026-07-01.md line 4:")
    assert "archive/2026-07-01.md line 5:" in parsed.warnings[1]


def test_invalid_utf8_is_read_with_replacement_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "2026-07-01.md"
    raw = b"# Daily Log - 2026-07-01\n\n- [personal] Lives in " + b"M\xfcnchen\n"
    path.write_bytes(raw)
    parsed = read_daily_log(path, "archive/2026-07-01.md")
    assert parsed.facts[0].content == "Lives in M\ufffdnchen"
    assert "archive/2026-07-01.md line 3: invalid UTF-8" in parsed.warnings[0]
    assert path.read_bytes() == raw  # nothing rewritten


def test_list_logs_ignores_other_files(tmp_path: Path) -> None:
    for name in ("2026-07-02.md", "2026-07-01.md", "notes.md", "2026-13-01.md"):
        (tmp_path / name).write_text("x")
    assert [d for d, _ in list_logs(tmp_path)] == [date(2026, 7, 1), date(2026, 7, 2)]
    assert list_logs(tmp_path / "missing") == []


def test_content_ending_in_a_backtick_span_stays_content() -> None:
    line = format_fact_line(LogFact("Runs `make test` before every push `ci`", "technical"))
    fact = parse_daily_log(line).facts[0]
    assert fact.content == "Runs `make test` before every push `ci`" and fact.tags == ()


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text())
def test_parser_never_raises_on_arbitrary_text(text: str, name: str) -> None:
    parsed = parse_daily_log(text, name)
    assert parsed.skipped_lines == len(parsed.warnings)


@settings(max_examples=300, deadline=None)
@given(
    st.text(min_size=1),
    st.one_of(st.none(), st.text()),
    st.lists(st.text(), max_size=4),
)
def test_what_is_written_parses_back_exactly(content: str, category: str | None, tags: list[str]) -> None:
    expected = sanitise_fact(content, category, tags)
    if not expected.content:
        return
    line = format_fact_line(LogFact(content, category or "", tuple(tags)))
    parsed = parse_daily_log("# Daily Log - 2026-07-01\n\n## 09:00 — abc\n\n" + line + "\n")
    assert parsed.warnings == []
    assert len(parsed.facts) == 1
    fact = parsed.facts[0]
    assert (fact.content, fact.category, fact.tags) == (expected.content, expected.category, expected.tags)
    assert format_fact_line(fact) == line  # idempotent


@pytest.mark.parametrize(
    "chat_id",
    ["\n-[x]pwn", "ab\r\n- [general] injected `tag`", "x\u2028- [goal] injected", "\x85- [a] b", "\n\n", ""],
)
def test_a_chat_id_cannot_inject_a_line(tmp_path: Path, chat_id: str) -> None:
    now = datetime(2026, 7, 1, 9, 12, tzinfo=UTC)
    append_facts(tmp_path, chat_id, [LogFact("Legit fact written with an odd chat id", "general")], now=now)
    text = (tmp_path / "2026-07-01.md").read_text(encoding="utf-8")
    header = text.splitlines()[2]
    assert header.startswith("## 09:12 — ") and len(text.splitlines()) == 5
    parsed = parse_daily_log(text, "2026-07-01.md")
    assert parsed.warnings == [] and parsed.skipped_lines == 0
    assert [(f.content, f.category, f.line) for f in parsed.facts] == [
        ("Legit fact written with an odd chat id", "general", 5)
    ]
    assert parsed.facts[0].chat == header.removeprefix("## 09:12 — ") and "\n" not in parsed.facts[0].chat


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_chat_id_gives_a_one_line_header_that_parses(chat_id: str) -> None:
    block = format_block(chat_id, [LogFact("A fact", "goal")], datetime(2026, 7, 1, 9, 12, tzinfo=UTC))
    assert block is not None
    parsed = parse_daily_log(block.header + block.text)
    assert parsed.warnings == []
    assert [(f.content, f.time) for f in parsed.facts] == [("A fact", "09:12")]
    assert parsed.facts[0].chat and len(parsed.facts[0].chat) <= 8
