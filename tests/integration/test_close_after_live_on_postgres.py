"""Close after live across processes on Postgres (ADR 0056): chunks published by one
process's bus, the close committed by another's store, a live subscription on each. Both
subscriptions get every chunk whose publish returned before the close, then the closing
wake, then what was published after it: the chunks and the close travel one ordered
channel (the NOTIFYs of one database, delivered in commit order)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.postgres import PostgresAdapters, open_postgres
from application.node import NodeSettings
from application.ports.waking import LiveChunk, LiveDraft
from tests.application.test_close_after_live import Nodes, close_race, steps
from tests.contracts.storage_support import WAKE_TIMEOUT, created
from tests.contracts.wake_bus_contract import chunks_until_closed
from tests.integration.support import service_on
from tests.pg import pg_class_dsn  # noqa: F401  (fixture)

pytestmark = pytest.mark.postgres

TRIES = 25
TICK = 0.5
"""A keepalive interval far above a NOTIFY's trip, so that the follow's backstop (for a
closing wake that never comes) is never what ends a reader here."""
PAUSE = 0.005


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


class TestTheFollowLoopOnTwoNodes:
    """The application test's interleavings (`close_race`), with chunks and appends on one
    node, the close on the other, and readers on both."""

    @settings(max_examples=20, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(before=steps, paces=st.lists(st.integers(0, 3), min_size=1, max_size=4),
           publisher=st.integers(0, 1))
    def test_every_chunk_published_before_a_close_reaches_every_reader_before_its_end(
            self, pg_class_dsn: str,  # noqa: F811
            before: list[tuple[str, int]], paces: list[int], publisher: int) -> None:
        asyncio.run(on_two_nodes(pg_class_dsn, before, paces, publisher))


async def on_two_nodes(dsn: str, before: list[tuple[str, int]], paces: list[int],
                       publisher: int) -> None:
    a = await open_postgres(dsn, migrate=False)
    b = await open_postgres(dsn, migrate=False)
    try:
        node = NodeSettings(keepalive_seconds=TICK)
        services = (service_on(a, node), service_on(b, node))
        nodes = Nodes(services[publisher], services[1 - publisher], services)
        await close_race(nodes, f"run-{uuid.uuid4().hex[:10]}", before, paces, PAUSE)
    finally:
        await a.close()
        await b.close()
