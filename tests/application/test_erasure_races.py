"""Erasure is final whatever the interleaving: each test parks one use case at a port call,
runs the erasure to its answer in that window, then lets the parked call go on."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from domain.errors import NotFound, RunErased
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    RUN,
    append_numbers,
    definition,
    key,
    make_stream,
    uploaded,
)


def park(target: object, method: str, after: bool = False
         ) -> tuple[asyncio.Event, asyncio.Event]:
    """Make the next call of `target.method` stop at its entry (or, `after`, once it has
    answered): returns (reached, release)."""
    original: Callable[..., Awaitable[Any]] = getattr(target, method)
    reached, release = asyncio.Event(), asyncio.Event()

    async def parked(*args: Any, **kwargs: Any) -> Any:
        setattr(target, method, original)
        answer = await original(*args, **kwargs) if after else None
        reached.set()
        await release.wait()
        return answer if after else await original(*args, **kwargs)

    setattr(target, method, parked)
    return reached, release


async def erase_inside(sim: Simulation, reached: asyncio.Event, release: asyncio.Event,
                       parked: Awaitable[Any]) -> Any:
    """Start `parked`; once it waits at the port, erase the run to its answer, then let it go."""
    task = asyncio.ensure_future(parked)
    await asyncio.wait_for(reached.wait(), 5)
    await sim.service.lifecycle.erase_run(ADMIN, RUN)
    release.set()
    return await asyncio.wait_for(task, 5)


async def nothing_stored_in_the_run(sim: Simulation) -> None:
    """Every stream of the run is sealed and holds no record, as the store itself says."""
    for stream in await sim.ports.store.list_run(key("s").run):
        assert stream.erased, stream.stream_id
        assert not (await sim.ports.store.read_page(stream.key, 0, 1000)).records, stream.stream_id


async def test_a_create_that_reached_the_store_before_the_erasure_is_refused_after_it() -> None:
    sim = simulation()
    await make_stream(sim, "first")
    reached, release = park(sim.ports.store, "create")
    with pytest.raises(RunErased):
        await erase_inside(sim, reached, release,
                           sim.service.definitions.create(ALICE, RUN, definition("late")))
    with pytest.raises(NotFound):  # it never came to be
        await sim.service.appender.append(ALICE, RUN, "late", [{"payload": 1}])
    listed = await sim.service.definitions.list(ALICE, RUN)
    assert [s.stream_id for s in listed.streams] == ["first"]
    await nothing_stored_in_the_run(sim)


async def test_an_append_that_loaded_its_pins_before_the_erasure_stores_nothing() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 2)
    reached, release = park(sim.ports.store, "transact")
    with pytest.raises(RunErased):
        await erase_inside(sim, reached, release,
                           sim.service.appender.append(ALICE, RUN, "s", [{"payload": 3}]))
    await nothing_stored_in_the_run(sim)


async def test_an_append_between_the_mark_and_the_seal_is_refused() -> None:
    sim = simulation()
    await make_stream(sim)
    reached, release = park(sim.ports.store, "mark_run_erased", after=True)
    eraser = asyncio.ensure_future(sim.service.lifecycle.erase_run(ADMIN, RUN))
    await asyncio.wait_for(reached.wait(), 5)
    with pytest.raises(RunErased):
        await sim.service.appender.append(ALICE, RUN, "s", [{"payload": 1}])
    release.set()
    await asyncio.wait_for(eraser, 5)
    await nothing_stored_in_the_run(sim)


async def test_an_object_commit_that_passed_its_checks_before_the_erasure_stores_nothing(
        ) -> None:
    sim = simulation()
    await make_stream(sim)
    body = b"object body" * 10
    intent = await uploaded(sim, "o1", body)
    reached, release = park(sim.ports.objects, "stat", after=True)  # confirmed, not yet locked
    with pytest.raises(RunErased):
        await erase_inside(sim, reached, release,
                           sim.service.objects.commit(ALICE, RUN, "s", intent.object_id))
    await nothing_stored_in_the_run(sim)


async def test_a_live_chunk_after_the_erasure_answered_is_refused() -> None:
    sim = simulation()
    await make_stream(sim)
    await sim.service.lifecycle.erase_run(ADMIN, RUN)
    with pytest.raises(RunErased):
        await sim.service.live.publish(ALICE, RUN, "s", [{"token": "late"}])
