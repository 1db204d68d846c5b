"""Migrations: applied once, recorded, and safe when several processes start at once."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from adapters.postgres import migrate, migrations
from adapters.postgres.migrations import (
    _CREATE_LEDGER,
    MIGRATIONS_DIR,
    SchemaMismatch,
    available_migrations,
    ensure_current,
)
from tests.pg import create_database, drop_database

pytestmark = pytest.mark.postgres

TABLES = {"streams", "stream_events", "records", "append_receipts", "consumers",
          "object_intents", "input_deliveries", "deletion_outbox", "gap_evidence",
          "erased_runs", "region_fences", "subscription_leases", "live_seq",
          "revoked_tokens", "durable_streams", "durable_stream_producers", "delivery_redrives",
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


def _copy_of_the_migrations(tmp_path: Path) -> Path:
    copy = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, copy)
    return copy


async def test_an_edited_migration_is_refused_and_nothing_is_applied(
        empty_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await migrate(empty_dsn)
    copy = _copy_of_the_migrations(tmp_path)
    edited = copy / "0004_room_for_hot_updates.sql"
    edited.write_text(edited.read_text() + "\n-- a harmless-looking edit\n")
    (copy / "9999_later.sql").write_text("CREATE TABLE never_created (id int);")
    monkeypatch.setattr(migrations, "MIGRATIONS_DIR", copy)
    with pytest.raises(SchemaMismatch, match="0004_room_for_hot_updates changed after"):
        await migrate(empty_dsn)
    assert "never_created" not in await tables(empty_dsn)
    with pytest.raises(SchemaMismatch, match="0004_room_for_hot_updates"):
        await ensure_current(empty_dsn)


async def test_a_database_migrated_by_a_newer_release_is_refused(
        empty_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = _copy_of_the_migrations(tmp_path)
    (copy / "9999_later.sql").write_text("CREATE TABLE later (id int);")
    monkeypatch.setattr(migrations, "MIGRATIONS_DIR", copy)
    await migrate(empty_dsn)
    monkeypatch.setattr(migrations, "MIGRATIONS_DIR", MIGRATIONS_DIR)
    for attempt in (migrate, ensure_current):
        with pytest.raises(SchemaMismatch, match=r"newer Runnel .*9999_later"):
            await attempt(empty_dsn)


async def test_a_node_that_must_not_migrate_refuses_a_database_behind_its_schema(
        empty_dsn: str) -> None:
    with pytest.raises(SchemaMismatch, match="run `runnel migrate` first"):
        await ensure_current(empty_dsn)
    await migrate(empty_dsn)
    await ensure_current(empty_dsn)
