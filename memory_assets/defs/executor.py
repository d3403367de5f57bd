"""Which executor runs a run's steps, chosen when the code location loads (``MEMORY_EXECUTOR``).

* ``in_process`` (the default): every step of a run in the run's own process, so the embedding
  model loads once per run rather than once per step (a run here is one to three steps). It
  was the code location's executor before this setting existed (design §2), so the default
  keeps every existing run as it was; past one machine the run, not the step, is spread (a
  Kubernetes Job per run, design §11.5).
* ``multiprocess``: Dagster's default, a process per step (several steps of a run at once, each
  paying the imports and the model's load).
* ``celery``: each step is a task on a Celery queue, executed by ``dagster-celery`` workers on
  any machine that has the code, the instance (PostgreSQL, for more than one machine) and the
  homes' files. The broker is ``MEMORY_CELERY_BROKER`` (``redis://host:6379/0``; Redis from
  Debian was tested here), the result backend ``MEMORY_CELERY_BACKEND`` (default: the broker).
  Both are passed to Dagster as environment-variable references, so a password in a URL is never
  written into a run's config. Needs the ``celery`` extra (``pip install 'memory-assets[celery]'``).

docs/guides/scale.md gives the worker's command and what was tested.
"""

import dagster as dg

from memory_assets.core.settings import SettingsError
from memory_assets.defs.env import text

EXECUTOR_VAR = "MEMORY_EXECUTOR"
BROKER_VAR = "MEMORY_CELERY_BROKER"
BACKEND_VAR = "MEMORY_CELERY_BACKEND"
EXECUTORS = ("in_process", "multiprocess", "celery")


def celery_config() -> dict[str, object]:
    """The celery executor's config: the broker and backend as environment references."""
    if not text(BROKER_VAR):
        raise SettingsError(
            f"{EXECUTOR_VAR}=celery needs {BROKER_VAR}, the Celery broker's URL (redis://host:6379/0)"
        )
    backend = BACKEND_VAR if text(BACKEND_VAR) else BROKER_VAR
    return {"broker": {"env": BROKER_VAR}, "backend": {"env": backend}}


def executor() -> dg.ExecutorDefinition:
    """The executor ``MEMORY_EXECUTOR`` names (see the module docstring)."""
    choice = text(EXECUTOR_VAR) or "in_process"
    if choice == "in_process":
        return dg.in_process_executor
    if choice == "multiprocess":
        return dg.multiprocess_executor
    if choice == "celery":
        try:
            from dagster_celery import celery_executor
        except ImportError:
            raise SettingsError(
                f"{EXECUTOR_VAR}=celery needs dagster-celery: pip install 'memory-assets[celery]'"
            ) from None
        return celery_executor.configured(celery_config(), name="celery")
    raise SettingsError(f"{EXECUTOR_VAR}={choice!r}: choose one of {', '.join(EXECUTORS)}")
