"""The locked group: one transaction that holds the row lock of every stream it writes.

Rules:
- all its stream rows are locked in one `SELECT … ORDER BY id FOR UPDATE`, so two
  groups (of this or another process) always lock in the same order and cannot
  deadlock each other; a row's snapshot travels only when this process does not
  hold that version already;
- its units run one at a time, in arrival order, each on the group's live
  aggregate; a failing one is rolled back in memory only (`reject`), the others
  still commit;
- the whole group is written by one statement, then one COMMIT; no unit is answered
  before that, so nothing is acknowledged before it is durable;
- if the transaction fails, every unit accepted in it fails with the error (nothing
  of theirs is stored), and units not yet started go to the next group, at most
  `MAX_GROUP_ATTEMPTS` times.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

import asyncpg

from adapters.postgres.group_commit.failures import DATABASE_ERRORS, GroupPoisoned
from adapters.postgres.group_commit.outcomes import GroupResources, log
from adapters.postgres.group_commit.unit_of_work import GroupStream
from adapters.postgres.group_commit.units import BodyUnit, StoreClosed, Unit, WorkUnit
from adapters.postgres.group_commit.writes import GroupWrites, write_statement
from adapters.postgres.ids import stream_id
from adapters.postgres.pool import as_unavailable
from adapters.postgres.stream_rows import ROW_COLUMNS, legacy_columns, stream_from_row
from domain.errors import NotFound
from domain.identifiers import StreamKey

MAX_GROUP_ATTEMPTS = 3

BeforeCommit = Callable[[], Awaitable[None]]

_LOCK_STREAMS = f"""
SELECT s.id, s.tenant, s.run_id, s.stream_id, s.version, s.snapshot_topic,
       CASE WHEN s.version = known.version THEN NULL ELSE s.snapshot END AS snapshot,
       CASE WHEN s.version = known.version THEN NULL ELSE s.definition END AS definition,
       {legacy_columns("s.version = known.version")},
       EXISTS (SELECT 1 FROM erased_runs AS e
               WHERE e.tenant = s.tenant AND e.run_id = s.run_id) AS run_erased
FROM streams AS s JOIN unnest($1::uuid[], $2::int4[]) AS known(id, version) ON s.id = known.id
ORDER BY s.id FOR UPDATE OF s
"""

_SNAPSHOT = f"SELECT {ROW_COLUMNS} FROM streams AS s WHERE s.id = $1"


class LockedGroups:
    """Runs groups under the row lock for one committer."""

    def __init__(self, shared: GroupResources) -> None:
        self._shared = shared
        self._outcomes = shared.outcomes

    async def run(self, group: Sequence[Unit], before_commit: BeforeCommit | None
                  ) -> list[Unit]:
        """Run `group` in one transaction; the units to run again in the next group (they
        did not start before the transaction failed). `before_commit` is awaited after
        the group's writes, before its COMMIT (a fault-injection seam)."""
        accepted: list[Unit] = []
        pending = deque(group)
        locked: dict[StreamKey, GroupStream] = {}
        try:
            async with self._shared.pool.acquire() as connection, connection.transaction():
                locked = await self._lock(connection, group)
                while pending:
                    unit = pending.popleft()
                    if await self._run_one(unit, locked, connection):
                        accepted.append(unit)
                writes = GroupWrites()
                for stream in locked.values():
                    writes.add(stream, self._shared.codec, self._shared.origin)
                if writes.wakes:
                    statement, arguments = write_statement(writes, self._shared.region)
                    await connection.execute(statement, *arguments)
                if before_commit is not None:
                    await before_commit()
        except asyncio.CancelledError:
            for unit in group:
                unit.fail(StoreClosed("the store is closed"))
            raise
        except Exception as error:
            cause = error.error if isinstance(error, GroupPoisoned) else error
            return self._failed(group, accepted, pending, cause)
        self._outcomes.publish_commit(group, len(accepted), locked.values(), writes)
        for unit in accepted:
            unit.answer()
        return []

    def _failed(self, group: Sequence[Unit], accepted: list[Unit], pending: deque[Unit],
                error: BaseException) -> list[Unit]:
        """The transaction failed: answer what it accepted, and hand back what did not
        start unless the database keeps failing it."""
        if self._outcomes.answer_fenced(group, error) or \
                self._outcomes.answer_outage(group, error):
            return []
        cause = as_unavailable(error) or error
        self._outcomes.stats.failed_groups += 1
        log.warning("group of %d units of work failed: %r", len(group), cause)
        for unit in accepted:
            unit.fail(cause)
        # Units of work that never started lose nothing: they go to the next group,
        # unless the database keeps failing them.
        retry: list[Unit] = []
        for unit in pending:
            unit.attempts += 1
            if unit.attempts >= MAX_GROUP_ATTEMPTS:
                unit.fail(cause)
            else:
                retry.append(unit)
        return retry

    async def _lock(self, connection: asyncpg.Connection, group: Sequence[Unit]
                    ) -> dict[StreamKey, GroupStream]:
        ids = sorted({stream_id(unit.key) for unit in group})
        rows = await connection.fetch(_LOCK_STREAMS, ids,
                                      [self._shared.cache.version(row_id) for row_id in ids])
        locked: dict[StreamKey, GroupStream] = {}
        for row in rows:
            key = StreamKey(row["tenant"], row["run_id"], row["stream_id"])
            row_id, version = row["id"], row["version"]
            pristine = self._shared.cache.pristine(row_id, version)
            if row["snapshot"] is not None or pristine is None:
                stored = row if row["snapshot"] is not None else \
                    await connection.fetchrow(_SNAPSHOT, row_id)  # evicted meanwhile
                pristine = stream_from_row(self._shared.codec, row_id, version, stored)
                self._shared.cache.remember(pristine)
            locked[key] = GroupStream(key, row_id, pristine, row["run_erased"])
        return locked

    async def _run_one(self, unit: Unit, locked: dict[StreamKey, GroupStream],
                       connection: asyncpg.Connection) -> bool:
        """Run one unit of work under the lock; True when it was accepted. A database
        error poisons the whole transaction (`GroupPoisoned`)."""
        if unit.abandoned:  # cancelled while queued
            return False
        stream = locked.get(unit.key)
        if stream is None:
            unit.fail(NotFound("stream not found"))
            return False
        match unit:
            case WorkUnit():
                try:
                    failure = await unit.run_and_stage(stream, connection, self._shared.codec,
                                                       optimistic=False)
                except DATABASE_ERRORS as error:
                    unit.fail(as_unavailable(error) or error)
                    raise GroupPoisoned(error) from error
                if failure is not None:  # decided under the lock: final
                    unit.fail(failure)
            case BodyUnit():
                # The body raised in its caller's task, which answers its caller.
                failure = await unit.run_and_stage(stream, connection, self._shared.codec)
                if isinstance(failure, DATABASE_ERRORS):
                    raise GroupPoisoned(failure) from failure
        return failure is None
