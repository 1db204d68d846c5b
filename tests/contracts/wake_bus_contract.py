"""The `WakeBus` contract: wakes after commits only, to the subscribers of their stream;
live chunks numbered, to live subscribers only, in one order with the closing wake.
"""

from __future__ import annotations

import asyncio

import pytest

from application.ports.waking import LiveChunk, LiveDraft, Wake, WakeSubscription
from domain.identifiers import StreamKey
from domain.records import draft_from_wire
from tests.contracts.harness import StorageHarness
from tests.contracts.storage_support import (
    QUIET,
    WAKE_TIMEOUT,
    Boom,
    append,
    created,
    next_wake,
    stored,
)


async def eventually_offered(offered: list[Wake], count: int) -> None:
    """The Postgres bus may deliver through its listener: wait (bounded) for the offer."""
    for _ in range(int(WAKE_TIMEOUT / 0.01)):
        if len(offered) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(offered)} wakes offered, expected {count}")


class WakeBusContract:
    async def test_a_commit_wakes_subscribers_after_the_commit_with_small_records(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        async with harness.bus.subscribe(key) as subscription:
            async with harness.store.lock(key) as session:
                plan = session.stream.plan_append(
                    [draft_from_wire({"payload": {"n": n}}, ()) for n in (1, 2)], {})
                session.stream.append(plan)
                session.add_records(stored(plan))
                assert await subscription.next(QUIET) is None  # nothing before the commit
            wake = await next_wake(subscription)
        assert (wake.stream, wake.head, wake.closed) == (key, 2, False)
        assert wake.records is not None
        assert [(r.sequence, r.payload) for r in wake.records] == [(1, {"n": 1}), (2, {"n": 2})]

    async def test_an_offered_wake_reaches_the_taker_and_only_a_declined_one_is_queued(
            self, harness: StorageHarness) -> None:
        """ADR 0079: committed wakes are offered, in the publisher's call, while nothing is
        queued; a wake the taker takes is not queued, one it declines is."""
        key = await created(harness)
        offered: list[Wake] = []
        take = True

        def taker(wake: Wake) -> bool:
            offered.append(wake)
            return take

        async with harness.bus.subscribe(key) as subscription:
            subscription.offer(taker)
            await append(harness, key, [{"payload": 1}])
            await eventually_offered(offered, 1)
            assert [wake.head for wake in offered] == [1]
            assert await subscription.next(QUIET) is None  # taken: nothing queued
            take = False
            await append(harness, key, [{"payload": 2}])
            await eventually_offered(offered, 2)
            take = True
            await append(harness, key, [{"payload": 3}])  # queued behind the declined one
            assert (await next_wake(subscription)).head == 2
            assert (await next_wake(subscription)).head == 3
            assert len(offered) == 2
            subscription.offer(None)
            await append(harness, key, [{"payload": 4}])
            assert (await next_wake(subscription)).head == 4
            assert len(offered) == 2

    async def test_a_batch_of_6000_bytes_or_more_wakes_without_records(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        half = "x" * 2998  # 3000 bytes as compact JSON
        async with harness.bus.subscribe(key) as subscription:
            await append(harness, key, [{"payload": half}, {"payload": half}])
            wake = await next_wake(subscription)
        assert (wake.head, wake.records) == (2, None)

    async def test_closing_wakes_with_closed(self, harness: StorageHarness) -> None:
        key = await created(harness)
        await append(harness, key, [{"payload": 1}])
        async with harness.bus.subscribe(key) as subscription:
            async with harness.store.lock(key) as session:
                session.stream.close()
            wake = await next_wake(subscription)
        assert (wake.head, wake.closed) == (1, True)
        assert not wake.records

    async def test_a_failed_unit_of_work_wakes_nobody(self, harness: StorageHarness) -> None:
        key = await created(harness)
        async with harness.bus.subscribe(key) as subscription:
            with pytest.raises(Boom):
                async with harness.store.lock(key) as session:
                    plan = session.stream.plan_append(
                        [draft_from_wire({"payload": "never"}, ())], {})
                    session.stream.append(plan)
                    session.add_records(stored(plan))
                    raise Boom
            await append(harness, key, [{"payload": "kept"}])
            wake = await next_wake(subscription)
            assert wake.records is not None
            assert [r.payload for r in wake.records] == ["kept"]
            assert await subscription.next(QUIET) is None

    async def test_wakes_reach_only_subscribers_of_their_stream(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        other = await created(harness, StreamKey(key.tenant, key.run_id, "other"))
        async with harness.bus.subscribe(key) as subscription:
            await append(harness, other, [{"payload": "elsewhere"}])
            await append(harness, key, [{"payload": "here"}])
            wake = await next_wake(subscription)
        assert wake.stream == key and wake.records is not None
        assert [r.payload for r in wake.records] == ["here"]

    async def test_live_chunks_reach_only_live_subscribers(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        draft = LiveDraft(key, {"token": "hi"}, source="model_turn", attempt=2, index=0,
                          positioned=True)
        async with harness.bus.subscribe(key, live=True) as live, \
                harness.bus.subscribe(key) as plain:
            await harness.bus.publish_live([draft])
            chunk = await live.next(WAKE_TIMEOUT)
            assert isinstance(chunk, LiveChunk) and chunk == draft.numbered(chunk.seq)
            await append(harness, key, [{"payload": 1}])
            assert isinstance(await plain.next(WAKE_TIMEOUT), Wake)  # the chunk never came

    async def test_the_bus_numbers_live_chunks_and_a_re_driven_position_keeps_its_seq(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        turn = {"source": "model_turn", "attempt": 1, "positioned": True}
        # The copy differs (content may be non-deterministic): Postgres folds identical
        # NOTIFYs of one transaction into one, which keep-first would do anyway.
        drafts = [LiveDraft(key, "a", **turn, index=0), LiveDraft(key, "plain"),
                  LiveDraft(key, "b", **turn, index=1), LiveDraft(key, "a'", **turn, index=0),
                  LiveDraft(key, "c", **turn, index=2)]
        async with harness.bus.subscribe(key, live=True) as live:
            for draft in drafts:
                await harness.bus.publish_live([draft])
            seqs: list[int] = []
            while len(seqs) < len(drafts):
                signal = await live.next(WAKE_TIMEOUT)
                assert signal is not None, seqs
                if isinstance(signal, LiveChunk):
                    seqs.append(signal.seq)
        assert seqs[3] == seqs[0]
        new = seqs[:3] + seqs[4:]
        assert new == sorted(set(new))

    async def test_publishing_a_live_chunk_without_readers_is_fine(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        await harness.bus.publish_live([LiveDraft(key, "nobody listens")])

    async def test_a_closing_wake_comes_after_every_chunk_published_before_it(
            self, harness: StorageHarness) -> None:
        """Close after live (ADR 0056): on every subscription, each chunk whose publish
        returned before the close committed comes first, each one published after the
        commit comes after; tried many times, since the old adapters lost it by a race."""
        for attempt in range(CLOSE_RACE_TRIES):
            key = await created(harness)
            async with harness.bus.subscribe(key, live=True) as first, \
                    harness.bus.subscribe(key, live=True) as second:
                before = [f"{attempt}.{n}" for n in range(3)]
                await harness.bus.publish_live([LiveDraft(key, data) for data in before[:2]])
                await harness.bus.publish_live([LiveDraft(key, before[2])])
                async with harness.store.lock(key) as session:
                    session.stream.close()
                await harness.bus.publish_live([LiveDraft(key, "late")])
                for subscription in (first, second):
                    assert await chunks_until_closed(subscription) == before
                    after = await subscription.next(WAKE_TIMEOUT)
                    assert isinstance(after, LiveChunk) and after.data == "late"


CLOSE_RACE_TRIES = 25


async def chunks_until_closed(subscription: WakeSubscription) -> list[object]:
    """The data of the chunks that come before the first wake that says closed."""
    chunks: list[object] = []
    while True:
        signal = await subscription.next(WAKE_TIMEOUT)
        assert signal is not None, f"no closing wake after {chunks}"
        if isinstance(signal, LiveChunk):
            chunks.append(signal.data)
        elif signal.closed:
            return chunks
