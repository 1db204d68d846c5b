"""In-memory stream store, record reader and input-delivery outbox.

Same semantics as the Postgres adapter: an `asyncio.Lock` per stream stands
in for the row lock; a unit of work works on a copy of the aggregate and
publishes it (with its records, receipts, intents, deliveries) only on a clean
exit, then wakes readers.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from adapters.clock import SystemClock
from adapters.fanout import carried_records
from adapters.memory.bus import MemoryWakeBus
from adapters.staging import QueuedDeletion, Staging
from application.ports import (
    BodyDeletion,
    Clock,
    Delivery,
    RecordPage,
    Removed,
    StoredRecord,
    Wake,
)
from domain.errors import NotFound, RunErased, TooManyStreams
from domain.identifiers import RunKey, StreamKey
from domain.object_intent import LIVE_STATES, ObjectIntent
from domain.stream import Stream

T = TypeVar("T")


@dataclass
class _StreamData:
    stream: Stream
    events: list[Any] = field(default_factory=list)
    records: list[StoredRecord] = field(default_factory=list)
    receipts: dict[str, int] = field(default_factory=dict)
    receipt_times: dict[str, datetime] = field(default_factory=dict)
    """When each receipt was recorded (its record's `appended_at`), for the receipt TTL."""
    intents: dict[str, ObjectIntent] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    outboxes: Callable[[Stream, Sequence[int], Sequence[QueuedDeletion],
                        Sequence[StoredRecord]], None] | None = None
    """Where the outbox rows of a commit go (the store's outboxes)."""

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
        if self.outboxes is not None:
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
        if stream.key.run in self._erased_runs:
            raise RunErased("the run was erased; nothing more is stored")
        existing = self._streams.get(stream.key)
        if existing is not None:
            return copy.deepcopy(existing.stream), False
        if max_streams_per_run is not None and sum(
                1 for key in self._streams if key.run == stream.key.run) >= max_streams_per_run:
            raise TooManyStreams(f"the run already has {max_streams_per_run} streams",
                                 limit=max_streams_per_run)
        events = list(stream.collect_events())
        self._streams[stream.key] = _StreamData(copy.deepcopy(stream), events,
                                                outboxes=self._enqueue)
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

    async def streams_with_retention(self, after: StreamKey | None, limit: int,
                                     home: str) -> Sequence[StreamKey]:
        keys = [key for key, data in sorted(self._streams.items())
                if (after is None or key > after) and _prunable(data.stream)
                and _home(data.stream) == home]
        return keys[:max(0, limit)]

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

    def stream_data(self) -> dict[StreamKey, _StreamData]:
        """The store's own rows, for its upkeep (`adapters.memory.upkeep`) only."""
        return self._streams


def _home(stream: Stream) -> str:
    return stream.definition.placement.metadata_home


def _prunable(stream: Stream) -> bool:
    pins = stream.definition.retention
    has_pin = pins.max_age_seconds is not None or pins.max_records is not None
    return has_pin and not stream.legal_hold and not stream.erased


@dataclass
class _OutboxRow:
    delivery: Delivery
    home: str
    next_attempt_at: datetime | None = None
    lease_until: datetime | None = None
    done: bool = False
    created_at: datetime | None = None


class MemoryDeliveryOutbox:
    """Implements `DeliveryOutbox`; rows arrive from the store's commits."""

    def __init__(self) -> None:
        self._rows: dict[tuple[StreamKey, int], _OutboxRow] = {}

    def enqueue(self, key: StreamKey, sequences: Sequence[int], home: str,
                at: datetime | None = None) -> None:
        for sequence in sequences:
            self._rows[(key, sequence)] = _OutboxRow(Delivery(key, sequence, 0), home,
                                                     created_at=at)

    def purge(self, before: datetime, limit: int, home: str,
              stream: StreamKey | None = None) -> int:
        """Forget up to `limit` finished rows of `home` created at or before `before` (with
        `stream`: every row of that stream, finished or not)."""
        doomed = [where for where, row in sorted(self._rows.items(),
                                                 key=lambda item: (item[1].created_at
                                                                   or before, item[0]))
                  if row.home == home and (
                      where[0] == stream if stream is not None
                      else row.done and row.created_at is not None
                      and row.created_at <= before)][:max(0, limit)]
        for where in doomed:
            del self._rows[where]
        return len(doomed)

    def rows_of(self, key: StreamKey) -> int:
        """Rows of `key`, finished or not."""
        return sum(1 for stream, _ in self._rows if stream == key)

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[Delivery]:
        claimed: list[Delivery] = []
        for row in sorted(self._rows.values(), key=lambda r: (r.delivery.stream,
                                                                r.delivery.sequence)):
            if len(claimed) >= limit:
                break
            if row.done or row.delivery.dead or row.home != home:
                continue
            if row.next_attempt_at is not None and row.next_attempt_at > now:
                continue
            if row.lease_until is not None and row.lease_until > now:
                continue
            row.lease_until = now + timedelta(seconds=lease_seconds)
            row.delivery = replace(row.delivery, claimed_by=worker)
            claimed.append(row.delivery)
        return claimed

    async def complete(self, key: StreamKey, sequence: int) -> None:
        self._rows[(key, sequence)].done = True

    async def retry(self, key: StreamKey, sequence: int, error: str,
                    next_attempt_at: datetime) -> None:
        row = self._rows[(key, sequence)]
        row.delivery = replace(row.delivery, attempts=row.delivery.attempts + 1,
                               last_error=error, claimed_by=None)
        row.next_attempt_at = next_attempt_at
        row.lease_until = None

    async def dead_letter(self, key: StreamKey, sequence: int, error: str) -> None:
        row = self._rows[(key, sequence)]
        row.delivery = replace(row.delivery, attempts=row.delivery.attempts + 1,
                               last_error=error, dead=True, claimed_by=None)
        row.lease_until = None

    async def dead_letters(self, key: StreamKey) -> Sequence[Delivery]:
        return [row.delivery for (k, _), row in sorted(self._rows.items()) if k == key
                and row.delivery.dead]

    def pending(self) -> int:
        return sum(1 for row in self._rows.values() if not row.done and not row.delivery.dead)

    async def pending_count(self, key: StreamKey | None = None) -> int:
        return sum(1 for (k, _), row in self._rows.items() if key in (None, k)
                   and not row.done and not row.delivery.dead)


@dataclass
class _DeletionRow:
    deletion: BodyDeletion
    not_before: datetime
    home: str | None
    """Who may claim it: the owning stream's home, or the body's region for an orphan."""
    lease_until: datetime | None = None


class MemoryDeletionOutbox:
    """Implements `DeletionOutbox`; rows arrive from the store's commits (one per body)."""

    def __init__(self) -> None:
        self._rows: dict[str, _DeletionRow] = {}
        self._bodies: dict[tuple[str, str], str] = {}
        self._ids = itertools.count(1)

    def enqueue(self, key: StreamKey | None, bodies: Sequence[tuple[str, str, datetime]],
                home: str | None = None) -> None:
        """`home`: the owning stream's metadata home (None for a body no stream owns)."""
        for region, object_key, not_before in bodies:
            if (region, object_key) in self._bodies:
                continue
            deletion_id = str(next(self._ids))
            self._bodies[(region, object_key)] = deletion_id
            self._rows[deletion_id] = _DeletionRow(
                BodyDeletion(deletion_id, key, region, object_key), not_before,
                home if key is not None else region)

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[BodyDeletion]:
        claimed: list[BodyDeletion] = []
        for row in sorted(self._rows.values(),
                          key=lambda r: (r.not_before, int(r.deletion.id))):
            if len(claimed) >= limit:
                break
            if row.home != home or row.not_before > now or (
                    row.lease_until is not None and row.lease_until > now):
                continue
            row.lease_until = now + timedelta(seconds=lease_seconds)
            claimed.append(row.deletion)
        return claimed

    async def claim_bodies(self, worker: str, bodies: Sequence[tuple[str, str]],
                           now: datetime, lease_seconds: float) -> Sequence[BodyDeletion]:
        claimed: list[BodyDeletion] = []
        for body in dict.fromkeys(bodies):
            deletion_id = self._bodies.get(body)
            row = self._rows.get(deletion_id) if deletion_id is not None else None
            if row is None or (row.lease_until is not None and row.lease_until > now):
                continue
            row.lease_until = now + timedelta(seconds=lease_seconds)
            claimed.append(row.deletion)
        return claimed

    async def in_flight(self, stream: StreamKey, now: datetime) -> int:
        return sum(1 for row in self._rows.values() if row.deletion.stream == stream
                   and row.lease_until is not None and row.lease_until > now)

    async def complete(self, deletion_id: str) -> None:
        row = self._rows.pop(deletion_id, None)
        if row is not None:
            self._bodies.pop((row.deletion.region, row.deletion.object_key), None)

    async def postpone(self, deletion_id: str, next_attempt_at: datetime,
                       error: str | None = None) -> None:
        row = self._rows[deletion_id]
        if error is not None:
            row.deletion = replace(row.deletion, attempts=row.deletion.attempts + 1,
                                   last_error=error)
        row.not_before = next_attempt_at
        row.lease_until = None

    def queued(self) -> list[tuple[str, str]]:
        """(region, object key) of every row still queued, in queue order."""
        return [(row.deletion.region, row.deletion.object_key)
                for row in sorted(self._rows.values(), key=lambda r: int(r.deletion.id))]
