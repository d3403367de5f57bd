"""``SearchFilters``: one value, checked when built, each error naming the field and the fix."""

from datetime import date, datetime

import pytest

from memory_assets.core.search.filters import FilterError, SearchFilters


def test_the_defaults_and_the_source_types_kept_as_a_tuple() -> None:
    plain = SearchFilters()
    assert (plain.limit, plain.source_types, plain.since, plain.until, plain.context, plain.today) == (
        10,
        None,
        None,
        None,
        0,
        None,
    )
    listed = SearchFilters(source_types=["notebook", "legacy_direct"])
    assert listed.source_types == ("notebook", "legacy_direct")
    assert listed == SearchFilters(source_types=("notebook", "legacy_direct"))
    assert hash(listed) == hash(SearchFilters(source_types=("notebook", "legacy_direct")))
    assert SearchFilters(source_types=[]).source_types is None  # an empty list filters nothing
    one_day = SearchFilters(since=date(2026, 11, 10), until=date(2026, 11, 10))
    assert one_day.since == one_day.until
    with pytest.raises(AttributeError):
        plain.limit = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "field", "named"),
    [
        ({"limit": 0}, "limit", "limit is below 1; ask for 1 hit or more"),
        ({"limit": True}, "limit", "limit is not a whole number"),
        ({"limit": 2.5}, "limit", "limit is not a whole number"),
        ({"context": -1}, "context", "context is below 0; give 0"),
        (
            {"since": date(2026, 12, 6), "until": date(2026, 12, 1)},
            "since",
            "since is after until; give since on or before until",
        ),
        ({"since": "2026-12-06"}, "since", "since is not a day; give a datetime.date"),
        ({"today": datetime(2026, 12, 6, 9)}, "today", "today is not a day"),
        ({"source_types": "notebook"}, "source_types", "source_types is one text, not a list"),
        (
            {"source_types": ["notebook", "email"]},
            "source_types[1]",
            "source_types[1] is not a source type; give one of archive_log, notebook, core_file, "
            "transcript, legacy_direct",
        ),
    ],
)
def test_a_wrong_filter_names_its_field_and_the_fix_never_the_value(
    given: dict[str, object], field: str, named: str
) -> None:
    with pytest.raises(FilterError) as raised:
        SearchFilters(**given)  # type: ignore[arg-type]
    assert raised.value.field == field and named in str(raised.value)
    assert isinstance(raised.value, ValueError)
    assert "email" not in raised.value.problem and "2026-12-06" not in str(raised.value)
