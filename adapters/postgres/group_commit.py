"""Group commit: concurrent units of work of one process share a transaction.

Why: every unit of work must lock its stream row and commit before it may
answer; done one transaction per command, a hot stream serialises on
lock → write → fsync → unlock. Here a few committer tasks each take whatever
units of work are queued, run them in ONE transaction and commit once
(docs/adr/0003-transactions-and-group-commit.md).

Two kinds of unit of work:
- `unit_of_work(key)` (the port's `lock()`): the caller's `async with` body
  runs once, in the caller's task, while the committer waits for it;
- `run(key, work)` (the port's `transact()`): the committer calls `work`
  itself, and may call it a second time: such a group is first decided
  *optimistically* on the states this process holds (no BEGIN, no lock
  round trip) and written by ONE autocommit statement that fails unless each
  stream is still at the version decided on (`write_statement`); if another
  process wrote meanwhile, nothing is written and the group runs again
  under the row lock. Decisions (credit included) are thus always made on
  the state the commit finds current.

Rules:
- a stream is in at most one group of this process at a time (`_busy`), so a
  process never conflicts with, nor waits for the row lock of, itself;
- a locked group locks all its stream rows in one `SELECT … ORDER BY id FOR
  UPDATE`, so two groups (of this or another process) always lock in the same
  order and cannot deadlock each other;
- the units of work of a group run one at a time, in arrival order, each on
  the group's live aggregate; a failing one is rolled back in memory only
  (see `unit_of_work.reject`), the others still commit;
- the whole group is written by one statement (events, records, receipts,
  deliveries, intents, removals, consumer acks, snapshots, NOTIFY), then one
  COMMIT for a locked group (an optimistic group's statement commits by
  itself); no unit of work is answered before that, so nothing is
  acknowledged before it is durable, and a wake is only ever sent by the
  commit itself;
- if a locked group's transaction fails, every unit of work accepted in it
  fails with the error (nothing of theirs is stored); units not yet started
  are retried in the next group. An optimistic group that fails wrote
  nothing: it runs again locked;
- a group that writes while the node's region is fenced (docs/adr/0016) fails
  in its write statement, wrote nothing, and is not run again: each of its
  units of work answers `RegionFenced`. Nothing caches the fence, so a fence
  recorded while a group runs stops that group at its commit.
"""

from __future__ import annotations

import asyncio
import bisect
import contextvars
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from adapters.postgres.codec import AggregateCodec
from adapters.postgres.fences import is_fenced, refusal
from adapters.postgres.group_writes import GroupWrites, write_statement
from adapters.postgres.ids import stream_id
from adapters.postgres.pool import as_unavailable
from adapters.postgres.stream_cache import StreamCache
from adapters.postgres.stream_rows import ROW_COLUMNS, UNREAD_SIZES, stream_from_row
from adapters.postgres.unit_of_work import (
    LockedStream,
    NeedsLock,
    PostgresSession,
    accept,
    reject,
)
from application.ports import StoreUnavailable, Wake
from domain.errors import NotFound
from domain.identifiers import StreamKey

log = logging.getLogger(__name__)

# The snapshot travels only when this process does not hold that version already.
_LOCK_STREAMS = f"""
SELECT s.id, s.tenant, s.run_id, s.stream_id, s.version, s.snapshot_topic,
       CASE WHEN s.version = known.version THEN NULL ELSE s.snapshot END AS snapshot,
       CASE WHEN s.version = known.version THEN NULL ELSE s.definition END AS definition,
       CASE WHEN s.version = known.version THEN NULL ELSE {UNREAD_SIZES} END AS unread_sizes,
       EXISTS (SELECT 1 FROM erased_runs AS e
               WHERE e.tenant = s.tenant AND e.run_id = s.run_id) AS run_erased
FROM streams AS s JOIN unnest($1::uuid[], $2::int4[]) AS known(id, version) ON s.id = known.id
ORDER BY s.id FOR UPDATE OF s
"""

_SNAPSHOT = f"SELECT {ROW_COLUMNS} FROM streams AS s WHERE s.id = $1"

_inside: contextvars.ContextVar[_Request | None] = contextvars.ContextVar(
    "runnel_unit_of_work", default=None)

BeforeCommit = Callable[[], Awaitable[None]]
OnCommitted = Callable[[Sequence[Wake]], None]
Work = Callable[[PostgresSession], Awaitable[Any]]


class StoreClosed(RuntimeError):
    """The store was closed while a unit of work waited for it."""


class NestedUnitOfWork(RuntimeError):
    """`lock()` inside another unit of work's body: it would wait for a committer that may
    be the one waiting for the outer body (a deadlock), so it is refused outright."""


MAX_GROUP_ATTEMPTS = 3

CONTENDED_SECONDS = 1.0
"""After a conflict, a stream's groups run under the row lock for this long: another
process is writing it, so deciding on the state held here would likely be wasted."""

# SQLSTATE of `runnel_write_conflict()`, and the errors another writer's commit can cause.
_WRITE_CONFLICT = "RN001"
_CONFLICTS = (asyncpg.UniqueViolationError, asyncpg.DeadlockDetectedError)

# Errors that leave the shared transaction unusable (or the connection gone).
_DATABASE_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError,
                    OSError, TimeoutError, StoreUnavailable)


@dataclass(eq=False)
class _Request:
    key: StreamKey
    committed: asyncio.Future[Any]
    """The caller's answer: `work`'s result (None for a `unit_of_work`), or its error."""
    work: Work | None = None
    entered: asyncio.Future[PostgresSession] | None = None
    """`unit_of_work` only: the session handed to the caller's body."""
    finished: asyncio.Future[BaseException | None] | None = None
    """`unit_of_work` only: None on a clean exit, else what the body raised."""
    answer: Any = None
    attempts: int = 0

    @property
    def abandoned(self) -> bool:
        """Cancelled (or failed) before it ran."""
        return self.committed.done() or (self.entered is not None and self.entered.done())


class _GroupPoisoned(Exception):
    """A unit of work's query failed, so the shared transaction cannot commit."""


GROUP_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""Upper bounds of the group-size histogram (`max_group` defaults to 256)."""


@dataclass
class GroupCommitStats:
    """Counters since the committer started (read at scrape time by the node's metrics)."""

    groups: int = 0
    units: int = 0
    failed_groups: int = 0
    largest_group: int = 0
    optimistic_groups: int = 0
    conflicts: int = 0
    """Optimistic groups that found a stream changed by another writer and ran again locked."""
    fenced_groups: int = 0
    """Groups refused because the node's region is fenced (nothing of them was written)."""
    recent_sizes: deque[int] = field(default_factory=lambda: deque(maxlen=1024))
    size_counts: list[int] = field(default_factory=lambda: [0] * (len(GROUP_SIZE_BUCKETS) + 1))
    """Committed groups per size bucket (`GROUP_SIZE_BUCKETS`, then the overflow), not
    cumulative."""
    size_sum: int = 0
    """Units of work of every committed group, accepted or not (the histogram's sum)."""

    def committed(self, size: int, accepted: int) -> None:
        self.groups += 1
        self.units += accepted
        self.largest_group = max(self.largest_group, size)
        self.recent_sizes.append(size)
        self.size_sum += size
        self.size_counts[bisect.bisect_left(GROUP_SIZE_BUCKETS, size)] += 1


class GroupCommitter:
    """Runs units of work in shared transactions on `connections` pool connections."""

    def __init__(self, pool: asyncpg.Pool, codec: AggregateCodec, cache: StreamCache, *,
                 origin: str, on_committed: OnCommitted, region: str, connections: int = 3,
                 max_group: int = 256, optimistic: bool = True) -> None:
        self._pool = pool
        self._region = region
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
        self.optimistic = optimistic
        """False runs every group under the row lock (for comparisons and fault tests)."""
        self._busy: set[StreamKey] = set()
        self._contended: dict[StreamKey, float] = {}
        self.stats = GroupCommitStats()
        self.before_commit: BeforeCommit | None = None
        """Fault-injection seam: awaited after a group's writes, before its COMMIT."""

    @property
    def waiting(self) -> int:
        """Units of work queued for the next group (for metrics and tests)."""
        return len(self._queue)

    @asynccontextmanager
    async def unit_of_work(self, key: StreamKey) -> AsyncIterator[PostgresSession]:
        self._refuse_nested(key)
        loop = asyncio.get_running_loop()
        request = _Request(key, loop.create_future(), entered=loop.create_future(),
                           finished=loop.create_future())
        assert request.entered is not None and request.finished is not None
        self._enqueue(request)
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
            unavailable = as_unavailable(error)  # a query of the caller's hit an outage
            if unavailable is not None and unavailable is not error:
                raise unavailable from error
            raise
        finally:
            _inside.reset(inside)
        _set(request.finished, None)
        await request.committed

    async def run(self, key: StreamKey, work: Work) -> Any:
        """`await work(session)` as a unit of work; its result once committed.

        `work` may be called twice (optimistically, then under the lock): it must act
        on the session only."""
        self._refuse_nested(key)
        request = _Request(key, asyncio.get_running_loop().create_future(), work=work)
        self._enqueue(request)
        return await request.committed

    def _refuse_nested(self, key: StreamKey) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")
        outer = _inside.get()
        if outer is not None and (outer.work is not None or (
                outer.entered is not None and outer.entered.done()
                and outer.finished is not None and not outer.finished.done())):
            raise NestedUnitOfWork(f"a unit of work on {key.channel_key} inside the one on "
                                   f"{outer.key.channel_key}")

    def _enqueue(self, request: _Request) -> None:
        self._queue.append(request)
        self._arrived.set()
        self._start_workers()

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
            _fail_request(self._queue.popleft(), StoreClosed("the store is closed"))

    async def _work(self) -> None:
        while True:
            group = self._take()
            if not group:
                self._arrived.clear()
                await self._arrived.wait()
                continue
            keys = {request.key for request in group}
            self._busy |= keys
            try:
                if not await self._run_optimistically(group):
                    await self._run_locked(group)
            finally:
                self._busy -= keys
                if self._queue:
                    self._arrived.set()

    def _take(self) -> list[_Request]:
        """The next group: queued units of work, in arrival order, on streams no other
        group of this process holds (those wait in the queue, still in order)."""
        group: list[_Request] = []
        waiting: list[_Request] = []
        while self._queue and len(group) < self._max_group:
            request = self._queue.popleft()
            if request.key in self._busy:
                waiting.append(request)
            elif not request.abandoned:
                group.append(request)
        self._queue.extendleft(reversed(waiting))
        return group

    def _optimistic_streams(self, group: list[_Request]) -> dict[StreamKey, LockedStream] | None:
        """The held states to decide `group` on, or None when it has to run locked."""
        if not self.optimistic:
            return None
        now = time.monotonic()
        streams: dict[StreamKey, LockedStream] = {}
        for request in group:
            if request.work is None or self._contended.get(request.key, 0.0) > now:
                return None
            if request.key not in streams:
                row_id = stream_id(request.key)
                pristine = self._cache.pristine(row_id, self._cache.version(row_id))
                if pristine is None:
                    return None
                streams[request.key] = LockedStream(request.key, row_id, pristine, False)
        return streams

    async def _run_optimistically(self, group: list[_Request]) -> bool:
        """Decide and write `group` without the row lock; False when nothing was written
        and the group has to run locked instead."""
        streams = self._optimistic_streams(group)
        if streams is None:
            return False
        ran: list[tuple[_Request, BaseException | None]] = []
        writes = GroupWrites()
        try:
            async with self._pool.acquire() as connection:
                for request in group:
                    if not request.committed.done():
                        ran.append((request, await self._call(request, streams[request.key],
                                                              connection, optimistic=True)))
                if not ran:
                    return True
                for stream in streams.values():
                    writes.check(stream)
                    writes.add(stream, self._codec, self._origin)
                statement, arguments = write_statement(writes, self._region)
                await connection.execute(statement, *arguments)
        except asyncio.CancelledError:  # the store is closing: whatever was sent, say so
            for request in group:
                _fail_request(request, StoreClosed("the store is closed"))
            raise
        except NeedsLock:
            return False
        except _DATABASE_ERRORS as error:
            if self._unavailable(group, error):
                return True  # running it locked would wait on the same outage
            if is_fenced(error):
                # Not a conflict: running it again, locked or not, would be fenced too.
                # The group's own refusals were decided on an unconfirmed state: fenced too.
                self._fenced(group, error)
                return True
            if _is_conflict(error):
                self.stats.conflicts += 1
                until = time.monotonic() + CONTENDED_SECONDS
                if len(self._contended) > 4 * self._max_group:
                    self._contended.clear()
                self._contended.update(dict.fromkeys(streams, until))
            else:
                log.warning("optimistic group of %d failed, running it locked: %r",
                            len(group), error)
            return False
        self.stats.optimistic_groups += 1
        self._committed(group, sum(failure is None for _, failure in ran), streams, writes)
        for request, failure in ran:
            if failure is None:
                _set(request.committed, request.answer)
            else:
                _fail(request.committed, failure)
        return True

    async def _call(self, request: _Request, stream: LockedStream,
                    connection: asyncpg.Connection, *, optimistic: bool
                    ) -> BaseException | None:
        """Run a `run()` unit of work on `stream`; what it raised (None: accepted).
        `NeedsLock` and database errors propagate (they concern the whole group)."""
        assert request.work is not None
        session = PostgresSession(stream, connection, self._codec, optimistic=optimistic)
        inside = _inside.set(request)
        try:
            request.answer = await request.work(session)
        except (NeedsLock, *_DATABASE_ERRORS):
            reject(stream, session)
            raise
        except Exception as error:
            reject(stream, session)
            return error
        finally:
            _inside.reset(inside)
            session.detach()
        accept(stream, session)
        return None

    def _committed(self, group: list[_Request], accepted: int,
                   streams: dict[StreamKey, LockedStream], writes: GroupWrites) -> None:
        self.stats.committed(len(group), accepted)
        for stream in streams.values():
            if stream.stream.version != stream.pristine.version:
                # Nobody changes it any more: its units of work have all ended.
                self._cache.remember(stream.stream)
        # Committed: this process's readers hear it now; other processes via NOTIFY.
        try:
            self._on_committed(writes.local_wakes)
        except Exception:  # a hint that failed to reach readers delays, never loses
            log.exception("local wake delivery failed")

    async def _run_locked(self, group: list[_Request]) -> None:
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
                    statement, arguments = write_statement(writes, self._region)
                    await connection.execute(statement, *arguments)
                if self.before_commit is not None:
                    await self.before_commit()
        except asyncio.CancelledError:
            for request in group:
                _fail_request(request, StoreClosed("the store is closed"))
            raise
        except Exception as error:
            cause = error.__cause__ if isinstance(error, _GroupPoisoned) else error
            assert cause is not None
            if is_fenced(cause):
                self._fenced(group, cause)
                return
            if self._unavailable(group, cause):
                return
            cause = as_unavailable(cause) or cause
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
                    _fail_request(request, cause)
                else:
                    retry.append(request)
            self._queue.extendleft(reversed(retry))
            if retry:
                self._arrived.set()
            return
        self._committed(group, len(accepted), locked, writes)
        for request in accepted:
            _set(request.committed, request.answer)

    def _unavailable(self, group: list[_Request], error: BaseException) -> bool:
        """Answer every unit of work of `group` with the outage `error` is, if the
        connection failed: whether the group was written is unknown, and units that did
        not start would only wait on the same outage (their callers retry, with their
        idempotency keys). A cancelled statement is not such an outage: the server
        answers, so units that did not start go to the next group as usual."""
        unavailable = as_unavailable(error)
        if unavailable is None or isinstance(unavailable.__cause__, asyncpg.QueryCanceledError):
            return False
        self.stats.failed_groups += 1
        log.warning("group of %d units of work failed: %s", len(group), unavailable)
        for request in group:
            _fail_request(request, unavailable)
        return True

    def _fenced(self, group: list[_Request], error: BaseException) -> None:
        """Answer every unit of work of a group the fence refused (it wrote nothing)."""
        self.stats.fenced_groups += 1
        log.debug("group of %d units of work refused: region %s is fenced", len(group),
                 self._region)
        for request in group:
            _fail_request(request, refusal(self._region, error))

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
                pristine = stream_from_row(self._codec, row_id, version, stored)
                self._cache.remember(pristine)
            locked[key] = LockedStream(key, row_id, pristine, row["run_erased"])
        return locked

    async def _run_one(self, request: _Request, locked: dict[StreamKey, LockedStream],
                       connection: asyncpg.Connection) -> bool:
        """Run one unit of work under the lock; True when it was accepted."""
        if request.abandoned:  # cancelled while queued
            return False
        stream = locked.get(request.key)
        if stream is None:
            _fail_request(request, NotFound("stream not found"))
            return False
        if request.work is not None:
            try:
                failure = await self._call(request, stream, connection, optimistic=False)
            except _DATABASE_ERRORS as error:
                _fail(request.committed, as_unavailable(error) or error)
                raise _GroupPoisoned() from error
            if failure is not None:  # decided under the lock: final
                _fail(request.committed, failure)
            return failure is None
        assert request.entered is not None and request.finished is not None
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


def _fail_request(request: _Request, error: BaseException) -> None:
    """Answer a unit of work that will not run (or did not commit) with `error`."""
    if request.entered is not None and not request.entered.done():
        request.entered.set_exception(error)
    else:
        _fail(request.committed, error)


def _is_conflict(error: BaseException) -> bool:
    return isinstance(error, _CONFLICTS) or getattr(error, "sqlstate", None) == _WRITE_CONFLICT
