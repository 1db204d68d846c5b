"""Numbered SQL migrations: applied in order, once, recorded with a checksum, safe to
run concurrently, and refused when the files and the database disagree.

Rules:
- a migration is a file `NNNN_name.sql` in `migrations/`; its name (without
  `.sql`) and the SHA-256 of its text are what the `runnel_migrations` ledger
  records;
- all pending migrations are applied in ONE transaction that first takes a
  transaction-scoped advisory lock, so two processes starting at once
  serialise: the second finds everything applied and does nothing;
- a released migration is never edited; a change is a new file. Nothing is
  applied, and no node starts, while a recorded checksum differs from its
  file's (an edited migration) or the ledger names a migration this binary
  does not have (a newer release migrated the database): `SchemaMismatch`;
- ledger rows written before checksums were recorded take their file's
  checksum the first time a binary that records them migrates;
- schema changes follow expand/contract (docs/adr/0027): a migration only adds
  what the previous release's writers can ignore, and removes a shape only once
  no release that uses it is supported.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
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

_LEDGER_CHECKSUMS = "ALTER TABLE runnel_migrations ADD COLUMN IF NOT EXISTS checksum text"


class SchemaMismatch(RuntimeError):
    """The database's migration ledger and this binary's migration files disagree."""


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SchemaState:
    """How the database's ledger compares with this binary's files."""

    pending: tuple[str, ...]
    """Files not yet applied, in order."""
    edited: tuple[str, ...]
    """Applied migrations whose file has changed since."""
    unknown: tuple[str, ...]
    """Applied migrations this binary has no file for."""

    @property
    def current(self) -> bool:
        return not (self.pending or self.edited or self.unknown)

    def refusal(self) -> str | None:
        """Why no node may run on this database with this binary, or None."""
        if self.edited:
            return (f"migration {', '.join(self.edited)} changed after it was applied to this "
                    "database; a released migration is never edited (restore the file, and "
                    "put the change in a new migration)")
        if self.unknown:
            return (f"this database was migrated by a newer Runnel (it has "
                    f"{', '.join(self.unknown)}, which this binary does not know); "
                    "run the newer release")
        return None


def available_migrations() -> list[tuple[str, str]]:
    """(name, sql) of every migration file, in order."""
    return [(migration.name, migration.sql) for migration in _files()]


def _files() -> list[Migration]:
    return list(_read(MIGRATIONS_DIR))


@functools.cache
def _read(directory: Path) -> tuple[Migration, ...]:
    """The files of a directory, read once per process (`/readyz` compares on every call)."""
    files = sorted(directory.glob("[0-9][0-9][0-9][0-9]_*.sql"))
    return tuple(Migration(path.stem, path.read_text(encoding="utf-8")) for path in files)


def compare(files: list[Migration], recorded: dict[str, str | None]) -> SchemaState:
    """The ledger (`name → checksum`, None where none was recorded yet) against the files."""
    known = {migration.name: migration for migration in files}
    return SchemaState(
        pending=tuple(m.name for m in files if m.name not in recorded),
        edited=tuple(name for name, checksum in sorted(recorded.items())
                     if name in known and checksum is not None
                     and checksum != known[name].checksum),
        unknown=tuple(sorted(name for name in recorded if name not in known)),
    )


async def _ledger(connection: asyncpg.Connection) -> dict[str, str | None] | None:
    """name → checksum, or None when the database has no ledger (nothing applied yet)."""
    exists = await connection.fetchval("SELECT to_regclass('runnel_migrations') IS NOT NULL")
    if not exists:
        return None
    has_checksums = await connection.fetchval(
        "SELECT EXISTS (SELECT 1 FROM information_schema.columns "
        "WHERE table_name = 'runnel_migrations' AND column_name = 'checksum')")
    query = ("SELECT name, checksum FROM runnel_migrations" if has_checksums
             else "SELECT name, NULL::text AS checksum FROM runnel_migrations")
    return {row["name"]: row["checksum"] for row in await connection.fetch(query)}


async def schema_state(connection: asyncpg.Connection) -> SchemaState:
    """Compare without changing anything (for nodes that must not migrate, and /readyz)."""
    return compare(_files(), await _ledger(connection) or {})


async def apply_migrations(connection: asyncpg.Connection) -> list[str]:
    """Apply pending migrations on an open connection; returns the names applied now.
    Raises `SchemaMismatch`, applying nothing, when the ledger and the files disagree."""
    files = _files()
    applied_now: list[str] = []
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", _ADVISORY_LOCK_KEY)
        await connection.execute(_CREATE_LEDGER)
        await connection.execute(_LEDGER_CHECKSUMS)
        state = compare(files, await _ledger(connection) or {})
        refusal = state.refusal()
        if refusal is not None:
            raise SchemaMismatch(refusal)
        for migration in files:
            await connection.execute(
                "UPDATE runnel_migrations SET checksum = $2 WHERE name = $1 AND checksum IS NULL",
                migration.name, migration.checksum)
        for migration in files:
            if migration.name not in state.pending:
                continue
            await connection.execute(migration.sql)
            await connection.execute(
                "INSERT INTO runnel_migrations (name, checksum) VALUES ($1, $2)",
                migration.name, migration.checksum)
            applied_now.append(migration.name)
    return applied_now


async def migrate(dsn: str) -> list[str]:
    """Bring the database at `dsn` up to date; returns the names applied now."""
    connection = await asyncpg.connect(dsn)
    try:
        return await apply_migrations(connection)
    finally:
        await connection.close()


async def ensure_current(dsn: str) -> None:
    """Refuse (`SchemaMismatch`) unless the database is exactly at this binary's schema:
    for nodes started with `RUNNEL_AUTO_MIGRATE=false`, where `runnel migrate` is a
    deploy step of its own."""
    connection = await asyncpg.connect(dsn)
    try:
        state = await schema_state(connection)
    finally:
        await connection.close()
    refusal = state.refusal()
    if refusal is not None:
        raise SchemaMismatch(refusal)
    if state.pending:
        raise SchemaMismatch(
            f"the database lacks {len(state.pending)} migration(s) of this binary "
            f"({', '.join(state.pending)}); RUNNEL_AUTO_MIGRATE=false: run `runnel migrate` "
            "first")
