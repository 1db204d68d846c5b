"""Region write fences (docs/adr/0016): recorded by an operator, asserted by every write.

Rules:
- every statement that writes on behalf of a node carries `assert_unfenced(…)`
  with the node's region, in the statement itself (not in a query before it,
  which a fence could overtake): `runnel_assert_unfenced()` (migration 0008)
  raises SQLSTATE RN002 when the region is fenced, so the statement, and the
  transaction it belongs to, store nothing;
- RN002 is never a version conflict (RN001): it is not retried, it is the
  answer (`RegionFenced`, 503 `region_fenced`);
- `fence_region` holds the region's advisory lock exclusively while it records
  the fence, and every asserting writer holds it shared until its transaction
  ends: when `fence_region` returns, every write that passed the check has
  committed and every later one sees the fence. No process caches the fence, so
  in-flight groups are fenced at their next commit, without a restart;
- each fence increments the region's epoch; an unfence keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from domain.errors import RegionFenced

FENCED_SQLSTATE = "RN002"

FENCE_LOCK_CLASS = 0x52554E4E  # "RUNN"
"""First key of the two-key advisory lock of a region's fence (the second is the
region's `hashtext`); the same literal is in `runnel_assert_unfenced()`."""

_FENCE = """
INSERT INTO region_fences AS f (region, fenced, epoch) VALUES ($1, true, 1)
ON CONFLICT (region) DO UPDATE SET fenced = true, epoch = f.epoch + 1, changed_at = now()
RETURNING region, fenced, epoch, changed_at
"""

_UNFENCE = """
UPDATE region_fences SET fenced = false, changed_at = now() WHERE region = $1
RETURNING region, fenced, epoch, changed_at
"""

_FENCE_OF = "SELECT region, fenced, epoch, changed_at FROM region_fences WHERE region = $1"

_FENCE_LOCK = "SELECT pg_advisory_xact_lock($1::int4, hashtext($2))"


def assert_unfenced(region_placeholder: str) -> str:
    """The SQL boolean expression that is true, or fails the statement when the region
    bound to `region_placeholder` (e.g. `$3`) is fenced."""
    return f"runnel_assert_unfenced({region_placeholder}::text)"


def is_fenced(error: BaseException) -> bool:
    return getattr(error, "sqlstate", None) == FENCED_SQLSTATE


def refusal(region: str, error: BaseException) -> RegionFenced:
    """The domain refusal for an RN002 raised by a write of a node of `region`."""
    detail = getattr(error, "detail", None)
    epoch = int(detail) if isinstance(detail, str) and detail.isdigit() else None
    return RegionFenced(f"region {region} is fenced: this node stores nothing; write at the "
                        "region failed over to", region=region, epoch=epoch)


@contextmanager
def refused_when_fenced(region: str) -> Iterator[None]:
    """Turn a fenced write's RN002 into `RegionFenced`; every other error passes."""
    try:
        yield
    except asyncpg.PostgresError as error:
        if is_fenced(error):
            raise refusal(region, error) from error
        raise


@dataclass(frozen=True)
class RegionFence:
    region: str
    fenced: bool
    epoch: int
    changed_at: datetime


def _fence(row: asyncpg.Record) -> RegionFence:
    return RegionFence(row["region"], row["fenced"], row["epoch"], row["changed_at"])


async def fence_region(connection: asyncpg.Connection, region: str) -> RegionFence:
    """Fence `region`; returns once no write of it can commit any more (see the rules)."""
    async with connection.transaction():
        await connection.execute(_FENCE_LOCK, FENCE_LOCK_CLASS, region)
        row = await connection.fetchrow(_FENCE, region)
    assert row is not None
    return _fence(row)


async def unfence_region(connection: asyncpg.Connection, region: str) -> RegionFence | None:
    """Lift the fence of `region`; None when it was never fenced."""
    row = await connection.fetchrow(_UNFENCE, region)
    return _fence(row) if row is not None else None


async def fence_of(connection: asyncpg.Connection, region: str) -> RegionFence | None:
    row = await connection.fetchrow(_FENCE_OF, region)
    return _fence(row) if row is not None else None
