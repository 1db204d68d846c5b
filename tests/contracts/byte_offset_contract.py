"""Byte offsets (ADR 0047): every stored record answers the stream's running byte total
through itself under the row lock, and the credit a store loads back is what the sizes
above the floor add up to, through acks of several consumers and prunes."""

from __future__ import annotations

from domain.identifiers import StreamKey
from domain.records import draft_from_wire
from tests.contracts.harness import StorageHarness
from tests.contracts.storage_support import ack_in, append, created, prune_in, stored


async def sizes(harness: StorageHarness, key: StreamKey) -> dict[int, int]:
    page = await harness.reader.read_page(key, 0, 1000)
    return {record.sequence: record.size for record in page.records}


async def unread(harness: StorageHarness, key: StreamKey) -> tuple[int, int]:
    loaded = await harness.store.load(key)
    assert loaded is not None
    return loaded.usage.unread_items, loaded.usage.unread_bytes


class ByteOffsetContract:
    async def test_a_record_answers_the_running_total_through_itself(
            self, harness: StorageHarness) -> None:
        key = await created(harness, consumers=["ui"])
        await append(harness, key, [{"payload": "a" * n} for n in (1, 20, 300)])
        known = await sizes(harness, key)
        assert len(set(known.values())) == 3  # distinct sizes: a wrong record cannot pass
        async with harness.store.lock(key) as session:
            assert [await session.offset_through(n) for n in (1, 2, 3)] == [
                known[1], known[1] + known[2], known[1] + known[2] + known[3]]
            assert await session.offset_through(0) is None
            assert await session.offset_through(4) is None
            # Staged by this very unit of work: answered before it commits.
            plan = session.stream.plan_append([draft_from_wire({"payload": "bb"}, ())], {})
            session.stream.append(plan)
            session.add_records(stored(plan))
            assert await session.offset_through(4) == session.stream.head_offset == (
                sum(known.values()) + plan.new[0][1].size)
        async with harness.store.lock(key) as session:
            await prune_in(session, 2)
            await session.remove_records_through(2)
        async with harness.store.lock(key) as session:
            assert await session.offset_through(2) is None  # pruned: gone with its record
            assert await session.offset_through(3) == sum(known.values())

    async def test_unread_credit_is_the_sizes_above_the_slowest_ack(
            self, harness: StorageHarness) -> None:
        key = await created(harness, consumers=["ui", "audit"])
        await append(harness, key, [{"payload": "x" * n} for n in (5, 50, 7, 70, 9)])
        known = await sizes(harness, key)

        def above(floor: int) -> tuple[int, int]:
            window = [size for sequence, size in known.items() if sequence > floor]
            return len(window), sum(window)

        assert await unread(harness, key) == above(0)
        async with harness.store.lock(key) as session:
            await ack_in(session, "ui", 4)
        assert await unread(harness, key) == above(0)  # audit holds the floor
        async with harness.store.lock(key) as session:
            await ack_in(session, "audit", 2)
        assert await unread(harness, key) == above(2)
        async with harness.store.lock(key) as session:  # pruning past the floor frees it
            await prune_in(session, 3)
            await session.remove_records_through(3)
        assert await unread(harness, key) == above(3)
        async with harness.store.lock(key) as session:  # ui's offset was kept from its ack
            await ack_in(session, "audit", 5)
        assert await unread(harness, key) == above(4)
        await append(harness, key, [{"payload": "tail"}])
        known = await sizes(harness, key)
        assert await unread(harness, key) == above(4)
        async with harness.store.lock(key) as session:
            await ack_in(session, "ui", 6)
        assert await unread(harness, key) == above(5)
        async with harness.store.lock(key) as session:
            await ack_in(session, "audit", 6)
        assert await unread(harness, key) == (0, 0)
