"""A person's requests about their own words, one call each over a ``Home``.

* ``forget``: a text, a row, a chat or a day of talk hidden from everything served (a tombstone
  and a reindex; reversible: ``unforget``), ``core/reconcile.py``;
* ``erase``: a text, a row, a chat or a day gone from every file of the home and every index
  version, irreversibly; without ``confirm`` the plan only, nothing changed (``core/erase/``);
  ``resume_erase``: an erase a crash cut short, finished.

Each runs with the home's settings and its indexer, and answers what the runner answers.
"""

from datetime import date
from typing import Any

from memory_assets.core import reconcile
from memory_assets.core.erase import erase as erase_target
from memory_assets.core.erase import resume
from memory_assets.core.home import Home
from memory_assets.core.index.target import Target


def forget(home: Home, target: Target, *, force: bool = False) -> dict[str, Any]:
    """Hide ``target`` (one of a text, a row, a chat or a day) from everything served."""
    return reconcile.forget(home.settings, home.indexer, target, force=force)


def unforget(
    home: Home, text: str | None = None, *, chat: str | None = None, day: date | None = None
) -> dict[str, Any]:
    """Bring back what a ``forget`` of ``text``, ``chat`` or ``day`` hid."""
    return reconcile.unforget(home.settings, home.indexer, text, chat=chat, day=day)


def erase(home: Home, target: Target, *, confirm: bool = False, force: bool = False) -> dict[str, Any]:
    """The plan of erasing ``target`` (one of a text, a row, a chat or a day; nothing changed), or
    with ``confirm`` the erase carried out and its receipt."""
    return erase_target(home.settings, home.indexer, target, confirm=confirm, force=force)


def resume_erase(home: Home) -> dict[str, Any] | None:
    """The receipt of the erase a crash cut short, finished now (None: there was none)."""
    return resume(home.settings, home.indexer)
