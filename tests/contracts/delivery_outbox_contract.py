"""The `DeliveryOutbox` contract: input records claimed under a lease, completed, retried,
dead-lettered, counted.
"""

from __future__ import annotations

from datetime import timedelta

from domain.identifiers import StreamKey
from tests.contracts.harness import StorageHarness
from tests.contracts.storage_support import (
    HERE,
    LEASE,
    NOW,
    append,
    created,
    ours,
)


class DeliveryOutboxContract:
    async def input_rows(self, harness: StorageHarness, count: int = 3) -> StreamKey:
        key = await created(harness, direction="input")
        await append(harness, key, [{"payload": n} for n in range(count)], deliveries=True)
        return key

    async def test_claims_are_leased(self, harness: StorageHarness) -> None:
        key = await self.input_rows(harness)
        first = ours(await harness.outbox.claim("w1", NOW, LEASE, 1000, HERE), key)
        assert [(d.sequence, d.attempts, d.claimed_by, d.dead) for d in first] == [
            (1, 0, "w1", False), (2, 0, "w1", False), (3, 0, "w1", False)]
        during = NOW + timedelta(seconds=LEASE - 1)
        assert ours(await harness.outbox.claim("w2", during, LEASE, 1000, HERE), key) == []
        after = NOW + timedelta(seconds=LEASE + 1)
        taken_over = ours(await harness.outbox.claim("w2", after, LEASE, 1000, HERE), key)
        assert [(d.sequence, d.claimed_by) for d in taken_over] == [
            (1, "w2"), (2, "w2"), (3, "w2")]

    async def test_a_claim_takes_at_most_limit_rows(self, harness: StorageHarness) -> None:
        key = await self.input_rows(harness)
        limited = await harness.outbox.claim("w1", NOW, LEASE, 2, HERE)
        assert len(limited) == 2
        rest = await harness.outbox.claim("w1", NOW, LEASE, 1000, HERE)
        first, second = ours(limited, key), ours(rest, key)
        assert sorted(d.sequence for d in first + second) == [1, 2, 3]  # each row exactly once

    async def test_completed_rows_are_never_claimed_again(self, harness: StorageHarness) -> None:
        key = await self.input_rows(harness)
        await harness.outbox.claim("w1", NOW, LEASE, 1000, HERE)
        await harness.outbox.complete(key, 2)
        later = NOW + timedelta(seconds=LEASE * 10)
        assert [d.sequence for d in ours(await harness.outbox.claim("w2", later, LEASE, 1000, HERE),
                                         key)] == [1, 3]

    async def test_a_retried_row_waits_for_its_next_attempt(
            self, harness: StorageHarness) -> None:
        key = await self.input_rows(harness, count=1)
        await harness.outbox.claim("w1", NOW, LEASE, 1000, HERE)
        retry_at = NOW + timedelta(seconds=LEASE * 2)
        await harness.outbox.retry(key, 1, "ConnectionError: down", retry_at)
        before = retry_at - timedelta(seconds=1)
        assert ours(await harness.outbox.claim("w2", before, LEASE, 1000, HERE), key) == []
        [row] = ours(await harness.outbox.claim("w2", retry_at, LEASE, 1000, HERE), key)
        assert (row.sequence, row.attempts, row.last_error, row.claimed_by) == (
            1, 1, "ConnectionError: down", "w2")

    async def test_dead_letters_stay_visible_and_are_never_claimed(
            self, harness: StorageHarness) -> None:
        key = await self.input_rows(harness)
        await harness.outbox.claim("w1", NOW, LEASE, 1000, HERE)
        await harness.outbox.dead_letter(key, 2, "gave up")
        [dead] = await harness.outbox.dead_letters(key)
        assert (dead.stream, dead.sequence, dead.dead, dead.last_error) == (
            key, 2, True, "gave up")
        later = NOW + timedelta(seconds=LEASE * 10)
        assert [d.sequence for d in ours(await harness.outbox.claim("w2", later, LEASE, 1000, HERE),
                                         key)] == [1, 3]
        other = await self.input_rows(harness)
        assert await harness.outbox.dead_letters(other) == []

    async def test_pending_rows_are_those_neither_completed_nor_dead_lettered(
            self, harness: StorageHarness) -> None:
        everywhere = await harness.outbox.pending_count()  # rows of earlier tests included
        key = await self.input_rows(harness)
        assert await harness.outbox.pending_count(key) == 3
        assert len(await harness.outbox.claim("w", NOW, LEASE, 1000, HERE)) >= 3
        assert await harness.outbox.pending_count(key) == 3  # claimed is still pending
        await harness.outbox.complete(key, 1)
        await harness.outbox.retry(key, 2, "down", NOW + timedelta(hours=1))
        await harness.outbox.dead_letter(key, 3, "gave up")
        assert await harness.outbox.pending_count(key) == 1
        other = await self.input_rows(harness)
        assert await harness.outbox.pending_count(other) == 3
        assert await harness.outbox.pending_count() == everywhere + 1 + 3
