"""The Dagster layer's numbers from the environment: unset is the default, a bad value names the
variable and the fix."""

import pytest

from memory_assets.core.settings import SettingsError
from memory_assets.defs import env
from memory_assets.defs.homes.batches import batch_size, batch_wait_s


def test_unset_is_the_default_and_a_value_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORY_UPKEEP_BATCH_SIZE", raising=False)
    assert batch_size() == 200
    monkeypatch.setenv("MEMORY_UPKEEP_BATCH_SIZE", "250")
    monkeypatch.setenv("MEMORY_UPKEEP_WAIT_S", "0.5")
    assert batch_size() == 250 and batch_wait_s() == 0.5


@pytest.mark.parametrize("raw", ["many", "0", "2.5"])
def test_a_bad_batch_size_names_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("MEMORY_UPKEEP_BATCH_SIZE", raw)
    with pytest.raises(
        SettingsError, match=rf"MEMORY_UPKEEP_BATCH_SIZE='{raw}': give a whole number of at least 1"
    ):
        batch_size()


def test_a_negative_wait_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_UPKEEP_LOCK_WAIT_S", "-1")
    with pytest.raises(SettingsError, match="MEMORY_UPKEEP_LOCK_WAIT_S='-1'.*default 30"):
        env.number("MEMORY_UPKEEP_LOCK_WAIT_S", 30.0)


@pytest.mark.parametrize(
    ("name", "raw"), [("MEMORY_HOMES_PER_TICK", "lots"), ("MEMORY_HOMES_SWEEP_PER_TICK", "0")]
)
def test_a_bad_homes_tick_budget_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, raw: str
) -> None:
    from memory_assets.defs.homes.sensors import PER_TICK_ENV, SWEEP_ENV, _count

    assert {PER_TICK_ENV, SWEEP_ENV} == {"MEMORY_HOMES_PER_TICK", "MEMORY_HOMES_SWEEP_PER_TICK"}
    monkeypatch.setenv(name, raw)
    with pytest.raises(SettingsError, match=rf"{name}='{raw}': give a whole number of at least 1"):
        _count(name, 10)
    monkeypatch.setenv(name, "3")
    assert _count(name, 10) == 3


def test_text_is_none_when_unset_or_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_EXECUTOR", "")
    assert env.text("MEMORY_EXECUTOR") is None
    monkeypatch.setenv("MEMORY_EXECUTOR", "celery")
    assert env.text("MEMORY_EXECUTOR") == "celery"
