"""The input-delivery outbox: rows claimed with a lease, taken over when it expires.

Rules (same as the memory outbox):
- a row is claimable when it is neither done nor dead, its next attempt is due
  and no live lease covers it; it is claimed by the lease rule of `leases.py`;
- each stream is a line (ADR 0057): a claim takes a stream's rows only by taking
  its head (its lowest row neither done nor dead) with `FOR UPDATE SKIP LOCKED`,
  then the claimable rows right behind it; a worker that skips a locked head takes
  nothing of that stream, and once the head is leased no claim passes it. Rows
  done stay done, so a head read from an older snapshot is never behind the real
  one; only a re-driven dead letter can come back below a line that is out;
- `now` comes from the caller's clock, so backoff follows the application's time too;
- every row a claim or an outcome writes asserts, in the statement that writes it,
  that the node's region is not fenced (`fences.py`): a fenced node claims and
  settles nothing;
- a re-drive resets only rows that are dead and records its audit row in one
  statement, which re-drives nothing in a run whose erasure it sees; what one that
  raced an erasure leaves, the erased stream's upkeep removes with the rest
  (`upkeep.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import asyncpg

from adapters.postgres.fences import assert_unfenced, refused_when_fenced
from adapters.postgres.ids import stream_id
from adapters.postgres.leases import LEASED, RELEASED, claim, free
from application.ports.outboxes import Delivery, DeliveryRedrive
from domain.identifiers import StreamKey


def _claimable(alias: str) -> str:
    """True for a row of `alias` (neither done nor dead) whose next attempt is due and
    that no live lease covers, at `$2`."""
    return f"(({alias}.next_attempt_at IS NULL OR {alias}.next_attempt_at <= $2) AND {free(alias)})"


_CLAIM = f"""
WITH RECURSIVE lines AS (
    -- Each stream's head, one index probe per stream with pending rows.
    (SELECT stream, sequence FROM input_deliveries WHERE NOT done AND NOT dead
     ORDER BY stream, sequence LIMIT 1)
    UNION ALL
    SELECT n.stream, n.sequence FROM lines AS l CROSS JOIN LATERAL (
        SELECT stream, sequence FROM input_deliveries
        WHERE NOT done AND NOT dead AND stream > l.stream
        ORDER BY stream, sequence LIMIT 1) AS n
), heads AS MATERIALIZED (
    SELECT d.stream, d.sequence, s.tenant, s.run_id, s.stream_id
    FROM lines JOIN input_deliveries AS d USING (stream, sequence)
    JOIN streams AS s ON s.id = d.stream
    WHERE NOT d.done AND NOT d.dead AND s.definition->'placement'->>'metadata_home' = $5
      AND {_claimable("d")}
    ORDER BY s.tenant, s.run_id, s.stream_id
    LIMIT $4
    FOR UPDATE OF d SKIP LOCKED
), line AS (
    SELECT h.tenant, h.run_id, h.stream_id, r.stream, r.sequence,
           row_number() OVER w AS place,
           bool_and({_claimable("r")}) OVER w AS open
    FROM heads AS h CROSS JOIN LATERAL (
        SELECT stream, sequence, next_attempt_at, lease_until FROM input_deliveries
        WHERE stream = h.stream AND sequence >= h.sequence AND NOT done AND NOT dead
        ORDER BY sequence LIMIT $4) AS r
    WINDOW w AS (PARTITION BY r.stream ORDER BY r.sequence)
), taken AS (
    SELECT stream, sequence FROM line WHERE open
    ORDER BY place, tenant, run_id, stream_id LIMIT $4
)
UPDATE input_deliveries AS d
SET {LEASED}
FROM taken, streams AS s
WHERE d.stream = taken.stream AND d.sequence = taken.sequence AND s.id = d.stream
  AND NOT d.done AND NOT d.dead
  -- Checked again on the row as it is once locked: another claim may have taken a row
  -- behind a re-driven head meanwhile.
  AND {_claimable("d")}
  AND {assert_unfenced("$6")}
RETURNING s.tenant, s.run_id, s.stream_id, d.sequence, d.attempts, d.claimed_by,
          d.last_error, d.dead
"""

_COMPLETE = "UPDATE input_deliveries SET done = true, lease_until = NULL " \
            f"WHERE stream = $1 AND sequence = $2 AND {assert_unfenced('$3')}"

_RETRY = f"""
UPDATE input_deliveries
SET attempts = attempts + 1, last_error = $3, next_attempt_at = $4, {RELEASED}
WHERE stream = $1 AND sequence = $2 AND {assert_unfenced("$5")}
"""

_DEAD_LETTER = f"""
UPDATE input_deliveries
SET attempts = attempts + 1, last_error = $3, dead = true, {RELEASED}
WHERE stream = $1 AND sequence = $2 AND {assert_unfenced("$4")}
"""

_RELEASE = f"""
UPDATE input_deliveries SET {RELEASED}
WHERE stream = $1 AND sequence = ANY($2::bigint[]) AND claimed_by = $3 AND NOT done
  AND {assert_unfenced("$4")}
"""

_REDRIVE = f"""
WITH live AS (
    SELECT s.id FROM streams AS s
    WHERE s.id = $1 AND NOT EXISTS (SELECT 1 FROM erased_runs AS e
                                    WHERE e.tenant = s.tenant AND e.run_id = s.run_id)
), reset AS (
    UPDATE input_deliveries AS d
    SET dead = false, attempts = 0, last_error = NULL, next_attempt_at = NULL, {RELEASED}
    FROM live
    WHERE d.stream = live.id AND d.sequence = ANY($2::bigint[]) AND d.dead
      AND {assert_unfenced("$5")}
    RETURNING d.sequence
), audit AS (
    INSERT INTO delivery_redrives (stream, redriven_by, redriven_at, sequences)
    SELECT $1, $3, $4, array_agg(sequence ORDER BY sequence) FROM reset HAVING count(*) > 0
)
SELECT sequence FROM reset ORDER BY sequence
"""

_REDRIVES = """
SELECT redriven_by, redriven_at, sequences FROM delivery_redrives
WHERE stream = $1 ORDER BY id DESC LIMIT $2
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
        rows = await claim(self._pool, _CLAIM, self._region, worker, now, lease_seconds,
                           limit, home)
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

    async def release(self, key: StreamKey, sequences: Sequence[int], worker: str) -> None:
        if sequences:
            with refused_when_fenced(self._region):
                await self._pool.execute(_RELEASE, stream_id(key), list(sequences), worker,
                                         self._region)

    async def redrive(self, key: StreamKey, sequences: Sequence[int], by: str,
                      at: datetime) -> Sequence[int]:
        if not sequences:
            return []
        with refused_when_fenced(self._region):
            rows = await self._pool.fetch(_REDRIVE, stream_id(key), sorted(set(sequences)),
                                          by, at, self._region)
        return [row["sequence"] for row in rows]

    async def redrives(self, key: StreamKey, limit: int) -> Sequence[DeliveryRedrive]:
        rows = await self._pool.fetch(_REDRIVES, stream_id(key), max(0, limit))
        return [DeliveryRedrive(row["redriven_by"], row["redriven_at"], tuple(row["sequences"]))
                for row in rows]

    async def dead_letters(self, key: StreamKey) -> Sequence[Delivery]:
        rows = await self._pool.fetch(_DEAD_LETTERS, stream_id(key))
        return [_delivery(row) for row in rows]

    async def pending_count(self, key: StreamKey | None = None) -> int:
        if key is None:
            return int(await self._pool.fetchval(_PENDING))
        return int(await self._pool.fetchval(_PENDING_OF, stream_id(key)))
