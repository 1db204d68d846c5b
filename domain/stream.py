"""The `Stream` aggregate: a stream's pins and the counters every decision needs.

It decides append, ack, close, legal hold, prune, erase and delete. It never holds
record bodies: those live in a records table, so retention, redaction and
erasure never rewrite the event log. Each public command validates first and
raises a `DomainError` without changing anything; only then does it trigger
an event whose `apply` merely assigns state (it runs again on replay).

Credit is counters, never a list (docs/adr/0047): every record stores the
stream's *byte offset* through itself (the running total of record sizes), the
stream keeps the offset at its head, and unread bytes are that minus the offset
at the unread floor. When the floor rises to a record between the floor and the
head, the caller reads that record's stored offset under the row lock and
passes it in; the event carries it, so replay looks nothing up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import accumulate
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.credit import CreditVerdict, Usage, decide_credit
from domain.definition import StreamDefinition
from domain.errors import (
    AckBeyondHead,
    AckRegression,
    Backpressure,
    ConsumerScope,
    InvalidRecord,
    NotFound,
    QuotaExhausted,
    RunErased,
    StreamClosed,
    StreamHeld,
    TooLarge,
)
from domain.identifiers import StreamKey
from domain.records import Draft
from domain.stream_upcasts import upcast_v1_v2, upcast_v2_v3

MAX_BATCH = 1000


@dataclass(frozen=True)
class AppendPlan:
    """What an append decided: every draft's sequence, and which drafts are new."""

    sequences: tuple[int, ...]
    new: tuple[tuple[int, Draft], ...]
    duplicates: tuple[int, ...] = ()
    """The batch positions that store nothing: their idempotency key was used before, on
    the stream or earlier in the batch, and they get that record's sequence (the first
    copy stays, whatever this one carries)."""
    offsets: tuple[int, ...] = ()
    """Per entry of `new`, the byte offset its record stores (through itself)."""

    @property
    def all_duplicates(self) -> bool:
        return not self.new


class OffsetNeeded(ValueError):
    """A command would raise the unread floor to a record whose byte offset only the
    record itself holds, and the caller did not pass it (a caller's bug, not a refusal)."""


class Stream(Aggregate):
    """One stream of one run of one tenant.

    Only the consumers its definition declares exist. Unread is what lies above the
    slowest of them; a stream that declares none has nothing to wait for, so nothing
    of it is ever unread (its total ceilings and retention bound it).
    """

    class_version = 3
    """2: acks of declared consumers only, no first-acker owners (`upcast_v1_v2`).
    3: byte offsets instead of the unread records' sizes (`upcast_v2_v3`)."""

    deleted = False
    """Whether the stream was deleted (`delete`); a class default, so snapshots from
    before stream deletion load as not deleted."""

    @staticmethod
    def create_id(tenant: str, run_id: str, stream_id: str, **_: Any) -> UUID:
        return StreamKey(tenant, run_id, stream_id).aggregate_id

    @event("Created")
    def __init__(self, tenant: str, run_id: str, stream_id: str,
                 definition: StreamDefinition, created_at: datetime) -> None:
        self.tenant = tenant
        self.run_id = run_id
        self.stream_id = stream_id
        self.definition = definition
        self.created_at = created_at
        self.head = 0
        self.earliest = 1
        self.total_items = 0
        self.total_bytes = 0
        self.reservations: dict[str, int] = {}
        self.unread_floor = 0
        self.unread_bytes = 0
        """Kept beside the offsets (= `head_offset` − the floor's offset): the release
        before offsets reads it from the snapshot (docs/adr/0047)."""
        self.head_offset = 0
        """The byte offset through the head record: the sizes of every record ever
        appended, from a base of 0 at sequence 0 (or where migration 0015 put it)."""
        self.acks: dict[str, int] = dict.fromkeys(definition.consumer_ids, 0)
        self.ack_offsets: dict[str, int | None] = dict.fromkeys(definition.consumer_ids, 0)
        """Per consumer, the byte offset through its ack (None: at or below the floor when
        acked, so never needed: the floor only rises)."""
        self.closed = False
        self.legal_hold = False
        self.hold_reason: str | None = None
        self.erased = False

    @classmethod
    def start(cls, key: StreamKey, definition: StreamDefinition, created_at: datetime) -> Stream:
        return cls(tenant=key.tenant, run_id=key.run_id, stream_id=key.stream_id,
                   definition=definition, created_at=created_at)

    # -- reading ---------------------------------------------------------

    @property
    def key(self) -> StreamKey:
        return StreamKey(self.tenant, self.run_id, self.stream_id)

    @property
    def usage(self) -> Usage:
        """Total bytes include the bodies reserved by open object intents."""
        return Usage(self.head - self.unread_floor, self.unread_bytes, self.total_items,
                     self.total_bytes + sum(self.reservations.values()))

    @property
    def floor_offset(self) -> int:
        """The byte offset through the record at the unread floor."""
        return self.head_offset - self.unread_bytes

    def offset_needed(self, sequence: int) -> bool:
        """Whether a command that may raise the floor to `sequence` needs that record's
        stored offset from the caller: only strictly between the floor and the head
        (the stream knows those two; below the floor nothing is ever needed)."""
        return self.unread_floor < sequence < self.head

    def _offset_through(self, sequence: int, given: int | None) -> int | None:
        """The byte offset through `sequence` for an event: known here at the floor and
        the head, `given` (the record's stored offset) between them, and irrelevant
        (None) below the floor."""
        if sequence == self.head:
            return self.head_offset
        if sequence == self.unread_floor:
            return self.floor_offset
        if sequence < self.unread_floor:
            return None
        if given is None:
            raise OffsetNeeded(f"the byte offset through record {sequence} is needed")
        if not self.floor_offset <= given <= self.head_offset:
            raise OffsetNeeded(f"offset {given} of record {sequence} is outside the unread "
                               f"window's {self.floor_offset}..{self.head_offset}")
        return given

    # -- guards ----------------------------------------------------------

    def ensure_exists(self) -> None:
        """A deleted stream is not found, for every command (its row is a tombstone)."""
        if self.deleted:
            raise NotFound("stream not found")

    @property
    def expires_at(self) -> datetime | None:
        """When the `expires_after_seconds` pin deletes the stream, counted from creation."""
        seconds = self.definition.expires_after_seconds
        return None if seconds is None else self.created_at + timedelta(seconds=seconds)

    def expired(self, now: datetime) -> bool:
        expires_at = self.expires_at
        return expires_at is not None and now >= expires_at

    def ensure_live(self, now: datetime) -> None:
        """An expired stream is not found from its expiry on, before the sweep deletes it,
        like a deleted one."""
        self.ensure_exists()
        if self.expired(now):
            raise NotFound("stream not found")

    def ensure_not_erased(self, run_erased: bool = False, *, nothing_more_is: str = "stored"
                          ) -> None:
        """Nothing more is stored in an erased run: not on its erased streams, nor (under the
        row lock, `run_erased`) on one the eraser has not sealed yet. A deleted stream is
        not found."""
        self.ensure_exists()
        if self.erased or run_erased:
            raise RunErased(f"the run was erased; nothing more is {nothing_more_is}")

    def ensure_open(self, *, nothing_more_is: str = "stored") -> None:
        """Nothing more is stored on a closed stream either (an erased one says erased)."""
        self.ensure_not_erased(nothing_more_is=nothing_more_is)
        if self.closed:
            raise StreamClosed("stream is closed")

    # -- append ----------------------------------------------------------

    def plan_append(self, drafts: Sequence[Draft], receipts: Mapping[str, int]) -> AppendPlan:
        """Decide a batch: all new drafts get consecutive sequences from head + 1, or none does.

        `receipts` maps idempotency keys already used on this stream to their
        sequence; such drafts (and repeats of a key inside the batch) get the
        original sequence and store nothing (also on a closed stream: a retry of an
        append that succeeded before the close). Credit counts new drafts only. An
        erased stream refuses every batch.
        """
        if not drafts:
            raise InvalidRecord("a batch holds at least one record")
        if len(drafts) > MAX_BATCH:
            raise TooLarge(f"a batch holds at most {MAX_BATCH} records", limit=MAX_BATCH)
        # Before idempotency: an erased run answers every append the same way, even a
        # retry whose receipt outlived the erased records.
        self.ensure_not_erased()
        if all(draft.idempotency_key is None for draft in drafts):
            plan = self._plan_unkeyed(drafts)
        else:
            plan = self._plan_keyed(drafts, receipts)
        if plan.new:
            size = plan.offsets[-1] - self.head_offset
            # A body counts toward the totals once: reserved at prepare, or here for an
            # intent prepared before reservations existed.
            unreserved = sum(draft.object.size for _, draft in plan.new
                             if draft.object is not None
                             and draft.object.object_id not in self.reservations)
            self._ensure_appendable(len(plan.new), size, size + unreserved)
        return plan

    def _plan_unkeyed(self, drafts: Sequence[Draft]) -> AppendPlan:
        """Drafts without idempotency keys: all new, in order."""
        first = self.head + 1
        sequences = tuple(range(first, first + len(drafts)))
        offsets = tuple(accumulate([draft.size for draft in drafts], initial=self.head_offset))
        return AppendPlan(sequences, tuple(zip(sequences, drafts, strict=True)), (), offsets[1:])

    def _plan_keyed(self, drafts: Sequence[Draft], receipts: Mapping[str, int]) -> AppendPlan:
        seen = dict(receipts)
        sequences: list[int] = []
        new: list[tuple[int, Draft]] = []
        offsets: list[int] = []
        offset = self.head_offset
        next_sequence = self.head + 1
        duplicates: list[int] = []
        for position, draft in enumerate(drafts):
            key = draft.idempotency_key
            if key is not None and key in seen:
                sequences.append(seen[key])
                duplicates.append(position)
                continue
            sequences.append(next_sequence)
            new.append((next_sequence, draft))
            offset += draft.size
            offsets.append(offset)
            if key is not None:
                seen[key] = next_sequence
            next_sequence += 1
        return AppendPlan(tuple(sequences), tuple(new), tuple(duplicates), tuple(offsets))

    def append(self, plan: AppendPlan) -> None:
        """Commit a plan made by `plan_append` on this same state."""
        if not plan.new:
            return
        if plan.new[0][0] != self.head + 1:
            raise ValueError("append plan is stale")
        self.trigger_event(self.Appended, sizes=[draft.size for _, draft in plan.new],
                           objects={draft.object.object_id: draft.object.size
                                    for _, draft in plan.new if draft.object is not None})

    def _ensure_appendable(self, items: int, size: int, stored: int | None = None) -> None:
        self.ensure_open()
        credit = self.definition.credit
        verdict = decide_credit(credit, self.usage, items, size,
                                gated=bool(self.definition.consumers), stored=stored)
        if verdict is CreditVerdict.NEVER_FITS:
            raise TooLarge("batch exceeds the stream's unread ceiling and could never be accepted",
                           limit_items=credit.max_unread_items,
                           limit_bytes=credit.max_unread_bytes)
        if verdict is CreditVerdict.QUOTA_EXHAUSTED:
            raise QuotaExhausted("the stream's total items/bytes ceiling is reached",
                                 total_items=self.total_items,
                                 total_bytes=self.usage.total_bytes,
                                 max_total_items=credit.max_total_items,
                                 max_total_bytes=credit.max_total_bytes)
        if verdict is CreditVerdict.UNREAD_FULL:
            slowest = min(self.acks.values())
            holding = sorted(consumer for consumer, acked in self.acks.items()
                             if acked == slowest)
            raise Backpressure(
                f"the unread ceiling is reached; retry after {', '.join(holding)} ack",
                consumers=holding, unread_items=self.usage.unread_items,
                unread_bytes=self.unread_bytes, max_unread_items=credit.max_unread_items,
                max_unread_bytes=credit.max_unread_bytes)

    class Appended(Aggregate.Event):
        """`objects`: the bodies (id → size) the records reference; each leaves the
        reservations and joins the total bytes."""

        sizes: list[int]
        objects: dict[str, int] | None = None

        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.head += len(self.sizes)
            stream.total_items += len(self.sizes)
            stream.total_bytes += sum(self.sizes)
            if self.objects:
                stream.total_bytes += sum(self.objects.values())
                stream.reservations = {object_id: size for object_id, size
                                       in stream.reservations.items()
                                       if object_id not in self.objects}
            stream.head_offset += sum(self.sizes)
            stream.unread_bytes += sum(self.sizes)
            if not stream.acks:  # nobody to wait for: nothing is unread
                stream._raise_floor(stream.head, stream.head_offset)

    # -- object reservations ---------------------------------------------

    def reserve_object(self, object_id: str, size: int) -> None:
        """A prepared body holds its declared size against the total bytes until its intent
        commits (the record then holds it), aborts or expires (`release_object`); open
        intents are bounded by the pinned `max_open_objects`. A closed or erased stream
        takes no new body: it could never be committed."""
        self.ensure_open()
        if object_id in self.reservations:
            return
        credit = self.definition.credit
        if len(self.reservations) >= credit.max_open_objects:
            raise QuotaExhausted(f"the stream has {credit.max_open_objects} open objects already",
                                 max_open_objects=credit.max_open_objects)
        verdict = decide_credit(credit, self.usage, 0, 0, gated=False, stored=size)
        if verdict is CreditVerdict.QUOTA_EXHAUSTED:
            raise QuotaExhausted("the object would exceed the stream's total bytes ceiling",
                                 total_bytes=self.usage.total_bytes,
                                 max_total_bytes=credit.max_total_bytes)
        self.trigger_event(self.ObjectReserved, object_id=object_id, size=size)

    class ObjectReserved(Aggregate.Event):
        object_id: str
        size: int

        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.reservations = {**stream.reservations, self.object_id: self.size}

    def release_object(self, object_id: str) -> bool:
        """Give back an aborted or expired intent's reservation (False: it held none)."""
        if object_id not in self.reservations:
            return False
        self.trigger_event(self.ObjectReleased, object_id=object_id)
        return True

    class ObjectReleased(Aggregate.Event):
        object_id: str

        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.reservations = {object_id: size for object_id, size
                                   in stream.reservations.items() if object_id != self.object_id}

    # -- consumers -------------------------------------------------------

    def ack(self, consumer_id: str, sequence: int, principal: str,
            offset: int | None = None) -> bool:
        """Advance a declared consumer's ack, by a principal its declaration allows.

        An undeclared id is refused and registers nothing. Re-acking the current value
        is accepted and changes nothing (returns False). `offset` is record `sequence`'s
        stored byte offset, read under the row lock; it is needed only when
        `offset_needed(sequence)` (`OffsetNeeded` otherwise, after every refusal).
        """
        self.ensure_exists()
        allowed = self.definition.consumer_principals(consumer_id)
        if allowed is not None and principal not in allowed:
            raise ConsumerScope(f"principal may not ack consumer {consumer_id!r}",
                                consumer_id=consumer_id)
        if sequence < 0:
            raise AckRegression("ack must be non-negative")
        if sequence > self.head:
            raise AckBeyondHead(f"ack {sequence} is beyond head {self.head}", head=self.head)
        current = self.acks[consumer_id]
        if sequence < current:
            raise AckRegression(f"ack {sequence} is below the current ack {current}",
                                acked=current)
        if sequence == current:
            return False
        self.trigger_event(self.Acked, consumer_id=consumer_id, sequence=sequence,
                           principal=principal, offset=self._offset_through(sequence, offset))
        return True

    class Acked(Aggregate.Event):
        """`principal` is evidence of who acked; it grants nothing. `offset`: the byte
        offset through `sequence` (None when at or below the floor, and in histories
        from before offsets)."""

        consumer_id: str
        sequence: int
        principal: str
        offset: int | None = None

        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            if self.consumer_id not in stream.acks:
                return  # history from before only declared consumers existed: it counts for nothing
            stream.acks = {**stream.acks, self.consumer_id: self.sequence}
            stream.ack_offsets = {**stream.ack_offsets, self.consumer_id: self.offset}
            slowest = min(stream.acks, key=stream.acks.__getitem__)
            stream._raise_floor(stream.acks[slowest], stream.ack_offsets[slowest])

    def _raise_floor(self, sequence: int, offset: int | None) -> None:
        """Credit once granted is never revoked: the floor only moves up, to `sequence`
        (at most the head) whose byte offset is `offset`."""
        if sequence <= self.unread_floor:
            return
        if offset is None:
            raise OffsetNeeded(f"history from before byte offsets raises the floor to "
                               f"{sequence}: replay it from a snapshot (docs/adr/0047)")
        self.unread_floor = sequence
        self.unread_bytes = self.head_offset - offset

    # Snapshots of older class versions (`domain/stream_upcasts.py`).
    upcast_v1_v2 = staticmethod(upcast_v1_v2)
    upcast_v2_v3 = staticmethod(upcast_v2_v3)

    # -- lifecycle -------------------------------------------------------

    def close(self) -> bool:
        """Close for appends; idempotent (returns False when already closed)."""
        self.ensure_exists()
        if self.closed:
            return False
        self.trigger_event(self.Closed)
        return True

    class Closed(Aggregate.Event):
        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.closed = True

    def set_legal_hold(self, held: bool, reason: str | None) -> bool:
        self.ensure_exists()
        if held == self.legal_hold and reason == self.hold_reason:
            return False
        self.trigger_event(self.LegalHoldSet, held=held, reason=reason)
        return True

    class LegalHoldSet(Aggregate.Event):
        held: bool
        reason: str | None

        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.legal_hold = self.held
            stream.hold_reason = self.reason

    def prune(self, through: int, offset: int | None = None) -> int:
        """Remove records up to `through` (clamped to head); never while held.

        Returns the new earliest retained sequence, unchanged when nothing is pruned.
        The floor rises to the last pruned record: `offset` is its stored byte offset,
        read before it goes, and needed only when `offset_needed(through)`.
        """
        if self.legal_hold:
            raise StreamHeld("stream is under legal hold")
        through = min(through, self.head)
        if through < self.earliest:
            return self.earliest
        self.trigger_event(self.Pruned, through=through,
                           offset=self._offset_through(through, offset))
        return self.earliest

    class Pruned(Aggregate.Event):
        """`offset`: the byte offset through `through` (None when at or below the floor)."""

        through: int
        offset: int | None = None

        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.earliest = self.through + 1
            stream._raise_floor(self.through, self.offset)

    def erase(self) -> bool:
        """Seal (and close) the stream for good and remove its records unless it is under
        legal hold.

        After erasure nothing more is ever stored, and followers end. A held stream
        is sealed but keeps its records and its open intents' reservations; erasing it
        again once the hold is released removes both (even when retention has pruned
        every record meanwhile). Returns True when something was removed, so the
        caller removes the records and aborts the intents.
        """
        if self.legal_hold:
            if not self.erased:
                self.trigger_event(self.Sealed)
            return False
        if self.erased and self.earliest == self.head + 1 and not self.reservations:
            return False
        self.trigger_event(self.Erased)
        return True

    class Sealed(Aggregate.Event):
        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.erased = True
            stream.closed = True

    class Erased(Aggregate.Event):
        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.reservations = {}  # its live intents are aborted with it
            stream.erased = True
            stream.closed = True
            stream.earliest = stream.head + 1
            stream._raise_floor(stream.head, stream.head_offset)

    def delete(self) -> bool:
        """Delete the stream for good: its records and open intents go (the caller removes
        them and aborts the intents), and its row stays as a tombstone that keeps the head
        and answers not found, so the id is never reused (docs/adr/0075). Refused under
        legal hold. Returns False when already deleted (a retry changes nothing)."""
        if self.deleted:
            return False
        if self.legal_hold:
            raise StreamHeld("stream is under legal hold")
        self.trigger_event(self.Deleted)
        return True

    class Deleted(Aggregate.Event):
        """Deleted, and so erased and closed: nothing is retained and nothing more stored."""

        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.deleted = True
            stream.reservations = {}
            stream.erased = True
            stream.closed = True
            stream.earliest = stream.head + 1
            stream._raise_floor(stream.head, stream.head_offset)
