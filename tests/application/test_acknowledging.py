"""Acks only advance and stay within head; only declared consumers exist, a declaration may
pin who acks it, and acks free producer credit."""

import pytest

from domain.errors import (
    AckBeyondHead,
    AckRegression,
    Backpressure,
    ConsumerNotFound,
    ConsumerScope,
    QuotaExhausted,
)
from entrypoints.testing.simulation import simulation
from tests.application.support import ALICE, BOB, READER, RUN, append_numbers, make_stream


async def test_an_ack_advances_and_re_acking_the_same_value_is_fine() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"])
    await append_numbers(sim, 1, 5)
    assert (await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 3)).acked == 3
    assert (await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 3)).acked == 3
    stream = await sim.service.definitions.get(ALICE, RUN, "s")
    assert stream.acks == {"ui": 3}


async def test_an_ack_below_the_current_one_is_a_regression() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"])
    await append_numbers(sim, 1, 5)
    await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 4)
    with pytest.raises(AckRegression):
        await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 3)
    assert (await sim.service.definitions.get(ALICE, RUN, "s")).acks == {"ui": 4}


async def test_an_ack_beyond_head_is_refused() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"])
    await append_numbers(sim, 1, 2)
    with pytest.raises(AckBeyondHead):
        await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 3)


async def test_an_undeclared_consumer_is_refused_and_never_holds_credit() -> None:
    # A read-only principal acking an id of its own must not freeze the producer.
    sim = simulation()
    await make_stream(sim, consumers=["ui"], credit={"max_unread_items": 3})
    await append_numbers(sim, 1, 3)
    with pytest.raises(ConsumerNotFound):
        await sim.service.acknowledger.ack(READER, RUN, "s", "squatter", 0)
    await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 3)
    assert await append_numbers(sim, 4, 6) == (4, 5, 6)
    assert (await sim.service.definitions.get(ALICE, RUN, "s")).acks == {"ui": 3}


async def test_a_declared_consumer_is_never_claimed_by_its_first_acker() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"])
    await append_numbers(sim, 1, 3)
    await sim.service.acknowledger.ack(READER, RUN, "s", "ui", 1)
    assert (await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 2)).acked == 2


async def test_a_pinned_consumer_refuses_principals_its_declaration_does_not_list() -> None:
    sim = simulation()
    await make_stream(sim, consumers=[{"id": "ui", "principals": [ALICE.sub]}])
    await append_numbers(sim, 1, 3)
    with pytest.raises(ConsumerScope):
        await sim.service.acknowledger.ack(BOB, RUN, "s", "ui", 1)
    assert (await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 1)).acked == 1


async def test_a_stream_without_consumers_is_bounded_by_its_totals_alone() -> None:
    # A 1,000-token answer is an ordinary LLM reply: nobody acks, nothing must wait.
    sim = simulation()
    await make_stream(sim, credit={"max_unread_items": 2, "max_total_items": 5})
    assert await append_numbers(sim, 1, 5) == (1, 2, 3, 4, 5)
    with pytest.raises(QuotaExhausted):
        await append_numbers(sim, 6, 6)


async def test_an_ack_frees_credit_for_the_producer() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"], credit={"max_unread_items": 3})
    await append_numbers(sim, 1, 3)
    with pytest.raises(Backpressure):
        await append_numbers(sim, 4, 4)
    await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 2)
    assert await append_numbers(sim, 4, 5) == (4, 5)
    with pytest.raises(Backpressure):
        await append_numbers(sim, 6, 6)


async def test_the_slowest_consumer_decides_the_credit() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["fast", "slow"], credit={"max_unread_items": 2})
    await append_numbers(sim, 1, 2)
    await sim.service.acknowledger.ack(ALICE, RUN, "s", "fast", 2)
    with pytest.raises(Backpressure):
        await append_numbers(sim, 3, 3)
    await sim.service.acknowledger.ack(ALICE, RUN, "s", "slow", 1)
    assert await append_numbers(sim, 3, 3) == (3,)
