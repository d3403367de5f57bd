"""What a person's request about their own words is aimed at (``Target``).

A ``forget`` (``core/reconcile.py``) and an ``erase`` (``core/erase/``) each take one ``Target``:
a text, a row of the index (its ``id``), a chat (every turn of it) or a day of talk (every turn
said that day, UTC). The value only names the aim; each runner checks that it names exactly one
and that the home holds it, with its own message.
"""

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class Target:
    text: str | None = None
    row_id: str | None = None
    chat: str | None = None
    day: date | None = None

    def given(self) -> list[str]:
        """The names of the fields set (not None), in the order they are declared."""
        return [n for n in ("text", "row_id", "chat", "day") if getattr(self, n) is not None]
