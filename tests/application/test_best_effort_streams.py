"""A best-effort stream stores nothing: appends go out as live chunks to connected readers."""

import pytest

from application.follow_frames import LiveFrame
from domain.errors import StreamClosed
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import ALICE, RUN, definition, key, next_non_keepalive


async def make_best_effort(sim: Simulation) -> None:
    await sim.service.definitions.create(ALICE, RUN, definition(mode="best_effort"))


async def test_appends_reach_a_connected_reader_as_live_chunks_and_are_not_stored() -> None:
    sim = simulation()
    await make_best_effort(sim)
    follow = await sim.service.follower.open(ALICE, RUN, "s", after=0)
    try:
        result = await sim.service.appender.append(
            ALICE, RUN, "s", [{"payload": {"token": "Hel"}}, {"data": "aGk="}])
        assert (result.published, result.stored, result.sequences) == (2, 0, ())
        frames = follow.frames()
        first = await next_non_keepalive(frames)
        second = await next_non_keepalive(frames)
        assert isinstance(first, LiveFrame) and isinstance(second, LiveFrame)
        assert first.chunk.data == {"token": "Hel"}
        assert second.chunk.data == {"content_type": "application/octet-stream", "data": "aGk="}
        assert first.chunk.seq < second.chunk.seq
    finally:
        await follow.close()
    page = await sim.ports.store.read_page(key(), 0, 10)
    assert (page.records, page.head) == ((), 0)


async def test_an_append_with_no_reader_is_accepted_and_dropped() -> None:
    sim = simulation()
    await make_best_effort(sim)
    result = await sim.service.appender.append(ALICE, RUN, "s", [{"payload": 1}])
    assert result.published == 1
    assert (await sim.ports.store.read_page(key(), 0, 10)).records == ()


async def test_a_closed_best_effort_stream_refuses_appends() -> None:
    sim = simulation()
    await make_best_effort(sim)
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    with pytest.raises(StreamClosed):
        await sim.service.appender.append(ALICE, RUN, "s", [{"payload": 1}])
