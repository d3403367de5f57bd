"""Many users, one home each: the user-id rule, the root -> home mapping, isolation of settings."""

from pathlib import Path

import pytest

from memory_assets.core.ops.users import (
    UnknownUserError,
    UserIdError,
    check_user_id,
    has_home,
    list_users,
    open_user_home,
    resolve_root,
    user_home,
    user_settings,
)


@pytest.mark.parametrize("good", ["a", "alice", "Bob.Smith_2", "x" * 64, "0-user", "u.", "a..b"])
def test_valid_user_ids_pass(good: str) -> None:
    assert check_user_id(good) == good


@pytest.mark.parametrize(
    "bad",
    [
        "",
        ".",
        "..",
        ".hidden",
        "-x",
        "_x",
        "a/b",
        "../etc",
        "a\\b",
        "a\x00b",
        "a b",
        "a\nb",
        "x" * 65,
        "é",
        7,
        None,
    ],
)
def test_invalid_user_ids_are_refused_before_any_path_is_built(bad: object, tmp_path: Path) -> None:
    with pytest.raises(UserIdError, match=r"\^\[A-Za-z0-9\]"):
        check_user_id(bad)
    with pytest.raises(UserIdError):
        user_home(tmp_path, bad)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_the_root_comes_from_the_argument_then_the_environment(tmp_path: Path) -> None:
    assert resolve_root(tmp_path / "r", env={"MEMORY_ROOT": "/elsewhere"}) == tmp_path / "r"
    assert resolve_root(None, env={"MEMORY_ROOT": str(tmp_path / "e")}) == tmp_path / "e"
    assert resolve_root(None, env={}).name == ".memory_root"


def test_a_users_settings_ignore_the_variables_that_place_a_single_home(tmp_path: Path) -> None:
    env = {
        "MEMORY_HOME": "/shared/home",
        "MEMORY_INDEX_URI": "/shared/index",
        "MEMORY_NOTEBOOK_DIR": "/shared/vault",
        "MEMORY_MD_PATH": "/shared/MEMORY.md",
        "MEMORY_USER_ID": "everyone",
        "MEMORY_SEARCH_MAX_CHARS": "300",
    }
    a, b = user_settings(tmp_path, "alice", env), user_settings(tmp_path, "bob", env)
    assert a.home == tmp_path / "users" / "alice" and b.home == tmp_path / "users" / "bob"
    assert a.index_uri == str(tmp_path / "users" / "alice" / "index")
    assert a.notebook_dir == tmp_path / "users" / "alice" / "notebook"
    assert a.memory_md_path == tmp_path / "users" / "alice" / "memory" / "MEMORY.md"
    # The home's directory is the user: its rows keep the default user_id, as any home's opened
    # by the CLI (MEMORY_USER_ID unset) do, so every face reads the same rows.
    assert a.user_id == b.user_id == "default-user"
    assert a.search_max_chars == 300  # a shared setting applies to every user


def test_a_home_is_created_by_the_first_write_only(tmp_path: Path) -> None:
    assert list_users(tmp_path) == [] and not has_home(tmp_path, "alice")
    with pytest.raises(UnknownUserError):
        open_user_home(tmp_path, "alice")
    assert not (tmp_path / "users").exists()
    home = open_user_home(tmp_path, "alice", create=True)
    assert home.settings.archive_dir.is_dir() and home.settings.notebook_dir.is_dir()
    open_user_home(tmp_path, "carol", create=True)
    (tmp_path / "users" / ".trash").mkdir()
    (tmp_path / "users" / "notes.txt").write_text("not a user")
    assert list_users(tmp_path) == ["alice", "carol"] and has_home(tmp_path, "alice")
    assert open_user_home(tmp_path, "alice").settings.home == home.settings.home


def test_concurrent_first_writes_initialise_a_home_without_a_race(tmp_path: Path) -> None:
    import threading

    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def first_write() -> None:
        start.wait()
        try:
            open_user_home(tmp_path, "zoe", create=True)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_write) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and has_home(tmp_path, "zoe")
