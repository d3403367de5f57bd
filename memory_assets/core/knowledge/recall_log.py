"""``notebook/.state/recall_log.jsonl``: what retrieval handed out, the recall signal the MEMORY.md
promoter favours (existing format: ``{"ts", "snippet", "source_type"}`` a line).

Appends are atomic (one write under the writers' lock) and best effort: a recall signal must
never fail or slow a search, so they are not fsync'd. The file rotates
at a size setting (``MEMORY_RECALL_LOG_MAX_BYTES``, default 5 MB): the current file becomes
``recall_log.jsonl.1`` (replacing the previous one) and a new file starts, so the signal keeps
about two files' worth of recent recalls and never grows without bound.

Appends are made off the search's path (``retrieval.py``), so one may come after the home was
deleted (``core/ops/delete_user.py``): none is made when the vault above ``.state`` is gone, so a
recall signal never makes a deleted home's directories again.
"""

import json
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from memory_assets.core.durable import append_durable, file_lock

SNIPPET_CHARS = 160


def rotated(path: Path) -> Path:
    return path.with_name(path.name + ".1")


def log_recalls(path: Path, recalls: Iterable[tuple[str, str]], max_bytes: int) -> None:
    """Append one line per (content, source_type); rotate first when the file has reached ``max_bytes``."""
    ts = datetime.now(UTC).isoformat(timespec="seconds")
    lines = "".join(
        json.dumps({"ts": ts, "snippet": content[:SNIPPET_CHARS], "source_type": source}, ensure_ascii=False)
        + "\n"
        for content, source in recalls
    )
    if not lines or not path.parent.parent.is_dir():  # the vault is gone: the home was deleted
        return
    try:
        with file_lock(path):
            if not path.parent.parent.is_dir():
                return
            if path.exists() and path.stat().st_size >= max_bytes:
                os.replace(path, rotated(path))
            append_durable(path, lines, sync=False)  # a best-effort signal: no fsync on the read path
    except OSError:
        pass
