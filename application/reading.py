"""Use case: read a page of records above an exclusive cursor, waiting for one if asked."""

from __future__ import annotations

import math
from dataclasses import dataclass

from application.access import stream_for_reading, stream_key
from application.follower import Follower
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.records import RecordPage, RecordReader
from application.ports.streams import StreamStore
from domain.cursor import check_cursor
from domain.errors import InvalidLimit, InvalidWait
from domain.principal import Principal

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_WAIT_SECONDS = 30.0
"""The longest a read waits for a record (docs/adr/0076)."""


@dataclass(frozen=True)
class ReadResult:
    page: RecordPage
    next_cursor: int


class RecordReading:
    """`after=c` returns records with sequence > c, ascending, without gaps; a cursor beyond
    head is refused and one whose successor was pruned answers `cursor_pruned`.

    Rules of a long-poll (`wait` seconds, at most `MAX_WAIT_SECONDS`): a page that has
    records, or a closed stream, answers at once; otherwise the read waits for a record
    or the close, through a follow of the stream (`Follower.wait_beyond`: registered for
    wakes before it reads, no database connection held while it waits, one of the
    principal's subscription slots held, ended by a drain), then reads and answers, with
    records or, after `wait`, without. The answer after a wait is guarded again: a stream
    deleted or expired meanwhile is not found."""

    def __init__(self, store: StreamStore, reader: RecordReader, clock: Clock,
                 node: NodeSettings, follower: Follower) -> None:
        self._store = store
        self._reader = reader
        self._clock = clock
        self._node = node
        self._follower = follower

    async def read(self, principal: Principal, run_id: str, stream_id: str, after: int,
                   limit: int = DEFAULT_LIMIT, wait: float = 0.0) -> ReadResult:
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidLimit(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
        if not (math.isfinite(wait) and 0 <= wait <= MAX_WAIT_SECONDS):
            raise InvalidWait(f"wait must be a number of seconds from 0 to "
                              f"{MAX_WAIT_SECONDS:g}", field="wait")
        result = await self._read(principal, run_id, stream_id, after, limit)
        if wait == 0 or result.page.records or result.page.closed:
            return result
        await self._follower.wait_beyond(principal, run_id, stream_id, after, wait)
        return await self._read(principal, run_id, stream_id, after, limit)

    async def _read(self, principal: Principal, run_id: str, stream_id: str, after: int,
                    limit: int) -> ReadResult:
        key = stream_key(principal, run_id, stream_id)
        await stream_for_reading(self._store, principal, key, self._node.region, content=True,
                                 now=self._clock.now())
        page = await self._reader.read_page(key, after, limit)
        check_cursor(after, page.earliest, page.head)
        next_cursor = page.records[-1].sequence if page.records else after
        return ReadResult(page, next_cursor)
