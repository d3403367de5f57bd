"""Tombstones: ``notebook/.state/tombstones.jsonl``, the only removal mechanism.

One JSON object a line, ``{"content": "<normalised text>"}``; normalisation is the existing
format's (lower case, whitespace collapsed). History is never rewritten: a tombstone hides the
derived row, and every tombstone write must be paired with an explicit reindex of the days and
files that hold the text (appending here changes no log's mtime or content).
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from memory_assets.core.durable import append_durable
from memory_assets.core.text import normalise
from memory_assets.core.textfile import read_text


@dataclass
class Tombstones:
    contents: frozenset[str] = frozenset()
    warnings: list[str] = field(default_factory=list)

    def __contains__(self, text: str) -> bool:
        return normalise(text) in self.contents


def read_tombstones(path: Path) -> Tombstones:
    """Read the tombstone set; a malformed line is skipped with a warning naming it, never fatal."""
    if not path.exists():
        return Tombstones()
    ft = read_text(path)
    found: set[str] = set()
    warnings = list(ft.warnings)
    for number, line in enumerate(ft.text.splitlines(), start=1):
        if not line.strip():
            continue
        content, problem = _parse(line)
        if content is None:
            warnings.append(
                f"{path} line {number}: not a tombstone ({problem}); expected a JSON object like "
                '{"content": "the text to forget"}. Skipped; fix or delete the line. The file was not modified.'
            )
            continue
        found.add(normalise(content))
    return Tombstones(frozenset(found), warnings)


_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def _parse(line: str) -> tuple[str | None, str]:
    """A tombstone line's content, or None and what is wrong with it in plain words."""
    try:
        value = json.loads(line)
    except ValueError:
        return None, "not valid JSON"
    if not isinstance(value, dict):
        return None, f"{_JSON_KINDS.get(type(value), 'null')}, not an object"
    if not isinstance(value.get("content"), str):
        return None, 'no "content" string'
    return value["content"], ""


def append_tombstone(path: Path, content: str) -> str:
    """Append the normalised ``content``; returns it. The caller must reindex what holds it."""
    value = normalise(content)
    if not value:
        raise ValueError("cannot tombstone empty content")
    append_durable(path, json.dumps({"content": value}, ensure_ascii=False) + "\n")
    return value
