"""``.state/dream_state.json``: the dream's pacing state, persisted (design §4.10).

``{"version": 1, "failures": {"<batch end>": n}, "last_attempt_at": ISO | null,
"last_lint_attempt_at": ISO | null, "unconsolidated": ["YYYY-MM-DD", ...],
"skipped_why": {"YYYY-MM-DD": "why"}, "last_failure": {"batch", "why", "at"} | null,
"gave_up": {"at": ISO, "vault": "<vault signature>"} | null}``

Read once per decision and written back atomically on every change, so retry-then-skip works
across restarts (a counter held in memory would reset on every start, and a batch that failed once
would then be retried from zero forever).
``unconsolidated`` lists the days of batches skipped after ``max_retries`` failures: their rows
stay in the index (the watermark rule makes an exception for them) until a later dream folds them.
``skipped_why`` says, for each of them, the error of the last attempt that failed on it (what
``status`` and ``check`` show); ``last_failure`` is the last failed attempt's, until a run
succeeds. ``gave_up`` is set when the skipped days, tried alone, failed ``max_retries`` times
too: when, and the vault's signature then (``vault.vault_signature``). The dream tries them again
once the vault changed since, or a day later (``pacing.py``). The three keys are optional: a file
without them (an older version's) reads as none recorded.

An unreadable file is never silently reset to zero: it is reported, kept aside as
``dream_state.json.corrupt``, and rebuilt from what the vault shows: ``log.md``'s last ingest
and lint entries give the attempt times, and the failure counters start empty (a wedged batch
then takes ``max_retries`` more attempts to skip, which is the safe side).

An attempt time later than now (a hand edit, a clock that was ahead) would hold the pacing back
for as long as it is ahead. It is read as the time the file was last written, or now if that is
earlier, with a warning naming the file; the dream writes the corrected state back on its next
tick.
"""

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.knowledge.watermark import (
    WatermarkError,
    read_last_lint_date,
    read_skipped_days,
    read_watermark,
)

STATE_VERSION = 1
MAX_WHY_CHARS = 500
SKIPPED_RETRY_AFTER = timedelta(hours=24)  # days given up on are tried again this long after, at most
UNKNOWN_WHY = "not recorded (skipped by an older version, or the state file was rebuilt)"
CLOCK_SLACK = timedelta(minutes=5)  # how far ahead an attempt time may be (clocks of two machines)


class DreamStateError(RuntimeError):
    pass


@dataclass
class DreamState:
    failures: dict[str, int] = field(default_factory=dict)
    last_attempt_at: datetime | None = None
    last_lint_attempt_at: datetime | None = None
    unconsolidated: list[str] = field(default_factory=list)
    skipped_why: dict[str, str] = field(default_factory=dict)  # unconsolidated day -> why
    last_failure: dict[str, str] | None = None  # {"batch", "why", "at"} of the last failed attempt
    gave_up: dict[str, str] | None = None  # {"at", "vault"}: the skipped days failed alone too
    warnings: list[str] = field(default_factory=list)  # what loading had to report

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": STATE_VERSION,
                "failures": dict(sorted(self.failures.items())),
                "last_attempt_at": _iso(self.last_attempt_at),
                "last_lint_attempt_at": _iso(self.last_lint_attempt_at),
                "unconsolidated": sorted(set(self.unconsolidated)),
                "skipped_why": {
                    d: w for d, w in sorted(self.skipped_why.items()) if d in self.unconsolidated
                },
                "last_failure": self.last_failure,
                "gave_up": self.gave_up,
            },
            indent=1,
        )

    def failed(self, batch: str, why: str, at: datetime) -> int:
        """One more failed attempt on ``batch``, for ``why``; the attempts so far."""
        self.failures[batch] = self.failures.get(batch, 0) + 1
        self.last_failure = {"batch": batch, "why": why[:MAX_WHY_CHARS], "at": _iso(at) or ""}
        return self.failures[batch]

    def skipped(self, days: list[str]) -> None:
        """``days`` left unconsolidated, each with the last failure's reason."""
        self.unconsolidated = sorted(set(self.unconsolidated) | set(days))
        why = (self.last_failure or {}).get("why") or "its batch failed max_retries times"
        for day in days:
            self.skipped_why[day] = why

    def folded(self, days: list[str]) -> None:
        """``days`` consolidated: no longer skipped, nor their batch's failures counted."""
        for key in (days[-1], f"unconsolidated:{days[-1]}") if days else ():
            self.failures.pop(key, None)
        self.unconsolidated = [d for d in self.unconsolidated if d not in set(days)]
        self.skipped_why = {d: w for d, w in self.skipped_why.items() if d in self.unconsolidated}
        self.last_failure = None
        if not self.unconsolidated:
            self.gave_up = None

    def unconsolidated_days(self) -> set[date]:
        return {date.fromisoformat(d) for d in self.unconsolidated}


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat(timespec="seconds") if value else None


def _when(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _rebuilt(path: Path, log_md: Path, why: str, repair: bool) -> DreamState:
    """The state as far as the vault shows it, after ``path`` could not be read. ``repair`` (the
    dream, the state's writer): move the unreadable file aside; a reader leaves it in place."""
    kept = ""
    if repair:
        aside = path.with_name(path.name + ".corrupt")
        try:
            os.replace(path, aside)
            kept = f" (the unreadable file was kept as {aside.name})"
        except OSError:
            pass
    lint = read_last_lint_date(log_md)
    try:
        watermark: date | str | None = read_watermark(log_md)
    except WatermarkError:  # the readers that use the watermark report it; here it only names it
        watermark = "refused (see log.md)"
    skipped = read_skipped_days(log_md)
    state = DreamState(
        last_lint_attempt_at=datetime(lint.year, lint.month, lint.day, tzinfo=UTC) if lint else None,
        unconsolidated=[d.isoformat() for d in skipped],
        warnings=[
            f"{path}: {why}; rebuilt from {log_md.name} (watermark {watermark or 'none'}, last lint "
            f"{lint or 'never'}, {len(skipped)} day(s) its skip entries left unconsolidated, kept "
            f"indexed) with no failure counters{kept}. Nothing was reset silently: a wedged batch "
            "takes max_retries more attempts before it is skipped."
        ],
    )
    return state


def load_dream_state(
    path: Path, log_md: Path, repair: bool = False, now: datetime | None = None
) -> DreamState:
    """The persisted state; see the module docstring for an unreadable file (``repair``: the
    dream, which will write the state back, moves it aside) and for an attempt time later than
    ``now`` (the clock by default)."""
    state = _load(path, log_md, repair)
    _not_ahead(state, path, (now or datetime.now(UTC)).astimezone(UTC))
    return state


def _not_ahead(state: DreamState, path: Path, now: datetime) -> None:
    try:
        written = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        written = now
    anchor = min(written, now)
    for name in ("last_attempt_at", "last_lint_attempt_at"):
        value = getattr(state, name)
        if value is None or value <= now + CLOCK_SLACK:
            continue
        setattr(state, name, anchor)
        state.warnings.append(
            f"{path}: {name} is {_iso(value)}, later than now ({_iso(now)}), which would hold the "
            f"dream's pacing back until then; read as {_iso(anchor)} (when the file was last written, "
            "or now if earlier). Fix: nothing to do, the dream writes the corrected time back on its "
            "next run; if this machine's clock is wrong, set it right."
        )


def _load(path: Path, log_md: Path, repair: bool) -> DreamState:
    if not path.exists():
        return DreamState()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return _rebuilt(path, log_md, f"unreadable ({exc})", repair)
    if not isinstance(data, dict):
        return _rebuilt(path, log_md, "not a JSON object", repair)
    version = data.get("version")
    if isinstance(version, int) and version > STATE_VERSION:
        raise DreamStateError(
            f"{path}: dream state version {version} was written by a newer memory-assets (this one reads "
            f"{STATE_VERSION}). Upgrade memory-assets, or move the file aside to rebuild it from log.md."
        )
    if version != STATE_VERSION:
        return _rebuilt(path, log_md, f"unknown version {version!r}", repair)
    failures = data.get("failures") if isinstance(data.get("failures"), dict) else {}
    days = data.get("unconsolidated") if isinstance(data.get("unconsolidated"), list) else []
    why = data.get("skipped_why") if isinstance(data.get("skipped_why"), dict) else {}
    return DreamState(
        failures={str(k): int(v) for k, v in failures.items() if isinstance(v, int)},
        last_attempt_at=_when(data.get("last_attempt_at")),
        last_lint_attempt_at=_when(data.get("last_lint_attempt_at")),
        unconsolidated=[d for d in days if isinstance(d, str) and _is_day(d)],
        skipped_why={str(d): str(w) for d, w in why.items() if isinstance(w, str)},
        last_failure=_strings(data.get("last_failure"), ("batch", "why", "at")),
        gave_up=_strings(data.get("gave_up"), ("at", "vault")),
    )


def _strings(value: object, keys: tuple[str, ...]) -> dict[str, str] | None:
    """``value`` when it is an object holding a string under each of ``keys`` (else None)."""
    if not isinstance(value, dict) or not all(isinstance(value.get(k), str) for k in keys):
        return None
    return {k: str(value[k]) for k in keys}


def _is_day(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def save_dream_state(path: Path, state: DreamState) -> None:
    with file_lock(path):
        write_atomic(path, state.to_json())
