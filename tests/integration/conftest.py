"""Fixtures the Postgres integration tests share: two processes' adapters on one database
(listening or not), and adapters that reach the database through a proxy a test can
freeze."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import pytest_asyncio

from adapters.postgres import DatabaseBounds, PostgresAdapters, open_postgres
from tests.integration.blackhole_proxy import BlackholeProxy
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)


@asynccontextmanager
async def two_processes(dsn: str, *, listen: bool
                        ) -> AsyncIterator[tuple[PostgresAdapters, PostgresAdapters]]:
    first = await open_postgres(dsn, migrate=False, listen=listen)
    try:
        second = await open_postgres(dsn, migrate=False, listen=listen)
        try:
            yield first, second
        finally:
            await second.close()
    finally:
        await first.close()


@pytest_asyncio.fixture
async def nodes(pg_dsn: str) -> AsyncIterator[tuple[PostgresAdapters, PostgresAdapters]]:  # noqa: F811
    """Two processes' adapters (each with its own LISTEN connection) on one database."""
    async with two_processes(pg_dsn, listen=True) as both:
        yield both


@pytest_asyncio.fixture
async def writers(pg_dsn: str) -> AsyncIterator[tuple[PostgresAdapters, PostgresAdapters]]:  # noqa: F811
    """Two processes' adapters on one database without LISTEN connections: each hears only
    its own commits."""
    async with two_processes(pg_dsn, listen=False) as both:
        yield both


@pytest.fixture
async def proxy(pg_dsn: str) -> AsyncIterator[BlackholeProxy]:  # noqa: F811
    """A proxy in front of the test database: `pause`, `hang` and `admit` it."""
    proxy = BlackholeProxy(pg_dsn)
    yield proxy
    await proxy.close()


@pytest.fixture
def proxy_bounds() -> DatabaseBounds | None:
    """The bounds of `through_proxy`'s adapters (None: the defaults); a module overrides it."""
    return None


@pytest.fixture
async def through_proxy(proxy: BlackholeProxy,
                        proxy_bounds: DatabaseBounds | None) -> AsyncIterator[PostgresAdapters]:
    """Adapters (no LISTEN connection) whose every connection goes through `proxy`."""
    adapters = await open_postgres(await proxy.start(), migrate=False, listen=False,
                                   bounds=proxy_bounds)
    yield adapters
    await adapters.close()
