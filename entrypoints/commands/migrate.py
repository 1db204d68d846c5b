"""`runnel migrate`: apply the migrations this code ships to the node's database.

Rules:
- `RUNNEL_STORAGE=memory` has nothing to migrate (exit 0);
- a database whose migration ledger disagrees with this code's migrations is refused
  (exit 2, `SchemaMismatch`);
- it prints each migration it applied, or that the schema is up to date.
"""

from __future__ import annotations

import asyncio
import sys

from entrypoints.composition.backend import database_url
from entrypoints.composition.settings import Settings


def migrate_command(settings: Settings) -> int:
    if settings.storage == "memory":
        print("RUNNEL_STORAGE=memory: nothing to migrate")
        return 0
    from adapters.postgres.migrations import SchemaMismatch

    try:
        applied = asyncio.run(_apply_migrations(settings))
    except SchemaMismatch as refused:
        print(f"runnel migrate: {refused}", file=sys.stderr)
        return 2
    print("\n".join(f"applied {name}" for name in applied) or "schema is up to date")
    return 0


async def _apply_migrations(settings: Settings) -> list[str]:
    from adapters.postgres import migrate

    async with database_url(settings) as dsn:
        return list(await migrate(dsn))
