"""The `RecordReader` contract: pages of records above a cursor, exactly as stored.
"""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

import pytest

from domain.errors import NotFound
from domain.records import ObjectRef, draft_for_object, draft_from_wire
from tests.contracts.harness import StorageHarness
from tests.contracts.storage_support import (
    NOW,
    append,
    created,
    new_key,
    stored,
)


class RecordReaderContract:
    async def test_records_round_trip_exactly(self, harness: StorageHarness) -> None:
        key = await created(harness)
        ref = ObjectRef(str(uuid4()), 123, "a" * 64, "application/pdf")
        drafts = [
            draft_from_wire({"payload": {"text": "héllo ✓", "list": [1, 2.5, None, True]},
                             "idempotency_key": "k1"}, ()),
            draft_from_wire({"payload": None}, ()),
            draft_from_wire({"data": "AAEC/w==", "content_type": "application/x-raw"}, ()),
            draft_for_object(ref),
        ]
        at = NOW + timedelta(microseconds=123456)
        async with harness.store.lock(key) as session:
            plan = session.stream.plan_append(drafts, {})
            session.stream.append(plan)
            expected = stored(plan, at)
            session.add_records(expected)
        page = await harness.reader.read_page(key, 0, 10)
        assert list(page.records) == expected
        assert page.records[1].has_payload and page.records[1].payload is None
        assert page.records[2].data == b"\x00\x01\x02\xff"

    async def test_read_page_returns_records_above_the_cursor_ascending(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        for n in range(1, 8):
            await append(harness, key, [{"payload": n}])
        page = await harness.reader.read_page(key, 2, 3)
        assert [r.sequence for r in page.records] == [3, 4, 5]
        assert (page.head, page.earliest, page.closed) == (7, 1, False)
        assert [r.sequence for r in (await harness.reader.read_page(key, 5, 100)).records] == [
            6, 7]
        assert (await harness.reader.read_page(key, 7, 100)).records == ()

    async def test_read_page_of_a_new_stream_is_empty(self, harness: StorageHarness) -> None:
        key = await created(harness)
        page = await harness.reader.read_page(key, 0, 10)
        assert (tuple(page.records), page.head, page.earliest, page.closed) == ((), 0, 1, False)

    async def test_read_page_reports_a_closed_stream(self, harness: StorageHarness) -> None:
        key = await created(harness)
        await append(harness, key, [{"payload": 1}])
        async with harness.store.lock(key) as session:
            session.stream.close()
        page = await harness.reader.read_page(key, 0, 10)
        assert (page.head, page.closed) == (1, True)

    async def test_read_page_of_an_unknown_stream_raises_not_found(
            self, harness: StorageHarness) -> None:
        with pytest.raises(NotFound):
            await harness.reader.read_page(new_key(), 0, 10)

    async def test_newest_appended_before_finds_the_last_record_at_or_before_a_cutoff(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        await append(harness, key, [{"payload": 1}, {"payload": 2}], at=NOW)
        await append(harness, key, [{"payload": 3}], at=NOW + timedelta(seconds=10))
        newest = harness.reader.newest_appended_before
        assert await newest(key, NOW - timedelta(seconds=1)) == 0
        assert await newest(key, NOW) == 2
        assert await newest(key, NOW + timedelta(seconds=5)) == 2
        assert await newest(key, NOW + timedelta(seconds=10)) == 3
