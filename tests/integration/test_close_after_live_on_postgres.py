"""Close after live across processes on Postgres (ADR 0056): chunks published by one
process's bus, the close committed by another's store, a live subscription on each. Both
subscriptions get every chunk whose publish returned before the close, then the closing
wake, then what was published after it: the chunks and the close travel one ordered
channel (the NOTIFYs of one database, delivered in commit order)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from adapters.postgres import PostgresAdapters, open_postgres
from application.ports import LiveChunk, LiveDraft
from tests.contracts.storage_support import WAKE_TIMEOUT, created
from tests.contracts.wake_bus_contract import chunks_until_closed
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

TRIES = 25


@pytest_asyncio.fixture
async def nodes(pg_dsn: str) -> AsyncIterator[tuple[PostgresAdapters, PostgresAdapters]]:  # noqa: F811
    a = await open_postgres(pg_dsn, migrate=False)
    b = await open_postgres(pg_dsn, migrate=False)
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


@pytest.mark.parametrize("publisher", [0, 1])
async def test_a_close_on_one_process_comes_after_the_chunks_of_another_everywhere(
        nodes: tuple[PostgresAdapters, PostgresAdapters], publisher: int) -> None:
    publishing, closing = nodes[publisher], nodes[1 - publisher]
    for attempt in range(TRIES):
        key = await created(closing)
        async with nodes[0].bus.subscribe(key, live=True) as on_a, \
                nodes[1].bus.subscribe(key, live=True) as on_b:
            before = [f"{attempt}.{n}" for n in range(3)]
            for data in before:
                await publishing.bus.publish_live([LiveDraft(key, data)])
            async with closing.store.lock(key) as session:
                session.stream.close()
            await publishing.bus.publish_live([LiveDraft(key, "late")])
            for subscription in (on_a, on_b):
                assert await chunks_until_closed(subscription) == before
                after = await subscription.next(WAKE_TIMEOUT)
                assert isinstance(after, LiveChunk) and after.data == "late"
