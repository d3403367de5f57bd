"""Text normalisation and deterministic ids shared by every format and the indexer."""

import hashlib
import json
import re
import unicodedata
from datetime import date, datetime
from typing import Any

_WS = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)


def normalise(text: str) -> str:
    """The tombstone normalisation of the existing format: lower case, whitespace collapsed.

    It deliberately does not strip punctuation, so it matches the ``content`` values already
    stored in users' ``tombstones.jsonl``.
    """
    return " ".join(text.lower().split())


def fold(text: str) -> str:
    """Lexical comparison form: NFKC, lower case, punctuation folded to spaces, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).lower()
    return _WS.sub(" ", _PUNCT.sub(" ", text)).strip()


def clean_text(text: object) -> str:
    """Text safe to store and match: a string with lone surrogates replaced (U+FFFD) and control
    characters other than newline and tab turned into spaces. Anything else becomes ''."""
    if not isinstance(text, str):
        return ""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return "".join(c if c.isprintable() or c in "\n\t" else " " for c in text)


def has_words(text: str) -> bool:
    """Whether ``text`` holds a word: a letter or a digit, of any script (punctuation, symbols and
    spaces alone are not a statement of anything)."""
    return any(c.isalnum() for c in text)


def excerpt(text: str, limit: int = 200, marker: str = "...") -> str:
    """``text`` on one line (whitespace collapsed), cut after ``limit`` characters with ``marker``:
    for quoting input or a server's answer in a message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + marker


def json_object(text: object) -> dict[str, Any]:
    """``text`` parsed as a JSON object; {} for anything else (not a string, not JSON, not an object).
    For the metadata JSON of rows, where a bad value must never fail a read."""
    if not isinstance(text, str):
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def stable_id(*parts: object) -> str:
    """A deterministic row id derived from its parts (source and content, never a position)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return digest[:32]


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def as_date(value: object) -> date | None:
    """A day from a date, a datetime or an ISO string (its first ten characters); else None."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


def stem(word: str) -> str:
    """A crude stem of a lower-case word, good enough to meet "likes"/"liking"/"like",
    "drinks"/"drinking" and "studies"/"study": how two claims' words and a question's words are
    compared (claims, the second hop of a search)."""
    for suffix in ("ing", "ies", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    if len(word) > 2 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word
