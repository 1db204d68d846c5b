"""Subscription slots in Postgres: the `SubscriptionLeases` contract for every node.

Rules:
- acquires for one principal serialize on a transaction-scoped advisory lock keyed by
  the principal (two-key form, apart from the one-key migration lock), taken in its own
  statement: under READ COMMITTED the count that follows then sees every lease committed
  by whoever held the lock before;
- lapsed leases of the principal are deleted by the acquire that finds them;
- `now` comes from the caller's clock, like the outbox leases.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID, uuid4

import asyncpg

# Arbitrary but fixed: the first key of every principal's advisory lock ("SUBS").
_LOCK_SPACE = 0x53554253

_LOCK = "SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))"

_ACQUIRE = """
WITH lapsed AS (
    DELETE FROM subscription_leases
    WHERE tenant = $2 AND sub = $3 AND lease_until <= $4
)
INSERT INTO subscription_leases (id, tenant, sub, lease_until)
SELECT $1, $2, $3, $4 + make_interval(secs => $5)
WHERE (SELECT count(*) FROM subscription_leases
       WHERE tenant = $2 AND sub = $3 AND lease_until > $4) < $6
RETURNING id
"""

_RENEW = """
UPDATE subscription_leases SET lease_until = $2 + make_interval(secs => $3)
WHERE id = ANY($1::uuid[]) AND lease_until > $2
RETURNING id
"""

_RELEASE = "DELETE FROM subscription_leases WHERE id = $1"


class PostgresSubscriptionLeases:
    """Implements `SubscriptionLeases`."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def acquire(self, tenant: str, sub: str, limit: int, now: datetime,
                      lease_seconds: float) -> str | None:
        async with self._pool.acquire() as connection, connection.transaction():
            await connection.execute(_LOCK, _LOCK_SPACE, tenant, sub)
            taken = await connection.fetchval(_ACQUIRE, uuid4(), tenant, sub, now,
                                              float(lease_seconds), limit)
        return None if taken is None else str(taken)

    async def renew(self, lease_ids: Sequence[str], now: datetime,
                    lease_seconds: float) -> Sequence[str]:
        ids = [UUID(lease_id) for lease_id in lease_ids]
        rows = await self._pool.fetch(_RENEW, ids, now, float(lease_seconds))
        return [str(row["id"]) for row in rows]

    async def release(self, lease_id: str) -> None:
        await self._pool.execute(_RELEASE, UUID(lease_id))
