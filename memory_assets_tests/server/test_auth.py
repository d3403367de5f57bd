"""The token file: its format, constant-time lookups, re-reading on change, failing closed."""

import json
import logging
from pathlib import Path

import pytest

from memory_assets.core.settings import SettingsError
from memory_assets.server.auth import (
    OPEN,
    Principal,
    TokenFile,
    TokenFileError,
    add_token,
    hash_token,
    parse_token_file,
)


def test_tokens_reach_their_user_or_every_user(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    alice, admin = add_token(path, "alice"), add_token(path, None, admin=True)
    tokens = TokenFile(path)
    assert tokens.lookup(alice) == Principal("alice") and tokens.lookup(admin) == Principal(None, admin=True)
    assert tokens.lookup("not-a-token") is None and tokens.lookup("") is None
    assert tokens.lookup(alice + " ") is None  # a token is exact
    assert Principal("alice").may("alice") and not Principal("alice").may("bob")
    assert Principal(None, admin=True).may("bob") and OPEN.may("anyone")
    text = path.read_text()
    assert alice not in text and admin not in text and hash_token(alice) in text


def test_a_change_to_the_file_is_read_without_a_restart_and_a_broken_file_denies_everyone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tokens.json"
    alice = add_token(path, "alice")
    tokens = TokenFile(path)
    bob = add_token(path, "bob")  # added while the server runs
    assert tokens.lookup(bob) == Principal("bob")
    data = json.loads(path.read_text())
    del data[hash_token(alice)]  # revoked
    path.write_text(json.dumps(data))
    assert tokens.lookup(alice) is None and tokens.lookup(bob) == Principal("bob")
    with caplog.at_level(logging.ERROR, logger="memory_assets.server"):
        path.write_text("{ not json")
        assert tokens.lookup(bob) is None
    assert "every token is refused" in caplog.text and bob not in caplog.text
    path.write_text(json.dumps(data))
    assert tokens.lookup(bob) == Principal("bob")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[]", "must be a JSON object"),
        ("{nope", "not valid JSON"),
        ('{"abc": "admin"}', "64 lower-case hex digits"),
        ('{"sha256:' + "A" * 64 + '": "admin"}', "64 lower-case hex digits"),
        ('{"sha256:' + "a" * 64 + '": "root"}', "neither 'admin' nor 'user:<id>'"),
        ('{"sha256:' + "a" * 64 + '": "user:../etc"}', "user id"),
        ('{"sha256:' + "a" * 64 + '": 7}', "neither 'admin'"),
    ],
)
def test_a_bad_token_file_names_the_file_and_the_fix(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(content)
    with pytest.raises(TokenFileError, match=problem) as info:
        parse_token_file(path)
    assert str(path) in str(info.value) and "memory-assets token" in str(info.value)
    with pytest.raises(TokenFileError):
        TokenFile(path)  # the server does not start on it


def test_a_token_is_for_one_user_or_admin(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="one user"):
        add_token(tmp_path / "t.json", "alice", admin=True)
    with pytest.raises(SettingsError, match="one user"):
        add_token(tmp_path / "t.json", None)
    with pytest.raises(SettingsError, match="user id"):
        add_token(tmp_path / "t.json", "a/b")
    assert not (tmp_path / "t.json").exists()
