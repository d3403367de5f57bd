"""Where a memory home's files live, read from arguments, environment variables and defaults.

Two profiles:

* ``default``: one root, ``MEMORY_HOME`` (default ``./.memory_home``)::

      memory/archive/YYYY-MM-DD.md   memory/{MEMORY,persona,user}.md   memory/.index_state.json
      notebook/ (the vault, with .state/)   index/ (LanceDB)   transcripts/

* ``suzent``: an existing assistant data directory (``~/.suzent`` or ``SUZENT_DATA_DIR``) used in
  place: memory under ``sandbox/shared/memory``, LanceDB under ``memory``, the vault under
  ``notebook`` or the host side of a ``<host>:/mnt/notebook`` sandbox volume.

Precedence, highest first: explicit arguments, environment variables, profile defaults.
``resolve_notebook_dir()`` is the only place that decides where the vault is.
"""

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PROFILES = ("default", "suzent")
DEFAULT_HOME = Path(".memory_home")
NOTEBOOK_VOLUME_RE = re.compile(r"^(?P<host>.+):/mnt/notebook/?(?::\w+)?$")


class SettingsError(ValueError):
    """A setting that cannot be honoured; the message says which and how to fix it."""


@dataclass(frozen=True)
class Settings:
    home: Path
    profile: str
    memory_dir: Path
    notebook_dir: Path
    index_uri: str
    transcripts_dir: Path
    user_id: str = "default-user"
    # LanceDB storage options for an index on object storage (``s3://...``): MEMORY_INDEX_STORAGE_OPTIONS
    # as ``key=value,key=value`` or a JSON object. LanceDB also reads the standard variables itself
    # (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL, ...). They may hold
    # keys, so they are never shown: not in the repr, not in a log line, not in an error.
    index_storage_options: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    embedding_model: str = "default"
    table_name: str = "archival_memories"
    # An OpenAI-compatible embeddings endpoint (``.../v1``); unset = the local sentence-transformers model.
    embedding_url: str | None = None
    embedding_api_key: str | None = field(default=None, repr=False)
    recall_log_max_bytes: int = 5_000_000  # the recall log rotates (one previous file kept) past this size
    version_retention_days: float = 1.0  # optimize prunes table versions older than this
    # How long a version a read may be on is kept after a newer one replaced it (design §8.6): the
    # write lane prunes every version but the latest once no read of the table, in any process,
    # is in flight (core/index/table_reads.py); a read still in flight after the prune's wait
    # keeps the versions replaced within this time, and so does every other prune (an
    # optimize's). 0 keeps none. The default stays above the longest read measured
    # (docs/benchmarks.md, "Reads from other processes").
    lane_version_retention_s: float = 60.0
    # forget and erase refuse (unless forced) a text held by more than this share of the home's
    # lines and turns: forgetting or erasing a common word is a mistake, not a request (1 or more:
    # never refused).
    forget_max_share: float = 0.05
    search_max_chars: int = 2000  # a hit's content is cut to this many characters (``truncated: true``)
    # How long a turn stays searchable in the recall tier (its transcript file always stays):
    # 0 = as long as the transcript holds it (the default; docs/reference/settings.md says why).
    # N > 0: a turn older than N days leaves the index the day it passes (the index sensors).
    transcript_retention_days: int = 0
    # The write path: how many known facts the extraction sees, and how long recalling them may take.
    known_facts_limit: int = 10
    recall_timeout_s: float = 2.0
    # An OpenAI-compatible chat endpoint for extraction (and, later, the dream); unset = the
    # deterministic built-ins. The key is read from the environment variable named by llm_key_var.
    llm_url: str | None = None
    llm_model: str | None = None
    llm_key_var: str = "MEMORY_LLM_API_KEY"
    llm_api_key: str | None = field(default=None, repr=False)
    llm_timeout_s: float = 30.0
    # The dream's pacing (the existing runner's gates and defaults) and its consolidator.
    dream_max_days: int = 14  # batch size; more pending days than this runs at once ("behind")
    dream_min_hours: float = 24.0  # otherwise, at least this long since the last attempt ...
    dream_min_facts: int = 20  # ... and at least this many fact lines pending
    dream_max_retries: int = 3  # failed attempts on one batch before it is skipped (unconsolidated)
    dream_lint_enabled: bool = True
    dream_lint_min_days: float = 7.0  # days between lint passes
    dream_consolidator: str = "rules"  # "rules" (deterministic) or "agent" (the chat model's tool loop)
    dream_timeout_s: float = 600.0  # the agent consolidator's time limit per run
    dream_agent_max_steps: int = 40  # the agent consolidator's tool-call limit per run
    # Paths that default to their place in the home, each overridable.
    confirmations_file: Path | None = None
    superseded_file: Path | None = None
    dream_state_file: Path | None = None
    memory_md_file: Path | None = None

    @property
    def archive_dir(self) -> Path:
        return self.memory_dir / "archive"

    @property
    def state_dir(self) -> Path:
        return self.notebook_dir / ".state"

    @property
    def tombstones_path(self) -> Path:
        return self.state_dir / "tombstones.jsonl"

    @property
    def erase_journal_path(self) -> Path:
        """``.state/erase_journal.json``: an erase in progress (``core/erase/journal.py``)."""
        return self.state_dir / "erase_journal.json"

    @property
    def recall_log_path(self) -> Path:
        return self.state_dir / "recall_log.jsonl"

    @property
    def confirmations_path(self) -> Path:
        """``.state/confirmations.jsonl``: restatements the write path recorded instead of logging."""
        return self.confirmations_file or self.state_dir / "confirmations.jsonl"

    @property
    def superseded_path(self) -> Path:
        """``.state/superseded.txt``: the dream's hand-off of the log lines it folded into pages."""
        return self.superseded_file or self.state_dir / "superseded.txt"

    @property
    def dream_state_path(self) -> Path:
        """``.state/dream_state.json``: the dream's persisted pacing state."""
        return self.dream_state_file or self.state_dir / "dream_state.json"

    @property
    def folds_path(self) -> Path:
        """``.state/folds.jsonl``: which daily-log lines the dream read and folded, line by line."""
        return self.state_dir / "folds.jsonl"

    @property
    def dream_journal_path(self) -> Path:
        """``.state/dream_journal.jsonl``: the pages a dream run in flight wrote, to roll back a crash."""
        return self.state_dir / "dream_journal.jsonl"

    @property
    def write_path_state_path(self) -> Path:
        """``.state/write_path.json``: how far each transcript has been ingested, and the turn in flight."""
        return self.state_dir / "write_path.json"

    @property
    def memory_md_path(self) -> Path:
        """The core file ``MEMORY.md`` (generated zone plus a person's manual zone)."""
        return self.memory_md_file or self.memory_dir / "MEMORY.md"

    def core_file_path(self, filename: str) -> Path:
        """Where a core file (``persona.md``, ``user.md``, ``MEMORY.md``) lives."""
        return self.memory_md_path if filename == "MEMORY.md" else self.memory_dir / filename

    @property
    def log_md(self) -> Path:
        return self.notebook_dir / "log.md"

    @property
    def index_state_path(self) -> Path:
        return self.memory_dir / ".index_state.json"

    @property
    def dedup_dir(self) -> Path:
        """Where the dedup measurement writes its parquet files: beside a local index, else in the home."""
        return (Path(self.index_uri).parent if self.index_is_local else self.home) / "dedup"

    @property
    def index_is_local(self) -> bool:
        return "://" not in self.index_uri

    def storage_options(self) -> dict[str, str]:
        """The LanceDB storage options of the index (empty: LanceDB's defaults and environment)."""
        return dict(self.index_storage_options)

    def require_initialised(self) -> None:
        """Raise a clear error when the home has not been set up (nothing is created here)."""
        missing = [p for p in (self.memory_dir, self.notebook_dir) if not p.is_dir()]
        if missing:
            names = ", ".join(str(p) for p in missing)
            raise SettingsError(
                f"memory home {self.home} is not initialised ({names} missing); run "
                f"`memory-assets --home {self.home} --profile {self.profile} init` first"
            )

    @classmethod
    def load(
        cls,
        home: str | Path | None = None,
        profile: str | None = None,
        env: Mapping[str, str] | None = None,
        **overrides: str,
    ) -> "Settings":
        env = environment() if env is None else env
        profile = profile or env.get("MEMORY_PROFILE") or "default"
        if profile not in PROFILES:
            raise SettingsError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
        if profile == "suzent":
            root = Path(home or env.get("SUZENT_DATA_DIR") or env.get("MEMORY_HOME") or "~/.suzent")
            root = root.expanduser().absolute()
            memory_dir = root / "sandbox" / "shared" / "memory"
            index_uri = str(root / "memory")
        else:
            root = Path(home or env.get("MEMORY_HOME") or DEFAULT_HOME).expanduser().absolute()
            memory_dir = root / "memory"
            index_uri = str(root / "index")
        notebook = overrides.get("notebook_dir") or env.get("MEMORY_NOTEBOOK_DIR")
        key_var = overrides.get("llm_key_var") or env.get("MEMORY_LLM_KEY_VAR") or "MEMORY_LLM_API_KEY"
        return cls(
            home=root,
            profile=profile,
            memory_dir=memory_dir,
            notebook_dir=resolve_notebook_dir(root, profile, notebook),
            index_uri=overrides.get("index_uri") or env.get("MEMORY_INDEX_URI") or index_uri,
            transcripts_dir=root / "transcripts",
            user_id=overrides.get("user_id") or env.get("MEMORY_USER_ID") or "default-user",
            index_storage_options=storage_options(
                overrides.get("index_storage_options") or env.get(STORAGE_OPTIONS_VAR)
            ),
            embedding_model=overrides.get("embedding_model")
            or env.get("MEMORY_EMBEDDING_MODEL")
            or "default",
            embedding_url=overrides.get("embedding_url") or env.get("MEMORY_EMBEDDING_URL") or None,
            embedding_api_key=env.get("MEMORY_EMBEDDING_API_KEY") or env.get("OPENAI_API_KEY") or None,
            recall_log_max_bytes=_number(env, overrides, "MEMORY_RECALL_LOG_MAX_BYTES", 5_000_000, int),
            version_retention_days=_number(env, overrides, "MEMORY_VERSION_RETENTION_DAYS", 1.0, float),
            lane_version_retention_s=_number(
                env, overrides, "MEMORY_LANE_VERSION_RETENTION_S", 60.0, float, zero_ok=True
            ),
            forget_max_share=_number(env, overrides, "MEMORY_FORGET_MAX_SHARE", 0.05, float),
            search_max_chars=_number(env, overrides, "MEMORY_SEARCH_MAX_CHARS", 2000, int),
            transcript_retention_days=_number(
                env, overrides, "MEMORY_TRANSCRIPT_RETENTION_DAYS", 0, int, zero_ok=True
            ),
            known_facts_limit=_number(env, overrides, "MEMORY_KNOWN_FACTS_LIMIT", 10, int),
            recall_timeout_s=_number(env, overrides, "MEMORY_RECALL_TIMEOUT_S", 2.0, float),
            llm_url=overrides.get("llm_url") or env.get("MEMORY_LLM_URL") or None,
            llm_model=overrides.get("llm_model") or env.get("MEMORY_LLM_MODEL") or None,
            llm_key_var=key_var,
            llm_api_key=env.get(key_var) or env.get("OPENAI_API_KEY") or None,
            llm_timeout_s=_number(env, overrides, "MEMORY_LLM_TIMEOUT_S", 30.0, float),
            dream_max_days=_number(env, overrides, "MEMORY_DREAM_MAX_DAYS", 14, int),
            dream_min_hours=_number(env, overrides, "MEMORY_DREAM_MIN_HOURS", 24.0, float, zero_ok=True),
            dream_min_facts=_number(env, overrides, "MEMORY_DREAM_MIN_FACTS", 20, int, zero_ok=True),
            dream_max_retries=_number(env, overrides, "MEMORY_DREAM_MAX_RETRIES", 3, int),
            dream_lint_enabled=(
                overrides.get("dream_lint_enabled") or env.get("MEMORY_DREAM_LINT_ENABLED") or "1"
            )
            not in ("0", "false", "no", "off"),
            dream_lint_min_days=_number(
                env, overrides, "MEMORY_DREAM_LINT_MIN_DAYS", 7.0, float, zero_ok=True
            ),
            dream_consolidator=_choice(
                env, overrides, "MEMORY_DREAM_CONSOLIDATOR", "rules", ("rules", "agent")
            ),
            dream_timeout_s=_number(env, overrides, "MEMORY_DREAM_TIMEOUT_S", 600.0, float),
            dream_agent_max_steps=_number(env, overrides, "MEMORY_DREAM_AGENT_MAX_STEPS", 40, int),
            confirmations_file=_path(env, overrides, "MEMORY_CONFIRMATIONS_PATH"),
            superseded_file=_path(env, overrides, "MEMORY_SUPERSEDED_PATH"),
            dream_state_file=_path(env, overrides, "MEMORY_DREAM_STATE_PATH"),
            memory_md_file=_path(env, overrides, "MEMORY_MD_PATH"),
        )


STORAGE_OPTIONS_VAR = "MEMORY_INDEX_STORAGE_OPTIONS"


def storage_options(raw: str | None) -> tuple[tuple[str, str], ...]:
    """``MEMORY_INDEX_STORAGE_OPTIONS``: ``key=value`` pairs separated by commas, or a JSON object
    of strings. A malformed value is an error naming the variable and the form, never its value
    (it may hold a key)."""
    if not raw or not raw.strip():
        return ()
    form = 'key=value,key=value (endpoint=http://host:9000,allow_http=true) or a JSON object {"key": "value"}'
    text = raw.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            raise SettingsError(f"{STORAGE_OPTIONS_VAR} is not valid JSON; write {form}") from None
        if not isinstance(data, dict) or not all(
            isinstance(v, str | int | float | bool) for v in data.values()
        ):
            raise SettingsError(f"{STORAGE_OPTIONS_VAR} must map option names to strings; write {form}")
        pairs = [(str(k), str(v).lower() if isinstance(v, bool) else str(v)) for k, v in data.items()]
    else:
        pairs = []
        for n, item in enumerate(text.split(","), 1):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise SettingsError(f"{STORAGE_OPTIONS_VAR}: item {n} is not key=value; write {form}")
            pairs.append((key.strip(), value.strip()))
    return tuple(sorted(pairs))


def _path(env: Mapping[str, str], overrides: Mapping[str, str], name: str) -> Path | None:
    """An explicit path from an override (keyed by the setting's name) or the environment."""
    raw = overrides.get(name.removeprefix("MEMORY_").lower()) or env.get(name)
    return Path(raw).expanduser().absolute() if raw else None


def _choice(
    env: Mapping[str, str], overrides: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]
) -> str:
    raw = overrides.get(name.removeprefix("MEMORY_").lower()) or env.get(name) or default
    if raw not in choices:
        raise SettingsError(f"{name}={raw!r}: choose one of {', '.join(choices)}")
    return raw


def _number(
    env: Mapping[str, str],
    overrides: Mapping[str, str],
    name: str,
    default: float,
    kind: type,
    zero_ok: bool = False,
) -> Any:
    """A positive number (or zero, when ``zero_ok``) from an override (keyed by the setting's
    name) or the environment. NaN and infinity are refused: every comparison with NaN is false,
    so it would pass any bound (a NaN time limit disables the limit)."""
    key = name.removeprefix("MEMORY_").lower()
    raw = overrides.get(key) or env.get(name)
    if raw in (None, ""):
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise SettingsError(
            f"{name}={raw!r} is not a {kind.__name__}; set a positive number or unset it"
        ) from None
    if not math.isfinite(value):
        raise SettingsError(
            f"{name}={raw!r} is not a finite number; set a positive number (the default is {default}) or unset it"
        )
    if value < 0 or (value == 0 and not zero_ok):
        raise SettingsError(f"{name}={raw!r} must be positive; set a positive number or unset it")
    return value


def _suzent_volumes(root: Path) -> list[str]:
    """``sandbox_volumes`` from the assistant's own config files, later files winning."""
    volumes: list[str] = []
    for name in ("default.yaml", "local.yaml"):
        path = root / "config" / name
        if not path.is_file():
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace")) or {}
        except yaml.YAMLError as exc:
            raise SettingsError(f"{path}: not valid YAML ({exc}); fix the file or pass --notebook") from exc
        if isinstance(data, dict):
            for key, value in data.items():
                if str(key).lower() == "sandbox_volumes" and isinstance(value, list):
                    volumes = [str(v) for v in value]
    return volumes


def resolve_notebook_dir(root: Path, profile: str, explicit: str | Path | None = None) -> Path:
    """The single resolver of the vault's location.

    An explicit setting wins. The suzent profile then honours a ``<host>:/mnt/notebook`` volume
    from the assistant's config (a relative host path is taken relative to the parent of the data
    directory, where the assistant's default ``.suzent/notebook`` volume points), falling back to
    ``<root>/notebook``. Measuring against a stale bootstrap skeleton instead of the mounted vault
    is the mistake design §3.3 records; every reader of the vault goes through this function.
    """
    if explicit:
        return Path(explicit).expanduser().absolute()
    if profile == "suzent":
        for volume in reversed(_suzent_volumes(root)):
            m = NOTEBOOK_VOLUME_RE.match(volume.strip())
            if m:
                host = Path(m.group("host")).expanduser()
                return host if host.is_absolute() else (root.parent / host).absolute()
    return root / "notebook"


# The process's environment. Every module that needs a variable outside a home's ``Settings``
# reads it through one of these (memory_assets_tests/test_tiers.py holds that no other module
# touches ``os.environ``), so the variables the package reads are all named in a settings module.

LOCK_DIR_ENV = "MEMORY_LOCK_DIR"
FAILPOINTS_ENV = "MEMORY_FAILPOINTS"
PROGRESS_BARS_ENV = "HF_HUB_DISABLE_PROGRESS_BARS"


def environment() -> Mapping[str, str]:
    """The process's environment variables, the default source of ``Settings.load`` and of a
    user's settings (``core/ops/users.py``)."""
    return os.environ


def variable(name: str) -> str | None:
    """The value of the environment variable ``name``; None when it is unset or empty."""
    return os.environ.get(name) or None


def lock_dir_sources() -> tuple[str | None, str | None]:
    """``MEMORY_LOCK_DIR`` and ``XDG_CACHE_HOME`` (None when unset or empty): where the lock files
    go (``core/durable.py``)."""
    return variable(LOCK_DIR_ENV), variable("XDG_CACHE_HOME")


def failpoint_actions() -> str | None:
    """``MEMORY_FAILPOINTS`` as set (``name=action;...``), or None when it is not set at all."""
    return os.environ.get(FAILPOINTS_ENV)


def quiet_native_logs() -> None:
    """LanceDB's Rust core logs errors only, unless ``LANCEDB_LOG`` says otherwise."""
    os.environ.setdefault("LANCEDB_LOG", "error")


def offline_models() -> None:
    """The local model loads from disk, never from a hub, with no progress bars and passive
    OpenMP threads, unless a variable says otherwise. Must run before huggingface_hub or torch
    is imported (``core/models/embedder.py`` runs it when it is imported).

    Without the offline switches a missing model spends a minute on DNS retries; spinning OpenMP
    threads slow encoding on a loaded machine (docs/benchmarks.md)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault(PROGRESS_BARS_ENV, "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def progress_bars_wanted() -> bool:
    """``HF_HUB_DISABLE_PROGRESS_BARS`` is set to 0 (or false, no, off): keep the model's bars."""
    return os.environ.get(PROGRESS_BARS_ENV, "1").strip().lower() in ("0", "false", "no", "off")


def child_environment(**extra: str) -> dict[str, str]:
    """The environment of a child process: this one's, with ``extra`` set."""
    return {**os.environ, **extra}
