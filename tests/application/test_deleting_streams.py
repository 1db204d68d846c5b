"""Deleting one stream erases its records and bodies, leaves a tombstone that answers
not found, and never lets its id be reused (docs/adr/0075)."""

import asyncio

import pytest

from application.follow_frames import EndFrame
from application.stream_deletion import StreamDeletionReport
from domain.errors import Forbidden, NotFound, StreamDeleted, StreamHeld
from domain.object_intent import IntentState
from domain.principal import Principal
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    BOB,
    READ_WRITE,
    READER,
    RUN,
    append_numbers,
    committed,
    following,
    key,
    make_stream,
    next_non_keepalive,
    object_pins,
    take_records,
    uploaded,
)

OTHER_ADMIN = Principal("root", "t2", frozenset({"streams:admin", *READ_WRITE}))


async def stream_with_objects(sim: Simulation) -> dict[str, str]:
    """Stream "s": 3 records, a committed object, an uploaded one and a prepared one;
    stream "kept": 1 record."""
    await make_stream(sim, consumers=["ui"])
    await make_stream(sim, "kept")
    await append_numbers(sim, 1, 3)
    await append_numbers(sim, 1, 1, "kept")
    done = await committed(sim, "c", b"committed body")
    waiting = await uploaded(sim, "u", b"uploaded body")
    prepared, _ = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"p", "p"))
    return {"committed": done.object_id, "uploaded": waiting.object_id,
            "prepared": prepared.object_id}


async def test_delete_erases_records_and_bodies_and_reports_counts() -> None:
    sim = simulation()
    ids = await stream_with_objects(sim)
    report = await sim.service.stream_deletion.delete(ADMIN, RUN, "s")
    assert report == StreamDeletionReport(records_deleted=4, objects_deleted=2)
    assert sim.ports.objects.keys("local") == []
    page = await sim.ports.store.read_page(key("s"), 0, 100)
    assert (page.records, page.head, page.earliest, page.closed) == ((), 4, 5, True)
    async with sim.ports.store.lock(key("s")) as session:
        states = {intent.object_id: intent.current_state for intent in await session.intents()}
    assert states[ids["prepared"]] is states[ids["uploaded"]] is IntentState.ABORTED
    # The other stream of the run is untouched.
    kept = await sim.service.reading.read(ALICE, RUN, "kept", 0)
    assert [record.payload for record in kept.page.records] == [1]


async def test_a_deleted_stream_is_not_found_to_every_command() -> None:
    sim = simulation()
    ids = await stream_with_objects(sim)
    await sim.service.stream_deletion.delete(ADMIN, RUN, "s")
    service = sim.service
    refused = [
        service.definitions.get(ALICE, RUN, "s"),
        service.reading.read(ALICE, RUN, "s", 0),
        service.follower.open(ALICE, RUN, "s", 0),
        service.appender.append(ALICE, RUN, "s", [{"payload": 9}]),
        service.acknowledger.ack(ALICE, RUN, "s", "ui", 1),
        service.lifecycle.close(ALICE, RUN, "s"),
        service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, None),
        service.objects.prepare(ALICE, RUN, "s", object_pins(b"x", "x")),
        service.objects.get(ALICE, RUN, "s", ids["committed"]),
        service.objects.body(ALICE, RUN, "s", ids["committed"]),
    ]
    for call in refused:
        with pytest.raises(NotFound):
            await call
    listing = await service.definitions.list(ALICE, RUN)
    assert [stream.stream_id for stream in listing.streams] == ["kept"]


async def test_a_repeated_delete_answers_zero_counts_and_a_never_created_one_404() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 2)
    assert await sim.service.stream_deletion.delete(ADMIN, RUN, "s") == \
        StreamDeletionReport(2, 0)
    assert await sim.service.stream_deletion.delete(ADMIN, RUN, "s") == \
        StreamDeletionReport(0, 0)
    with pytest.raises(NotFound):
        await sim.service.stream_deletion.delete(ADMIN, RUN, "never")


async def test_the_id_of_a_deleted_stream_is_not_reused() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 2)
    await sim.service.stream_deletion.delete(ADMIN, RUN, "s")
    with pytest.raises(StreamDeleted):
        await make_stream(sim)
    with pytest.raises(StreamDeleted):  # another definition is refused the same way
        await make_stream(sim, consumers=["ui"])
    with pytest.raises(NotFound):
        await sim.service.definitions.get(ALICE, RUN, "s")


async def test_a_held_stream_is_refused_and_keeps_everything() -> None:
    sim = simulation()
    await stream_with_objects(sim)
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "litigation")
    with pytest.raises(StreamHeld):
        await sim.service.stream_deletion.delete(ADMIN, RUN, "s")
    page = await sim.service.reading.read(ALICE, RUN, "s", 0)
    assert len(page.page.records) == 4
    assert len(sim.ports.objects.keys("local")) == 2
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", False, None)
    assert await sim.service.stream_deletion.delete(ADMIN, RUN, "s") == \
        StreamDeletionReport(4, 2)


async def test_only_its_writers_and_admins_delete_and_a_refusal_leaves_no_trace() -> None:
    sim = simulation()
    await make_stream(sim, authorization={"readers": ["*"], "writers": ["alice"]})
    await append_numbers(sim, 1, 2)
    for principal, refusal in ((BOB, Forbidden), (READER, Forbidden),
                               (OTHER_ADMIN, NotFound)):
        with pytest.raises(refusal):
            await sim.service.stream_deletion.delete(principal, RUN, "s")
    stream = await sim.service.definitions.get(ALICE, RUN, "s")
    assert (stream.head, stream.earliest, stream.deleted) == (2, 1, False)
    assert await append_numbers(sim, 3, 3) == (3,)
    assert await sim.service.stream_deletion.delete(ALICE, RUN, "s") == \
        StreamDeletionReport(3, 0)
    await make_stream(sim, "other")
    assert await sim.service.stream_deletion.delete(ADMIN, RUN, "other") == \
        StreamDeletionReport(0, 0)


async def test_a_caught_up_follower_ends_when_its_stream_is_deleted() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 2)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        assert await take_records(frames, 2) == [1, 2]
        await sim.service.stream_deletion.delete(ADMIN, RUN, "s")
        assert await next_non_keepalive(frames) == EndFrame(2)


async def test_an_append_racing_a_delete_lands_before_and_is_erased_or_is_refused() -> None:
    outcomes = set()
    for delay in range(6):
        sim = simulation()
        await make_stream(sim)

        async def append(sim: Simulation = sim, delay: int = delay) -> bool:
            for _ in range(delay):
                await asyncio.sleep(0)
            try:
                await append_numbers(sim, 1, 1)
            except NotFound:
                return False
            return True

        landed, report = await asyncio.gather(
            append(), sim.service.stream_deletion.delete(ADMIN, RUN, "s"))
        outcomes.add(landed)
        # Never a record surviving the delete: one that landed was erased with it.
        assert report.records_deleted == (1 if landed else 0)
        page = await sim.ports.store.read_page(key("s"), 0, 100)
        assert (page.records, page.head) == ((), 1 if landed else 0)
    assert outcomes == {True, False}
