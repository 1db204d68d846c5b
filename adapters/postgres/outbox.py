"""The input-delivery outbox: rows claimed with a lease, taken over when it expires.

Rules (same as the memory outbox):
- a row is claimable when it is neither done nor dead, its next attempt is due
  and no live lease covers it; claiming sets `claimed_by` and `lease_until`;
- `FOR UPDATE SKIP LOCKED` lets several workers claim at once without waiting
  on or double-claiming each other's rows; a dead worker's rows come back when
  its lease expires;
- `now` comes from the caller's clock, so leases and backoff follow the
  application's time, not the database's;
- every claim and every outcome asserts in its own statement that the node's
  region is not fenced (`fences.py`): a fenced node claims and settles nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import asyncpg

from adapters.postgres.fences import assert_unfenced, refused_when_fenced
from adapters.postgres.ids import stream_id
from application.ports import Delivery
from domain.identifiers import StreamKey

_CLAIM = f"""
WITH due AS (
    SELECT d.stream, d.sequence FROM input_deliveries AS d
    JOIN streams AS s ON s.id = d.stream
    WHERE NOT d.done AND NOT d.dead AND s.definition->'placement'->>'metadata_home' = $5
      AND (d.next_attempt_at IS NULL OR d.next_attempt_at <= $2)
      AND (d.lease_until IS NULL OR d.lease_until <= $2)
    ORDER BY s.tenant, s.run_id, s.stream_id, d.sequence
    LIMIT $4
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE input_deliveries AS d
SET claimed_by = $1, lease_until = $2 + make_interval(secs => $3)
FROM due, streams AS s
WHERE d.stream = due.stream AND d.sequence = due.sequence AND s.id = d.stream
  AND {assert_unfenced("$6")}
RETURNING s.tenant, s.run_id, s.stream_id, d.sequence, d.attempts, d.claimed_by,
          d.last_error, d.dead
"""

_COMPLETE = "UPDATE input_deliveries SET done = true, lease_until = NULL " \
            f"WHERE stream = $1 AND sequence = $2 AND {assert_unfenced('$3')}"

_RETRY = f"""
UPDATE input_deliveries
SET attempts = attempts + 1, last_error = $3, next_attempt_at = $4, claimed_by = NULL,
    lease_until = NULL
WHERE stream = $1 AND sequence = $2 AND {assert_unfenced("$5")}
"""

_DEAD_LETTER = f"""
UPDATE input_deliveries
SET attempts = attempts + 1, last_error = $3, dead = true, claimed_by = NULL, lease_until = NULL
WHERE stream = $1 AND sequence = $2 AND {assert_unfenced("$4")}
"""

_DEAD_LETTERS = """
SELECT s.tenant, s.run_id, s.stream_id, d.sequence, d.attempts, d.claimed_by, d.last_error,
       d.dead
FROM input_deliveries AS d JOIN streams AS s ON s.id = d.stream
WHERE d.stream = $1 AND d.dead ORDER BY d.sequence
"""

_PENDING = "SELECT count(*) FROM input_deliveries WHERE NOT done AND NOT dead"
_PENDING_OF = _PENDING + " AND stream = $1"


def _delivery(row: Mapping[str, Any]) -> Delivery:
    return Delivery(StreamKey(row["tenant"], row["run_id"], row["stream_id"]), row["sequence"],
                    row["attempts"], row["claimed_by"], row["last_error"], row["dead"])


class PostgresDeliveryOutbox:
    """Implements `DeliveryOutbox`; rows are written by the store's units of work."""

    def __init__(self, pool: asyncpg.Pool, region: str) -> None:
        self._pool = pool
        self._region = region

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[Delivery]:
        if limit <= 0:
            return []
        with refused_when_fenced(self._region):
            rows = await self._pool.fetch(_CLAIM, worker, now, float(lease_seconds), limit,
                                          home, self._region)
        return sorted((_delivery(row) for row in rows),
                      key=lambda delivery: (delivery.stream, delivery.sequence))

    async def complete(self, key: StreamKey, sequence: int) -> None:
        with refused_when_fenced(self._region):
            await self._pool.execute(_COMPLETE, stream_id(key), sequence, self._region)

    async def retry(self, key: StreamKey, sequence: int, error: str,
                    next_attempt_at: datetime) -> None:
        with refused_when_fenced(self._region):
            await self._pool.execute(_RETRY, stream_id(key), sequence, error, next_attempt_at,
                                     self._region)

    async def dead_letter(self, key: StreamKey, sequence: int, error: str) -> None:
        with refused_when_fenced(self._region):
            await self._pool.execute(_DEAD_LETTER, stream_id(key), sequence, error,
                                     self._region)

    async def dead_letters(self, key: StreamKey) -> Sequence[Delivery]:
        rows = await self._pool.fetch(_DEAD_LETTERS, stream_id(key))
        return [_delivery(row) for row in rows]

    async def pending_count(self, key: StreamKey | None = None) -> int:
        if key is None:
            return int(await self._pool.fetchval(_PENDING))
        return int(await self._pool.fetchval(_PENDING_OF, stream_id(key)))
