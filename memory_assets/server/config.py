"""The server's settings: from arguments, then environment variables, then defaults.

A home's own settings (the model, the dream, the limits of search) stay ``Settings``, shared by
every user's home (``core/ops/users.py``); these are the process's: where the homes are, where
it listens, who may call it and how much one call may ask. ``docs/reference/settings.md`` lists
every one.

``check_bind`` is the rule for exposure: a loopback address (127.0.0.0/8, ::1, ``localhost``)
may run without tokens; any other address refuses to start without a token file.
"""

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memory_assets.core.ops.users import resolve_root
from memory_assets.core.settings import SettingsError, _number

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
SEARCH_LIMIT_CAP = 100  # the bound: a setting may lower it, never raise it
CONTEXT_CAP = 5
LOOPBACK_NAMES = ("localhost",)


@dataclass(frozen=True)
class ServerConfig:
    root: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    tokens_file: Path | None = None
    max_body_bytes: int = 1_048_576  # a larger request is a 413
    max_text_chars: int = 32_768  # per text field (a turn's user or assistant text, a memory, a query)
    max_search_limit: int = SEARCH_LIMIT_CAP
    max_context: int = CONTEXT_CAP
    max_in_flight: int = 64  # requests being served at once; past it a 503 with Retry-After
    max_in_flight_per_client: int = 16  # of one client (a token's user, or an address); past it a 429
    body_timeout_s: float = 10.0  # a request body not all there this long after the request began: 408
    max_streams_per_user: int = 4  # MCP event streams (GET /mcp) one user holds; a newer closes the oldest
    max_streams: int = 256  # MCP event streams in all; past it a 503
    stream_idle_s: float = 300.0  # an event stream that carried nothing this long is closed
    min_free_bytes: int = 104_857_600  # under this free on the root's disk: writes 507, /ready not ready
    idempotency_ttl_s: float = 86_400.0  # an Idempotency-Key's record counts this long
    idempotency_max_records: int = 1000  # records kept per home, the oldest removed first
    max_homes: int = 128  # homes kept open, least recently used closed first
    workers: int = 8  # threads running the core's work (model, LanceDB, files)
    batch_turns: int = 16  # turns of one user written as one group at most
    retry_after_s: int = 1  # the Retry-After of a 503
    catch_up: bool = True  # at start, bring every home's index in line with its files

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def check_bind(self) -> None:
        """Refuse to listen beyond loopback without tokens (a ``SettingsError`` naming the fix)."""
        if not self.loopback and self.tokens_file is None:
            raise SettingsError(
                f"refusing to listen on {self.host}: beyond a loopback address every caller needs a "
                "token. Create a token file (`memory-assets token --user ID --tokens-file FILE`) and "
                "pass it with --tokens-file or MEMORY_SERVER_TOKENS_FILE, or listen on 127.0.0.1"
            )
        if self.tokens_file is not None and not self.tokens_file.is_file():
            raise SettingsError(
                f"token file {self.tokens_file} does not exist; create it with `memory-assets token "
                f"--user ID --tokens-file {self.tokens_file}` or fix MEMORY_SERVER_TOKENS_FILE"
            )

    @classmethod
    def load(
        cls,
        root: str | Path | None = None,
        host: str | None = None,
        port: int | None = None,
        tokens_file: str | Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> "ServerConfig":
        env = os.environ if env is None else env
        port_value = port if port is not None else _number(env, {}, "MEMORY_SERVER_PORT", DEFAULT_PORT, int)
        if not 1 <= port_value <= 65535:
            raise SettingsError(f"port {port_value} is not a TCP port; give one from 1 to 65535")
        tokens = tokens_file or env.get("MEMORY_SERVER_TOKENS_FILE") or None
        config = cls(
            root=resolve_root(root, env),
            host=host or env.get("MEMORY_SERVER_HOST") or DEFAULT_HOST,
            port=port_value,
            tokens_file=Path(tokens).expanduser().absolute() if tokens else None,
            max_body_bytes=_number(env, {}, "MEMORY_SERVER_MAX_BODY_BYTES", 1_048_576, int),
            max_text_chars=_number(env, {}, "MEMORY_SERVER_MAX_TEXT_CHARS", 32_768, int),
            max_search_limit=_capped(env, "MEMORY_SERVER_MAX_SEARCH_LIMIT", SEARCH_LIMIT_CAP),
            max_context=_capped(env, "MEMORY_SERVER_MAX_CONTEXT", CONTEXT_CAP),
            max_in_flight=_number(env, {}, "MEMORY_SERVER_MAX_IN_FLIGHT", 64, int),
            max_in_flight_per_client=_number(env, {}, "MEMORY_SERVER_MAX_IN_FLIGHT_PER_CLIENT", 16, int),
            body_timeout_s=_number(env, {}, "MEMORY_SERVER_BODY_TIMEOUT_S", 10.0, float),
            max_streams_per_user=_number(env, {}, "MEMORY_SERVER_MAX_STREAMS_PER_USER", 4, int),
            max_streams=_number(env, {}, "MEMORY_SERVER_MAX_STREAMS", 256, int),
            stream_idle_s=_number(env, {}, "MEMORY_SERVER_STREAM_IDLE_S", 300.0, float),
            min_free_bytes=_number(env, {}, "MEMORY_SERVER_MIN_FREE_BYTES", 104_857_600, int, zero_ok=True),
            idempotency_ttl_s=_number(env, {}, "MEMORY_SERVER_IDEMPOTENCY_TTL_S", 86_400.0, float),
            idempotency_max_records=_number(env, {}, "MEMORY_SERVER_IDEMPOTENCY_MAX_RECORDS", 1000, int),
            max_homes=_number(env, {}, "MEMORY_SERVER_MAX_HOMES", 128, int),
            workers=_number(env, {}, "MEMORY_SERVER_WORKERS", 8, int),
            batch_turns=_number(env, {}, "MEMORY_SERVER_BATCH_TURNS", 16, int),
            retry_after_s=_number(env, {}, "MEMORY_SERVER_RETRY_AFTER_S", 1, int),
            catch_up=(env.get("MEMORY_SERVER_CATCH_UP") or "1").strip().lower()
            not in ("0", "false", "no", "off"),
        )
        return config


def _capped(env: Mapping[str, str], name: str, cap: int) -> int:
    value: int = _number(env, {}, name, cap, int)
    if value > cap:
        raise SettingsError(f"{name}={value} is above {cap}, the most it may be; set 1 to {cap} or unset it")
    return value


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a listening address or a Host header's name) is a loopback address."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
