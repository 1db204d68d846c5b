"""The Durable Streams facade's catalog in Postgres (`FacadeCatalog`, migration 0014).

Rules:
- `insert` is `ON CONFLICT DO NOTHING` then a read: two racing creates of a path agree on
  the one run the first committed;
- `remove` deletes only the entry that still names the given run (a re-created path is
  never removed by a stale delete); its producers go in the same statement's transaction;
- producer state and `writer_seq` only move forward (a conditional write): two processes
  check and save them apart, and a save that lost the race to a later one must not take
  the state back (that would admit a fenced epoch again);
- `expired` walks the primary key from the page's cursor, so a sweep over every entry
  reads each row once, however many pages it takes.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from application.ports.durable_streams import FacadeEntry
from domain.producer_fencing import ProducerState

_COLUMNS = ("path, run_id, content_type, ttl_seconds, expires_at, touched_at, closed_by, "
            "writer_seq, forked_from, fork_offset, fork_sub_offset, deleted")
_FIND = f"SELECT {_COLUMNS} FROM durable_streams WHERE tenant = $1 AND path = $2"
_INSERT = f"""
INSERT INTO durable_streams (tenant, {_COLUMNS})
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (tenant, path) DO NOTHING
"""
_REMOVE = "DELETE FROM durable_streams WHERE tenant = $1 AND path = $2 AND run_id = $3"
_REMOVE_PRODUCERS = "DELETE FROM durable_stream_producers WHERE tenant = $1 AND run_id = $2"
_TOUCH = "UPDATE durable_streams SET touched_at = $3 WHERE tenant = $1 AND path = $2"
_CLOSED_BY = "UPDATE durable_streams SET closed_by = $3 WHERE tenant = $1 AND path = $2"
_MARK_DELETED = "UPDATE durable_streams SET deleted = true WHERE tenant = $1 AND path = $2"
_FORKS_OF = "SELECT count(*) FROM durable_streams WHERE tenant = $1 AND forked_from = $2"
_EXPIRED = f"""
SELECT tenant, {_COLUMNS} FROM durable_streams
WHERE (tenant, path) > ($2, $3) AND NOT deleted
  AND (expires_at <= $1
       OR touched_at + make_interval(secs => ttl_seconds::double precision) <= $1)
ORDER BY tenant, path
LIMIT $4
"""
_WRITER_SEQ = """UPDATE durable_streams SET writer_seq = $3 WHERE tenant = $1 AND path = $2
AND (writer_seq IS NULL OR writer_seq COLLATE "C" < $3 COLLATE "C")"""
_PRODUCER = """SELECT epoch, last_seq FROM durable_stream_producers
WHERE tenant = $1 AND run_id = $2 AND producer_id = $3"""
_SAVE_PRODUCER = """
INSERT INTO durable_stream_producers (tenant, run_id, producer_id, epoch, last_seq)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (tenant, run_id, producer_id)
DO UPDATE SET epoch = EXCLUDED.epoch, last_seq = EXCLUDED.last_seq
WHERE (durable_stream_producers.epoch, durable_stream_producers.last_seq)
    < (EXCLUDED.epoch, EXCLUDED.last_seq)
"""


class PostgresFacadeCatalog:
    """Implements `FacadeCatalog`."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def find(self, tenant: str, path: str) -> FacadeEntry | None:
        row = await self._pool.fetchrow(_FIND, tenant, path)
        return None if row is None else FacadeEntry(**dict(row))

    async def insert(self, tenant: str, entry: FacadeEntry) -> FacadeEntry:
        await self._pool.execute(_INSERT, tenant, entry.path, entry.run_id, entry.content_type,
                                 entry.ttl_seconds, entry.expires_at, entry.touched_at,
                                 entry.closed_by, entry.writer_seq, entry.forked_from,
                                 entry.fork_offset, entry.fork_sub_offset, entry.deleted)
        found = await self.find(tenant, entry.path)
        return found if found is not None else entry

    async def remove(self, tenant: str, path: str, run_id: str) -> bool:
        async with self._pool.acquire() as connection, connection.transaction():
            removed = await connection.execute(_REMOVE, tenant, path, run_id)
            await connection.execute(_REMOVE_PRODUCERS, tenant, run_id)
        return bool(removed.endswith(" 1"))

    async def touch(self, tenant: str, path: str, at: datetime) -> None:
        await self._pool.execute(_TOUCH, tenant, path, at)

    async def set_closed_by(self, tenant: str, path: str, closed_by: str) -> None:
        await self._pool.execute(_CLOSED_BY, tenant, path, closed_by)

    async def mark_deleted(self, tenant: str, path: str) -> None:
        await self._pool.execute(_MARK_DELETED, tenant, path)

    async def forks_of(self, tenant: str, path: str) -> int:
        return int(await self._pool.fetchval(_FORKS_OF, tenant, path))

    async def expired(self, now: datetime, after: tuple[str, str] | None,
                      limit: int) -> list[tuple[str, FacadeEntry]]:
        tenant, path = after if after is not None else ("", "")
        listed = []
        for row in await self._pool.fetch(_EXPIRED, now, tenant, path, limit):
            fields = dict(row)
            listed.append((fields.pop("tenant"), FacadeEntry(**fields)))
        return listed

    async def set_writer_seq(self, tenant: str, path: str, writer_seq: str) -> None:
        await self._pool.execute(_WRITER_SEQ, tenant, path, writer_seq)

    async def producer(self, tenant: str, run_id: str,
                       producer_id: str) -> ProducerState | None:
        row = await self._pool.fetchrow(_PRODUCER, tenant, run_id, producer_id)
        return None if row is None else ProducerState(row["epoch"], row["last_seq"])

    async def save_producer(self, tenant: str, run_id: str, producer_id: str,
                            state: ProducerState) -> None:
        await self._pool.execute(_SAVE_PRODUCER, tenant, run_id, producer_id, state.epoch,
                                 state.last_seq)
