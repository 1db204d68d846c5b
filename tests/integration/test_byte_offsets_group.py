"""Byte offsets inside one group transaction (ADR 0047): a unit of work acking into
records that an earlier unit of the same group staged reads their offsets from the
group, not from the database (which does not have them yet), and a rejected unit's
records lend it none."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from adapters.postgres import PostgresAdapters
from adapters.postgres.ids import stream_id
from domain.definition import build_definition
from domain.identifiers import StreamKey
from domain.records import draft_from_wire
from domain.stream import Stream
from tests.contracts.storage_support import ack_in, stored
from tests.integration.test_group_commit import (  # noqa: F401  (fixtures)
    NOW,
    Blocker,
    Boom,
    pg,
    queued,
    stream,
)
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres


async def append(adapters: PostgresAdapters, key: StreamKey, *lengths: int,
                 then: Exception | None = None) -> None:
    async with adapters.store.lock(key) as session:
        plan = session.stream.plan_append(
            [draft_from_wire({"payload": "z" * length}, ()) for length in lengths], {})
        session.stream.append(plan)
        session.add_records(stored(plan))
        if then is not None:
            raise then


async def ack(adapters: PostgresAdapters, key: StreamKey, consumer: str, sequence: int) -> None:
    async with adapters.store.lock(key) as session:
        await ack_in(session, consumer, sequence)


async def gated(adapters: PostgresAdapters) -> StreamKey:
    key = StreamKey("t", "r", "gated")
    raw = {"stream_id": "gated", "content_class": "output.text",
           "consumers": ["ui", "audit"], "credit": {"max_unread_items": 1000}}
    await adapters.store.create(Stream.start(key, build_definition(raw, "local"), NOW))
    return key


async def test_an_ack_into_records_staged_earlier_in_the_group_counts_them_right(
        pg: PostgresAdapters, pg_dsn: str) -> None:  # noqa: F811
    key, elsewhere = await gated(pg), await stream(pg, "blocker")
    await append(pg, key, 1, 10)
    async with Blocker(pg, elsewhere):
        tasks = [asyncio.create_task(append(pg, key, 100, 1000, 5)),       # 3, 4, 5
                 asyncio.create_task(append(pg, key, 7, then=Boom())),     # rejected
                 asyncio.create_task(append(pg, key, 50)),                 # 6
                 asyncio.create_task(ack(pg, key, "ui", 4)),
                 asyncio.create_task(ack(pg, key, "audit", 5))]
        await queued(pg, len(tasks))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert pg.store.committer.stats.recent_sizes[-1] == len(tasks)  # one transaction
    assert isinstance(results[1], Boom) and all(r is None for i, r in enumerate(results)
                                                if i != 1)
    connection = await asyncpg.connect(pg_dsn)
    try:
        rows = await connection.fetch(
            "SELECT sequence, size, byte_offset FROM records WHERE stream = $1 "
            "ORDER BY sequence", stream_id(key))
    finally:
        await connection.close()
    sizes = {row["sequence"]: row["size"] for row in rows}
    running = 0
    for row in rows:
        running += row["size"]
        assert row["byte_offset"] == running
    loaded = await pg.store.load(key)
    assert loaded is not None and loaded.head == 6
    assert (loaded.usage.unread_items, loaded.usage.unread_bytes) == (2, sizes[5] + sizes[6])
    assert loaded.ack_offsets["ui"] == sum(sizes[n] for n in range(1, 5))
