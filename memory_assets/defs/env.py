"""The Dagster layer's own settings read from the environment: numbers that shape the runs, not a
home (the upkeep batches' size and wait, a failed user's backoff, the exclusion's wait, a tick's
budget), and the variables read when the code location loads (the root of many homes, the
executor). No other module of ``defs/`` reads the environment.

``text(name)``: the variable's value, or None when it is unset or empty.

``number(name, default, kind, minimum)``: the variable's value, or ``default`` when it is unset or
empty; a value that is not a number of that kind, or is under ``minimum``, is a ``SettingsError``
naming the variable, what it holds and the default, so a tick or a run fails saying what to fix.
"""

import os

from memory_assets.core.settings import SettingsError


def text(name: str) -> str | None:
    return os.environ.get(name) or None


def number(name: str, default: float, kind: type[int] | type[float] = float, minimum: float = 0) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        what = "a whole number" if kind is int else "a number of seconds"
        raise SettingsError(f"{name}={raw!r}: give {what} of at least {minimum:g} (default {default:g})")
    return value
