"""Finding and cutting an erased text inside longer text: the one rule every rewrite of an erase uses.

A text is found where its words appear in order, on word boundaries, case and spacing aside,
with anything that is not a word character between them (``"XK7741239"`` in ``"passport
xk7741239."``; ``"lives in Lisbon"`` in ``"Lives  in\nLisbon"``). That is wider than the served
surfaces' rule (``Tombstones.holds_forgotten``, which compares normalised text and so keeps
punctuation): an erase must leave no copy of the words, however they were punctuated.

* ``Needle.found(text)``: whether ``text`` holds it;
* ``Needle.cut(text)``: ``text`` with every occurrence replaced by ``ERASED``;
* ``Needle.in_bytes(data)``: whether raw bytes hold it (UTF-8, case aside): the final check of
  every file under the home.
"""

import re
from dataclasses import dataclass
from functools import cached_property

from memory_assets.core.knowledge.keyed_hash import words

ERASED = "[erased]"


@dataclass(frozen=True)
class Needle:
    text: str

    @cached_property
    def words(self) -> list[str]:
        return words(self.text)

    @cached_property
    def _pattern(self) -> "re.Pattern[str]":
        body = r"\W+".join(re.escape(w) for w in self.words)
        return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)

    @cached_property
    def _bytes(self) -> "re.Pattern[bytes]":
        body = rb"[^0-9A-Za-z_\x80-\xff]+".join(re.escape(w.encode("utf-8")) for w in self.words)
        return re.compile(
            rb"(?<![0-9A-Za-z_\x80-\xff])" + body + rb"(?![0-9A-Za-z_\x80-\xff])", re.IGNORECASE
        )

    def found(self, text: str) -> bool:
        return bool(self.words) and self._pattern.search(text) is not None

    def cut(self, text: str) -> str:
        return self._pattern.sub(ERASED, text) if self.words else text

    def in_bytes(self, data: bytes) -> bool:
        if not self.words:
            return False
        if all(w.isascii() for w in self.words):
            return self._bytes.search(data) is not None
        return self.found(data.decode("utf-8", errors="replace"))
