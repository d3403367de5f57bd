"""``.state/dream_journal.jsonl``: the undo record of the dream run in flight (design §5.9).

A dream run writes pages before it commits (the commit is its record in ``folds.jsonl``). So that
a crash or a failed run never leaves a page holding what no commit counts (a fact folded twice
after a replay, "confirmed 2x" after one mention), every page write of a run is preceded by a
durable journal entry holding the page's bytes before the run first touched it and the hash of
the bytes about to be written. Then:

* the run commits: the journal is deleted after the commit's follow-up steps;
* the run fails (a consolidator error, a verification that finds facts no page holds): its pages
  are rolled back from the journal, then the journal is deleted;
* the process dies: the next dream tick finds the journal. If the ledger holds the run's commit
  it finishes the follow-up steps; otherwise it rolls the pages back.

Rolling back restores a page only while it still holds bytes this run wrote (or the bytes it had
before): a page someone changed since is left as it is, with a warning naming it. A page the run
created is removed. The journal is written by the runner alone (the agent's tools cannot reach
``.state/``); a torn last line is an entry whose write never happened.
"""

import base64
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from memory_assets.core.durable import append_durable, file_lock, write_atomic
from memory_assets.core.textfile import read_text


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class DreamJournal:
    """The journal of one run: ``record`` before every page write (``consolidator.PageJournal``)."""

    path: Path
    vault: Path
    run: str
    before: dict[str, bytes | None] = field(default_factory=dict)  # page -> bytes before the run
    after: dict[str, list[str]] = field(default_factory=dict)  # page -> hashes this run wrote

    @classmethod
    def begin(cls, path: Path, vault: Path, run: str) -> "DreamJournal":
        journal = cls(path, vault, run)
        write_atomic(path, json.dumps({"run": run}) + "\n")
        return journal

    def record(self, rel: str, before: bytes | None, after: bytes) -> None:
        """Called under the page's lock, just before ``after`` replaces ``before`` at ``rel``."""
        entry: dict[str, object] = {"page": rel, "after": _sha(after)}
        if rel not in self.before:
            self.before[rel] = before
            entry["before"] = None if before is None else base64.b64encode(before).decode("ascii")
        append_durable(self.path, json.dumps(entry) + "\n")
        self.after.setdefault(rel, []).append(_sha(after))

    def changed(self) -> dict[str, bytes | None]:
        """The pages whose bytes differ now from before the run (page -> bytes before)."""
        out: dict[str, bytes | None] = {}
        for rel, before in self.before.items():
            if _current(self.vault / rel) != before:
                out[rel] = before
        return out

    def rollback(self) -> list[str]:
        """Restore every page this run wrote (see the module docstring); returns warnings."""
        warnings: list[str] = []
        for rel in reversed(list(self.before)):
            path = self.vault / rel
            before = self.before[rel]
            with file_lock(path):
                now = _current(path)
                if now == before:
                    continue
                if now is None or _sha(now) not in self.after.get(rel, []):
                    warnings.append(
                        f"notebook/{rel}: changed by someone else since the interrupted dream run wrote "
                        "it; left as it is (not rolled back). Check it by hand."
                    )
                elif before is None:
                    path.unlink()
                else:
                    write_atomic(path, before)
        return warnings

    def close(self) -> None:
        self.path.unlink(missing_ok=True)


def open_journal(path: Path, vault: Path) -> DreamJournal | None:
    """The journal a crashed run left (None when there is none)."""
    if not path.exists():
        return None
    lines = read_text(path).text.split("\n")
    journal: DreamJournal | None = None
    for line in lines:
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn last entry: its page write never happened
        if journal is None:
            journal = DreamJournal(path, vault, str(entry.get("run", "")))
            continue
        rel = entry.get("page")
        if not isinstance(rel, str):
            continue
        if rel not in journal.before and "before" in entry:
            raw = entry["before"]
            journal.before[rel] = None if raw is None else base64.b64decode(raw)
        journal.after.setdefault(rel, []).append(str(entry.get("after", "")))
    return journal or DreamJournal(path, vault, "")


def _current(path: Path) -> bytes | None:
    try:
        if path.is_symlink() or not path.is_file():
            return None
        return path.read_bytes()
    except OSError:
        return None
