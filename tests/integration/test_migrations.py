"""Migrations: applied once, recorded, and safe when several processes start at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from adapters.postgres import migrate
from adapters.postgres.migrations import available_migrations
from tests.pg import create_database, drop_database

pytestmark = pytest.mark.postgres

TABLES = {"streams", "stream_events", "records", "append_receipts", "consumers",
          "object_intents", "input_deliveries", "deletion_outbox", "gap_evidence",
          "erased_runs", "runnel_migrations"}


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
