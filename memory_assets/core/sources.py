"""Where an indexed row comes from: the source types, and the ``label:filename`` index key.

Two vocabularies name one source file, and both live here so no tier retypes them:

* a row's ``source_type`` column: ``archive_log`` (a daily log's fact line), ``notebook`` (a vault
  page's chunk), ``core_file`` (persona.md, user.md, MEMORY.md), ``transcript`` (a conversation
  turn as it was said: the recall tier, ``transcripts/**.jsonl``), and ``legacy_direct`` for rows
  the assistant wrote before the markdown tier, which no file owns (an empty source type reads
  as legacy too);
* the index key ``label:filename`` the indexer state, the sensors' cursors, the Dagster run
  config and the locks use: ``archive:2026-11-30.md``, ``notebook:3_Personal/Health.md``,
  ``persona:persona.md``, ``user:user.md``, ``facts:MEMORY.md``, ``transcript:captured/c1.jsonl``
  (a transcript's path under ``transcripts/``). Keys are machine-independent
  (never absolute paths), so a synced home keeps one state.

``IndexKey`` builds and parses keys; everything else passes them as their text.
"""

from dataclasses import dataclass
from datetime import date

ARCHIVE = "archive_log"
NOTEBOOK = "notebook"
CORE_FILE = "core_file"
TRANSCRIPT = "transcript"
LEGACY_SOURCE_TYPE = "legacy_direct"
INDEXED_SOURCE_TYPES = (ARCHIVE, NOTEBOOK, CORE_FILE, TRANSCRIPT)
# What a search answers with first: the claims the write path and the dream wrote. A transcript
# row (what was said, verbatim) fills where none of these matches (design §5.7).
CLAIM_SOURCES = (ARCHIVE, NOTEBOOK, CORE_FILE, LEGACY_SOURCE_TYPE)
# The records a confirmation may defer to (the write path's word-for-word restatement, design §7
# invariant 5b): the append-only logs and the vault the dream consolidates. Never a transcript,
# the generated zone of MEMORY.md, a core file, or a legacy row the index alone holds.
DURABLE_SOURCES = (ARCHIVE, NOTEBOOK)
CORE_FILES = {"persona.md": "persona", "user.md": "user", "MEMORY.md": "facts"}

_LABEL_OF_TYPE = {ARCHIVE: "archive", NOTEBOOK: "notebook", TRANSCRIPT: "transcript"}


@dataclass(frozen=True, order=True)
class IndexKey:
    """One source file of the index: ``label:filename`` (see the module docstring)."""

    label: str
    filename: str

    def __str__(self) -> str:
        return f"{self.label}:{self.filename}"

    @classmethod
    def parse(cls, text: str) -> "IndexKey":
        label, sep, filename = text.partition(":")
        if not sep or not label or not filename:
            raise ValueError(f"index key {text!r} is not label:filename (for example archive:2026-11-30.md)")
        return cls(label, filename)

    @classmethod
    def for_day(cls, day: date) -> "IndexKey":
        return cls("archive", f"{day.isoformat()}.md")

    @classmethod
    def for_log(cls, filename: str) -> "IndexKey":
        return cls("archive", filename)

    @classmethod
    def for_page(cls, rel: str) -> "IndexKey":
        return cls("notebook", rel)

    @classmethod
    def for_transcript(cls, rel: str) -> "IndexKey":
        """A transcript, by its POSIX path under ``transcripts/`` (``s1.jsonl``, ``captured/c1.jsonl``)."""
        return cls("transcript", rel)

    @classmethod
    def for_core_file(cls, filename: str) -> "IndexKey":
        return cls(CORE_FILES[filename], filename)

    @classmethod
    def of_source(cls, source_type: str, source_file: str) -> "IndexKey | None":
        """The key of a row's source (None for sources the indexer does not own)."""
        if source_type in _LABEL_OF_TYPE:
            return cls(_LABEL_OF_TYPE[source_type], source_file)
        if source_type == CORE_FILE and source_file in CORE_FILES:
            return cls.for_core_file(source_file)
        return None

    @property
    def group(self) -> str:
        """'archive', 'notebook', 'transcript', or 'core' (persona, user and facts are all core files)."""
        return self.label if self.label in ("archive", "notebook", "transcript") else "core"

    @property
    def day(self) -> date | None:
        """The day of a daily log's key (``archive:YYYY-MM-DD.md``); None for any other key."""
        if self.label != "archive" or len(self.filename) != 13 or not self.filename.endswith(".md"):
            return None
        try:
            return date.fromisoformat(self.filename.removesuffix(".md"))
        except ValueError:
            return None
