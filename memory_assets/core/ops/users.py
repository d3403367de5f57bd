"""Many users, one home each (design §3.5): the user-id rule and the root -> home mapping.

A root (``MEMORY_ROOT``, default ``./.memory_root``) holds one complete home per user, in the
single-home layout (design §3.1), at ``<root>/users/<user_id>/``. Physical separation is the
isolation: a user's rows, logs, vault, tombstones and locks are that home's alone, so no query,
filter or reindex of one user can reach another's files or table.

* ``check_user_id``: a user id matches ``^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`` (so it is one path
  segment, never ``.``, ``..``, hidden, or holding a separator or a control character); anything
  else is a ``UserIdError`` naming the rule, raised before any path is built.
* ``user_home``: the directory of a user's home under a root (the id checked first).
* ``user_settings``: that home's ``Settings``. The variables that place a single home's files
  (``MEMORY_HOME``, ``MEMORY_INDEX_URI``, ``MEMORY_NOTEBOOK_DIR``, the ``.state`` file paths, ...)
  are ignored for a user's home, since one value for every user would put them all in one
  place; everything else (the models, the limits, the dream's pacing) applies to every user.
  The index may live elsewhere per user through ``MEMORY_INDEX_URI_TEMPLATE``, a URI holding
  ``{user}`` (``s3://bucket/memory/{user}/index``): the user's id (checked, so one path
  segment) takes its place. Without it a user's index is ``<home>/index``.
  The rows' ``user_id`` column keeps the single home's default (``default-user``): the home's
  directory is the user, and so the CLI (``--home <root>/users/<id>``) and Dagster open a user's
  home exactly as they open any home, reading and writing the same rows as the server.
* ``list_users``: the ids of the homes under a root, sorted (anything else there is left out).
* ``shared_embedder``: the one embedder every home under a root is opened with in a process that
  holds many (the server): the configured model, loaded once, its concurrent calls computed
  together.
* ``open_user_home``: a ``Home`` over a user's home; ``create=True`` initialises it on the first
  write (``init_home``, idempotent), else ``UnknownUserError`` when the user has none. While a
  deletion of the user is pending (``core/ops/delete_user.py``: its journal beside the homes,
  ``users/.deleting+<id>.json``), opening it is ``DeletionPending``: the home is neither read
  (a deletion was asked for) nor made again until the deletion is finished.

The server (``memory_assets/server``) and the Dagster layer over every home of a root use these;
nothing else builds a user's path.
"""

import os
import re
from collections.abc import Mapping
from pathlib import Path

from memory_assets.core.home import Home, HomeEmbedder
from memory_assets.core.models.batching import BatchingEmbedder
from memory_assets.core.models.embedder import Embedder, HttpEmbedder
from memory_assets.core.ops.status import init_home
from memory_assets.core.settings import Settings, SettingsError, environment

ROOT_ENV = "MEMORY_ROOT"
INDEX_URI_TEMPLATE_ENV = "MEMORY_INDEX_URI_TEMPLATE"
USER_PLACEHOLDER = "{user}"
DEFAULT_ROOT = Path(".memory_root")
USERS_DIR = "users"
USER_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
USER_ID_RULE = (
    "1-64 characters: ASCII letters, digits, '.', '_' or '-', starting with a letter or a digit "
    "(^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$)"
)
# Variables that place one home's files: ignored for a user's home (see the module docstring).
HOME_VARIABLES = frozenset(
    {
        "MEMORY_HOME",
        "MEMORY_PROFILE",
        "SUZENT_DATA_DIR",
        "MEMORY_NOTEBOOK_DIR",
        "MEMORY_INDEX_URI",
        "MEMORY_USER_ID",
        "MEMORY_CONFIRMATIONS_PATH",
        "MEMORY_SUPERSEDED_PATH",
        "MEMORY_DREAM_STATE_PATH",
        "MEMORY_MD_PATH",
    }
)


class UserIdError(SettingsError):
    """A user id that breaks the rule; nothing was built from it."""


class UnknownUserError(LookupError):
    """A read of a user who has no home yet (homes are created by the first write)."""


class DeletionPending(RuntimeError):
    """An opening of a user whose deletion was cut short: it is finished first."""


DELETING_PREFIX = ".deleting+"
"""Beside the homes, a deletion's journal (``.deleting+<id>.json``) and the home it moved aside
(``.deleting+<id>``): names no user id can take (a user id starts with a letter or a digit)."""


def deletion_journal(home: Path) -> Path:
    """The journal of a pending deletion of ``home`` (``core/ops/delete_user.py``)."""
    return home.parent / f"{DELETING_PREFIX}{home.name}.json"


def check_user_id(user_id: object) -> str:
    """``user_id`` when it matches the rule, else ``UserIdError`` naming the rule."""
    if not isinstance(user_id, str) or USER_ID_RE.fullmatch(user_id) is None:
        shown = repr(user_id)[:80]
        raise UserIdError(f"user id {shown} is not valid: a user id is {USER_ID_RULE}")
    return user_id


def resolve_root(root: str | Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The root of the users' homes: ``root``, else ``MEMORY_ROOT``, else ``./.memory_root``."""
    env = environment() if env is None else env
    return Path(root or env.get(ROOT_ENV) or DEFAULT_ROOT).expanduser().absolute()


def user_home(root: Path, user_id: str) -> Path:
    """``<root>/users/<user_id>``, the id checked before the path is built."""
    return Path(root) / USERS_DIR / check_user_id(user_id)


def user_settings(root: Path, user_id: str, env: Mapping[str, str] | None = None) -> Settings:
    """The settings of a user's home (see the module docstring for the variables it ignores, and
    for ``MEMORY_INDEX_URI_TEMPLATE``)."""
    env = environment() if env is None else env
    shared = {k: v for k, v in env.items() if k not in HOME_VARIABLES}
    home = user_home(root, user_id)
    template = shared.pop(INDEX_URI_TEMPLATE_ENV, None)
    overrides = {"index_uri": index_uri_for(template, user_id)} if template else {}
    return Settings.load(home, "default", env=shared, **overrides)


def index_uri_for(template: str, user_id: str) -> str:
    """The user's index URI from ``MEMORY_INDEX_URI_TEMPLATE`` (``{user}`` replaced by the id,
    checked first); a template without ``{user}`` is refused: it would give every user one table."""
    if USER_PLACEHOLDER not in template:
        raise SettingsError(
            f"{INDEX_URI_TEMPLATE_ENV}={template!r} has no {USER_PLACEHOLDER}: every user would share one "
            f"index; write it as, e.g., s3://bucket/memory/{USER_PLACEHOLDER}/index"
        )
    return template.replace(USER_PLACEHOLDER, check_user_id(user_id))


def list_users(root: Path) -> list[str]:
    """The ids of the users who have a home under ``root`` (directories whose name is a valid id)."""
    users = Path(root) / USERS_DIR
    if not users.is_dir():
        return []
    return sorted(p.name for p in users.iterdir() if USER_ID_RE.fullmatch(p.name) and p.is_dir())


def shared_embedder(root: Path, env: Mapping[str, str] | None = None) -> HomeEmbedder:
    """The embedder a process shares between every home under ``root`` that it opens
    (``open_user_home(embedder=...)``): the model the settings configure for any user (the default
    user's settings name it; the models apply to every user alike), wrapped so concurrent calls
    from many threads and homes are computed in one model call (``BatchingEmbedder``). Building it
    loads no model; the first text does."""
    return BatchingEmbedder(Home(user_settings(root, "default", env)).embedder)


def has_home(root: Path, user_id: str) -> bool:
    """Whether the user's home exists, under exactly this name, and is initialised."""
    return _initialised(user_settings(root, user_id)) and _named_exactly(root, user_id)


def _initialised(settings: Settings) -> bool:
    return settings.memory_dir.is_dir() and settings.notebook_dir.is_dir()


def _named_exactly(root: Path, user_id: str) -> bool:
    """Whether the users' directory lists ``user_id`` itself. On a case-insensitive file system
    ``Alice`` opens ``alice``'s home; comparing the listed names keeps the two apart."""
    try:
        return user_id in os.listdir(Path(root) / USERS_DIR)
    except FileNotFoundError:
        return False


def open_user_home(
    root: Path,
    user_id: str,
    *,
    create: bool = False,
    embedder: Embedder | HttpEmbedder | None = None,
    env: Mapping[str, str] | None = None,
) -> Home:
    """A ``Home`` over the user's home. ``create``: initialise it when missing (a first write);
    otherwise a user without a home is ``UnknownUserError``. ``embedder``: one shared by every
    home of the process (the model loads once)."""
    settings = user_settings(root, user_id, env)
    if deletion_journal(settings.home).exists():
        raise DeletionPending(
            f"the deletion of user {user_id!r} was cut short; it is finished by deleting the user "
            f"again (DELETE /v1/users/{user_id}?confirm=true, or `memory-assets --root {root} erase "
            f"--all --user {user_id} --yes`), or by the memory service's next start; then a write "
            "makes a new home"
        )
    if create:
        init_home(settings)
    elif not _initialised(settings):
        raise UnknownUserError(f"user {user_id!r} has no memory yet")
    if not _named_exactly(root, user_id):
        raise UserIdError(
            f"user id {user_id!r} names another user's home on this case-insensitive file system; "
            "use user ids that differ by more than letter case (lower case, say)"
        )
    return Home(settings, embedder)
