"""The reaper expires intents past their deadline and queues their bodies for deletion,
never under hold."""

from application.node import NodeSettings
from domain.object_intent import IntentState, ObjectIntent
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    RUN,
    committed,
    fake_clock,
    key,
    make_stream,
    object_pins,
    uploaded,
)


async def state_of(sim: Simulation, intent: ObjectIntent) -> IntentState:
    loaded = await sim.ports.store.load_intent(key(), intent.object_id)
    assert loaded is not None
    return loaded.current_state


async def test_intents_past_their_deadline_expire_and_lose_their_bodies() -> None:
    sim = simulation()
    clock = fake_clock(sim)
    await make_stream(sim)
    early = await uploaded(sim, "early")
    prepared, _ = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"x", "p"))
    ttl = NodeSettings().object_intent_ttl_seconds
    clock.advance(ttl - 1)
    assert await sim.service.intent_reaper.reap_once() == 0
    late = await uploaded(sim, "late", b"other")
    clock.advance(1)
    assert await sim.service.intent_reaper.reap_once() == 2
    assert await state_of(sim, early) is IntentState.EXPIRED
    assert await state_of(sim, prepared) is IntentState.EXPIRED
    assert await state_of(sim, late) is IntentState.UPLOADED
    assert sorted(sim.ports.deletions.queued()) == sorted([("local", early.object_key),
                                                     ("local", prepared.object_key)])
    assert await sim.service.body_deleter.delete_once("w") == 2
    assert sim.ports.objects.keys("local") == [late.object_key]
    assert await sim.service.intent_reaper.reap_once() == 0


async def test_committed_intents_are_never_reaped() -> None:
    sim = simulation()
    await make_stream(sim)
    intent = await committed(sim)
    fake_clock(sim).advance(10**7)
    assert await sim.service.intent_reaper.reap_once() == 0
    assert await state_of(sim, intent) is IntentState.COMMITTED
    assert sim.ports.objects.keys("local") == [intent.object_key]


async def test_nothing_is_reaped_while_the_stream_is_held() -> None:
    sim = simulation()
    await make_stream(sim)
    intent = await uploaded(sim, "o1")
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "audit")
    fake_clock(sim).advance(10**7)
    assert await sim.service.intent_reaper.reap_once() == 0
    assert await state_of(sim, intent) is IntentState.UPLOADED
    assert sim.ports.objects.keys("local") == [intent.object_key]
    assert sim.ports.deletions.queued() == []
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", False, None)
    assert await sim.service.intent_reaper.reap_once() == 1
    assert await sim.service.body_deleter.delete_once("w") == 1
    assert sim.ports.objects.keys("local") == []
