"""The Postgres adapters pass the port contracts.

A real server; one fresh database for the suite (every contract test keeps to
its own tenant and run), and fresh adapters (pool, LISTEN connection) per test, as
the node's container opens them.
"""

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from adapters.postgres import PostgresAdapters
from adapters.postgres.ids import stream_id
from adapters.postgres.revoked_tokens import PostgresRevokedTokens
from adapters.postgres.subscription_leases import PostgresSubscriptionLeases
from domain.identifiers import StreamKey
from tests.contracts.harness import StorageHarness, postgres_harness
from tests.contracts.revoked_tokens_contract import RevokedTokensContract
from tests.contracts.storage_contract import StorageContract
from tests.contracts.subscription_lease_contract import SubscriptionLeaseContract
from tests.contracts.upkeep_contract import UpkeepContract, UpkeepHarness
from tests.pg import pg_class_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres


class TestPostgresStorage(StorageContract):
    @pytest.fixture
    async def harness(self, pg_class_dsn: str  # noqa: F811
                      ) -> AsyncIterator[StorageHarness]:
        async with postgres_harness(pg_class_dsn) as backend:
            yield backend


class TestPostgresSubscriptionLeases(SubscriptionLeaseContract):
    """Each "node" has a pool of its own on the one database, as two processes would."""

    @pytest.fixture
    async def leases(self, pg_class_dsn: str  # noqa: F811
                     ) -> AsyncIterator[PostgresSubscriptionLeases]:
        async with asyncpg.create_pool(pg_class_dsn, min_size=1, max_size=4) as pool:
            yield PostgresSubscriptionLeases(pool)

    @pytest.fixture
    async def other_node(self, pg_class_dsn: str  # noqa: F811
                         ) -> AsyncIterator[PostgresSubscriptionLeases]:
        async with asyncpg.create_pool(pg_class_dsn, min_size=1, max_size=4) as pool:
            yield PostgresSubscriptionLeases(pool)


class TestPostgresRevokedTokens(RevokedTokensContract):
    """Each "node" is a process's adapters (pool and LISTEN connection) on the one database:
    the ring crosses from one to the other through NOTIFY."""

    @pytest.fixture
    async def node(self, pg_class_dsn: str  # noqa: F811
                   ) -> AsyncIterator[PostgresAdapters]:
        async with postgres_harness(pg_class_dsn) as backend:
            assert isinstance(backend, PostgresAdapters)
            yield backend

    @pytest.fixture
    def revoked(self, node: PostgresAdapters) -> PostgresRevokedTokens:
        return node.revoked

    @pytest.fixture
    async def other_node(self, pg_class_dsn: str  # noqa: F811
                         ) -> AsyncIterator[PostgresRevokedTokens]:
        async with asyncpg.create_pool(pg_class_dsn, min_size=1, max_size=2) as pool:
            yield PostgresRevokedTokens(pool)  # a CLI process: it writes, it hears nothing

    async def wait_for_ring(self, rings: list[None]) -> None:
        async with asyncio.timeout(30):
            while not rings:
                await asyncio.sleep(0.01)


class TestPostgresUpkeep(UpkeepContract):
    @pytest.fixture
    async def upkeep(self, pg_class_dsn: str  # noqa: F811
                     ) -> AsyncIterator[UpkeepHarness]:
        async with postgres_harness(pg_class_dsn) as adapters:
            assert isinstance(adapters, PostgresAdapters) and adapters.upkeep is not None
            pool = adapters.pool

            async def events(key: StreamKey) -> int:
                return int(await pool.fetchval(
                    "SELECT count(*) FROM stream_events WHERE originator_id = $1 OR "
                    "originator_id IN (SELECT id FROM object_intents WHERE stream = $1)",
                    stream_id(key)))

            async def delivery_rows(key: StreamKey) -> int:
                return int(await pool.fetchval(
                    "SELECT count(*) FROM input_deliveries WHERE stream = $1", stream_id(key)))

            yield UpkeepHarness(adapters, adapters.upkeep, events, delivery_rows)
