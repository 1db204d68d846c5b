"""The Postgres `StreamStore`: stream rows, their snapshots, and units of work.

`lock()` hands out units of work run by the group committer (one shared
transaction per group, see `group_commit/engine.py`). Everything else is a single
autocommit statement on the pool, except the two that serialize on a run.

Rules (creation against erasure, and the streams-per-run cap):
- a create and an erasure mark each hold the run's advisory lock exclusively, for
  their own transaction only: creates in one run take turns (on every node), and
  take turns with the mark;
- a create reads the mark in a statement that starts after its lock is granted,
  so under READ COMMITTED it sees every mark committed before: the lock, not the
  statement snapshot, orders the two;
- a mark therefore commits either before a create looks (which is refused) or
  after that create committed (and the eraser's `list_run` finds its stream);
- likewise a create counts the run's streams in a statement that starts after its
  lock is granted, so it sees every stream created before it: two creates racing for
  the run's last slot (on two nodes) cannot both take it. Creates of one run are rare
  next to appends, so serialising them costs nothing that matters.

Creates and erasure marks, like every write, assert in their own statement that
the node's region is not fenced (`fences.py`): a fenced node stores neither.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TypeVar
from uuid import UUID

import asyncpg

from adapters.postgres.codec import AggregateCodec
from adapters.postgres.fences import assert_unfenced, refused_when_fenced
from adapters.postgres.group_commit.engine import GroupCommitter
from adapters.postgres.group_commit.load_coalescing import LoadCoalescer
from adapters.postgres.group_commit.stream_cache import StreamCache
from adapters.postgres.group_commit.unit_of_work import PostgresSession, load_intent_row
from adapters.postgres.ids import stream_id
from adapters.postgres.stream_rows import ROW_COLUMNS, stream_from_row
from application.ports.streams import RunSummary
from domain.errors import TooManyStreams
from domain.identifiers import RunKey, StreamKey
from domain.object_intent import ObjectIntent
from domain.stream import Stream

T = TypeVar("T")

# One statement, so creation is atomic without a transaction round trip: the row,
# its Created event and the consumers named by the definition, or nothing.
_CREATE = f"""
WITH created AS (
    INSERT INTO streams (id, tenant, run_id, stream_id, definition, snapshot_topic, snapshot,
                         version, head, earliest, total_items, total_bytes, closed,
                         legal_hold, erased, created_at)
    SELECT $1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16
    WHERE NOT EXISTS (SELECT 1 FROM erased_runs WHERE tenant = $2 AND run_id = $3)
      AND ($23::bigint IS NULL
           OR (SELECT count(*) FROM streams WHERE tenant = $2 AND run_id = $3) < $23)
    ON CONFLICT DO NOTHING
    RETURNING id
), created_events AS (
    INSERT INTO stream_events (originator_id, originator_version, topic, state)
    SELECT e.* FROM unnest($17::uuid[], $18::int4[], $19::text[], $20::bytea[]) AS e
    WHERE EXISTS (SELECT 1 FROM created)
), created_consumers AS (
    INSERT INTO consumers (stream, consumer_id, acked, owner)
    SELECT $1, c.consumer, 0, NULL FROM unnest($21::text[]) AS c(consumer)
    WHERE EXISTS (SELECT 1 FROM created)
)
SELECT EXISTS (SELECT 1 FROM created) AS created,
       EXISTS (SELECT 1 FROM erased_runs WHERE tenant = $2 AND run_id = $3) AS run_erased,
       ($23::bigint IS NOT NULL
        AND (SELECT count(*) FROM streams WHERE tenant = $2 AND run_id = $3) >= $23)
           AS run_full,
       {assert_unfenced("$22")} AS unfenced
"""

_RUN_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))"
"""The run's lock (ids cannot hold `/`, so no two runs share a text; a hash collision
only serializes two runs that did not need it)."""

_LIST_RUN = f"""
SELECT s.id, s.version, {ROW_COLUMNS} FROM streams AS s
WHERE s.tenant = $1 AND s.run_id = $2 AND ($3::text IS NULL OR s.stream_id > $3)
ORDER BY s.stream_id
LIMIT $4
"""

# Grouped along the (tenant, run_id, stream_id) key's index, in the "C" collation (Python's
# order); erased runs are left out before the limit, so a page is never padded with them.
# A stream's own `erased` column is set by its deletion (and by its run's erasure, which
# `erased_runs` already leaves out); an expired stream is gone from its expiry on; a
# definition without a readers pin has the default, `["*"]` (`AuthorizationPins`); the
# readers rule is `domain.principal.names_reader`'s.
_LIST_RUNS = """
SELECT s.run_id, count(*) AS streams, min(s.created_at) AS created_at FROM streams AS s
WHERE s.tenant = $1 AND ($2::text IS NULL OR s.run_id > $2) AND NOT s.erased
  AND (s.definition->>'expires_after_seconds' IS NULL
       OR s.created_at + (s.definition->>'expires_after_seconds')::bigint
                         * interval '1 second' > $4)
  AND ($5::text IS NULL OR COALESCE(s.definition->'authorization'->'readers', '["*"]')
                           ?| ARRAY['*', $5::text])
GROUP BY s.run_id
HAVING NOT EXISTS (SELECT 1 FROM erased_runs AS e WHERE e.tenant = $1
                   AND e.run_id = s.run_id)
ORDER BY s.run_id
LIMIT $3
"""

_LOAD_INTENT = """
SELECT id, version, snapshot_topic, snapshot FROM object_intents WHERE id = $1 AND stream = $2
"""

# Keyset paging in the "C" collation, so the order is Python's `StreamKey` order.
_WITH_RETENTION = """
SELECT tenant, run_id, stream_id FROM streams
WHERE NOT legal_hold AND NOT erased AND definition->'placement'->>'metadata_home' = $5
  AND (definition->'retention'->>'max_age_seconds' IS NOT NULL
       OR definition->'retention'->>'max_records' IS NOT NULL)
  AND ($1::text IS NULL OR (tenant, run_id, stream_id) > ($1, $2, $3))
ORDER BY tenant, run_id, stream_id
LIMIT $4
"""

_EXPIRED_STREAMS = """
SELECT tenant, run_id, stream_id FROM streams
WHERE NOT legal_hold AND NOT erased AND definition->'placement'->>'metadata_home' = $3
  AND definition->>'expires_after_seconds' IS NOT NULL
  AND created_at + (definition->>'expires_after_seconds')::bigint * interval '1 second' <= $1
ORDER BY created_at, tenant, run_id, stream_id
LIMIT $2
"""

_EXPIRED_INTENTS = """
SELECT s.tenant, s.run_id, s.stream_id, i.id FROM object_intents AS i
JOIN streams AS s ON s.id = i.stream
WHERE i.state IN ('prepared', 'uploaded') AND i.expires_at <= $1 AND NOT s.legal_hold
  AND s.definition->'placement'->>'metadata_home' = $3
ORDER BY i.expires_at, s.tenant, s.run_id, s.stream_id, i.id
LIMIT $2
"""

_MARK_ERASED = f"""
INSERT INTO erased_runs (tenant, run_id) SELECT $1, $2 WHERE {assert_unfenced("$3")}
ON CONFLICT DO NOTHING
"""



class PostgresStreamStore:
    """Implements `StreamStore`."""

    def __init__(self, pool: asyncpg.Pool, codec: AggregateCodec, cache: StreamCache,
                 committer: GroupCommitter, region: str) -> None:
        self._pool = pool
        self._region = region
        self._codec = codec
        self.committer = committer
        self._loads = LoadCoalescer(pool, codec, cache)

    async def create(self, stream: Stream,
                     max_streams_per_run: int | None = None) -> tuple[Stream, bool]:
        key = stream.key
        with refused_when_fenced(self._region):
            row = await self._insert(stream, max_streams_per_run)
        stream.ensure_not_erased(row["run_erased"])
        if row["created"]:
            return stream, True
        existing = await self.load(key)
        if existing is None and row["run_full"]:
            raise TooManyStreams(f"the run already has {max_streams_per_run} streams",
                                 limit=max_streams_per_run)
        if existing is None:  # created and erased in between: cannot happen, rows stay
            raise RuntimeError(f"stream {key.channel_key} vanished during create")
        return existing, False

    async def _insert(self, stream: Stream, max_streams_per_run: int | None) -> asyncpg.Record:
        key = stream.key
        events = self._codec.events(stream.collect_events())
        snapshot = self._codec.snapshot(stream)
        async with self._pool.acquire() as connection, connection.transaction():
            await connection.execute(_RUN_LOCK, key.tenant, key.run_id)
            row = await connection.fetchrow(
                _CREATE, stream.id, key.tenant, key.run_id, key.stream_id,
                stream.definition.model_dump_json(), snapshot.topic, snapshot.state,
                stream.version, stream.head, stream.earliest, stream.total_items,
                stream.total_bytes, stream.closed, stream.legal_hold, stream.erased,
                stream.created_at, [e.originator_id for e in events],
                [e.originator_version for e in events], [e.topic for e in events],
                [e.state for e in events], list(stream.acks), self._region,
                max_streams_per_run)
        assert row is not None
        return row

    def lock(self, key: StreamKey) -> AbstractAsyncContextManager[PostgresSession]:
        return self.committer.unit_of_work(key)

    async def transact(self, key: StreamKey,
                       work: Callable[[PostgresSession], Awaitable[T]]) -> T:
        answer: T = await self.committer.run(key, work)
        return answer

    async def load(self, key: StreamKey) -> Stream | None:
        return await self._loads.load(stream_id(key))

    async def list_run(self, run: RunKey, after: str | None = None,
                       limit: int | None = None) -> Sequence[Stream]:
        rows = await self._pool.fetch(_LIST_RUN, run.tenant, run.run_id, after, limit)
        return [stream_from_row(self._codec, row["id"], row["version"], row) for row in rows]

    async def list_runs(self, tenant: str, after: str | None, limit: int, now: datetime,
                        reader: str | None) -> Sequence[RunSummary]:
        if limit <= 0:
            return []
        rows = await self._pool.fetch(_LIST_RUNS, tenant, after, limit, now, reader)
        return [RunSummary(row["run_id"], row["streams"], row["created_at"]) for row in rows]

    async def streams_with_retention(self, after: StreamKey | None, limit: int,
                                     home: str) -> Sequence[StreamKey]:
        if limit <= 0:
            return []
        bound = (after.tenant, after.run_id, after.stream_id) if after else (None, None, None)
        rows = await self._pool.fetch(_WITH_RETENTION, *bound, limit, home)
        return [StreamKey(row["tenant"], row["run_id"], row["stream_id"]) for row in rows]

    async def expired_streams(self, now: datetime, limit: int,
                              home: str) -> Sequence[StreamKey]:
        if limit <= 0:
            return []
        rows = await self._pool.fetch(_EXPIRED_STREAMS, now, limit, home)
        return [StreamKey(row["tenant"], row["run_id"], row["stream_id"]) for row in rows]

    async def expired_intents(self, now: datetime, limit: int,
                              home: str) -> Sequence[tuple[StreamKey, str]]:
        if limit <= 0:
            return []
        rows = await self._pool.fetch(_EXPIRED_INTENTS, now, limit, home)
        return [(StreamKey(row["tenant"], row["run_id"], row["stream_id"]), str(row["id"]))
                for row in rows]

    async def load_intent(self, key: StreamKey, object_id: str) -> ObjectIntent | None:
        try:
            intent_id = UUID(object_id)
        except ValueError:
            return None
        row = await self._pool.fetchrow(_LOAD_INTENT, intent_id, stream_id(key))
        return load_intent_row(self._codec, row) if row is not None else None

    async def mark_run_erased(self, run: RunKey) -> None:
        with refused_when_fenced(self._region):
            async with self._pool.acquire() as connection, connection.transaction():
                await connection.execute(_RUN_LOCK, run.tenant, run.run_id)
                await connection.execute(_MARK_ERASED, run.tenant, run.run_id, self._region)
