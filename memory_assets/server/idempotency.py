"""``Idempotency-Key``: a retried write is recognised, and answered as the first time.

A client may send ``Idempotency-Key: <key>`` (1-255 printable ASCII characters it chooses, one
per request it means) with ``POST /v1/users/{id}/turns`` and ``POST .../memories``. The first
request with a key is written as ever; a retry with the same key and the same request (route and
body) gets the first answer again (``Idempotent-Replayed: true``) and writes nothing, across a
restart of the server; the same key with another request is a 422 ``idempotency_key_reused``.

The record of a key is one file in the user's home, ``.state/requests/<sha256 of the key>.json``
(the key itself is not kept): the request's fingerprint (a SHA-256 of its route and body), when
it was written, and the answer. It is written durably (``write_atomic``) as part of the turn's
write, after the turn's appends and before its reindex (``process_turns(on_written=...)``); a
turn whose record cannot be written (a full disk) is taken back and refused, so a turn is kept
exactly when its record is, and a retry can never store it twice. After the reindex the record
is rewritten with the whole answer (best effort: the first record already replays the turn's
facts and lines, its index figures as of the append).

Bounds: a record older than ``ttl_s`` (default a day) no longer counts (a retry after that is a
new request); a home keeps at most ``max_records``, the oldest removed first; both are enforced
on a write, at most once a minute per home.

What a record holds of the user's words: the answer, which quotes the facts as written and what
they were compared with. Nothing else in it is the user's (no key, no request body). The files
sit under the home's ``.state/``, so whatever erases a user's text from their home reaches them.
"""

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_assets.core.durable import write_atomic

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
DIRECTORY = "requests"  # under the home's .state/
_KEY = re.compile(r"[\x20-\x7e]{1,255}")
PRUNE_EVERY_S = 60.0


class KeyReused(ValueError):
    """The key was used for another request (another route or body)."""


class BadKey(ValueError):
    """The header's value cannot be a key."""


@dataclass(frozen=True)
class Keyed:
    """One keyed request: its key's id (a hash: the file's name) and its fingerprint."""

    key_id: str
    fingerprint: str

    @classmethod
    def of(cls, key: str, route: str, body: Mapping[str, Any]) -> "Keyed":
        if _KEY.fullmatch(key) is None:
            raise BadKey(
                f"{HEADER} must be 1 to 255 printable ASCII characters (got {len(key)} characters"
                f"{'' if key.isascii() else ', not all ASCII'})"
            )
        canonical = json.dumps(
            {"route": route, "body": body}, sort_keys=True, ensure_ascii=False, default=str
        )
        return cls(
            hashlib.sha256(key.encode("ascii")).hexdigest(),
            "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
        )


@dataclass(frozen=True)
class Replay:
    """The first answer to a request retried with its key."""

    answer: dict[str, Any]


class Records:
    """The key records of one home (see the module docstring)."""

    def __init__(self, state_dir: Path, ttl_s: float, max_records: int) -> None:
        self.directory = state_dir / DIRECTORY
        self.ttl_s = ttl_s
        self.max_records = max(1, max_records)
        self._pruned_at = 0.0

    def _path(self, keyed: Keyed) -> Path:
        return self.directory / f"{keyed.key_id}.json"

    def find(self, keyed: Keyed) -> dict[str, Any] | None:
        """The answer recorded for ``keyed``; None when there is none (or it expired); raises
        ``KeyReused`` when the key's record is of another request."""
        path = self._path(keyed)
        try:
            if time.time() - path.stat().st_mtime > self.ttl_s:
                return None
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError:  # a torn record cannot be: write_atomic. Treat it as none.
            return None
        if record.get("fingerprint") != keyed.fingerprint:
            raise KeyReused(
                f"this {HEADER} was used for another request (another route or body) within the "
                f"last {self.ttl_s / 3600:g} h"
            )
        answer = record.get("answer")
        return answer if isinstance(answer, dict) else None

    def write(self, keyed: Keyed, answer: Mapping[str, Any]) -> None:
        """Record ``answer`` for ``keyed``, durably (raises what the write raises)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        record = {"fingerprint": keyed.fingerprint, "at": time.time(), "answer": answer}
        write_atomic(self._path(keyed), json.dumps(record, ensure_ascii=False, default=str))
        now = time.monotonic()
        if now - self._pruned_at >= PRUNE_EVERY_S:
            self._pruned_at = now
            with contextlib.suppress(OSError):
                self.prune()

    def prune(self) -> int:
        """Remove the records past their time and, past ``max_records``, the oldest; how many."""
        entries: list[tuple[float, Path]] = []
        with os.scandir(self.directory) as it:
            for entry in it:
                if entry.name.endswith(".json") and entry.is_file():
                    entries.append((entry.stat().st_mtime, Path(entry.path)))
        entries.sort()
        cutoff = time.time() - self.ttl_s
        stale = [p for mtime, p in entries if mtime < cutoff]
        fresh = [p for mtime, p in entries if mtime >= cutoff]
        extra = fresh[: max(0, len(fresh) - self.max_records)]
        for path in stale + extra:
            path.unlink(missing_ok=True)
        return len(stale) + len(extra)
