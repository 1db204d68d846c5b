"""A stream pinned with `expires_after_seconds` is not found from its expiry on, and the
sweep deletes it, unless it is held (docs/adr/0076). The clock is a fake: no sleeping."""

import pytest

from application.follow_frames import EndFrame
from application.stream_deletion import StreamDeletionReport
from domain.errors import NotFound, StreamDeleted
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    RUN,
    append_numbers,
    committed,
    fake_clock,
    following,
    key,
    make_stream,
    next_non_keepalive,
    object_pins,
    take_records,
)


async def expiring(sim: Simulation, seconds: int = 60) -> None:
    await make_stream(sim, consumers=["ui"], expires_after_seconds=seconds)
    await make_stream(sim, "kept")
    await append_numbers(sim, 1, 2)


async def test_an_expiring_stream_serves_until_its_expiry_counted_from_creation() -> None:
    sim = simulation()
    await expiring(sim)
    fake_clock(sim).advance(59.9)
    stream = await sim.service.definitions.get(ALICE, RUN, "s")
    assert stream.definition.expires_after_seconds == 60
    assert await append_numbers(sim, 3, 3) == (3,)
    assert await sim.service.stream_deletion.expire_once() == 0


async def test_from_its_expiry_on_it_is_not_found_to_readers_and_writers_before_the_sweep(
        ) -> None:
    sim = simulation()
    await expiring(sim)
    await sim.service.acknowledger.ack(ALICE, RUN, "s", "ui", 1)  # the definition is cached
    fake_clock(sim).advance(60)
    service = sim.service
    for call in (service.definitions.get(ALICE, RUN, "s"),
                 service.reading.read(ALICE, RUN, "s", 0),
                 service.follower.open(ALICE, RUN, "s", 0),
                 service.appender.append(ALICE, RUN, "s", [{"payload": 9}]),
                 service.acknowledger.ack(ALICE, RUN, "s", "ui", 2),
                 service.lifecycle.close(ALICE, RUN, "s"),
                 service.live.publish(ALICE, RUN, "s", [{"t": 1}]),
                 service.objects.prepare(ALICE, RUN, "s", object_pins(b"x", "x"))):
        with pytest.raises(NotFound):
            await call
    listing = await service.definitions.list(ALICE, RUN)
    assert [stream.stream_id for stream in listing.streams] == ["kept"]
    with pytest.raises(StreamDeleted):  # its id is spent, swept or not
        await make_stream(sim, consumers=["ui"], expires_after_seconds=60)
    # Nothing was stored by the refused calls.
    page = await sim.ports.store.read_page(key("s"), 0, 100)
    assert [record.payload for record in page.records] == [1, 2]


async def test_the_sweep_deletes_an_expired_stream_and_its_bodies() -> None:
    sim = simulation()
    await expiring(sim)
    await committed(sim, "c", b"a body")
    fake_clock(sim).advance(60)
    assert await sim.service.stream_deletion.expire_once() == 1
    assert sim.ports.objects.keys("local") == []
    tombstone = await sim.ports.store.load(key("s"))
    assert tombstone is not None and (tombstone.deleted, tombstone.head) == (True, 3)
    assert await sim.service.stream_deletion.expire_once() == 0
    # An admin's DELETE of it now answers as a repeat does.
    assert await sim.service.stream_deletion.delete(ADMIN, RUN, "s") == \
        StreamDeletionReport(0, 0)
    kept = await sim.service.reading.read(ALICE, RUN, "kept", 0)
    assert kept.page.head == 0


async def test_a_held_stream_outlives_its_expiry_until_the_hold_is_lifted() -> None:
    sim = simulation()
    await expiring(sim)
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "audit")
    fake_clock(sim).advance(3600)
    assert await sim.service.stream_deletion.expire_once() == 0
    page = await sim.ports.store.read_page(key("s"), 0, 100)
    assert [record.payload for record in page.records] == [1, 2]
    with pytest.raises(NotFound):  # expired all the same: readers see nothing
        await sim.service.reading.read(ALICE, RUN, "s", 0)
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", False, None)
    assert await sim.service.stream_deletion.expire_once() == 1
    page = await sim.ports.store.read_page(key("s"), 0, 100)
    assert (page.records, page.earliest) == ((), 3)


async def test_an_open_follow_ends_when_the_sweep_deletes_its_stream() -> None:
    sim = simulation()
    await expiring(sim)
    async with following(sim.service, ALICE, RUN, "s", after=0) as frames:
        assert await take_records(frames, 2) == [1, 2]
        fake_clock(sim).advance(60)
        assert await sim.service.stream_deletion.expire_once() == 1
        assert await next_non_keepalive(frames) == EndFrame(2)
