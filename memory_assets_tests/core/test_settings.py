import dataclasses
from pathlib import Path

import pytest

from memory_assets.core.settings import Settings, SettingsError, resolve_notebook_dir


def test_default_profile_layout_and_env_precedence(tmp_path: Path) -> None:
    env = {"MEMORY_HOME": str(tmp_path / "env-home")}
    s = Settings.load(env=env)
    assert s.home == tmp_path / "env-home"
    assert s.archive_dir == s.home / "memory" / "archive"
    assert s.notebook_dir == s.home / "notebook"
    assert s.index_uri == str(s.home / "index")
    assert s.index_state_path == s.home / "memory" / ".index_state.json"
    explicit = Settings.load(home=tmp_path / "arg-home", env=env)
    assert explicit.home == tmp_path / "arg-home"  # an argument beats the environment
    uri = Settings.load(env={**env, "MEMORY_INDEX_URI": "s3://bucket/index"})
    assert uri.index_uri == "s3://bucket/index" and not uri.index_is_local


def test_suzent_profile_maps_an_existing_data_dir(tmp_path: Path) -> None:
    root = tmp_path / ".suzent"
    s = Settings.load(profile="suzent", env={"SUZENT_DATA_DIR": str(root)})
    assert s.memory_dir == root / "sandbox" / "shared" / "memory"
    assert s.archive_dir == root / "sandbox" / "shared" / "memory" / "archive"
    assert s.index_uri == str(root / "memory")
    assert s.notebook_dir == root / "notebook"
    assert s.index_state_path == root / "sandbox" / "shared" / "memory" / ".index_state.json"


def test_resolve_notebook_dir_honours_the_mnt_notebook_volume(tmp_path: Path) -> None:
    root = tmp_path / ".suzent"
    (root / "config").mkdir(parents=True)
    (root / "config" / "default.yaml").write_text(
        "SANDBOX_VOLUMES:\n  - /data/other:/mnt/other\n  - .suzent/notebook:/mnt/notebook\n"
    )
    assert resolve_notebook_dir(root, "suzent") == tmp_path / ".suzent" / "notebook"
    (root / "config" / "local.yaml").write_text("sandbox_volumes:\n  - /srv/vault:/mnt/notebook\n")
    assert resolve_notebook_dir(root, "suzent") == Path("/srv/vault")  # later file wins
    assert resolve_notebook_dir(root, "suzent", tmp_path / "x") == tmp_path / "x"  # explicit wins
    assert resolve_notebook_dir(root, "default") == root / "notebook"


def test_unknown_profile_and_uninitialised_home_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="unknown profile"):
        Settings.load(profile="nope", env={})
    s = Settings.load(home=tmp_path / "fresh", env={})
    with pytest.raises(SettingsError, match=r"run `memory-assets --home .* init` first"):
        s.require_initialised()
    assert not (tmp_path / "fresh").exists()  # nothing created by asking


FLOAT_SETTINGS = [f.name for f in dataclasses.fields(Settings) if f.type is float]


def test_the_float_settings_are_the_ones_expected() -> None:
    assert "llm_timeout_s" in FLOAT_SETTINGS and "recall_timeout_s" in FLOAT_SETTINGS
    assert "lane_version_retention_s" in FLOAT_SETTINGS and "forget_max_share" in FLOAT_SETTINGS
    assert len(FLOAT_SETTINGS) == 8


def test_the_lanes_retention_may_be_zero_and_not_negative(tmp_path: Path) -> None:
    assert Settings.load(tmp_path, env={}).lane_version_retention_s == 60.0  # a read's time, and more
    assert Settings.load(tmp_path, env={"MEMORY_LANE_VERSION_RETENTION_S": "0"}).lane_version_retention_s == 0
    with pytest.raises(SettingsError, match="^MEMORY_LANE_VERSION_RETENTION_S="):
        Settings.load(tmp_path, env={"MEMORY_LANE_VERSION_RETENTION_S": "-1"})


@pytest.mark.parametrize("raw", ["nan", "NaN", "inf", "-inf", "Infinity", "1e999"])
@pytest.mark.parametrize("field_name", FLOAT_SETTINGS)
def test_nan_and_infinity_are_refused_for_every_float_setting(
    tmp_path: Path, field_name: str, raw: str
) -> None:
    variable = "MEMORY_" + field_name.upper()
    with pytest.raises(SettingsError) as info:
        Settings.load(tmp_path, env={variable: raw})
    message = str(info.value)
    assert message.startswith(f"{variable}={raw!r} is not a finite number; set a positive number")
    assert "or unset it" in message
    with pytest.raises(SettingsError, match=f"^{variable}="):
        Settings.load(tmp_path, env={}, **{field_name: raw})  # an explicit override too
    assert getattr(Settings.load(tmp_path, env={variable: "2.5"}), field_name) == 2.5
