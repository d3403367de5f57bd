"""The docs cannot drift from the code: every CLI command and option is in docs/reference/cli.md,
every setting and environment variable in docs/reference/settings.md, every ``design §N.M`` the
code cites is a section of docs/design/, every relative link in README.md and docs/ resolves, and
every ``from memory_assets… import …`` in their Python examples imports.

The lists are read from the code (``build_parser()``, ``Settings``'s fields, the environment
variables the package names), never kept by hand, and each item is its own test case, so a
failure names what is missing.
"""

import argparse
import ast
import dataclasses
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_assets.cli import build_parser
from memory_assets.core.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "memory_assets"
DOCS = ROOT / "docs"
CLI_MD = DOCS / "reference" / "cli.md"
SETTINGS_MD = DOCS / "reference" / "settings.md"
DESIGN = DOCS / "design"
SETTINGS_PY = PACKAGE / "core" / "settings.py"
MARKDOWN = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md", *DOCS.rglob("*.md")])
CITING = [PACKAGE, ROOT / "memory_assets_tests", ROOT / "benchmarks"]


# -- the CLI ---------------------------------------------------------------------------------


def _subcommands(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                path = f"{prefix} {name}".strip()
                yield path, sub
                yield from _subcommands(sub, path)


def _names(action: argparse.Action) -> list[str]:
    """How the reference names an argument: its long option strings, or a positional's metavar."""
    if action.option_strings:
        return [s for s in action.option_strings if s.startswith("--")] or list(action.option_strings)
    return [action.metavar or action.dest.upper()]


PARSER = build_parser()
GLOBAL_OPTIONS = {s for a in PARSER._actions for s in a.option_strings}
COMMANDS = dict(_subcommands(PARSER))
OPTIONS = sorted(
    (command, name)
    for command, sub in COMMANDS.items()
    for action in sub._actions
    if not isinstance(action, argparse._SubParsersAction)
    and not set(action.option_strings) & GLOBAL_OPTIONS  # the global options, repeated on each
    for name in _names(action)
)


def _sections(path: Path) -> dict[str, str]:
    """``## `name` `` heading -> the text up to the next ``## `` heading."""
    sections: dict[str, str] = {}
    for chunk in re.split(r"^(?=## )", path.read_text(encoding="utf-8"), flags=re.M):
        m = re.match(r"## `([^`]+)`[^\n]*\n", chunk) or re.match(r"## ([^\n]+)\n", chunk)
        if m:
            sections[m.group(1).strip()] = chunk
    return sections


def _names_argument(text: str, name: str) -> bool:
    """``name`` appears as a code span of its own or opening one (`` `--limit N` ``)."""
    return re.search(rf"`{re.escape(name)}(?:[ =`\[|])", text) is not None


def test_the_cli_reference_has_commands_to_check() -> None:
    assert {"search", "legacy apply", "memory-md edit"} <= set(COMMANDS) and len(OPTIONS) > 30


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_a_section_in_the_cli_reference(command: str) -> None:
    if command not in _sections(CLI_MD):
        pytest.fail(f"docs/reference/cli.md has no '## `{command}`' section")


@pytest.mark.parametrize("command,option", OPTIONS)
def test_every_option_is_in_its_commands_section(command: str, option: str) -> None:
    section = _sections(CLI_MD).get(command, "")
    assert _names_argument(section, option), (
        f"docs/reference/cli.md: the '## `{command}`' section does not document `{option}`"
    )


@pytest.mark.parametrize("option", sorted(s for s in GLOBAL_OPTIONS if s.startswith("--")))
def test_every_global_option_is_in_the_cli_reference(option: str) -> None:
    section = _sections(CLI_MD).get("Global options", "")
    assert _names_argument(section, option), f"docs/reference/cli.md: Global options lack `{option}`"


# -- the settings ----------------------------------------------------------------------------

ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _constants(path: Path) -> set[str]:
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def _environment_variables() -> list[str]:
    """Every variable settings.py reads, and every ``MEMORY_*`` variable named anywhere in the package."""
    names = {s for s in _constants(SETTINGS_PY) if ENV_NAME.fullmatch(s)}
    for path in PACKAGE.rglob("*.py"):
        names |= {s for s in _constants(path) if s.startswith("MEMORY_") and ENV_NAME.fullmatch(s)}
    return sorted(names)


FIELDS = [f.name for f in dataclasses.fields(Settings)]
VARIABLES = _environment_variables()


def test_the_settings_reference_has_settings_to_check() -> None:
    assert {"MEMORY_HOME", "MEMORY_LLM_URL", "MEMORY_LOCK_DIR", "OPENAI_API_KEY"} <= set(VARIABLES)
    assert {"home", "index_uri", "dream_consolidator"} <= set(FIELDS)


@pytest.mark.parametrize("field", FIELDS)
def test_every_settings_field_has_a_row_in_the_settings_reference(field: str) -> None:
    text = SETTINGS_MD.read_text(encoding="utf-8")
    assert re.search(rf"^\| `{field}` \|", text, re.M), (
        f"docs/reference/settings.md has no row for the Settings field `{field}`"
    )


@pytest.mark.parametrize("variable", VARIABLES)
def test_every_environment_variable_is_in_the_settings_reference(variable: str) -> None:
    assert f"`{variable}`" in SETTINGS_MD.read_text(encoding="utf-8"), (
        f"docs/reference/settings.md does not document `{variable}`"
    )


# -- design citations ------------------------------------------------------------------------


def _design_sections() -> set[str]:
    found: set[str] = set()
    for path in DESIGN.glob("[0-9][0-9]-*.md"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r"^## (\d+)\. ", text, re.M))
        found |= set(re.findall(r"^### (\d+\.\d+) ", text, re.M))
    return found


def _cited() -> list[str]:
    """Every ``§N`` / ``§N.M`` the code cites after the word "design" (``design §5.7, §5.9``)."""
    cited: set[str] = set()
    for base in CITING:
        for path in base.rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for m in re.finditer(
                r"design(?:\.md)?\s+((?:§\d+(?:\.\d+)?[,;\s]*(?:and\s+|step \d+ of\s+)?)+)", text
            ):
                cited |= set(re.findall(r"§(\d+(?:\.\d+)?)", m.group(1)))
    return sorted(cited, key=lambda s: [int(p) for p in s.split(".")])


def test_the_code_cites_design_sections() -> None:
    assert len(_cited()) > 10


@pytest.mark.parametrize("section", _cited())
def test_every_design_section_the_code_cites_exists(section: str) -> None:
    assert section in _design_sections(), f"the code cites design §{section}, which docs/design/ lacks"


def test_nothing_cites_the_old_single_design_file() -> None:
    stale = [
        f"{path.relative_to(ROOT)}:{n}"
        for base in [*CITING, DOCS, ROOT / "README.md"]
        for path in ([base] if base.is_file() else [*base.rglob("*.py"), *base.rglob("*.md")])
        if path != Path(__file__).resolve()  # this test names the old file to find it
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "design.md" in line
    ]
    assert not stale, f"'design.md' is now docs/design/ (cite it as 'design §N.M'): {stale}"


# -- links and examples ----------------------------------------------------------------------


def _strip_fences(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def _prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where a bracket is not a link."""
    return re.sub(r"`[^`\n]*`", "", _strip_fences(text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(h) for h in re.findall(r"^#+ (.*)$", _strip_fences(path.read_text(encoding="utf-8")), re.M)}


def _links() -> list[tuple[str, str]]:
    links = []
    for path in MARKDOWN:
        if path.is_file():
            for target in re.findall(r"\]\(([^)\s]+)\)", _prose(path.read_text(encoding="utf-8"))):
                if not re.match(r"[a-z]+:", target):
                    links.append((str(path.relative_to(ROOT)), target))
    return links


def test_the_docs_exist_and_have_links() -> None:
    assert CLI_MD.is_file() and SETTINGS_MD.is_file() and (DESIGN / "README.md").is_file()
    assert len(_links()) > 20


@pytest.mark.parametrize("doc,target", _links())
def test_every_relative_link_resolves(doc: str, target: str) -> None:
    file_part, _, anchor = target.partition("#")
    path = (ROOT / doc).parent / file_part if file_part else ROOT / doc
    assert path.exists(), f"{doc}: the link ({target}) names no file"
    if anchor and path.suffix == ".md":
        assert anchor in _anchors(path), f"{doc}: the link ({target}) names no heading of {file_part or doc}"


def _imports() -> list[tuple[str, str, str]]:
    found = []
    for path in MARKDOWN:
        if not path.is_file():
            continue
        for block in re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S):
            for node in ast.walk(ast.parse(block)):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memory_assets"):
                    found += [(str(path.relative_to(ROOT)), node.module, a.name) for a in node.names]
    return found


@pytest.mark.parametrize("doc,module,name", _imports())
def test_every_import_in_a_python_example_resolves(doc: str, module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"{doc}: `from {module} import {name}` fails"
