"""What the storage contracts share: fresh keys and streams, appends the way the use case
makes them, and small readers of what a port returned."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

from application.ports.outboxes import BodyDeletion, Delivery
from application.ports.records import StoredRecord
from application.ports.streams import StreamSession
from application.ports.waking import Wake, WakeSubscription
from domain.definition import build_definition
from domain.identifiers import StreamKey
from domain.object_intent import AuthorizationReceipt, ObjectIntent, ObjectPins
from domain.records import draft_from_wire
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
    return [StoredRecord.from_draft(sequence, draft, at, offset)
            for (sequence, draft), offset in zip(plan.new, plan.offsets, strict=True)]


async def ack_in(session: StreamSession, consumer_id: str, sequence: int,
                 principal: str = "alice") -> bool:
    """Ack the way the ack use case does: with the acked record's stored byte offset."""
    stream = session.stream
    offset = await session.offset_through(sequence) if stream.offset_needed(sequence) else None
    return stream.ack(consumer_id, sequence, principal, offset)


async def prune_in(session: StreamSession, through: int) -> int:
    """Prune the way the retention use case does: the offset is read before the record goes."""
    stream = session.stream
    through = min(through, stream.head)
    offset = await session.offset_through(through) if stream.offset_needed(through) else None
    return stream.prune(through, offset)


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
