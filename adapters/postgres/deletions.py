"""The deletion outbox: object bodies to delete, claimed with a lease.

Rules (same as the memory outbox):
- rows are written by units of work (`queue_deletions`), in the transaction of
  the change that made the body unneeded, one row per body;
- a row is claimable when `not_before` is due and no live lease covers it; it is
  claimed by the lease rule of `leases.py`;
- completing removes the row; postponing releases the claim until a later time;
- every claim, completion and postponement asserts in its own statement that the
  node's region is not fenced (`fences.py`): a fenced node claims nothing, so it
  deletes no body, and settles nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import asyncpg

from adapters.postgres.fences import assert_unfenced, refused_when_fenced
from adapters.postgres.ids import stream_id
from adapters.postgres.leases import LEASED, RELEASED, claim, free
from application.ports.outboxes import BodyDeletion
from domain.identifiers import StreamKey


def _claim(picked: str) -> str:
    """Lease the rows of the CTE `picked` (`id` and the stream's key) and return them."""
    return f"""
WITH {picked}
UPDATE deletion_outbox AS d SET {LEASED}
FROM picked
WHERE d.id = picked.id AND {assert_unfenced("$6")}
RETURNING d.id, picked.tenant, picked.run_id, picked.stream_id, d.region, d.object_key,
          d.attempts, d.last_error, d.not_before
"""


_CLAIM = _claim(f"""picked AS (
    SELECT d.id, s.tenant, s.run_id, s.stream_id FROM deletion_outbox AS d
    LEFT JOIN streams AS s ON s.id = d.stream
    WHERE d.not_before <= $2 AND {free("d")}
      AND CASE WHEN s.id IS NULL THEN d.region = $5
               ELSE s.definition->'placement'->>'metadata_home' = $5 END
    ORDER BY d.not_before, d.id
    LIMIT $4
    FOR UPDATE OF d SKIP LOCKED
)""")

_CLAIM_BODIES = _claim(f"""picked AS (
    SELECT d.id, s.tenant, s.run_id, s.stream_id FROM deletion_outbox AS d
    JOIN unnest($4::text[], $5::text[]) AS b(region, object_key)
        ON d.region = b.region AND d.object_key = b.object_key
    LEFT JOIN streams AS s ON s.id = d.stream
    WHERE {free("d")}
    ORDER BY d.id
    FOR UPDATE OF d SKIP LOCKED
)""")

_COMPLETE = f"DELETE FROM deletion_outbox WHERE id = $1 AND {assert_unfenced('$2')}"

_IN_FLIGHT = """
SELECT count(*) FROM deletion_outbox
WHERE stream = $1 AND claimed_by IS NOT NULL AND lease_until > $2
"""

_POSTPONE = f"""
UPDATE deletion_outbox
SET not_before = $2, {RELEASED},
    attempts = attempts + CASE WHEN $3::text IS NULL THEN 0 ELSE 1 END,
    last_error = coalesce($3, last_error)
WHERE id = $1 AND {assert_unfenced("$4")}
"""


def _deletion(row: Mapping[str, Any]) -> BodyDeletion:
    stream = (StreamKey(row["tenant"], row["run_id"], row["stream_id"])
              if row["tenant"] is not None else None)
    return BodyDeletion(str(row["id"]), stream, row["region"], row["object_key"],
                        row["attempts"], row["last_error"])


class PostgresDeletionOutbox:
    """Implements `DeletionOutbox`."""

    def __init__(self, pool: asyncpg.Pool, region: str) -> None:
        self._pool = pool
        self._region = region

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[BodyDeletion]:
        if limit <= 0:
            return []
        rows = await claim(self._pool, _CLAIM, self._region, worker, now, lease_seconds,
                           limit, home)
        ordered = sorted(rows, key=lambda row: (row["not_before"], row["id"]))
        return [_deletion(row) for row in ordered]

    async def claim_bodies(self, worker: str, bodies: Sequence[tuple[str, str]],
                           now: datetime, lease_seconds: float) -> Sequence[BodyDeletion]:
        if not bodies:
            return []
        rows = await claim(self._pool, _CLAIM_BODIES, self._region, worker, now, lease_seconds,
                           [region for region, _ in bodies], [key for _, key in bodies])
        return [_deletion(row) for row in sorted(rows, key=lambda row: row["id"])]

    async def in_flight(self, stream: StreamKey, now: datetime) -> int:
        return int(await self._pool.fetchval(_IN_FLIGHT, stream_id(stream), now))

    async def complete(self, deletion_id: str) -> None:
        with refused_when_fenced(self._region):
            await self._pool.execute(_COMPLETE, int(deletion_id), self._region)

    async def postpone(self, deletion_id: str, next_attempt_at: datetime,
                       error: str | None = None) -> None:
        with refused_when_fenced(self._region):
            await self._pool.execute(_POSTPONE, int(deletion_id), next_attempt_at, error,
                                     self._region)
