"""The orphan sweep deletes bodies nothing owns, after a grace period, never under hold."""

import hashlib

from application.node import NodeSettings
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    RUN,
    append_numbers,
    body_of,
    committed,
    fake_clock,
    key,
    make_stream,
    uploaded,
)

GRACE = 600
REGIONS = ("local",)


def sim_with_grace() -> Simulation:
    return simulation(node=NodeSettings(orphan_grace_seconds=GRACE,
                                        object_intent_ttl_seconds=10 * GRACE))


async def put_body(sim: Simulation, object_key: str, data: bytes = b"stray") -> None:
    """A body in the store that no Runnel step recorded (as a crash would leave it)."""
    await sim.ports.objects.put("local", object_key, body_of(data), len(data),
                          hashlib.sha256(data).hexdigest())


async def test_a_body_nothing_owns_is_swept_once_past_the_grace_period() -> None:
    sim = sim_with_grace()
    clock = fake_clock(sim)
    await make_stream(sim)
    stray = f"{key().tenant}/{RUN}/s/00000000-0000-4000-8000-000000000000"
    await put_body(sim, stray)
    await put_body(sim, "not/a/runnel/key/shape")
    clock.advance(GRACE - 1)
    assert await sim.service.orphan_sweeper.sweep(REGIONS) == 0
    clock.advance(1)
    assert await sim.service.orphan_sweeper.sweep(REGIONS) == 1
    assert sim.ports.objects.keys("local") == ["not/a/runnel/key/shape"]


async def test_live_intents_and_retained_records_keep_their_bodies() -> None:
    sim = sim_with_grace()
    clock = fake_clock(sim)
    await make_stream(sim, retention={"max_records": 2})
    live = await uploaded(sim, "live")
    await committed(sim, "kept")
    await committed(sim, "pruned")
    clock.advance(GRACE)
    assert await sim.service.orphan_sweeper.sweep(REGIONS) == 0
    await append_numbers(sim, 1, 2)
    await sim.service.retention.prune(key())  # both object records go; bodies queued
    assert await sim.service.orphan_sweeper.sweep(REGIONS) == 2  # even before the outbox runs
    assert sim.ports.objects.keys("local") == [live.object_key]


async def test_nothing_is_swept_from_a_held_stream() -> None:
    sim = sim_with_grace()
    clock = fake_clock(sim)
    await make_stream(sim)
    stray = f"{key().tenant}/{RUN}/s/00000000-0000-4000-8000-000000000000"
    await put_body(sim, stray)
    aborted = await uploaded(sim, "aborted")
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "audit")
    await sim.service.objects.abort(ALICE, RUN, "s", aborted.object_id)
    clock.advance(GRACE)
    assert await sim.service.orphan_sweeper.sweep(REGIONS) == 0
    assert sorted(sim.ports.objects.keys("local")) == sorted([stray, aborted.object_key])
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", False, None)
    assert await sim.service.orphan_sweeper.sweep(REGIONS) == 2
    assert sim.ports.objects.keys("local") == []
