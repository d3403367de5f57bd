"""Every invariant check of a home, as ``memory-assets check`` runs them.

``check_home``: the audit's checks (``core/audit/checks.run_all``, design §7), then whether legacy
rows are recorded nowhere else (``core/legacy/find.recorded_nowhere_else``). A check that cannot
run (an unreadable table, an embedding endpoint down) is a failed outcome naming the error, so the
others still run. ``check_one``: one of those checks alone (an asset check's evaluation), raising
what the check raises, and building the home's embedder only for the check that searches.
``accept_logs``: a person's intended repair of daily logs (a log re-saved as
UTF-8, say) accepted as their new record in the logs' ledger, so ``logs_append_only`` passes again.
"""

from collections.abc import Iterable

from memory_assets.core.audit.checks import run_all, run_one
from memory_assets.core.capture.ledger import accept
from memory_assets.core.home import Home
from memory_assets.core.legacy.find import CHECK_NAME, recorded_nowhere_else
from memory_assets.core.outcome import CheckOutcome


def check_home(home: Home) -> list[CheckOutcome]:
    """Every check's outcome, in order."""
    settings = home.settings
    outcomes = run_all(settings, home.store, home.embedder)
    try:
        outcomes.append(recorded_nowhere_else(settings))
    except RuntimeError as exc:  # the table cannot be read (damaged, say): reported like run_all's
        outcomes.append(CheckOutcome(CHECK_NAME, False, "error", "the check could not run", [str(exc)]))
    return outcomes


SEARCHES = "search_finds_rows"
"""The one check that embeds (the configured model asks its questions)."""


def check_one(home: Home, name: str) -> CheckOutcome:
    """The outcome of the audit's check ``name`` (``core/audit/checks.CHECK_NAMES``) over
    ``home``; an error the check raises is raised (the caller reports it as a check that could not
    run). Only ``search_finds_rows`` asks for ``home.embedder``."""
    return run_one(name, home.settings, home.store, home.embedder if name == SEARCHES else None)


def accept_logs(home: Home, names: Iterable[str]) -> list[str]:
    """The named daily logs' current content accepted as their record (a deleted log's record
    dropped); the names accepted. ``ValueError`` for a name that is neither a log nor recorded."""
    settings = home.settings
    return accept(settings.memory_dir, names, settings.archive_dir)
