from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.chunking import chunk_paragraphs, parse_page, split_memory_md
from memory_assets.core.settings import Settings


def test_paragraphs_merge_up_to_the_limit() -> None:
    paras = ["a" * 500, "b" * 500, "c" * 500, "d" * 2000]
    chunks = chunk_paragraphs("\n\n".join(paras))
    assert chunks == ["a" * 500 + "\n\n" + "b" * 500, "c" * 500, "d" * 2000]
    assert chunk_paragraphs("  \n\n ") == []


def test_frontmatter_is_parsed_not_embedded() -> None:
    page = parse_page(
        "---\ntitle: Health\nstatus: draft\nupdated: 2026-08-20\nstale_after: never\n"
        "verified:\n  - {by: 'human:alice', at: 2026-08-01}\ncategory: preference\n---\n"
        "## Key Facts\n- Trains.\n",
        "3_Personal/Health.md",
    )
    assert "title:" not in page.body and page.body.startswith("## Key Facts")
    assert page.lifecycle.status == "draft" and page.lifecycle.human_verified
    assert page.lifecycle.stale_after is None and str(page.updated) == "2026-08-20"
    assert page.category == "preference" and page.warnings == []


def test_broken_frontmatter_is_reported_with_line_and_the_page_kept() -> None:
    page = parse_page("---\ntitle: x\nstatus: [unclosed\n---\nBody survives.\n", "2_Wiki/X.md")
    assert "Body survives." in page.body and "title" not in page.body
    assert page.warnings and page.warnings[0].startswith("2_Wiki/X.md line 3: invalid YAML frontmatter")


def test_memory_md_zones() -> None:
    text = (
        "<!-- memory:generated -->\n## Profile\n- Lives in Lisbon\n<!-- /memory:generated -->\n\n"
        "<!-- verified: human:alice at 2026-08-01T00:00:00Z -->\nMy name is Alice.\n"
    )
    zones = split_memory_md(text)
    assert [(z.name, z.human_verified) for z in zones] == [("generated", False), ("manual", True)]
    assert "Lisbon" in zones[0].text and "Alice" in zones[1].text and "verified" not in zones[1].text
    old = "# Long-term Memory\n\n## Profile\n- x\n\n---\n*Last updated: 2026-08-21 03:14 UTC*\n"
    assert [z.name for z in split_memory_md(old)] == ["generated"]
    assert [z.name for z in split_memory_md("my own notes")] == ["manual"]


def test_a_frontmatter_block_never_closed_is_reported_not_indexed_as_text(
    settings: Settings, indexer: Indexer
) -> None:
    page = settings.notebook_dir / "3_Personal" / "Open.md"
    page.write_text("---\ntitle: Health\nstatus: draft\n\n- Trains for a marathon in October.\n")
    parsed = parse_page(page.read_text(), "notebook/3_Personal/Open.md")
    assert parsed.body == "" and parsed.meta == {}
    assert "line 1" in parsed.warnings[0] and "never closed" in parsed.warnings[0]
    result = indexer.sweep()
    assert result.rows == 0 and any("never closed" in w for w in result.warnings)
    page.write_text("---\ntitle: Health\nstatus: draft\n---\n- Trains for a marathon in October.\n")
    assert indexer.sweep().embedded == 1  # fixed: indexed, without its YAML


def test_a_personal_page_is_one_claim_a_chunk() -> None:
    from memory_assets.core.knowledge.chunking import chunk_claims

    body = (
        "## Key Facts\n- Lives in Berlin. (confirmed 2x, last 2026-11-01)\n"
        "  - previously: Lives in Lisbon (until 2026-10-01)\n- Likes tea.\n\nA note.\n\n## Related\n- [x](/y.md)\n"
    )
    assert chunk_claims(body) == [
        "- Lives in Berlin. (confirmed 2x, last 2026-11-01)\n  - previously: Lives in Lisbon (until 2026-10-01)",
        "- Likes tea.",
        "A note.",
        "- [x](/y.md)",
    ]


def test_personal_page_claims_are_rows_with_their_own_importance(
    settings: Settings, indexer: Indexer
) -> None:
    (settings.notebook_dir / "3_Personal" / "Health.md").write_text(
        "---\nstatus: stable\n---\n## Key Facts\n- Runs daily. (confirmed 12x, last 2026-11-20)\n- Eats fish.\n"
    )
    indexer.sweep()
    rows, _ = indexer.store.existing("notebook", "3_Personal/Health.md")
    by_content = {e.scalars[0]: round(e.scalars[5], 4) for e in rows.values()}
    assert by_content == {"- Runs daily. (confirmed 12x, last 2026-11-20)": 0.7485, "- Eats fish.": 0.5}
