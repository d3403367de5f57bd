"""Who is calling: the token file, and what a token reaches.

The token file (``MEMORY_SERVER_TOKENS_FILE``, ``--tokens-file``) is a JSON object mapping a
token's hash to who it is::

    {
      "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08": "user:alice",
      "sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752": "admin"
    }

A token is any secret string (``memory-assets token`` makes one: 32 random bytes, URL-safe);
only its SHA-256 is stored, so the file reveals no token. A caller presents it as
``Authorization: Bearer <token>``. A ``user:<id>`` token reaches that user's routes and tools
only (403 for any other user's); an ``admin`` token reaches every user's and the admin routes
(``GET /v1/users``, ``GET /v1/users/{id}/upkeep``: ``routes.py``).

Tokens are compared in constant time: the presented token's hash against every entry, without
stopping at a match. Neither a token nor its hash is logged. The file is re-read when it changes
(revoking a token needs no restart); a file that became invalid denies every token until it is
fixed (the error is logged, naming the line's key and the fix), never falls back to no auth.
"""

import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path

from memory_assets.core.durable import file_lock, stat_signature, write_atomic
from memory_assets.core.ops.users import UserIdError, check_user_id
from memory_assets.core.settings import SettingsError
from memory_assets.server.errors import ApiError

ADMIN = "admin"
USER_PREFIX = "user:"
HASH_PREFIX = "sha256:"
_HASH = re.compile(r"sha256:[0-9a-f]{64}")
log = logging.getLogger("memory_assets.server")


class TokenFileError(SettingsError):
    """The token file cannot be used; the message names the file, the entry and the fix."""


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: one user, or admin (every user). ``user`` is None for admin."""

    user: str | None
    admin: bool = False

    def may(self, user_id: str) -> bool:
        return self.admin or self.user == user_id


OPEN = Principal(None, admin=True)  # a loopback server without tokens: every caller may do anything
PRINCIPAL_KEY = "memory_principal"  # where the admission guard leaves who the caller is (scope["state"])


def hash_token(token: str) -> str:
    return HASH_PREFIX + hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(32)


def parse_token_file(path: Path) -> dict[str, Principal]:
    """The file's entries (hash -> principal); ``TokenFileError`` naming what is wrong."""
    fix = f"fix {path} (see `memory-assets token`, which writes it)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TokenFileError(f"token file {path}: cannot be read ({exc.strerror or exc}); {fix}") from exc
    except ValueError as exc:
        raise TokenFileError(f"token file {path}: not valid JSON ({exc}); {fix}") from exc
    if not isinstance(data, dict):
        raise TokenFileError(
            f'token file {path}: must be a JSON object {{"sha256:<hex>": "user:<id>" or "admin"}}; {fix}'
        )
    entries: dict[str, Principal] = {}
    for key, value in data.items():
        shown = key[:16] + "…" if len(key) > 16 else key
        if not isinstance(key, str) or _HASH.fullmatch(key) is None:
            raise TokenFileError(
                f"token file {path}: key {shown!r} is not 'sha256:' and 64 lower-case hex digits; {fix}"
            )
        if value == ADMIN:
            entries[key] = Principal(None, admin=True)
        elif isinstance(value, str) and value.startswith(USER_PREFIX):
            try:
                entries[key] = Principal(check_user_id(value.removeprefix(USER_PREFIX)))
            except UserIdError as exc:
                raise TokenFileError(f"token file {path}: the entry {shown!r}: {exc}; {fix}") from None
        else:
            raise TokenFileError(
                f"token file {path}: the entry {shown!r} maps to {str(value)[:40]!r}, which is neither "
                f"'admin' nor 'user:<id>'; {fix}"
            )
    return entries


class TokenFile:
    """The token file, re-read when it changes (one stat per request)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._sig: object = None
        self._entries: list[tuple[bytes, Principal]] = []
        self._load()  # a bad file stops the server at start

    def _load(self) -> None:
        sig = stat_signature(self.path)
        entries = parse_token_file(self.path)
        self._entries = [(hash_token_bytes(h), p) for h, p in entries.items()]
        self._sig = sig

    def _current(self) -> list[tuple[bytes, Principal]]:
        sig = stat_signature(self.path)
        if sig == self._sig:
            return self._entries
        with self._lock:
            if sig != self._sig:
                try:
                    self._load()
                except TokenFileError as exc:  # deny everyone until the file is fixed
                    log.error(f"{exc}; every token is refused until then")
                    self._entries, self._sig = [], sig
        return self._entries

    def lookup(self, token: str) -> Principal | None:
        """Who ``token`` is, or None; compared in constant time against every entry."""
        presented = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        found = None
        for stored, principal in self._current():
            if hmac.compare_digest(stored, presented):
                found = principal
        return found


def hash_token_bytes(key: str) -> bytes:
    return bytes.fromhex(key.removeprefix(HASH_PREFIX))


def add_token(path: Path, user: str | None, admin: bool = False) -> str:
    """A new token for ``user`` (or admin), its hash added to the token file (created when
    missing; rewritten atomically under its lock, mode 600). Returns the token: shown once."""
    if (user is None) == (not admin):
        raise SettingsError("a token is for one user (--user ID) or for admin (--admin), not both or neither")
    value = ADMIN if admin else USER_PREFIX + check_user_id(user)
    token = new_token()
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path):
        entries = {} if stat_signature(path) is None else parse_token_file(path)
        data = {key: (ADMIN if p.admin else USER_PREFIX + str(p.user)) for key, p in entries.items()}
        data[hash_token(token)] = value
        write_atomic(path, json.dumps(data, indent=2) + "\n")
        path.chmod(0o600)
    return token


def principal_of(tokens: TokenFile | None, authorization: str | None) -> Principal:
    """Who the caller is: anyone on a server without tokens, else the bearer token's principal."""
    if tokens is None:
        return OPEN
    challenge = {"WWW-Authenticate": "Bearer"}
    if not authorization:
        raise ApiError(
            401,
            "missing_token",
            "this server needs a token",
            "send the header Authorization: Bearer <token> (a token made by `memory-assets token`)",
            challenge,
        )
    scheme, _, token = authorization.partition(" ")
    principal = tokens.lookup(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
    if principal is None:
        raise ApiError(
            401,
            "invalid_token",
            "the token is not one this server knows",
            "send Authorization: Bearer <token> with a token listed in the server's token file",
            challenge,
        )
    return principal
