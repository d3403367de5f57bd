"""The lifecycle prior of an indexed row (design §5.1), and the category-derived stale_after.

* Daily-log rows: 0.5 (raw capture carries no lifecycle).
* Vault and core-file chunks: 0.5 + min(0.25, 0.1 * ln n), n the largest confirmation count in
  the chunk (a bullet without a marker counts once); draft -0.05; stale_after passed x0.6;
  a ``human:`` verification raises it to at least 0.9 and skips the stale discount; deprecated
  is 0.1 whatever else holds (a person retiring a claim is also a person).
"""

import math
import re
from dataclasses import dataclass
from datetime import date, timedelta

from memory_assets.core.knowledge.categories import BY_NAME, normalise_category

BASE_IMPORTANCE = 0.5
CONFIRMATION_CAP = 0.25
CONFIRMATION_SCALE = 0.1
DRAFT_PENALTY = 0.05
STALE_FACTOR = 0.6
HUMAN_VERIFIED_FLOOR = 0.9
DEPRECATED_IMPORTANCE = 0.1

CONFIRMED_RE = re.compile(r"\(confirmed\s+(\d+)x(?:,\s*last\s+(\d{4}-\d{2}-\d{2}))?\)", re.IGNORECASE)
STATUSES = ("draft", "stable", "active", "deprecated")


def confirmation_count(text: str) -> int:
    """The largest ``(confirmed Nx, last D)`` count in ``text``; 1 when there is no marker."""
    return max((int(m.group(1)) for m in CONFIRMED_RE.finditer(text)), default=1)


def normalise_status(value: object) -> str:
    """draft | stable | deprecated; ``active``, missing and unknown values read as stable."""
    status = str(value).strip().lower() if value is not None else ""
    return status if status in ("draft", "deprecated") else "stable"


def parse_stale_after(value: object) -> date | None:
    """An ISO date, or None for ``never``, a missing value or one that is not a date."""
    if isinstance(value, date):
        return value
    if value is None:
        return None
    text = str(value).strip()
    if not text or text.lower() == "never":
        return None
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return None


def default_stale_after(category: str, updated: date) -> str:
    """The ``stale_after`` value a 3_Personal page of ``category`` gets: an ISO date or ``never``."""
    days = BY_NAME[normalise_category(category)].stale_after_days  # the table's default (design §4.9)
    return "never" if days is None else (updated + timedelta(days=days)).isoformat()


@dataclass(frozen=True)
class Lifecycle:
    """What a page (or zone) says about the trust in its claims."""

    status: str = "stable"
    stale_after: date | None = None
    human_verified: bool = False


def chunk_importance(text: str, lifecycle: Lifecycle, today: date) -> float:
    if lifecycle.status == "deprecated":
        return DEPRECATED_IMPORTANCE
    n = confirmation_count(text)
    value = BASE_IMPORTANCE + min(CONFIRMATION_CAP, CONFIRMATION_SCALE * math.log(n))
    if lifecycle.status == "draft":
        value -= DRAFT_PENALTY
    if lifecycle.human_verified:
        return round(max(value, HUMAN_VERIFIED_FLOOR), 6)
    if lifecycle.stale_after is not None and lifecycle.stale_after < today:
        value *= STALE_FACTOR
    return round(value, 6)
