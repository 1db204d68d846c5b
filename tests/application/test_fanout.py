"""The per-process fan-out: a slow reader never blocks a publisher nor loses a record, and
a wait ends at its deadline."""

import asyncio
import gc
import weakref

from adapters.fanout import DEADLINE_SLACK, WAKE_QUEUE_LIMIT, FanoutHub
from application.ports.waking import LiveChunk, Wake
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    RUN,
    append_numbers,
    following,
    key,
    make_stream,
    take_records,
)


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


async def test_a_closing_wake_never_overtakes_a_chunk_pushed_before_it() -> None:
    """ADR 0056: one queue in push order, the collapsed wake where the newest one was."""
    hub = FanoutHub()
    async with hub.subscribe(key(), live=True) as subscription:
        hub.deliver_live(LiveChunk(key(), 1, "before"))
        for head in range(1, WAKE_QUEUE_LIMIT + 1):
            hub.deliver_wake(Wake(key(), head, False, ()))
        hub.deliver_live(LiveChunk(key(), 2, "between"))
        hub.deliver_wake(Wake(key(), WAKE_QUEUE_LIMIT, True, ()))  # collapses the rest
        hub.deliver_live(LiveChunk(key(), 3, "after"))
        signals = [await subscription.next(1.0) for _ in range(4)]
        assert await subscription.next(0.0) is None
    assert signals == [LiveChunk(key(), 1, "before"), LiveChunk(key(), 2, "between"),
                       Wake(key(), WAKE_QUEUE_LIMIT, True, None), LiveChunk(key(), 3, "after")]


async def test_live_chunks_go_only_to_live_subscriptions() -> None:
    hub = FanoutHub()
    async with hub.subscribe(key(), live=True) as live, hub.subscribe(key()) as plain:
        hub.deliver_live(LiveChunk(key(), 1, "x"))
        assert await live.next(1.0) == LiveChunk(key(), 1, "x")
        assert await plain.next(0.0) is None


async def test_a_slow_follow_still_gets_every_record_after_its_queue_overflowed() -> None:
    sim = simulation()
    await make_stream(sim)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        for n in range(1, 3 * WAKE_QUEUE_LIMIT + 1):  # one wake per append, nobody reading
            await append_numbers(sim, n, n)
        expected = list(range(1, 3 * WAKE_QUEUE_LIMIT + 1))
        assert await take_records(frames, len(expected)) == expected
        await append_numbers(sim, len(expected) + 1, len(expected) + 1)
        assert await take_records(frames, 1) == [len(expected) + 1]
    assert sim.ports.store.gaps == []


async def test_a_wait_ends_at_its_own_deadline_whatever_came_before() -> None:
    """Waits share one timer while their deadline stays (a follow's keepalive tick): wakes
    in between neither postpone it nor leave a shorter or longer deadline unserved."""
    loop = asyncio.get_running_loop()
    hub = FanoutHub()
    async with hub.subscribe(key()) as subscription:
        deadline = loop.time() + 0.3
        for head in (1, 2):  # chatter before the deadline: each wait ends with its wake
            loop.call_later(0.05, hub.deliver_wake, Wake(key(), head, False, ()))
            assert await subscription.next(deadline - loop.time()) == Wake(
                key(), head, False, ())
        assert await asyncio.wait_for(subscription.next(deadline - loop.time()), 5) is None
        assert loop.time() >= deadline - DEADLINE_SLACK

        started = loop.time()  # a shorter deadline than the timer's is served at once
        loop.call_later(0.01, hub.deliver_wake, Wake(key(), 3, False, ()))
        assert await subscription.next(10.0) == Wake(key(), 3, False, ())
        assert await asyncio.wait_for(subscription.next(0.05), 5) is None
        assert loop.time() - started < 5

        started = loop.time()  # and a longer one is not cut at the old one
        loop.call_later(0.01, hub.deliver_wake, Wake(key(), 4, False, ()))
        assert await subscription.next(0.05) == Wake(key(), 4, False, ())
        assert await subscription.next(0.4) is None
        assert loop.time() - started >= 0.4 - DEADLINE_SLACK


async def test_an_interrupted_wait_ends_at_once_and_a_closed_one_holds_no_timer() -> None:
    hub = FanoutHub()
    async with hub.subscribe(key()) as subscription:
        asyncio.get_running_loop().call_later(0.01, subscription.interrupt)
        assert await asyncio.wait_for(subscription.next(60.0), 5) is None
        watched = weakref.ref(subscription)
    del subscription
    gc.collect()
    assert watched() is None  # its 60 s timer would have held it
