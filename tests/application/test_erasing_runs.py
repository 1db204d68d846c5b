"""Erasing a run removes records and bodies, except under legal hold, and seals the run for good."""

import pytest

from application.follow_frames import EndFrame
from application.lifecycle import ErasureReport
from domain.errors import Forbidden, NotFound, RunErased
from domain.object_intent import IntentState
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    RUN,
    append_numbers,
    committed,
    definition,
    following,
    key,
    make_stream,
    next_non_keepalive,
    object_pins,
    take_records,
    uploaded,
)


async def run_with_objects(sim: Simulation) -> dict[str, str]:
    """Stream "a": 3 records + a committed object + an uploaded one + a prepared one;
    stream "held": 2 records and a committed object, under legal hold."""
    ids: dict[str, str] = {}
    for stream_id in ("a", "held"):
        await make_stream(sim, stream_id)
    await append_numbers(sim, 1, 3, "a")
    await append_numbers(sim, 1, 2, "held")
    for stream_id, label, commit in (("a", "committed", True), ("a", "uploaded", False),
                                     ("held", "held", True)):
        store = committed if commit else uploaded
        intent = await store(sim, label, label.encode() * 10, stream_id)
        ids[label] = intent.object_id
    intent, _ = await sim.service.objects.prepare(ALICE, RUN, "a", object_pins(b"p", "prepared"))
    ids["prepared"] = intent.object_id
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "held", True, "litigation")
    return ids


@pytest.fixture
async def erased() -> tuple[Simulation, dict[str, str]]:
    """The run of `run_with_objects`, erased once (its held stream kept), and its object ids."""
    sim = simulation()
    ids = await run_with_objects(sim)
    await sim.service.lifecycle.erase_run(ADMIN, RUN)
    return sim, ids


async def test_erasure_reports_what_it_removed_and_which_streams_are_held() -> None:
    sim = simulation()
    await run_with_objects(sim)
    report = await sim.service.lifecycle.erase_run(ADMIN, RUN)
    assert report == ErasureReport(streams=2, records_deleted=4, objects_deleted=2,
                                   held_streams=["held"])


async def test_erasure_removes_records_and_bodies_of_unheld_streams() -> None:
    sim = simulation()
    ids = await run_with_objects(sim)
    held_key = (await sim.service.objects.get(ALICE, RUN, "held", ids["held"])).object_key
    await sim.service.lifecycle.erase_run(ADMIN, RUN)
    page = await sim.ports.store.read_page(key("a"), 0, 100)
    assert (page.records, page.head, page.earliest) == ((), 4, 5)
    assert sim.ports.objects.keys("local") == [held_key]
    prepared = await sim.service.objects.get(ALICE, RUN, "a", ids["prepared"])
    assert prepared.current_state is IntentState.ABORTED
    with pytest.raises(NotFound):
        await sim.service.objects.body(ALICE, RUN, "a", ids["committed"])


async def test_a_held_stream_keeps_its_records_and_bodies(
        erased: tuple[Simulation, dict[str, str]]) -> None:
    sim, ids = erased
    page = await sim.ports.store.read_page(key("held"), 0, 100)
    assert [r.sequence for r in page.records] == [1, 2, 3]
    _, chunks = await sim.service.objects.body(ALICE, RUN, "held", ids["held"])
    assert b"".join([c async for c in chunks]) == b"held" * 10


async def test_nothing_is_appended_to_an_erased_run_held_or_not(
        erased: tuple[Simulation, dict[str, str]]) -> None:
    sim, _ = erased
    for stream_id in ("a", "held"):
        with pytest.raises(RunErased):
            await append_numbers(sim, 9, 9, stream_id)
    with pytest.raises(RunErased):
        await sim.service.objects.prepare(ALICE, RUN, "a", object_pins(b"late", "late"))
    assert (await sim.ports.store.read_page(key("held"), 0, 100)).head == 3


async def test_no_stream_is_created_in_an_erased_run(
        erased: tuple[Simulation, dict[str, str]]) -> None:
    sim, _ = erased
    with pytest.raises(RunErased):
        await sim.service.definitions.create(ALICE, RUN, definition("new"))
    with pytest.raises(RunErased):
        await sim.service.definitions.create(ALICE, RUN, definition("a"))


async def test_releasing_the_hold_and_erasing_again_removes_the_rest(
        erased: tuple[Simulation, dict[str, str]]) -> None:
    sim, _ = erased
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "held", False, None)
    report = await sim.service.lifecycle.erase_run(ADMIN, RUN)
    assert report == ErasureReport(streams=2, records_deleted=3, objects_deleted=1,
                                   held_streams=[])
    assert sim.ports.objects.keys("local") == []


async def test_only_an_admin_erases_a_run() -> None:
    sim = simulation()
    await run_with_objects(sim)
    with pytest.raises(Forbidden):
        await sim.service.lifecycle.erase_run(ALICE, RUN)
    assert await append_numbers(sim, 4, 4, "a") == (5,)


async def test_a_caught_up_follower_ends_when_its_run_is_erased() -> None:
    sim = simulation()
    await make_stream(sim, "a")
    await append_numbers(sim, 1, 2, "a")
    async with following(sim.service, ALICE, RUN, "a", after=0) as frames:
        assert await take_records(frames, 2) == [1, 2]
        await sim.service.lifecycle.erase_run(ADMIN, RUN)
        assert await next_non_keepalive(frames) == EndFrame(2)
