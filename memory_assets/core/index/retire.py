"""Retiring text from the index: a tombstone, then an explicit reindex of every file that holds it.

Tombstones are the only removal (invariant 4): the markdown keeps its history and the derived
rows disappear. Appending a tombstone changes no log's bytes, so nothing would notice it on its
own: every tombstone write here is paired with an explicit reindex of the files that hold the
text, found by a loose normalised substring match over every daily log (today's included) and,
for ``forget``, every vault page and core file too. A false positive costs one reindex (a diff,
so nothing); a miss would strand a row.

Order, for crash safety: the tombstone is appended (fsync'd) first, then the files are reindexed.
A crash in between leaves a tombstone whose rows are still indexed; the next retire, reconcile or
sweep removes them (the reindex is idempotent), and the ``no_tombstoned_content`` check reports
the gap meanwhile. A text already tombstoned is not tombstoned again, so a replay retires each
text exactly once.

``forget`` tombstones a text only when the tombstone would hide something: a fact line of a daily
log that holds it, a row one of its pages or core files plans, or a turn that holds it (a
person's tombstone hides every turn holding its text: ``Tombstones.hides_turn``). A text that is
only part of a fact (a prefix, a few words) and in no turn is reported in ``partial`` and
tombstoned nowhere, since a tombstone matches whole facts and would hide nothing, while keeping
that exact text out of every later write. ``forget_said`` hides turns (and facts) by where they
were said (``forgotten_turns.py``): each by its whole text, tagged with what was forgotten.
"""

from dataclasses import dataclass, field
from pathlib import Path

from memory_assets.core.capture.daily_log import list_logs, read_daily_log
from memory_assets.core.durable import append_durable, file_lock, write_atomic
from memory_assets.core.failpoints import failpoint
from memory_assets.core.index.forgotten_turns import SaidTurn, said_turns
from memory_assets.core.index.indexer import FileResult, Indexer
from memory_assets.core.knowledge.tombstones import (
    RECONCILE,
    Tombstones,
    claim_core,
    read_tombstones,
    tombstone_line,
)
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.settings import Settings
from memory_assets.core.sources import CORE_FILES, IndexKey
from memory_assets.core.text import normalise
from memory_assets.core.textfile import read_text

MIN_RETIRE_CHARS = 24  # shorter lines would match logs they never came from


@dataclass
class RetireResult:
    tombstoned: list[str] = field(default_factory=list)  # texts newly tombstoned
    already: list[str] = field(default_factory=list)  # texts that were tombstoned before
    unmatched: list[str] = field(default_factory=list)  # texts no file holds (reported, dropped)
    partial: list[str] = field(default_factory=list)  # forget: texts held only inside a fact (dropped)
    where: dict[str, list[str]] = field(default_factory=dict)  # text -> the keys of the files holding it
    files: list[str] = field(default_factory=list)  # label:filename keys reindexed
    deleted: int = 0
    embedded: int = 0
    warnings: list[str] = field(default_factory=list)


def affected_keys(settings: Settings, texts: list[str], *, pages: bool = False) -> dict[str, list[str]]:
    """For each text, the ``label:filename`` keys of the files whose normalised text contains it."""
    wanted = {t: normalise(t) for t in texts}
    found: dict[str, list[str]] = {t: [] for t in texts}
    files: list[tuple[str, Path]] = [
        (str(IndexKey.for_log(p.name)), p) for _, p in list_logs(settings.archive_dir)
    ]
    if pages:
        files += [
            (str(IndexKey.for_page(rel)), settings.notebook_dir / rel)
            for rel in list_pages(settings.notebook_dir)
        ]
        files += [(str(IndexKey.for_core_file(name)), settings.core_file_path(name)) for name in CORE_FILES]
        for said in said_turns(settings.transcripts_dir):  # the recall tier: a turn that holds it
            body = normalise(said.turn.user)
            for text, norm in wanted.items():
                if norm and norm in body and said.key not in found[text]:
                    found[text].append(said.key)
    for key, path in files:
        if not path.is_file():
            continue
        try:
            body = normalise(read_text(path).text)
        except OSError:  # an unreadable file is not searched; the sweep warns about it
            continue
        for text, norm in wanted.items():
            if norm and norm in body:
                found[text].append(key)
    return found


def retire_texts(
    settings: Settings, indexer: Indexer, texts: list[str], *, pages: bool = False
) -> RetireResult:
    """Tombstone each text (once) and reindex every file that holds it; see the module docstring.
    ``pages``: a person forgetting a fact (``forget``): its vault pages and core files are searched
    too, and the tombstone also hides claims that state it (a ``claims`` tombstone). The reconcile
    retires log lines only, with plain tombstones that never hide the claim holding them."""
    result = RetireResult()
    tombs = read_tombstones(settings.tombstones_path)
    result.warnings += tombs.warnings
    keys = affected_keys(settings, texts, pages=pages)
    reindex: set[str] = set()
    known = set(tombs.claims if pages else tombs.contents)
    lines = []
    for text in texts:
        norm = claim_core(text) if pages else normalise(text)
        result.where[text] = keys[text]
        if not keys[text]:
            result.unmatched.append(text)
            continue
        if pages and norm not in known and not _hides_something(settings, indexer, text, keys[text]):
            result.partial.append(text)
            continue
        reindex.update(keys[text])
        if norm in known:
            result.already.append(text)
            continue
        known.add(norm)
        lines.append(tombstone_line(text, claims=pages, by=None if pages else RECONCILE))
        result.tombstoned.append(text)
    if lines:  # one durable append for the lot
        append_durable(settings.tombstones_path, "".join(lines))
    failpoint("retire.tombstoned")
    for key in sorted(reindex):
        outcome: FileResult = indexer.reindex_key(key)
        result.files.append(key)
        result.deleted += outcome.deleted
        result.embedded += outcome.embedded
        failpoint("retire.reindexed_one")
    return result


def _hides_something(settings: Settings, indexer: Indexer, text: str, keys: list[str]) -> bool:
    """Whether a ``forget`` tombstone for ``text`` would hide a fact line of one of these daily
    logs (whatever the watermark) or a row one of these pages or core files plans. A file that
    cannot be read counts as hiding something: the tombstone is the safe side."""
    probe = Tombstones(frozenset({normalise(text)}), frozenset({claim_core(text)}))
    for key in keys:
        parsed = IndexKey.parse(key)
        if parsed.label == "archive":
            try:
                facts = read_daily_log(
                    settings.archive_dir / parsed.filename, f"archive/{parsed.filename}"
                ).facts
            except OSError:
                return True
            if any(probe.hides(f.content) for f in facts):
                return True
            continue
        plan = indexer.plan_key(key, fresh=True)
        if plan is None:
            continue
        hides = probe.hides_turn if parsed.label == "transcript" else probe.hides
        if plan.unreadable or any(hides(r.content) for r in plan.rows):
            return True
    return False


def forget_said(
    settings: Settings, indexer: Indexer, turns: list[SaidTurn], facts: list[str], with_: str
) -> RetireResult:
    """A person's forgetting by where things were said: a tombstone of each turn's whole text
    (``"turn": true``) and of each fact (a ``claims`` tombstone), all tagged ``with_`` (what was
    forgotten: the text, ``chat:ID``, ``day:YYYY-MM-DD``) and appended once, fsync'd; then every
    transcript, log, page and core file holding one is reindexed. What is hidden already is not
    tombstoned again (a replay writes nothing)."""
    result = RetireResult()
    tombs = read_tombstones(settings.tombstones_path)
    result.warnings += tombs.warnings
    lines: list[str] = []
    reindex: set[str] = set()
    for said in turns:
        reindex.add(said.key)
        if tombs.hides_turn(said.turn.user):
            result.already.append(said.turn.user)
            continue
        lines.append(tombstone_line(said.turn.user, turn=True, with_=with_))
        result.tombstoned.append(said.turn.user)
    wanted = list(dict.fromkeys(facts))
    for text, keys in affected_keys(settings, wanted, pages=True).items():
        reindex.update(keys)
        if claim_core(text) in tombs.claims:
            result.already.append(text)
            continue
        lines.append(tombstone_line(text, claims=True, with_=with_))
        result.tombstoned.append(text)
    if lines:
        append_durable(settings.tombstones_path, "".join(dict.fromkeys(lines)))
    failpoint("retire.tombstoned")
    for key in sorted(reindex):
        outcome = indexer.reindex_key(key)
        result.files.append(key)
        result.deleted += outcome.deleted
        result.embedded += outcome.embedded
    return result


def clean_handoff_line(line: str) -> str:
    """A superseded.txt line as the dream wrote it, reduced to the fact's text: a leading
    ``- [category] `` and a trailing backtick tag group are stripped (design §4.10)."""
    text = line.strip()
    if text.startswith("- ["):
        close = text.find("]")
        if close > 0:
            text = text[close + 1 :].strip()
    elif text.startswith(("- ", "* ")):
        text = text[2:].strip()
    if text.endswith("`"):
        start = text.rfind("`", 0, len(text) - 1)
        if start >= 0:
            text = text[:start].rstrip()
    return " ".join(text.split())


def remove_first_lines(path: Path, count: int) -> None:
    """Remove exactly the first ``count`` lines of ``path`` (under its writers' lock, atomically):
    lines appended after they were read survive."""
    if count <= 0 or not path.exists():
        return
    with file_lock(path):
        lines = path.read_bytes().split(b"\n")
        failpoint("reconcile.truncating")
        write_atomic(path, b"\n".join(lines[count:]))
