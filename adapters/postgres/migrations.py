"""Numbered SQL migrations: applied in order, once, recorded, safe to run concurrently.

Rules:
- a migration is a file `NNNN_name.sql` in `migrations/`; its name (without
  `.sql`) is what the `runnel_migrations` table records;
- all pending migrations are applied in ONE transaction that first takes a
  transaction-scoped advisory lock, so two processes starting at once
  serialise: the second finds everything applied and does nothing;
- a released migration is never edited; a change is a new file.
"""

from __future__ import annotations

from pathlib import Path

import asyncpg

MIGRATIONS_DIR = Path(__file__).parent / "migrations"

# Arbitrary but fixed: every Runnel process contends on the same advisory lock.
_ADVISORY_LOCK_KEY = 0x52554E4E454C  # "RUNNEL"

_CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS runnel_migrations (
    name       text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


def available_migrations() -> list[tuple[str, str]]:
    """(name, sql) of every migration file, in order."""
    files = sorted(MIGRATIONS_DIR.glob("[0-9][0-9][0-9][0-9]_*.sql"))
    return [(path.stem, path.read_text(encoding="utf-8")) for path in files]


async def apply_migrations(connection: asyncpg.Connection) -> list[str]:
    """Apply pending migrations on an open connection; returns the names applied now."""
    applied_now: list[str] = []
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", _ADVISORY_LOCK_KEY)
        await connection.execute(_CREATE_LEDGER)
        done = {row["name"] for row in await connection.fetch("SELECT name FROM runnel_migrations")}
        for name, sql in available_migrations():
            if name in done:
                continue
            await connection.execute(sql)
            await connection.execute("INSERT INTO runnel_migrations (name) VALUES ($1)", name)
            applied_now.append(name)
    return applied_now


async def migrate(dsn: str) -> list[str]:
    """Bring the database at `dsn` up to date; returns the names applied now."""
    connection = await asyncpg.connect(dsn)
    try:
        return await apply_migrations(connection)
    finally:
        await connection.close()
