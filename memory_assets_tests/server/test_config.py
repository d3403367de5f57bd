"""The server's settings: the bind rule, the caps, the request schemas' names."""

from pathlib import Path
from typing import get_args

import pytest

from memory_assets.core.knowledge.categories import CATEGORIES
from memory_assets.core.settings import SettingsError
from memory_assets.core.sources import ARCHIVE, CORE_FILE, LEGACY_SOURCE_TYPE, NOTEBOOK, TRANSCRIPT
from memory_assets.server.config import ServerConfig, is_loopback
from memory_assets.server.schemas import Category, SourceType


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.2", "example.org", "127.0.0.1.example.org", ""])
def test_other_addresses(host: str) -> None:
    assert not is_loopback(host)


def test_beyond_loopback_a_token_file_is_required(tmp_path: Path) -> None:
    ServerConfig.load(root=tmp_path, env={}).check_bind()
    with pytest.raises(SettingsError, match="refusing to listen on 0.0.0.0"):
        ServerConfig.load(root=tmp_path, host="0.0.0.0", env={}).check_bind()
    tokens = tmp_path / "tokens.json"
    with pytest.raises(SettingsError, match="does not exist"):
        ServerConfig.load(root=tmp_path, host="0.0.0.0", tokens_file=tokens, env={}).check_bind()
    tokens.write_text("{}")
    ServerConfig.load(
        root=tmp_path, host="0.0.0.0", env={"MEMORY_SERVER_TOKENS_FILE": str(tokens)}
    ).check_bind()


def test_settings_come_from_the_environment_within_their_caps(tmp_path: Path) -> None:
    config = ServerConfig.load(
        env={
            "MEMORY_ROOT": str(tmp_path),
            "MEMORY_SERVER_PORT": "9000",
            "MEMORY_SERVER_MAX_SEARCH_LIMIT": "20",
            "MEMORY_SERVER_MAX_BODY_BYTES": "4096",
            "MEMORY_SERVER_CATCH_UP": "off",
        }
    )
    assert (config.root, config.port, config.max_search_limit, config.max_body_bytes) == (
        tmp_path,
        9000,
        20,
        4096,
    )
    assert config.catch_up is False and config.max_context == 5
    limits = ServerConfig.load(
        root=tmp_path,
        env={
            "MEMORY_SERVER_MAX_IN_FLIGHT_PER_CLIENT": "3",
            "MEMORY_SERVER_BODY_TIMEOUT_S": "2.5",
            "MEMORY_SERVER_MAX_STREAMS_PER_USER": "2",
            "MEMORY_SERVER_MAX_STREAMS": "10",
            "MEMORY_SERVER_STREAM_IDLE_S": "30",
        },
    )
    assert (
        limits.max_in_flight_per_client,
        limits.body_timeout_s,
        limits.max_streams_per_user,
        limits.max_streams,
        limits.stream_idle_s,
    ) == (3, 2.5, 2, 10, 30.0)
    disk = ServerConfig.load(
        root=tmp_path,
        env={
            "MEMORY_SERVER_MIN_FREE_BYTES": "0",  # the threshold off
            "MEMORY_SERVER_IDEMPOTENCY_TTL_S": "60",
            "MEMORY_SERVER_IDEMPOTENCY_MAX_RECORDS": "5",
        },
    )
    assert (disk.min_free_bytes, disk.idempotency_ttl_s, disk.idempotency_max_records) == (0, 60.0, 5)
    assert ServerConfig.load(root=tmp_path, env={}).min_free_bytes == 100 * 1024 * 1024
    assert ServerConfig.load(root=tmp_path, port=8123, env={"MEMORY_SERVER_PORT": "9000"}).port == 8123
    for name, value, problem in (
        ("MEMORY_SERVER_MAX_SEARCH_LIMIT", "101", "above 100"),
        ("MEMORY_SERVER_MAX_CONTEXT", "6", "above 5"),
        ("MEMORY_SERVER_MAX_IN_FLIGHT", "0", "must be positive"),
        ("MEMORY_SERVER_MAX_IN_FLIGHT_PER_CLIENT", "0", "must be positive"),
        ("MEMORY_SERVER_BODY_TIMEOUT_S", "inf", "not a finite number"),
        ("MEMORY_SERVER_MAX_STREAMS_PER_USER", "-1", "must be positive"),
        ("MEMORY_SERVER_STREAM_IDLE_S", "0", "must be positive"),
        ("MEMORY_SERVER_MIN_FREE_BYTES", "-1", "must be positive"),
        ("MEMORY_SERVER_IDEMPOTENCY_TTL_S", "0", "must be positive"),
        ("MEMORY_SERVER_WORKERS", "nan", "not a int"),
        ("MEMORY_SERVER_PORT", "70000", "not a TCP port"),
    ):
        with pytest.raises(SettingsError, match=problem):
            ServerConfig.load(root=tmp_path, env={name: value})


def test_the_request_names_spell_the_cores() -> None:
    assert set(get_args(SourceType)) == {ARCHIVE, NOTEBOOK, CORE_FILE, LEGACY_SOURCE_TYPE, TRANSCRIPT}
    assert set(get_args(Category)) == {c.name for c in CATEGORIES}
