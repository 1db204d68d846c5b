"""Fixtures the Postgres integration tests share: two processes' adapters on one database
(listening or not), and adapters that reach the database through a proxy a test can
freeze."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from adapters.postgres import DatabaseBounds, PostgresAdapters, open_postgres
from tests.integration.blackhole_proxy import BlackholeProxy
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)


@pytest_asyncio.fixture
async def nodes(pg_dsn: str) -> AsyncIterator[tuple[PostgresAdapters, PostgresAdapters]]:  # noqa: F811
    """Two processes' adapters (each with its own LISTEN connection) on one database."""
    a = await open_postgres(pg_dsn, migrate=False)
    b = await open_postgres(pg_dsn, migrate=False)
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


@pytest_asyncio.fixture
async def writers(pg_dsn: str) -> AsyncIterator[tuple[PostgresAdapters, PostgresAdapters]]:  # noqa: F811
    """Two processes' adapters on one database without LISTEN connections: each hears only
    its own commits."""
    first = await open_postgres(pg_dsn, migrate=False, listen=False)
    second = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


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
