"""The `DeletionOutbox` contract: queued body deletions claimed under a lease, once per
body, completed or postponed.
"""

from __future__ import annotations

from datetime import timedelta

from domain.identifiers import StreamKey
from tests.contracts.harness import StorageHarness
from tests.contracts.storage_support import (
    HERE,
    LEASE,
    NOW,
    created,
    our_bodies,
)


class DeletionOutboxContract:
    async def queued_bodies(self, harness: StorageHarness) -> tuple[StreamKey, list[str]]:
        key = await created(harness)
        bodies = [f"{key.tenant}/b{n}" for n in range(3)]
        async with harness.store.lock(key) as session:
            session.queue_deletions([("local", bodies[0]), ("local", bodies[1])], NOW)
            session.queue_deletions([("local", bodies[0])], NOW)  # already queued: once
        async with harness.store.lock(key) as session:
            session.queue_deletions([("local", bodies[2]), ("local", bodies[1])],
                                    NOW + timedelta(seconds=1))
        return key, bodies

    async def test_queued_deletions_are_claimed_with_a_lease_once_per_body(
            self, harness: StorageHarness) -> None:
        key, bodies = await self.queued_bodies(harness)
        claimed = our_bodies(await harness.deletions.claim("w1", NOW, LEASE, 1000, HERE), key)
        assert [(d.region, d.object_key, d.attempts, d.last_error) for d in claimed] == [
            ("local", bodies[0], 0, None), ("local", bodies[1], 0, None)]
        assert len({d.id for d in claimed}) == 2
        soon = NOW + timedelta(seconds=1)
        due = our_bodies(await harness.deletions.claim("w2", soon, LEASE, 1000, HERE), key)
        assert [d.object_key for d in due] == [bodies[2]]
        during = NOW + timedelta(seconds=LEASE - 1)
        assert our_bodies(await harness.deletions.claim("w2", during, LEASE, 1000, HERE), key) == []
        after = NOW + timedelta(seconds=LEASE + 2)
        taken_over = our_bodies(await harness.deletions.claim("w2", after, LEASE, 1000, HERE), key)
        assert [d.object_key for d in taken_over] == bodies
        assert [d.id for d in taken_over[:2]] == [d.id for d in claimed]

    async def test_completed_deletions_are_gone_and_postponed_ones_wait(
            self, harness: StorageHarness) -> None:
        key, bodies = await self.queued_bodies(harness)
        soon = NOW + timedelta(seconds=1)
        claimed = await harness.deletions.claim("w", soon, LEASE, 9, HERE)
        first, second, third = our_bodies(claimed, key)
        await harness.deletions.complete(first.id)
        held_until = NOW + timedelta(hours=1)
        await harness.deletions.postpone(second.id, held_until)
        await harness.deletions.postpone(third.id, held_until, "ConnectionError: down")
        before = held_until - timedelta(seconds=1)
        assert our_bodies(await harness.deletions.claim("w", before, LEASE, 1000, HERE), key) == []
        again = our_bodies(await harness.deletions.claim("w", held_until, LEASE, 1000, HERE), key)
        assert [(d.object_key, d.attempts, d.last_error) for d in again] == [
            (bodies[1], 0, None), (bodies[2], 1, "ConnectionError: down")]
        async with harness.store.lock(key) as session:  # a completed body may be queued anew
            session.queue_deletions([("local", bodies[0])], held_until)
        later = held_until + timedelta(seconds=LEASE + 1)
        last = our_bodies(await harness.deletions.claim("w", later, LEASE, 1000, HERE), key)
        assert [d.object_key for d in last] == [bodies[1], bodies[2], bodies[0]]

    async def test_deletions_in_flight_are_the_stream_s_claims_under_a_live_lease(
            self, harness: StorageHarness) -> None:
        key, _ = await self.queued_bodies(harness)
        assert await harness.deletions.in_flight(key, NOW) == 0  # queued, not claimed
        claimed = our_bodies(await harness.deletions.claim("w", NOW, LEASE, 1000, HERE), key)
        assert len(claimed) == 2
        assert await harness.deletions.in_flight(key, NOW) == 2
        other, _ = await self.queued_bodies(harness)
        assert await harness.deletions.in_flight(other, NOW) == 0
        await harness.deletions.complete(claimed[0].id)
        await harness.deletions.postpone(claimed[1].id, NOW + timedelta(hours=1))
        assert await harness.deletions.in_flight(key, NOW) == 0
        again = our_bodies(await harness.deletions.claim("w", NOW + timedelta(seconds=1),
                                                         LEASE, 1000, HERE), key)
        assert len(again) == 1
        assert await harness.deletions.in_flight(key, NOW + timedelta(seconds=2)) == 1
        expired = NOW + timedelta(seconds=LEASE + 2)
        assert await harness.deletions.in_flight(key, expired) == 0  # its worker is presumed dead
