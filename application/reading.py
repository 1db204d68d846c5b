"""Use case: read a page of records above an exclusive cursor."""

from __future__ import annotations

from dataclasses import dataclass

from application.access import stream_for_reading, stream_key
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.records import RecordPage, RecordReader
from application.ports.streams import StreamStore
from domain.cursor import check_cursor
from domain.errors import InvalidLimit
from domain.principal import Principal

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


@dataclass(frozen=True)
class ReadResult:
    page: RecordPage
    next_cursor: int


class RecordReading:
    """`after=c` returns records with sequence > c, ascending, without gaps; a cursor beyond
    head is refused and one whose successor was pruned answers `cursor_pruned`."""

    def __init__(self, store: StreamStore, reader: RecordReader, clock: Clock,
                 node: NodeSettings) -> None:
        self._store = store
        self._reader = reader
        self._clock = clock
        self._node = node

    async def read(self, principal: Principal, run_id: str, stream_id: str, after: int,
                   limit: int = DEFAULT_LIMIT) -> ReadResult:
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidLimit(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
        key = stream_key(principal, run_id, stream_id)
        await stream_for_reading(self._store, principal, key, self._node.region, content=True,
                                 now=self._clock.now())
        page = await self._reader.read_page(key, after, limit)
        check_cursor(after, page.earliest, page.head)
        next_cursor = page.records[-1].sequence if page.records else after
        return ReadResult(page, next_cursor)
