"""A draining node ends every open follow with `EndFrame("shutdown")` at once, without
waiting for a wake or a keepalive tick, and opens no new one; a follow elsewhere from
`last_sequence` loses and repeats nothing (ADR 0029)."""

import asyncio

import pytest

from application.follow_frames import EndFrame, RecordFrame
from application.follower import Follower
from application.node import NodeSettings
from application.ports.errors import NodeDraining
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    RUN,
    append_numbers,
    drain,
    following,
    make_stream,
    take_records,
)


async def test_draining_ends_a_waiting_follow_at_once_and_refuses_new_ones() -> None:
    sim = simulation(node=NodeSettings(keepalive_seconds=3600))
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    frames = follow.frames()
    try:
        assert await take_records(frames, 3) == [1, 2, 3]
        waiting = asyncio.ensure_future(anext(frames))
        await asyncio.sleep(0.05)  # the follow now waits for a wake, an hour's tick away
        assert sim.service.follower.drain() == 1
        assert await asyncio.wait_for(waiting, 5) == EndFrame(3, "shutdown")
        assert await drain(frames) == []
    finally:
        await follow.close()
    assert sim.service.follower.open_follows == 0
    with pytest.raises(NodeDraining):
        await sim.service.follower.open(ALICE, RUN, "s", after=3)


async def test_a_follow_of_a_drained_node_resumes_elsewhere_losing_nothing() -> None:
    sim = simulation(node=NodeSettings(page_size=2))
    await make_stream(sim)
    await append_numbers(sim, 1, 6)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        assert await take_records(frames, 3) == [1, 2, 3]
        sim.service.follower.drain()
        assert await drain(frames) == [EndFrame(3, "shutdown")]
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    # Another node on the same store: a follower of its own, not draining.
    ports = sim.ports
    elsewhere = Follower(ports.store, ports.reader, ports.bus, ports.gaps,
                         NodeSettings(page_size=2), sim.service.follower.slots, sim.ports.clock)
    resumed = await elsewhere.open(ALICE, RUN, "s", after=3)
    try:
        rest = await drain(resumed.frames())
    finally:
        await resumed.close()
    assert [f.record.sequence for f in rest if isinstance(f, RecordFrame)] == [4, 5, 6]
    assert rest[-1] == EndFrame(6, "closed")
