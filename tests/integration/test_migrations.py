"""Migrations: applied once, recorded, and safe when several processes start at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from adapters.postgres import migrate
from adapters.postgres.migrations import _CREATE_LEDGER, available_migrations
from tests.pg import create_database, drop_database

pytestmark = pytest.mark.postgres

TABLES = {"streams", "stream_events", "records", "append_receipts", "consumers",
          "object_intents", "input_deliveries", "deletion_outbox", "gap_evidence",
          "erased_runs", "region_fences", "subscription_leases", "live_seq",
          "revoked_tokens",
          "runnel_migrations"}


@pytest.fixture
async def empty_dsn() -> AsyncIterator[str]:
    dsn = await create_database()
    yield dsn
    await drop_database(dsn)


async def recorded(dsn: str) -> list[str]:
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch("SELECT name FROM runnel_migrations ORDER BY name")
        return [row["name"] for row in rows]
    finally:
        await connection.close()


async def tables(dsn: str) -> set[str]:
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {row["tablename"] for row in rows}
    finally:
        await connection.close()


async def test_migrate_applies_every_migration_once_and_records_it(empty_dsn: str) -> None:
    names = [name for name, _ in available_migrations()]
    assert names and names[0].startswith("0001_")
    assert await migrate(empty_dsn) == names
    assert await migrate(empty_dsn) == []
    assert await recorded(empty_dsn) == names
    assert await tables(empty_dsn) == TABLES


async def test_processes_starting_at_once_apply_each_migration_exactly_once(
        empty_dsn: str) -> None:
    results = await asyncio.gather(*(migrate(empty_dsn) for _ in range(4)))
    names = [name for name, _ in available_migrations()]
    assert sorted(results, key=len) == [[], [], [], names]
    assert await recorded(empty_dsn) == names


async def test_the_unread_floor_column_is_filled_from_existing_snapshots(
        empty_dsn: str) -> None:
    before = [(name, sql) for name, sql in available_migrations() if name < "0006_"]
    connection = await asyncpg.connect(empty_dsn)
    try:
        await connection.execute(_CREATE_LEDGER)
        for name, sql in before:
            await connection.execute(sql)
            await connection.execute("INSERT INTO runnel_migrations (name) VALUES ($1)", name)
        snapshot = b'{"topic":"domain.stream:Stream","state":{"head":9,"unread_floor":7}}'
        await connection.execute(
            "INSERT INTO streams (id, tenant, run_id, stream_id, definition, snapshot_topic, "
            "snapshot, version, head, earliest, total_items, total_bytes, closed, legal_hold, "
            "erased, created_at) VALUES (gen_random_uuid(), 't', 'r', 's', '{}', "
            "'eventsourcing.domain:Snapshot', $1, 3, 9, 1, 9, 90, false, false, false, now())",
            snapshot)
        assert (await migrate(empty_dsn))[0] == "0006_unread_floor"
        assert await connection.fetchval("SELECT unread_floor FROM streams") == 7
    finally:
        await connection.close()
