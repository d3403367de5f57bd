"""The assistant's own rows (the legacy rows, from before the markdown tier) as a face asks about
them, one call each over a ``Home``; ``table`` names another LanceDB table than the home's index.

* ``legacy_report``: what the legacy check finds: the rows and blocks recorded nowhere else;
* ``legacy_check``: the same as an invariant check's outcome (``CHECK_NAME``): warns while any
  row is recorded nowhere else, fails when legacy rows are in a table a confirmed apply cleared;
* ``export_legacy``: every unrecorded row appended to the daily logs, every block to its core file;
* ``apply_legacy``: the legacy rows deleted, once every one is recorded, after a backup; without
  ``confirm`` what it would do. A confirmed apply to the home's own index sweeps it first with the
  home's embedder, so every exported fact is searchable from its markdown before its row goes;
* ``legacy_backups``, ``restore_legacy``, ``forget_legacy_backup``: the backups the applies made,
  one brought back as the table was, one's tag (and, asked, its directory copy) deleted.

The answers are ``core/legacy/``'s own; a refusal is its ``LegacyError``, naming the fix.
"""

from typing import Any

from memory_assets.core.home import Home
from memory_assets.core.legacy.backup import (
    ApplyResult,
    RestoreResult,
    apply,
    forget_backup,
    list_backups,
    report,
    restore,
)
from memory_assets.core.legacy.export import ExportResult, export
from memory_assets.core.legacy.find import recorded_nowhere_else
from memory_assets.core.outcome import CheckOutcome


def legacy_report(home: Home, table: str | None = None) -> dict[str, Any]:
    return report(home.settings, table)


def legacy_check(home: Home, table: str | None = None) -> CheckOutcome:
    return recorded_nowhere_else(home.settings, table)


def export_legacy(home: Home, table: str | None = None) -> ExportResult:
    return export(home.settings, table)


def apply_legacy(home: Home, table: str | None = None, *, confirm: bool = False) -> ApplyResult:
    embedder = home.embedder if confirm and table is None else None
    return apply(home.settings, table, confirm=confirm, embedder=embedder)


def legacy_backups(home: Home, table: str | None = None) -> list[dict[str, Any]]:
    return list_backups(home.settings, table)


def restore_legacy(home: Home, backup: str, table: str | None = None) -> RestoreResult:
    return restore(home.settings, backup, table)


def forget_legacy_backup(
    home: Home, backup: str, table: str | None = None, *, remove_copy: bool = False
) -> dict[str, Any]:
    return forget_backup(home.settings, backup, table, remove_copy=remove_copy)
