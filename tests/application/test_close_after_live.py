"""Close after live (ADR 0056), in the follow loop on the in-memory bus: Hypothesis picks
what happens before the close (live chunks, appends, turns for the readers, pauses past a
keepalive tick) and how slowly each reader takes its frames; every live reader gets every
chunk published before the close, then every record, then `end`, and nothing after."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from application.follow_frames import EndFrame, Frame, KeepaliveFrame, LiveFrame, RecordFrame
from application.node import NodeSettings
from application.ports.waking import LiveChunk, Wake
from application.service import RunnelService
from domain.errors import StreamClosed
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    FRAME_TIMEOUT,
    RUN,
    definition,
    drain,
    following,
    key,
    next_frame,
    quiet_simulation,
)

TICK = 0.002
"""A keepalive interval short enough that ticks (and their re-reads) fall between steps."""

steps = st.lists(st.one_of(
    st.tuples(st.just("live"), st.integers(1, 3)),
    st.tuples(st.just("append"), st.integers(1, 3)),
    st.tuples(st.just("turn"), st.integers(1, 3)),
    st.tuples(st.just("pause"), st.just(1)),
), max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=steps, paces=st.lists(st.integers(0, 3), min_size=1, max_size=3))
def test_every_chunk_published_before_a_close_reaches_every_reader_before_its_end(
        before: list[tuple[str, int]], paces: list[int]) -> None:
    async def scenario() -> None:
        service = simulation(replace(NodeSettings(), keepalive_seconds=TICK)).service
        await close_race(Nodes(service, service, (service,)), RUN, before, paces, TICK * 1.5)

    asyncio.run(scenario())


@dataclass(frozen=True)
class Nodes:
    """Where the chunks are published, where the close is asked for, and where the
    readers follow (one node, or two that share a database)."""

    publisher: RunnelService
    closer: RunnelService
    readers: tuple[RunnelService, ...]
    """The n-th reader follows on `readers[n % len(readers)]`."""


async def close_race(nodes: Nodes, run_id: str, before: list[tuple[str, int]],
                     paces: list[int], pause: float) -> None:
    await nodes.closer.definitions.create(ALICE, run_id, definition())
    follows = [await nodes.readers[n % len(nodes.readers)].follower.open(
        ALICE, run_id, "s", after=0, live=True) for n in range(len(paces))]
    readers = [asyncio.create_task(read_all(follow.frames(), pace))
               for follow, pace in zip(follows, paces, strict=True)]
    published: list[str] = []
    appended = 0
    try:
        for action, n in before:
            if action == "live":
                chunks = [f"c{len(published) + i}" for i in range(n)]
                await nodes.publisher.live.publish(ALICE, run_id, "s", chunks)
                published += chunks
            elif action == "append":
                await nodes.publisher.appender.append(
                    ALICE, run_id, "s", [{"payload": appended + i} for i in range(n)])
                appended += n
            elif action == "turn":
                for _ in range(n):
                    await asyncio.sleep(0)
            else:
                await asyncio.sleep(pause)
        await nodes.closer.lifecycle.close(ALICE, run_id, "s")
        with pytest.raises(StreamClosed):
            await nodes.publisher.live.publish(ALICE, run_id, "s", ["after the close"])
        seen = await asyncio.wait_for(asyncio.gather(*readers), FRAME_TIMEOUT)
    finally:
        for follow in follows:
            await follow.close()
    for frames in seen:
        assert [frame.chunk.data for frame in frames if isinstance(frame, LiveFrame)] == published
        assert [frame.record.sequence for frame in frames if isinstance(frame, RecordFrame)] \
            == list(range(1, appended + 1))
        assert frames[-1] == EndFrame(appended)


async def read_all(frames: AsyncIterator[Frame], pace: int) -> list[Frame]:
    """A reader that lets `pace` other turns run after each frame it takes."""
    taken = []
    async for frame in frames:
        taken.append(frame)
        for _ in range(pace):
            await asyncio.sleep(0)
    return taken


async def test_a_reader_late_to_its_queue_gets_the_chunks_before_the_end_of_a_lost_close() -> None:
    """The closing wake is lost (nobody rings) and the reader comes back only after several
    ticks were due: the close is learnt from a read, yet every queued chunk is served, and
    the backstop ends the follow only at a tick with nothing queued, an interval later."""
    quiet = quiet_simulation(NodeSettings(keepalive_seconds=0.05))
    await quiet.service.definitions.create(ALICE, RUN, definition())
    async with following(quiet.service, ALICE, RUN, "s", after=0, live=True) as frames:
        assert isinstance(await next_frame(frames), KeepaliveFrame)
        for seq in (1, 2, 3):
            quiet.reader_bus.hub.deliver_live(LiveChunk(key(), seq, f"c{seq}"))
        await quiet.service.lifecycle.close(ALICE, RUN, "s")
        await asyncio.sleep(0.2)  # four ticks due before the reader takes its next frame
        rest = await drain(frames)
    assert quiet.reader_bus.published_wakes == 0
    assert [frame.chunk.data for frame in rest if isinstance(frame, LiveFrame)] == [
        "c1", "c2", "c3"]
    assert rest[-1] == EndFrame(0)


async def test_a_close_learnt_from_a_read_waits_for_its_wake_and_the_chunks_before_it() -> None:
    """On Postgres a chunk committed before the close can still be on its way through the
    listener when a read already shows the stream closed: the follow keeps waiting for the
    closing wake, and serves what comes before it."""
    quiet = quiet_simulation(NodeSettings(keepalive_seconds=1.0))
    await quiet.service.definitions.create(ALICE, RUN, definition())
    async with following(quiet.service, ALICE, RUN, "s", after=0, live=True) as frames:
        await quiet.service.lifecycle.close(ALICE, RUN, "s")
        assert isinstance(await next_frame(frames), KeepaliveFrame)
        pending = asyncio.create_task(anext(frames))  # the tick's read shows the close
        for _ in range(10):
            await asyncio.sleep(0)
        assert not pending.done()
        quiet.reader_bus.hub.deliver_live(LiveChunk(key(), 1, "in flight"))
        quiet.reader_bus.hub.deliver_wake(Wake(key(), 0, True, ()))
        first = await asyncio.wait_for(pending, FRAME_TIMEOUT)
        rest = await drain(frames)
    assert isinstance(first, LiveFrame) and first.chunk.data == "in flight"
    assert rest == [EndFrame(0)]


async def test_a_live_follow_opened_on_a_closed_stream_ends_at_once() -> None:
    """A reader that opens once the close has committed was not connected before it: it
    gets the records and `end` without waiting a keepalive interval for a closing wake
    that went out before it subscribed."""
    service = simulation(NodeSettings(keepalive_seconds=30.0)).service
    await service.definitions.create(ALICE, RUN, definition())
    await service.lifecycle.close(ALICE, RUN, "s")
    follow = await service.follower.open(ALICE, RUN, "s", after=0, live=True)
    try:
        async with asyncio.timeout(5):
            frames = [frame async for frame in follow.frames()]
    finally:
        await follow.close()
    assert isinstance(frames[-1], EndFrame) and frames[-1].reason == "closed"
