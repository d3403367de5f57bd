"""The bounded frontmatter reader: a YAML alias bomb in a page is broken frontmatter, never a DoS.

The page readers and the CLI run in child processes with a memory cap and a time limit, so a
reader that expanded the aliases fails the test instead of exhausting the machine."""

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memory_assets.core.knowledge.frontmatter_yaml import MAX_DEPTH, load_yaml
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import DAY, write_facts


def alias_bomb(key: str = "category", levels: int = 9) -> str:
    """A 600-byte page whose ``key`` stands for 10**levels strings once its aliases expand."""
    lines = ["---", "a0: &a0 [" + ",".join(['"lol"'] * 10) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    lines += [f"{key}: *a{levels - 1}", "---", "", "## Key Facts", "", "- Rubaxo likes quiet trains."]
    return "\n".join(lines) + "\n"


def capped(code: str, memory_gb: int, timeout: float, env: dict[str, str] | None = None) -> str:
    """Run ``code`` in a child Python under an address-space cap; its stdout (it must succeed)."""

    def limit() -> None:
        cap = memory_gb << 30
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_aliases_and_deep_nesting_are_refused_where_they_stand() -> None:
    assert load_yaml("title: A\ntags: [x, y]\nkeep: &k 1\n") == {"title": "A", "tags": ["x", "y"], "keep": 1}
    with pytest.raises(yaml.YAMLError) as refused:
        load_yaml("a: &a [1, 2]\nb: *a\n")
    assert "a YAML alias (*a)" in str(refused.value) and "write the value out in full" in str(refused.value)
    assert refused.value.problem_mark.line == 1  # type: ignore[attr-defined]
    with pytest.raises(yaml.YAMLError, match=f"nested more than {MAX_DEPTH} levels"):
        load_yaml("a: " + "[" * 5000 + "]" * 5000)


def test_every_page_reader_treats_an_alias_bomb_as_broken_frontmatter(tmp_path: Path) -> None:
    page = tmp_path / "General.md"
    page.write_text(alias_bomb(), encoding="utf-8")
    out = capped(
        f"""
import json
from pathlib import Path
from memory_assets.core.knowledge.chunking import parse_page
from memory_assets.core.knowledge.personal_pages import PageError, split_frontmatter
from memory_assets.core.dream.lint import _frontmatter_problem
text = Path({str(page)!r}).read_text()
page = parse_page(text, "3_Personal/General.md")
try:
    split_frontmatter(text, "3_Personal/General.md")
    refused = None
except PageError as exc:
    refused = str(exc)
print(json.dumps({{"warnings": page.warnings, "category": page.category, "body": page.body,
                  "refused": refused, "lint": _frontmatter_problem(text, "3_Personal/General.md")}}))
""",
        memory_gb=1,
        timeout=60,
    )
    result = json.loads(out)
    [warning] = result["warnings"]
    assert warning.startswith("3_Personal/General.md line 3: invalid YAML frontmatter (a YAML alias (*a0)")
    assert "write the value out in full" in warning and "Fix the YAML" in warning
    assert result["category"] is None and "Rubaxo likes quiet trains." in result["body"]
    assert result["refused"].startswith("3_Personal/General.md line 3: invalid YAML frontmatter")
    assert result["lint"] is None  # parse_page's warning is the one the lint reports


@pytest.mark.parametrize("where", ["3_Personal/General.md", "2_Wiki/Concepts/Bomb.md"])
def test_status_reindex_check_and_the_dream_survive_an_alias_bomb_page(
    settings: Settings, where: str
) -> None:
    write_facts(settings, DAY, "Keeps bees on the roof of the flat", "Prefers metric units in all answers")
    bomb = settings.notebook_dir / where
    bomb.write_text(alias_bomb("category" if where.startswith("3_") else "status"), encoding="utf-8")
    home = str(settings.home)
    out = capped(
        f"""
import contextlib, io, json, logging
from memory_assets.cli import main
logged = []
class Keep(logging.Handler):
    def emit(self, record):
        logged.append(record.getMessage())
logging.getLogger("memory_assets").addHandler(Keep())
results = {{}}
for argv in (["status"], ["reindex"], ["check"], ["dream", "--force"]):
    out, err = io.StringIO(), io.StringIO()
    logged.clear()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--home", {home!r}, "--json", *argv])
    results[argv[0]] = {{"code": code, "out": out.getvalue(), "err": err.getvalue() + "\\n".join(logged)}}
print(json.dumps(results))
""",
        memory_gb=6,
        timeout=300,
    )
    results = json.loads(out)
    assert {name: r["code"] for name, r in results.items()} == {
        "status": 0,
        "reindex": 0,
        "check": 0,
        "dream": 0,
    }
    named = f"notebook/{where} line 3: invalid YAML frontmatter (a YAML alias (*a0)"
    assert named in results["reindex"]["err"] and json.loads(results["reindex"]["out"])["rows"] >= 3
    assert json.loads(results["status"]["out"])["vault_pages"] == 1
    assert all(o["passed"] for o in json.loads(results["check"]["out"]))
