"""The per-process fan-out: a slow reader never blocks a publisher nor loses a record."""

from adapters.fanout import WAKE_QUEUE_LIMIT, FanoutHub
from adapters.memory.simulation import simulation
from application.ports import LiveChunk, Wake
from tests.application.support import ALICE, RUN, append_numbers, key, make_stream, take_records


async def test_an_overflowing_wake_queue_collapses_into_one_re_read_wake() -> None:
    hub = FanoutHub()
    async with hub.subscribe(key()) as subscription:
        for head in range(1, WAKE_QUEUE_LIMIT + 2):
            hub.deliver_wake(Wake(key(), head, False, ()))
        collapsed = await subscription.next(1.0)
        assert collapsed == Wake(key(), WAKE_QUEUE_LIMIT + 1, False, None)
        assert await subscription.next(0.0) is None


async def test_a_closing_wake_survives_the_collapse() -> None:
    hub = FanoutHub()
    async with hub.subscribe(key()) as subscription:
        hub.deliver_wake(Wake(key(), 1, True, ()))
        for _ in range(WAKE_QUEUE_LIMIT):
            hub.deliver_wake(Wake(key(), 1, False, ()))
        collapsed = await subscription.next(1.0)
        assert isinstance(collapsed, Wake) and collapsed.closed and collapsed.records is None


async def test_live_chunks_go_only_to_live_subscriptions() -> None:
    hub = FanoutHub()
    async with hub.subscribe(key(), live=True) as live, hub.subscribe(key()) as plain:
        hub.deliver_live(LiveChunk(key(), 1, "x"))
        assert await live.next(1.0) == LiveChunk(key(), 1, "x")
        assert await plain.next(0.0) is None


async def test_a_slow_follow_still_gets_every_record_after_its_queue_overflowed() -> None:
    sim = simulation()
    await make_stream(sim)
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    frames = follow.frames()
    try:
        for n in range(1, 3 * WAKE_QUEUE_LIMIT + 1):  # one wake per append, nobody reading
            await append_numbers(sim, n, n)
        expected = list(range(1, 3 * WAKE_QUEUE_LIMIT + 1))
        assert await take_records(frames, len(expected)) == expected
        await append_numbers(sim, len(expected) + 1, len(expected) + 1)
        assert await take_records(frames, 1) == [len(expected) + 1]
    finally:
        await follow.close()
    assert sim.ports.store.gaps == []
