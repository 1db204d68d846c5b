"""A read with `wait` answers at once when it has something to answer, and otherwise waits
for a record or the close through a follow, holding a subscription slot (docs/adr/0076)."""

import asyncio
import math

import pytest

from application.node import NodeSettings
from application.reading import MAX_WAIT_SECONDS, ReadResult
from domain.errors import InvalidWait, NotFound, TooManySubscriptions
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    FRAME_TIMEOUT,
    RUN,
    append_numbers,
    following,
    make_stream,
)


async def waiting(sim: Simulation, after: int, wait: float = MAX_WAIT_SECONDS
                  ) -> asyncio.Task[ReadResult]:
    """A read with `wait` started, returned once it waits (its follow is open)."""
    task = asyncio.create_task(sim.service.reading.read(ALICE, RUN, "s", after, wait=wait))
    async with asyncio.timeout(FRAME_TIMEOUT):
        while sim.service.follower.open_follows == 0:
            assert not task.done(), task.result()
            await asyncio.sleep(0)
    return task


def payloads(result: ReadResult) -> list[object]:
    return [record.payload for record in result.page.records]


async def test_records_above_the_cursor_or_a_closed_stream_answer_at_once() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 2)
    result = await sim.service.reading.read(ALICE, RUN, "s", 1, wait=MAX_WAIT_SECONDS)
    assert payloads(result) == [2]
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    caught_up = await sim.service.reading.read(ALICE, RUN, "s", 2, wait=MAX_WAIT_SECONDS)
    assert (payloads(caught_up), caught_up.page.closed) == ([], True)
    assert sim.service.follower.open_follows == 0


async def test_a_waiting_read_answers_with_the_record_appended_meanwhile() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 1)
    task = await waiting(sim, after=1)
    await append_numbers(sim, 2, 3)
    result = await asyncio.wait_for(task, FRAME_TIMEOUT)
    assert payloads(result) == [2, 3]
    assert result.next_cursor == 3
    assert sim.service.follower.open_follows == 0  # its follow and slot are given back


async def test_a_waiting_read_answers_the_close() -> None:
    sim = simulation()
    await make_stream(sim)
    task = await waiting(sim, after=0)
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    result = await asyncio.wait_for(task, FRAME_TIMEOUT)
    assert (payloads(result), result.page.closed, result.next_cursor) == ([], True, 0)


async def test_a_wait_that_sees_nothing_answers_an_empty_page_after_its_seconds() -> None:
    sim = simulation()
    await make_stream(sim)
    result = await sim.service.reading.read(ALICE, RUN, "s", 0, wait=0.05)
    assert (payloads(result), result.page.closed, result.next_cursor) == ([], False, 0)


async def test_a_stream_deleted_during_the_wait_is_not_found() -> None:
    sim = simulation()
    await make_stream(sim)
    task = await waiting(sim, after=0)
    await sim.service.stream_deletion.delete(ADMIN, RUN, "s")
    with pytest.raises(NotFound):
        await asyncio.wait_for(task, FRAME_TIMEOUT)


async def test_a_waiting_read_holds_a_subscription_slot_and_is_refused_at_the_cap() -> None:
    sim = simulation(node=NodeSettings(max_subscriptions_per_principal=1))
    await make_stream(sim)
    async with following(sim.service, ALICE, RUN, "s", after=0):
        with pytest.raises(TooManySubscriptions):
            await sim.service.reading.read(ALICE, RUN, "s", 0, wait=1)
        # A read that need not wait takes no slot.
        assert payloads(await sim.service.reading.read(ALICE, RUN, "s", 0)) == []
    task = await waiting(sim, after=0)
    with pytest.raises(TooManySubscriptions):
        await sim.service.follower.open(ALICE, RUN, "s", 0)
    await append_numbers(sim, 1, 1)
    assert payloads(await asyncio.wait_for(task, FRAME_TIMEOUT)) == [1]


async def test_a_drain_ends_a_waiting_read_with_what_there_is() -> None:
    sim = simulation()
    await make_stream(sim)
    task = await waiting(sim, after=0)
    sim.service.follower.drain()
    result = await asyncio.wait_for(task, FRAME_TIMEOUT)
    assert payloads(result) == []


@pytest.mark.parametrize("wait", [-1.0, MAX_WAIT_SECONDS + 0.001, math.nan, math.inf])
async def test_a_wait_outside_its_bound_is_refused_before_any_work(wait: float) -> None:
    sim = simulation()
    await make_stream(sim)
    with pytest.raises(InvalidWait):
        await sim.service.reading.read(ALICE, RUN, "s", 0, wait=wait)
    with pytest.raises(InvalidWait):  # even on a stream that does not exist
        await sim.service.reading.read(ALICE, RUN, "missing", 0, wait=wait)
