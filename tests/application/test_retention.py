"""Retention prunes by count and by age, never under legal hold, and queues pruned bodies
for deletion."""

import pytest

from application.ports.streams import Removed
from domain.errors import CursorPruned
from domain.identifiers import StreamKey
from domain.stream import Stream
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    RUN,
    append_numbers,
    committed,
    fake_clock,
    key,
    make_stream,
)


async def retained(sim: Simulation, stream_id: str = "s") -> list[int]:
    page = await sim.ports.store.read_page(key(stream_id), 0, 1000)
    return [record.sequence for record in page.records]


async def test_max_records_keeps_only_the_newest_records() -> None:
    sim = simulation()
    await make_stream(sim, retention={"max_records": 3})
    await append_numbers(sim, 1, 10)
    removed = await sim.service.retention.prune(key())
    assert removed == Removed(7)
    assert await retained(sim) == [8, 9, 10]
    assert (await sim.service.definitions.get(ALICE, RUN, "s")).earliest == 8
    assert await sim.service.retention.prune(key()) == Removed(0)


async def test_max_age_removes_records_older_than_the_pin() -> None:
    sim = simulation()
    clock = fake_clock(sim)
    await make_stream(sim, retention={"max_age_seconds": 60})
    await append_numbers(sim, 1, 3)
    clock.advance(30)
    await append_numbers(sim, 4, 5)
    clock.advance(30)
    assert await sim.service.retention.prune(key()) == Removed(3)  # appended exactly 60 s ago
    assert await retained(sim) == [4, 5]
    clock.advance(29)
    assert await sim.service.retention.prune(key()) == Removed(0)
    clock.advance(2)
    assert await sim.service.retention.prune(key()) == Removed(2)
    assert await retained(sim) == []
    stream = await sim.service.definitions.get(ALICE, RUN, "s")
    assert (stream.head, stream.earliest) == (5, 6)


async def test_a_stream_without_retention_pins_is_never_pruned() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 5)
    fake_clock(sim).advance(10**8)
    assert await sim.service.retention.prune(key()) == Removed(0)
    assert await retained(sim) == [1, 2, 3, 4, 5]


async def test_nothing_is_pruned_while_the_stream_is_held() -> None:
    sim = simulation()
    await make_stream(sim, retention={"max_records": 1})
    await append_numbers(sim, 1, 4)
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "audit")
    assert await sim.service.retention.prune(key()) == Removed(0)
    assert await retained(sim) == [1, 2, 3, 4]
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", False, None)
    assert await sim.service.retention.prune(key()) == Removed(3)


async def test_pruned_object_records_queue_their_bodies_for_the_deletion_worker() -> None:
    sim = simulation()
    await make_stream(sim, retention={"max_records": 1})
    intent = await committed(sim)
    assert sim.ports.objects.keys("local") == [intent.object_key]
    await append_numbers(sim, 1, 1)
    removed = await sim.service.retention.prune(key())
    assert removed.records == 1 and [ref.object_id for ref in removed.objects] == [
        intent.object_id]
    assert sim.ports.deletions.queued() == [("local", intent.object_key)]
    assert sim.ports.objects.keys("local") == [intent.object_key]  # until the worker runs
    assert await sim.service.body_deleter.delete_once("w") == 1
    assert sim.ports.objects.keys("local") == []
    assert sim.ports.deletions.queued() == []


async def test_a_pruned_cursor_answers_resync_and_receipts_outlive_their_records() -> None:
    sim = simulation()
    await make_stream(sim, retention={"max_records": 1})
    await sim.service.appender.append(ALICE, RUN, "s", [{"payload": 1, "idempotency_key": "k"}])
    await append_numbers(sim, 2, 2)
    await sim.service.retention.prune(key())
    with pytest.raises(CursorPruned):
        await sim.service.reading.read(ALICE, RUN, "s", after=0)
    again = await sim.service.appender.append(ALICE, RUN, "s",
                                              [{"payload": 1, "idempotency_key": "k"}])
    assert (again.sequences, again.stored) == ((1,), 0)


async def test_prune_all_prunes_every_pinned_stream_that_is_not_held() -> None:
    sim = simulation()
    for stream_id in ("a", "b", "c"):
        await make_stream(sim, stream_id, retention={"max_records": 1})
        await append_numbers(sim, 1, 3, stream_id)
    await make_stream(sim, "unpinned")
    await append_numbers(sim, 1, 3, "unpinned")
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "c", True, "audit")
    assert await sim.service.retention.prune_all(page_size=1) == 4
    assert await retained(sim, "a") == [3]
    assert await retained(sim, "b") == [3]
    assert await retained(sim, "c") == [1, 2, 3]
    assert await retained(sim, "unpinned") == [1, 2, 3]
    assert await sim.service.retention.prune_all() == 0
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "c", False, None)
    assert await sim.service.retention.prune_all() == 2
    assert await retained(sim, "c") == [3]


async def test_a_stream_that_fails_to_prune_does_not_stop_the_others() -> None:
    sim = simulation()
    for stream_id in ("a", "b"):
        await make_stream(sim, stream_id, retention={"max_records": 1})
        await append_numbers(sim, 1, 2, stream_id)
    real_load = sim.ports.store.load

    async def broken_load(stream_key: StreamKey) -> Stream | None:
        if stream_key == key("a"):
            raise ConnectionError("stream a unreadable")
        return await real_load(stream_key)

    sim.ports.store.load = broken_load  # type: ignore[method-assign]
    with pytest.raises(ExceptionGroup) as failed:
        await sim.service.retention.prune_all()
    assert [type(error) for error in failed.value.exceptions] == [ConnectionError]
    assert await retained(sim, "b") == [2]
    assert await retained(sim, "a") == [1, 2]
