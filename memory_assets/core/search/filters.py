"""``SearchFilters``: what a search is narrowed to and how much it answers, apart from its query.

One frozen value, built once by each face from its own inputs and passed unchanged to
``Home.search`` and ``retrieval.search``:

* ``limit``: how many hits at most (1 or more);
* ``source_types``: only rows of these source types (``core/sources.py``; ``legacy_direct`` also
  matches a row with no source type); None: every type;
* ``since`` / ``until``: only facts dated on or after / on or before these days (``fact_date``);
* ``context``: up to this many neighbouring lines on each side of every hit (0: none);
* ``today``: the day the question is asked as of: relative dates in it ("last week") and the
  recency of facts are counted from it; None: today, UTC.

The value checks itself when built: a wrong one raises ``FilterError`` (a ``ValueError``) naming
the field, what is wrong and the fix, never the value given (a server's caller's words are not
echoed). ``source_types`` is kept as a tuple, an empty one as None. Bounds that belong to a face
(the server's largest limit and context) are the face's to check.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from memory_assets.core.sources import INDEXED_SOURCE_TYPES, LEGACY_SOURCE_TYPE

SOURCE_TYPES = (*INDEXED_SOURCE_TYPES, LEGACY_SOURCE_TYPE)  # what ``source_types`` may name


class FilterError(ValueError):
    """A ``SearchFilters`` field is wrong: ``field``, what is wrong with it (``problem``) and the
    ``fix``; its text is "<field> <problem>; <fix>"."""

    def __init__(self, field: str, problem: str, fix: str):
        super().__init__(f"{field} {problem}; {fix}")
        self.field, self.problem, self.fix = field, problem, fix


@dataclass(frozen=True)
class SearchFilters:
    """The filters and the shape of one search (see the module docstring)."""

    limit: int = 10
    source_types: Sequence[str] | None = None  # kept as a tuple (None when empty)
    since: date | None = None
    until: date | None = None
    context: int = 0
    today: date | None = None

    def __post_init__(self) -> None:
        _count("limit", self.limit, least=1, fix="ask for 1 hit or more")
        _count("context", self.context, least=0, fix="give 0 (no neighbouring lines) or more")
        for name in ("since", "until", "today"):
            _day(name, getattr(self, name))
        if self.since is not None and self.until is not None and self.since > self.until:
            raise FilterError("since", "is after until", "give since on or before until")
        object.__setattr__(self, "source_types", _source_types(self.source_types))


def _count(name: str, value: object, *, least: int, fix: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FilterError(name, "is not a whole number", fix)
    if value < least:
        raise FilterError(name, f"is below {least}", fix)


def _day(name: str, value: object) -> None:
    if value is None:
        return
    if isinstance(value, datetime) or not isinstance(value, date):
        raise FilterError(name, "is not a day", "give a datetime.date (date.fromisoformat('YYYY-MM-DD'))")


def _source_types(value: Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise FilterError("source_types", "is one text, not a list", "give a list of source types")
    kept = tuple(value)
    for i, kind in enumerate(kept):
        if kind not in SOURCE_TYPES:
            raise FilterError(
                f"source_types[{i}]", "is not a source type", f"give one of {', '.join(SOURCE_TYPES)}"
            )
    return kept or None
