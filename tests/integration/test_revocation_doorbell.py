"""The revoked-token doorbell rides the process's one LISTEN connection: a revocation made
by another process rings it, and so does every reconnect after the connection is cut (a
NOTIFY may have been lost meanwhile), so a node's copy of the list never stays stale."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from adapters.postgres import PostgresAdapters, open_postgres
from application.ports.access import Revocation
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

DEADLINE_SECONDS = 30.0


@pytest.fixture
async def node(pg_dsn: str) -> AsyncIterator[PostgresAdapters]:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False)
    yield adapters
    await adapters.close()


async def rung(rings: list[None], count: int) -> None:
    async with asyncio.timeout(DEADLINE_SECONDS):
        while len(rings) < count:
            await asyncio.sleep(0.01)


async def test_a_revocation_elsewhere_and_a_reconnect_both_ring(
        pg_dsn: str, node: PostgresAdapters) -> None:  # noqa: F811
    rings: list[None] = []
    node.revoked.watch(lambda: rings.append(None))
    writer = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        now = datetime.now(UTC)
        await writer.revoked.revoke(Revocation("j1", None, now + timedelta(hours=1)), now)
        await rung(rings, 1)
    finally:
        await writer.close()
    assert node.bus.listen_connections == 1

    pid = node.bus.listener_pid
    admin = await asyncpg.connect(pg_dsn)
    try:
        await admin.execute("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()
    await rung(rings, 2)  # rung by the reconnect, with no revocation at all
    assert node.bus.reconnects >= 1 and node.bus.listener_pid != pid
    assert [item.token_id for item in await node.revoked.active(datetime.now(UTC))] == ["j1"]
