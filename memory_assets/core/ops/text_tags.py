"""A text's tag: how a record kept outside a home names a person's words without holding them.

``TextTags(state_dir).tag(text)`` is ``#`` and the first ``TAG_HEX`` hex digits of the text's
keyed hash under the home's erase key (``core/knowledge/keyed_hash.py``): one text gives one tag
within a home (its words decide, not case or spacing), so two records about it can be matched, and
without the key a tag cannot be tested against a guess. The key is read on the first tag asked
for, and created then, as an erase creates it, in a home that has its state directory.

Without a key to hash with (``state_dir`` None, a home without its state directory, a key that
cannot be read or written) every tag is ``WITHHELD``: never the text.
"""

from pathlib import Path

from memory_assets.core.knowledge.keyed_hash import EraseKeyError, keyed_hash, read_key

TAG_HEX = 8
WITHHELD = "#withheld"


class TextTags:
    """The tags of one home's texts (``state_dir``: where its erase key is; see the module docstring)."""

    def __init__(self, state_dir: Path | None) -> None:
        self._state_dir = state_dir
        self._key: bytes | None = None
        self._tried = False

    def tag(self, text: str) -> str:
        """``text``'s tag (see the module docstring)."""
        if not self._tried:
            self._tried = True
            if self._state_dir is not None and self._state_dir.is_dir():
                try:
                    self._key = read_key(self._state_dir, create=True)
                except (EraseKeyError, OSError):
                    self._key = None
        if self._key is None:
            return WITHHELD
        return "#" + keyed_hash(self._key, text)[:TAG_HEX]
