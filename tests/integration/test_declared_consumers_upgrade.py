"""A database from before declared-only consumers: a reader had registered a consumer of
its own by acking it, and so froze the producer. After the upgrade (migration 0007 and
the snapshot upcast) only the declared consumer holds credit, and the stream goes on."""

from __future__ import annotations

import json

import asyncpg
import pytest

from adapters.postgres import migrate, open_postgres
from adapters.postgres.ids import stream_id
from domain.errors import Backpressure
from domain.identifiers import RunKey
from tests.integration.support import RUN, TENANT, WRITER, definition, service_on
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres


async def _as_version_one(dsn: str) -> None:
    """Rewrite the stream as the previous release stored it: a snapshot without a class
    version, with first-acker owners and a squatter's ack at 0 holding the floor down,
    its consumer row, and the ledger without migration 0007."""
    key = RunKey(TENANT, RUN).stream("s")
    connection = await asyncpg.connect(dsn)
    try:
        raw = await connection.fetchval("SELECT snapshot FROM streams WHERE id = $1",
                                        stream_id(key))
        snapshot = json.loads(bytes(raw))
        state = snapshot["state"]
        assert state.pop("class_version") == 3
        del state["head_offset"], state["ack_offsets"]  # byte offsets came later (0015)
        state["acks"] = {"ui": 3, "squatter": 0}
        state["owners"] = {"ui": "writer", "squatter": "mallory"}
        state["unread_floor"] = 0
        state["unread_bytes"] = 3
        await connection.execute(
            "UPDATE streams SET snapshot = $2, unread_floor = 0 WHERE id = $1",
            stream_id(key), json.dumps(snapshot, separators=(",", ":")).encode())
        await connection.execute(
            "INSERT INTO consumers (stream, consumer_id, acked, owner) "
            "VALUES ($1, 'squatter', 0, 'mallory')", stream_id(key))
        await connection.execute("UPDATE consumers SET owner = 'writer' WHERE consumer_id = 'ui'")
        await connection.execute(
            "DELETE FROM runnel_migrations WHERE name = '0007_declared_consumers_only'")
    finally:
        await connection.close()


async def test_a_squatted_stream_takes_appends_again_after_the_upgrade(
        pg_dsn: str) -> None:  # noqa: F811
    before = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        service = service_on(before)
        await service.definitions.create(WRITER, RUN, definition(
            "s", consumers=["ui"], credit={"max_unread_items": 3}))
        await service.appender.append(WRITER, RUN, "s", [{"payload": n} for n in range(3)])
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 3)
    finally:
        await before.close()
    await _as_version_one(pg_dsn)

    assert await migrate(pg_dsn) == ["0007_declared_consumers_only"]
    after = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        service = service_on(after)
        stream = await service.definitions.get(WRITER, RUN, "s")
        assert stream.acks == {"ui": 3}
        assert not hasattr(stream, "owners")
        result = await service.appender.append(WRITER, RUN, "s",
                                               [{"payload": n} for n in range(3, 6)])
        assert result.sequences == (4, 5, 6)
        with pytest.raises(Backpressure):  # the declared consumer still gates it
            await service.appender.append(WRITER, RUN, "s", [{"payload": 6}])
    finally:
        await after.close()
    connection = await asyncpg.connect(pg_dsn)
    try:
        rows = await connection.fetch("SELECT consumer_id, owner FROM consumers")
        assert [tuple(row) for row in rows] == [("ui", None)]
    finally:
        await connection.close()
