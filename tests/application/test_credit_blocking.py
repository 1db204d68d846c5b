"""Credit policy `block`: a full stream makes the producer wait for acks, up to its timeout."""

import asyncio

import pytest

from domain.errors import Backpressure
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    FRAME_TIMEOUT,
    RUN,
    append_numbers,
    eventually,
    head_of,
    make_stream,
)


async def test_a_blocked_append_goes_through_when_a_consumer_acks_meanwhile() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"], credit={
        "max_unread_items": 2, "on_unread_full": "block", "block_timeout_seconds": 30})
    await append_numbers(sim, 1, 2)
    blocked = asyncio.create_task(append_numbers(sim, 3, 3))
    await eventually(lambda: sim.ports.bus.hub.reader_count == 1 or blocked.done())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not blocked.done(), "with policy block a full stream must wait, not refuse"
    assert await head_of(sim) == 2
    await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 1)
    assert await asyncio.wait_for(blocked, FRAME_TIMEOUT) == (3,)
    assert sim.ports.bus.hub.reader_count == 0


async def test_a_blocked_append_answers_backpressure_after_its_pinned_timeout() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"], credit={
        "max_unread_items": 2, "on_unread_full": "block", "block_timeout_seconds": 0.02})
    await append_numbers(sim, 1, 2)
    with pytest.raises(Backpressure):
        await asyncio.wait_for(append_numbers(sim, 3, 3), FRAME_TIMEOUT)
    assert await head_of(sim) == 2
    assert sim.ports.bus.hub.reader_count == 0


async def test_a_blocked_append_keeps_waiting_through_wakes_that_free_nothing() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui", "audit"], credit={
        "max_unread_items": 2, "on_unread_full": "block", "block_timeout_seconds": 30})
    await append_numbers(sim, 1, 2)
    blocked = asyncio.create_task(append_numbers(sim, 3, 3))
    await eventually(lambda: sim.ports.bus.hub.reader_count == 1 or blocked.done())
    await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 2)  # "audit" still holds everything
    for _ in range(10):
        await asyncio.sleep(0)
    assert not blocked.done()
    await sim.service.acknowledger.ack(ALICE, RUN, "s", "audit", 2)
    assert await asyncio.wait_for(blocked, FRAME_TIMEOUT) == (3,)

