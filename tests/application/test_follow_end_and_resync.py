"""A follow ends once a closed stream is delivered, and resyncs when retention overtakes it."""

from application.follow_frames import EndFrame, RecordFrame, ResyncFrame
from application.node import NodeSettings
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    RUN,
    append_numbers,
    drain,
    following,
    key,
    make_stream,
    next_non_keepalive,
    take_records,
)


async def test_closing_ends_the_follow_after_every_record_was_delivered() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        await append_numbers(sim, 4, 5)
        await sim.service.lifecycle.close(ALICE, RUN, "s")
        assert await take_records(frames, 5) == [1, 2, 3, 4, 5]
        assert await next_non_keepalive(frames) == EndFrame(5)
        assert await drain(frames) == []


async def test_a_follow_caught_up_when_the_stream_closes_ends_at_once() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 2)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        assert await take_records(frames, 2) == [1, 2]
        await sim.service.lifecycle.close(ALICE, RUN, "s")
        assert await next_non_keepalive(frames) == EndFrame(2)


async def test_a_closed_stream_is_served_without_a_wake_registration() -> None:
    sim = simulation(node=NodeSettings(page_size=4))
    await make_stream(sim)
    await append_numbers(sim, 1, 10)
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=3)
    try:
        assert not follow.holds_wake_registration
        assert sim.ports.bus.hub.reader_count == 0
        frames = await drain(follow.frames())
    finally:
        await follow.close()
    assert [f.record.sequence for f in frames if isinstance(f, RecordFrame)] == list(range(4, 11))
    assert frames[-1] == EndFrame(10)


async def test_an_empty_closed_stream_ends_at_once() -> None:
    sim = simulation()
    await make_stream(sim)
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    try:
        assert await drain(follow.frames()) == [EndFrame(0)]
    finally:
        await follow.close()


async def test_retention_overtaking_a_slow_reader_makes_it_resync() -> None:
    sim = simulation(node=NodeSettings(page_size=10))
    await make_stream(sim, retention={"max_records": 5})
    await append_numbers(sim, 1, 30)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        assert await take_records(frames, 4) == [1, 2, 3, 4]
        await sim.service.retention.prune(key())  # keeps 26..30 only
        assert await take_records(frames, 6) == [5, 6, 7, 8, 9, 10]  # the page already read
        assert await next_non_keepalive(frames) == ResyncFrame(requested=10, earliest=26,
                                                               latest=30)
        assert await drain(frames) == []


async def test_a_live_reader_overtaken_by_retention_resyncs_on_the_next_wake() -> None:
    sim = simulation()
    await make_stream(sim, retention={"max_records": 2})
    await append_numbers(sim, 1, 2)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        assert await take_records(frames, 2) == [1, 2]
        # too large to ride its wake, so the reader must re-read, and finds them pruned
        await sim.service.appender.append(ALICE, RUN, "s", [{"payload": "x" * 100}] * 298)
        await sim.service.retention.prune(key())
        frame = await next_non_keepalive(frames)
        assert frame == ResyncFrame(requested=2, earliest=299, latest=300)
