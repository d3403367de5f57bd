"""Reading text files without ever losing them: bad bytes are replaced and reported, never fatal;
a JSON-lines file gives the records that parse."""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class FileText:
    """A file's text plus the problems met reading it (each names the file, line and fix)."""

    path: Path
    text: str
    warnings: list[str] = field(default_factory=list)


def read_text(path: Path, label: str | None = None) -> FileText:
    """Read ``path`` as UTF-8; invalid bytes become U+FFFD and a warning says where.

    The file itself is never rewritten: the replacement only affects what is indexed.
    """
    data = path.read_bytes()
    name = label or str(path)
    try:
        return FileText(path, data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        text = data.decode("utf-8", errors="replace")
        bad = text.count("\ufffd")
        return FileText(
            path,
            text,
            [
                f"{name} line {line}: invalid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                f"read with {bad} replacement character(s). The file was not modified; re-save it as "
                "UTF-8 to index the original characters."
            ],
        )


def read_json_objects(path: Path) -> list[dict[str, Any]]:
    """The lines of the JSON-lines file ``path`` that are JSON objects, in order; any other line (a
    torn append, a hand edit) is skipped, and a missing file has none."""
    if not path.exists():
        return []
    out: list[dict[str, Any]] = []
    for line in read_text(path).text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out
