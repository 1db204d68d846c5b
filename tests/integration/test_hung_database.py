"""A database that stops answering (its connections open but silent, new ones never
answered) or refuses connections: every wait is bounded, every caller hears
`StoreUnavailable`, and the idempotency key settles what happened to a write whose
answer was lost (docs/adr/0028)."""

from __future__ import annotations

import asyncio

import pytest

from adapters.postgres import DatabaseBounds, PostgresAdapters, open_postgres
from application.ports.errors import StoreUnavailable
from tests.integration.blackhole_proxy import BlackholeProxy
from tests.integration.support import DEADLINE, RUN, WRITER, definition, service_on

pytestmark = pytest.mark.postgres

SHORT = DatabaseBounds(statement_timeout_seconds=1.0, acquire_timeout_seconds=1.0,
                       connect_timeout_seconds=1.0, idle_in_transaction_seconds=5.0,
                       keepalive_seconds=2.0)


@pytest.fixture
def proxy_bounds() -> DatabaseBounds:
    return SHORT


async def _unavailable(attempt: asyncio.Future[object] | object) -> StoreUnavailable:
    """What the attempt raised: it must be `StoreUnavailable`, and it must come (the
    deadline only stands in for "never": a hang fails the test)."""
    with pytest.raises(StoreUnavailable) as raised:
        await asyncio.wait_for(attempt, DEADLINE)  # type: ignore[arg-type]
    return raised.value


async def test_a_hung_database_answers_every_caller_with_store_unavailable(
        proxy: BlackholeProxy, through_proxy: PostgresAdapters) -> None:
    service = service_on(through_proxy)
    await service.definitions.create(WRITER, RUN, definition("s"))
    await service.appender.append(WRITER, RUN, "s", [{"payload": 0, "idempotency_key": "k0"}])
    proxy.hang()
    await _unavailable(service.appender.append(
        WRITER, RUN, "s", [{"payload": 1, "idempotency_key": "k1"}]))
    await _unavailable(service.reading.read(WRITER, RUN, "s", 0, 10))
    await _unavailable(service.definitions.create(WRITER, RUN, definition("t")))
    await _unavailable(service.follower.open(WRITER, RUN, "s", 0))
    proxy.admit()
    # The lost answer: the retry with the same key tells whether it was stored, once.
    retried = await asyncio.wait_for(_until_answered(service.appender.append, WRITER, RUN, "s",
                                                     [{"payload": 1, "idempotency_key": "k1"}]),
                                     DEADLINE)
    assert retried.sequences == (2,)
    result = await service.reading.read(WRITER, RUN, "s", 0, 10)
    assert [record.payload for record in result.page.records] == [0, 1]


async def test_a_refusing_database_answers_store_unavailable_at_once(
        proxy: BlackholeProxy, through_proxy: PostgresAdapters) -> None:
    service = service_on(through_proxy)
    await service.definitions.create(WRITER, RUN, definition("s"))
    proxy.refuse()
    proxy.blackhole()  # the pool's open connections are gone too
    await _unavailable(service.appender.append(WRITER, RUN, "s", [{"payload": 0}]))
    await _unavailable(service.reading.read(WRITER, RUN, "s", 0, 10))


async def test_opening_on_a_database_that_refuses_is_store_unavailable(
        proxy: BlackholeProxy) -> None:
    dsn = await proxy.start()
    proxy.refuse()
    await _unavailable(open_postgres(dsn, migrate=False, listen=False, bounds=SHORT))


async def _until_answered(call, *args):  # type: ignore[no-untyped-def]
    while True:
        try:
            return await call(*args)
        except StoreUnavailable:
            await asyncio.sleep(0.2)
