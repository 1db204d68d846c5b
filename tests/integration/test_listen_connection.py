"""The process's single LISTEN connection: one for all readers, survives being cut.

Two `open_postgres` instances on one database stand for two Runnel processes:
"A" writes, "B" serves the readers, so every wake B's readers get travels
through Postgres NOTIFY and B's LISTEN connection (a process hears its own
commits directly). B's keepalive is far longer than any test: a reader that
recovers does so because the bus re-established LISTEN and made it re-read,
not because it polled.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest

from adapters.postgres import PostgresAdapters, open_postgres
from adapters.postgres.bus import LISTEN_APPLICATION_NAME, ListenSettings
from application.node import NodeSettings
from application.ports.waking import LiveChunk, LiveDraft, Wake
from domain.identifiers import StreamKey
from tests.integration.blackhole_proxy import BlackholeProxy
from tests.integration.support import (
    DEADLINE,
    RUN,
    WRITER,
    definition,
    follow_to_end,
    service_on,
)
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

NO_POLLING = NodeSettings(keepalive_seconds=3600.0)
QUIET = 0.3


@pytest.fixture
async def writer(pg_dsn: str) -> AsyncIterator[PostgresAdapters]:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    yield adapters
    await adapters.close()


async def listen_backends(dsn: str) -> list[int]:
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = $1", LISTEN_APPLICATION_NAME)
        return [row["pid"] for row in rows]
    finally:
        await connection.close()


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait for a condition to hold (bounded); the test asserts the outcome, not the time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def test_one_listen_connection_serves_every_reader_of_the_process(
        pg_dsn: str, writer: PostgresAdapters) -> None:  # noqa: F811
    reader = await open_postgres(pg_dsn, migrate=False)
    try:
        writes, reads = service_on(writer), service_on(reader, NO_POLLING)
        streams = [f"s{n}" for n in range(5)]
        for stream in streams:
            await writes.definitions.create(WRITER, RUN, definition(stream))
        follows = [await reads.follower.open(WRITER, RUN, stream, 0)
                   for stream in streams for _ in range(10)]
        followers = [asyncio.create_task(follow_to_end(follow)) for follow in follows]
        assert reader.bus.hub.reader_count == 50
        assert reader.bus.listen_connections == 1
        assert len(await listen_backends(pg_dsn)) == 1
        for stream in streams:
            await writes.appender.append(WRITER, RUN, stream, [{"payload": n} for n in range(3)])
            await writes.lifecycle.close(WRITER, RUN, stream)
        seen = await asyncio.wait_for(asyncio.gather(*followers), DEADLINE)
        assert seen == [[1, 2, 3]] * 50
        assert reader.bus.listen_connections == 1 and reader.bus.reconnects == 0
    finally:
        await reader.close()


async def test_wakes_and_live_chunks_reach_other_processes_once(
        pg_dsn: str, writer: PostgresAdapters) -> None:  # noqa: F811
    reader = await open_postgres(pg_dsn, migrate=False)
    try:
        writes = service_on(writer)
        await writes.definitions.create(WRITER, RUN, definition("s"))
        key = StreamKey(WRITER.tenant, RUN, "s")
        async with reader.bus.subscribe(key, live=True) as remote, \
                writer.bus.subscribe(key, live=True) as local:
            await writes.appender.append(WRITER, RUN, "s", [{"payload": "héllo"}])
            for subscription in (remote, local):
                wake = await subscription.next(DEADLINE)
                assert isinstance(wake, Wake) and wake.records is not None
                assert [(r.sequence, r.payload) for r in wake.records] == [(1, "héllo")]
            draft = LiveDraft(key, {"token": "hi"}, source="model_turn", attempt=1, index=3)
            await writer.bus.publish_live([draft])
            # Live chunks reach local readers through the listener too, once (ADR 0017).
            chunk = await remote.next(DEADLINE)
            assert isinstance(chunk, LiveChunk) and chunk == draft.numbered(chunk.seq)
            assert await local.next(DEADLINE) == chunk
            assert await local.next(QUIET) is None
    finally:
        await reader.close()


async def test_a_terminated_listen_connection_is_replaced_and_readers_lose_nothing(
        pg_dsn: str, writer: PostgresAdapters) -> None:  # noqa: F811
    proxy = BlackholeProxy(pg_dsn)
    reader = await open_postgres(pg_dsn, migrate=False, listen_dsn=await proxy.start())
    admin = await asyncpg.connect(pg_dsn)
    try:
        writes, reads = service_on(writer), service_on(reader, NO_POLLING)
        await writes.definitions.create(WRITER, RUN, definition("s", credit={
            "max_unread_items": 100_000}))
        follows = [await reads.follower.open(WRITER, RUN, "s", 0) for _ in range(3)]
        followers = [asyncio.create_task(follow_to_end(follow)) for follow in follows]
        for n in range(100):
            await writes.appender.append(WRITER, RUN, "s", [{"payload": n}])
        cut = reader.bus.listener_pid
        proxy.refuse()  # B cannot come back until we say so
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", cut)
        await until(lambda: reader.bus.listen_connections == 0, "LISTEN to be lost")
        # Written while B is not listening: these wakes are lost for good.
        for n in range(100, 120):
            await writes.appender.append(WRITER, RUN, "s", [{"payload": n}])
        await writes.lifecycle.close(WRITER, RUN, "s")
        proxy.admit()
        seen = await asyncio.wait_for(asyncio.gather(*followers), DEADLINE)
        await until(lambda: reader.bus.listen_connections == 1, "LISTEN to come back")
        backends = await listen_backends(pg_dsn)
        listening = reader.bus.listener_pid
    finally:
        await admin.close()
        await reader.close()
        await proxy.close()
    assert seen == [list(range(1, 121))] * 3
    assert reader.bus.reconnects >= 1
    assert backends == [listening] and cut not in backends


async def test_a_half_open_listen_connection_is_caught_by_the_heartbeat(
        pg_dsn: str, writer: PostgresAdapters) -> None:  # noqa: F811
    proxy = BlackholeProxy(pg_dsn)
    through_proxy = await proxy.start()
    reader = await open_postgres(pg_dsn, migrate=False, listen_dsn=through_proxy,
                                 listen_settings=ListenSettings(heartbeat_seconds=0.2,
                                                                heartbeat_timeout_seconds=0.5))
    try:
        writes, reads = service_on(writer), service_on(reader, NO_POLLING)
        await writes.definitions.create(WRITER, RUN, definition("s"))
        follow = await reads.follower.open(WRITER, RUN, "s", 0)
        follower = asyncio.create_task(follow_to_end(follow))
        await writes.appender.append(WRITER, RUN, "s", [{"payload": 1}, {"payload": 2}])
        assert proxy.blackhole() == 1  # the LISTEN connection: silent, but not closed
        await writes.appender.append(WRITER, RUN, "s", [{"payload": 3}])
        await writes.lifecycle.close(WRITER, RUN, "s")
        seen = await asyncio.wait_for(follower, DEADLINE)
        await until(lambda: reader.bus.listen_connections == 1, "LISTEN to come back")
    finally:
        await reader.close()
        await proxy.close()
    assert seen == [1, 2, 3]
    assert reader.bus.reconnects >= 1
