"""In-memory stream store and record reader.

Same semantics as the Postgres adapter: an `asyncio.Lock` per stream stands
in for the row lock; a unit of work works on a copy of the aggregate and
publishes it (with its records, receipts, intents, and its outbox rows into
`adapters.memory.outboxes`) only on a clean exit, then wakes readers.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from adapters.clock import SystemClock
from adapters.fanout import carried_records
from adapters.memory.bus import MemoryWakeBus
from adapters.memory.outboxes import MemoryDeletionOutbox, MemoryDeliveryOutbox
from adapters.staging import QueuedDeletion, Staging
from application.ports.clock import Clock
from application.ports.records import RecordPage, StoredRecord
from application.ports.streams import Removed, RunSummary
from application.ports.waking import Wake
from domain.errors import NotFound, TooManyStreams
from domain.identifiers import RunKey, StreamKey
from domain.object_intent import LIVE_STATES, ObjectIntent
from domain.principal import names_reader
from domain.stream import Stream

T = TypeVar("T")


@dataclass
class _StreamData:
    stream: Stream
    outboxes: Callable[[Stream, Sequence[int], Sequence[QueuedDeletion],
                        Sequence[StoredRecord]], None]
    """Where the outbox rows of a commit go (the store's outboxes)."""
    events: list[Any] = field(default_factory=list)
    records: list[StoredRecord] = field(default_factory=list)
    receipts: dict[str, int] = field(default_factory=dict)
    receipt_times: dict[str, datetime] = field(default_factory=dict)
    """When each receipt was recorded (its record's `appended_at`), for the receipt TTL."""
    intents: dict[str, ObjectIntent] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def intent_events(self) -> list[Any]:
        """One log for the stream's and its intents' events, in commit order."""
        return self.events

    def removed_through(self, sequence: int) -> None:
        return None

    def receipted(self, record: StoredRecord) -> None:
        assert record.idempotency_key is not None
        self.receipts[record.idempotency_key] = record.sequence
        self.receipt_times[record.idempotency_key] = record.appended_at

    def queued(self, deliveries: Sequence[int], deletions: Sequence[QueuedDeletion],
               records: Sequence[StoredRecord]) -> None:
        self.outboxes(self.stream, deliveries, deletions, records)


class MemorySession(Staging):
    def __init__(self, data: _StreamData, run_erased: bool) -> None:
        super().__init__()
        self._data = data
        self.stream: Stream = copy.deepcopy(data.stream)
        self.run_erased = run_erased

    async def receipts(self, keys: Sequence[str]) -> Mapping[str, int]:
        return {key: self._data.receipts[key] for key in keys if key in self._data.receipts}

    async def intent(self, object_id: str) -> ObjectIntent | None:
        if object_id in self.saved_intents:
            return self.saved_intents[object_id]
        found = self._data.intents.get(object_id)
        return copy.deepcopy(found) if found is not None else None

    async def intents(self) -> Sequence[ObjectIntent]:
        merged = {**self._data.intents, **self.saved_intents}
        return [copy.deepcopy(intent) for intent in merged.values()]

    async def remove_records_through(self, sequence: int) -> Removed:
        self.stage_removal(sequence)
        doomed = [r for r in self._data.records if r.sequence <= sequence]
        return Removed(len(doomed), tuple(r.object for r in doomed if r.object is not None))

    async def offset_through(self, sequence: int) -> int | None:
        staged = self.staged_offset(sequence)
        if staged is not None:
            return staged
        records = self._data.records
        at = bisect.bisect_left(records, sequence, key=lambda record: record.sequence)
        return records[at].offset if at < len(records) and records[at].sequence == sequence \
            else None


class MemoryStreamStore:
    """Implements `StreamStore`, `RecordReader` and `GapEvidence`; `deletions` is the
    deletion outbox its units of work fill (its own unless one is given)."""

    def __init__(self, bus: MemoryWakeBus, outbox: MemoryDeliveryOutbox | None = None,
                 deletions: MemoryDeletionOutbox | None = None,
                 clock: Clock | None = None) -> None:
        self._bus = bus
        self._clock: Clock = clock or SystemClock()
        self._outbox = outbox
        self.deletions = deletions if deletions is not None else MemoryDeletionOutbox()
        self._streams: dict[StreamKey, _StreamData] = {}
        self._erased_runs: set[RunKey] = set()
        self.gaps: list[tuple[StreamKey, int, int]] = []
        self.gap_times: list[datetime] = []
        """When each of `gaps` was recorded (same order)."""

    # -- StreamStore -----------------------------------------------------

    async def create(self, stream: Stream,
                     max_streams_per_run: int | None = None) -> tuple[Stream, bool]:
        # No await before the insert: atomic with the erasure mark and with other creates.
        stream.ensure_not_erased(stream.key.run in self._erased_runs)
        existing = self._streams.get(stream.key)
        if existing is not None:
            return copy.deepcopy(existing.stream), False
        if max_streams_per_run is not None and sum(
                1 for key in self._streams if key.run == stream.key.run) >= max_streams_per_run:
            raise TooManyStreams(f"the run already has {max_streams_per_run} streams",
                                 limit=max_streams_per_run)
        events = list(stream.collect_events())
        self._streams[stream.key] = _StreamData(copy.deepcopy(stream), self._enqueue, events)
        return stream, True

    @asynccontextmanager
    async def lock(self, key: StreamKey) -> AsyncIterator[MemorySession]:
        data = self._streams.get(key)
        if data is None:
            raise NotFound("stream not found")
        async with data.lock:
            session = MemorySession(data, key.run in self._erased_runs)
            yield session
            self._commit(data, session)

    async def transact(self, key: StreamKey,
                       work: Callable[[MemorySession], Awaitable[T]]) -> T:
        """Under the lock at once: this store holds no state that could be stale."""
        async with self.lock(key) as session:
            return await work(session)

    def _commit(self, data: _StreamData, session: MemorySession) -> None:
        data.stream = session.stream
        session.fold(list(session.stream.collect_events()), data)
        stream = data.stream
        self._bus.publish_wake(Wake(stream.key, stream.head, stream.closed,
                                    carried_records(tuple(session.new_records))))

    def _enqueue(self, stream: Stream, deliveries: Sequence[int],
                 deletions: Sequence[QueuedDeletion], records: Sequence[StoredRecord]) -> None:
        if self._outbox is not None:
            at = max((r.appended_at for r in records), default=None)
            self._outbox.enqueue(stream.key, deliveries, _home(stream), at)
        self.deletions.enqueue(stream.key, deletions, _home(stream))

    async def load(self, key: StreamKey) -> Stream | None:
        data = self._streams.get(key)
        return copy.deepcopy(data.stream) if data is not None else None

    async def list_run(self, run: RunKey, after: str | None = None,
                       limit: int | None = None) -> Sequence[Stream]:
        listed = [copy.deepcopy(data.stream) for key, data in sorted(self._streams.items())
                  if key.run == run and (after is None or key.stream_id > after)]
        return listed if limit is None else listed[:limit]

    async def list_runs(self, tenant: str, after: str | None, limit: int, now: datetime,
                        reader: str | None) -> Sequence[RunSummary]:
        runs: dict[str, list[datetime]] = {}
        for key, data in self._streams.items():
            stream = data.stream
            if key.tenant == tenant and (after is None or key.run_id > after) \
                    and key.run not in self._erased_runs and not stream.deleted \
                    and not stream.expired(now) and (
                        reader is None or names_reader(stream.definition.authorization, reader)):
                runs.setdefault(key.run_id, []).append(stream.created_at)
        return [RunSummary(run_id, len(created), min(created))
                for run_id, created in sorted(runs.items())[:max(0, limit)]]

    async def streams_with_retention(self, after: StreamKey | None, limit: int,
                                     home: str) -> Sequence[StreamKey]:
        keys = [key for key, data in sorted(self._streams.items())
                if (after is None or key > after) and _prunable(data.stream)
                and _home(data.stream) == home]
        return keys[:max(0, limit)]

    async def expired_streams(self, now: datetime, limit: int,
                              home: str) -> Sequence[StreamKey]:
        expired = sorted((data.stream.created_at, key) for key, data in self._streams.items()
                         if _home(data.stream) == home and not data.stream.legal_hold
                         and not data.stream.erased and data.stream.expired(now))
        return [key for _, key in expired[:max(0, limit)]]

    async def expired_intents(self, now: datetime, limit: int,
                              home: str) -> Sequence[tuple[StreamKey, str]]:
        expired = sorted(
            (intent.expires_at, key, object_id)
            for key, data in self._streams.items()
            if not data.stream.legal_hold and _home(data.stream) == home
            for object_id, intent in data.intents.items()
            if intent.current_state in LIVE_STATES and intent.expires_at <= now)
        return [(key, object_id) for _, key, object_id in expired[:max(0, limit)]]

    async def load_intent(self, key: StreamKey, object_id: str) -> ObjectIntent | None:
        data = self._streams.get(key)
        intent = data.intents.get(object_id) if data is not None else None
        return copy.deepcopy(intent) if intent is not None else None

    async def mark_run_erased(self, run: RunKey) -> None:
        self._erased_runs.add(run)

    def event_log(self, key: StreamKey) -> list[Any]:
        return list(self._streams[key].events)

    # -- RecordReader ----------------------------------------------------

    async def read_page(self, key: StreamKey, after: int, limit: int) -> RecordPage:
        data = self._streams.get(key)
        if data is None:
            raise NotFound("stream not found")
        records = data.records
        start = bisect.bisect_right(records, after, key=lambda record: record.sequence)
        stream = data.stream
        return RecordPage(tuple(records[start:start + limit]), stream.head, stream.earliest,
                          stream.closed)

    async def newest_appended_before(self, key: StreamKey, cutoff: datetime) -> int:
        data = self._streams.get(key)
        if data is None:
            return 0
        newest = 0
        for record in data.records:
            if record.appended_at > cutoff:
                break
            newest = record.sequence
        return newest

    # -- GapEvidence -----------------------------------------------------

    async def record_gap(self, key: StreamKey, expected: int, received: int) -> None:
        self.gaps.append((key, expected, received))
        self.gap_times.append(self._clock.now())

    async def recorded(self, key: StreamKey) -> list[tuple[int, int]]:
        """(expected, received) pairs for `key`, oldest first (as Postgres's `recorded`)."""
        return [(expected, received) for gap_key, expected, received in self.gaps
                if gap_key == key]

    def stream_data(self) -> dict[StreamKey, _StreamData]:
        """The store's own rows, for its upkeep (`adapters.memory.upkeep`) only."""
        return self._streams


def _home(stream: Stream) -> str:
    return stream.definition.placement.metadata_home


def _prunable(stream: Stream) -> bool:
    pins = stream.definition.retention
    has_pin = pins.max_age_seconds is not None or pins.max_records is not None
    return has_pin and not stream.legal_hold and not stream.erased
