"""The storage-upkeep contract (ADR 0032): what every `StorageUpkeep` adapter removes, and
what it must keep, written once.

An adapter's test module subclasses `UpkeepContract` and provides an async fixture
`upkeep` returning an `UpkeepHarness`. Each test keeps to its own tenant and run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from application.ports.upkeep import StorageUpkeep, UpkeepLimits
from domain.identifiers import StreamKey
from tests.contracts.harness import StorageHarness
from tests.contracts.storage_support import HERE, append, created, new_intent, prune_in

PAST = datetime(2000, 1, 1, tzinfo=UTC)
"""Before anything a test stores: a cutoff that removes nothing."""
FUTURE = datetime(9999, 1, 1, tzinfo=UTC)
"""After anything a test stores: a cutoff that removes everything it applies to."""


@dataclass
class UpkeepHarness:
    storage: StorageHarness
    upkeep: StorageUpkeep
    events: Callable[[StreamKey], Awaitable[int]]
    """How many events of the stream (and of its intents) are stored."""
    delivery_rows: Callable[[StreamKey], Awaitable[int]]
    """How many input-delivery rows of the stream are stored, finished or not."""


def keeping(audit_events: int = 1000, **cutoffs: datetime | None) -> UpkeepLimits:
    return UpkeepLimits(audit_events=audit_events, **cutoffs)


async def receipts(harness: StorageHarness, key: StreamKey, *names: str) -> dict[str, int]:
    async with harness.store.lock(key) as session:
        return dict(await session.receipts(list(names)))


async def prune(harness: StorageHarness, key: StreamKey, through: int) -> None:
    async with harness.store.lock(key) as session:
        await prune_in(session, through)
        await session.remove_records_through(through)


class UpkeepContract:
    async def test_compaction_keeps_the_audit_tail_and_the_state(
            self, upkeep: UpkeepHarness) -> None:
        storage = upkeep.storage
        key = await created(storage)
        for n in range(10):
            await append(storage, key, [{"payload": n}])
        before = await storage.store.load(key)
        assert before is not None and await upkeep.events(key) == 11  # Created + 10

        removed = await upkeep.upkeep.tidy([key], keeping(audit_events=3), 1000)

        assert removed.events == 8 and await upkeep.events(key) == 3
        after = await storage.store.load(key)
        assert after is not None and vars(after) == vars(before)
        assert await append(storage, key, [{"payload": "more"}]) == (11,)
        assert (await storage.reader.read_page(key, 0, 100)).head == 11

    async def test_compaction_covers_object_intents(self, upkeep: UpkeepHarness) -> None:
        storage = upkeep.storage
        key = await created(storage)
        async with storage.store.lock(key) as session:
            intent = new_intent(key)
            session.save_intent(intent)
        assert await upkeep.events(key) == 2  # the stream's Created, the intent's first

        await upkeep.upkeep.tidy([key], keeping(audit_events=0), 1000)

        assert await upkeep.events(key) == 0
        kept = await storage.store.load_intent(key, intent.object_id)
        assert kept is not None and kept.current_state == intent.current_state

    async def test_a_statement_removes_at_most_a_batch_of_each_kind(
            self, upkeep: UpkeepHarness) -> None:
        storage = upkeep.storage
        key = await created(storage)
        for n in range(6):
            await append(storage, key, [{"payload": n, "idempotency_key": f"k{n}"}])

        removed = await upkeep.upkeep.tidy([key], keeping(0, receipts_before=FUTURE), 2)

        assert (removed.events, removed.receipts) == (2, 2)
        assert await upkeep.events(key) == 5
        assert len(await receipts(storage, key, *[f"k{n}" for n in range(6)])) == 4

    async def test_receipts_of_pruned_records_go_once_past_the_retry_window(
            self, upkeep: UpkeepHarness) -> None:
        storage = upkeep.storage
        key = await created(storage)
        await append(storage, key, [{"payload": n, "idempotency_key": f"k{n}"}
                                    for n in range(1, 6)])
        await prune(storage, key, 3)
        names = [f"k{n}" for n in range(1, 6)]

        within = await upkeep.upkeep.tidy([key], keeping(pruned_receipts_before=PAST), 1000)
        assert within.receipts == 0 and len(await receipts(storage, key, *names)) == 5

        past = await upkeep.upkeep.tidy([key], keeping(pruned_receipts_before=FUTURE), 1000)
        assert past.receipts == 3
        assert await receipts(storage, key, *names) == {"k4": 4, "k5": 5}

    async def test_receipts_past_their_ttl_go_even_while_their_record_is_retained(
            self, upkeep: UpkeepHarness) -> None:
        storage = upkeep.storage
        key = await created(storage)
        await append(storage, key, [{"payload": 1, "idempotency_key": "k1"}])

        young = await upkeep.upkeep.tidy([key], keeping(receipts_before=PAST), 1000)
        assert young.receipts == 0 and await receipts(storage, key, "k1") == {"k1": 1}

        await upkeep.upkeep.tidy([key], keeping(receipts_before=FUTURE), 1000)
        assert await receipts(storage, key, "k1") == {}
        # The key is free again: a new append under it stores a new record.
        assert await append(storage, key, [{"payload": 2, "idempotency_key": "k1"}]) == (2,)

    async def test_an_erased_stream_keeps_only_its_row(self, upkeep: UpkeepHarness) -> None:
        storage = upkeep.storage
        key = await created(storage, direction="input")
        other = await created(storage, StreamKey(key.tenant, key.run_id, "kept"))
        await append(storage, key, [{"payload": 1, "idempotency_key": "k1"}], deliveries=True)
        await append(storage, other, [{"payload": 1, "idempotency_key": "k1"}])
        await storage.gaps.record_gap(key, 1, 3)
        await storage.outbox.dead_letter(key, 1, "gave up")
        assert await storage.outbox.redrive(key, [1], "root", PAST) == [1]
        async with storage.store.lock(key) as session:
            intent = new_intent(key)
            session.save_intent(intent)
        await storage.store.mark_run_erased(key.run)
        async with storage.store.lock(key) as session:
            session.stream.erase()
            await session.remove_records_through(session.stream.head)

        removed = await upkeep.upkeep.tidy([key, other], keeping(), 1000)

        assert removed.erased > 0
        assert await upkeep.events(key) == 0
        assert await receipts(storage, key, "k1") == {}
        assert await upkeep.delivery_rows(key) == 0
        assert await storage.outbox.redrives(key, 10) == []  # who re-drove goes too
        assert await storage.gaps.recorded(key) == []
        assert await storage.store.load_intent(key, intent.object_id) is None
        erased = await storage.store.load(key)
        assert erased is not None and erased.erased  # the row answers `run_erased`
        assert await receipts(storage, other, "k1") == {"k1": 1}  # the other stream's stay
        assert await upkeep.events(other) == 2

    async def test_a_deleted_stream_keeps_only_its_tombstone(
            self, upkeep: UpkeepHarness) -> None:
        storage = upkeep.storage
        key = await created(storage)
        await append(storage, key, [{"payload": 1, "idempotency_key": "k1"}])
        async with storage.store.lock(key) as session:
            session.save_intent(new_intent(key))
        async with storage.store.lock(key) as session:
            session.stream.delete()
            await session.remove_records_through(session.stream.head)

        removed = await upkeep.upkeep.tidy([key], keeping(), 1000)

        assert removed.erased > 0
        assert await upkeep.events(key) == 0
        assert await receipts(storage, key, "k1") == {}
        tombstone = await storage.store.load(key)
        assert tombstone is not None and (tombstone.deleted, tombstone.head) == (True, 1)

    async def test_an_erased_stream_under_legal_hold_keeps_everything(
            self, upkeep: UpkeepHarness) -> None:
        storage = upkeep.storage
        key = await created(storage)
        await append(storage, key, [{"payload": 1, "idempotency_key": "k1"}])
        await storage.store.mark_run_erased(key.run)
        async with storage.store.lock(key) as session:
            session.stream.set_legal_hold(True, "case 7")
            session.stream.erase()

        removed = await upkeep.upkeep.tidy([key], keeping(), 1000)

        assert removed.total == 0
        assert await receipts(storage, key, "k1") == {"k1": 1}
        assert len((await storage.reader.read_page(key, 0, 10)).records) == 1

        # Released, it is sealed but keeps its records until erased again: still kept.
        async with storage.store.lock(key) as session:
            session.stream.set_legal_hold(False, None)
        assert (await upkeep.upkeep.tidy([key], keeping(), 1000)).total == 0
        assert len((await storage.reader.read_page(key, 0, 10)).records) == 1

    async def test_purge_removes_old_finished_deliveries_and_gap_evidence(
            self, upkeep: UpkeepHarness) -> None:
        storage = upkeep.storage
        key = await created(storage, direction="input")
        await append(storage, key, [{"payload": n} for n in range(3)], deliveries=True)
        await storage.outbox.complete(key, 1)
        await storage.outbox.dead_letter(key, 2, "gave up")
        await storage.gaps.record_gap(key, 1, 3)

        kept = await upkeep.upkeep.purge(keeping(deliveries_before=PAST, gaps_before=PAST),
                                         1000, HERE)
        assert kept.total == 0
        assert await upkeep.delivery_rows(key) == 3
        assert await storage.gaps.recorded(key) == [(1, 3)]

        await upkeep.upkeep.purge(keeping(deliveries_before=FUTURE, gaps_before=FUTURE),
                                  1000, HERE)
        # The finished row goes; the dead letter (an operator acts on it) and the
        # pending row stay.
        assert await upkeep.delivery_rows(key) == 2
        assert [d.sequence for d in await storage.outbox.dead_letters(key)] == [2]
        assert await storage.outbox.pending_count(key) == 1
        assert await storage.gaps.recorded(key) == []

    async def test_streams_are_paged_by_key_in_the_home_region(
            self, upkeep: UpkeepHarness) -> None:
        storage = upkeep.storage
        first = await created(storage)
        second = await created(storage, StreamKey(first.tenant, first.run_id, "t"))
        listed = await upkeep.upkeep.streams_after(
            StreamKey(first.tenant, first.run_id, ""), 2, HERE)
        assert listed[:2] == [first, second]
        assert await upkeep.upkeep.streams_after(second, 1000, "elsewhere") == []
