"""The `DeliveryOutbox` contract: input records claimed under a lease, one line per stream
in sequence order, completed, retried, released, dead-lettered, re-driven, counted.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from uuid import uuid4

from application.ports.outboxes import DeliveryRedrive
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

    async def lonely_lines(self, harness: StorageHarness, *counts: int
                           ) -> tuple[str, list[StreamKey]]:
        """Input streams with `counts` rows each, homed in a region of their own: a claim
        there sees only them (other tests leave pending rows in the shared store)."""
        home = f"home-{uuid4().hex[:10]}"
        placement = {"metadata_home": home, "object_regions": [home],
                     "client_egress_regions": [home], "log_region": home}
        keys = []
        for count in counts:
            key = await created(harness, direction="input", placement=placement)
            await append(harness, key, [{"payload": n} for n in range(count)], deliveries=True)
            keys.append(key)
        return home, keys

    async def test_a_claim_takes_at_most_limit_rows(self, harness: StorageHarness) -> None:
        home, [key] = await self.lonely_lines(harness, 3)
        limited = await harness.outbox.claim("w1", NOW, LEASE, 2, home)
        assert [(d.stream, d.sequence) for d in limited] == [(key, 1), (key, 2)]
        # Its head is leased: nothing of the stream goes to anyone, not even row 3.
        assert await harness.outbox.claim("w2", NOW, LEASE, 1000, home) == []
        after = NOW + timedelta(seconds=LEASE + 1)
        assert [d.sequence for d in await harness.outbox.claim("w2", after, LEASE, 1000,
                                                               home)] == [1, 2, 3]

    async def test_every_streams_head_goes_before_any_streams_second_row(
            self, harness: StorageHarness) -> None:
        home, keys = await self.lonely_lines(harness, 3, 3, 3)
        claimed = await harness.outbox.claim("w", NOW, LEASE, 4, home)
        assert len(claimed) == 4
        assert [(d.stream, d.sequence) for d in claimed] == sorted(
            (d.stream, d.sequence) for d in claimed)
        per_stream = Counter(d.stream for d in claimed)
        assert sorted(per_stream.values()) == [1, 1, 2] and set(per_stream) == set(keys)
        for key, count in per_stream.items():  # each stream's from its head on
            assert [d.sequence for d in ours(claimed, key)] == list(range(1, count + 1))

    async def test_no_row_is_claimed_while_an_earlier_one_of_its_stream_backs_off(
            self, harness: StorageHarness) -> None:
        home, [key, other] = await self.lonely_lines(harness, 3, 2)
        claimed = await harness.outbox.claim("w1", NOW, LEASE, 1000, home)
        assert len(ours(claimed, key)) == 3
        retry_at = NOW + timedelta(seconds=LEASE * 2)
        await harness.outbox.retry(key, 1, "ConnectionError: down", retry_at)
        await harness.outbox.release(key, [2, 3], "w1")
        await harness.outbox.complete(other, 1)
        await harness.outbox.release(other, [2], "w1")
        later = NOW + timedelta(seconds=1)
        assert [(d.stream, d.sequence) for d in await harness.outbox.claim(
            "w2", later, LEASE, 1000, home)] == [(other, 2)]  # the other stream goes on
        assert [(d.sequence, d.attempts) for d in ours(await harness.outbox.claim(
            "w2", retry_at, LEASE, 1000, home), key)] == [(1, 1), (2, 0), (3, 0)]

    async def test_a_release_hands_back_only_the_releasing_workers_rows_unattempted(
            self, harness: StorageHarness) -> None:
        home, [key] = await self.lonely_lines(harness, 3)
        await harness.outbox.claim("w1", NOW, LEASE, 1000, home)
        await harness.outbox.complete(key, 1)
        await harness.outbox.release(key, [2, 3], "someone-else")
        assert await harness.outbox.claim("w2", NOW, LEASE, 1000, home) == []
        await harness.outbox.release(key, [2, 3], "w1")
        assert [(d.sequence, d.attempts, d.claimed_by) for d in await harness.outbox.claim(
            "w2", NOW, LEASE, 1000, home)] == [(2, 0, "w2"), (3, 0, "w2")]

    async def test_a_dead_letter_no_longer_holds_back_its_stream(
            self, harness: StorageHarness) -> None:
        home, [key] = await self.lonely_lines(harness, 3)
        await harness.outbox.claim("w1", NOW, LEASE, 1000, home)
        await harness.outbox.dead_letter(key, 1, "gave up")
        await harness.outbox.release(key, [2, 3], "w1")
        assert [d.sequence for d in await harness.outbox.claim("w2", NOW, LEASE, 1000,
                                                               home)] == [2, 3]

    async def test_a_redrive_puts_only_dead_letters_back_at_their_place_and_records_it(
            self, harness: StorageHarness) -> None:
        home, [key, other] = await self.lonely_lines(harness, 4, 1)
        await harness.outbox.claim("w1", NOW, LEASE, 1000, home)
        for sequence in (1, 2):
            await harness.outbox.dead_letter(key, sequence, "gave up")
        await harness.outbox.complete(key, 3)  # delivered while 1 and 2 were dead
        await harness.outbox.dead_letter(other, 1, "gave up")
        at = NOW + timedelta(seconds=LEASE / 2)
        assert await harness.outbox.redrive(key, [2, 3, 4, 99], "root", at) == [2]
        assert [d.sequence for d in await harness.outbox.dead_letters(key)] == [1]
        assert await harness.outbox.redrive(key, [2], "root", at) == []  # not dead: no-op
        assert await harness.outbox.redrives(key, 10) == [DeliveryRedrive("root", at, (2,))]
        # 2 is back in line below 4, which is still leased by w1: it is the stream's head.
        assert [(d.sequence, d.attempts, d.last_error, d.dead) for d in await
                harness.outbox.claim("w2", at, LEASE, 1000, home)] == [(2, 0, None, False)]
        assert await harness.outbox.pending_count(key) == 2
        later = at + timedelta(seconds=1)
        assert await harness.outbox.redrive(key, [1], "ops", later) == [1]
        assert await harness.outbox.redrives(key, 10) == [
            DeliveryRedrive("ops", later, (1,)), DeliveryRedrive("root", at, (2,))]
        assert await harness.outbox.redrives(key, 1) == [DeliveryRedrive("ops", later, (1,))]
        assert await harness.outbox.redrives(other, 10) == []
        assert [d.sequence for d in await harness.outbox.dead_letters(other)] == [1]

    async def test_racing_redrives_redrive_a_dead_letter_once(
            self, harness: StorageHarness) -> None:
        home, [key] = await self.lonely_lines(harness, 2)
        await harness.outbox.claim("w1", NOW, LEASE, 1000, home)
        await harness.outbox.dead_letter(key, 1, "gave up")
        await harness.outbox.dead_letter(key, 2, "gave up")
        answers = await asyncio.gather(*(harness.outbox.redrive(key, [1, 2], f"op{n}", NOW)
                                         for n in range(4)))
        assert sorted(sequence for answer in answers for sequence in answer) == [1, 2]
        audit = await harness.outbox.redrives(key, 10)
        assert sorted(sequence for redrive in audit for sequence in redrive.sequences) == [1, 2]

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
