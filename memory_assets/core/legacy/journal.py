"""The legacy journal, ``.state/legacy.jsonl``: one JSON object a line for every confirmed apply
and every restore (the action, its time, the table's URI and name, and the step's counts),
appended with fsync (``durable.append_durable``) and never rewritten.

``backup.py`` writes it; the asset check (``find.recorded_nowhere_else``) reads a table's last
entry, to tell an apply that claimed success while legacy rows are still there. A line that is not
a JSON object, or names another table, is passed over. It takes a table's URI and name rather than
a ``find.LegacyTable``, so that ``find`` can read it without an import cycle.
"""

import json
from datetime import datetime
from typing import Any

from memory_assets.core.durable import append_durable
from memory_assets.core.settings import Settings
from memory_assets.core.text import json_object
from memory_assets.core.textfile import read_text

JOURNAL = "legacy.jsonl"  # .state/legacy.jsonl: every confirmed apply and every restore, appended


def record(settings: Settings, action: str, uri: str, table: str, at: datetime, **fields: Any) -> None:
    """Append one apply or restore of table ``table`` at ``uri`` to ``.state/legacy.jsonl`` (fsync'd)."""
    entry = {"action": action, "at": at.isoformat(), "uri": uri, "table": table, **fields}
    append_durable(settings.state_dir / JOURNAL, json.dumps(entry, sort_keys=True) + "\n")


def last_action(settings: Settings, uri: str, table: str) -> dict[str, Any] | None:
    """The journal's last apply or restore of table ``table`` at ``uri``, or None."""
    path = settings.state_dir / JOURNAL
    if not path.is_file():
        return None
    last = None
    for line in read_text(path).text.splitlines():
        entry = json_object(line)
        if entry.get("uri") == uri and entry.get("table") == table:
            last = entry
    return last
