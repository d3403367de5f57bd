"""``.state/erase_journal.json``: an erase in progress, so that one killed at any step converges.

Written (atomically, fsync'd) once the plan is made and before anything is changed; each step
that completes is recorded with what it changed; removed once the receipt is written. It holds
the plan, and so the request's text and the texts the plan reached through their lineage, for as
long as the erase runs and no longer: a plan cannot be made again once the log lines it empties
are empty. The next erase (any request, or ``erase --resume``) finishes a journalled one first,
and ``check`` names one that was left.
"""

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_assets.core.durable import write_atomic
from memory_assets.core.erase.scope import Plan

VERSION = 1


class JournalError(RuntimeError):
    """The journal cannot be read (the message names the file and the fix)."""


@dataclass
class Journal:
    path: Path
    id: str
    started: str
    plan: Plan
    done: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def start(cls, path: Path, plan: Plan, started: str) -> "Journal":
        journal = cls(path, "erase-" + secrets.token_hex(6), started, plan)
        journal.save()
        return journal

    def save(self) -> None:
        data = {
            "version": VERSION,
            "id": self.id,
            "started": self.started,
            "plan": self.plan.to_dict(),
            "done": self.done,
        }
        write_atomic(self.path, json.dumps(data, ensure_ascii=False))

    def step(self, name: str, result: dict[str, Any]) -> None:
        self.done[name] = result
        self.save()

    def finish(self) -> None:
        self.path.unlink(missing_ok=True)


def read_journal(path: Path) -> Journal | None:
    """The unfinished erase journalled at ``path`` (``Settings.erase_journal_path``), or None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise JournalError(
            f"{path}: an unfinished erase's journal cannot be read ({exc}); nothing was changed now. "
            "Run the same erase again with --yes after moving the file aside (its plan is lost: the "
            "new run plans again from what the files hold now)"
        ) from exc
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise JournalError(f"{path}: not an erase journal this version of memory-assets reads; move it aside")
    return Journal(path, data["id"], data["started"], Plan.of(data["plan"]), dict(data.get("done") or {}))
