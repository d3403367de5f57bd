"""``Planner``: the homes under a root as the upkeep's planner sees them (design §11.3).

A face that keeps many homes current (the Dagster homes sensor) decides which homes to look at
and when, and what to do with what it finds; the planner answers the questions about the root:

* ``users_signature`` and ``homes``: every home's id, listed again only when the root's
  ``users/`` directory changed (a home appeared or went; a deletion's journal appearing or going
  changes it too), kept per root in this process between calls; ``deleting``: the users whose
  deletion is pending (a journal beside the homes: ``core/ops/delete_user.py``), never looked at;
* ``changes``: the root's change feed (``core/ops/root_feed.py``) from a position on;
* ``backing_off``: when a user whose last upkeep failed may be looked at again
  (``outcomes.py``: the ``UPKEEP_RETRY`` backoff), while it is backing off;
* ``look``: one home's look (``look.py``) with its ``LookState`` loaded from the root; the caller
  keeps the state (``LookState.save``) once it has used the look;
* ``now`` and ``again``: the planner's clock (``freshness.clock``), and when a home with a request
  in flight, or a run of its own, is looked at again (``backoff.RUN_RETRY``'s first wait).
"""

from pathlib import Path

from memory_assets.core.backoff import RUN_RETRY
from memory_assets.core.home import Home
from memory_assets.core.index import freshness
from memory_assets.core.ops.delete_user import pending_deletions
from memory_assets.core.ops.root_feed import Change, read_changes
from memory_assets.core.ops.upkeep.look import Look, RunStates, look_at
from memory_assets.core.ops.upkeep.look_state import LookState
from memory_assets.core.ops.upkeep.outcomes import load_outcome, retry_due
from memory_assets.core.ops.users import USERS_DIR, list_users
from memory_assets.core.settings import Settings

_LISTED: dict[str, tuple[str, list[str], set[str]]] = {}
"""Per root: the users directory's signature, every home's id, sorted, and the users whose
deletion is pending."""


class Planner:
    """The upkeep's questions about the homes under ``root`` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def now() -> float:
        return freshness.clock()

    @staticmethod
    def again(now: float) -> float:
        """When a home with a request in flight (or a run of its own) is looked at again."""
        return now + RUN_RETRY.first_s

    def users_signature(self) -> str:
        """The ``users/`` directory's signature: it changes when a home appears or goes."""
        try:
            st = (self.root / USERS_DIR).stat()
        except FileNotFoundError:
            return "-"
        return f"{st.st_ino}:{st.st_mtime_ns}"

    def _listing(self, sig: str) -> tuple[str, list[str], set[str]]:
        listed = _LISTED.get(str(self.root))
        if listed is None or listed[0] != sig:
            listed = (sig, list_users(self.root), set(pending_deletions(self.root)))
            _LISTED[str(self.root)] = listed
        return listed

    def homes(self, sig: str) -> list[str]:
        """Every home's id, sorted, listed again only when ``sig`` changed."""
        return self._listing(sig)[1]

    def deleting(self, sig: str) -> set[str]:
        """The users whose deletion is pending."""
        return self._listing(sig)[2]

    def changes(self, position: tuple[str, int] | None) -> tuple[list[Change], tuple[str, int]]:
        """The change feed's entries after ``position``, and the position after them."""
        return read_changes(self.root, position)

    def backing_off(self, user: str, now: float) -> float | None:
        """When a user whose last upkeep failed may go in a batch again, while it is backing off."""
        try:
            outcome = load_outcome(self.root, user)
        except Exception:  # a user id the outcome cannot name is looked at, and warned of, as ever
            return None
        return None if retry_due(outcome, now) or outcome is None else outcome.retry_at

    def look(
        self, user: str, settings: Settings, run_state: RunStates, *, run_key: str, now: float
    ) -> tuple[Look, LookState] | None:
        """What ``user``'s home needs and its state brought forward (None: a home not initialised
        yet, which its first write creates)."""
        if not (settings.archive_dir.is_dir() and settings.notebook_dir.is_dir()):
            return None
        state = LookState.load(self.root, user)
        outcome = load_outcome(self.root, user)
        look = look_at(Home(settings), state, run_state, run_key=run_key, outcome=outcome, now=now)
        return look, state
