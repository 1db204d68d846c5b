"""A group's records as the few values its statement sends (ADR 0077): every kind of record
comes back as it was staged, and a batch keeps the append rules (dense sequences, each key
stored once, credit decided under the lock) whoever else writes the stream."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from adapters.postgres import PostgresAdapters
from adapters.postgres.ids import stream_id
from application.ports.records import StoredRecord
from application.service import RunnelService
from domain.errors import Backpressure, InvalidRecord
from domain.identifiers import StreamKey
from domain.records import ObjectRef, draft_for_object, draft_from_wire
from tests.contracts.storage_support import stored
from tests.integration.support import RUN, TENANT, WRITER, definition, service_on
from tests.integration.test_group_commit import (  # noqa: F401  (fixtures)
    Blocker,
    pg,
    queued,
    stream,
)
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

KINDS: list[dict[str, Any]] = [
    {"payload": {"b": 1, "a": [1.5, 1e16, "x,y"], "é": "\u001e\n"}},
    {"payload": None},
    {"data": "AAEC", "content_type": "application/octet-stream", "idempotency_key": "k,1"},
    {"data": "", "content_type": "image/png"},
    {"payload": "plain", "idempotency_key": "k\u001e2"},
    {"payload": [], "content_type": "application/vnd.x+json"},
]
OBJECT = ObjectRef("0b8d3c1e-1a7c-4d0e-9f10-3d3b9a2a6c11", 12, "a" * 64, "text/plain")


async def stage(adapters: PostgresAdapters, key: StreamKey, items: list[dict[str, Any]],
                *, with_object: bool = False) -> list[StoredRecord]:
    async with adapters.store.lock(key) as session:
        drafts = [draft_from_wire(item, ()) for item in items]
        if with_object:
            drafts.append(draft_for_object(OBJECT))
        plan = session.stream.plan_append(drafts, {})
        session.stream.append(plan)
        records = stored(plan)
        session.add_records(records)
    return records


async def rows(pg_dsn: str, key: StreamKey) -> list[asyncpg.Record]:  # noqa: F811
    connection = await asyncpg.connect(pg_dsn)
    try:
        return await connection.fetch(
            "SELECT sequence, payload, byte_offset, idempotency_key FROM records "
            "WHERE stream = $1 ORDER BY sequence", stream_id(key))
    finally:
        await connection.close()


async def test_every_kind_of_record_of_a_shared_group_comes_back_as_it_was_staged(
        pg: PostgresAdapters, pg_dsn: str) -> None:  # noqa: F811
    first, second, blocked = (await stream(pg, "first"), await stream(pg, "second"),
                              await stream(pg, "blocker"))
    await stage(pg, first, [{"payload": 0}])  # so the group's first stream starts above 1
    blocker = Blocker(pg, blocked)
    await blocker.inside.wait()
    # Both wait for the one committer, so they run in one group and one statement.
    staged = [asyncio.create_task(stage(pg, first, KINDS, with_object=True)),
              asyncio.create_task(stage(pg, second, list(reversed(KINDS))))]
    await queued(pg, 2)
    blocker.release.set()
    await blocker.task
    mine, theirs = await asyncio.gather(*staged)

    for key, records in ((first, mine), (second, theirs)):
        page = await pg.reader.read_page(key, records[0].sequence - 1, 100)
        assert list(page.records) == records
        stored_rows = await rows(pg_dsn, key)
        assert [(row["sequence"], row["byte_offset"]) for row in stored_rows[-len(records):]] \
            == [(record.sequence, record.offset) for record in records]
        assert [row["payload"] for row in stored_rows[-len(records):]] \
            == [record.payload_json for record in records]  # the very text, not re-encoded
    assert mine[0].sequence == 2 and theirs[0].sequence == 1


async def test_a_payload_text_holding_the_separator_fails_its_own_unit_of_work(
        pg: PostgresAdapters, pg_dsn: str) -> None:  # noqa: F811
    key = await stream(pg, "s")
    with pytest.raises(InvalidRecord, match="JSON text"):
        async with pg.store.lock(key) as session:
            plan = session.stream.plan_append([draft_from_wire({"payload": 1}, ())], {})
            session.stream.append(plan)
            record, = stored(plan)
            session.add_records([StoredRecord(record.sequence, record.content_type,
                                              record.appended_at, 3, '1\x1e2', offset=3)])
    await stage(pg, key, [{"payload": 1}, {"payload": 2}])
    assert [(row["sequence"], row["payload"]) for row in await rows(pg_dsn, key)] \
        == [(1, "1"), (2, "2")]


async def setup(service: RunnelService, stream_name: str, **pins: Any) -> None:
    await service.definitions.create(WRITER, RUN, definition(stream_name, **pins))


def batch(keys: list[str]) -> list[dict[str, Any]]:
    return [{"payload": {"k": key}, "idempotency_key": key} for key in keys]


async def test_a_batch_with_a_used_key_in_the_middle_stores_the_others_densely(
        pg: PostgresAdapters, pg_dsn: str) -> None:  # noqa: F811
    service = service_on(pg)
    await setup(service, "s")
    await service.appender.append(WRITER, RUN, "s", batch(["a", "b", "c"]))
    result = await service.appender.append(WRITER, RUN, "s", batch(["d", "b", "e", "d"]))
    assert result.sequences == (4, 2, 5, 4)
    assert result.duplicates == (1, 3)
    key = StreamKey(TENANT, RUN, "s")
    assert [(row["sequence"], row["idempotency_key"]) for row in await rows(pg_dsn, key)] \
        == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]


async def test_batches_retried_by_two_processes_at_once_store_each_record_once_densely(
        writers: tuple[PostgresAdapters, PostgresAdapters], pg_dsn: str) -> None:  # noqa: F811
    first, second = writers
    services = service_on(first), service_on(second)
    await setup(services[0], "s")
    batches = [batch([f"b{number}-{index}" for index in range(20)]) for number in range(12)]
    # Every batch is sent through both processes at once (a retry racing the original).
    results = await asyncio.gather(*(service.appender.append(WRITER, RUN, "s", records)
                                     for records in batches for service in services))
    for original, retry in zip(results[::2], results[1::2], strict=True):
        assert original.sequences == retry.sequences
    stored_rows = await rows(pg_dsn, StreamKey(TENANT, RUN, "s"))
    assert [row["sequence"] for row in stored_rows] == list(range(1, 12 * 20 + 1))
    assert sorted(row["idempotency_key"] for row in stored_rows) \
        == sorted(item["idempotency_key"] for records in batches for item in records)
    offsets = [row["byte_offset"] for row in stored_rows]
    sizes = [len(row["payload"].encode()) for row in stored_rows]
    assert offsets == [sum(sizes[:index + 1]) for index in range(len(sizes))]


async def test_a_batch_refused_by_credit_leaves_no_row_and_no_receipt(
        pg: PostgresAdapters, pg_dsn: str) -> None:  # noqa: F811
    service = service_on(pg)
    await setup(service, "s", consumers=["c"], credit={"max_unread_items": 150})
    await service.appender.append(WRITER, RUN, "s", batch([f"a{n}" for n in range(100)]))
    refused = batch([f"b{n}" for n in range(100)])
    with pytest.raises(Backpressure):
        await service.appender.append(WRITER, RUN, "s", refused)
    key = StreamKey(TENANT, RUN, "s")
    assert len(await rows(pg_dsn, key)) == 100
    connection = await asyncpg.connect(pg_dsn)
    try:
        assert await connection.fetchval(
            "SELECT count(*) FROM append_receipts WHERE stream = $1", stream_id(key)) == 100
    finally:
        await connection.close()
    await service.acknowledger.ack(WRITER, RUN, "s", "c", 100)
    result = await service.appender.append(WRITER, RUN, "s", refused)
    assert result.sequences == tuple(range(101, 201))
