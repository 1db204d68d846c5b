"""Following when wakes are duplicated or lost: drop what was seen, read what was missed."""

import asyncio
import itertools

from application.follow_frames import Frame, KeepaliveFrame, LiveFrame, RecordFrame
from application.node import NodeSettings
from application.ports.waking import LiveChunk, Wake
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    FRAME_TIMEOUT,
    RUN,
    append_numbers,
    definition,
    following,
    key,
    make_stream,
    next_frame,
    quiet_simulation,
    take_records,
)

QUICK = NodeSettings(keepalive_seconds=0.05)


async def test_a_wake_carrying_records_the_reader_already_has_is_dropped() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        assert await take_records(frames, 3) == [1, 2, 3]
        seen = (await sim.ports.store.read_page(key(), 1, 10)).records
        sim.ports.bus.hub.deliver_wake(Wake(key(), 3, False, tuple(seen)))
        await append_numbers(sim, 4, 4)
        assert await take_records(frames, 1) == [4]
    assert sim.ports.store.gaps == []


async def test_a_wake_that_reveals_a_gap_is_served_by_reading_the_gap_first() -> None:
    quiet = quiet_simulation(NodeSettings())
    service = quiet.service
    await service.definitions.create(ALICE, RUN, definition())
    await service.appender.append(ALICE, RUN, "s", [{"payload": n} for n in (1, 2)])
    async with following(service, ALICE, RUN, "s", after=0) as frames:
        assert await take_records(frames, 2) == [1, 2]
        # 3..5 are committed but their wakes are lost; then a wake carrying only 6 arrives.
        await service.appender.append(ALICE, RUN, "s", [{"payload": n} for n in (3, 4, 5)])
        await service.appender.append(ALICE, RUN, "s", [{"payload": 6}])
        newest = (await quiet.store.read_page(key(), 5, 10)).records
        quiet.reader_bus.hub.deliver_wake(Wake(key(), 6, False, tuple(newest)))
        assert await take_records(frames, 4) == [3, 4, 5, 6]
        await service.appender.append(ALICE, RUN, "s", [{"payload": 7}])
        seven = (await quiet.store.read_page(key(), 6, 10)).records
        quiet.reader_bus.hub.deliver_wake(Wake(key(), 7, False, tuple(seven)))
        assert await take_records(frames, 1) == [7]
    assert quiet.store.gaps == [(key(), 3, 6)]


async def test_a_wake_without_records_makes_the_reader_re_read_from_its_cursor() -> None:
    quiet = quiet_simulation(NodeSettings())
    await quiet.service.definitions.create(ALICE, RUN, definition())
    async with following(quiet.service, ALICE, RUN, "s", after=0) as frames:
        await quiet.service.appender.append(ALICE, RUN, "s", [{"payload": n} for n in (1, 2)])
        quiet.reader_bus.hub.deliver_wake(Wake(key(), 2, False, None))
        assert await take_records(frames, 2) == [1, 2]
    assert quiet.store.gaps == []


async def test_an_idle_follow_yields_keepalives() -> None:
    sim = simulation(node=QUICK)
    await make_stream(sim)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        assert isinstance(await next_frame(frames), KeepaliveFrame)
        assert isinstance(await next_frame(frames), KeepaliveFrame)


async def test_every_keepalive_tick_reads_even_when_no_wake_ever_comes() -> None:
    quiet = quiet_simulation(QUICK)
    await quiet.service.definitions.create(ALICE, RUN, definition())
    follow = await quiet.service.follower.open(ALICE, RUN, "s", after=0)
    frames = follow.frames()
    seen: list[Frame] = []

    async def until_record() -> None:
        while not any(isinstance(frame, RecordFrame) for frame in seen):
            seen.append(await anext(frames))

    try:
        assert isinstance(await next_frame(frames), KeepaliveFrame)
        await quiet.service.appender.append(ALICE, RUN, "s", [{"payload": "silent"}])
        await asyncio.wait_for(until_record(), FRAME_TIMEOUT)
    finally:
        await follow.close()
    assert quiet.reader_bus.published_wakes == 0
    record = seen[-1]
    assert isinstance(record, RecordFrame) and record.record.payload == "silent"
    assert all(isinstance(frame, KeepaliveFrame) for frame in seen[:-1])


async def test_a_lost_wake_is_repaired_within_a_tick_however_steady_the_live_chunks() -> None:
    """The backstop re-read keeps its own cadence: live chunks arriving faster than the
    keepalive interval must not postpone it, or a record whose wake was lost would wait
    until the chatter stops."""
    quiet = quiet_simulation(QUICK)
    await quiet.service.definitions.create(ALICE, RUN, definition())
    follow = await quiet.service.follower.open(ALICE, RUN, "s", after=0, live=True)
    frames = follow.frames()
    seen: list[Frame] = []

    async def chatter() -> None:
        for seq in itertools.count(1):
            quiet.reader_bus.hub.deliver_live(LiveChunk(key(), seq, {"token": seq}))
            await asyncio.sleep(QUICK.keepalive_seconds / 5)

    async def until_record() -> None:
        while not any(isinstance(frame, RecordFrame) for frame in seen):
            seen.append(await anext(frames))

    pump = asyncio.create_task(chatter())
    try:
        await quiet.service.appender.append(ALICE, RUN, "s", [{"payload": "lost"}])
        # Twenty keepalive intervals of uninterrupted chatter: far more than one tick needs.
        await asyncio.wait_for(until_record(), 20 * QUICK.keepalive_seconds)
    finally:
        pump.cancel()
        await follow.close()
    assert quiet.reader_bus.published_wakes == 0
    record = seen[-1]
    assert isinstance(record, RecordFrame) and record.record.payload == "lost"
    assert any(isinstance(frame, LiveFrame) for frame in seen)
