"""A scratch database per bench run, on the Postgres `RUNNEL_BENCH_PG_DSN` names (default:
the local one), dropped afterwards whatever happened (`drop_database` in a `finally`)."""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit, urlunsplit

import asyncpg

ADMIN_DSN = os.environ.get("RUNNEL_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")


def dsn_for(database: str) -> str:
    """The DSN of `database` on the admin DSN's server."""
    parts = urlsplit(ADMIN_DSN)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


async def create_database(prefix: str) -> str:
    """A new, empty database named `<prefix>_<random>`; returns its name."""
    database = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(ADMIN_DSN)
    try:
        await admin.execute(f'CREATE DATABASE "{database}"')
    finally:
        await admin.close()
    return database


async def drop_database(database: str) -> None:
    """Drop it, closing whatever connections the run left open."""
    admin = await asyncpg.connect(ADMIN_DSN)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    finally:
        await admin.close()
