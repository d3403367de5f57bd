"""Named failpoints at the step boundaries of writers, for fault-injection tests with real processes.

Inert unless ``MEMORY_FAILPOINTS`` is set in the process's environment (a dict lookup per call
otherwise). Its value is ``name=action`` pairs separated by ``;``:

* ``kill``: the process SIGKILLs itself at that point (a crash: no cleanup, no finally blocks);
  ``kill@N``: the same, the Nth time the point is reached in this process;
* ``kill-once:/path/to/marker``: the first process to reach the point creates the marker (atomically)
  and SIGKILLs itself; every later one, in any process, passes (a crash that a retry survives);
* ``pause:/path/to/barrier``: create ``/path/to/barrier.reached``, then wait until
  ``/path/to/barrier`` exists (a barrier a test releases, to interleave two real processes);
* ``raise``: raise ``FailpointError``.

Failpoints in the code (grep ``failpoint(``): ``index.planned`` (a file's plan made, before its
lock), ``index.locked`` (the lock held and the plan re-made, before embedding),
``index.embedded`` (vectors computed, nothing written), ``index.deleted`` (the delete
committed, the add not yet), ``write_path.intent`` (a transcript turn's bytes recorded as pending,
not yet appended), ``write_path.appended`` (appended, the session's offset not yet moved),
``dream.consolidated`` (a dream run's pages written, nothing committed), ``dream.committed`` (its
commit in the fold ledger, the follow-up not yet run), ``upkeep.held`` (a batch holds a user's
exclusion, no step run yet), ``upkeep.user_done`` (a batch recorded and reported one user),
``delete_user.journal`` (a user's deletion journal written, nothing removed),
``delete_user.aside`` (the home moved aside), ``delete_user.traces`` (the root's traces removed),
``delete_user.removed`` (the home removed, its lock files not yet), ``delete_user.logged`` (the
receipt logged, the journal not yet removed).
"""

import os
import signal
import time
from pathlib import Path

from memory_assets.core.settings import FAILPOINTS_ENV, failpoint_actions

ENV = FAILPOINTS_ENV
PAUSE_TIMEOUT_S = 300
_reached: dict[str, int] = {}


class FailpointError(RuntimeError):
    pass


def _actions() -> dict[str, str]:
    raw = failpoint_actions() or ""
    out = {}
    for part in raw.split(";"):
        name, sep, action = part.partition("=")
        if sep and name.strip():
            out[name.strip()] = action.strip()
    return out


def failpoint(name: str) -> None:
    """Run the action configured for ``name``, if any."""
    if failpoint_actions() is None:
        return
    action = _actions().get(name)
    if not action:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if action.startswith("kill@"):
        if _reached[name] == int(action.removeprefix("kill@")):
            os.kill(os.getpid(), signal.SIGKILL)
    elif action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action.startswith("kill-once:"):
        try:
            os.close(os.open(action.removeprefix("kill-once:"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return  # a process before this one was killed here
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "raise":
        raise FailpointError(f"failpoint {name} raised")
    elif action.startswith("pause:"):
        barrier = Path(action.removeprefix("pause:"))
        Path(f"{barrier}.reached").touch()
        deadline = time.monotonic() + PAUSE_TIMEOUT_S
        while not barrier.exists():
            if time.monotonic() > deadline:
                raise FailpointError(f"failpoint {name}: barrier {barrier} never released")
            time.sleep(0.01)
    else:
        raise FailpointError(
            f"failpoint {name}: unknown action {action!r} (kill, kill@N, kill-once:PATH, raise, pause:PATH)"
        )
