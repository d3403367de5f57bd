"""The cache of open homes, in process with real homes and the real model: it keeps its bound and
never closes a home in use, and a read opens no home that does not exist."""

import asyncio
from pathlib import Path

import pytest

from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.users import UnknownUserError
from memory_assets_tests.server.test_lane import cache


def test_the_cache_keeps_its_bound_and_never_closes_a_home_in_use(tmp_path: Path, embedder: Embedder) -> None:
    homes = cache(tmp_path, embedder, max_homes=2)

    async def scenario() -> None:
        async with homes.use("u0", create=True):
            for user in ("u1", "u2", "u3"):
                async with homes.use(user, create=True):
                    pass
            assert "u0" in homes  # in use all along: kept, over the bound meanwhile
        assert len(homes) == 2 and homes.closed == 2 and homes.opened == 4
        with pytest.raises(UnknownUserError):
            async with homes.use("nobody", create=False):
                pass

    asyncio.run(scenario())
    assert not (tmp_path / "users" / "nobody").exists()
