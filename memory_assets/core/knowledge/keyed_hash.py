"""Keyed hashes: how a home keeps an erased text filtered without keeping the text.

An erase removes a text's bytes from the home, but some records must still recognise it: a
tombstone that keeps a later copy of the text out of every served surface, the daily logs' ledger
that must accept exactly the lines the erase emptied. Those records hold a keyed hash instead of
the text: HMAC-SHA256 under the home's own key, ``.state/erase.key`` (32 random bytes, written once,
mode 0600). Without the key a hash cannot be tested against a guess, and deleting the home deletes
the key with it.

A text's hash is of its *words*: the normalised text (``text.normalise``) cut into runs of word
characters, joined by one space. So punctuation and spacing never decide a match, and a row holds
an erased text when one of its runs of as many words hashes the same (``span_hashes``): the keyed
form of "holds it on word boundaries, case and spacing aside".
"""

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.text import normalise

KEY_NAME = "erase.key"
KEY_BYTES = 32
HASH_HEX = 32  # 128 bits of the HMAC: no accidental collision in any home
_WORD = re.compile(r"\w+")


class EraseKeyError(RuntimeError):
    """The home's erase key cannot be read or written (the message names the file and the fix)."""


def words(text: str) -> list[str]:
    """The text's words as a hash sees them: normalised, runs of word characters."""
    return _WORD.findall(normalise(text))


def key_path(state_dir: Path) -> Path:
    return state_dir / KEY_NAME


def read_key(state_dir: Path, *, create: bool = False) -> bytes | None:
    """The home's key; None when it has none and ``create`` is False. ``create`` writes one
    (atomically, under the key's lock, so two erases never write two keys)."""
    path = key_path(state_dir)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        raise EraseKeyError(f"{path}: unreadable ({exc.strerror or exc}); fix its permissions") from exc
    if len(data) == KEY_BYTES:
        return data
    if data:
        raise EraseKeyError(
            f"{path}: {len(data)} bytes, not {KEY_BYTES}; it was edited or truncated. Restore it from a "
            "backup of the home: without it, erased texts are no longer recognised"
        )
    if not create:
        return None
    state_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(path):
        if path.exists() and len(path.read_bytes()) == KEY_BYTES:
            return path.read_bytes()
        write_atomic(path, secrets.token_bytes(KEY_BYTES))
        os.chmod(path, 0o600)
        return path.read_bytes()


def keyed_hash(key: bytes, text: str) -> str:
    """The keyed hash of a text's words (see the module docstring)."""
    return hmac.new(key, " ".join(words(text)).encode("utf-8"), hashlib.sha256).hexdigest()[:HASH_HEX]


def span_hashes(key: bytes, text: str, lengths: Iterable[int]) -> set[str]:
    """The keyed hashes of every run of ``n`` consecutive words of ``text``, for each ``n``."""
    found: set[str] = set()
    tokens = words(text)
    for n in set(lengths):
        if n <= 0 or n > len(tokens):
            continue
        for i in range(len(tokens) - n + 1):
            found.add(
                hmac.new(key, " ".join(tokens[i : i + n]).encode("utf-8"), hashlib.sha256).hexdigest()[
                    :HASH_HEX
                ]
            )
    return found
