"""Following: register, backfill in pages of at most 256, then follow live; nothing lost."""

from datetime import datetime

from dependency_injector import providers

from application.node import NodeSettings
from application.ports.records import RecordPage, RecordReader
from domain.identifiers import StreamKey
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    RUN,
    append_numbers,
    definition,
    following,
    make_stream,
    take_records,
)


class PageCountingReader:
    """The store's reader, remembering how many rows each read asked for and got."""

    def __init__(self, inner: RecordReader) -> None:
        self._inner = inner
        self.reads: list[tuple[int, int]] = []

    async def read_page(self, key: StreamKey, after: int, limit: int) -> RecordPage:
        page = await self._inner.read_page(key, after, limit)
        self.reads.append((limit, len(page.records)))
        return page

    async def newest_appended_before(self, key: StreamKey, cutoff: datetime) -> int:
        return await self._inner.newest_appended_before(key, cutoff)


async def test_history_is_backfilled_in_pages_of_at_most_256() -> None:
    sim = simulation()
    store = PageCountingReader(sim.ports.reader)
    sim.container.reader.override(providers.Object(store))
    service = sim.service
    await service.definitions.create(ALICE, RUN, definition())
    await service.appender.append(ALICE, RUN, "s", [{"payload": n} for n in range(600)])
    follow = await service.follower.open(ALICE, RUN, "s", after=0)
    try:
        assert await take_records(follow.frames(), 600) == list(range(1, 601))
    finally:
        await follow.close()
    assert all(limit <= 256 for limit, _ in store.reads)
    assert [got for _, got in store.reads][:3] == [256, 256, 88]


async def test_a_follow_resumes_after_its_cursor() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 10)
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=7)
    try:
        assert await take_records(follow.frames(), 3) == [8, 9, 10]
    finally:
        await follow.close()


async def test_records_appended_after_subscribing_arrive_live_in_order() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 2)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        assert await take_records(frames, 2) == [1, 2]
        await append_numbers(sim, 3, 4)
        await append_numbers(sim, 5, 5)
        assert await take_records(frames, 3) == [3, 4, 5]


async def test_records_committed_between_registration_and_backfill_are_not_lost() -> None:
    sim = simulation(node=NodeSettings(page_size=10))
    await make_stream(sim)
    await append_numbers(sim, 1, 25)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:  # first page: 1..10
        await append_numbers(sim, 26, 27)  # its wake now overlaps what the backfill will read
        assert await take_records(frames, 27) == list(range(1, 28))
        await append_numbers(sim, 28, 28)
        assert await take_records(frames, 1) == [28]  # nothing repeated from the overlap
    assert sim.ports.store.gaps == []
