"""Upgrades from earlier releases' databases, and writers of an earlier release beside ours.

A release's database is built the way that release's `runnel migrate` left it: its
migration files applied in order and recorded in a ledger without checksums. Files
a release shipped with a text that differs from ours are kept in `releases/<commit>/`
(only 0003 ever was, and that is what these tests are about: docs/adr/0027); each
release keeps its copy, whatever the current file says.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from adapters.postgres import migrate, open_postgres
from adapters.postgres.ids import stream_id
from adapters.postgres.migrations import _CREATE_LEDGER, available_migrations
from domain.identifiers import RunKey
from tests.integration.support import RUN, TENANT, WRITER, definition, service_on
from tests.pg import create_database, drop_database, pg_dsn, pg_template  # noqa: F401

pytestmark = pytest.mark.postgres

RELEASES = Path(__file__).parent / "releases"

BEFORE_THE_FLOOR_COLUMN = ("da8317c", "0005_claimed_deletions_by_stream")
"""The last release whose 0003 is the released text: migrations 0001-0005."""
EDITED_0003 = ("95ca147", "0010_live_seq")
"""A release that shipped the edited 0003 (`unread_floor` in the composite type)."""


@pytest.fixture
async def empty_dsn() -> AsyncIterator[str]:
    dsn = await create_database()
    yield dsn
    await drop_database(dsn)


async def as_released(dsn: str, release: tuple[str, str]) -> list[str]:
    """Migrate `dsn` as `release`'s binary did; returns the names it applied."""
    commit, last = release
    shipped = RELEASES / commit
    names = []
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(_CREATE_LEDGER)
        for name, sql in available_migrations():
            if name > last:
                break
            text = (shipped / f"{name}.sql")
            await connection.execute(text.read_text() if text.exists() else sql)
            await connection.execute("INSERT INTO runnel_migrations (name) VALUES ($1)", name)
            names.append(name)
    finally:
        await connection.close()
    return names


async def append_ack_append(dsn: str) -> None:
    """A stream with a consumer and an unread ceiling of 3 takes appends, an ack and more
    appends that fit only once the ack is counted."""
    adapters = await open_postgres(dsn, migrate=False, listen=False)
    try:
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition(
            "s", consumers=["ui"], credit={"max_unread_items": 3}))
        first = await service.appender.append(WRITER, RUN, "s", [{"payload": n} for n in range(3)])
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 3)
        again = await service.appender.append(WRITER, RUN, "s",
                                              [{"payload": n} for n in range(3, 6)])
        assert (first.sequences, again.sequences) == ((1, 2, 3), (4, 5, 6))
    finally:
        await adapters.close()


@pytest.mark.parametrize("release", [BEFORE_THE_FLOOR_COLUMN, EDITED_0003],
                         ids=["released-0003", "edited-0003"])
async def test_a_database_of_an_earlier_release_takes_appends_and_acks_after_the_upgrade(
        empty_dsn: str, release: tuple[str, str]) -> None:
    released = await as_released(empty_dsn, release)
    applied = await migrate(empty_dsn)
    assert [name for name, _ in available_migrations()] == released + applied
    await append_ack_append(empty_dsn)


async def test_the_upgrade_records_a_checksum_for_every_migration(empty_dsn: str) -> None:
    await as_released(empty_dsn, EDITED_0003)
    await migrate(empty_dsn)
    connection = await asyncpg.connect(empty_dsn)
    try:
        rows = await connection.fetch("SELECT name, checksum FROM runnel_migrations")
    finally:
        await connection.close()
    assert len(rows) == len(available_migrations())
    assert all(row["checksum"] and len(row["checksum"]) == 64 for row in rows)


async def _ack_as_the_release_before_the_floor_column(dsn: str, acked: int) -> None:
    """What an ack by a node of the release before migration 0006 writes: the consumer row
    and the stream's snapshot (floor raised, window trimmed) and version, with the UPDATE
    of that release, which has no `unread_floor` column to set."""
    key = RunKey(TENANT, RUN).stream("s")
    connection = await asyncpg.connect(dsn)
    try:
        async with connection.transaction():
            row = await connection.fetchrow(
                "SELECT snapshot, version FROM streams WHERE id = $1 FOR UPDATE", stream_id(key))
            snapshot = json.loads(bytes(row["snapshot"]))
            state = snapshot["state"]
            state["acks"] = {**state["acks"], "ui": acked}
            state["unread_floor"], state["unread_bytes"] = acked, 0
            state["unread_sizes"] = []  # that release kept the window in the snapshot
            await connection.execute(
                "UPDATE streams SET snapshot = $2, version = $3, updated_at = now() "
                "WHERE id = $1", stream_id(key),
                json.dumps(snapshot, separators=(",", ":")).encode(), row["version"] + 1)
            await connection.execute(
                "UPDATE consumers SET acked = $2 WHERE stream = $1 AND consumer_id = 'ui'",
                stream_id(key), acked)
    finally:
        await connection.close()


async def test_an_ack_by_an_old_release_node_counts_for_a_new_node_in_a_rolling_deploy(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition(
            "s", consumers=["ui"], credit={"max_unread_items": 3}))
        await service.appender.append(WRITER, RUN, "s", [{"payload": n} for n in range(3)])
        await _ack_as_the_release_before_the_floor_column(pg_dsn, acked=3)
        result = await service.appender.append(WRITER, RUN, "s",
                                               [{"payload": n} for n in range(3, 6)])
        assert result.sequences == (4, 5, 6)
        stream = await service.definitions.get(WRITER, RUN, "s")
        assert stream.acks == {"ui": 3}
    finally:
        await adapters.close()

