"""Acks only advance, stay within head, belong to one principal, and free producer credit."""

import pytest

from adapters.memory.simulation import simulation
from domain.errors import AckBeyondHead, AckRegression, Backpressure, ConsumerScope
from tests.application.support import ALICE, BOB, RUN, append_numbers, make_stream


async def test_an_ack_advances_and_re_acking_the_same_value_is_fine() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"])
    await append_numbers(sim, 1, 5)
    assert (await sim.service.acks.ack(ALICE, RUN, "s", "ui", 3)).acked == 3
    assert (await sim.service.acks.ack(ALICE, RUN, "s", "ui", 3)).acked == 3
    stream = await sim.service.definitions.get(ALICE, RUN, "s")
    assert stream.acks == {"ui": 3}


async def test_an_ack_below_the_current_one_is_a_regression() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"])
    await append_numbers(sim, 1, 5)
    await sim.service.acks.ack(ALICE, RUN, "s", "ui", 4)
    with pytest.raises(AckRegression):
        await sim.service.acks.ack(ALICE, RUN, "s", "ui", 3)
    assert (await sim.service.definitions.get(ALICE, RUN, "s")).acks == {"ui": 4}


async def test_an_ack_beyond_head_is_refused() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"])
    await append_numbers(sim, 1, 2)
    with pytest.raises(AckBeyondHead):
        await sim.service.acks.ack(ALICE, RUN, "s", "ui", 3)


async def test_a_consumer_belongs_to_the_principal_that_first_acked_it() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    await sim.service.acks.ack(ALICE, RUN, "s", "worker", 1)
    with pytest.raises(ConsumerScope):
        await sim.service.acks.ack(BOB, RUN, "s", "worker", 2)
    assert (await sim.service.acks.ack(BOB, RUN, "s", "bobs", 2)).acked == 2
    assert (await sim.service.definitions.get(ALICE, RUN, "s")).acks == {"worker": 1, "bobs": 2}


async def test_an_ack_frees_credit_for_the_producer() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"], credit={"max_unread_items": 3})
    await append_numbers(sim, 1, 3)
    with pytest.raises(Backpressure):
        await append_numbers(sim, 4, 4)
    await sim.service.acks.ack(ALICE, RUN, "s", "ui", 2)
    assert await append_numbers(sim, 4, 5) == (4, 5)
    with pytest.raises(Backpressure):
        await append_numbers(sim, 6, 6)


async def test_the_slowest_consumer_decides_the_credit() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["fast", "slow"], credit={"max_unread_items": 2})
    await append_numbers(sim, 1, 2)
    await sim.service.acks.ack(ALICE, RUN, "s", "fast", 2)
    with pytest.raises(Backpressure):
        await append_numbers(sim, 3, 3)
    await sim.service.acks.ack(ALICE, RUN, "s", "slow", 1)
    assert await append_numbers(sim, 3, 3) == (3,)
