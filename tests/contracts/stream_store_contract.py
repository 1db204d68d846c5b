"""The `StreamStore` contract: creating, loading and listing streams, and the queries the
workers run over them.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from domain.errors import NotFound, RunErased, TooManyStreams
from domain.identifiers import StreamKey
from tests.contracts.harness import StorageHarness
from tests.contracts.storage_support import (
    HERE,
    NOW,
    ack_in,
    append,
    created,
    new_intent,
    new_key,
    new_stream,
    prune_in,
)


class StreamStoreContract:
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

    async def test_a_deleted_stream_stays_as_a_tombstone_that_keeps_its_head(
            self, harness: StorageHarness) -> None:
        key = await created(harness, retention={"max_records": 5})
        await append(harness, key, [{"payload": 1}, {"payload": 2}])
        async with harness.store.lock(key) as session:
            assert session.stream.delete()
            assert (await session.remove_records_through(session.stream.head)).records == 2
        for loaded in (await harness.store.load(key),
                       (await harness.store.create(new_stream(key)))[0],
                       *(await harness.store.list_run(key.run))):
            assert loaded is not None
            assert (loaded.deleted, loaded.head, loaded.earliest, loaded.closed) == \
                (True, 2, 3, True)
        _, was_created = await harness.store.create(new_stream(key))
        assert not was_created
        async with harness.store.lock(key) as session:
            assert session.stream.deleted and not session.stream.delete()  # a repeat: no event
        page = await harness.reader.read_page(key, 0, 10)
        assert (page.records, page.head, page.earliest, page.closed) == ((), 2, 3, True)
        assert key not in await harness.store.streams_with_retention(None, 10_000, HERE)

    async def test_expired_streams_lists_unheld_live_streams_past_their_expiry(
            self, harness: StorageHarness) -> None:
        def named(stream_id: str) -> StreamKey:
            return StreamKey(base.tenant, base.run_id, stream_id)

        base = new_key()
        far = {"metadata_home": "far", "object_regions": ["far"],
               "client_egress_regions": ["far"], "log_region": "far"}
        await created(harness, named("b-minute"), expires_after_seconds=60)
        await created(harness, named("a-hour"), expires_after_seconds=3600)
        await created(harness, named("c-never"))
        await created(harness, named("d-held"), expires_after_seconds=60)
        await created(harness, named("e-far"), expires_after_seconds=60, placement=far)
        await created(harness, named("f-deleted"), expires_after_seconds=60)
        async with harness.store.lock(named("d-held")) as session:
            session.stream.set_legal_hold(True, None)
        async with harness.store.lock(named("f-deleted")) as session:
            session.stream.delete()

        async def expired(seconds: float, home: str = HERE) -> list[str]:
            keys = await harness.store.expired_streams(NOW + timedelta(seconds=seconds),
                                                       10_000, home)
            return [key.stream_id for key in keys if key.tenant == base.tenant]

        assert await expired(59) == []
        assert await expired(60) == ["b-minute"]
        assert await expired(3600) == ["a-hour", "b-minute"]  # created together: by key
        assert await expired(60, "far") == ["e-far"]
        assert await harness.store.expired_streams(NOW + timedelta(days=1), 0, HERE) == []

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
            await ack_in(session, "ui", 1)
            await prune_in(session, 1)
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
            await ack_in(session, "ui", 3)
        assert (await harness.store.load(key)).acks == {"ui": 3}  # type: ignore[union-attr]

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
