"""The optimistic group: decided on the states this process holds, without the row lock.

No BEGIN, no lock round trip: each `transact()` unit runs on the held state of its
stream, and the whole group is written by ONE autocommit statement that fails
unless every stream is still at the version decided on (`write_statement`). If
another process wrote meanwhile, nothing is written and the group runs again
under the lock (`locked.py`); decisions, credit included, are thus always
made on the state the commit finds current.

Rules:
- a group runs optimistically only if every unit is a `transact()` (a `lock()`
  body may do anything) and every stream's state is held (`StreamCache`);
- a stream that conflicted is contended for `CONTENDED_SECONDS`: its groups run
  under the lock straight away, since deciding on the state held here would
  likely be wasted again;
- the units' own refusals are answered only once the statement confirmed the
  state they were decided on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from adapters.postgres.group_commit.failures import DATABASE_ERRORS, is_conflict
from adapters.postgres.group_commit.outcomes import GroupResources, log
from adapters.postgres.group_commit.unit_of_work import GroupStream, NeedsLock
from adapters.postgres.group_commit.units import StoreClosed, Unit, WorkUnit
from adapters.postgres.group_commit.writes import GroupWrites, write_statement
from adapters.postgres.ids import stream_id
from domain.identifiers import StreamKey

CONTENDED_SECONDS = 1.0
"""After a conflict, a stream's groups run under the row lock for this long: another
process is writing it, so deciding on the state held here would likely be wasted."""


class OptimisticGroups:
    """Runs groups optimistically for one committer, and remembers contended streams."""

    def __init__(self, shared: GroupResources, max_group: int) -> None:
        self._shared = shared
        self._outcomes = shared.outcomes
        self._max_group = max_group
        self._contended: dict[StreamKey, float] = {}

    def _held_streams(self, group: Sequence[Unit]) -> dict[StreamKey, GroupStream] | None:
        """The held states to decide `group` on, or None when it has to run locked."""
        now = time.monotonic()
        streams: dict[StreamKey, GroupStream] = {}
        for unit in group:
            if not isinstance(unit, WorkUnit) or self._contended.get(unit.key, 0.0) > now:
                return None
            if unit.key not in streams:
                row_id = stream_id(unit.key)
                pristine = self._shared.cache.pristine(row_id, self._shared.cache.version(row_id))
                if pristine is None:
                    return None
                streams[unit.key] = GroupStream(unit.key, row_id, pristine, False)
        return streams

    async def run(self, group: Sequence[Unit]) -> bool:
        """Decide and write `group` without the row lock; False when nothing was written
        and the group has to run locked instead."""
        streams = self._held_streams(group)
        if streams is None:
            return False
        work = [unit for unit in group if isinstance(unit, WorkUnit)]
        ran: list[tuple[WorkUnit, BaseException | None]] = []
        writes = GroupWrites()
        try:
            async with self._shared.pool.acquire() as connection:
                for unit in work:
                    if not unit.abandoned:
                        ran.append((unit, await unit.run_and_stage(
                            streams[unit.key], connection, self._shared.codec, optimistic=True)))
                if not ran:
                    return True
                for stream in streams.values():
                    writes.check(stream)
                    writes.add(stream, self._shared.codec, self._shared.origin)
                statement, arguments = write_statement(writes, self._shared.region)
                await connection.execute(statement, *arguments)
        except asyncio.CancelledError:  # the store is closing: whatever was sent, say so
            for queued in group:
                queued.fail(StoreClosed("the store is closed"))
            raise
        except NeedsLock:
            return False
        except DATABASE_ERRORS as error:
            # Running it locked would wait on the same outage; and a fence is not a
            # conflict: the units' own refusals, decided on an unconfirmed state, are
            # fenced too.
            if self._outcomes.answer_outage(group, error) or \
                    self._outcomes.answer_fenced(group, error):
                return True
            if is_conflict(error):
                self._contend(streams)
            else:
                log.warning("optimistic group of %d failed, running it locked: %r",
                            len(group), error)
            return False
        self._outcomes.stats.optimistic_groups += 1
        self._outcomes.publish_commit(group, sum(failure is None for _, failure in ran),
                                      streams.values(), writes)
        for unit, failure in ran:
            if failure is None:
                unit.answer()
            else:
                unit.fail(failure)
        return True

    def _contend(self, streams: dict[StreamKey, GroupStream]) -> None:
        self._outcomes.stats.conflicts += 1
        until = time.monotonic() + CONTENDED_SECONDS
        if len(self._contended) > 4 * self._max_group:
            self._contended.clear()
        self._contended.update(dict.fromkeys(streams, until))
