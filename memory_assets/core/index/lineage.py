"""Lineage, both ways: where a memory came from, and what was made of what was said (design
§5.5, §5.9; the spec's §10). The one place the chain is named; every face reads it.

The chain, oldest first::

    a turn (transcripts/<rel>.jsonl, byte offset)
      -> the daily-log lines extracted from it (memory/archive/YYYY-MM-DD.md, line)
        -> the vault lines folded from them (notebook/<page>, line)
          -> MEMORY.md's generated lines made from those claims (memory/MEMORY.md, line)

Each link and how it is made:

* **turn -> log line**: the marks a log block carries (its day, ``HH:MM`` and chat) and the turn's
  time and chat give the same marks; of the turns with a line's marks, the one it shares most
  content words with is its turn, none when it shares none (``forgotten_turns.turn_of``, the rule
  forgetting and search use too). A fact given directly (``remember``, ``add_memory``) has no turn.
* **log line -> vault line**: the fold ledger (``.state/folds.jsonl``, ``knowledge/folds.py``)
  names the page each folded line went to; within that page, the lines that hold the line's fact
  are the ones ``PageIndex.holder`` finds (``knowledge/page_index.py``: verbatim, or a claim that
  confirms it; a superseded value lives on in a ``previously:`` line) and every line of the page
  with the same claim. A line folded before the ledger existed names no page: backwards it is not
  found, forwards every page of the vault is asked.
* **vault line -> MEMORY.md line**: the dream's promoter writes a claim of a ``3_Personal/`` page
  as a bullet without its markers: a generated line is made from the claims that read the same.
  The per-turn writer (before any personal page) lists the index's best fact rows, kept in
  ``.state/memory_md_candidates.json``: a generated line is made from the candidate of the same
  text, and that row's log line. A line of the manual zone is a person's own.

**Backwards** (``trace_id``, ``trace_ids``, ``trace_row``): a row of the index gives a ``Lineage``:

* a daily-log fact row: its log line (``log_lines``) and that line's turn;
* a vault chunk: the lines of the chunk that hold folded log lines (``bullets``), each with its
  log lines and their turns;
* a transcript row: its turn (``turns``);
* a ``MEMORY.md`` chunk: its zone (``zone``): who writes it, and for each generated line the
  claims or fact lines it was made from, back to their turns;
* ``persona.md``, ``user.md`` and an assistant-era (legacy) row: no file before them (``notes``).

What is served hides what a person forgot: a log line a tombstone hides, or a turn one hides, is
left out of a backwards lineage, and ``notes`` counts them (never their text). ``notes`` also says
where the chain stops and why (a line changed since it was indexed, a page the ledger does not
know, a fact with no turn).

**Forwards** (``trace_log_lines``, ``trace_page_lines``, ``log_lines_of_turn``), for erasure:
given log lines, the vault lines folded from them and the turns they were extracted from; given
lines of a page, the log lines folded into them; given a turn, the log lines extracted from it.
A folded line whose page no longer holds it is looked for in the whole vault (the named page
first), as ``PageIndex.holder`` finds it. Nothing is hidden forwards: an erase reaches forgotten
text too.

Costs: a row is read by its id (never a scan of the table); then the files its chain names: the
row's own file, the ledger, the logs that hold lines folded into the row's page, and the
transcripts that can hold the turns of those lines' chats (by file name: a transcript is named by
its chat, ``captured/chat-*.jsonl`` holds the chats no file name can carry). Each file is read
once per call. Reads only; an unreadable file ends its branch of the chain with a note.

Every result is a frozen dataclass with ``to_dict()``. Paths: a log by its file name under
``memory/archive/``, a page by its path in the vault, a transcript by its path under
``transcripts/``; line numbers are 1-based.
"""

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

from memory_assets.core.capture.daily_log import LogFact, block_chat, log_date, read_daily_log
from memory_assets.core.capture.transcripts import CAPTURED, list_transcripts, read_turns
from memory_assets.core.index.forgotten_turns import DayFact, Marks, SaidTurn, by_marks, turn_of
from memory_assets.core.index.store import MemoryStore, id_in, quote
from memory_assets.core.knowledge.chunking import (
    FRONTMATTER_CLOSE,
    FRONTMATTER_START,
    GENERATED_CLOSE,
    GENERATED_OPEN,
    chunk_claims,
    chunk_paragraphs,
    parse_page,
)
from memory_assets.core.knowledge.folds import FOLDED, FoldLedgerError, Folds, load_folds
from memory_assets.core.knowledge.memory_md import MAX_FACT_CHARS, read_zones
from memory_assets.core.knowledge.page_index import PageIndex, clean_line
from memory_assets.core.knowledge.personal_pages import is_personal, list_personal_pages
from memory_assets.core.knowledge.tombstones import Tombstones, read_tombstones
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.knowledge.watermark import WatermarkError
from memory_assets.core.settings import Settings
from memory_assets.core.sources import ARCHIVE, CORE_FILE, LEGACY_SOURCE_TYPE, NOTEBOOK, TRANSCRIPT
from memory_assets.core.text import json_object, normalise
from memory_assets.core.textfile import read_text

# Who writes MEMORY.md's zones. The first two are the generators' own names
# (``write_path/memory_md_refresh.REFRESH_GENERATOR``, ``dream/promote.PROMOTE_GENERATOR``: runners,
# a floor above this one; a test keeps them equal).
PROMOTER = "promote_memory_md"
REFRESHER = "refresh_from_index"
OLD_GENERATOR = "the assistant's old MEMORY.md generator"
PERSON = "a person"
CANDIDATES_FILE = "memory_md_candidates.json"  # index/best_facts.CANDIDATES_STATE
ROW_COLUMNS = ["id", "content", "source_type", "source_file", "chunk_index", "metadata"]
LEGACY_ROW_COLUMNS = ["id", "content", "metadata"]


class LineageError(ValueError):
    """A forward question about a line that is not there; the message names it and the fix."""


@dataclass(frozen=True)
class TurnSource:
    """A turn as it was said: the user's line of a transcript."""

    transcript: str  # its path under transcripts/
    offset: int  # byte offset of the user's line: the turn's identity in its file
    line: int  # line number of the user's line
    chat: str
    at: str | None  # when it was said (ISO, UTC)
    said: str  # the user's words

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LogLineSource:
    """A fact line of a daily log, with where the fold ledger says it went and the turn it came from."""

    file: str  # YYYY-MM-DD.md, under memory/archive/
    line: int
    text: str  # the fact, as the line states it
    category: str
    time: str | None  # the block's HH:MM (UTC)
    chat: str | None  # the chat as the block header carries it
    fold: str  # pending | left | folded (knowledge/folds.py)
    page: str | None  # the page the ledger says it was folded into (None: not folded, or before the ledger)
    turns: tuple[TurnSource, ...] = ()  # the turn it was extracted from (none: given directly, or not kept)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PageLine:
    """One line of a vault page."""

    page: str  # the page's path in the vault
    line: int
    text: str  # the line as the page has it

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BulletSource(PageLine):
    """A line of a vault page and the log lines folded into it."""

    log_lines: tuple[LogLineSource, ...] = ()


@dataclass(frozen=True)
class ZoneLine:
    """A line of MEMORY.md, and what it was made from (generated lines, where that is derivable)."""

    line: int
    text: str
    claims: tuple[BulletSource, ...] = ()  # the vault claims the promoter made it from
    facts: tuple[LogLineSource, ...] = ()  # the log lines of the fact row the per-turn writer listed
    rows: tuple[str, ...] = ()  # ids of the candidate rows it was listed from (per-turn writer)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ZoneSource:
    """A MEMORY.md chunk's zone: who writes it, and its lines."""

    zone: str  # generated | manual
    written_by: str  # PROMOTER | REFRESHER | OLD_GENERATOR | PERSON
    verified_by: tuple[str, ...] = ()  # the manual zone's human stamps, "human:<id> at <ts>"
    lines: tuple[ZoneLine, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Lineage:
    """Where one row of the index came from (see the module docstring)."""

    id: str | None
    source_type: str
    source_file: str | None
    content: str
    log_lines: tuple[LogLineSource, ...] = ()  # a daily-log fact row: its line
    bullets: tuple[BulletSource, ...] = ()  # a vault chunk: its lines that hold folded log lines
    turns: tuple[TurnSource, ...] = ()  # a transcript row: its turn
    zone: ZoneSource | None = None  # a MEMORY.md chunk
    notes: tuple[str, ...] = ()  # where the chain stops, and why

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def turns_back(self) -> list[TurnSource]:
        """Every turn the chain reaches, once each, in the order found."""
        found: dict[tuple[str, int], TurnSource] = {}
        lines = [
            *self.log_lines,
            *(ll for b in self.bullets for ll in b.log_lines),
            *(ll for z in (self.zone.lines if self.zone else ()) for ll in z.facts),
            *(ll for z in (self.zone.lines if self.zone else ()) for b in z.claims for ll in b.log_lines),
        ]
        for t in [*self.turns, *(t for ll in lines for t in ll.turns)]:
            found.setdefault((t.transcript, t.offset), t)
        return list(found.values())


@dataclass(frozen=True)
class LogLineTrace:
    """Forwards from one log line: the line (with the turns it was extracted from) and the vault
    lines folded from it."""

    log_line: LogLineSource
    bullets: tuple[PageLine, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- the public API --------------------------------------------------------------------------------
def trace_ids(store: MemoryStore, settings: Settings, ids: Sequence[str]) -> dict[str, Lineage]:
    """The lineage of each row with one of ``ids`` (read by id); an id no row has is not in the result."""
    ids = list(dict.fromkeys(ids))
    if not ids or not store.exists():
        return {}
    legacy = store.is_legacy()
    columns = LEGACY_ROW_COLUMNS if legacy else ROW_COLUMNS
    where = id_in(ids) if legacy else f"user_id = {quote(store.user_id)} AND {id_in(ids)}"
    rows = store.scan(columns, where=where).to_pylist()
    tracer = _Tracer(settings, hide_forgotten=True)
    out: dict[str, Lineage] = {}
    for row in rows:
        out.setdefault(row["id"], tracer.row(row))
    return out


def trace_id(store: MemoryStore, settings: Settings, row_id: str) -> Lineage | None:
    """The lineage of the row with this id; None when no row has it."""
    return trace_ids(store, settings, [row_id]).get(row_id)


def trace_row(settings: Settings, row: Mapping[str, Any]) -> Lineage:
    """The lineage of a row already read (``id``, ``content``, ``source_type``, ``source_file``,
    ``chunk_index``, ``metadata``)."""
    return _Tracer(settings, hide_forgotten=True).row(row)


def trace_log_lines(settings: Settings, lines: Iterable[tuple[str, int]]) -> list[LogLineTrace]:
    """Forwards from daily-log lines, each ``(file, line)`` (``2026-07-01.md``, 12): each line with
    the turns it was extracted from and the vault lines folded from it, in the order given.
    ``LineageError`` for a file that is not a daily log or a line that is not a fact line."""
    tracer = _Tracer(settings, hide_forgotten=False)
    return [tracer.forward(file, number) for file, number in dict.fromkeys(lines)]


def trace_page_lines(settings: Settings, page: str, lines: Iterable[int]) -> list[BulletSource]:
    """The log lines the fold ledger says were folded into these lines of ``page`` (its path in
    the vault), each line with them (none: a line no folded log line is held by), in line order;
    each log line with the turn it was extracted from. ``LineageError`` for a page that is not the
    vault's or a line it does not have."""
    return _Tracer(settings, hide_forgotten=False).page_lines(page, lines)


def log_lines_of_turn(settings: Settings, transcript: str, offset: int) -> list[LogLineSource]:
    """The log lines extracted from the turn at ``offset`` of ``transcript`` (its path under
    ``transcripts/``). ``LineageError`` when no turn starts there."""
    tracer = _Tracer(settings, hide_forgotten=False)
    if transcript not in {rel for rel, _ in tracer.transcripts()}:
        raise LineageError(
            f"transcripts/{transcript}: no such transcript; give its path under transcripts/ as a "
            "lineage names it (turns[].transcript, e.g. captured/<chat>.jsonl)"
        )
    turn = tracer.turn_at(transcript, offset=offset)
    if turn is None:
        raise LineageError(
            f"transcripts/{transcript}: no turn starts at byte {offset}; give the offset of a user "
            "line as a lineage names it (turns[].offset)"
        )
    return tracer.lines_of_turn(turn)


# -- the work --------------------------------------------------------------------------------------
@dataclass
class _Tracer:
    """One call's reads: every file is read once, whatever the chain asks of it."""

    settings: Settings
    hide_forgotten: bool
    notes: list[str] = field(default_factory=list)
    hidden: set[tuple[str, object]] = field(default_factory=set)  # what a person forgot, met by this row
    _tombs: Tombstones | None = None
    _folds: Folds | None = None
    _logs: dict[str, dict[int, LogFact] | None] = field(default_factory=dict)
    _files: list[tuple[str, Path]] | None = None
    _transcripts: dict[str, list[SaidTurn] | None] = field(default_factory=dict)
    _marked: dict[Marks, dict[Marks, list[SaidTurn]]] = field(default_factory=dict)
    _pages: dict[str, str | None] = field(default_factory=dict)
    _indexes: dict[str, PageIndex] = field(default_factory=dict)
    _holding: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    _named: dict[str, list[tuple[str, int]]] | None = None  # page -> the log lines folded into it
    _sources: dict[tuple[str, int], LogLineSource] = field(default_factory=dict)
    _vault: PageIndex | None = None

    # -- files, each read once -----------------------------------------------------------------
    @property
    def tombs(self) -> Tombstones:
        if self._tombs is None:
            self._tombs = read_tombstones(self.settings.tombstones_path)
        return self._tombs

    @property
    def folds(self) -> Folds:
        if self._folds is None:
            try:
                self._folds = load_folds(self.settings)
            except (WatermarkError, FoldLedgerError, OSError) as exc:
                self.notes.append(f"the fold ledger cannot be read ({exc}): no log line is traced to a page")
                self._folds = Folds()
        return self._folds

    def log(self, file: str) -> dict[int, LogFact] | None:
        """A daily log's fact lines by number; None when it is not there or cannot be read."""
        if file not in self._logs:
            path = self.settings.archive_dir / file
            try:
                facts = read_daily_log(path, f"archive/{file}").facts if path.is_file() else None
            except OSError:
                facts = None
            self._logs[file] = {f.line: f for f in facts} if facts is not None else None
        return self._logs[file]

    def page(self, rel: str) -> str | None:
        if rel not in self._pages:
            try:
                self._pages[rel] = read_text(self.settings.notebook_dir / rel).text
            except OSError:
                self._pages[rel] = None
        return self._pages[rel]

    def transcripts(self) -> list[tuple[str, Path]]:
        if self._files is None:
            self._files = list_transcripts(self.settings.transcripts_dir)
        return self._files

    def turns_in(self, rel: str) -> list[SaidTurn]:
        if rel not in self._transcripts:
            try:
                read = read_turns(self.settings.transcripts_dir / rel, cap=None)
                self._transcripts[rel] = [SaidTurn(rel, t) for t in read.turns if t.user.strip()]
            except OSError:
                self._transcripts[rel] = None
                self.notes.append(f"transcripts/{rel} cannot be read: its turns are not traced")
        return self._transcripts[rel] or []

    def turns_marked(self, marks: Marks) -> dict[Marks, list[SaidTurn]]:
        """The turns with ``marks``, from the transcripts whose name can carry its chat (a chat's
        own file, an assistant's session of that name, or a ``captured/chat-*`` file)."""
        if marks not in self._marked:
            found: list[SaidTurn] = []
            for rel, path in self.transcripts():
                if block_chat(path.stem) == marks[2] or rel.startswith(f"{CAPTURED}/chat-"):
                    found += [t for t in self.turns_in(rel) if t.marks == marks]
            self._marked[marks] = by_marks(found)
        return self._marked[marks]

    def turn_at(self, rel: str, *, offset: int | None = None, line: int | None = None) -> SaidTurn | None:
        for t in self.turns_in(rel):
            if t.turn.offset == offset or t.turn.line == line:
                return t
        return None

    # -- links ---------------------------------------------------------------------------------
    def turn_source(self, said: SaidTurn) -> TurnSource | None:
        """The turn as a lineage shows it; None (counted) when a person forgot it."""
        if self.hide_forgotten and self.tombs.hides_turn(said.turn.user):
            self.hidden.add((said.rel, said.turn.offset))
            return None
        at = said.turn.at
        return TurnSource(
            transcript=said.rel,
            offset=said.turn.offset,
            line=said.turn.line,
            chat=said.turn.chat_id,
            at=at.astimezone(UTC).isoformat(timespec="seconds") if at else None,
            said=said.turn.user,
        )

    def turn_of_line(self, file: str, fact: LogFact) -> SaidTurn | None:
        if not (fact.time and fact.chat):
            return None
        day = file.removesuffix(".md")
        return turn_of(DayFact(day, fact), self.turns_marked((day, fact.time, fact.chat)))

    def log_line(self, file: str, fact: LogFact) -> LogLineSource | None:
        """The log line with its fold state and its turn; None (counted) when a person forgot it."""
        if self.hide_forgotten and self.tombs.by_person(fact.content):
            self.hidden.add((file, fact.line))
            return None
        key = (file, fact.line)
        if key not in self._sources:
            state = self.folds.of(file).state(fact.line)
            said = self.turn_of_line(file, fact)
            turn = self.turn_source(said) if said is not None else None
            self._sources[key] = LogLineSource(
                file=file,
                line=fact.line,
                text=fact.content,
                category=fact.category,
                time=fact.time,
                chat=fact.chat,
                fold=state.kind,
                page=state.page,
                turns=(turn,) if turn is not None else (),
            )
        elif said := (self.turn_of_line(file, fact) if self.hide_forgotten else None):
            self.turn_source(said)  # a forgotten turn is counted for this row too
        return self._sources[key]

    def served(self, where: str, lines: list[str], span: set[int]) -> set[int]:
        """``span`` without the lines a person's forgetting hides (``Tombstones.line_hidden``): a
        chunk row is served without them, so its lineage never names them."""
        if not self.hide_forgotten:
            return span
        hidden = {n for n in span if self.tombs.line_hidden(lines[n - 1])}
        self.hidden |= {(where, n) for n in hidden}
        return span - hidden

    def holding_lines(self, rel: str, text: str) -> list[int]:
        """The lines of page ``rel`` that hold the fact ``text`` (see the module docstring)."""
        key = (rel, text)
        if key not in self._holding:
            page = self.page(rel)
            found: list[int] = []
            if page is not None:
                if rel not in self._indexes:
                    self._indexes[rel] = PageIndex({rel: page})
                holding = self._indexes[rel].holder(text)
                if holding is not None:
                    lines = page.splitlines()
                    want = normalise(holding.line)
                    found = [n for n, raw in enumerate(lines, 1) if normalise(clean_line(raw)) == want]
                    if not found:  # held inside a longer line
                        found = [n for n, raw in enumerate(lines, 1) if want and want in normalise(raw)][:1]
            self._holding[key] = found
        return self._holding[key]

    def named(self, rel: str) -> list[tuple[str, int]]:
        """The log lines (file, line) the ledger says were folded into page ``rel``."""
        if self._named is None:
            self._named = {}
            for file, state in sorted(self.folds.files.items()):
                for n, s in sorted(state.lines.items()):
                    if s.kind == FOLDED and s.page:
                        self._named.setdefault(s.page, []).append((file, n))
        return self._named.get(rel, [])

    def lines_of_turn(self, said: SaidTurn) -> list[LogLineSource]:
        """The log lines whose turn is ``said``."""
        marks = said.marks
        if marks is None:
            return []
        file = f"{marks[0]}.md"
        out = []
        for fact in (self.log(file) or {}).values():
            if (fact.time, fact.chat) != marks[1:]:
                continue
            best = self.turn_of_line(file, fact)
            if best is not None and (best.rel, best.turn.offset) == (said.rel, said.turn.offset):
                source = self.log_line(file, fact)
                if source is not None:
                    out.append(source)
        return out

    # -- forwards ------------------------------------------------------------------------------
    def forward(self, file: str, number: int) -> LogLineTrace:
        if "/" in file or log_date(Path(file)) is None:
            raise LineageError(f"{file!r} is not a daily log's name; give it as YYYY-MM-DD.md")
        log = self.log(file)
        if log is None:
            raise LineageError(f"memory/archive/{file}: no such log, or it cannot be read")
        fact = log.get(number)
        if fact is None:
            raise LineageError(
                f"memory/archive/{file} line {number}: not a fact line; give the number of a "
                "'- [category] content' line"
            )
        source = self.log_line(file, fact)
        assert source is not None  # forwards hides nothing
        bullets: list[PageLine] = []
        if source.fold == FOLDED:
            rel = source.page if source.page and self.holding_lines(source.page, fact.content) else None
            if rel is None:  # no page named (folded before the ledger), or the claim moved since
                holding = self.vault_index().holder(fact.content, prefer=[source.page] if source.page else [])
                rel = holding.page if holding is not None else None
            if rel is not None:
                lines = (self.page(rel) or "").splitlines()
                bullets = [PageLine(rel, n, lines[n - 1]) for n in self.holding_lines(rel, fact.content)]
        return LogLineTrace(source, tuple(bullets))

    def page_lines(self, rel: str, numbers: Iterable[int]) -> list[BulletSource]:
        if rel not in list_pages(self.settings.notebook_dir):
            raise LineageError(
                f"notebook/{rel}: no such page; give a page's path in the vault as a lineage names it "
                "(bullets[].page, e.g. 3_Personal/Preferences.md)"
            )
        lines = (self.page(rel) or "").splitlines()
        wanted = sorted(set(numbers))
        for n in wanted:
            if not 1 <= n <= len(lines) or not lines[n - 1].strip():
                raise LineageError(f"notebook/{rel} line {n}: no such line, or a blank one")
        held = {b.line: b for b in self.bullets_of(rel, set(wanted))}
        return [held.get(n) or BulletSource(rel, n, lines[n - 1]) for n in wanted]

    def vault_index(self) -> PageIndex:
        """Every page of the vault, for a folded line whose page the ledger does not name."""
        if self._vault is None:
            rels = list_pages(self.settings.notebook_dir)
            self._vault = PageIndex({rel: text for rel in rels if (text := self.page(rel)) is not None})
        return self._vault

    # -- backwards -----------------------------------------------------------------------------
    def row(self, row: Mapping[str, Any]) -> Lineage:
        self.notes, self.hidden = [], set()
        kind = row.get("source_type") or LEGACY_SOURCE_TYPE
        source_file = row.get("source_file")
        content = str(row.get("content") or "")
        if self.hide_forgotten:  # a row read before a forget: served without the lines it hides
            content = self.tombs.strip(content)[0]
        meta = json_object(row.get("metadata"))
        parts: dict[str, Any] = {}
        if kind == ARCHIVE and source_file:
            parts = self.back_from_log(source_file, content, row.get("chunk_index"))
        elif kind == NOTEBOOK and source_file:
            parts = self.back_from_page(source_file, content, row.get("chunk_index"))
        elif kind == TRANSCRIPT and source_file:
            parts = self.back_from_transcript(source_file, meta)
        elif kind == CORE_FILE and source_file == "MEMORY.md":
            parts = self.back_from_memory_md(content, str(meta.get("zone") or ""))
        elif kind == CORE_FILE:
            self.notes.append(f"memory/{source_file} is a core file a person (or the assistant) writes")
        else:
            self.notes.append("an assistant-era row: no file of the home holds it")
        if self.hidden:
            self.notes.append(f"{len(self.hidden)} source(s) a person forgot are left out")
        return Lineage(row.get("id"), kind, source_file, content, **parts, notes=tuple(self.notes))

    def back_from_log(self, file: str, content: str, number: object) -> dict[str, Any]:
        log = self.log(file)
        if log is None:
            self.notes.append(f"memory/archive/{file} cannot be read")
            return {}
        fact = log.get(number) if isinstance(number, int) else None
        if fact is None or normalise(fact.content) != normalise(content):
            # The line moved (the log was rewritten by an erase): the same text elsewhere in it.
            fact = next((f for f in log.values() if normalise(f.content) == normalise(content)), None)
        if fact is None:
            self.notes.append(f"memory/archive/{file} no longer holds this fact (a reindex updates the row)")
            return {}
        source = self.log_line(file, fact)
        if source is None:
            return {}
        if not source.turns and not self.hidden:
            self.notes.append(
                f"memory/archive/{file} line {fact.line}: no kept turn was said then with its words "
                "(a fact given directly, or its turn is no longer kept)"
            )
        return {"log_lines": (source,)}

    def back_from_transcript(self, rel: str, meta: Mapping[str, Any]) -> dict[str, Any]:
        line = meta.get("line")
        said = self.turn_at(rel, line=line) if isinstance(line, int) else None
        if said is None:
            self.notes.append(f"transcripts/{rel} no longer holds this turn (a reindex updates the row)")
            return {}
        turn = self.turn_source(said)
        return {"turns": (turn,)} if turn is not None else {}

    def back_from_page(self, rel: str, content: str, chunk_index: object) -> dict[str, Any]:
        text = self.page(rel)
        if text is None:
            self.notes.append(f"notebook/{rel} cannot be read")
            return {}
        lines = text.splitlines()
        span = self.served(f"notebook/{rel}", lines, _chunk_lines(text, rel, content, chunk_index))
        if not span:
            self.notes.append(f"notebook/{rel} no longer holds this chunk (a reindex updates the row)")
            return {}
        bullets = self.bullets_of(rel, span)
        if not bullets and not self.hidden:
            self.notes.append(
                f"notebook/{rel}: the fold ledger names no log line folded into these lines (written "
                "by a person, or folded before the ledger existed)"
            )
        return {"bullets": tuple(b for b in bullets if b.log_lines)}

    def bullets_of(self, rel: str, span: set[int]) -> list[BulletSource]:
        """The lines of page ``rel`` in ``span`` that hold log lines folded into it, each with them."""
        held: dict[int, list[LogLineSource]] = {}
        unreadable: set[str] = set()
        for file, n in self.named(rel):
            log = self.log(file)
            if log is None:
                unreadable.add(file)
                continue
            fact = log.get(n)
            if fact is None:
                continue
            at = [m for m in self.holding_lines(rel, fact.content) if m in span]
            source = self.log_line(file, fact) if at else None
            for m in at if source is not None else ():
                held.setdefault(m, []).append(source)  # type: ignore[arg-type]
        for file in sorted(unreadable):
            self.notes.append(
                f"memory/archive/{file} cannot be read: its lines folded into {rel} are not traced"
            )
        lines = (self.page(rel) or "").splitlines()
        return [BulletSource(rel, m, lines[m - 1], tuple(held[m])) for m in sorted(held)]

    def back_from_memory_md(self, content: str, zone: str) -> dict[str, Any]:
        path = self.settings.memory_md_path
        try:
            text = read_text(path).text
        except OSError:
            self.notes.append("memory/MEMORY.md cannot be read")
            return {}
        lines = text.splitlines()
        span = _locate(lines, content, _zone_region(lines, zone)) or _locate(
            lines, content, range(len(lines))
        )
        span = self.served("memory/MEMORY.md", lines, span)
        if not span:
            self.notes.append("memory/MEMORY.md no longer holds this chunk (a reindex updates the row)")
        view = read_zones(path)
        if zone != "generated":
            stamps = tuple(f"human:{s['who']} at {s['at']}" for s in view.stamps)
            return {
                "zone": ZoneSource(
                    "manual", PERSON, stamps, tuple(ZoneLine(n, lines[n - 1]) for n in sorted(span))
                )
            }
        if view.layout == "signature":
            writer = OLD_GENERATOR
        else:
            writer = PROMOTER if list_personal_pages(self.settings) else REFRESHER
        made = tuple(self.zone_line(n, lines[n - 1]) for n in sorted(span))
        return {"zone": ZoneSource("generated", writer, (), made)}

    def zone_line(self, number: int, raw: str) -> ZoneLine:
        text = _bullet_text(raw)
        if text is None:  # a heading
            return ZoneLine(number, raw)
        claims = self.claims_reading(text)
        if claims:
            return ZoneLine(number, raw, claims=claims)
        facts, rows = self.candidates_reading(text)
        return ZoneLine(number, raw, facts=facts, rows=rows)

    def claims_reading(self, text: str) -> tuple[BulletSource, ...]:
        """The top-level bullets of the personal pages whose claim reads ``text`` (the promoter's
        bullet: the claim without its markers, cut to ``MAX_FACT_CHARS``), with their log lines."""
        out: list[BulletSource] = []
        for rel in list_personal_pages(self.settings):
            lines = (self.page(rel) or "").splitlines()
            span = {
                n for n, raw in enumerate(lines, 1) if raw[:1] in "-*+" and _reads_as(clean_line(raw), text)
            }
            span = self.served(f"notebook/{rel}", lines, span)
            if span:
                held = {b.line: b for b in self.bullets_of(rel, span)}
                out += [held.get(n) or BulletSource(rel, n, lines[n - 1]) for n in sorted(span)]
        return tuple(out)

    def candidates_reading(self, text: str) -> tuple[tuple[LogLineSource, ...], tuple[str, ...]]:
        """The per-turn writer's candidate rows of this text (their ids), and their log lines."""
        path = self.settings.state_dir / CANDIDATES_FILE
        try:
            rows = json.loads(path.read_text(encoding="utf-8")).get("rows")
        except (OSError, ValueError, AttributeError):
            rows = None
        if not isinstance(rows, list):
            self.notes.append(f".state/{CANDIDATES_FILE} cannot be read: the zone's fact rows are not traced")
            return (), ()
        ids: list[str] = []
        facts: list[LogLineSource] = []
        for row in rows:
            if not isinstance(row, dict) or not _reads_as(str(row.get("content") or ""), text):
                continue
            ids.append(str(row.get("id")))
            day = row.get("source_date")
            file = f"{day}.md"
            for fact in (self.log(file) or {}).values() if isinstance(day, str) else ():
                if normalise(fact.content) == normalise(str(row["content"])):
                    source = self.log_line(file, fact)
                    if source is not None:
                        facts.append(source)
        return tuple(facts), tuple(ids)


# -- where a row's text is in its file -------------------------------------------------------------
def _body_start(lines: list[str], text: str) -> int:
    """The index of the first line after a page's frontmatter (0 without one)."""
    opening = FRONTMATTER_START.match(text)
    if not opening:
        return 0
    close = FRONTMATTER_CLOSE.search(text, opening.end())
    return text.count("\n", 0, close.start()) + 1 if close else len(lines)


def _locate(lines: list[str], content: str, allowed: range, start: int | None = None) -> set[int]:
    """The 1-based lines of ``lines`` (within ``allowed``) that hold ``content``'s lines, in order,
    from ``start``; empty when one is not found."""
    pos = allowed.start if start is None else start
    found: set[int] = set()
    for want in (w.strip() for w in content.splitlines()):
        if not want:
            continue
        while pos < allowed.stop and lines[pos].strip() != want:
            pos += 1
        if pos >= allowed.stop:
            return set()
        found.add(pos + 1)
        pos += 1
    return found


def _chunk_lines(text: str, rel: str, content: str, chunk_index: object) -> set[int]:
    """The lines of page ``rel`` the chunk ``content`` is made of: the chunks of the page in order
    (as ``index/rows.plan_page`` cuts them), the one of this text nearest ``chunk_index``."""
    lines = text.splitlines()
    body = range(_body_start(lines, text), len(lines))
    chunks = (chunk_claims if is_personal(rel) else chunk_paragraphs)(parse_page(text, rel).body)
    spans: list[tuple[int, set[int]]] = []
    pos = body.start
    for index, chunk in enumerate(chunks):
        span = _locate(lines, chunk, body, pos)
        if span:
            pos = max(span)
        if chunk == content and span:
            spans.append((index, span))
    if spans:
        target = chunk_index if isinstance(chunk_index, int) else 0
        return min(spans, key=lambda s: (abs(s[0] - target), s[0]))[1]
    return _locate(lines, content, body)


def _zone_region(lines: list[str], zone: str) -> range:
    """MEMORY.md's generated zone's lines (after the opening marker, before the closing one), or
    the whole file for the manual zone (its lines are found outside the markers' text)."""
    opens = next((i for i, line in enumerate(lines) if GENERATED_OPEN in line), None)
    closes = next((i for i, line in enumerate(lines) if GENERATED_CLOSE in line), None)
    if zone == "generated" and closes is not None:
        return range(opens + 1 if opens is not None and opens < closes else 0, closes)
    if zone == "manual" and closes is not None:
        return range(closes + 1, len(lines))
    return range(0, len(lines))


def _bullet_text(raw: str) -> str | None:
    stripped = raw.strip()
    return stripped[2:].strip() if stripped[:2] in ("- ", "* ", "+ ") else None


def _reads_as(claim: str, line: str) -> bool:
    """Whether a generated line ``line`` is ``claim`` as a generator writes it (markers and
    whitespace aside, cut to ``MAX_FACT_CHARS`` with an ellipsis)."""
    a, b = normalise(claim), normalise(line)
    if a == b:
        return True
    return len(line) >= MAX_FACT_CHARS - 1 and line.endswith("…") and a.startswith(normalise(line[:-1]))


__all__ = [
    "BulletSource",
    "Lineage",
    "LineageError",
    "LogLineSource",
    "LogLineTrace",
    "PageLine",
    "TurnSource",
    "ZoneLine",
    "ZoneSource",
    "log_lines_of_turn",
    "trace_id",
    "trace_ids",
    "trace_log_lines",
    "trace_page_lines",
    "trace_row",
]
