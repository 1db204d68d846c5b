"""What a unit of work stages on its stream, and the one order a store folds it in.

Shared by the in-memory store and the Postgres group committer: both sessions are a
`Staging` (the staging half of `StreamSession`), and both stores fold a cleanly finished
session into their committed side with `fold`.

Rules:
- what a session stages is private to it until its store folds it; a session that raises
  is dropped whole, nothing of it folded;
- `fold` is the order every store commits a session in: the aggregate's events, the
  removal, the records with their receipts, the intents with their events, then the
  deliveries and body deletions (each store hands those to its outboxes). A Postgres group
  folds its sessions one by one, so it holds what the memory store would after committing
  them in turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from application.ports.records import StoredRecord
from domain.object_intent import ObjectIntent

QueuedDeletion = tuple[str, str, datetime]
"""(region, object key, not before): one body the unit of work queued for deletion."""


class FoldTarget(Protocol):
    """The committed side of one stream that a session is folded into."""

    records: list[StoredRecord]

    @property
    def events(self) -> list[Any]: ...

    @property
    def intent_events(self) -> list[Any]:
        """Where the intents' events go (the same list as `events`, or one of their own)."""

    @property
    def intents(self) -> dict[str, ObjectIntent]: ...

    def removed_through(self, sequence: int) -> None:
        """Records up to `sequence` are gone (`records` no longer holds them)."""

    def receipted(self, record: StoredRecord) -> None:
        """`record` answers its idempotency key from now on."""

    def queued(self, deliveries: Sequence[int], deletions: Sequence[QueuedDeletion],
               records: Sequence[StoredRecord]) -> None:
        """The outbox rows of the session (`records`: the ones it added)."""


class Staging:
    """The staged records, deliveries, intents, body deletions and removal of one session."""

    __slots__ = ("new_deletions", "new_deliveries", "new_records", "remove_through",
                 "saved_intents")

    def __init__(self) -> None:
        self.new_records: list[StoredRecord] = []
        self.new_deliveries: list[int] = []
        self.new_deletions: list[QueuedDeletion] = []
        self.saved_intents: dict[str, ObjectIntent] = {}
        self.remove_through = 0

    def add_records(self, records: Sequence[StoredRecord]) -> None:
        self.new_records.extend(records)

    def add_deliveries(self, sequences: Sequence[int]) -> None:
        self.new_deliveries.extend(sequences)

    def save_intent(self, intent: ObjectIntent) -> None:
        self.saved_intents[intent.object_id] = intent

    def queue_deletions(self, bodies: Sequence[tuple[str, str]], not_before: datetime) -> None:
        self.new_deletions.extend((region, key, not_before) for region, key in bodies)

    def stage_removal(self, sequence: int) -> None:
        self.remove_through = max(self.remove_through, sequence)

    def staged_offset(self, sequence: int, *earlier: Sequence[StoredRecord]) -> int | None:
        """The byte offset of record `sequence` if this session (or one folded before it,
        `earlier`) staged it; None when none did."""
        for records in (self.new_records, *earlier):
            if records and records[0].sequence <= sequence <= records[-1].sequence:
                record = records[sequence - records[0].sequence]  # staged records are dense
                assert record.sequence == sequence
                return record.offset
        return None

    def fold(self, events: Sequence[Any], into: FoldTarget) -> bool:
        """Fold this session, whose aggregate raised `events`, into `into`; False when it
        changed nothing at all."""
        into.events.extend(events)
        if self.remove_through:
            into.records = [r for r in into.records if r.sequence > self.remove_through]
            into.removed_through(self.remove_through)
        into.records.extend(self.new_records)
        for record in self.new_records:
            if record.idempotency_key is not None:
                into.receipted(record)
        for object_id, intent in self.saved_intents.items():
            into.intent_events.extend(intent.collect_events())
            into.intents[object_id] = intent
        into.queued(self.new_deliveries, self.new_deletions, self.new_records)
        return bool(events or self.remove_through or self.new_records or self.saved_intents
                    or self.new_deliveries or self.new_deletions)
