"""Closing is idempotent; legal hold is an admin's decision."""

import pytest

from domain.errors import Forbidden, StreamClosed
from entrypoints.testing.simulation import simulation
from tests.application.support import ADMIN, ALICE, RUN, append_numbers, key, make_stream


async def test_close_returns_the_head_and_is_idempotent() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    assert await sim.service.lifecycle.close(ALICE, RUN, "s") == 3
    assert await sim.service.lifecycle.close(ALICE, RUN, "s") == 3
    closes = [e for e in sim.ports.store.event_log(key()) if type(e).__name__ == "Closed"]
    assert len(closes) == 1
    assert (await sim.service.definitions.get(ALICE, RUN, "s")).closed
    with pytest.raises(StreamClosed):
        await append_numbers(sim, 4, 4)


async def test_only_an_admin_places_or_lifts_a_legal_hold() -> None:
    sim = simulation()
    await make_stream(sim)
    with pytest.raises(Forbidden):
        await sim.service.lifecycle.set_legal_hold(ALICE, RUN, "s", True, "audit")
    assert not (await sim.service.definitions.get(ALICE, RUN, "s")).legal_hold
    held = await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "audit 42")
    assert held == (True, "audit 42")
    stream = await sim.service.definitions.get(ALICE, RUN, "s")
    assert (stream.legal_hold, stream.hold_reason) == (True, "audit 42")
    with pytest.raises(Forbidden):
        await sim.service.lifecycle.set_legal_hold(ALICE, RUN, "s", False, None)
    assert await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", False, None) == (
        False, None)
