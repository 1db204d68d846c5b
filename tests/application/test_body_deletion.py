"""The deletion worker removes queued bodies, postpones them while the stream is held, and
retries store failures with backoff."""

import asyncio
from collections.abc import AsyncIterable, AsyncIterator

from adapters.memory.objects import MemoryObjectStore
from application.body_deletion import HOLD_RECHECK_SECONDS, BodyDeleter, deletion_backoff_seconds
from application.node import NodeSettings
from application.ports.objects import ObjectEvidence
from domain.object_intent import ObjectIntent
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
    uploaded,
)


async def pruned_object(sim: Simulation) -> ObjectIntent:
    """A committed object whose record retention removed: its body is queued for deletion."""
    await make_stream(sim, retention={"max_records": 1})
    intent = await committed(sim)
    await append_numbers(sim, 1, 1)
    await sim.service.retention.prune(key())
    assert sim.ports.deletions.queued() == [("local", intent.object_key)]
    return intent


class FlakyObjectStore:
    """Deletes fail `failures` times, then reach the real store."""

    def __init__(self, inner: MemoryObjectStore, failures: int) -> None:
        self._inner = inner
        self.failures = failures

    def serves(self, region: str) -> bool:
        return self._inner.serves(region)

    async def put(self, region: str, key: str, body: AsyncIterable[bytes], size: int,
                  sha256: str) -> ObjectEvidence:
        return await self._inner.put(region, key, body, size, sha256)

    async def stat(self, region: str, key: str) -> ObjectEvidence | None:
        return await self._inner.stat(region, key)

    def open(self, region: str, key: str) -> AsyncIterator[bytes]:
        return self._inner.open(region, key)

    async def delete(self, region: str, key: str) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("object store unavailable")
        await self._inner.delete(region, key)


async def test_a_body_of_a_held_stream_waits_until_the_hold_is_released() -> None:
    sim = simulation()
    clock = fake_clock(sim)
    intent = await pruned_object(sim)
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "audit")
    assert await sim.service.body_deleter.delete_once("w") == 0
    clock.advance(HOLD_RECHECK_SECONDS)
    assert await sim.service.body_deleter.delete_once("w") == 0
    assert sim.ports.objects.keys("local") == [intent.object_key]
    assert sim.ports.deletions.queued() == [("local", intent.object_key)]
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", False, None)
    assert await sim.service.body_deleter.delete_once("w") == 0  # not due before the recheck
    clock.advance(HOLD_RECHECK_SECONDS)
    assert await sim.service.body_deleter.delete_once("w") == 1
    assert sim.ports.objects.keys("local") == []
    assert sim.ports.deletions.queued() == []


async def test_a_failed_delete_is_retried_with_backoff_and_never_dropped() -> None:
    sim = simulation()
    clock = fake_clock(sim)
    intent = await pruned_object(sim)
    flaky = FlakyObjectStore(sim.ports.objects, failures=2)
    deleter = BodyDeleter(sim.ports.deletions, sim.ports.store, flaky, clock, NodeSettings())
    assert await deleter.delete_once("w") == 0
    assert await deleter.delete_once("w") == 0  # backing off: not even tried
    assert flaky.failures == 1
    clock.advance(deletion_backoff_seconds(1))
    assert await deleter.delete_once("w") == 0
    clock.advance(deletion_backoff_seconds(1))
    assert await deleter.delete_once("w") == 0  # the backoff grew
    clock.advance(deletion_backoff_seconds(2))
    assert await deleter.delete_once("w") == 1
    assert sim.ports.objects.keys("local") == [] and sim.ports.deletions.queued() == []
    assert intent.object_key not in sim.ports.objects.keys("local")


async def test_a_claimed_deletion_is_taken_over_only_after_its_lease() -> None:
    sim = simulation()
    clock = fake_clock(sim)
    await pruned_object(sim)
    lease = NodeSettings().delivery_lease_seconds
    claimed = await sim.ports.deletions.claim("dead-worker", clock.now(), lease, 10, "local")
    assert len(claimed) == 1 and claimed[0].stream == key()
    assert await sim.service.body_deleter.delete_once("w") == 0
    clock.advance(lease)
    assert await sim.service.body_deleter.delete_once("w") == 1
    assert sim.ports.objects.keys("local") == []


async def test_abort_under_legal_hold_keeps_the_body_until_the_hold_is_released() -> None:
    sim = simulation()
    clock = fake_clock(sim)
    await make_stream(sim)
    intent = await uploaded(sim)
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "audit")
    await sim.service.objects.abort(ALICE, RUN, "s", intent.object_id)
    assert sim.ports.objects.keys("local") == [intent.object_key]
    assert await sim.service.body_deleter.delete_once("w") == 0
    await sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", False, None)
    clock.advance(HOLD_RECHECK_SECONDS)
    assert await sim.service.body_deleter.delete_once("w") == 1
    assert sim.ports.objects.keys("local") == []


async def test_abort_deletes_at_once_through_the_outbox() -> None:
    sim = simulation()
    await make_stream(sim)
    intent = await uploaded(sim)
    await sim.service.objects.abort(ALICE, RUN, "s", intent.object_id)
    assert sim.ports.objects.keys("local") == []
    assert sim.ports.deletions.queued() == []  # claimed, deleted, completed


async def test_an_at_once_delete_that_fails_is_left_to_the_worker() -> None:
    sim = simulation()
    clock = fake_clock(sim)
    intent = await pruned_object(sim)  # queued, as a change that deletes at once queues it
    flaky = FlakyObjectStore(sim.ports.objects, failures=1)
    deleter = BodyDeleter(sim.ports.deletions, sim.ports.store, flaky, clock, NodeSettings())
    assert await deleter.delete_now([("local", intent.object_key)]) == 0
    assert sim.ports.objects.keys("local") == [intent.object_key]
    assert sim.ports.deletions.queued() == [("local", intent.object_key)]
    clock.advance(deletion_backoff_seconds(1))
    assert await deleter.delete_once("w") == 1
    assert sim.ports.objects.keys("local") == []


class GatedObjectStore(FlakyObjectStore):
    """Deletes wait at a gate: a deletion is under way until the test opens it."""

    def __init__(self, inner: MemoryObjectStore) -> None:
        super().__init__(inner, failures=0)
        self.deleting = asyncio.Event()
        self.gate = asyncio.Event()

    async def delete(self, region: str, key: str) -> None:
        self.deleting.set()
        await self.gate.wait()
        await super().delete(region, key)


async def test_placing_a_hold_waits_for_a_deletion_already_under_way() -> None:
    sim = simulation()
    gated = GatedObjectStore(sim.ports.objects)
    deleter = BodyDeleter(sim.ports.deletions, sim.ports.store, gated, sim.ports.clock,
                          NodeSettings())
    first = await pruned_object(sim)
    second = await committed(sim, "o2", b"2nd")
    await append_numbers(sim, 2, 2)
    await sim.service.retention.prune(key())
    assert len(sim.ports.deletions.queued()) == 2
    worker = asyncio.create_task(deleter.delete_once("w", limit=1))
    await asyncio.wait_for(gated.deleting.wait(), 5)  # it saw no hold, and is deleting

    hold = asyncio.create_task(
        sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "audit"))
    await asyncio.sleep(0.3)
    assert not hold.done()  # the answer would promise what the worker is breaking
    gated.gate.set()
    assert await asyncio.wait_for(worker, 5) == 1
    assert await asyncio.wait_for(hold, 5) == (True, "audit")
    assert first.object_key not in sim.ports.objects.keys("local")

    # From the answer on, nothing of the stream is deleted.
    assert await deleter.delete_once("w") == 0
    assert second.object_key in sim.ports.objects.keys("local")


async def test_placing_a_hold_does_not_wait_for_a_claim_whose_lease_ended() -> None:
    sim = simulation()
    clock = fake_clock(sim)
    await pruned_object(sim)
    lease = NodeSettings().delivery_lease_seconds
    assert len(await sim.ports.deletions.claim("dead-worker", clock.now(), lease, 10, "local")) == 1
    clock.advance(lease + 1)
    assert await asyncio.wait_for(
        sim.service.lifecycle.set_legal_hold(ADMIN, RUN, "s", True, "audit"), 1) == (
        True, "audit")
