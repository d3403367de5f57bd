"""An erase's receipt, and ``.state/erasures.jsonl``, where each one is kept.

The receipt says what the erase changed: each place (a file under the home, the index) with a
count, the lines of a person's own it took (MEMORY.md's manual zone, persona.md, user.md), the
places that still hold the text (``left``: empty when it is complete), and the near matches it did
not erase (lines that look like the text; returned to the person, with their text, so they can
decide, and never stored). The copy kept in ``erasures.jsonl`` holds no text: what was asked is
kept as a keyed hash (``keyed_hash.py``) and the places as file names and counts.
"""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memory_assets.core.durable import append_durable
from memory_assets.core.erase.journal import Journal
from memory_assets.core.erase.rewrite import now_iso
from memory_assets.core.knowledge.keyed_hash import keyed_hash
from memory_assets.core.textfile import read_json_objects

RECEIPTS_NAME = "erasures.jsonl"


@dataclass
class Receipt:
    id: str
    started: str
    finished: str
    request: dict[str, str]  # kind, and a keyed hash of what was named
    changed: dict[str, dict[str, int]] = field(default_factory=dict)  # step -> file -> count
    counts: dict[str, int] = field(default_factory=dict)
    your_own_lines: int = 0
    index: dict[str, Any] = field(default_factory=dict)
    left: list[str] = field(default_factory=list)
    near_matches_left: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.left

    @classmethod
    def of(cls, journal: Journal, left: list[str], key: bytes, seconds: float) -> "Receipt":
        plan = journal.plan
        request = plan.request
        kind, named = next(
            (k, v)
            for k, v in (
                ("text", request.text),
                ("id", request.row_id),
                ("chat", request.chat),
                ("day", request.day),
            )
            if v is not None
        )
        done = journal.done
        changed = {
            step: dict(done.get(step, {}).get("files", {}))
            for step in ("logs", "transcripts", "vault", "state")
        }
        return cls(
            id=journal.id,
            started=journal.started,
            finished=now_iso(),
            request={"kind": kind, "day": named}
            if kind == "day"
            else {"kind": kind, "hash": keyed_hash(key, named)},
            changed={k: v for k, v in changed.items() if v},
            counts=plan.counts(),
            your_own_lines=int(done.get("vault", {}).get("your_own_lines", 0)),
            index=dict(done.get("index", {})),
            left=left,
            near_matches_left=list(plan.near),
            seconds=round(seconds, 3),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["complete"] = self.complete
        return out

    def stored(self) -> dict[str, Any]:
        """The receipt as ``erasures.jsonl`` keeps it: no text (near matches as places only)."""
        out = self.to_dict()
        out["near_matches_left"] = [{"file": n["file"], "line": n["line"]} for n in self.near_matches_left]
        return out


def append_receipt(state_dir: Path, receipt: Receipt) -> None:
    append_durable(state_dir / RECEIPTS_NAME, json.dumps(receipt.stored(), ensure_ascii=False) + "\n")


def read_receipts(state_dir: Path) -> list[dict[str, Any]]:
    return read_json_objects(state_dir / RECEIPTS_NAME)
