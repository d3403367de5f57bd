"""Resources: the memory home (a ``Home``) and the embedder it hands its indexer.

With many homes (``MEMORY_ROOT``; ``defs/partitions.py``), ``MemoryHomeResource`` opens the home
of the run's user, read from the run when the resource is set up: the ``user`` tag (a run
launched with it), else the run's partition
(``dagster/partition``: every asset of a home is partitioned by user), else the users of its
partition range. A run works on one user's home, so the per-user run limit
(``defs/instance.py``) holds every run: a run over several users' partitions (a range launched
by hand; a backfill makes one run per user) is refused as its resources are set up, with the fix.
A sensor, which has no run, names the user: ``open_user(user)``; so does an upkeep batch, which
names no user in its tags and opens its members' homes itself (``defs/upkeep/``).

A one-user run holds the user's exclusion (``core/ops/upkeep/exclusion.py``) from its resources'
set-up to their teardown, as a batch holds each of its users, so a batch and a per-user run never
work on one home at once: the run waits at most ``MEMORY_UPKEEP_LOCK_WAIT_S`` (default 30 s) and
then fails naming the run that holds the user, having done nothing.
"""

import contextlib
from pathlib import Path

import dagster as dg
from pydantic import PrivateAttr

from memory_assets.core.home import Home, HomeEmbedder
from memory_assets.core.ops.upkeep.exclusion import UserHeld, exclusive
from memory_assets.core.ops.users import ROOT_ENV, open_user_home, user_settings
from memory_assets.core.settings import Settings, SettingsError
from memory_assets.defs import env
from memory_assets.defs.instance import USER_TAG
from memory_assets.defs.partitions import MANY_HOMES, day_partitions, user_of

RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
LOCK_WAIT_ENV = "MEMORY_UPKEEP_LOCK_WAIT_S"
LOCK_WAIT_S = 30.0


def lock_wait_s() -> float:
    """How long a one-user run waits for the user's exclusion (``MEMORY_UPKEEP_LOCK_WAIT_S``)."""
    return env.number(LOCK_WAIT_ENV, LOCK_WAIT_S)


def users_of_run(tags: dict[str, str], instance: dg.DagsterInstance | None) -> list[str]:
    """The users whose homes a run works on, from its tags (see the module docstring)."""
    if tags.get(USER_TAG):
        return [tags[USER_TAG]]
    if tags.get("dagster/partition"):
        user = user_of(tags["dagster/partition"])
        return [user] if user else []
    start, end = tags.get(RANGE_START), tags.get(RANGE_END)
    if start and end:
        first, last = user_of(start), user_of(end)
        if first == last:
            return [first] if first else []
        with dg.partition_loading_context(dynamic_partitions_store=instance):
            keys = day_partitions.get_partition_keys_in_range(dg.PartitionKeyRange(start, end))
        return sorted({u for k in keys if (u := user_of(k))})
    return []


class MemoryHomeResource(dg.ConfigurableResource):
    """Where the memory lives. Unset fields fall back to MEMORY_HOME / MEMORY_PROFILE / defaults;
    with many homes, ``root`` (MEMORY_ROOT) and the run's user (see the module docstring)."""

    home: str | None = None
    profile: str | None = None
    index_uri: str | None = None
    root: str | None = None
    _users: list[str] = PrivateAttr(default_factory=list)
    _held: contextlib.ExitStack | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        run = context.run
        if self.root_dir() is not None and run is not None:
            self._users = users_of_run(dict(run.tags), context.instance)
            if len(self._users) > 1:  # refused before any step opens a home
                raise self._not_one_user()
            if self._users:  # one user's run: under the user's exclusion, as a batch's user is
                self._held = contextlib.ExitStack()
                holder = f"run {run.run_id} ({run.job_name})"
                try:
                    self._held.enter_context(
                        exclusive(self.user_settings(self._users[0]), holder, lock_wait_s())
                    )
                except UserHeld as held:
                    raise dg.Failure(str(held), metadata={"held_by": held.holder}) from None

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None

    def root_dir(self) -> Path | None:
        """The root of the users' homes, or None for a single home."""
        if not MANY_HOMES and self.root is None:
            return None
        raw = self.root or env.text(ROOT_ENV)
        return Path(raw).expanduser().absolute() if raw else None

    @property
    def user(self) -> str | None:
        """The run's one user (many homes), else None; several is an error naming the fix."""
        if self.root_dir() is None:
            return None
        if len(self._users) != 1:
            raise self._not_one_user()
        return self._users[0]

    def _not_one_user(self) -> SettingsError:
        found = ", ".join(self._users[:5]) or "none"
        return SettingsError(
            f"this run works on {len(self._users)} users' homes ({found}); a run works on one "
            "user's home, so that the per-user run limit holds it: launch one run per user (a "
            "partition of `users`; a backfill over several users makes one run each)"
        )

    def settings(self) -> Settings:
        root = self.root_dir()
        if root is None:
            overrides = {"index_uri": self.index_uri} if self.index_uri else {}
            return Settings.load(self.home, self.profile, **overrides)
        return self.user_settings(self.user)  # type: ignore[arg-type]

    def user_settings(self, user: str) -> Settings:
        root = self.root_dir()
        if root is None:
            raise SettingsError("a user's home needs MEMORY_ROOT (the root of the users' homes)")
        return user_settings(root, user)

    def open(self, embedder: "EmbedderResource | None" = None) -> Home:
        """The home (a fresh ``Home`` each call: a run's steps may run in separate processes),
        with the run's embedder when one is given."""
        if self.root_dir() is not None:
            return self.open_user(self.user, embedder)  # type: ignore[arg-type]
        return Home(self.settings(), embedder.get() if embedder is not None else None)

    def open_user(self, user: str, embedder: "EmbedderResource | None" = None) -> Home:
        """A user's home under the root (many homes): a sensor's, or a run's that loops over users."""
        root = self.root_dir()
        if root is None:
            raise SettingsError("a user's home needs MEMORY_ROOT (the root of the users' homes)")
        return open_user_home(root, user, embedder=embedder.get() if embedder is not None else None)


class EmbedderResource(dg.ConfigurableResource):
    """The embedder, built on the first text that needs embedding (constructing it loads no model
    and calls no endpoint, so a run that changes nothing never imports torch).

    Unset fields read the environment (``Settings.load``): ``url`` MEMORY_EMBEDDING_URL (an
    OpenAI-compatible ``.../v1`` endpoint; unset = the local sentence-transformers model),
    ``model`` MEMORY_EMBEDDING_MODEL ('default' = the bundled all-MiniLM-L6-v2, or a local model
    path; with ``url``, the endpoint's model name), the key MEMORY_EMBEDDING_API_KEY or
    OPENAI_API_KEY. ``batch_size`` unset: 32 texts per local batch, 64 per request."""

    model: str | None = None
    url: str | None = None
    batch_size: int | None = None
    _embedder: HomeEmbedder | None = PrivateAttr(default=None)

    def get(self) -> HomeEmbedder:
        if self._embedder is None:
            overrides = {k: v for k, v in (("embedding_model", self.model), ("embedding_url", self.url)) if v}
            self._embedder = Home(Settings.load(**overrides), embedding_batch_size=self.batch_size).embedder
        return self._embedder
