"""Ports: what the use cases need from the outside world, as Protocols.

Each port's docstring is its contract. The in-memory adapters and the
Postgres/S3 adapters implement the same contracts and run the same contract
tests in `tests/contracts/`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Protocol, TypeVar

from domain.canonical_json import compact_json
from domain.identifiers import RunKey, StreamKey
from domain.live_seq import LivePosition
from domain.object_intent import ObjectIntent
from domain.records import Draft, ObjectRef
from domain.stream import Stream

T = TypeVar("T")


@dataclass(frozen=True)
class StoredRecord:
    """A committed record as readers see it (bodies already redacted).

    A JSON payload is held as its canonical text, exactly as stored (`payload_json`, None
    when the record has another body): readers hand that text on as it is, and only a
    caller that needs the value parses it (`payload`, parsed once, on first use; ADR 0048).
    """

    sequence: int
    content_type: str
    appended_at: datetime
    size: int
    payload_json: str | None = None
    data: bytes | None = None
    object: ObjectRef | None = None
    idempotency_key: str | None = None
    offset: int | None = field(default=None, compare=False, repr=False)
    """The stream's byte offset through this record, for storage (`Stream`); readers
    are not given it."""

    @property
    def has_payload(self) -> bool:
        return self.payload_json is not None

    @cached_property
    def payload(self) -> Any:
        """The payload as a value (None when there is none, or when it is JSON `null`)."""
        return json.loads(self.payload_json) if self.payload_json is not None else None

    @classmethod
    def from_draft(cls, sequence: int, draft: Draft, appended_at: datetime,
                   offset: int | None = None) -> StoredRecord:
        """The record a validated draft becomes once `sequence` (and its byte offset) is
        assigned to it: what `cls(...)` with these fields makes, its instance dict filled in
        one step. One is made per appended record, and the frozen `__init__` (one
        `object.__setattr__` a field) cost three times as much; the fields' names are
        checked against this dict's keys by `tests/application/test_stored_record.py`."""
        text = draft.payload_json
        if text is None and draft.has_payload:
            text = compact_json(draft.payload).decode()
        record = _new(cls)
        vars(record).update(
            sequence=sequence, content_type=draft.content_type, appended_at=appended_at,
            size=draft.size, payload_json=text, data=draft.data, object=draft.object,
            idempotency_key=draft.idempotency_key, offset=offset)
        return record


_new = object.__new__


@dataclass(frozen=True)
class RecordPage:
    """Records above a cursor, with the stream's status read in the same snapshot."""

    records: Sequence[StoredRecord]
    head: int
    earliest: int
    closed: bool


@dataclass(frozen=True)
class Wake:
    """A doorbell: something changed on `stream` and was committed.

    `records` carries the newly committed records when they are small enough
    to ride along (a reader may use them instead of reading the store); None
    means "re-read from your cursor" (too large, coalesced, or the bus
    reconnected). A wake is only ever a hint: losing one delays, never loses.
    """

    stream: StreamKey
    head: int
    closed: bool = False
    records: tuple[StoredRecord, ...] | None = None


@dataclass(frozen=True)
class LiveChunk:
    """A best-effort chunk as readers get it: stored nowhere, dropped when nobody listens."""

    stream: StreamKey
    seq: int
    data: Any
    source: str | None = None
    attempt: int | None = None
    index: int | None = None


@dataclass(frozen=True)
class LiveDraft:
    """A live chunk on its way to the bus, which gives it its `seq` (ADR 0017).

    `positioned` says the producer named the chunk's place (a `source` and an explicit
    `index`): re-sending that place gets the same `seq`. Without it, every chunk is new.
    """

    stream: StreamKey
    data: Any
    source: str | None = None
    attempt: int | None = None
    index: int | None = None
    positioned: bool = False

    @property
    def position(self) -> LivePosition | None:
        if not self.positioned or self.source is None or self.index is None:
            return None
        return LivePosition(self.source, self.attempt, self.index)

    def numbered(self, seq: int) -> LiveChunk:
        return LiveChunk(self.stream, seq, self.data, self.source, self.attempt, self.index)


@dataclass(frozen=True)
class ObjectEvidence:
    """What the object store confirms about a stored body."""

    size: int
    sha256: str


@dataclass(frozen=True)
class Removed:
    """What a prune or erasure removed from the records table."""

    records: int
    objects: tuple[ObjectRef, ...] = ()


@dataclass(frozen=True)
class Delivery:
    """An input record waiting to be published to the workflow, with its claim."""

    stream: StreamKey
    sequence: int
    attempts: int
    claimed_by: str | None = None
    last_error: str | None = None
    dead: bool = False


@dataclass(frozen=True)
class DeliveryRedrive:
    """An operator put dead letters of an input stream back in line: who, when, which."""

    by: str
    at: datetime
    sequences: tuple[int, ...]


@dataclass(frozen=True)
class BodyDeletion:
    """An object body queued for deletion through the deletion outbox, with its claim.

    `stream` is the stream that owned the body (its legal hold postpones the
    deletion); None for a body no stream owns (an orphan)."""

    id: str
    stream: StreamKey | None
    region: str
    object_key: str
    attempts: int = 0
    last_error: str | None = None


@dataclass(frozen=True)
class RunSummary:
    """A run as the runs listing shows it: a run exists once it holds a stream."""

    run_id: str
    streams: int
    """How many streams the run holds."""
    created_at: datetime
    """When its first stream was created."""


class StreamSession(Protocol):
    """One unit of work on one stream, holding that stream's row lock.

    `stream` is the aggregate loaded under the lock. On a clean exit of the
    store's `lock()` context, the store persists in ONE transaction: the new
    events of `stream` and of every saved intent, the stream snapshot, the
    staged records with their idempotency receipts, the staged input
    deliveries and removals; then it commits, and only after the commit does a
    wake reach readers. On an exception nothing is persisted.
    """

    stream: Stream
    run_erased: bool

    async def receipts(self, keys: Sequence[str]) -> Mapping[str, int]:
        """The sequences already recorded for these idempotency keys on this stream."""
        ...

    async def intent(self, object_id: str) -> ObjectIntent | None: ...

    async def intents(self) -> Sequence[ObjectIntent]:
        """Every intent of this stream, whatever its state."""
        ...

    def add_records(self, records: Sequence[StoredRecord]) -> None: ...

    def add_deliveries(self, sequences: Sequence[int]) -> None:
        """Stage one input-delivery outbox row per sequence (input streams)."""
        ...

    def save_intent(self, intent: ObjectIntent) -> None: ...

    def queue_deletions(self, bodies: Sequence[tuple[str, str]], not_before: datetime) -> None:
        """Stage deletion-outbox rows for these (region, object key) bodies of this stream,
        due at `not_before`; a body already queued stays queued once. Committed with the
        unit of work, so a body is never forgotten nor deleted for a rolled-back change."""
        ...

    async def remove_records_through(self, sequence: int) -> Removed:
        """Delete record rows up to `sequence`; report removed objects for deletion."""
        ...

    async def offset_through(self, sequence: int) -> int | None:
        """Record `sequence`'s stored byte offset (see `Stream`), for a record still
        retained (a removal staged in this unit of work has not happened yet) or staged
        by this unit of work; None when there is no such record."""
        ...


class StreamStore(Protocol):
    """Streams, their records and intents: the source of truth.

    Sequences are assigned from the locked row only. A stream key includes the
    tenant, so another tenant's stream is simply not found.
    """

    async def create(self, stream: Stream,
                     max_streams_per_run: int | None = None) -> tuple[Stream, bool]:
        """Insert a new stream and return it with True; if the key exists already,
        return the stored stream unchanged with False.

        Raises `RunErased` when its run is marked erased. Creation and
        `mark_run_erased` serialize on the run, on every node: a create either answered
        before the mark (and `list_run` after the mark returns its stream) or is refused.
        With `max_streams_per_run`, a new stream in a run that already holds that many is
        refused with `TooManyStreams` (an existing one is still returned); creates of one
        run serialize on every node, so the run never holds more."""
        ...

    def lock(self, key: StreamKey) -> AbstractAsyncContextManager[StreamSession]:
        """Lock the stream row for one unit of work; raises `NotFound` when absent."""
        ...

    async def transact(self, key: StreamKey,
                       work: Callable[[StreamSession], Awaitable[T]]) -> T:
        """`work(session)` as one unit of work, answered once committed, like `lock()`.

        `work` may be called more than once and only its last call counts, so it
        must act through the session alone. A store may first run it on a state it
        holds and, if that state is no longer current at commit, write nothing and
        run it again under the lock; whatever `work` decides (or raises) was
        decided on the state the commit found current."""
        ...

    async def load(self, key: StreamKey) -> Stream | None:
        """The latest committed state, without a lock."""
        ...

    async def list_run(self, run: RunKey, after: str | None = None,
                       limit: int | None = None) -> Sequence[Stream]:
        """The run's streams in ascending `stream_id` order (Python's string order), only
        those above `after` when given, at most `limit` when given."""
        ...

    async def list_runs(self, tenant: str, after: str | None,
                        limit: int) -> Sequence[RunSummary]:
        """The tenant's runs that hold a stream and are not marked erased, ascending by
        `run_id` (Python's string order), only those above `after` when given, at most
        `limit`. Another tenant's runs never appear."""
        ...

    async def streams_with_retention(self, after: StreamKey | None, limit: int,
                                     home: str) -> Sequence[StreamKey]:
        """Up to `limit` keys, ascending and strictly above `after`, of the streams homed
        in `home` (their `metadata_home`) that have a retention pin (`max_age_seconds` or
        `max_records`) and are neither under legal hold nor erased: the pruner's work
        list, paged by key."""
        ...

    async def expired_intents(self, now: datetime, limit: int,
                              home: str) -> Sequence[tuple[StreamKey, str]]:
        """Up to `limit` (stream, object id) pairs of intents of streams homed in `home`,
        still live (prepared or uploaded), whose `expires_at` is at or before `now`, oldest
        deadline first; intents of streams under legal hold are left out (nothing of
        theirs is deleted)."""
        ...

    async def load_intent(self, key: StreamKey, object_id: str) -> ObjectIntent | None: ...

    async def mark_run_erased(self, run: RunKey) -> None:
        """From its answer on, no stream is created in the run and every unit of work on
        one of its streams sees `run_erased`; idempotent."""
        ...


class RecordReader(Protocol):
    """Reads committed records (never uncommitted ones) in ascending sequence order."""

    async def read_page(self, key: StreamKey, after: int, limit: int) -> RecordPage:
        """Up to `limit` records with `sequence > after`, ascending, and the status
        of the same snapshot; raises `NotFound` when the stream does not exist."""
        ...

    async def newest_appended_before(self, key: StreamKey, cutoff: datetime) -> int:
        """The highest sequence appended at or before `cutoff` (0 when none)."""
        ...


class WakeSubscription(Protocol):
    async def next(self, timeout: float) -> Wake | LiveChunk | None:
        """The next wake or live chunk, or None when `timeout` seconds pass without one.

        The queue behind it is bounded: overflowing wakes are coalesced into one
        wake without records (so the reader re-reads), overflowing live chunks
        are dropped (their `seq` shows the gap).
        """
        ...

    def interrupt(self) -> None:
        """Make a pending (or the next) `next()` return at once, as if it timed out."""
        ...


class WakeBus(Protocol):
    """Fan-out of wake signals and live chunks to readers in this process.

    `subscribe` registers before returning, so anything committed after the
    `async with` line is entered produces a wake for that subscription.

    Rules (ADR 0056):
    - chunks and the wakes that say closed reach every subscription in one order, the
      order in which their publishes and commits completed: a chunk whose
      `publish_live` returned before a close was committed comes before that close's
      wake, and a chunk published once the close has committed comes after it;
    - on any node: chunks published on one process and a close committed on another
      keep that order for the readers of every process.
    """

    def subscribe(
        self, key: StreamKey, live: bool = False
    ) -> AbstractAsyncContextManager[WakeSubscription]: ...

    async def publish_live(self, drafts: Sequence[LiveDraft]) -> None:
        """Best effort: never raises and never waits for readers. Returns once the
        chunks have their place in the order above (or were dropped), which may take a
        round trip to the database, bounded by its bounds.

        The bus numbers each chunk with its stream's `LiveSeq` at the point that orders
        chunks for every reader, so each reader, on any node, gets strictly rising
        `seq` for new chunks and a re-driven position's first `seq` (ADR 0017).
        """
        ...


@dataclass(frozen=True)
class ListedObject:
    """A body as the object store lists it."""

    key: str
    modified_at: datetime
    """When the body was written (timezone-aware UTC)."""


class NodeDraining(Exception):
    """This node is shutting down and takes no new subscriptions (another node does)."""


class StoreUnavailable(Exception):
    """The store refused the connection or did not answer within its bound. What was
    asked may still have happened (a write whose answer was lost): a retry with the same
    idempotency key finds out without writing twice."""


class StoreFull(StoreUnavailable):
    """The store has no space left (its disk or tablespace is full): the statement that
    needed space failed, so nothing of what was asked was stored, and the same request
    succeeds once space returns."""


class ObjectRegionUnavailable(LookupError):
    """This node has no object store for the region a body is pinned to."""


class ObjectStoreUnavailable(Exception):
    """The object store could not be reached, or failed, past its client's own retries.
    What was asked may still have happened (a body written, a delete done): every object
    step is safe to retry."""


class ObjectStore(Protocol):
    """Object bodies, one store per region; keys are always chosen by Runnel.

    `put` streams the body and verifies size and SHA-256 itself (emulators
    accept wrong checksums): on a mismatch it keeps nothing and raises
    `SizeMismatch` / `DigestMismatch`. A region without a configured store
    raises `ObjectRegionUnavailable` (never a silent write elsewhere). A store that cannot
    be reached or fails raises `ObjectStoreUnavailable`. `serves` says, without I/O,
    whether a region has a store here, so a step can be refused before any body moves.
    """

    def serves(self, region: str) -> bool: ...

    async def put(self, region: str, key: str, body: AsyncIterable[bytes], size: int,
                  sha256: str) -> ObjectEvidence: ...

    async def stat(self, region: str, key: str) -> ObjectEvidence | None: ...

    def open(self, region: str, key: str) -> AsyncIterator[bytes]: ...

    async def delete(self, region: str, key: str) -> None:
        """Remove a body; removing an absent one is fine."""
        ...

    def list_objects(self, region: str, prefix: str = "") -> AsyncIterator[ListedObject]:
        """Every complete body in `region` whose key starts with `prefix`, in no promised
        order (a partial upload is never listed); for the orphan sweep."""
        ...


class GapEvidence(Protocol):
    """Where readers report a wake that revealed missing sequences."""

    async def record_gap(self, key: StreamKey, expected: int, received: int) -> None: ...


class SubscriptionLeases(Protocol):
    """Concurrent-subscription slots of each principal, shared by every node on the same
    storage: one lease per open subscription (ADR 0018).

    - `acquire` takes a slot for the principal `(tenant, sub)` and returns its lease id when
      fewer than `limit` of that principal's leases are live at `now`, else None. A lease is
      live while `now < lease_until`; it is taken until `now + lease_seconds`. Acquires for
      one principal serialize on every node, so acquiring never leaves more than `limit`
      live leases of it.
    - `renew` extends each given lease that is still live at `now` to `now + lease_seconds`
      and returns the ids it extended; a lapsed or released lease is never revived (its slot
      may be someone else's by now).
    - `release` frees a slot at once; releasing an unknown or lapsed lease is fine.

    A holder that dies stops renewing: its slots come back when their leases lapse, without
    anyone cleaning up. `now` is the caller's clock."""

    async def acquire(self, tenant: str, sub: str, limit: int, now: datetime,
                      lease_seconds: float) -> str | None: ...

    async def renew(self, lease_ids: Sequence[str], now: datetime,
                    lease_seconds: float) -> Sequence[str]: ...

    async def release(self, lease_id: str) -> None: ...


@dataclass(frozen=True)
class Revocation:
    """A revoked token id: `tenant` None revokes that `jti` in every tenant. `expires_at` is
    when the token would have expired anyway; after it the revocation may be forgotten."""

    token_id: str
    tenant: str | None
    expires_at: datetime


class RevokedTokens(Protocol):
    """The deny-list of token ids (`jti`), shared by every node on the same storage
    (ADR 0024).

    - `revoke` records a revocation; revoking the same `(token_id, tenant)` again keeps
      the later `expires_at`. It also forgets every revocation whose `expires_at` is at
      or before `now` (the tokens they name are refused as expired anyway).
    - `active` lists every revocation whose `expires_at` is after `now`, in no order.
    - `watch(ring)` has `ring()` called soon after a revocation commits on any node of
      the storage, and whenever one may have been missed (a lost LISTEN connection).
      Rings are hints, like wakes: the watcher re-reads `active`; a lost ring delays,
      and never loses, a revocation. `ring` runs on the event loop and must not block.
    """

    async def revoke(self, revocation: Revocation, now: datetime) -> None: ...

    async def active(self, now: datetime) -> Sequence[Revocation]: ...

    def watch(self, ring: Callable[[], None]) -> None: ...


class DeliveryOutbox(Protocol):
    """Input-delivery rows, claimed with a lease so a dead worker's rows are taken over.
    A row is pending until it is completed or dead-lettered (claimed and retrying rows
    are still pending).

    Each stream is one line, in sequence order: its head is its lowest pending row, and
    a claim takes rows of a stream only from its head on, so no row is handed out while
    an earlier one of its stream is pending (backing off, or leased to any worker). A
    dead letter leaves the line (it no longer holds back the rows behind it); a re-drive
    puts it back, at its own sequence, so it is the next one delivered there."""

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[Delivery]:
        """Due rows of streams homed in `home` only (a node acts on its region's streams):
        of each stream, its head if it is due and unleased, with the pending rows right
        behind it up to the first that is not. Sorted by stream then sequence; with more
        rows than `limit`, every stream's head goes before any stream's second row."""
        ...

    async def complete(self, key: StreamKey, sequence: int) -> None: ...

    async def retry(self, key: StreamKey, sequence: int, error: str,
                    next_attempt_at: datetime) -> None: ...

    async def release(self, key: StreamKey, sequences: Sequence[int], worker: str) -> None:
        """Hand back unattempted rows `worker` claimed (those behind one that is backing
        off): no attempt counts, and they are claimable again at once."""
        ...

    async def dead_letter(self, key: StreamKey, sequence: int, error: str) -> None: ...

    async def dead_letters(self, key: StreamKey) -> Sequence[Delivery]: ...

    async def redrive(self, key: StreamKey, sequences: Sequence[int], by: str,
                      at: datetime) -> Sequence[int]:
        """Put those of `sequences` that are dead letters of `key` back in line, pending
        and due with no attempt spent, and record one `DeliveryRedrive` of them (none when
        no sequence was a dead letter). Returns them, ascending. Atomic: a sequence is
        re-driven once however many re-drives race."""
        ...

    async def redrives(self, key: StreamKey, limit: int) -> Sequence[DeliveryRedrive]:
        """The latest `limit` re-drives of `key`, newest first."""
        ...

    async def pending_count(self, key: StreamKey | None = None) -> int:
        """Pending rows of `key`, or of every stream when `key` is None."""
        ...


class DeletionOutbox(Protocol):
    """Object bodies to delete, claimed with a lease like input deliveries: several workers
    claim at once without sharing a row, and a dead worker's rows come back when its
    lease expires. A row is claimable when its `not_before` is due and no live lease
    covers it; `now` is the caller's clock."""

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[BodyDeletion]:
        """Due rows of streams homed in `home`, and rows no stream owns whose body is in
        `home`'s region."""
        ...

    async def complete(self, deletion_id: str) -> None:
        """The body is gone: the row is removed."""
        ...

    async def postpone(self, deletion_id: str, next_attempt_at: datetime,
                       error: str | None = None) -> None:
        """Release the claim until `next_attempt_at`; with an `error` the attempt counts
        (a failure), without one it does not (e.g. the stream is under legal hold)."""
        ...

    async def claim_bodies(self, worker: str, bodies: Sequence[tuple[str, str]],
                           now: datetime, lease_seconds: float) -> Sequence[BodyDeletion]:
        """Claim the queued rows of these (region, key) bodies that no live lease covers,
        whatever their `not_before`: a change that just queued them deletes them at once."""
        ...

    async def in_flight(self, stream: StreamKey, now: datetime) -> int:
        """Rows of `stream` claimed under a live lease: deletions that may be under way."""
        ...


@dataclass(frozen=True)
class InputEvent:
    """What the workflow receives for one input record. `event_id` is deterministic and
    derived from the whole stream key, tenant included; `tenant` travels with it, since
    the same run id in two tenants names two runs (ADR 0022)."""

    event_id: str
    tenant: str
    run_id: str
    stream_id: str
    sequence: int
    record: Mapping[str, Any] = field(default_factory=dict)


class WorkflowWaitService(Protocol):
    """The workflow engine's resume authority. Delivery is at-least-once; the
    service deduplicates by `event_id`. Raises on failure so the row is retried.

    `publish` returning is what completes the outbox row, so each adapter states
    what it proves: the webhook, that the receiver answered 2xx (delivered); the
    NOTIFY channel, only that the notification committed (published: Postgres
    hands it to the sessions listening at that moment, and to nobody else)."""

    async def publish(self, event: InputEvent) -> None: ...


class Clock(Protocol):
    def now(self) -> datetime:
        """Timezone-aware UTC."""
        ...


class IdGenerator(Protocol):
    def new_id(self) -> str: ...


@dataclass(frozen=True)
class UpkeepLimits:
    """What storage upkeep keeps (ADR 0032)."""

    audit_events: int = 1000
    """Events kept per aggregate below its snapshot (the audit tail); older ones go."""
    receipts_before: datetime | None = None
    """Receipts recorded at or before this go (the TTL); None: none for age alone."""
    pruned_receipts_before: datetime | None = None
    """Receipts of records below `earliest` go once recorded at or before this (the
    retry window after a prune); None: they go at once."""
    deliveries_before: datetime | None = None
    """Finished input deliveries created at or before this go; None: none."""
    gaps_before: datetime | None = None
    """Gap evidence recorded at or before this goes; None: none."""


@dataclass(frozen=True)
class UpkeepPass:
    """Rows one upkeep step removed."""

    events: int = 0
    receipts: int = 0
    erased: int = 0
    deliveries: int = 0
    gaps: int = 0

    @property
    def total(self) -> int:
        return self.events + self.receipts + self.erased + self.deliveries + self.gaps

    def __add__(self, other: UpkeepPass) -> UpkeepPass:
        return UpkeepPass(self.events + other.events, self.receipts + other.receipts,
                          self.erased + other.erased, self.deliveries + other.deliveries,
                          self.gaps + other.gaps)


class StorageUpkeep(Protocol):
    """Deletes, in bounded batches, the rows that nothing reads or decides on any more, of
    the streams homed in `home` (ADR 0032).

    - `streams_after(after, limit, home)` pages the streams homed in `home` by key;
    - `tidy(keys, limits, batch)` removes, for those streams, at most `batch` rows of each
      kind: events at or below (snapshot version − `audit_events`) of each stream and of its
      object intents; receipts of records below `earliest` recorded at or before
      `pruned_receipts_before`, and any receipt recorded at or before `receipts_before`;
      and, of a stream that is erased, not under legal hold and without records (one
      sealed under a hold keeps them until erased again), every row but the stream's
      own (records, receipts, events, consumers, intents, deliveries, gap evidence). The
      stream row stays, as the run's erasure mark does: they answer `run_erased`;
    - `purge(limits, batch, home)` removes at most `batch` finished (done) input deliveries
      and at most `batch` gap evidence rows older than their limits.
    Nothing a unit of work reads goes: a stream loads from its snapshot, a receipt goes only
    below `earliest` or past the TTL, a dead-lettered delivery stays. Every call is safe to
    run twice at once and to cut short; a caller repeats a step until it removed fewer than
    `batch` rows of every kind."""

    async def streams_after(self, after: StreamKey | None, limit: int,
                            home: str) -> Sequence[StreamKey]: ...

    async def tidy(self, keys: Sequence[StreamKey], limits: UpkeepLimits,
                   batch: int) -> UpkeepPass: ...

    async def purge(self, limits: UpkeepLimits, batch: int, home: str) -> UpkeepPass: ...


class Leadership(Protocol):
    """Which one process of a region runs the region's sweeps (ADR 0032).

    `lead()` answers whether this process leads now: it takes the lead when nobody holds
    it, keeps it while it holds it, and answers False (and keeps trying on later calls)
    while another process holds it. A leader that dies or loses its database session loses
    the lead without anyone cleaning up; another process takes it on its next call. The
    lead is an economy, not a safety: every sweep it guards is safe to run twice at once."""

    async def lead(self) -> bool: ...

    async def close(self) -> None: ...
