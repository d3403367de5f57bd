"""The indexer's state: ``{"version": 2, "table": <table id>, "files": {"label:filename": digest}}``.

Keys are ``label:filename`` (never an absolute path, so a synced directory cannot leak entries
between machines). The digest is of the rows a file should produce, so a touch without a change,
or a change that does not alter the rows, costs no index work. State of any other version (the
assistant's flat ``{absolute path: mtime}`` file) is discarded, which costs one full reindex; so
is state recorded against another table (a rebuilt or replaced index). State written by a NEWER
version of memory-assets is refused with a message, never silently overwritten.

The state is only a fast path: the indexer's per-file diff against the table is the truth.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from memory_assets.core.durable import write_atomic

STATE_VERSION = 2


class StateVersionError(RuntimeError):
    """A state file written by a newer memory-assets than this one."""


@dataclass
class IndexState:
    table: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    discarded: str | None = None  # why a previous state was thrown away, for reporting

    @classmethod
    def load(cls, path: Path, table_id: str | None) -> "IndexState":
        if not path.exists():
            return cls(table=table_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return cls(table=table_id, discarded=f"{path}: unreadable ({exc}); rebuilt from the files")
        version = data.get("version") if isinstance(data, dict) else None
        if isinstance(version, int) and version > STATE_VERSION:
            raise StateVersionError(
                f"{path}: index state version {version} was written by a newer memory-assets (this one "
                f"reads version {STATE_VERSION}). Upgrade memory-assets, or delete the file to rebuild it "
                "(costs one full reindex, nothing is lost)."
            )
        if version != STATE_VERSION:
            return cls(
                table=table_id, discarded=f"{path}: pre-v{STATE_VERSION} state discarded (one full reindex)"
            )
        if data.get("table") != table_id:
            return cls(table=table_id, discarded=f"{path}: recorded against another index table; discarded")
        files = data.get("files")
        return cls(table=table_id, files=dict(files) if isinstance(files, dict) else {})

    def save(self, path: Path) -> None:
        """Write atomically, without fsync: the state is a fast path that every write path's turn
        rewrites, and a crash may leave the old state (its files are diffed again), or an empty
        or partial file, which ``load`` discards (one full diff; the table is the truth)."""
        write_atomic(
            path,
            json.dumps({"version": STATE_VERSION, "table": self.table, "files": self.files}, indent=1),
            sync=False,
        )
