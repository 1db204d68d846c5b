"""Port decorators that count what the metrics report, at the one place each thing happens.

They wrap the backend's ports in the composition root, so every adapter is
measured alike and no use case knows about metrics.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TypeVar

from prometheus_client import Counter

from application.ports.outboxes import (
    Delivery,
    DeliveryOutbox,
    DeliveryRedrive,
    InputEvent,
    WorkflowWaitService,
)
from application.ports.streams import RunSummary, StreamSession, StreamStore
from application.ports.waking import (
    GapEvidence,
    LiveChunk,
    LiveDraft,
    Wake,
    WakeBus,
    WakeSubscription,
)
from domain.identifiers import RunKey, StreamKey
from domain.object_intent import ObjectIntent
from domain.stream import Stream
from entrypoints.observability.metrics import Metrics

T = TypeVar("T")


class MeteredStreamStore:
    """Counts records and bytes committed, read from the aggregate's totals after a unit of
    work exits cleanly (the port commits exactly then), so a rolled-back batch counts nothing."""

    def __init__(self, inner: StreamStore, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    @asynccontextmanager
    async def lock(self, key: StreamKey) -> AsyncIterator[StreamSession]:
        async with self._inner.lock(key) as session:
            items, size = session.stream.total_items, session.stream.total_bytes
            yield session
            items = session.stream.total_items - items
            size = session.stream.total_bytes - size
        self._count(items, size)

    async def transact(self, key: StreamKey,
                       work: Callable[[StreamSession], Awaitable[T]]) -> T:
        grown = (0, 0)  # by the last call of `work`: the one that committed

        async def measured(session: StreamSession) -> T:
            nonlocal grown
            items, size = session.stream.total_items, session.stream.total_bytes
            answer = await work(session)
            grown = (session.stream.total_items - items, session.stream.total_bytes - size)
            return answer

        answer = await self._inner.transact(key, measured)
        self._count(*grown)
        return answer

    def _count(self, items: int, size: int) -> None:
        if items > 0:
            self._metrics.records.inc(items)
            self._metrics.bytes.inc(size)

    async def create(self, stream: Stream,
                     max_streams_per_run: int | None = None) -> tuple[Stream, bool]:
        return await self._inner.create(stream, max_streams_per_run)

    async def load(self, key: StreamKey) -> Stream | None:
        return await self._inner.load(key)

    async def list_run(self, run: RunKey, after: str | None = None,
                       limit: int | None = None) -> Sequence[Stream]:
        return await self._inner.list_run(run, after, limit)

    async def list_runs(self, tenant: str, after: str | None, limit: int, now: datetime,
                        reader: str | None) -> Sequence[RunSummary]:
        return await self._inner.list_runs(tenant, after, limit, now, reader)

    async def streams_with_retention(self, after: StreamKey | None, limit: int,
                                     home: str) -> Sequence[StreamKey]:
        return await self._inner.streams_with_retention(after, limit, home)

    async def expired_streams(self, now: datetime, limit: int,
                              home: str) -> Sequence[StreamKey]:
        return await self._inner.expired_streams(now, limit, home)

    async def expired_intents(self, now: datetime, limit: int,
                              home: str) -> Sequence[tuple[StreamKey, str]]:
        return await self._inner.expired_intents(now, limit, home)

    async def load_intent(self, key: StreamKey, object_id: str) -> ObjectIntent | None:
        return await self._inner.load_intent(key, object_id)

    async def mark_run_erased(self, run: RunKey) -> None:
        await self._inner.mark_run_erased(run)


class _CountingSubscription:
    def __init__(self, inner: WakeSubscription, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    async def next(self, timeout: float) -> Wake | LiveChunk | None:
        signal = await self._inner.next(timeout)
        if isinstance(signal, Wake):
            self._metrics.wakes.inc()
        return signal

    def interrupt(self) -> None:
        self._inner.interrupt()

    def offer(self, taker: Callable[[Wake], bool] | None) -> None:
        if taker is None:
            self._inner.offer(None)
            return

        def counted(wake: Wake) -> bool:
            taken = taker(wake)
            if taken:
                self._metrics.wakes.inc()
            return taken

        self._inner.offer(counted)


class CountingWakeBus:
    """Counts wakes as local readers receive them."""

    def __init__(self, inner: WakeBus, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    @asynccontextmanager
    async def subscribe(self, key: StreamKey, live: bool = False
                        ) -> AsyncIterator[WakeSubscription]:
        async with self._inner.subscribe(key, live) as subscription:
            yield _CountingSubscription(subscription, self._metrics)

    async def publish_live(self, drafts: Sequence[LiveDraft]) -> None:
        await self._inner.publish_live(drafts)


class CountingDeliveryOutbox:
    """Counts dead letters as the dispatcher gives up on a row."""

    def __init__(self, inner: DeliveryOutbox, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[Delivery]:
        return await self._inner.claim(worker, now, lease_seconds, limit, home)

    async def complete(self, key: StreamKey, sequence: int) -> None:
        await self._inner.complete(key, sequence)

    async def retry(self, key: StreamKey, sequence: int, error: str,
                    next_attempt_at: datetime) -> None:
        await self._inner.retry(key, sequence, error, next_attempt_at)

    async def release(self, key: StreamKey, sequences: Sequence[int], worker: str) -> None:
        await self._inner.release(key, sequences, worker)

    async def dead_letter(self, key: StreamKey, sequence: int, error: str) -> None:
        await self._inner.dead_letter(key, sequence, error)
        self._metrics.dead_letters.inc()

    async def dead_letters(self, key: StreamKey) -> Sequence[Delivery]:
        return await self._inner.dead_letters(key)

    async def redrive(self, key: StreamKey, sequences: Sequence[int], by: str,
                      at: datetime) -> Sequence[int]:
        return await self._inner.redrive(key, sequences, by, at)

    async def redrives(self, key: StreamKey, limit: int) -> Sequence[DeliveryRedrive]:
        return await self._inner.redrives(key, limit)

    async def pending_count(self, key: StreamKey | None = None) -> int:
        return await self._inner.pending_count(key)


class CountingWaitService:
    """Counts input events as the wait service takes them, on the counter that says what
    its `publish` proves (delivered or only published)."""

    def __init__(self, inner: WorkflowWaitService, counter: Counter) -> None:
        self._inner = inner
        self._counter = counter

    async def publish(self, event: InputEvent) -> None:
        await self._inner.publish(event)
        self._counter.inc()


def metered_wait_service(inner: WorkflowWaitService | None, kind: str,
                         metrics: Metrics) -> WorkflowWaitService | None:
    """`inner` counted as delivered, or as published for `notify`: a NOTIFY nobody listens
    to is lost without an error, so it proves no delivery (ADR 0014)."""
    metrics.wait_service.labels(kind).set(1)
    if inner is None:
        return None
    published = kind == "notify"
    return CountingWaitService(inner, metrics.inputs_published if published
                               else metrics.inputs_delivered)


class CountingGapEvidence:
    def __init__(self, inner: GapEvidence, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    async def record_gap(self, key: StreamKey, expected: int, received: int) -> None:
        self._metrics.gaps.inc()
        await self._inner.record_gap(key, expected, received)
