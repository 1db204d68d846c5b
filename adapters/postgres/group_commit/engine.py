"""Group commit: concurrent units of work of one process share a transaction.

Every unit of work must lock its stream row and commit before it may answer; so a few
committer tasks each take whatever units of work are queued, run them as ONE group and
commit once (docs/adr/0003-transactions-and-group-commit.md). Here: the queue, the
committer tasks and the port's two entries, `unit_of_work` (the port's `lock()`) and
`run` (its `transact()`); the package's other rooms: `group_commit/__init__.py`.

Rules:
- a stream is in at most one group of this process at a time (`_busy`), so a
  process never conflicts with, nor waits for the row lock of, itself;
- a group runs optimistically when it can, else (or if that cannot stand) locked;
- nothing is answered before the group's commit, so nothing is acknowledged
  before it is durable, and a wake is only ever sent by the commit itself;
- nothing caches the region fence (docs/adr/0016): a fence recorded while a group
  runs stops that group at its write statement;
- a unit's own error fails that unit alone; a database error in an optimistic group
  fails nothing (the group runs again locked) unless it is an outage or a fence, and in
  a locked group fails the units it accepted. Every failure and its fate: the table at
  the end of ADR 0003.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from adapters.postgres.codec import AggregateCodec
from adapters.postgres.group_commit.locked import BeforeCommit, LockedGroups
from adapters.postgres.group_commit.optimistic import OptimisticGroups
from adapters.postgres.group_commit.outcomes import (
    GroupCommitStats,
    GroupOutcomes,
    GroupResources,
    OnCommitted,
)
from adapters.postgres.group_commit.stream_cache import StreamCache
from adapters.postgres.group_commit.unit_of_work import PostgresSession
from adapters.postgres.group_commit.units import (
    BodyUnit,
    StoreClosed,
    Unit,
    Work,
    WorkUnit,
    by_deadline,
    group_deadline,
    inside,
    outside,
    refuse_nested,
)
from adapters.postgres.pool import as_unavailable
from application.store_budget import store_deadline, store_deadline_at
from domain.identifiers import StreamKey


class GroupCommitter:
    """Runs units of work in shared transactions on `connections` pool connections."""

    def __init__(self, pool: asyncpg.Pool, codec: AggregateCodec, cache: StreamCache, *,
                 origin: str, on_committed: OnCommitted, region: str, connections: int = 3,
                 max_group: int = 256, optimistic: bool = True) -> None:
        self._outcomes = GroupOutcomes(cache, on_committed, region)
        shared = GroupResources(pool, codec, cache, self._outcomes, origin, region)
        self._optimistic = OptimisticGroups(shared, max_group)
        self._locked = LockedGroups(shared)
        self._connections = connections
        self._max_group = max_group
        self._queue: deque[Unit] = deque()
        self._arrived = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        self._closed = False
        self.optimistic = optimistic
        """False runs every group under the row lock (for comparisons and fault tests)."""
        self._busy: set[StreamKey] = set()
        self.before_commit: BeforeCommit | None = None
        """Fault-injection seam: awaited after a locked group's writes, before its COMMIT."""

    @property
    def stats(self) -> GroupCommitStats:
        return self._outcomes.stats

    @property
    def waiting(self) -> int:
        """Units of work queued for the next group (for metrics and tests)."""
        return len(self._queue)

    @asynccontextmanager
    async def unit_of_work(self, key: StreamKey) -> AsyncIterator[PostgresSession]:
        self._refuse(key)
        loop = asyncio.get_running_loop()
        unit = BodyUnit(key, loop.create_future(), loop.create_future(), loop.create_future(),
                        deadline=store_deadline())
        self._enqueue(unit)
        try:
            await by_deadline(unit.entered, unit.deadline)
            session = await unit.entered
        except asyncio.CancelledError:
            # Handed a session just as we were cancelled: give it back, or the group waits.
            if unit.entered.done() and not unit.entered.cancelled() \
                    and unit.entered.exception() is None:
                unit.leave(asyncio.CancelledError())
            raise
        token = inside(unit)
        try:
            yield session
        except BaseException as error:
            unit.leave(error)
            unavailable = as_unavailable(error)  # a query of the caller's hit an outage
            if unavailable is not None and unavailable is not error:
                raise unavailable from error
            raise
        finally:
            outside(token)
        unit.leave(None)
        await by_deadline(unit.committed, unit.deadline)
        await unit.committed

    async def run(self, key: StreamKey, work: Work) -> Any:
        """`await work(session)` as a unit of work; its result once committed.

        `work` may be called twice (optimistically, then under the lock): it must act
        on the session only."""
        self._refuse(key)
        unit = WorkUnit(key, work, asyncio.get_running_loop().create_future(),
                        deadline=store_deadline())
        self._enqueue(unit)
        await by_deadline(unit.committed, unit.deadline)
        return await unit.committed

    def _refuse(self, key: StreamKey) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")
        refuse_nested(key)

    def _enqueue(self, unit: Unit) -> None:
        self._queue.append(unit)
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
            self._queue.popleft().fail(StoreClosed("the store is closed"))

    async def _work(self) -> None:
        while True:
            group = self._take()
            if not group:
                self._arrived.clear()
                await self._arrived.wait()
                continue
            keys = {unit.key for unit in group}
            self._busy |= keys
            try:
                with store_deadline_at(group_deadline(group)):
                    await self._run_group(group)
            finally:
                self._busy -= keys
                if self._queue:
                    self._arrived.set()

    async def _run_group(self, group: list[Unit]) -> None:
        if not (self.optimistic and await self._optimistic.run(group)):
            retry = await self._locked.run(group, self.before_commit)
            self._queue.extendleft(reversed(retry))

    def _take(self) -> list[Unit]:
        """The next group: queued units of work, in arrival order, on streams no other
        group of this process holds (those wait in the queue, still in order)."""
        group: list[Unit] = []
        waiting: list[Unit] = []
        while self._queue and len(group) < self._max_group:
            unit = self._queue.popleft()
            if unit.key in self._busy:
                waiting.append(unit)
            elif not unit.abandoned:
                group.append(unit)
        self._queue.extendleft(reversed(waiting))
        return group
