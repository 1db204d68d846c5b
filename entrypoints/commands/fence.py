"""`runnel fence REGION` / `runnel unfence REGION`: stop, or allow again, every write of a
region's nodes (ADR 0016, `adapters/postgres/fences.py`).

Rules:
- a fence returns once no write of the region commits any more; it prints the fence's
  epoch, and an unfence the epoch it keeps (or that the region was not fenced);
- the migrations are applied first: the fence table may be newer than the nodes that run;
- `RUNNEL_STORAGE=memory` has no regions to fence (exit 2).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys

from entrypoints.composition.backend import database_url
from entrypoints.composition.settings import Settings

REGION_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
"""What `RUNNEL_REGION` accepts."""


def region_name(value: str) -> str:
    """The argument type of REGION."""
    if not REGION_PATTERN.match(value):
        raise argparse.ArgumentTypeError(f"not a region name: {value!r}")
    return value


def fence_command(settings: Settings, command: str, region: str) -> int:
    """Record a fence (`command` "fence") or lift it ("unfence")."""
    if settings.storage == "memory":
        print(f"runnel {command}: RUNNEL_STORAGE=memory has no regions to fence",
              file=sys.stderr)
        return 2
    fenced = command == "fence"
    epoch = asyncio.run(_set_fence(settings, region, fenced))
    if epoch is None:
        print(f"region {region} is not fenced")
    elif fenced:
        print(f"region {region} fenced (epoch {epoch}): its nodes store nothing "
              f"until `runnel unfence {region}`")
    else:
        print(f"region {region} unfenced (epoch {epoch}): its nodes write again")
    return 0


async def _set_fence(settings: Settings, region: str, fenced: bool) -> int | None:
    import asyncpg

    from adapters.postgres import migrate
    from adapters.postgres.fences import fence_region, unfence_region

    async with database_url(settings) as dsn:
        await migrate(dsn)  # the fence table may be newer than the nodes that run
        connection = await asyncpg.connect(dsn)
        try:
            if fenced:
                return (await fence_region(connection, region)).epoch
            lifted = await unfence_region(connection, region)
            return lifted.epoch if lifted is not None else None
        finally:
            await connection.close()
