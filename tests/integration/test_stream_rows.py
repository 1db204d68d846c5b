"""A stream read back from its row: the snapshot, the definition beside it, and the sizes
of its unread records from the records table (the snapshot carries none of them)."""

from __future__ import annotations

import asyncpg
import pytest

from adapters.postgres import open_postgres
from domain.identifiers import StreamKey
from tests.integration.support import RUN, WRITER, definition, service_on
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres


async def test_another_process_loads_the_unread_window_from_the_records(
        pg_dsn: str) -> None:  # noqa: F811
    writer = await open_postgres(pg_dsn, migrate=False, listen=False)
    reader = await open_postgres(pg_dsn, migrate=False, listen=False)  # holds nothing yet
    try:
        a, b = service_on(writer), service_on(reader)
        await a.definitions.create(WRITER, RUN, definition(
            "s", consumers=["c"], credit={"max_unread_items": 100}))
        payloads = ["a", "b" * 10, {"x": [1, 2, 3]}, "d" * 100, 5]
        for payload in payloads:
            await a.appender.append(WRITER, RUN, "s", [{"payload": payload}])
        await a.acks.ack(WRITER, RUN, "s", "c", 2)
        key = StreamKey(WRITER.tenant, RUN, "s")
        held = await writer.store.load(key)
        loaded = await reader.store.load(key)
        assert held is not None and loaded is not None
        assert vars(loaded) == vars(held)
        assert (loaded.unread_floor, len(loaded.unread_sizes)) == (2, 3)
        assert loaded.unread_bytes == sum(loaded.unread_sizes)

        await b.acks.ack(WRITER, RUN, "s", "c", 4)  # decided by the process that loaded it
        after = await reader.store.load(key)
        assert after is not None
        assert (after.unread_floor, after.unread_sizes) == (4, loaded.unread_sizes[2:])
        assert after.unread_bytes == loaded.unread_sizes[2]
    finally:
        await writer.close()
        await reader.close()
    connection = await asyncpg.connect(pg_dsn)
    try:
        row = await connection.fetchrow(
            "SELECT snapshot, unread_floor FROM streams WHERE run_id = $1 AND stream_id = 's'",
            RUN)
    finally:
        await connection.close()
    assert b"unread_sizes" not in bytes(row["snapshot"]) and row["unread_floor"] == 4

