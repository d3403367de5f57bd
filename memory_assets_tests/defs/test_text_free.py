"""No person's words reach Dagster's storage (issue 39, item 5): the Dagster layer's translation
of the core's messages and check outcomes (``defs/text_free.py``)."""

from memory_assets.core.outcome import CheckOutcome
from memory_assets.core.settings import Settings
from memory_assets.defs.text_free import TextFree


def test_a_quoted_text_becomes_one_keyed_tag_and_the_rest_of_the_message_stays(settings: Settings) -> None:
    free = TextFree(settings.state_dir)
    message = "archive/2026-11-20.md line 4: 'Lives in Lisbon.' is stranded; the dream's pacing: \"It's me\""
    line = free.line(message)
    assert "Lisbon" not in line and "It's me" not in line
    assert line.startswith("archive/2026-11-20.md line 4: #") and "the dream's pacing" in line
    assert free.tag("Lives in Lisbon.") in line and free.tag("lives  in LISBON") == free.tag(
        "Lives in Lisbon."
    )
    # Another home's key gives another tag: a tag cannot be tested against a guess without the key.
    other = TextFree(settings.state_dir.parent / "elsewhere")
    assert other.tag("Lives in Lisbon.") == "#withheld"
    outcome = CheckOutcome(
        "demo",
        False,
        "error",
        "1 row holds 'Lives in Lisbon.'",
        problems=["archive/x.md: 'Lives in Lisbon.' is stranded; fix: reindex"],
        metadata={"rows": 1, "table": "index at /h ('Lives in Lisbon.')"},
        details=[{"id": "r1", "file": "archive/x.md", "line": 4, "content": "Lives in Lisbon"}],
        warnings=["'Lives in Lisbon.' unreadable"],
    )
    result = free.check_result(outcome, "rows")
    shown = repr(result.metadata) + str(result.description)
    assert "Lisbon" not in shown
    assert "| r1 | archive/x.md | 4 | " + free.tag("Lives in Lisbon") + " |" in result.metadata["rows"].value
