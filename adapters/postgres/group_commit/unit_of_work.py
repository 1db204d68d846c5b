"""Units of work on the streams of a group, and how they are accepted or undone.

A `GroupStream` is one stream of a group (row-locked, or decided on optimistically: see
`engine.py`), holding the live aggregate and everything the accepted
units of work staged for it. Each unit of work gets a `PostgresSession` on it.

Rules:
- a session works directly on the group's aggregate; on a clean exit its
  events and staged rows are folded into the group (`adapters/staging.py` holds
  the order, the one the memory store commits in);
- a session that raises is rejected: its staged rows are dropped and, if it
  changed the aggregate, the aggregate is rebuilt from the loaded snapshot plus
  the events of the sessions accepted before it;
- reads inside a session see the committed database plus everything accepted
  earlier in the same group (as if those had committed already);
- an optimistic session (no row lock yet, see `engine.py`) may read
  receipts and record byte offsets, which only change when the stream's version
  does (a stored offset never changes), and nothing else from the database:
  intents and doomed records raise `NeedsLock`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

import asyncpg

from adapters.postgres.codec import AggregateCodec
from adapters.postgres.group_commit.stream_cache import clone
from adapters.postgres.record_rows import check_storable, storable
from adapters.staging import QueuedDeletion, Staging
from application.ports.records import StoredRecord
from application.ports.streams import Removed
from domain.identifiers import StreamKey
from domain.object_intent import ObjectIntent
from domain.records import ObjectRef
from domain.stream import Stream

_RECEIPTS = """
SELECT idempotency_key, sequence FROM append_receipts
WHERE stream = $1 AND idempotency_key = ANY($2::text[])
"""

_INTENT = """
SELECT id, version, snapshot_topic, snapshot FROM object_intents WHERE id = $1 AND stream = $2
"""

_INTENTS = """
SELECT id, version, snapshot_topic, snapshot FROM object_intents WHERE stream = $1 ORDER BY id
"""

_DOOMED = """
SELECT count(*) AS removed,
       array_agg(object_id ORDER BY sequence) FILTER (WHERE object_id IS NOT NULL) AS ids,
       array_agg(object_size ORDER BY sequence) FILTER (WHERE object_id IS NOT NULL) AS sizes,
       array_agg(object_sha256 ORDER BY sequence) FILTER (WHERE object_id IS NOT NULL) AS digests,
       array_agg(object_content_type ORDER BY sequence)
           FILTER (WHERE object_id IS NOT NULL) AS types
FROM records WHERE stream = $1 AND sequence > $2 AND sequence <= $3
"""

_OFFSET = "SELECT byte_offset FROM records WHERE stream = $1 AND sequence = $2"

_SIZES_ABOVE = "SELECT coalesce(sum(size), 0) FROM records WHERE stream = $1 AND sequence > $2"


def load_intent_row(codec: AggregateCodec, row: Mapping[str, Any]) -> ObjectIntent:
    return codec.load(ObjectIntent, row["id"], row["version"], row["snapshot_topic"],
                      row["snapshot"])


class GroupStream:
    """One stream of a group (row-locked, or decided on optimistically), and what its
    sessions staged.

    `pristine` is the committed state the group started from (never changed:
    sessions work on `stream`, a clone of it). A plain class: one is made per
    stream per group, and a dataclass's default factories cost more."""

    __slots__ = (
        "changed",
        "delete_through",
        "deletions",
        "deliveries",
        "events",
        "id",
        "intent_events",
        "intents",
        "key",
        "pristine",
        "receipts",
        "records",
        "run_erased",
        "stream",
    )

    def __init__(self, key: StreamKey, row_id: UUID, pristine: Stream, run_erased: bool) -> None:
        self.key = key
        self.id = row_id
        self.pristine = pristine
        self.run_erased = run_erased
        self.stream: Stream = clone(pristine)
        self.events: list[Any] = []
        self.records: list[StoredRecord] = []
        self.receipts: dict[str, int] = {}
        self.deliveries: list[int] = []
        self.deletions: list[QueuedDeletion] = []
        self.intents: dict[str, ObjectIntent] = {}
        self.intent_events: list[Any] = []
        self.delete_through = 0
        self.changed = False

    def removed_through(self, sequence: int) -> None:
        self.delete_through = max(self.delete_through, sequence)

    def receipted(self, record: StoredRecord) -> None:
        assert record.idempotency_key is not None
        self.receipts[record.idempotency_key] = record.sequence

    def queued(self, deliveries: Sequence[int], deletions: Sequence[QueuedDeletion],
               records: Sequence[StoredRecord]) -> None:
        self.deliveries.extend(deliveries)
        self.deletions.extend(deletions)


class SessionClosed(RuntimeError):
    """A session was used after its unit of work ended."""


class NeedsLock(Exception):
    """An optimistic session was asked for state its stream's version does not vouch for:
    the group has to run under the row lock instead."""


class PostgresSession(Staging):
    """`StreamSession` on a stream locked by the group's transaction."""

    def __init__(self, locked: GroupStream, connection: asyncpg.Connection,
                 codec: AggregateCodec, *, optimistic: bool = False) -> None:
        super().__init__()
        self.stream: Stream = locked.stream
        self.run_erased = locked.run_erased
        self.version_at_start = locked.stream.version
        self._locked = locked
        self._connection: asyncpg.Connection | None = connection
        self._codec = codec
        self._optimistic = optimistic

    def _db(self) -> asyncpg.Connection:
        if self._connection is None:
            raise SessionClosed("the unit of work has ended")
        return self._connection

    def detach(self) -> None:
        self._connection = None

    async def receipts(self, keys: Sequence[str]) -> Mapping[str, int]:
        found = {key: self._locked.receipts[key] for key in keys if key in self._locked.receipts}
        # A key Postgres cannot hold has no receipt (and would fail the shared query).
        missing = [key for key in keys if key not in found and storable(key)]
        if missing:
            rows = await self._db().fetch(_RECEIPTS, self._locked.id, missing)
            found.update({row["idempotency_key"]: row["sequence"] for row in rows})
        return found

    def _needs_lock(self) -> None:
        if self._optimistic:
            raise NeedsLock()

    async def intent(self, object_id: str) -> ObjectIntent | None:
        self._needs_lock()
        if object_id in self.saved_intents:
            return self.saved_intents[object_id]
        if object_id in self._locked.intents:
            return copy.deepcopy(self._locked.intents[object_id])
        try:
            intent_id = UUID(object_id)
        except ValueError:
            return None
        row = await self._db().fetchrow(_INTENT, intent_id, self._locked.id)
        return load_intent_row(self._codec, row) if row is not None else None

    async def intents(self) -> Sequence[ObjectIntent]:
        self._needs_lock()
        rows = await self._db().fetch(_INTENTS, self._locked.id)
        merged: dict[str, ObjectIntent] = {str(row["id"]): load_intent_row(self._codec, row)
                                           for row in rows}
        merged.update({object_id: copy.deepcopy(intent)
                       for object_id, intent in self._locked.intents.items()})
        merged.update(self.saved_intents)
        return list(merged.values())

    def add_records(self, records: Sequence[StoredRecord]) -> None:
        """Checks each record storable now, inside the unit of work that staged it."""
        check_storable(records)
        super().add_records(records)

    async def remove_records_through(self, sequence: int) -> Removed:
        """Counts what goes: committed rows not yet removed in this group, plus rows
        accepted earlier in this group; the deletion itself is written at flush."""
        self._needs_lock()
        self.stage_removal(sequence)
        locked = self._locked
        row = await self._db().fetchrow(_DOOMED, locked.id, locked.delete_through, sequence)
        assert row is not None
        objects = [ObjectRef(*ref) for ref in zip(row["ids"] or (), row["sizes"] or (),
                                                  row["digests"] or (), row["types"] or (),
                                                  strict=True)]
        staged = [record for record in locked.records if record.sequence <= sequence]
        objects.extend(record.object for record in staged if record.object is not None)
        return Removed(row["removed"] + len(staged), tuple(objects))


    async def offset_through(self, sequence: int) -> int | None:
        """Staged in this group, or the stored row's; a row written by the release before
        offsets has none (NULL), and its offset is what the live head's offset leaves
        once every record above it is taken off (docs/adr/0047)."""
        staged = self.staged_offset(sequence, self._locked.records)
        if staged is not None:
            return staged
        if sequence <= self._locked.delete_through:
            return None
        row = await self._db().fetchrow(_OFFSET, self._locked.id, sequence)
        if row is None:
            return None
        if row["byte_offset"] is not None:
            return int(row["byte_offset"])
        above = await self._db().fetchval(_SIZES_ABOVE, self._locked.id, sequence)
        staged_sizes = sum(record.size for record in (*self._locked.records, *self.new_records))
        return self.stream.head_offset - int(above) - staged_sizes


def accept(locked: GroupStream, session: PostgresSession) -> None:
    """Fold a cleanly finished session into its group."""
    if session.fold(list(session.stream.collect_events()), locked):
        locked.changed = True


def reject(locked: GroupStream, session: PostgresSession) -> None:
    """Undo a failed session's effect on the shared aggregate."""
    if not session.stream.collect_events() and session.stream.version == session.version_at_start:
        return
    stream = clone(locked.pristine)
    for event in locked.events:
        event.mutate(stream)
    locked.stream = stream
