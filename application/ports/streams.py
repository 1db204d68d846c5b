"""The stream store: stream rows, their units of work, and what a run holds."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from application.ports.records import StoredRecord
from domain.identifiers import RunKey, StreamKey
from domain.object_intent import ObjectIntent
from domain.records import ObjectRef
from domain.stream import Stream

T = TypeVar("T")


@dataclass(frozen=True)
class Removed:
    """What a prune or erasure removed from the records table."""

    records: int
    objects: tuple[ObjectRef, ...] = ()


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

    async def list_runs(self, tenant: str, after: str | None, limit: int, now: datetime,
                        reader: str | None) -> Sequence[RunSummary]:
        """The tenant's runs that are not marked erased and hold a stream neither deleted
        nor expired at `now` whose readers pin names `reader` or `*` (any such stream when
        `reader` is None: an admin's view); only those streams are counted. Ascending by
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

    async def expired_streams(self, now: datetime, limit: int,
                              home: str) -> Sequence[StreamKey]:
        """Up to `limit` keys of streams homed in `home` whose `expires_after_seconds` pin
        has passed at `now` (counted from `created_at`), earliest created first; streams
        under legal hold, deleted or erased are left out."""
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
