"""The legacy tests' fixture: the scenario home of ``test_find.build_home``."""

import pytest

from memory_assets.core.settings import Settings
from memory_assets_tests.core.legacy.test_find import Scenario, build_home


@pytest.fixture
def scenario(settings: Settings) -> Scenario:
    return build_home(settings)
