"""The Postgres `StorageUpkeep`: bounded deletes of what nothing needs any more (ADR 0032).

Rules:
- every statement removes at most `batch` rows of each kind it touches, picked through
  an index (0001's primary keys, 0013's indexes), and is one autocommit statement: no
  lock outlives it, and a pass cut short anywhere leaves a consistent database;
- events go at or below `version - audit_events` of their aggregate's row (a stream's
  or an object intent's): the row's snapshot already holds them, and nothing loads an
  aggregate from its events;
- a receipt goes below `earliest` once recorded before the retry window, or past its
  TTL; the bound is computed from the stream row read by the same statement, so a
  receipt committed meanwhile (above the head it read) is never taken;
- of an erased stream not under legal hold whose records went, everything goes but the
  stream row (it
  answers `run_erased`, like the run's mark): first its events and its intents'
  events, then, once those are gone, the rest. Deletion-outbox rows stay: their bodies
  still have to go;
- writes assert that the node's region is not fenced (`fences.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from adapters.postgres.fences import assert_unfenced, refused_when_fenced
from adapters.postgres.ids import stream_id
from application.ports.upkeep import UpkeepLimits, UpkeepPass
from domain.identifiers import StreamKey

_STREAMS_AFTER = """
SELECT tenant, run_id, stream_id FROM streams
WHERE definition->'placement'->>'metadata_home' = $4
  AND ($1::text IS NULL OR (tenant, run_id, stream_id) > ($1, $2, $3))
ORDER BY tenant, run_id, stream_id
LIMIT $5
"""

_COMPACT_EVENTS = f"""
WITH owners AS (
    SELECT id, version - $2 AS through FROM streams
    WHERE id = ANY($1::uuid[])
    UNION ALL
    SELECT id, version - $2 FROM object_intents WHERE stream = ANY($1::uuid[])
), doomed AS (
    SELECT o.id, e.originator_version FROM owners AS o
    CROSS JOIN LATERAL (
        SELECT originator_version FROM stream_events
        WHERE originator_id = o.id AND originator_version <= o.through
        ORDER BY originator_version LIMIT $3
    ) AS e
    LIMIT $3
), gone AS (
    DELETE FROM stream_events AS e USING doomed AS d
    WHERE e.originator_id = d.id AND e.originator_version = d.originator_version
      AND {assert_unfenced("$4")}
    RETURNING 1
)
SELECT count(*) FROM gone
"""

# The first receipt recorded after a cutoff, by sequence: all below it are older (a
# receipt is recorded by the transaction that assigned its sequence, so time and
# sequence rise together, up to the few moments a transaction waited for the row lock).
_EXPIRE_RECEIPTS = f"""
WITH bounds AS (
    SELECT s.id, greatest(
        CASE WHEN $3::timestamptz IS NULL THEN 0 ELSE coalesce((
            SELECT r.sequence - 1 FROM append_receipts AS r
            WHERE r.stream = s.id AND r.created_at > $3 ORDER BY r.sequence LIMIT 1),
            s.head) END,
        least(s.earliest - 1, CASE WHEN $2::timestamptz IS NULL THEN s.head ELSE coalesce((
            SELECT r.sequence - 1 FROM append_receipts AS r
            WHERE r.stream = s.id AND r.sequence < s.earliest AND r.created_at > $2
            ORDER BY r.sequence LIMIT 1), s.head) END)
    ) AS through
    FROM streams AS s WHERE s.id = ANY($1::uuid[])
), doomed AS (
    SELECT b.id, r.idempotency_key FROM bounds AS b
    CROSS JOIN LATERAL (
        SELECT idempotency_key FROM append_receipts
        WHERE stream = b.id AND sequence <= b.through ORDER BY sequence LIMIT $4
    ) AS r
    LIMIT $4
), gone AS (
    DELETE FROM append_receipts AS r USING doomed AS d
    WHERE r.stream = d.id AND r.idempotency_key = d.idempotency_key
      AND {assert_unfenced("$5")}
    RETURNING 1
)
SELECT count(*) FROM gone
"""

# Erased with its records gone (a stream sealed under a hold keeps them until erased again).
_ERASED = """
SELECT id FROM streams
WHERE id = ANY($1::uuid[]) AND erased AND NOT legal_hold AND earliest = head + 1
"""

_ERASED_EVENTS = f"""
WITH owners AS (
    SELECT id FROM streams WHERE id = ANY($1::uuid[])
    UNION ALL
    SELECT id FROM object_intents WHERE stream = ANY($1::uuid[])
), doomed AS (
    SELECT o.id, e.originator_version FROM owners AS o
    CROSS JOIN LATERAL (
        SELECT originator_version FROM stream_events WHERE originator_id = o.id
        ORDER BY originator_version LIMIT $2
    ) AS e
    LIMIT $2
), gone AS (
    DELETE FROM stream_events AS e USING doomed AS d
    WHERE e.originator_id = d.id AND e.originator_version = d.originator_version
      AND {assert_unfenced("$3")}
    RETURNING 1
)
SELECT count(*) FROM gone
"""


def _erased_rows(table: str, key: str) -> str:
    """Delete up to $2 rows of `table` belonging to the streams $1 (by its `stream`)."""
    return f"""
    {table}_gone AS (
        DELETE FROM {table} AS t USING (
            SELECT x.stream, x.{key} FROM unnest($1::uuid[]) AS g(id)
            CROSS JOIN LATERAL (
                SELECT stream, {key} FROM {table} WHERE stream = g.id LIMIT $2
            ) AS x
            LIMIT $2
        ) AS d
        WHERE t.stream = d.stream AND t.{key} = d.{key} AND {assert_unfenced("$3")}
        RETURNING 1
    )"""


_ERASED_REST = "WITH" + ",".join([
    _erased_rows("append_receipts", "idempotency_key"),
    _erased_rows("records", "sequence"),
    _erased_rows("consumers", "consumer_id"),
    _erased_rows("input_deliveries", "sequence"),
    _erased_rows("delivery_redrives", "id"),
    _erased_rows("gap_evidence", "id"),
    _erased_rows("object_intents", "id"),
]) + """
SELECT (SELECT count(*) FROM append_receipts_gone) AS receipts,
       (SELECT count(*) FROM records_gone) + (SELECT count(*) FROM consumers_gone)
           + (SELECT count(*) FROM input_deliveries_gone)
           + (SELECT count(*) FROM delivery_redrives_gone)
           + (SELECT count(*) FROM gap_evidence_gone)
           + (SELECT count(*) FROM object_intents_gone) AS others
"""

_PURGE = f"""
WITH finished AS (
    SELECT d.stream, d.sequence FROM input_deliveries AS d
    JOIN streams AS s ON s.id = d.stream
    WHERE d.done AND $1::timestamptz IS NOT NULL AND d.created_at <= $1
      AND s.definition->'placement'->>'metadata_home' = $4
    ORDER BY d.created_at LIMIT $3
), deliveries_gone AS (
    DELETE FROM input_deliveries AS d USING finished AS f
    WHERE d.stream = f.stream AND d.sequence = f.sequence AND d.done
      AND {assert_unfenced("$5")}
    RETURNING 1
), old_gaps AS (
    SELECT g.id FROM gap_evidence AS g
    JOIN streams AS s ON s.id = g.stream
    WHERE $2::timestamptz IS NOT NULL AND g.recorded_at <= $2
      AND s.definition->'placement'->>'metadata_home' = $4
    ORDER BY g.recorded_at LIMIT $3
), gaps_gone AS (
    DELETE FROM gap_evidence AS g USING old_gaps AS o
    WHERE g.id = o.id AND {assert_unfenced("$5")}
    RETURNING 1
)
SELECT (SELECT count(*) FROM deliveries_gone) AS deliveries,
       (SELECT count(*) FROM gaps_gone) AS gaps
"""


class PostgresStorageUpkeep:
    """Implements `StorageUpkeep`."""

    def __init__(self, pool: asyncpg.Pool, region: str) -> None:
        self._pool = pool
        self._region = region

    async def streams_after(self, after: StreamKey | None, limit: int,
                            home: str) -> Sequence[StreamKey]:
        if limit <= 0:
            return []
        bound = (after.tenant, after.run_id, after.stream_id) if after else (None, None, None)
        rows = await self._pool.fetch(_STREAMS_AFTER, *bound, home, limit)
        return [StreamKey(row["tenant"], row["run_id"], row["stream_id"]) for row in rows]

    async def tidy(self, keys: Sequence[StreamKey], limits: UpkeepLimits,
                   batch: int) -> UpkeepPass:
        ids = [stream_id(key) for key in keys]
        with refused_when_fenced(self._region):
            events = await self._pool.fetchval(_COMPACT_EVENTS, ids, limits.audit_events,
                                               batch, self._region)
            receipts = await self._pool.fetchval(
                _EXPIRE_RECEIPTS, ids, limits.pruned_receipts_before, limits.receipts_before,
                batch, self._region)
            erased = await self._erase(ids, batch)
        return UpkeepPass(events=events, receipts=receipts, erased=erased)

    async def _erase(self, ids: list[UUID], batch: int) -> int:
        erased = [row["id"] for row in await self._pool.fetch(_ERASED, ids)]
        if not erased:
            return 0
        events = int(await self._pool.fetchval(_ERASED_EVENTS, erased, batch, self._region))
        if events >= batch:
            return events  # the rest once the events are gone (intents own some of them)
        row = await self._pool.fetchrow(_ERASED_REST, erased, batch, self._region)
        assert row is not None
        # A sum: at least `batch` whenever one kind filled its batch (the caller repeats).
        return events + int(row["receipts"]) + int(row["others"])

    async def purge(self, limits: UpkeepLimits, batch: int, home: str) -> UpkeepPass:
        with refused_when_fenced(self._region):
            row = await self._pool.fetchrow(_PURGE, limits.deliveries_before,
                                            limits.gaps_before, batch, home, self._region)
        assert row is not None
        return UpkeepPass(deliveries=int(row["deliveries"]), gaps=int(row["gaps"]))
