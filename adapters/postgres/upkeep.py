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
  stream row (it answers `run_erased`, like the run's mark): first its events and its
  intents' events, then, once those are gone, the rest. Deletion-outbox rows stay: their
  bodies still have to go;
- every batched delete is built by `_batch_gone` (one shape: pick by index, delete by key);
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


def _batch_gone(name: str, table: str, owner: str, key: str, *, owners: str, limit: str,
                fence: str, within: str = "", order: str = "") -> str:
    """The CTEs `{name}_doomed` and `{name}_gone`: delete up to `limit` rows of `table`
    whose `owner` column is the `id` of a row `o` of `owners`, at most `limit` per owner
    and in all, each picked by (`owner`, `key`) through an index (and kept by `within`)."""
    kept = f" AND {within}" if within else ""
    ordered = f" ORDER BY {order}" if order else ""
    return f"""
{name}_doomed AS (
    SELECT o.id AS owner, x.{key} FROM {owners} AS o
    CROSS JOIN LATERAL (
        SELECT {key} FROM {table} WHERE {owner} = o.id{kept}{ordered} LIMIT {limit}
    ) AS x
    LIMIT {limit}
), {name}_gone AS (
    DELETE FROM {table} AS t USING {name}_doomed AS d
    WHERE t.{owner} = d.owner AND t.{key} = d.{key} AND {assert_unfenced(fence)}
    RETURNING 1
)"""


def _events_gone(*, bounded: bool, limit: str, fence: str) -> str:
    """Delete events of the streams $1 and of their object intents, oldest first; `bounded`:
    only those at or below `version - $2` of their aggregate's row."""
    through = "version - $2" if bounded else "version"
    within = "originator_version <= o.through" if bounded else ""
    return f"""
WITH owners AS (
    SELECT id, {through} AS through FROM streams WHERE id = ANY($1::uuid[])
    UNION ALL
    SELECT id, {through} FROM object_intents WHERE stream = ANY($1::uuid[])
), {_batch_gone("events", "stream_events", "originator_id", "originator_version",
                owners="owners", within=within, order="originator_version", limit=limit,
                fence=fence)}
SELECT count(*) FROM events_gone
"""


_COMPACT_EVENTS = _events_gone(bounded=True, limit="$3", fence="$4")

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
), {_batch_gone("receipts", "append_receipts", "stream", "idempotency_key", owners="bounds",
                within="sequence <= o.through", order="sequence", limit="$4", fence="$5")}
SELECT count(*) FROM receipts_gone
"""

# Erased with its records gone (a stream sealed under a hold keeps them until erased again).
_ERASED = """
SELECT id FROM streams
WHERE id = ANY($1::uuid[]) AND erased AND NOT legal_hold AND earliest = head + 1
"""

_ERASED_EVENTS = _events_gone(bounded=False, limit="$2", fence="$3")

_ERASED_ROWS = {"append_receipts": "idempotency_key", "records": "sequence",
                "consumers": "consumer_id", "input_deliveries": "sequence",
                "delivery_redrives": "id", "gap_evidence": "id", "object_intents": "id"}
"""Every table that holds an erased stream's rows (by its `stream`), with its key."""

_ERASED_REST = "WITH erased AS (SELECT unnest($1::uuid[]) AS id)," + ",".join(
    _batch_gone(table, table, "stream", key, owners="erased", limit="$2", fence="$3")
    for table, key in _ERASED_ROWS.items()) + f"""
SELECT (SELECT count(*) FROM append_receipts_gone) AS receipts,
       {" + ".join(f"(SELECT count(*) FROM {table}_gone)"
                   for table in _ERASED_ROWS if table != "append_receipts")} AS others
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
