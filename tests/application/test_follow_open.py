"""Opening a follow: it registers for wakes before it reads history; refusals come before
any frame; registrations are capped and released."""

from collections.abc import Awaitable, Callable
from datetime import datetime

import pytest
from dependency_injector import providers

from adapters.memory.clock import FakeClock
from adapters.memory.subscription_leases import MemorySubscriptionLeases
from application.node import NodeSettings
from application.ports.records import RecordPage, RecordReader
from application.subscription_slots import SubscriptionSlots
from domain.errors import CursorPruned, EgressDenied, FutureCursor, TooManySubscriptions
from domain.identifiers import StreamKey
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    BOB,
    RUN,
    append_numbers,
    definition,
    key,
    make_stream,
    take_records,
)

NO_KEEPALIVE = NodeSettings(keepalive_seconds=3600.0)
"""A tick no test waits for: only a wake can bring a new record in time."""


class CommitAfterFirstRead:
    """The store's reader, with a producer that commits once right after the first read
    returns: the window between reading history and whatever the follow does next."""

    def __init__(self, store: RecordReader) -> None:
        self._store = store
        self.after_first_read: Callable[[], Awaitable[object]] | None = None

    async def read_page(self, key: StreamKey, after: int, limit: int) -> RecordPage:
        page = await self._store.read_page(key, after, limit)
        commit, self.after_first_read = self.after_first_read, None
        if commit is not None:
            await commit()
        return page

    async def newest_appended_before(self, key: StreamKey, cutoff: datetime) -> int:
        return await self._store.newest_appended_before(key, cutoff)


async def test_a_cursor_beyond_head_is_refused_before_any_frame() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    with pytest.raises(FutureCursor):
        await sim.service.follower.open(ALICE, RUN, "s", after=4)
    assert sim.ports.bus.hub.reader_count == 0


async def test_a_pruned_cursor_is_refused_before_any_frame() -> None:
    sim = simulation()
    await make_stream(sim, retention={"max_records": 2})
    await append_numbers(sim, 1, 5)
    await sim.service.retention.prune(key())
    with pytest.raises(CursorPruned) as refused:
        await sim.service.follower.open(ALICE, RUN, "s", after=1)
    assert (refused.value.requested, refused.value.earliest, refused.value.latest) == (1, 4, 5)
    assert sim.ports.bus.hub.reader_count == 0
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=3)
    await follow.close()


async def test_following_obeys_the_egress_pins() -> None:
    sim = simulation()
    await make_stream(sim, placement={"metadata_home": "local", "client_egress_regions": ["eu"]})
    with pytest.raises(EgressDenied):
        await sim.service.follower.open(ALICE, RUN, "s", after=0)


async def test_concurrent_follows_are_capped_per_principal() -> None:
    sim = simulation(node=NodeSettings(max_subscriptions_per_principal=2))
    await make_stream(sim)
    first = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    second = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    with pytest.raises(TooManySubscriptions):
        await sim.service.follower.open(ALICE, RUN, "s", after=0)
    bobs = await sim.service.follower.open(BOB, RUN, "s", after=0)
    await first.close()
    third = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    for follow in (second, bobs, third):
        await follow.close()


async def test_refused_opens_do_not_use_up_the_cap() -> None:
    sim = simulation(node=NodeSettings(max_subscriptions_per_principal=1))
    await make_stream(sim)
    for _ in range(3):
        with pytest.raises(FutureCursor):
            await sim.service.follower.open(ALICE, RUN, "s", after=9)
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    await follow.close()


async def test_close_releases_the_wake_registration() -> None:
    sim = simulation()
    await make_stream(sim)
    follows = [await sim.service.follower.open(ALICE, RUN, "s", after=0) for _ in range(3)]
    assert all(follow.holds_wake_registration for follow in follows)
    assert sim.ports.bus.hub.reader_count == 3
    for follow in follows:
        await follow.close()
    assert sim.ports.bus.hub.reader_count == 0
    assert not follows[0].holds_wake_registration
    assert not sim.ports.bus.hub.has_readers(key())


async def test_a_record_committed_just_after_the_history_read_arrives_by_its_wake() -> None:
    """SPEC §4.1: the registration comes before the backfill read. Registered after it, the
    wake of a record committed in between rings for nobody and the record waits for the
    keepalive tick (here an hour)."""
    sim = simulation(NO_KEEPALIVE)
    reader = CommitAfterFirstRead(sim.ports.reader)
    sim.container.reader.override(providers.Object(reader))
    service = sim.service
    await service.definitions.create(ALICE, RUN, definition())
    await service.appender.append(ALICE, RUN, "s", [{"payload": 1}, {"payload": 2}])
    reader.after_first_read = lambda: service.appender.append(ALICE, RUN, "s", [{"payload": 3}])
    follow = await service.follower.open(ALICE, RUN, "s", after=0)
    try:
        assert reader.after_first_read is None  # the record was committed inside the window
        assert await take_records(follow.frames(), 3) == [1, 2, 3]
    finally:
        await follow.close()


async def test_a_follow_of_a_closed_stream_holds_its_slot_until_it_closes() -> None:
    """The backfill of a closed stream gives its wake registration back at once, and
    nothing else: the follow still counts against the cap while it serves the history."""
    sim = simulation(node=NodeSettings(max_subscriptions_per_principal=1))
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    try:
        assert not follow.holds_wake_registration
        assert sim.ports.bus.hub.reader_count == 0
        with pytest.raises(TooManySubscriptions):
            await sim.service.follower.open(ALICE, RUN, "s", after=0)
        assert await take_records(follow.frames(), 3) == [1, 2, 3]
    finally:
        await follow.close()
    again = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    await again.close()


async def test_slots_are_renewed_while_held_and_a_dead_nodes_slots_lapse() -> None:
    """Two nodes on one lease store: a slot lives as long as its node renews it; a node
    that stops renewing (crashed) loses its slots once their lease has run out."""
    node = NodeSettings(max_subscriptions_per_principal=1, subscription_lease_seconds=30.0)
    leases = MemorySubscriptionLeases()
    clock = FakeClock()
    node_a = SubscriptionSlots(leases, clock, node)
    node_b = SubscriptionSlots(leases, clock, node)
    held = await node_a.take(ALICE)
    clock.advance(20)
    await node_a.renew_once()
    clock.advance(20)
    with pytest.raises(TooManySubscriptions):
        await node_b.take(ALICE)
    # Node A dies here: nobody renews or releases its slot.
    clock.advance(10)
    taken = await node_b.take(ALICE)
    await node_b.release(taken)
    await node_a.close()
    assert leases.live(ALICE.tenant, ALICE.sub, clock.now()) == 0
    assert held not in await leases.renew([held], clock.now(), 30.0)
