"""The index's read model of the best facts: the kept candidates follow every commit exactly, the
recent windows pick what the whole table picks, and the plain-Python pick is polars' pick."""

import json
import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa
import pytest

from memory_assets.core.index import best_facts
from memory_assets.core.index.best_facts import _COLUMNS, CANDIDATES_STATE, _best_rows, _fact_where
from memory_assets.core.index.rows import IndexRow
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.index.table_writer import TableWriter
from memory_assets.core.settings import Settings
from memory_assets.core.text import normalise


def test_the_candidates_follow_adds_and_deletes_exactly(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random adds and deletes (kept rows among them) of rows of every importance (some missing),
    dated in and out of the recent windows (some only by their source date or creation), with
    repeats differing in case and spacing, and tombstones: after each commit the kept candidates
    equal the whole table's best, and so do the recent windows' reads."""
    rng = random.Random(3)
    today = datetime.now(UTC).date()
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    scans: list[int] = []
    real_scan = best_facts._scan_candidates
    monkeypatch.setattr(
        best_facts, "_scan_candidates", lambda s, *a: scans.append(s is store) or real_scan(s, *a)
    )
    table = TableWriter(store).table_for_write("test-model", 4)
    state = settings.state_dir / CANDIDATES_STATE
    words = ["tea", "coffee", "bees", "Lisbon", "Porto", "marathon", "Volvo", "piano"]

    def row(n: int) -> tuple[IndexRow, datetime]:
        day = (today - timedelta(days=rng.choice([0, 3, 20, 40, 200, 400, 900]))).isoformat()
        text = f"Likes {rng.choice(words)} and {rng.choice(words)}"
        text = rng.choice([text, text.upper(), text.replace(" ", "  "), f" {text.lower()} "])
        fact_date = rng.choice([day, day, day, None])
        source_date = rng.choice([day, None]) if fact_date is None else day
        return IndexRow(
            id=f"r{n}",
            content=text,
            source_type=rng.choice(["archive_log", "archive_log", "legacy_direct", "notebook"]),
            source_file=f"{day}.md",
            chunk_index=n,
            category=rng.choice(["preference", "personal", "goal"]),
            importance=rng.choice([0.3, 0.5, 0.5, 0.5, 0.7, 0.9]),
            source_date=source_date,
            fact_date=fact_date,
            metadata="{}",
        ), datetime.combine(today - timedelta(days=rng.choice([1, 50, 500])), datetime.min.time())

    first = [row(n) for n in range(60)]
    TableWriter(store).apply_diff(
        table, [], [r for r, _ in first], np.zeros((60, 4), np.float32), [c for _, c in first]
    )
    nulls = [row(100 + n) for n in range(8)]  # rows whose importance is missing (an old writer's)
    missing = TableWriter(store)._arrow(
        table, [r for r, _ in nulls], np.zeros((8, 4), np.float32), [c for _, c in nulls]
    )
    column = missing.schema.get_field_index("importance")
    missing = missing.set_column(column, missing.schema.field(column), pa.nulls(8, pa.float64()))
    store.table().add(missing)  # not through apply_diff: the first read scans
    next_id = 60
    tombstoned: frozenset[str] = frozenset()
    expected_scans = 0
    for step in range(30):
        kept = {r["id"] for r in json.loads(state.read_text())["rows"]} if state.exists() else set()
        ids = store.scan(["id"]).column("id").to_pylist()
        gone = rng.sample(ids, 1) + ([rng.choice(sorted(kept))] if kept and step % 5 == 4 else [])
        adds = [row(next_id + k) for k in range(rng.randint(0, 4))]
        next_id += len(adds)
        TableWriter(store).apply_diff(
            store.table(),
            gone,
            [r for r, _ in adds],
            np.zeros((len(adds), 4), np.float32),
            [c for _, c in adds],
        )
        renewed = step % 8 == 7
        if renewed:
            tombstoned = frozenset(normalise(f"Likes {w} and {rng.choice(words)}") for w in words[:3])
        # The table is read only without kept candidates, with new tombstones or when a kept row went.
        expected_scans += step == 0 or renewed or bool(kept & set(gone))
        for lines in (12, 5):
            got = best_facts.read_user_facts(store, tombstoned, candidates=lines, state_path=state)
            fresh = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
            whole = _best_rows(fresh.scan(_COLUMNS, where=_fact_where(fresh.user_id)), tombstoned, lines)
            assert [(f.content, f.category, f.importance, f.day) for f in got] == [
                (f.content, f.category, f.importance, f.day)
                for f in best_facts.read_user_facts(fresh, tombstoned, lines)
            ]
            assert best_facts._scan_candidates(fresh, tombstoned, lines).to_pylist() == whole.to_pylist()
            assert [
                r["id"] for r in best_facts._best_candidates(store, tombstoned, lines, state)
            ] == whole.column("id").to_pylist()
        assert sum(scans) == expected_scans, step
    assert expected_scans < 15  # most refreshes brought the candidates forward


def test_the_recent_windows_pick_what_the_whole_table_picks(settings: Settings) -> None:
    """Rows dated only by their source date or their creation, or without an importance, rank by
    those: the first window's read must hold them when they outrank the window's dated rows."""
    today = datetime.now(UTC).date()
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    table = TableWriter(store).table_for_write("test-model", 4)

    def row(
        n: int, text: str, days: int | None, importance: float = 0.5, source: int | None = None
    ) -> IndexRow:
        day = None if days is None else (today - timedelta(days=days)).isoformat()
        src = day if source is None else (today - timedelta(days=source)).isoformat()
        return IndexRow(f"w{n}", text, "archive_log", "x.md", n, "general", importance, src, day, "{}")

    rows = [row(0, "Old but important", 400, 0.9), row(1, "Older and important", 500, 0.8)]
    rows += [row(10 + n, f"Dated fact {n}", 10 + n) for n in range(12)]  # the first window's dated rows
    rows += [
        row(2, "Dated by its source only", None, source=2),
        row(3, "No importance recorded", 1),
        row(5, "An old dated fact", 400),
    ]
    created = [None] * len(rows)
    rows.append(
        IndexRow(
            "w4", "Dated by its creation only", "archive_log", "x.md", 4, "general", 0.5, None, None, "{}"
        )
    )
    created.append(datetime.combine(today - timedelta(days=3), datetime.min.time()))
    TableWriter(store).apply_diff(table, [], rows, np.zeros((len(rows), 4), np.float32), created)
    table.update(where="id = 'w3'", values={"importance": None})
    whole = _best_rows(store.scan(_COLUMNS, where=_fact_where(store.user_id)), frozenset(), 12)
    picked = whole.column("content").to_pylist()
    assert picked[:5] == [
        "Old but important",
        "Older and important",
        "No importance recorded",
        "Dated by its source only",
        "Dated by its creation only",
    ]
    assert best_facts._scan_candidates(store, frozenset(), 12).to_pylist() == whole.to_pylist()


# -- the plain-Python pick: polars' rows, in polars' order ------------------------------------------
def random_rows(rng: random.Random, n: int, plain_only: bool = False) -> pa.Table:
    """Rows shaped like the candidates, built to collide: few texts differing in case and
    whitespace (ASCII and Unicode, and \x1c-\x1f that only Python calls whitespace), with
    accents, ß and final sigmas, empty and missing contents, ties on importance and day, missing
    importances, dates and creation times (before 1970 too). ``plain_only``: only texts whose
    derived columns Python computes itself (up to U+017F, no İ)."""
    from memory_assets.core.index.best_facts import _candidates_schema

    words = ["tea", "Tea", "TEA", "bees", "b-e-e-s", "Lisbon", "porto", "a.b", "z", "Z"]
    words += ["Éclair", "éclair", "straße", "STRASSE", "Tomás", "TOMÁS", "Łódź", "ŁÓDŹ", "ÿ", "Ÿ"]
    spaces = [" ", "  ", "\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1f", " \r\n ", "\u00a0", "\u0085"]
    days = ["2026-11-20", "2026-11-21", "2026-11-21T08:00", "2025-01-01", "2025-ü1-01x", "", None]
    if not plain_only:
        words += ["ΣΟΦΟΣ", "σοφος", "İstanbul", "ǅ", "ﬁne"]
        spaces += ["\u2003"]
    stamps = [None, datetime(2026, 11, 20, 7), datetime(2026, 11, 21, 23, 59), datetime(1969, 12, 31, 23)]

    def text() -> str | None:
        pick = rng.random()
        if pick < 0.04:
            return None
        if pick < 0.08:
            return rng.choice(["", " ", "\t\n", "\xa0"] if plain_only else ["", " ", "\t\n", "\u2003"])
        parts = [rng.choice(words) for _ in range(rng.randint(1, 3))]
        out = rng.choice(["", *spaces])
        for part in parts:
            out += part + rng.choice(spaces)
        return out if rng.random() < 0.5 else out.strip()

    return pa.table(
        {
            "id": [rng.choice([f"r{k}", None]) if rng.random() < 0.05 else f"r{k}" for k in range(n)],
            "content": [text() for _ in range(n)],
            "importance": [rng.choice([None, 0.3, 0.5, 0.5, 0.7, 0.9, 1.0]) for _ in range(n)],
            "category": [rng.choice(["general", "personal", "goal", "Ziel", None]) for _ in range(n)],
            "fact_date": [rng.choice(days) for _ in range(n)],
            "source_date": [rng.choice(days) for _ in range(n)],
            "created_at": [rng.choice(stamps) for _ in range(n)],
        },
        schema=_candidates_schema(),
    )


def test_the_plain_pick_is_the_polars_pick() -> None:
    """The merge's plain-Python pick returns exactly ``_best_rows``'s rows, in its order, on
    random rows built to tie and collide; what it cannot prove the same goes to polars."""
    from memory_assets.core.index.best_facts import _best_rows_plain, _merge_best

    rng = random.Random(11)
    for trial in range(300):
        data = random_rows(rng, rng.randint(0, 60), plain_only=trial % 2 == 1)
        if trial % 3 == 0:  # a creation time with a time zone
            column = data.schema.get_field_index("created_at")
            data = data.set_column(column, "created_at", data.column(column).cast(pa.timestamp("us", "UTC")))
        norms = [normalise(t) for t in data.column("content").to_pylist() if t and rng.random() < 0.2]
        tombstoned = frozenset(norms[:3])
        for candidates in (1, 5, 50):
            plain = _best_rows_plain(data, tombstoned, candidates)
            assert plain is not None, trial
            whole = _best_rows(data, tombstoned, candidates)
            assert plain.schema == whole.schema and plain.to_pylist() == whole.to_pylist(), (
                trial,
                candidates,
            )
    base = random_rows(random.Random(6), 5)
    weights = base.schema.get_field_index("importance")
    for value in (float("nan"), 0.0):  # float orders left to polars
        odd = base.set_column(weights, "importance", pa.array([value, 0.5, 0.5, 0.7, None], pa.float64()))
        assert _best_rows_plain(odd, frozenset(), 3) is None
        merged, whole = _merge_best(odd, frozenset(), 3), _best_rows(odd, frozenset(), 3)
        assert merged.column("id").to_pylist() == whole.column("id").to_pylist()  # (NaN != NaN)


def test_the_derived_columns_in_python_are_polars_values_or_left_to_polars() -> None:
    """``_derived_plain`` computes the ranking's derived columns in Python only where it can prove
    them polars' (``_rank_columns``): every character it accepts, alone, doubled, cased and
    between spaces, and random rows of them, give polars' values; anything else (a Greek or
    Turkish capital, a ligature, a creation time in another zone) is left to polars."""
    import polars as pl

    from memory_assets.core.index.best_facts import _derived_plain, _rank_columns

    def same(data: pa.Table) -> bool:
        plain = _derived_plain(data)
        frame = pl.from_arrow(data).select(_rank_columns())
        return plain == tuple(frame[c].to_list() for c in ("_norm", "_day", "_importance"))

    template = random_rows(random.Random(6), 1, plain_only=True)
    chars = [chr(c) for c in range(0x180) if c != 0x130]
    upper = {c: c.upper() if all(u in chars for u in c.upper()) else "X" for c in chars}  # µ -> Greek Μ
    texts = [t for c in chars for t in (c, c + c, f" {c}X{c}\t", f"{c}\xa0{upper[c]}\x85")]
    column = template.schema.get_field_index("content")
    rows = pa.concat_tables([template] * len(texts))
    assert same(rows.set_column(column, "content", pa.array(texts, pa.string())))
    rng = random.Random(5)
    for trial in range(200):
        data = random_rows(rng, rng.randint(0, 40), plain_only=True)
        assert _derived_plain(data) is not None and same(data), trial
    for text in ("ΣΟΦΟΣ", "İstanbul", "ǅ", "ﬁne", "a\u2003b", "µ Μ"):
        assert _derived_plain(template.set_column(column, "content", pa.array([text]))) is None
    column = template.schema.get_field_index("created_at")
    lisbon = template.column(column).cast(pa.timestamp("us", "Europe/Lisbon"))
    assert _derived_plain(template.set_column(column, "created_at", lisbon)) is None


def test_a_turn_is_never_a_candidate(settings: Settings) -> None:
    """What was said (a transcript row) is found by search but never listed as a fact, however
    important or recent: MEMORY.md's zone holds claims only."""
    store = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    today = datetime.now(UTC).date().isoformat()

    def row(n: int, source_type: str, text: str, importance: float) -> IndexRow:
        return IndexRow(
            id=f"r{n}",
            content=text,
            source_type=source_type,
            source_file=f"{today}.md" if source_type == "archive_log" else "captured/c.jsonl",
            chunk_index=n,
            category="personal" if source_type == "archive_log" else "transcript",
            importance=importance,
            source_date=today,
            fact_date=today,
            metadata="{}",
        )

    rows = [
        row(0, "archive_log", "Is allergic to peanuts.", 0.5),
        row(1, "transcript", "The smell of pine after the rain is what stuck with me.", 0.9),
    ]
    created = [datetime.now(UTC)] * 2
    TableWriter(store).apply_diff(
        TableWriter(store).table_for_write("test-model", 4), [], rows, np.zeros((2, 4), np.float32), created
    )
    state = settings.state_dir / CANDIDATES_STATE
    for _ in range(2):  # the table's read, then the kept candidates'
        got = best_facts.read_user_facts(store, candidates=5, state_path=state)
        assert [f.content for f in got] == ["Is allergic to peanuts."]
