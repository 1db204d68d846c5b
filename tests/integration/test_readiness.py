"""What `/readyz` asks a Postgres backend: the store answers, the database is at this
binary's schema, and the LISTEN connection is up."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from pydantic import SecretStr

from entrypoints.composition.backend import NodeUnready
from entrypoints.composition.container import NodeContainer, open_node
from entrypoints.composition.settings import Settings
from tests.integration.blackhole_proxy import BlackholeProxy
from tests.integration.support import DEADLINE
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres


def _settings(dsn: str) -> Settings:
    return Settings(database_url=dsn, storage="postgres", workers=False,
                    jwt_secret=SecretStr("readiness-secret-0123456789abcdef"))


async def test_a_database_migrated_by_a_newer_release_is_not_ready(pg_dsn: str) -> None:  # noqa: F811
    async with open_node(NodeContainer(settings=_settings(pg_dsn))) as node:
        backend = node.backend
        await backend.probe()
        connection = await asyncpg.connect(pg_dsn)
        try:
            await connection.execute(
                "INSERT INTO runnel_migrations (name) VALUES ('9999_from_the_future')")
        finally:
            await connection.close()
        with pytest.raises(NodeUnready, match="newer Runnel"):
            await backend.probe()


async def test_a_node_whose_listen_connection_is_down_is_not_ready(pg_dsn: str) -> None:  # noqa: F811
    proxy = BlackholeProxy(pg_dsn)
    try:
        routed = await proxy.start()
        async with open_node(NodeContainer(settings=_settings(pg_dsn).model_copy(
                update={"listen_database_url": routed}))) as node:
            backend = node.backend
            await backend.probe()
            proxy.refuse()
            proxy.blackhole()
            async with asyncio.timeout(DEADLINE):
                while True:
                    try:
                        await backend.probe()
                    except NodeUnready as unready:
                        assert "LISTEN" in str(unready)
                        break
                    await asyncio.sleep(0.2)
    finally:
        await proxy.close()
