"""A stream read back from its row: the snapshot and the definition beside it. Credit is
counters in the snapshot (byte offsets, ADR 0047): another process loads the same unread
window without reading the records, and decides on it the same way."""

from __future__ import annotations

import asyncpg
import pytest

from adapters.postgres import open_postgres
from domain.identifiers import StreamKey
from tests.integration.support import RUN, WRITER, definition, service_on
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres


async def test_another_process_loads_the_same_unread_window(pg_dsn: str) -> None:  # noqa: F811
    writer = await open_postgres(pg_dsn, migrate=False, listen=False)
    reader = await open_postgres(pg_dsn, migrate=False, listen=False)  # holds nothing yet
    try:
        a, b = service_on(writer), service_on(reader)
        await a.definitions.create(WRITER, RUN, definition(
            "s", consumers=["c"], credit={"max_unread_items": 100}))
        payloads = ["a", "b" * 10, {"x": [1, 2, 3]}, "d" * 100, 5]
        for payload in payloads:
            await a.appender.append(WRITER, RUN, "s", [{"payload": payload}])
        await a.acknowledger.ack(WRITER, RUN, "s", "c", 2)
        key = StreamKey(WRITER.tenant, RUN, "s")
        sizes = {r.sequence: r.size for r in (await writer.reader.read_page(key, 0, 10)).records}
        held = await writer.store.load(key)
        loaded = await reader.store.load(key)
        assert held is not None and loaded is not None
        assert vars(loaded) == vars(held)
        assert (loaded.unread_floor, loaded.usage.unread_items) == (2, 3)
        assert loaded.unread_bytes == sizes[3] + sizes[4] + sizes[5]

        await b.acknowledger.ack(WRITER, RUN, "s", "c", 4)  # decided by the process that loaded it
        after = await reader.store.load(key)
        assert after is not None
        assert (after.unread_floor, after.usage.unread_items) == (4, 1)
        assert after.unread_bytes == sizes[5]
    finally:
        await writer.close()
        await reader.close()
    connection = await asyncpg.connect(pg_dsn)
    try:
        row = await connection.fetchrow(
            "SELECT snapshot, unread_floor FROM streams WHERE run_id = $1 AND stream_id = 's'",
            RUN)
        offsets = await connection.fetch(
            "SELECT r.sequence, r.byte_offset FROM records AS r JOIN streams AS s "
            "ON s.id = r.stream WHERE s.run_id = $1 ORDER BY r.sequence", RUN)
    finally:
        await connection.close()
    assert b"unread_sizes" not in bytes(row["snapshot"]) and row["unread_floor"] == 4
    running = 0
    for record in offsets:  # every record stores the running total through itself
        running += sizes[record["sequence"]]
        assert record["byte_offset"] == running
