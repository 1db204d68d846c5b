"""Concurrent stream loads share one query, and skip decoding what is already known.

Every use case loads the stream (unlocked) before it works on it, so under
load a process issues many point reads at once. Rules:
- while a load query is in flight, new requests wait and are then served
  together by the next one (`WHERE id = ANY(…)`): one round trip for many;
- each request is answered from a query that started after it was made, so
  it sees the latest committed state as of its call, as a lone query would;
- the query returns a snapshot only when the row's version differs from the
  one in the process's `StreamCache`; otherwise the cached state is cloned;
- every caller gets its own aggregate object, never a shared one.
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import asyncpg

from adapters.postgres.codec import AggregateCodec
from adapters.postgres.group_commit.stream_cache import StreamCache, clone
from adapters.postgres.stream_rows import ROW_COLUMNS, legacy_columns, stream_from_row
from domain.stream import Stream

_LOAD_MANY = f"""
SELECT s.id, s.version, s.snapshot_topic,
       CASE WHEN s.version = known.version THEN NULL ELSE s.snapshot END AS snapshot,
       CASE WHEN s.version = known.version THEN NULL ELSE s.definition END AS definition,
       {legacy_columns("s.version = known.version")}
FROM streams AS s JOIN unnest($1::uuid[], $2::int4[]) AS known(id, version) ON s.id = known.id
"""

_LOAD_ONE = f"SELECT s.id, s.version, {ROW_COLUMNS} FROM streams AS s WHERE s.id = $1"


class LoadCoalescer:
    def __init__(self, pool: asyncpg.Pool, codec: AggregateCodec, cache: StreamCache,
                 max_batch: int = 512) -> None:
        self._pool = pool
        self._codec = codec
        self._cache = cache
        self._max_batch = max_batch
        self._waiting: list[tuple[UUID, asyncio.Future[Stream | None]]] = []
        self._runner: asyncio.Task[None] | None = None

    async def load(self, stream_id: UUID) -> Stream | None:
        future: asyncio.Future[Stream | None] = asyncio.get_running_loop().create_future()
        self._waiting.append((stream_id, future))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run(), name="runnel-load-coalescer")
        return await future

    async def _run(self) -> None:
        while self._waiting:
            batch = self._waiting[:self._max_batch]
            del self._waiting[:self._max_batch]
            batch = [(stream_id, future) for stream_id, future in batch if not future.done()]
            if not batch:
                continue
            try:
                found = await self._fetch({stream_id for stream_id, _ in batch})
            except asyncio.CancelledError:
                for _, future in [*batch, *self._waiting]:
                    future.cancel()
                raise
            except Exception as error:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            for stream_id, future in batch:
                if not future.done():
                    stream = found.get(stream_id)
                    future.set_result(clone(stream) if stream is not None else None)

    async def _fetch(self, ids: set[UUID]) -> dict[UUID, Stream]:
        """Committed states (pristine: callers clone them), decoding only unknown versions."""
        ordered = list(ids)
        rows = await self._pool.fetch(_LOAD_MANY, ordered,
                                      [self._cache.version(stream_id) for stream_id in ordered])
        found: dict[UUID, Stream] = {}
        for row in rows:
            stream = self._known(row) if row["snapshot"] is None else self._decode(row)
            if stream is None:  # evicted meanwhile: read it whole
                one = await self._pool.fetchrow(_LOAD_ONE, row["id"])
                stream = self._decode(one) if one is not None else None
            if stream is not None:
                found[row["id"]] = stream
        return found

    def _known(self, row: Any) -> Stream | None:
        return self._cache.pristine(row["id"], row["version"])

    def _decode(self, row: Any) -> Stream:
        stream = stream_from_row(self._codec, row["id"], row["version"], row)
        self._cache.remember(stream)
        return stream
