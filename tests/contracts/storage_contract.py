"""The storage contract: what every StreamStore / RecordReader / GapEvidence / WakeBus /
DeliveryOutbox adapter must do, written once.

An adapter's test module subclasses `StorageContract` and provides an async fixture
`harness` returning a `StorageHarness`. Every test uses its own tenant and run, so
adapters backed by a shared database need not be emptied between tests.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest

from application.ports import (
    BodyDeletion,
    Delivery,
    LiveChunk,
    LiveDraft,
    StoredRecord,
    StreamSession,
    Wake,
    WakeSubscription,
)
from domain.definition import build_definition
from domain.errors import NotFound, RunErased, TooManyStreams
from domain.identifiers import StreamKey
from domain.object_intent import AuthorizationReceipt, IntentState, ObjectIntent, ObjectPins
from domain.records import ObjectRef, draft_for_object, draft_from_wire
from domain.stream import AppendPlan, Stream
from tests.contracts.harness import StorageHarness

HERE = "local"
"""The region of the node the workers run in: every stream here is homed in it."""
NOW = datetime(2026, 1, 1, tzinfo=UTC)
WAKE_TIMEOUT = 5.0  # an upper bound for a wake to arrive; never asserted as a duration
QUIET = 0.1  # how long to listen when nothing may arrive
LEASE = 30.0


class Boom(Exception):
    pass


def new_key(stream_id: str = "s") -> StreamKey:
    suffix = uuid4().hex[:12]
    return StreamKey(f"tenant-{suffix}", f"run-{suffix}", stream_id)


def new_stream(key: StreamKey, **pins: Any) -> Stream:
    raw = {"stream_id": key.stream_id, "content_class": "output.text", **pins}
    return Stream.start(key, build_definition(raw, HERE), NOW)


def stored(plan: AppendPlan, at: datetime = NOW) -> list[StoredRecord]:
    return [StoredRecord.from_draft(sequence, draft, at) for sequence, draft in plan.new]


async def created(harness: StorageHarness, key: StreamKey | None = None,
                  **pins: Any) -> StreamKey:
    key = key or new_key()
    await harness.store.create(new_stream(key, **pins))
    return key


async def append(harness: StorageHarness, key: StreamKey, items: Sequence[dict[str, Any]],
                 at: datetime = NOW, deliveries: bool = False) -> tuple[int, ...]:
    """Append wire-shaped records the way the use case does: under the lock, in one unit."""
    drafts = [draft_from_wire(item, ()) for item in items]
    async with harness.store.lock(key) as session:
        keys = [draft.idempotency_key for draft in drafts if draft.idempotency_key]
        plan = session.stream.plan_append(drafts, await session.receipts(keys) if keys else {})
        session.stream.append(plan)
        session.add_records(stored(plan, at))
        if deliveries:
            session.add_deliveries([sequence for sequence, _ in plan.new])
    return plan.sequences


async def payloads(harness: StorageHarness, key: StreamKey, after: int = 0) -> list[Any]:
    page = await harness.reader.read_page(key, after, 1000)
    return [record.payload for record in page.records]


def new_intent(key: StreamKey, idempotency_key: str = "o1", body: bytes = b"0123456789",
               expires_at: datetime = NOW + timedelta(hours=1)) -> ObjectIntent:
    pins = ObjectPins(idempotency_key, hashlib.sha256(body).hexdigest(), len(body),
                      "application/pdf")
    receipt = AuthorizationReceipt("alice", ("streams:read", "streams:write"), "token-1")
    return ObjectIntent.prepare(key, pins, receipt, expires_at, HERE)


async def next_wake(subscription: WakeSubscription) -> Wake:
    signal = await subscription.next(WAKE_TIMEOUT)
    assert isinstance(signal, Wake), f"expected a wake, got {signal!r}"
    return signal


def ours(deliveries: Sequence[Delivery], key: StreamKey) -> list[Delivery]:
    return sorted((d for d in deliveries if d.stream == key), key=lambda d: d.sequence)


def our_bodies(deletions: Sequence[BodyDeletion], key: StreamKey) -> list[BodyDeletion]:
    """This test's rows, in claim order (the outbox is shared by every test of a suite)."""
    return [d for d in deletions if d.stream == key]


class StorageContract:
    # -- streams -----------------------------------------------------------

    async def test_create_returns_the_new_stream_then_the_stored_one(
            self, harness: StorageHarness) -> None:
        key = new_key()
        stream, was_created = await harness.store.create(new_stream(key))
        assert was_created and stream.key == key
        await append(harness, key, [{"payload": 1}, {"payload": 2}])
        again, was_created = await harness.store.create(new_stream(key, consumers=["ui"]))
        assert not was_created
        assert again.definition == stream.definition  # the stored pins, not the new ones
        assert again.head == 2

    async def test_list_run_returns_the_streams_of_that_run_only(
            self, harness: StorageHarness) -> None:
        a = new_key("a")
        b = StreamKey(a.tenant, a.run_id, "b")
        elsewhere = StreamKey(a.tenant, a.run_id + "-other", "a")
        other_tenant = StreamKey(a.tenant + "-other", a.run_id, "c")
        for key in (b, a, elsewhere, other_tenant):
            await created(harness, key)
        listed = await harness.store.list_run(a.run)
        assert sorted(stream.stream_id for stream in listed) == ["a", "b"]

    async def test_lock_of_an_unknown_stream_raises_not_found(
            self, harness: StorageHarness) -> None:
        with pytest.raises(NotFound):
            async with harness.store.lock(new_key()):
                pass

    async def test_load_of_an_unknown_stream_is_none(self, harness: StorageHarness) -> None:
        assert await harness.store.load(new_key()) is None

    async def test_load_returns_the_committed_state(self, harness: StorageHarness) -> None:
        key = await created(harness, consumers=["ui"])
        await append(harness, key, [{"payload": "abc"}, {"payload": 2}, {"payload": 3}])
        async with harness.store.lock(key) as session:
            session.stream.ack("ui", 1, "alice")
            session.stream.prune(1)
            session.stream.set_legal_hold(True, "audit")
            session.stream.close()
            await session.remove_records_through(1)
        loaded = await harness.store.load(key)
        assert loaded is not None
        assert (loaded.head, loaded.earliest, loaded.closed) == (3, 2, True)
        assert (loaded.legal_hold, loaded.hold_reason, loaded.erased) == (True, "audit", False)
        assert loaded.acks == {"ui": 1}
        assert (loaded.total_items, loaded.total_bytes) == (3, 7)
        assert (loaded.usage.unread_items, loaded.usage.unread_bytes) == (2, 2)
        assert loaded.definition == new_stream(key, consumers=["ui"]).definition
        assert loaded.created_at == NOW
        async with harness.store.lock(key) as session:  # and it keeps accepting commands
            session.stream.ack("ui", 3, "alice")
        assert (await harness.store.load(key)).acks == {"ui": 3}  # type: ignore[union-attr]

    # -- units of work -----------------------------------------------------

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
                session.stream.prune(2)
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

    # -- reading -----------------------------------------------------------

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

    # -- removal, receipts, intents ----------------------------------------

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
            session.stream.prune(3)
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

    async def test_streams_with_retention_lists_pinned_unheld_streams_by_key(
            self, harness: StorageHarness) -> None:
        key = new_key()
        tenant, run = key.tenant, key.run_id

        def named(stream_id: str) -> StreamKey:
            return StreamKey(tenant, run, stream_id)

        await created(harness, named("a-count"), retention={"max_records": 5})
        await created(harness, named("b-age"), retention={"max_age_seconds": 60})
        await created(harness, named("c-none"))
        await created(harness, named("d-held"), retention={"max_records": 5})
        await created(harness, named("e-erased"), retention={"max_records": 5})
        await created(harness, named("f-both"), retention={"max_records": 1,
                                                            "max_age_seconds": 1})
        async with harness.store.lock(named("d-held")) as session:
            session.stream.set_legal_hold(True, "audit")
        async with harness.store.lock(named("e-erased")) as session:
            session.stream.erase()
        start = StreamKey(tenant, "", "")

        async def listed(after: StreamKey, limit: int) -> list[StreamKey]:
            keys = await harness.store.streams_with_retention(after, limit, HERE)
            assert list(keys) == sorted(keys)
            return [k for k in keys if k.tenant == tenant]

        assert await listed(start, 100) == [named("a-count"), named("b-age"), named("f-both")]
        assert await listed(start, 1) == [named("a-count")]
        assert await listed(named("a-count"), 100) == [named("b-age"), named("f-both")]
        assert await listed(named("f-both"), 100) == []
        assert await harness.store.streams_with_retention(start, 0, HERE) == []
        async with harness.store.lock(named("d-held")) as session:
            session.stream.set_legal_hold(False, None)
        assert named("d-held") in await listed(start, 100)
        everything = await harness.store.streams_with_retention(None, 10_000, HERE)
        assert named("a-count") in everything

    async def test_expired_intents_lists_live_intents_past_their_deadline(
            self, harness: StorageHarness) -> None:
        # Deadlines long before NOW, so only this test's intents are due at `cutoff`.
        cutoff = datetime(1980, 1, 1, tzinfo=UTC)
        key = await created(harness)
        held = await created(harness, StreamKey(key.tenant, key.run_id, "held"))
        later = new_intent(key, "later", expires_at=cutoff - timedelta(seconds=1))
        earlier = new_intent(key, "earlier", expires_at=cutoff - timedelta(seconds=2))
        uploaded = new_intent(key, "uploaded", expires_at=cutoff - timedelta(seconds=3))
        uploaded.record_upload(uploaded.size, uploaded.sha256)
        on_time = new_intent(key, "on-time", expires_at=cutoff + timedelta(seconds=1))
        committed = new_intent(key, "committed", expires_at=cutoff - timedelta(seconds=4))
        committed.record_upload(committed.size, committed.sha256)
        committed.commit(1)
        aborted = new_intent(key, "aborted", expires_at=cutoff - timedelta(seconds=5))
        aborted.abort()
        async with harness.store.lock(key) as session:
            for intent in (later, earlier, uploaded, on_time, committed, aborted):
                session.save_intent(intent)
        async with harness.store.lock(held) as session:
            session.stream.set_legal_hold(True, "audit")
            session.save_intent(new_intent(held, "held", expires_at=cutoff - timedelta(hours=1)))
        due = await harness.store.expired_intents(cutoff, 100, HERE)
        assert list(due) == [(key, uploaded.object_id), (key, earlier.object_id),
                             (key, later.object_id)]
        assert list(await harness.store.expired_intents(cutoff, 1, HERE)) == [
            (key, uploaded.object_id)]
        assert await harness.store.expired_intents(cutoff - timedelta(days=1), 100, HERE) == []
        async with harness.store.lock(key) as session:
            intent = await session.intent(uploaded.object_id)
            assert intent is not None and intent.expire(cutoff)
            session.save_intent(intent)
        assert list(await harness.store.expired_intents(cutoff, 100, HERE)) == [
            (key, earlier.object_id), (key, later.object_id)]

    async def test_runs_are_marked_erased(self, harness: StorageHarness) -> None:
        key = await created(harness)
        other = await created(harness, StreamKey(key.tenant, key.run_id + "-other", "s"))
        async with harness.store.lock(key) as session:
            assert not session.run_erased
        await harness.store.mark_run_erased(key.run)
        await harness.store.mark_run_erased(key.run)  # idempotent
        with pytest.raises(RunErased):
            await harness.store.create(new_stream(key.run.stream("late")))
        with pytest.raises(RunErased):  # even an identical re-create of a stream it had
            await harness.store.create(new_stream(key))
        await harness.store.create(new_stream(other.run.stream("more")))
        async with harness.store.lock(key) as session:
            assert session.run_erased
        async with harness.store.lock(other) as session:
            assert not session.run_erased

    # -- streams per run and the run listing ---------------------------------

    async def test_a_run_at_its_cap_refuses_new_streams_but_answers_existing_ones(
            self, harness: StorageHarness) -> None:
        first = new_key("a")
        for name in ("a", "b"):
            _, was_created = await harness.store.create(
                new_stream(first.run.stream(name)), max_streams_per_run=2)
            assert was_created
        with pytest.raises(TooManyStreams) as refused:
            await harness.store.create(new_stream(first.run.stream("c")), max_streams_per_run=2)
        assert refused.value.extra["limit"] == 2
        again, was_created = await harness.store.create(new_stream(first), max_streams_per_run=2)
        assert (again.key, was_created) == (first, False)
        assert await harness.store.load(first.run.stream("c")) is None
        await harness.store.create(new_stream(first.run.stream("c")))  # no cap: no refusal
        other = StreamKey(first.tenant, first.run_id + "-other", "a")
        assert (await harness.store.create(new_stream(other), max_streams_per_run=2))[1]

    async def test_concurrent_creates_never_take_more_than_the_runs_cap(
            self, harness: StorageHarness) -> None:
        """The race for the last slots: every create counts what the ones before it made."""
        run = new_key().run
        cap, contenders = 4, 16
        outcomes = await asyncio.gather(
            *(harness.store.create(new_stream(run.stream(f"s{n:02d}")),
                                   max_streams_per_run=cap) for n in range(contenders)),
            return_exceptions=True)
        made = [outcome for outcome in outcomes if isinstance(outcome, tuple)]
        refused = [outcome for outcome in outcomes if isinstance(outcome, TooManyStreams)]
        assert (len(made), len(refused)) == (cap, contenders - cap), outcomes
        assert len(await harness.store.list_run(run)) == cap

    async def test_list_run_pages_in_stream_id_order_after_a_cursor(
            self, harness: StorageHarness) -> None:
        run = new_key().run
        names = ["b", "a.1", "A", "c", "a"]
        for name in names:
            await created(harness, run.stream(name))
        ordered = sorted(names)  # Python's (code point) order: "A" < "a" < "a.1"
        assert [s.stream_id for s in await harness.store.list_run(run)] == ordered
        assert [s.stream_id for s in await harness.store.list_run(run, None, 2)] == ordered[:2]
        assert [s.stream_id for s in await harness.store.list_run(run, "a", 2)] == [
            "a.1", "b"]
        assert [s.stream_id for s in await harness.store.list_run(run, "b")] == ["c"]
        assert list(await harness.store.list_run(run, "c", 10)) == []

    # -- wakes and live chunks ---------------------------------------------

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
            await harness.bus.publish_live(draft)
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
                await harness.bus.publish_live(draft)
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
        await harness.bus.publish_live(LiveDraft(key, "nobody listens"))

    # -- gap evidence ------------------------------------------------------

    async def test_gaps_are_recorded_per_stream(self, harness: StorageHarness) -> None:
        key = await created(harness)
        other = await created(harness, StreamKey(key.tenant, key.run_id, "other"))
        await harness.gaps.record_gap(key, 3, 7)
        await harness.gaps.record_gap(key, 9, 10)
        assert await harness.gaps.recorded(key) == [(3, 7), (9, 10)]
        assert await harness.gaps.recorded(other) == []

    # -- outbox ------------------------------------------------------------

    async def input_rows(self, harness: StorageHarness, count: int = 3) -> StreamKey:
        key = await created(harness, direction="input")
        await append(harness, key, [{"payload": n} for n in range(count)], deliveries=True)
        return key

    async def test_workers_see_only_the_streams_homed_in_their_region(
            self, harness: StorageHarness) -> None:
        far = {"metadata_home": "far", "object_regions": ["far"],
               "client_egress_regions": ["far"], "log_region": "far"}
        key = await created(harness, direction="input", placement=far,
                            retention={"max_records": 1})
        await append(harness, key, [{"payload": 1}], deliveries=True)
        cutoff = datetime(1981, 1, 1, tzinfo=UTC)
        async with harness.store.lock(key) as session:
            session.save_intent(new_intent(key, "o", expires_at=cutoff - timedelta(seconds=1)))
            session.queue_deletions([("far", f"{key.tenant}/far-body")], NOW)
        for home, found in ((HERE, False), ("far", True)):
            retained = await harness.store.streams_with_retention(None, 10_000, home)
            assert (key in retained) is found
            expired = await harness.store.expired_intents(cutoff, 10_000, home)
            assert any(stream == key for stream, _ in expired) is found
            assert bool(ours(await harness.outbox.claim("w", NOW, LEASE, 1000, home), key)) \
                is found
            assert bool(our_bodies(await harness.deletions.claim("w", NOW, LEASE, 1000, home),
                                   key)) is found

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

    # -- deletion outbox ---------------------------------------------------

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

    # -- concurrency -------------------------------------------------------

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
