"""The unit-of-work contract: `StreamStore.lock` / `transact` and the `StreamSession` they
hand out (what a clean one persists, what a failed one leaves, reads inside one).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import uuid4

import pytest

from application.ports.streams import StreamSession
from domain.errors import NotFound
from domain.identifiers import StreamKey
from domain.object_intent import IntentState
from domain.records import ObjectRef, draft_for_object, draft_from_wire
from tests.contracts.byte_offset_contract import ByteOffsetContract
from tests.contracts.harness import StorageHarness
from tests.contracts.storage_support import (
    HERE,
    LEASE,
    NOW,
    Boom,
    append,
    created,
    new_intent,
    new_key,
    our_bodies,
    ours,
    payloads,
    prune_in,
    stored,
)


class StreamSessionContract(ByteOffsetContract):
    async def test_a_clean_unit_of_work_persists_everything_it_staged(
            self, harness: StorageHarness) -> None:
        key = await created(harness, direction="input")
        intent = new_intent(key)
        drafts = [draft_from_wire({"payload": {"n": 1}, "idempotency_key": "k1"}, ()),
                  draft_from_wire({"payload": {"n": 2}}, ())]
        async with harness.store.lock(key) as session:
            assert session.stream.head == 0
            plan = session.stream.plan_append(drafts, {})
            session.stream.append(plan)
            session.add_records(stored(plan))
            session.add_deliveries([1, 2])
            session.save_intent(intent)
        assert (await harness.store.load(key)).head == 2  # type: ignore[union-attr]
        assert await payloads(harness, key) == [{"n": 1}, {"n": 2}]
        async with harness.store.lock(key) as session:
            assert await session.receipts(["k1", "k2"]) == {"k1": 1}
            assert [i.object_id for i in await session.intents()] == [intent.object_id]
        loaded = await harness.store.load_intent(key, intent.object_id)
        assert loaded is not None and loaded.current_state is IntentState.PREPARED
        claimed = await harness.outbox.claim("w", NOW, LEASE, 1000, HERE)
        assert [d.sequence for d in ours(claimed, key)] == [1, 2]

    async def test_a_failed_unit_of_work_persists_nothing(self, harness: StorageHarness) -> None:
        key = await created(harness, direction="input")
        await append(harness, key, [{"payload": 0}, {"payload": 1}])
        with pytest.raises(Boom):
            async with harness.store.lock(key) as session:
                plan = session.stream.plan_append(
                    [draft_from_wire({"payload": "never", "idempotency_key": "k"}, ())], {})
                session.stream.append(plan)
                session.add_records(stored(plan))
                session.add_deliveries([3])
                session.save_intent(new_intent(key))
                session.queue_deletions([("local", f"{key.tenant}/never")], NOW)
                await prune_in(session, 2)
                await session.remove_records_through(2)
                session.stream.close()
                raise Boom
        loaded = await harness.store.load(key)
        assert loaded is not None
        assert (loaded.head, loaded.earliest, loaded.closed) == (2, 1, False)
        assert await payloads(harness, key) == [0, 1]
        async with harness.store.lock(key) as session:
            assert await session.receipts(["k"]) == {}
            assert list(await session.intents()) == []
        assert await harness.store.load_intent(key, new_intent(key).object_id) is None
        assert ours(await harness.outbox.claim("w", NOW, LEASE, 1000, HERE), key) == []
        assert our_bodies(await harness.deletions.claim("w", NOW, LEASE, 1000, HERE), key) == []
        assert await append(harness, key, [{"payload": 2}]) == (3,)

    async def test_transact_commits_what_its_work_staged_and_returns_its_answer(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        await append(harness, key, [{"payload": 0}])

        async def work(session: StreamSession) -> tuple[int, ...]:
            plan = session.stream.plan_append([draft_from_wire({"payload": 1}, ())], {})
            session.stream.append(plan)
            session.add_records(stored(plan))
            return plan.sequences

        assert await harness.store.transact(key, work) == (2,)
        assert (await harness.store.load(key)).head == 2  # type: ignore[union-attr]
        assert await payloads(harness, key) == [0, 1]

    async def test_transact_whose_work_raises_persists_nothing(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        await append(harness, key, [{"payload": 0}])

        async def work(session: StreamSession) -> None:
            plan = session.stream.plan_append([draft_from_wire({"payload": "never"}, ())], {})
            session.stream.append(plan)
            session.add_records(stored(plan))
            raise Boom

        with pytest.raises(Boom):
            await harness.store.transact(key, work)
        assert (await harness.store.load(key)).head == 1  # type: ignore[union-attr]
        assert await append(harness, key, [{"payload": 1}]) == (2,)
        assert await payloads(harness, key) == [0, 1]

    async def test_transact_on_an_unknown_stream_raises_not_found(
            self, harness: StorageHarness) -> None:
        async def work(session: StreamSession) -> None:
            raise AssertionError("never called")

        with pytest.raises(NotFound):
            await harness.store.transact(new_key("missing"), work)

    async def test_remove_records_through_reports_rows_and_objects(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        ref = ObjectRef(str(uuid4()), 10, "b" * 64, "application/pdf")
        await append(harness, key, [{"payload": 1, "idempotency_key": "k1"}])
        async with harness.store.lock(key) as session:
            plan = session.stream.plan_append([draft_for_object(ref)], {})
            session.stream.append(plan)
            session.add_records(stored(plan))
        await append(harness, key, [{"payload": 3}, {"payload": 4}, {"payload": 5}])
        async with harness.store.lock(key) as session:
            await prune_in(session, 3)
            removed = await session.remove_records_through(3)
        assert (removed.records, removed.objects) == (3, (ref,))
        page = await harness.reader.read_page(key, 3, 100)
        assert ([r.sequence for r in page.records], page.earliest, page.head) == ([4, 5], 4, 5)
        async with harness.store.lock(key) as session:  # receipts outlive their records
            assert await session.receipts(["k1"]) == {"k1": 1}

    async def test_receipts_belong_to_their_stream(self, harness: StorageHarness) -> None:
        key = await created(harness)
        other = await created(harness, StreamKey(key.tenant, key.run_id, "other"))
        await append(harness, key, [{"payload": 1, "idempotency_key": "k"},
                                    {"payload": 2, "idempotency_key": "j"}])
        async with harness.store.lock(key) as session:
            assert await session.receipts(["k", "j", "x"]) == {"k": 1, "j": 2}
        async with harness.store.lock(other) as session:
            assert await session.receipts(["k", "j"]) == {}

    async def test_intents_are_saved_loaded_and_advanced(self, harness: StorageHarness) -> None:
        key = await created(harness)
        first, second = new_intent(key, "o1"), new_intent(key, "o2", b"other")
        async with harness.store.lock(key) as session:
            session.save_intent(first)
            session.save_intent(second)
        loaded = await harness.store.load_intent(key, first.object_id)
        assert loaded is not None
        assert (loaded.object_id, loaded.object_key, loaded.region) == (
            first.object_id, first.object_key, HERE)
        assert (loaded.sha256, loaded.size, loaded.content_type) == (
            first.sha256, 10, "application/pdf")
        assert (loaded.principal, list(loaded.scopes), loaded.token_id) == (
            "alice", ["streams:read", "streams:write"], "token-1")
        assert loaded.expires_at == NOW + timedelta(hours=1)
        async with harness.store.lock(key) as session:
            intent = await session.intent(first.object_id)
            assert intent is not None
            intent.record_upload(first.size, first.sha256)
            intent.commit(7)
            session.save_intent(intent)
            assert await session.intent("no-such-object") is None
        advanced = await harness.store.load_intent(key, first.object_id)
        assert advanced is not None
        assert (advanced.current_state, advanced.sequence) == (IntentState.COMMITTED, 7)
        async with harness.store.lock(key) as session:
            states = {i.object_id: i.current_state for i in await session.intents()}
        assert states == {first.object_id: IntentState.COMMITTED,
                          second.object_id: IntentState.PREPARED}
        assert await harness.store.load_intent(key, "no-such-object") is None
        other = StreamKey(key.tenant, key.run_id, "other")
        await created(harness, other)
        assert await harness.store.load_intent(other, first.object_id) is None

    async def test_concurrent_units_of_work_get_dense_sequences(
            self, harness: StorageHarness) -> None:
        key = await created(harness)
        writers = 20

        async def one_append(n: int) -> int:
            async with harness.store.lock(key) as session:
                plan = session.stream.plan_append([draft_from_wire({"payload": n}, ())], {})
                await asyncio.sleep(0)  # let the others try to get in
                session.stream.append(plan)
                session.add_records(stored(plan))
            return plan.sequences[0]

        sequences = await asyncio.gather(*(one_append(n) for n in range(writers)))
        assert sorted(sequences) == list(range(1, writers + 1))
        page = await harness.reader.read_page(key, 0, 100)
        assert [r.sequence for r in page.records] == list(range(1, writers + 1))
        assert sorted(r.payload for r in page.records) == list(range(writers))
        assert page.head == writers
