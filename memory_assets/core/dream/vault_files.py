"""The vault tools' file and pattern primitives: reading a file without ever blocking on it, and
matching the model's patterns within a time bound (design §6.3; ``vault_tools.py`` is the caller).

* ``read_regular`` opens a file with ``O_NONBLOCK`` and checks the open descriptor: only a
  regular file is read, so a FIFO, socket or device planted in the vault is a ``ToolError`` and
  never hangs a call, and a file swapped in after an earlier check is still caught. A file with
  more than one name (a hard link) is refused too: path checks cannot tell whether its other
  name lies outside the vault, so reading it could hand the model a file from anywhere.
* ``glob_regex`` turns a vault glob into a ``regex`` pattern; ``MatchClock`` runs every match of
  one tool call on the ``regex`` matcher with a timeout, ``MATCH_TIMEOUT_S`` over the whole call.
  The agent's deadline is checked only between model calls, so a pattern that backtracks without
  bound (``(a|aa)+$``) must fail its own call, with a tool error saying what to write instead.
* ``ToolError`` is a refused or failed call; its message is the tool's answer to the model.
"""

import os
import re
import stat
import time
from pathlib import Path

import regex

MATCH_TIMEOUT_S = 2.0  # one glob or grep call's pattern matching, over every file


class ToolError(Exception):
    """A refused or failed tool call; its message goes back to the model as the tool's answer."""


def glob_regex(pattern: str) -> "regex.Pattern[str]":
    """A vault-relative glob as a regex over POSIX paths: ``*`` and ``?`` stay within a folder,
    a ``**`` part spans any number of folders (none included), ``[...]`` is a character class.
    Case-insensitive, as the vault may live on a case-insensitive disk."""
    parts = pattern.split("/")
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        i = 0
        while i < len(part):
            ch = part[i]
            if ch == "*":
                out.append("[^/]*")
            elif ch == "?":
                out.append("[^/]")
            elif ch == "[" and "]" in part[i + 2 :]:
                end = part.index("]", i + 2)
                body = part[i + 1 : end]
                negate = body.startswith("!")
                body = body[1:] if negate else body
                out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
                i = end
            else:
                out.append(re.escape(ch))
            i += 1
        if not last:
            out.append("/")
    return regex.compile("".join(out) + r"\Z", regex.IGNORECASE)


class MatchClock:
    """The time one tool call's matching may take (``MATCH_TIMEOUT_S``), across every match."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.deadline = time.monotonic() + MATCH_TIMEOUT_S

    def left(self) -> float:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise self.expired()
        return remaining

    def expired(self) -> ToolError:
        return ToolError(
            f"matching {self.pattern!r} took longer than {MATCH_TIMEOUT_S:g} s, so the call was "
            "stopped: the pattern backtracks without bound (nested or overlapping repeats such as "
            "(a+)+ or (a|aa)+). Use a simpler pattern, or a literal word"
        )

    def match(self, pattern: "regex.Pattern[str]", text: str) -> bool:
        try:
            return pattern.match(text, timeout=self.left()) is not None
        except TimeoutError:
            raise self.expired() from None

    def search(self, pattern: "regex.Pattern[str]", text: str) -> bool:
        try:
            return pattern.search(text, timeout=self.left()) is not None
        except TimeoutError:
            raise self.expired() from None


def real_path(path: Path, raw: str) -> Path:
    """``path`` with every symlink followed; a loop or an unreadable link is a refusal."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        raise ToolError(f"{raw!r} cannot be resolved (a symlink loop or an unreadable link)") from None


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


def is_regular(path: Path) -> bool:
    """Whether ``read_regular`` would read ``path``: a regular file with one name."""
    try:
        info = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def read_regular(path: Path, rel: str, max_bytes: int | None = None) -> bytes | None:
    """The bytes of the regular file at ``path``; None when nothing is there. Anything else is a
    ToolError: a hard link, a folder, a FIFO, a socket or a device (opened with ``O_NONBLOCK`` and checked on
    the open descriptor, so the open itself never waits for a writer and a file swapped in after
    a check is still caught), or a file over ``max_bytes``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ToolError(f"{rel} is a folder") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{rel} is a folder")
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise ToolError(
                f"{rel} is {kind}, not a page; the agent reads and writes regular files only, so "
                "leave it alone (a person should remove it from the vault)"
            )
        if info.st_nlink > 1:
            raise ToolError(
                f"{rel} is a hard link (the file has {info.st_nlink} names, and another may lie outside "
                "the vault), so the agent does not read or write it; leave it alone (a person can "
                "replace it with a copy)"
            )
        if max_bytes is not None and info.st_size > max_bytes:
            raise ToolError(f"{rel} is {info.st_size} bytes, too large to read (limit {max_bytes})")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
