"""Readers woken together share one page read, and sharing never hides a commit."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from application.ports.records import RecordPage
from domain.errors import NotFound
from domain.identifiers import StreamKey
from entrypoints.composition.read_coalescing import CoalescingRecordReader

KEY = StreamKey("t", "run", "s")


class CountingReader:
    """A store whose head moves when told; records nothing but the head."""

    def __init__(self) -> None:
        self.head = 0
        self.queries = 0
        self.fail: Exception | None = None

    async def read_page(self, key: StreamKey, after: int, limit: int) -> RecordPage:
        self.queries += 1
        head = self.head  # the snapshot is taken when the query starts
        await asyncio.sleep(0)
        if self.fail is not None:
            raise self.fail
        return RecordPage((), head, 1, False)

    async def newest_appended_before(self, key: StreamKey, cutoff: datetime) -> int:
        return 0


async def test_identical_reads_of_one_loop_iteration_are_one_query() -> None:
    inner = CountingReader()
    reader = CoalescingRecordReader(inner)
    pages = await asyncio.gather(*(reader.read_page(KEY, 5, 256) for _ in range(50)),
                                 reader.read_page(KEY, 6, 256))
    assert inner.queries == 2
    assert len({id(page) for page in pages[:50]}) == 1


async def test_a_read_asked_after_a_query_started_gets_a_query_of_its_own() -> None:
    inner = CountingReader()
    reader = CoalescingRecordReader(inner)
    first = asyncio.ensure_future(reader.read_page(KEY, 0, 256))
    for _ in range(3):  # the caller asks, the query is issued, the query runs: head 0
        await asyncio.sleep(0)
    assert inner.queries == 1
    inner.head = 1  # a commit lands; a reader woken by it now asks
    second = await reader.read_page(KEY, 0, 256)
    assert (await first).head == 0
    assert second.head == 1
    assert inner.queries == 2


async def test_a_failure_reaches_every_caller_and_a_cancelled_caller_hurts_no_one() -> None:
    inner = CountingReader()
    inner.fail = NotFound("stream not found")
    reader = CoalescingRecordReader(inner)
    results = await asyncio.gather(reader.read_page(KEY, 0, 1), reader.read_page(KEY, 0, 1),
                                   return_exceptions=True)
    assert all(isinstance(result, NotFound) for result in results)

    inner.fail = None
    leaving = asyncio.ensure_future(reader.read_page(KEY, 0, 1))
    staying = asyncio.ensure_future(reader.read_page(KEY, 0, 1))
    await asyncio.sleep(0)
    leaving.cancel()
    assert (await staying).head == 0
    with pytest.raises(asyncio.CancelledError):
        await leaving
