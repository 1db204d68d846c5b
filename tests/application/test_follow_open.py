"""Opening a follow: refusals come before any frame; registrations are capped and released."""

import pytest

from adapters.memory.simulation import simulation
from application.node import NodeSettings
from domain.errors import CursorPruned, EgressDenied, FutureCursor, TooManySubscriptions
from tests.application.support import ALICE, BOB, RUN, append_numbers, key, make_stream


async def test_a_cursor_beyond_head_is_refused_before_any_frame() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    with pytest.raises(FutureCursor):
        await sim.service.follower.open(ALICE, RUN, "s", after=4)
    assert sim.bus.hub.reader_count == 0


async def test_a_pruned_cursor_is_refused_before_any_frame() -> None:
    sim = simulation()
    await make_stream(sim, retention={"max_records": 2})
    await append_numbers(sim, 1, 5)
    await sim.service.retention.prune(key())
    with pytest.raises(CursorPruned) as refused:
        await sim.service.follower.open(ALICE, RUN, "s", after=1)
    assert (refused.value.requested, refused.value.earliest, refused.value.latest) == (1, 4, 5)
    assert sim.bus.hub.reader_count == 0
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
    assert sim.bus.hub.reader_count == 3
    for follow in follows:
        await follow.close()
    assert sim.bus.hub.reader_count == 0
    assert not follows[0].holds_wake_registration
    assert not sim.bus.hub.has_readers(key())
