"""The `Stream` aggregate: a stream's pins and the counters every decision needs.

It decides append, ack, close, legal hold, prune and erase. It never holds
record bodies: those live in a records table, so retention, redaction and
erasure never rewrite the event log. Each public command validates first and
raises a `DomainError` without changing anything; only then does it trigger
an event whose `apply` merely assigns state (it runs again on replay).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.credit import CreditVerdict, Usage, decide_credit
from domain.definition import MAX_CONSUMERS, StreamDefinition
from domain.errors import (
    AckBeyondHead,
    AckRegression,
    Backpressure,
    ConsumerScope,
    InvalidRecord,
    QuotaExhausted,
    RunErased,
    StreamClosed,
    StreamHeld,
    TooLarge,
    TooManyConsumers,
)
from domain.identifiers import StreamKey
from domain.records import Draft

MAX_BATCH = 1000


@dataclass(frozen=True)
class AppendPlan:
    """What an append decided: every draft's sequence, and which drafts are new."""

    sequences: tuple[int, ...]
    new: tuple[tuple[int, Draft], ...]

    @property
    def all_duplicates(self) -> bool:
        return not self.new


@dataclass(frozen=True)
class StreamStatus:
    head: int
    earliest: int
    closed: bool
    legal_hold: bool
    consumers: Mapping[str, int]


class Stream(Aggregate):
    """One stream of one run of one tenant."""

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
        self.unread_floor = 0
        self.unread_sizes: list[int] = []
        self.unread_bytes = 0
        self.acks: dict[str, int] = dict.fromkeys(definition.consumers, 0)
        self.owners: dict[str, str | None] = dict.fromkeys(definition.consumers)
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
        return Usage(len(self.unread_sizes), self.unread_bytes, self.total_items,
                     self.total_bytes)

    @property
    def status(self) -> StreamStatus:
        return StreamStatus(self.head, self.earliest, self.closed, self.legal_hold,
                            dict(self.acks))

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
        if self.erased:
            # Before idempotency: an erased run answers every append the same way, even a
            # retry whose receipt outlived the erased records.
            raise RunErased("the run was erased; nothing more is stored")
        seen = dict(receipts)
        sequences: list[int] = []
        new: list[tuple[int, Draft]] = []
        next_sequence = self.head + 1
        for draft in drafts:
            key = draft.idempotency_key
            if key is not None and key in seen:
                sequences.append(seen[key])
                continue
            sequences.append(next_sequence)
            new.append((next_sequence, draft))
            if key is not None:
                seen[key] = next_sequence
            next_sequence += 1
        if new:
            self._ensure_appendable(len(new), sum(draft.size for _, draft in new))
        return AppendPlan(tuple(sequences), tuple(new))

    def append(self, plan: AppendPlan) -> None:
        """Commit a plan made by `plan_append` on this same state."""
        if not plan.new:
            return
        if plan.new[0][0] != self.head + 1:
            raise ValueError("append plan is stale")
        self.trigger_event(self.Appended, sizes=[draft.size for _, draft in plan.new])

    def _ensure_appendable(self, items: int, size: int) -> None:
        if self.erased:
            raise RunErased("the run was erased; nothing more is stored")
        if self.closed:
            raise StreamClosed("stream is closed")
        verdict = decide_credit(self.definition.credit, self.usage, items, size)
        if verdict is CreditVerdict.NEVER_FITS:
            raise TooLarge("batch exceeds the stream's unread ceiling and could never be accepted",
                           limit_items=self.definition.credit.max_unread_items,
                           limit_bytes=self.definition.credit.max_unread_bytes)
        if verdict is CreditVerdict.QUOTA_EXHAUSTED:
            raise QuotaExhausted("the stream's total items/bytes ceiling is reached")
        if verdict is CreditVerdict.UNREAD_FULL:
            raise Backpressure("the unread ceiling is reached; retry after consumers ack")

    class Appended(Aggregate.Event):
        sizes: list[int]

        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.head += len(self.sizes)
            stream.total_items += len(self.sizes)
            stream.total_bytes += sum(self.sizes)
            stream.unread_sizes = [*stream.unread_sizes, *self.sizes]
            stream.unread_bytes += sum(self.sizes)

    # -- consumers -------------------------------------------------------

    def ack(self, consumer_id: str, sequence: int, principal: str) -> bool:
        """Advance a consumer's ack; the first ack registers it to the acking principal.

        Re-acking the current value is accepted and changes nothing (returns False).
        """
        if sequence < 0:
            raise AckRegression("ack must be non-negative")
        if sequence > self.head:
            raise AckBeyondHead(f"ack {sequence} is beyond head {self.head}", head=self.head)
        owner = self.owners.get(consumer_id)
        if owner is not None and owner != principal:
            raise ConsumerScope("consumer belongs to another principal")
        current = self.acks.get(consumer_id)
        if current is None and len(self.acks) >= MAX_CONSUMERS:
            # Every consumer can hold producer credit down; their number is bounded.
            raise TooManyConsumers(f"a stream has at most {MAX_CONSUMERS} consumers",
                                   limit=MAX_CONSUMERS)
        if current is not None and sequence < current:
            raise AckRegression(f"ack {sequence} is below the current ack {current}",
                                acked=current)
        if current == sequence and owner is not None:
            return False
        self.trigger_event(self.Acked, consumer_id=consumer_id, sequence=sequence,
                           principal=principal)
        return True

    class Acked(Aggregate.Event):
        consumer_id: str
        sequence: int
        principal: str

        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.acks = {**stream.acks, self.consumer_id: self.sequence}
            stream.owners = {**stream.owners, self.consumer_id: self.principal}
            stream._advance_floor(min(stream.acks.values()))

    def _advance_floor(self, candidate: int) -> None:
        # Credit once granted is never revoked: the floor only moves up, so a
        # late-registered consumer cannot make already-appended records unread.
        target = min(max(self.unread_floor, candidate, self.earliest - 1), self.head)
        drop = target - self.unread_floor
        if drop > 0:
            self.unread_bytes -= sum(self.unread_sizes[:drop])
            self.unread_sizes = self.unread_sizes[drop:]
            self.unread_floor = target

    # -- lifecycle -------------------------------------------------------

    def close(self) -> bool:
        """Close for appends; idempotent (returns False when already closed)."""
        if self.closed:
            return False
        self.trigger_event(self.Closed)
        return True

    class Closed(Aggregate.Event):
        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.closed = True

    def set_legal_hold(self, held: bool, reason: str | None) -> bool:
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

    def prune(self, through: int) -> int:
        """Remove records up to `through` (clamped to head); never while held.

        Returns the new earliest retained sequence, unchanged when nothing is pruned.
        """
        if self.legal_hold:
            raise StreamHeld("stream is under legal hold")
        through = min(through, self.head)
        if through < self.earliest:
            return self.earliest
        self.trigger_event(self.Pruned, through=through)
        return self.earliest

    class Pruned(Aggregate.Event):
        through: int

        def apply(self, aggregate: Any) -> None:
            stream: Stream = aggregate
            stream.earliest = self.through + 1
            stream._advance_floor(self.through)

    def erase(self) -> bool:
        """Seal (and close) the stream for good and remove its records unless it is under
        legal hold.

        After erasure nothing more is ever stored, and followers end. A held stream
        is sealed but keeps its records; erasing it again once the hold is released
        removes them. Returns True when records were removed.
        """
        if self.legal_hold:
            if not self.erased:
                self.trigger_event(self.Sealed)
            return False
        if self.erased and self.earliest == self.head + 1:
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
            stream.erased = True
            stream.closed = True
            stream.earliest = stream.head + 1
            stream._advance_floor(stream.head)
