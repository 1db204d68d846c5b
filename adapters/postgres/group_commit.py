"""Group commit: concurrent units of work of one process share a transaction.

Why: every unit of work must lock its stream row and commit before it may
answer; done one transaction per command, a hot stream serialises on
lock → write → fsync → unlock. Here a few committer tasks each take whatever
units of work are queued, run them in ONE transaction and commit once
(docs/adr/0003-transactions-and-group-commit.md).

Rules:
- a group locks all its stream rows in one `SELECT … ORDER BY id FOR UPDATE`,
  so two groups (of this or another process) always lock in the same order
  and cannot deadlock each other;
- the units of work of a group run one at a time, in arrival order, each on
  the group's live aggregate; a failing one is rolled back in memory only
  (see `unit_of_work.reject`), the others still commit;
- the whole group is written by one statement (events, records, receipts,
  deliveries, intents, removals, consumer acks, snapshots, NOTIFY) and one
  COMMIT; a unit of work's `async with` exits only after that COMMIT, so
  nothing is acknowledged before it is durable, and a wake is only ever sent
  by the commit itself;
- if the transaction fails, every unit of work accepted in it fails with the
  error (nothing of theirs is stored); units not yet started are retried in
  the next group.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from adapters.postgres.codec import AggregateCodec
from adapters.postgres.ids import stream_id
from adapters.postgres.stream_cache import StreamCache
from adapters.postgres.unit_of_work import (
    GroupWrites,
    LockedStream,
    PostgresSession,
    accept,
    reject,
    write_statement,
)
from application.ports import Wake
from domain.errors import NotFound
from domain.identifiers import StreamKey
from domain.stream import Stream

log = logging.getLogger(__name__)

# The snapshot travels only when this process does not hold that version already.
_LOCK_STREAMS = """
SELECT s.id, s.tenant, s.run_id, s.stream_id, s.version, s.snapshot_topic,
       CASE WHEN s.version = known.version THEN NULL ELSE s.snapshot END AS snapshot,
       EXISTS (SELECT 1 FROM erased_runs AS e
               WHERE e.tenant = s.tenant AND e.run_id = s.run_id) AS run_erased
FROM streams AS s JOIN unnest($1::uuid[], $2::int4[]) AS known(id, version) ON s.id = known.id
ORDER BY s.id FOR UPDATE OF s
"""

_SNAPSHOT = "SELECT snapshot_topic, snapshot FROM streams WHERE id = $1"

_inside: contextvars.ContextVar[_Request | None] = contextvars.ContextVar(
    "runnel_unit_of_work", default=None)

BeforeCommit = Callable[[], Awaitable[None]]
OnCommitted = Callable[[Sequence[Wake]], None]


class StoreClosed(RuntimeError):
    """The store was closed while a unit of work waited for it."""


class NestedUnitOfWork(RuntimeError):
    """`lock()` inside another unit of work's body: it would wait for a committer that may
    be the one waiting for the outer body (a deadlock), so it is refused outright."""


MAX_GROUP_ATTEMPTS = 3

# Errors that leave the shared transaction unusable (or the connection gone).
_DATABASE_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError)


@dataclass(eq=False)
class _Request:
    key: StreamKey
    entered: asyncio.Future[PostgresSession]
    finished: asyncio.Future[BaseException | None]
    """None on a clean exit, else what the unit of work raised."""
    committed: asyncio.Future[None]
    attempts: int = 0


class _GroupPoisoned(Exception):
    """A unit of work's query failed, so the shared transaction cannot commit."""


@dataclass
class GroupCommitStats:
    groups: int = 0
    units: int = 0
    failed_groups: int = 0
    largest_group: int = 0
    retried_lock_waits: int = 0
    recent_sizes: deque[int] = field(default_factory=lambda: deque(maxlen=1024))


class GroupCommitter:
    """Runs units of work in shared transactions on `connections` pool connections."""

    def __init__(self, pool: asyncpg.Pool, codec: AggregateCodec, cache: StreamCache, *,
                 origin: str, on_committed: OnCommitted, connections: int = 2,
                 max_group: int = 256) -> None:
        self._pool = pool
        self._cache = cache
        self._origin = origin
        self._on_committed = on_committed
        self._codec = codec
        self._connections = connections
        self._max_group = max_group
        self._queue: deque[_Request] = deque()
        self._arrived = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        self._closed = False
        self.stats = GroupCommitStats()
        self.before_commit: BeforeCommit | None = None
        """Fault-injection seam: awaited after a group's writes, before its COMMIT."""

    @property
    def waiting(self) -> int:
        """Units of work queued for the next group (for metrics and tests)."""
        return len(self._queue)

    @asynccontextmanager
    async def unit_of_work(self, key: StreamKey) -> AsyncIterator[PostgresSession]:
        if self._closed:
            raise StoreClosed("the store is closed")
        outer = _inside.get()
        if outer is not None and outer.entered.done() and not outer.finished.done():
            raise NestedUnitOfWork(f"lock({key.channel_key}) inside the unit of work on "
                                   f"{outer.key.channel_key}")
        loop = asyncio.get_running_loop()
        request = _Request(key, loop.create_future(), loop.create_future(), loop.create_future())
        self._queue.append(request)
        self._arrived.set()
        self._start_workers()
        try:
            session = await request.entered
        except asyncio.CancelledError:
            # Handed a session just as we were cancelled: give it back, or the group waits.
            if request.entered.done() and not request.entered.cancelled() \
                    and request.entered.exception() is None:
                _set(request.finished, asyncio.CancelledError())
            raise
        inside = _inside.set(request)
        try:
            yield session
        except BaseException as error:
            _set(request.finished, error)
            raise
        finally:
            _inside.reset(inside)
        _set(request.finished, None)
        await request.committed

    def _start_workers(self) -> None:
        if self._workers:
            return
        self._workers = [asyncio.create_task(self._work(), name=f"runnel-group-commit-{n}")
                         for n in range(self._connections)]

    async def close(self) -> None:
        self._closed = True
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        while self._queue:
            _fail(self._queue.popleft().entered, StoreClosed("the store is closed"))

    async def _work(self) -> None:
        while True:
            if not self._queue:
                self._arrived.clear()
                await self._arrived.wait()
                continue
            group: list[_Request] = []
            while self._queue and len(group) < self._max_group:
                request = self._queue.popleft()
                if not request.entered.done():
                    group.append(request)
            if group:
                await self._run(group)

    async def _run(self, group: list[_Request]) -> None:
        accepted: list[_Request] = []
        pending = deque(group)
        locked: dict[StreamKey, LockedStream] = {}
        try:
            async with self._pool.acquire() as connection, connection.transaction():
                locked = await self._lock(connection, group)
                while pending:
                    request = pending.popleft()
                    if await self._run_one(request, locked, connection):
                        accepted.append(request)
                writes = GroupWrites()
                for stream in locked.values():
                    writes.add(stream, self._codec, self._origin)
                if writes.wakes:
                    statement, arguments = write_statement(writes)
                    await connection.execute(statement, *arguments)
                if self.before_commit is not None:
                    await self.before_commit()
        except asyncio.CancelledError:
            for request in group:
                closed = StoreClosed("the store is closed")
                _fail(request.entered, closed)
                _fail(request.committed, closed)
            raise
        except Exception as error:
            cause = error.__cause__ if isinstance(error, _GroupPoisoned) else error
            assert cause is not None
            self.stats.failed_groups += 1
            log.warning("group of %d units of work failed: %r", len(group), cause)
            for request in accepted:
                _fail(request.committed, cause)
            # Units of work that never started lose nothing: they go to the next group,
            # unless the database keeps failing them.
            retry: list[_Request] = []
            for request in pending:
                request.attempts += 1
                if request.attempts >= MAX_GROUP_ATTEMPTS:
                    _fail(request.entered, cause)
                else:
                    retry.append(request)
            self._queue.extendleft(reversed(retry))
            if retry:
                self._arrived.set()
            return
        self.stats.groups += 1
        self.stats.units += len(accepted)
        self.stats.largest_group = max(self.stats.largest_group, len(group))
        self.stats.recent_sizes.append(len(group))
        for stream in locked.values():
            if stream.stream.version != stream.pristine.version:
                # Nobody changes it any more: its units of work have all ended.
                self._cache.remember(stream.stream)
        # Committed: this process's readers hear it now; other processes via NOTIFY.
        try:
            self._on_committed(writes.local_wakes)
        except Exception:  # a hint that failed to reach readers delays, never loses
            log.exception("local wake delivery failed")
        for request in accepted:
            _set(request.committed, None)

    async def _lock(self, connection: asyncpg.Connection, group: list[_Request]
                    ) -> dict[StreamKey, LockedStream]:
        ids = sorted({stream_id(request.key) for request in group})
        rows = await connection.fetch(_LOCK_STREAMS, ids,
                                      [self._cache.version(row_id) for row_id in ids])
        locked: dict[StreamKey, LockedStream] = {}
        for row in rows:
            key = StreamKey(row["tenant"], row["run_id"], row["stream_id"])
            row_id, version = row["id"], row["version"]
            pristine = self._cache.pristine(row_id, version)
            if row["snapshot"] is not None or pristine is None:
                stored = row if row["snapshot"] is not None else \
                    await connection.fetchrow(_SNAPSHOT, row_id)  # evicted meanwhile
                pristine = self._codec.load(Stream, row_id, version,
                                            stored["snapshot_topic"], stored["snapshot"])
                self._cache.remember(pristine)
            locked[key] = LockedStream(key, row_id, pristine, row["run_erased"])
        return locked

    async def _run_one(self, request: _Request, locked: dict[StreamKey, LockedStream],
                       connection: asyncpg.Connection) -> bool:
        """Hand one unit of work its session and wait for it; True when it was accepted."""
        if request.entered.done():  # cancelled while queued
            return False
        stream = locked.get(request.key)
        if stream is None:
            request.entered.set_exception(NotFound("stream not found"))
            return False
        session = PostgresSession(stream, connection, self._codec)
        request.entered.set_result(session)
        failure = await request.finished
        session.detach()
        if failure is None:
            accept(stream, session)
            return True
        reject(stream, session)
        if isinstance(failure, _DATABASE_ERRORS):
            raise _GroupPoisoned() from failure
        return False


def _set(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
