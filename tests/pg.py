"""Shared Postgres helpers and fixtures for tests that need a real database.

Every test session creates its own uniquely named databases and drops them, so
concurrent runs on one server never meet. Import what you need:

    from tests.pg import pg_template, pg_dsn, pg_adapters  # noqa: F401  (fixtures)

- `pg_template` (session): a migrated template database, created once per session;
- `pg_dsn` (function): a fresh database cloned from the template, dropped afterwards;
- `pg_class_dsn` (class): the same, shared by the tests of one class (for suites
  whose tests keep to their own tenants and runs, like the storage contract);
- `pg_adapters` (function): `open_postgres` on a fresh database, closed afterwards.

The server comes from `RUNNEL_TEST_PG_DSN` (an admin DSN, database `postgres`
by default).
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
import pytest_asyncio

from adapters.postgres import PostgresAdapters, open_postgres
from adapters.postgres.migrations import migrate

ADMIN_DSN = os.environ.get("RUNNEL_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")

T = TypeVar("T")


def dsn_for(database: str, admin_dsn: str = ADMIN_DSN) -> str:
    """The admin DSN pointed at another database on the same server."""
    parts = urlsplit(admin_dsn)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


def unique_name(prefix: str = "runnel_test") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


async def create_database(template: str | None = None, prefix: str = "runnel_test") -> str:
    """Create a uniquely named database (optionally cloned from `template`); returns its DSN."""
    name = unique_name(prefix)
    connection = await asyncpg.connect(ADMIN_DSN)
    try:
        clause = f' TEMPLATE "{template}"' if template else ""
        await connection.execute(f'CREATE DATABASE "{name}"{clause}')
    finally:
        await connection.close()
    return dsn_for(name)


async def drop_database(dsn: str) -> None:
    """Drop the database of `dsn`, ending any connection still attached to it."""
    name = urlsplit(dsn).path.lstrip("/")
    connection = await asyncpg.connect(ADMIN_DSN)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


def database_name(dsn: str) -> str:
    return urlsplit(dsn).path.lstrip("/")


def run_sync(work: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine from sync code in its own thread and loop (session fixtures)."""
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = asyncio.run(_call(work))
        except BaseException as error:
            result["error"] = error

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]  # type: ignore[no-any-return]


async def _call(work: Callable[[], Awaitable[T]]) -> T:
    return await work()


async def _migrated_template() -> str:
    dsn = await create_database(prefix="runnel_tmpl")
    await migrate(dsn)
    return database_name(dsn)


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    """Name of a migrated template database for this test session."""
    name = run_sync(_migrated_template)
    yield name
    run_sync(lambda: drop_database(dsn_for(name)))


@pytest.fixture(scope="class")
def pg_class_dsn(pg_template: str) -> Iterator[str]:
    """DSN of a fresh, migrated database shared by one test class, dropped afterwards."""
    dsn = run_sync(lambda: create_database(template=pg_template))
    yield dsn
    run_sync(lambda: drop_database(dsn))


@pytest_asyncio.fixture
async def pg_dsn(pg_template: str) -> AsyncIterator[str]:
    """DSN of a fresh, migrated database, dropped after the test."""
    dsn = await create_database(template=pg_template)
    try:
        yield dsn
    finally:
        await drop_database(dsn)


@pytest_asyncio.fixture
async def pg_adapters(pg_dsn: str) -> AsyncIterator[PostgresAdapters]:
    """Every Postgres adapter on a fresh database, listening, closed after the test."""
    adapters = await open_postgres(pg_dsn, migrate=False)
    try:
        yield adapters
    finally:
        await adapters.close()
