"""Byte offsets (migration 0015, ADR 0047) on databases and writers of the release before.

- A database at 0014, with streams whose records were partly acked and partly pruned,
  has the same credit after 0015 as before it, and keeps counting right afterwards.
- A node of the release before 0015, still running during a rolling deploy, inserts
  records without an offset and writes version-2 snapshots; a node of this release
  counts them right, acks into them, prunes them, and appends after them.

The release before 0015 is emulated the way earlier upgrade tests do it (docs/adr/0027):
its shapes written by SQL, its ledger without the newer migration.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import asyncpg
import pytest

from adapters.postgres import migrate, open_postgres
from adapters.postgres.ids import stream_id
from domain.identifiers import RunKey, StreamKey
from tests.contracts.storage_support import prune_in
from tests.integration.support import RUN, TENANT, WRITER, definition, service_on
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

MIGRATION = "0015_record_byte_offsets"


def key(name: str) -> StreamKey:
    return RunKey(TENANT, RUN).stream(name)


def v2_state(state: dict[str, Any]) -> None:
    """A state as the release before offsets wrote it: class version 2, no offsets."""
    state["class_version"] = 2
    state.pop("head_offset", None)
    state.pop("ack_offsets", None)


async def rewrite_snapshot(connection: asyncpg.Connection, name: str, change: Any) -> None:
    row = await connection.fetchrow("SELECT snapshot FROM streams WHERE id = $1",
                                    stream_id(key(name)))
    snapshot = json.loads(bytes(row["snapshot"]))
    change(snapshot["state"])
    await connection.execute("UPDATE streams SET snapshot = $2 WHERE id = $1",
                             stream_id(key(name)),
                             json.dumps(snapshot, separators=(",", ":")).encode())


async def as_release_0014(dsn: str, names: list[str]) -> None:
    """Take the database back to what the release before 0015 left: no offset column, no
    `runnel_record_v2`, version-2 snapshots, and a ledger without 0015."""
    connection = await asyncpg.connect(dsn)
    try:
        for name in names:
            await rewrite_snapshot(connection, name, v2_state)
        await connection.execute("ALTER TABLE records DROP COLUMN byte_offset")
        await connection.execute("DROP TYPE runnel_record_v2")
        await connection.execute("DELETE FROM runnel_migrations WHERE name = $1", MIGRATION)
    finally:
        await connection.close()


async def window_as_0014_reads_it(dsn: str, name: str) -> tuple[int, int]:
    """(unread items, unread bytes) the way the release before 0015 loaded them: the sizes
    of the records above the snapshot's floor; and its snapshot agrees."""
    connection = await asyncpg.connect(dsn)
    try:
        row = await connection.fetchrow("SELECT snapshot FROM streams WHERE id = $1",
                                        stream_id(key(name)))
        state = json.loads(bytes(row["snapshot"]))["state"]
        sizes = await connection.fetchval(
            "SELECT coalesce(array_agg(size ORDER BY sequence), '{}') FROM records "
            "WHERE stream = $1 AND sequence > $2", stream_id(key(name)), state["unread_floor"])
    finally:
        await connection.close()
    assert state["unread_bytes"] == sum(sizes)
    return len(sizes), sum(sizes)


async def sizes_above(dsn: str, name: str, floor: int) -> tuple[int, int]:
    connection = await asyncpg.connect(dsn)
    try:
        sizes = await connection.fetchval(
            "SELECT coalesce(array_agg(size), '{}') FROM records WHERE stream = $1 "
            "AND sequence > $2", stream_id(key(name)), floor)
    finally:
        await connection.close()
    return len(sizes), sum(sizes)


async def stored_offsets(dsn: str, name: str) -> list[tuple[int, int, int | None]]:
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(
            "SELECT sequence, size, byte_offset FROM records WHERE stream = $1 "
            "ORDER BY sequence", stream_id(key(name)))
    finally:
        await connection.close()
    return [(row["sequence"], row["size"], row["byte_offset"]) for row in rows]


def payloads(*lengths: int) -> list[dict[str, Any]]:
    return [{"payload": "x" * length} for length in lengths]


async def test_credit_is_the_same_after_migration_0015_and_keeps_counting(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        service = service_on(adapters)
        create, append = service.definitions.create, service.appender.append
        acks, retention = service.acknowledger, service.retention
        await create(WRITER, RUN, definition("acked-pruned", consumers=["ui", "audit"],
                                             retention={"max_records": 4}))
        await append(WRITER, RUN, "acked-pruned", payloads(1, 30, 7, 400, 5, 60, 8, 900))
        await acks.ack(WRITER, RUN, "acked-pruned", "ui", 6)
        await acks.ack(WRITER, RUN, "acked-pruned", "audit", 3)
        assert (await retention.prune(key("acked-pruned"))).records == 4  # floor 3 → 4
        await acks.ack(WRITER, RUN, "acked-pruned", "audit", 5)
        await create(WRITER, RUN, definition("unacked", consumers=["ui"]))
        await append(WRITER, RUN, "unacked", payloads(3, 33, 333, 3333))
        await acks.ack(WRITER, RUN, "unacked", "ui", 1)
        await create(WRITER, RUN, definition("no-consumer", retention={"max_records": 2}))
        await append(WRITER, RUN, "no-consumer", payloads(10, 20, 30, 40, 50))
        await retention.prune(key("no-consumer"))
        await create(WRITER, RUN, definition("emptied", consumers=["ui"]))
        await append(WRITER, RUN, "emptied", payloads(11, 22))
        await acks.ack(WRITER, RUN, "emptied", "ui", 2)
        async with adapters.store.lock(key("emptied")) as session:
            await prune_in(session, 2)
            await session.remove_records_through(2)
    finally:
        await adapters.close()
    names = ["acked-pruned", "unacked", "no-consumer", "emptied"]
    await as_release_0014(pg_dsn, names)
    before = {name: await window_as_0014_reads_it(pg_dsn, name) for name in names}
    assert before["acked-pruned"][0] == 3 and before["unacked"][0] == 3  # not vacuous
    assert before["no-consumer"] == before["emptied"] == (0, 0)

    assert await migrate(pg_dsn) == [MIGRATION]

    for name in names:  # every retained record has an offset: consistent running totals
        rows = await stored_offsets(pg_dsn, name)
        assert all(offset is not None for _, _, offset in rows)
        for (_, _, below), (_, size, offset) in pairwise(rows):
            assert offset == below + size  # type: ignore[operator]
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)  # nothing held
    try:
        service = service_on(adapters)
        for name in names:
            loaded = await adapters.store.load(key(name))
            assert loaded is not None
            assert (loaded.usage.unread_items, loaded.usage.unread_bytes) == before[name]
        # And on from there: acks inside the migrated window, prunes, appends.
        await service.acknowledger.ack(WRITER, RUN, "acked-pruned", "audit", 7)  # floor 6
        assert (await usage(adapters, "acked-pruned")) == await sizes_above(
            pg_dsn, "acked-pruned", 6)
        await service.appender.append(WRITER, RUN, "unacked", payloads(44))
        await service.acknowledger.ack(WRITER, RUN, "unacked", "ui", 3)
        assert (await usage(adapters, "unacked")) == await sizes_above(pg_dsn, "unacked", 3)
        await service.appender.append(WRITER, RUN, "no-consumer", payloads(60))
        assert (await usage(adapters, "no-consumer")) == (0, 0)
        await service.appender.append(WRITER, RUN, "emptied", payloads(5, 55, 555))
        await service.acknowledger.ack(WRITER, RUN, "emptied", "ui", 4)
        assert (await usage(adapters, "emptied")) == await sizes_above(pg_dsn, "emptied", 4)
    finally:
        await adapters.close()


async def usage(adapters: Any, name: str) -> tuple[int, int]:
    loaded = await adapters.store.load(key(name))
    assert loaded is not None
    return loaded.usage.unread_items, loaded.usage.unread_bytes


async def append_as_the_release_before_offsets(dsn: str, name: str, *lengths: int) -> None:
    """What an append by a node of the release before 0015 writes: records through
    `runnel_record`'s columns (no offset), and a version-2 snapshot whose counters it kept
    itself (the offsets a newer node left in it are carried along, stale)."""
    connection = await asyncpg.connect(dsn)
    try:
        async with connection.transaction():
            row = await connection.fetchrow(
                "SELECT snapshot, version FROM streams WHERE id = $1 FOR UPDATE",
                stream_id(key(name)))
            snapshot = json.loads(bytes(row["snapshot"]))
            state = snapshot["state"]
            for length in lengths:
                text = json.dumps("y" * length)
                state["head"] += 1
                await connection.execute(
                    "INSERT INTO records (stream, sequence, content_type, appended_at, size, "
                    "payload) VALUES ($1, $2, 'application/json', now(), $3, $4)",
                    stream_id(key(name)), state["head"], len(text), text)
                state["total_items"] += 1
                state["total_bytes"] += len(text)
                state["unread_bytes"] += len(text)
            state["class_version"] = 2
            await connection.execute(
                "UPDATE streams SET snapshot = $2, version = $3, head = $4, total_items = $5, "
                "total_bytes = $6, updated_at = now() WHERE id = $1", stream_id(key(name)),
                json.dumps(snapshot, separators=(",", ":")).encode(), row["version"] + 1,
                state["head"], state["total_items"], state["total_bytes"])
    finally:
        await connection.close()


async def test_records_of_an_old_release_node_count_right_in_a_rolling_deploy(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition(
            "s", consumers=["ui", "audit"], credit={"max_unread_items": 100}))
        await service.appender.append(WRITER, RUN, "s", payloads(1, 20, 300))
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 3)
        await service.acknowledger.ack(WRITER, RUN, "s", "audit", 1)
        await append_as_the_release_before_offsets(pg_dsn, "s", 4, 50, 600)
        assert [offset for _, _, offset in await stored_offsets(pg_dsn, "s")][3:] == [None] * 3

        assert await usage(adapters, "s") == await sizes_above(pg_dsn, "s", 1)
        await service.acknowledger.ack(WRITER, RUN, "s", "audit", 4)  # into the old node's records
        assert await usage(adapters, "s") == await sizes_above(pg_dsn, "s", 3)
        # floor 4: audit's NULL-row offset
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 5)
        assert await usage(adapters, "s") == await sizes_above(pg_dsn, "s", 4)
        async with adapters.store.lock(key("s")) as session:  # through a NULL-offset record
            await prune_in(session, 5)
            await session.remove_records_through(5)
        assert await usage(adapters, "s") == await sizes_above(pg_dsn, "s", 5)
        await service.appender.append(WRITER, RUN, "s", payloads(7))
        await service.acknowledger.ack(WRITER, RUN, "s", "audit", 6)  # ui holds the floor at 5
        assert await usage(adapters, "s") == await sizes_above(pg_dsn, "s", 5)
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 7)
        assert await usage(adapters, "s") == await sizes_above(pg_dsn, "s", 6)
        await service.acknowledger.ack(WRITER, RUN, "s", "audit", 7)
        assert await usage(adapters, "s") == (0, 0)
    finally:
        await adapters.close()


async def test_old_release_records_after_everything_was_pruned_count_right(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition("s", consumers=["ui"]))
        await service.appender.append(WRITER, RUN, "s", payloads(8, 80))
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 2)
        async with adapters.store.lock(key("s")) as session:
            await prune_in(session, 2)
            await session.remove_records_through(2)
        # No record with an offset is left to anchor the old node's records.
        await append_as_the_release_before_offsets(pg_dsn, "s", 3, 333)
        assert await usage(adapters, "s") == await sizes_above(pg_dsn, "s", 2)
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 3)
        assert await usage(adapters, "s") == await sizes_above(pg_dsn, "s", 3)
        await service.appender.append(WRITER, RUN, "s", payloads(9, 99))
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 5)
        assert await usage(adapters, "s") == await sizes_above(pg_dsn, "s", 5)
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 6)
        assert await usage(adapters, "s") == (0, 0)
    finally:
        await adapters.close()
