"""Objects obey the stream's credit like any record: bodies count toward the total bytes
(reserved at prepare, released on abort or expiry), open intents are bounded, a commit
follows the pinned unread policy, and no client key can stand in for a commit."""

from __future__ import annotations

import asyncio

import pytest

from application.node import NodeSettings
from domain.errors import Backpressure, QuotaExhausted
from domain.object_intent import IntentState
from entrypoints.testing.simulation import simulation
from tests.application.support import (
    ALICE,
    RUN,
    append_numbers,
    fake_clock,
    make_stream,
    object_pins,
    uploaded,
)


async def test_a_body_larger_than_the_total_bytes_ceiling_is_refused_at_prepare() -> None:
    sim = simulation()
    await make_stream(sim, credit={"max_total_bytes": 1000})
    with pytest.raises(QuotaExhausted):
        await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"x" * 200_000))
    stream = await sim.service.definitions.get(ALICE, RUN, "s")
    assert (stream.head, stream.usage.total_bytes) == (0, 0)


async def test_a_committed_body_counts_its_real_size_toward_the_total() -> None:
    sim = simulation()
    await make_stream(sim, credit={"max_total_bytes": 1000})
    object_id = (await uploaded(sim, "o1", b"b" * 700)).object_id
    await sim.service.objects.commit(ALICE, RUN, "s", object_id)
    stream = await sim.service.definitions.get(ALICE, RUN, "s")
    assert stream.usage.total_bytes > 700
    with pytest.raises(QuotaExhausted):  # what is left is far less than 300 bytes of records
        await sim.service.appender.append(ALICE, RUN, "s", [{"payload": "p" * 290}])


async def test_prepared_bodies_reserve_their_size_until_aborted() -> None:
    sim = simulation()
    await make_stream(sim, credit={"max_total_bytes": 1000})
    first, _ = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"a" * 600, "a"))
    with pytest.raises(QuotaExhausted):
        await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"b" * 600, "b"))
    with pytest.raises(QuotaExhausted):  # records cannot use the reserved room either
        await sim.service.appender.append(ALICE, RUN, "s", [{"payload": "p" * 500}])
    await sim.service.objects.abort(ALICE, RUN, "s", first.object_id)
    await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"b" * 600, "b"))


async def test_an_expired_intent_gives_its_reservation_back() -> None:
    sim = simulation(node=NodeSettings(object_intent_ttl_seconds=60))
    await make_stream(sim, credit={"max_total_bytes": 1000})
    await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"a" * 600, "a"))
    fake_clock(sim).advance(61)
    assert await sim.service.intent_reaper.reap_once() == 1
    await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"b" * 600, "b"))


async def test_open_intents_are_bounded_by_the_pinned_ceiling() -> None:
    sim = simulation()
    await make_stream(sim, credit={"max_open_objects": 2})
    first = (await uploaded(sim, "o1", b"one")).object_id
    await uploaded(sim, "o2", b"two")
    with pytest.raises(QuotaExhausted) as refused:
        await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"three", "o3"))
    assert refused.value.extra["max_open_objects"] == 2
    await sim.service.objects.commit(ALICE, RUN, "s", first)  # a commit closes one
    await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"three", "o3"))
    # A repeated prepare of an open intent is the same intent, not one more.
    _, created = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"two", "o2"))
    assert not created


async def test_a_record_keyed_like_an_object_commit_does_not_stand_in_for_it() -> None:
    sim = simulation()
    await make_stream(sim)
    object_id = (await uploaded(sim, "o1", b"the real body")).object_id
    squatted = await sim.service.appender.append(
        ALICE, RUN, "s", [{"payload": "decoy", "idempotency_key": f"object:{object_id}"}])
    sequence, created = await sim.service.objects.commit(ALICE, RUN, "s", object_id)
    assert created and sequence == squatted.sequences[0] + 1
    page = await sim.service.reading.read(ALICE, RUN, "s", sequence - 1, 1)
    assert page.page.records[0].object is not None
    assert page.page.records[0].object.object_id == object_id
    intent = await sim.service.objects.get(ALICE, RUN, "s", object_id)
    assert (intent.current_state, intent.sequence) == (IntentState.COMMITTED, sequence)


async def test_an_object_commit_waits_for_credit_on_a_blocking_stream() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"], credit={
        "max_unread_items": 2, "on_unread_full": "block", "block_timeout_seconds": 5})
    await append_numbers(sim, 1, 2)
    object_id = (await uploaded(sim)).object_id
    commit = asyncio.ensure_future(sim.service.objects.commit(ALICE, RUN, "s", object_id))
    await asyncio.sleep(0.05)
    assert not commit.done()  # waiting, not refused at once
    await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 2)
    assert await asyncio.wait_for(commit, 5) == (3, True)


async def test_an_object_commit_on_a_blocking_stream_gives_up_after_its_timeout() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"], credit={
        "max_unread_items": 1, "on_unread_full": "block", "block_timeout_seconds": 0.05})
    await append_numbers(sim, 1, 1)
    object_id = (await uploaded(sim)).object_id
    with pytest.raises(Backpressure):
        await sim.service.objects.commit(ALICE, RUN, "s", object_id)
    intent = await sim.service.objects.get(ALICE, RUN, "s", object_id)
    assert intent.current_state is IntentState.UPLOADED
