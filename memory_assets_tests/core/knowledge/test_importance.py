"""Every case of the importance rule (design §5.1)."""

import math
from datetime import date

import pytest

from memory_assets.core.knowledge.importance import (
    Lifecycle,
    chunk_importance,
    confirmation_count,
    default_stale_after,
    normalise_status,
    parse_stale_after,
)

TODAY = date(2026, 11, 29)
PAST, FUTURE = date(2026, 1, 1), date(2027, 1, 1)
TWELVE = "- Wants water reminders hourly. (confirmed 12x, last 2026-08-20)"


def imp(text: str = "- A claim.", **kw: object) -> float:
    return chunk_importance(text, Lifecycle(**kw), TODAY)  # type: ignore[arg-type]


def test_plain_chunk_is_neutral() -> None:
    assert imp() == 0.5


def test_confirmations_are_log_scaled_and_capped() -> None:
    assert confirmation_count(TWELVE + "\n- Other. (confirmed 3x, last 2026-08-01)") == 12
    assert imp(TWELVE) == pytest.approx(0.5 + 0.1 * math.log(12), abs=1e-6)
    assert imp("- x (confirmed 64x, last 2026-08-20)") == 0.75  # 0.1 ln 64 = 0.416 -> capped at +0.25
    assert imp("- x (confirmed 1x)") == 0.5


def test_draft_and_stale() -> None:
    assert imp(status="draft") == pytest.approx(0.45)
    assert imp(stale_after=PAST) == pytest.approx(0.3)
    assert imp(stale_after=FUTURE) == 0.5
    assert imp(status="draft", stale_after=PAST) == pytest.approx(0.45 * 0.6)


def test_human_verification_is_a_floor_that_skips_the_stale_discount() -> None:
    assert imp(human_verified=True) == 0.9
    assert imp(human_verified=True, stale_after=PAST) == 0.9
    assert imp("- x (confirmed 64x)", human_verified=True) == 0.9
    assert imp(status="draft", human_verified=True) == 0.9


def test_deprecated_wins_over_everything() -> None:
    assert imp(TWELVE, status="deprecated", human_verified=True) == 0.1
    assert imp(status="deprecated", stale_after=PAST) == 0.1


def test_status_and_stale_after_parsing() -> None:
    assert [normalise_status(s) for s in ("active", "Stable", None, "weird", "draft", "DEPRECATED")] == [
        "stable",
        "stable",
        "stable",
        "stable",
        "draft",
        "deprecated",
    ]
    assert parse_stale_after("never") is None and parse_stale_after("2026-01-02") == date(2026, 1, 2)
    assert parse_stale_after(date(2026, 1, 2)) == date(2026, 1, 2) and parse_stale_after("soon") is None


def test_category_derived_stale_after() -> None:
    d = date(2026, 1, 1)
    assert default_stale_after("personal", d) == "never"
    assert default_stale_after("preference", d) == "2027-01-01"
    assert default_stale_after("technical", d) == "2026-07-02"
    assert default_stale_after("goal", d) == "2026-04-02"
    assert default_stale_after("context", d) == default_stale_after("interaction", d) == "2026-01-22"
    assert default_stale_after("general", d) == default_stale_after("unknown", d) == "2026-04-02"
