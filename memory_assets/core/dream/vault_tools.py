"""The dream agent's tools: files inside the vault, and nothing else (design §6.3).

The agent's only declared capability is writing vault pages. ``VaultTools`` gives it ``read``,
``write``, ``edit``, ``glob``, ``grep``, ``memory_search`` (read-only, over the index) and
``retire`` (the hand-off of a folded log fact, which the RUNNER writes to ``superseded.txt``).

Confinement. Every path is vault-relative and is refused, with a tool error the model reads (never
an exception), when it:

* is empty, absolute (``/...``, ``~...``, a drive), holds ``..`` or a backslash, or a control
  character (a NUL, a newline: a page name must be one printable line);
* names anything hidden (a part starting with ``.``: ``.state/`` with the runner's state and the
  hand-off files, ``.git``, ``.obsidian``) or the root ``log.md`` (the runner's watermark);
* passes through a symlink that leads outside the vault, or resolves (symlinks followed) outside
  it, into a hidden part or onto ``log.md``;
* would write through a symlink at all (even one pointing inside the vault);
* lies in the memory dir, the daily logs, the transcripts or a local index, should one of them sit
  inside the vault;
* is not a regular file (a FIFO, a socket, a device): it is opened without blocking and checked
  on the open descriptor, so a FIFO planted in the vault can never hang a call;
* is a hard link (a file with more than one name), which could be a file outside the vault.

``schema.md`` and ``index.md`` may be read and written. Writes go to ``*.md`` files only, are
atomic (``write_atomic``: a reader sees the old page or the new one) and bounded
(``MAX_WRITE_BYTES``); reads are cut at ``MAX_READ_CHARS`` with a note saying how to read on.
``glob`` and ``grep`` walk the vault without following symlinked folders and list only what
``read`` would accept. The model's patterns run on the ``regex`` matcher with a time bound
(``vault_files.MATCH_TIMEOUT_S`` for one call, all files together), so a pattern that backtracks
without bound fails its call with a tool error rather than holding the dream past its time
limit. Files are read by ``vault_files.read_regular``. The checks run just before each file
operation; a process racing the agent to swap a folder for a symlink in between is outside what
they defend against.

``written`` lists the pages whose bytes changed, in order; ``rollback()`` restores them (removes
the ones created) so a failed run leaves the vault as it found it, except where someone else
changed a page since.
"""

import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

import regex

from memory_assets.core.dream.vault_files import (
    MatchClock,
    ToolError,
    glob_regex,
    is_regular,
    read_regular,
    real_path,
)
from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.settings import Settings
from memory_assets.core.text import excerpt, normalise

if TYPE_CHECKING:
    from memory_assets.core.dream.consolidator import PageJournal
    from memory_assets.core.index.store import MemoryStore
    from memory_assets.core.models.embedder import TextEmbedder

MAX_READ_CHARS = 40_000  # one read's text; more is read with ``offset``
MAX_READ_BYTES = 10_000_000  # a file larger than this is not read at all
MAX_WRITE_BYTES = 200_000  # one page written or edited
MAX_GLOB_RESULTS = 300
MAX_GREP_MATCHES = 200
MAX_GREP_LINE = 300  # characters of a matching line shown
MAX_GREP_FILE_BYTES = 2_000_000
MAX_PATTERN_CHARS = 500
MAX_SEARCH_RESULTS = 10
MAX_HIT_CHARS = 600
MIN_RETIRE_CHARS = 24  # the runner never tombstones a shorter line (design §4.10)
ERROR_PREFIX = "error: "

_LINE_PREFIX = re.compile(r"^\s*(?:-|\d+\.)\s*")  # a bullet, or a number the batch listing gave it
_BRACKETS = re.compile(r"^(?:\[[^\]]*\]\s*)+")  # "[category] ", "[2026-11-20] [category] "
_TAG_GROUP = re.compile(r"\s*`[^`]*`\s*$")  # a trailing tag group


@dataclass(frozen=True)
class Param:
    type: str  # JSON-schema type: "string" or "integer" or "boolean"
    description: str
    required: bool = True


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: Mapping[str, Param]

    def definition(self) -> dict[str, Any]:
        """The OpenAI function definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {
                        key: {"type": p.type, "description": p.description} for key, p in self.params.items()
                    },
                    "required": [key for key, p in self.params.items() if p.required],
                    "additionalProperties": False,
                },
            },
        }


_PATH = Param("string", "Vault-relative path, e.g. 3_Personal/Preferences.md.")
SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "read",
        "Read a vault file. Long files come in parts: the answer says which offset reads on.",
        {"path": _PATH, "offset": Param("integer", "Character offset to start at (default 0).", False)},
    ),
    ToolSpec(
        "write",
        "Create or replace a markdown page (*.md) in the vault with the full content given.",
        {"path": _PATH, "content": Param("string", "The page's complete new text.")},
    ),
    ToolSpec(
        "edit",
        "Replace one exact passage of a vault page. `old` must occur exactly once in the page.",
        {
            "path": _PATH,
            "old": Param("string", "The exact text to replace, copied from the page (unique in it)."),
            "new": Param("string", "The replacement text."),
        },
    ),
    ToolSpec(
        "glob",
        "List vault files matching a pattern: * within a folder, ** across folders, ? one character.",
        {"pattern": Param("string", "e.g. 3_Personal/*.md or **/*.md")},
    ),
    ToolSpec(
        "grep",
        "Search vault files for a regular expression; answers path:line: text.",
        {
            "pattern": Param("string", "A Python regular expression."),
            "path_glob": Param("string", "Which files to search (default **/*.md).", False),
            "ignore_case": Param("boolean", "Match case-insensitively (default false).", False),
        },
    ),
    ToolSpec(
        "memory_search",
        "Search the memory index (vault pages and recent log facts) by meaning and words. Read-only.",
        {
            "query": Param("string", "What to look for."),
            "limit": Param("integer", f"How many results (default 8, at most {MAX_SEARCH_RESULTS}).", False),
        },
    ),
    ToolSpec(
        "retire",
        "Hand off one log fact of this batch that a page now holds (confirmed, sharpened, superseded "
        "or added), word for word, so the runner retires its duplicate row. One fact per call.",
        {"fact": Param("string", "The log fact's text, exactly as given in the batch.")},
    ),
)


def fact_candidates(text: str) -> list[str]:
    """What a quoted log fact may be, most literal first: the text as given; without a leading
    bullet or number and ``[date]`` / ``[category]`` groups; and without a trailing tag group too."""
    whole = text.strip()
    bare = _BRACKETS.sub("", _LINE_PREFIX.sub("", whole)).strip()
    untagged = _TAG_GROUP.sub("", bare).strip()
    return list(dict.fromkeys(c for c in (whole, bare, untagged) if c))


# What the agent sees in place of a page's line that holds a forgotten text (see ``_mask``).
FORGOTTEN_LINE = "(a line a person asked to forget: keep this line as it is)"


def _unmask(content: str, hidden: list[str]) -> str:
    """A page the agent wrote, with each ``FORGOTTEN_LINE`` put back as the line it stands for, in
    order; hidden lines the agent left out are kept at the end of the page (forgetting keeps the
    markdown's history: only ``unforget`` or ``erase`` decide what becomes of them)."""
    if not hidden:
        return content
    queue = list(hidden)
    lines = [queue.pop(0) if line == FORGOTTEN_LINE and queue else line for line in content.split("\n")]
    lines = [line for line in lines if line != FORGOTTEN_LINE]
    if queue:
        lines = [*lines[: len(lines) - (1 if lines and lines[-1] == "" else 0)], *queue, ""]
    return "\n".join(lines)


class VaultTools:
    """The agent's tools over ``settings.notebook_dir``. ``call(name, arguments)`` runs one and
    always returns text: the result, or ``error: ...`` for a refused or failed call.

    ``facts``: the batch's log facts; ``retire`` accepts only these (matched after the tombstone
    normalisation), so the hand-off can never tombstone a page's text. None accepts any line.
    ``embedder`` and ``store`` serve ``memory_search``; by default they come from the settings,
    on first use."""

    def __init__(
        self,
        settings: Settings,
        *,
        facts: Sequence[str] | None = None,
        embedder: "TextEmbedder | None" = None,
        store: "MemoryStore | None" = None,
        max_read_chars: int = MAX_READ_CHARS,
        max_write_bytes: int = MAX_WRITE_BYTES,
        journal: "PageJournal | None" = None,
    ) -> None:
        self.settings = settings
        self.journal = journal  # the runner's undo record: every write is declared to it first
        self.root = Path(settings.notebook_dir).expanduser().absolute().resolve()
        self.max_read_chars = max_read_chars
        self.max_write_bytes = max_write_bytes
        self.written: list[str] = []  # vault-relative pages whose bytes this run changed
        self.retired: list[str] = []  # the batch's facts handed off, in order, once each
        self.errors: list[str] = []  # every refused or failed call, "tool: message"
        self._originals: dict[str, bytes | None] = {}  # page -> bytes before the first write (None: new)
        self._last: dict[str, bytes] = {}  # page -> the bytes this run last wrote
        self._facts = None if facts is None else {normalise(f): f for f in facts if f.strip()}
        self._embedder = embedder
        self._embedder_failed: str | None = None  # why semantic search is off (words only)
        self._store = store
        self._protected = self._protected_dirs(settings)
        self._handlers: dict[str, Callable[..., str]] = {
            "read": self.read,
            "write": self.write,
            "edit": self.edit,
            "glob": self.glob,
            "grep": self.grep,
            "memory_search": self.memory_search,
            "retire": self.retire,
        }

    # -- the protocol ------------------------------------------------------------------------------
    @staticmethod
    def definitions() -> list[dict[str, Any]]:
        return [spec.definition() for spec in SPECS]

    def call(self, name: str, arguments: str | Mapping[str, Any] | None) -> str:
        """Run tool ``name`` with the model's ``arguments`` (its JSON text, or an object)."""
        spec = next((s for s in SPECS if s.name == name), None)
        if spec is None:
            known = ", ".join(s.name for s in SPECS)
            return self._error(name or "?", f"unknown tool {name!r}; the tools are {known}")
        try:
            kwargs = self._arguments(spec, arguments)
            return self._handlers[name](**kwargs)
        except ToolError as exc:
            return self._error(name, str(exc))
        except OSError as exc:  # permission denied, disk full, ...: the model may try otherwise
            return self._error(name, f"the file system refused: {exc.strerror or type(exc).__name__}")

    def _error(self, name: str, message: str) -> str:
        self.errors.append(f"{name}: {message}")
        return ERROR_PREFIX + message

    @staticmethod
    def _arguments(spec: ToolSpec, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            data: Any = {}
        elif isinstance(arguments, str):
            try:
                data = json.loads(arguments)
            except ValueError as exc:
                raise ToolError(
                    f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}); send one JSON "
                    f"object with {', '.join(spec.params)}"
                ) from None
        else:
            data = dict(arguments)
        if not isinstance(data, dict):
            raise ToolError("the arguments must be one JSON object")
        unknown = sorted(set(data) - set(spec.params))
        if unknown:
            raise ToolError(
                f"unknown argument(s) {', '.join(unknown)}; {spec.name} takes {', '.join(spec.params)}"
            )
        kinds = {"string": str, "integer": int, "boolean": bool}
        for key, param in spec.params.items():
            if key not in data or data[key] is None:
                if param.required:
                    raise ToolError(f"missing argument {key!r} ({param.description})")
                data.pop(key, None)
                continue
            value = data[key]
            wanted = kinds[param.type]
            if not isinstance(value, wanted) or (wanted is int and isinstance(value, bool)):
                raise ToolError(f"argument {key!r} must be a {param.type}, not {type(value).__name__}")
        return data

    # -- confinement -------------------------------------------------------------------------------
    def _protected_dirs(self, settings: Settings) -> list[Path]:
        """Folders of the home that sit inside the vault (normally none) and stay out of reach."""
        candidates = [settings.memory_dir, settings.archive_dir, settings.transcripts_dir]
        if settings.index_is_local:
            candidates.append(Path(settings.index_uri))
        found = []
        for folder in candidates:
            resolved = Path(folder).expanduser().absolute().resolve()
            if resolved != self.root and resolved.is_relative_to(self.root):
                found.append(resolved)
        return found

    @staticmethod
    def _parts(raw: str, what: str = "path") -> tuple[str, ...]:
        text = raw.strip()
        example = "e.g. 3_Personal/Preferences.md"
        if not text:
            raise ToolError(f"the {what} is empty; give a vault-relative {what}, {example}")
        if "\x00" in text or "\\" in text:
            raise ToolError(f"the {what} {raw!r} holds a NUL or a backslash; use / between folders")
        control = next((ch for ch in text if unicodedata.category(ch) == "Cc" or ch in "\u2028\u2029"), None)
        if control is not None:
            raise ToolError(
                f"the {what} {raw!r} holds a control character ({control!r}); a page name is one line "
                "of printable characters, e.g. 3_Personal/Preferences.md"
            )
        if text.startswith(("/", "~")) or PureWindowsPath(text).drive or Path(text).is_absolute():
            raise ToolError(
                f"{raw!r} is absolute; paths are relative to the vault root ({example}) and nothing "
                "outside the vault can be reached"
            )
        parts = tuple(p for p in PurePosixPath(text).parts if p != ".")
        if ".." in parts:
            raise ToolError(f"{raw!r} climbs out with '..'; nothing outside the vault can be reached")
        if not parts:
            raise ToolError(f"{raw!r} names the vault root, not a file; {example}")
        return parts

    @staticmethod
    def _policy(parts: Sequence[str], raw: str) -> None:
        """Refuse what is inside the vault but not the agent's: hidden parts and the root log.md."""
        if any(p.startswith(".") for p in parts):
            raise ToolError(
                f"{raw!r} is in a hidden folder or file (such as .state/, the runner's state and "
                "hand-off files), which the agent may not touch; hand off folded facts with retire"
            )
        if len(parts) == 1 and parts[0].lower() == "log.md":
            raise ToolError(
                f"{raw!r} is the vault's operation log, which holds the runner's watermark; "
                "the agent may not read or write it"
            )

    def _resolve(self, raw: str, *, write: bool) -> tuple[Path, str]:
        """The absolute path and the vault-relative name of ``raw``, or ToolError."""
        parts = self._parts(raw)
        self._policy(parts, raw)
        if write and not parts[-1].lower().endswith(".md"):
            raise ToolError(f"{raw!r} is not a markdown page; the agent writes *.md pages only")
        current = self.root
        for part in parts:
            current = current / part
            if current.is_symlink():
                if write:
                    raise ToolError(
                        f"{raw!r} goes through a symlink ({current.relative_to(self.root).as_posix()}); "
                        "the agent never writes through a symlink"
                    )
                if not real_path(current, raw).is_relative_to(self.root):
                    raise ToolError(f"{raw!r} goes through a symlink that leads outside the vault")
        path = self.root.joinpath(*parts)
        resolved = real_path(path, raw)
        if not resolved.is_relative_to(self.root):
            raise ToolError(f"{raw!r} resolves outside the vault")
        real = resolved.relative_to(self.root).parts
        if real != parts:
            self._policy(real, raw)
        if any(resolved == d or resolved.is_relative_to(d) for d in self._protected):
            raise ToolError(f"{raw!r} is in the memory home's own files (daily logs, index), not a page")
        return path, "/".join(parts)

    def _walk(self) -> Iterator[tuple[str, Path]]:
        """Every file ``read`` accepts, as (vault-relative POSIX path, path), sorted; symlinked
        folders are not entered, symlinked files only listed when they stay inside."""
        found: list[tuple[str, Path]] = []
        for folder, dirs, files in os.walk(self.root, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            base = Path(folder)
            for name in files:
                path = base / name
                rel = path.relative_to(self.root).as_posix()
                try:
                    self._resolve(rel, write=False)
                except (ToolError, OSError):
                    continue
                if is_regular(path):
                    found.append((rel, path))
        yield from sorted(found)

    def _mask(self, text: str) -> tuple[str, list[str]]:
        """``text`` with each line that holds a forgotten text replaced by ``FORGOTTEN_LINE``, and the
        lines so replaced, in order: the agent (a model, perhaps remote) is never shown what a person
        forgot, and its writes keep those lines where they were (``_unmask``)."""
        tombs = read_tombstones(self.settings.tombstones_path)
        if not len(tombs):
            return text, []
        lines = text.split("\n")
        hidden = [line for line in lines if line.strip() and tombs.line_hidden(line)]
        if not hidden:
            return text, []
        return "\n".join(FORGOTTEN_LINE if line in hidden else line for line in lines), hidden

    # -- the tools ---------------------------------------------------------------------------------
    def read(self, path: str, offset: int = 0) -> str:
        target, rel = self._resolve(path, write=False)
        if target.is_dir():
            raise ToolError(f"{rel} is a folder; list it with glob('{rel}/*')")
        data = read_regular(target, rel, MAX_READ_BYTES)
        if data is None:
            raise ToolError(f"{rel} does not exist; list pages with glob, e.g. glob('**/*.md')")
        text, _ = self._mask(data.decode("utf-8", errors="replace"))
        start = max(0, offset)
        if start and start >= len(text):
            raise ToolError(f"offset {offset} is past the end of {rel} ({len(text)} characters)")
        end = min(len(text), start + self.max_read_chars)
        part = text[start:end]
        if start or end < len(text):
            more = f"; read on with offset={end}" if end < len(text) else ""
            part += f"\n\n[{rel}: characters {start}-{end} of {len(text)}{more}]"
        return part

    def write(self, path: str, content: str) -> str:
        target, rel = self._resolve(path, write=True)
        current = read_regular(target, rel) if target.is_file() else None
        if current is not None:
            _, hidden = self._mask(current.decode("utf-8", errors="replace"))
            content = _unmask(content, hidden)
        data = content.encode("utf-8")
        if len(data) > self.max_write_bytes:
            raise ToolError(
                f"the content is {len(data)} bytes; a page may have at most {self.max_write_bytes}. "
                "Split it into several pages and link them"
            )
        if target.is_dir():
            raise ToolError(f"{rel} is a folder")
        with file_lock(target):
            before = read_regular(target, rel)
            if before == data:
                return f"{rel} unchanged (the content is what the page already holds)"
            self._commit(target, rel, before, data)
        return f"{'replaced' if before is not None else 'created'} {rel} ({len(data)} bytes)"

    def edit(self, path: str, old: str, new: str) -> str:
        target, rel = self._resolve(path, write=True)
        if not old:
            raise ToolError("`old` is empty; copy the exact passage to replace from the page")
        with file_lock(target):
            before = read_regular(target, rel)
            if before is None:
                raise ToolError(f"{rel} does not exist; create it with write")
            try:
                text, hidden = self._mask(before.decode("utf-8"))
            except UnicodeDecodeError:
                raise ToolError(f"{rel} is not valid UTF-8; replace it whole with write") from None
            count = text.count(old)
            if count == 0:
                raise ToolError(
                    f"`old` does not occur in {rel}; read the page and copy the passage exactly "
                    "(whitespace and line breaks included)"
                )
            if count > 1:
                raise ToolError(f"`old` occurs {count} times in {rel}; include more surrounding text")
            data = _unmask(text.replace(old, new, 1), hidden).encode("utf-8")
            if len(data) > self.max_write_bytes:
                raise ToolError(f"the page would be {len(data)} bytes; at most {self.max_write_bytes}")
            if data == before:
                return f"{rel} unchanged (`new` equals `old`)"
            self._commit(target, rel, before, data)
        return f"edited {rel} ({len(data)} bytes)"

    def glob(self, pattern: str) -> str:
        self._pattern(pattern)
        compiled = glob_regex(pattern.strip().removeprefix("./"))
        clock = MatchClock(pattern)
        matches = [rel for rel, _ in self._walk() if clock.match(compiled, rel)]
        if not matches:
            return f"no vault file matches {pattern!r}"
        shown = matches[:MAX_GLOB_RESULTS]
        more = len(matches) - len(shown)
        return "\n".join(shown) + (f"\n[{more} more; narrow the pattern]" if more else "")

    def grep(self, pattern: str, path_glob: str = "**/*.md", ignore_case: bool = False) -> str:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ToolError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
        try:
            compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
        except regex.error as exc:
            raise ToolError(f"{pattern!r} is not a valid regular expression: {exc}") from None
        self._pattern(path_glob)
        files = glob_regex(path_glob.strip().removeprefix("./"))
        clock = MatchClock(pattern)
        lines: list[str] = []
        total = 0
        for rel, path in self._walk():
            if not clock.match(files, rel) or path.stat().st_size > MAX_GREP_FILE_BYTES:
                continue
            try:
                data = read_regular(path, rel, MAX_GREP_FILE_BYTES)
            except ToolError:
                continue  # swapped for something grep does not read since the walk listed it
            text, _ = self._mask((data or b"").decode("utf-8", errors="replace"))
            for number, line in enumerate(text.splitlines(), start=1):
                if line != FORGOTTEN_LINE and clock.search(compiled, line):
                    total += 1
                    if len(lines) < MAX_GREP_MATCHES:
                        shown = line if len(line) <= MAX_GREP_LINE else line[:MAX_GREP_LINE] + "..."
                        lines.append(f"{rel}:{number}: {shown}")
        if not lines:
            return f"no line matches {pattern!r} in {path_glob!r}"
        more = total - len(lines)
        return "\n".join(lines) + (f"\n[{more} more matches; narrow the search]" if more else "")

    def _pattern(self, pattern: str) -> None:
        if not pattern.strip():
            raise ToolError("the pattern is empty; e.g. 3_Personal/*.md or **/*.md")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ToolError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
        self._parts(pattern.strip().removeprefix("./"), "pattern")

    def memory_search(self, query: str, limit: int = 8) -> str:
        from memory_assets.core.index.store import MemoryStore
        from memory_assets.core.search.filters import SearchFilters
        from memory_assets.core.search.retrieval import search

        if not query.strip():
            raise ToolError("the query is empty")
        limit = max(1, min(limit, MAX_SEARCH_RESULTS))
        try:
            if self._store is None:
                s = self.settings
                self._store = MemoryStore.of(s)
            if self._embedder is None and self._embedder_failed is None:
                try:
                    from memory_assets.core.models.embedder import make_embedder

                    self._embedder = make_embedder(self.settings)
                except Exception as exc:  # full text still works
                    self._embedder_failed = type(exc).__name__
            hits = search(
                self._store,
                query,
                SearchFilters(limit=limit),
                embedder=self._embedder,
                settings=self.settings,
                log_recall=False,
            )
        except Exception as exc:  # an empty or unreadable index is an answer, not a crash
            raise ToolError(f"memory search failed: {_first_line(str(exc)) or type(exc).__name__}") from None
        note = (
            f" (semantic search unavailable: {self._embedder_failed}; words only)"
            if self._embedder_failed
            else ""
        )
        if not hits:
            return f"no result for {query!r}{note}"
        rows = []
        for hit in hits:
            where = hit.source_file or hit.source_type
            content = excerpt(hit.content, MAX_HIT_CHARS)
            rows.append(
                f"- [{hit.source_type} {where}{' ' + hit.source_date if hit.source_date else ''}] {content}"
            )
        return f"{len(hits)} result(s){note}:\n" + "\n".join(rows)

    def retire(self, fact: str) -> str:
        if "\n" in fact.strip() or "\r" in fact.strip():
            raise ToolError("retire takes one fact per call, on one line")
        candidates = fact_candidates(fact)
        if not candidates:
            raise ToolError("the fact is empty; give the log fact's text as the batch shows it")
        if self._facts is None:
            content = candidates[min(1, len(candidates) - 1)]
        else:
            known = [self._facts[normalise(c)] for c in candidates if normalise(c) in self._facts]
            if not known:
                raise ToolError(
                    "not a log fact of this batch; retire only facts listed in the batch, word for word "
                    "(confirmations and page text are never retired)"
                )
            content = known[0]
        key = normalise(content)
        if len(content) < MIN_RETIRE_CHARS:
            raise ToolError(
                f"{content!r} is shorter than {MIN_RETIRE_CHARS} characters; the runner never retires "
                "so short a line, so leave it (nothing is lost)"
            )
        if any(normalise(r) == key for r in self.retired):
            return f"already retired ({len(self.retired)} so far)"
        self.retired.append(content)
        return f"retired ({len(self.retired)} so far)"

    # -- written pages -----------------------------------------------------------------------------
    def _commit(self, target: Path, rel: str, before: bytes | None, after: bytes) -> None:
        """Write ``after`` to the page ``rel`` at ``target`` (the caller holds its lock and read
        ``before``): journalled first when the run keeps a journal, written atomically, and
        remembered for ``rollback``."""
        if self.journal is not None:
            self.journal.record(rel, before, after)
        write_atomic(target, after)
        if rel not in self._originals:
            self._originals[rel] = before
            self.written.append(rel)
        self._last[rel] = after

    def rollback(self) -> list[str]:
        """Put every page this run wrote back as it was, and remove those it created. A page that
        no longer holds what this run last wrote was changed by someone else meanwhile and is left
        alone (with a warning). Returns the warnings."""
        warnings: list[str] = []
        for rel in reversed(self.written):
            path = self.root / rel
            original = self._originals[rel]
            with file_lock(path):
                now = path.read_bytes() if path.is_file() and not path.is_symlink() else None
                if now != self._last[rel]:
                    warnings.append(f"{rel} changed since the agent wrote it; left as it is, not rolled back")
                elif original is None:
                    path.unlink()
                else:
                    write_atomic(path, original)
        self.written.clear()
        self._originals.clear()
        self._last.clear()
        return warnings


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
