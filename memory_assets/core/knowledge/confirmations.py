"""``.state/confirmations.jsonl``: restatements the write path recognised instead of logging them.

One JSON object a line (design §4.10): ``ts``, ``content`` (the restatement), ``matched``
(the recorded claim), ``source_type``, ``source_file``, ``similarity``, ``chat_id``. The write path
appends (durably, under the file's writers' lock); the dream is shown the first N lines and
afterwards removes exactly those N lines with an atomic rewrite under the same lock, so lines
appended meanwhile survive.
"""

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from memory_assets.core.durable import append_durable, file_lock, write_atomic
from memory_assets.core.textfile import read_text


@dataclass(frozen=True)
class Confirmation:
    ts: str
    content: str
    matched: str
    source_type: str
    source_file: str | None
    similarity: float
    chat_id: str

    def line(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False) + "\n"


def append_confirmations(path: Path, confirmations: Iterable[Confirmation]) -> int:
    """Append in one durable write; returns how many lines were written."""
    lines = [c.line() for c in confirmations]
    if lines:
        append_durable(path, "".join(lines))
    return len(lines)


def read_confirmations(path: Path, limit: int | None = None) -> tuple[list[Confirmation], list[str]]:
    """The first ``limit`` lines (all when None) as confirmations, and warnings for lines skipped.
    A skipped line still counts toward ``limit``, so removing the lines shown removes it too."""
    if not path.exists():
        return [], []
    found: list[Confirmation] = []
    warnings: list[str] = []
    lines = read_text(path).text.splitlines()
    for number, line in enumerate(lines[:limit] if limit is not None else lines, start=1):
        try:
            data = json.loads(line)
            found.append(Confirmation(**{k: data[k] for k in Confirmation.__dataclass_fields__}))
        except (ValueError, KeyError, TypeError) as exc:
            warnings.append(f"{path} line {number}: not a confirmation ({exc}); skipped")
    return found, warnings


def lines_sha256(lines: list[bytes]) -> str:
    """The hash a dream run's commit keeps of the confirmation lines it was shown."""
    return hashlib.sha256(b"\n".join(lines)).hexdigest()


def remove_first(path: Path, count: int, expected_sha256: str | None = None) -> bool:
    """Remove exactly the first ``count`` lines (the ones the dream was shown), never more; with
    ``expected_sha256`` (``lines_sha256`` of those lines as read), only while the file still
    starts with them, so a replayed removal never takes a line the dream has not seen. True when
    lines were removed."""
    if count <= 0 or not path.exists():
        return False
    with file_lock(path):
        lines = path.read_bytes().split(b"\n")
        if (
            expected_sha256 is not None
            and hashlib.sha256(b"\n".join(lines[:count])).hexdigest() != expected_sha256
        ):
            return False
        # A trailing newline leaves an empty last element: lines are the elements before it.
        write_atomic(path, b"\n".join(lines[count:]))
        return True
