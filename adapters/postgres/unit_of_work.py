"""Units of work on locked streams, and what a shared transaction writes for them.

A `LockedStream` is one stream row locked by a group transaction (see
`group_commit.py`), holding the live aggregate and everything the accepted
units of work staged for it. Each unit of work gets a `PostgresSession` on it.

Rules:
- a session works directly on the group's aggregate; on a clean exit its
  events and staged rows are accepted into the group, in the order the memory
  store commits them (events, removal, records, receipts, intents, deliveries,
  queued body deletions);
- a session that raises is rejected: its staged rows are dropped and, if it
  changed the aggregate, the aggregate is rebuilt from the loaded snapshot plus
  the events of the sessions accepted before it;
- reads inside a session see the committed database plus everything accepted
  earlier in the same group (as if those had committed already);
- an optimistic session (no row lock yet, see `group_commit.py`) may read
  receipts, which only change when the stream's version does, and nothing
  else from the database: intents and doomed records raise `NeedsLock`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from adapters.fanout import carried_records
from adapters.postgres.codec import AggregateCodec
from adapters.postgres.notifications import WAKE_CHANNEL, encode_wake
from adapters.postgres.record_rows import payload_text, storable
from adapters.postgres.stream_cache import clone
from application.ports import Removed, StoredRecord, Wake
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


def load_intent_row(codec: AggregateCodec, row: Mapping[str, Any]) -> ObjectIntent:
    return codec.load(ObjectIntent, row["id"], row["version"], row["snapshot_topic"],
                      row["snapshot"])


class LockedStream:
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
        "payload_texts",
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
        self.deletions: list[tuple[str, str, datetime]] = []
        self.intents: dict[str, ObjectIntent] = {}
        self.intent_events: list[Any] = []
        self.payload_texts: dict[int, str | None] = {}
        self.delete_through = 0
        self.changed = False


class SessionClosed(RuntimeError):
    """A session was used after its unit of work ended."""


class NeedsLock(Exception):
    """An optimistic session was asked for state its stream's version does not vouch for:
    the group has to run under the row lock instead."""


class PostgresSession:
    """`StreamSession` on a stream locked by the group's transaction."""

    def __init__(self, locked: LockedStream, connection: asyncpg.Connection,
                 codec: AggregateCodec, *, optimistic: bool = False) -> None:
        self.stream: Stream = locked.stream
        self.run_erased = locked.run_erased
        self.version_at_start = locked.stream.version
        self.new_records: list[StoredRecord] = []
        self.payload_texts: dict[int, str | None] = {}
        self.new_deliveries: list[int] = []
        self.new_deletions: list[tuple[str, str, datetime]] = []
        self.saved_intents: dict[str, ObjectIntent] = {}
        self.remove_through = 0
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
        """Encodes (and so checks) each body now, inside the unit of work that staged it."""
        texts = {record.sequence: payload_text(record) for record in records}
        self.payload_texts.update(texts)
        self.new_records.extend(records)

    def add_deliveries(self, sequences: Sequence[int]) -> None:
        self.new_deliveries.extend(sequences)

    def save_intent(self, intent: ObjectIntent) -> None:
        self.saved_intents[intent.object_id] = intent

    def queue_deletions(self, bodies: Sequence[tuple[str, str]], not_before: datetime) -> None:
        self.new_deletions.extend((region, key, not_before) for region, key in bodies)

    async def remove_records_through(self, sequence: int) -> Removed:
        """Counts what goes: committed rows not yet removed in this group, plus rows
        accepted earlier in this group; the deletion itself is written at flush."""
        self._needs_lock()
        self.remove_through = max(self.remove_through, sequence)
        locked = self._locked
        row = await self._db().fetchrow(_DOOMED, locked.id, locked.delete_through, sequence)
        assert row is not None
        objects = [ObjectRef(*ref) for ref in zip(row["ids"] or (), row["sizes"] or (),
                                                  row["digests"] or (), row["types"] or (),
                                                  strict=True)]
        staged = [record for record in locked.records if record.sequence <= sequence]
        objects.extend(record.object for record in staged if record.object is not None)
        return Removed(row["removed"] + len(staged), tuple(objects))


def accept(locked: LockedStream, session: PostgresSession) -> None:
    """Fold a cleanly finished session into its group (same order as the memory store)."""
    events = list(session.stream.collect_events())
    locked.events.extend(events)
    if session.remove_through:
        locked.records = [r for r in locked.records if r.sequence > session.remove_through]
        locked.delete_through = max(locked.delete_through, session.remove_through)
    locked.records.extend(session.new_records)
    locked.payload_texts.update(session.payload_texts)
    for record in session.new_records:
        if record.idempotency_key is not None:
            locked.receipts[record.idempotency_key] = record.sequence
    for object_id, intent in session.saved_intents.items():
        locked.intent_events.extend(intent.collect_events())
        locked.intents[object_id] = intent
    locked.deliveries.extend(session.new_deliveries)
    locked.deletions.extend(session.new_deletions)
    if (events or session.remove_through or session.new_records or session.saved_intents
            or session.new_deliveries or session.new_deletions):
        locked.changed = True


def reject(locked: LockedStream, session: PostgresSession) -> None:
    """Undo a failed session's effect on the shared aggregate."""
    if not session.stream.collect_events() and session.stream.version == session.version_at_start:
        return
    stream = clone(locked.pristine)
    for event in locked.events:
        event.mutate(stream)
    locked.stream = stream


@dataclass
class GroupWrites:
    """What a group writes, column by column (see `write_statement`)."""

    events: list[tuple[Any, ...]] = field(default_factory=list)
    """`runnel_event` values."""
    records: list[tuple[Any, ...]] = field(default_factory=list)
    receipt_streams: list[UUID] = field(default_factory=list)
    receipt_keys: list[str] = field(default_factory=list)
    receipt_sequences: list[int] = field(default_factory=list)
    delivery_streams: list[UUID] = field(default_factory=list)
    delivery_sequences: list[int] = field(default_factory=list)
    deletion_streams: list[UUID] = field(default_factory=list)
    deletion_regions: list[str] = field(default_factory=list)
    deletion_keys: list[str] = field(default_factory=list)
    deletion_not_before: list[datetime] = field(default_factory=list)
    intent_ids: list[UUID] = field(default_factory=list)
    intent_streams: list[UUID] = field(default_factory=list)
    intent_keys: list[str] = field(default_factory=list)
    intent_states: list[str] = field(default_factory=list)
    intent_regions: list[str] = field(default_factory=list)
    intent_object_keys: list[str] = field(default_factory=list)
    intent_expiries: list[Any] = field(default_factory=list)
    intent_sequences: list[int | None] = field(default_factory=list)
    intent_versions: list[int] = field(default_factory=list)
    intent_topics: list[str] = field(default_factory=list)
    intent_snapshots: list[bytes] = field(default_factory=list)
    delete_streams: list[UUID] = field(default_factory=list)
    delete_through: list[int] = field(default_factory=list)
    consumer_streams: list[UUID] = field(default_factory=list)
    consumer_ids: list[str] = field(default_factory=list)
    consumer_acks: list[int] = field(default_factory=list)
    consumer_owners: list[str | None] = field(default_factory=list)
    stream_updates: list[tuple[Any, ...]] = field(default_factory=list)
    """`runnel_stream_update` values: snapshot and denormalised columns, and the version
    each row must still have."""
    wakes: list[str] = field(default_factory=list)
    checked: list[tuple[UUID, int]] = field(default_factory=list)
    """`runnel_stream_version` values: streams decided on without the row lock, and the
    versions they were decided on."""
    local_wakes: list[Wake] = field(default_factory=list)
    """For this process's own readers; not a statement argument."""

    def check(self, locked: LockedStream) -> None:
        """Make the statement fail unless this stream is still at the version decided on
        and its run is not erased (for a group decided without the row lock)."""
        self.checked.append((locked.id, locked.pristine.version))

    def add(self, locked: LockedStream, codec: AggregateCodec, origin: str) -> None:
        if not locked.changed:
            return
        stream = locked.stream
        self.events.extend((stored.originator_id, stored.originator_version, stored.topic,
                            stored.state)
                           for stored in codec.events([*locked.events, *locked.intent_events]))
        texts = locked.payload_texts
        self.records.extend(_record_row(locked.id, record, texts[record.sequence])
                            for record in locked.records)
        for key, sequence in locked.receipts.items():
            self.receipt_streams.append(locked.id)
            self.receipt_keys.append(key)
            self.receipt_sequences.append(sequence)
        self.delivery_streams.extend([locked.id] * len(locked.deliveries))
        self.delivery_sequences.extend(locked.deliveries)
        for region, object_key, not_before in locked.deletions:
            self.deletion_streams.append(locked.id)
            self.deletion_regions.append(region)
            self.deletion_keys.append(object_key)
            self.deletion_not_before.append(not_before)
        for intent in locked.intents.values():
            self._add_intent(locked.id, intent, codec)
        if locked.delete_through:
            self.delete_streams.append(locked.id)
            self.delete_through.append(locked.delete_through)
        self._add_consumers(locked)
        if stream.version != locked.pristine.version:
            snapshot = codec.snapshot(stream)
            self.stream_updates.append((
                locked.id, snapshot.topic, snapshot.state, stream.version,
                locked.pristine.version, stream.head, stream.earliest, stream.total_items,
                stream.total_bytes, stream.closed, stream.legal_hold, stream.erased))
        wake = Wake(locked.key, stream.head, stream.closed, carried_records(tuple(locked.records)))
        self.wakes.append(encode_wake(wake, origin, texts))
        self.local_wakes.append(wake)

    def _add_intent(self, stream_id: UUID, intent: ObjectIntent, codec: AggregateCodec) -> None:
        snapshot = codec.snapshot(intent)
        self.intent_ids.append(intent.id)
        self.intent_streams.append(stream_id)
        self.intent_keys.append(intent.idempotency_key)
        self.intent_states.append(intent.state)
        self.intent_regions.append(intent.region)
        self.intent_object_keys.append(intent.object_key)
        self.intent_expiries.append(intent.expires_at)
        self.intent_sequences.append(intent.sequence)
        self.intent_versions.append(intent.version)
        self.intent_topics.append(snapshot.topic)
        self.intent_snapshots.append(snapshot.state)

    def _add_consumers(self, locked: LockedStream) -> None:
        before = _consumer_state(locked.pristine.acks, locked.pristine.owners)
        after = _consumer_state(locked.stream.acks, locked.stream.owners)
        for consumer_id, (acked, owner) in after.items():
            if before.get(consumer_id) != (acked, owner):
                self.consumer_streams.append(locked.id)
                self.consumer_ids.append(consumer_id)
                self.consumer_acks.append(acked)
                self.consumer_owners.append(owner)


def _record_row(stream_id: UUID, record: StoredRecord, payload: str | None) -> tuple[Any, ...]:
    """A `runnel_record` value."""
    ref = record.object
    if ref is None:
        return (stream_id, record.sequence, record.content_type, record.appended_at,
                record.size, payload, record.data, None, None, None, None,
                record.idempotency_key)
    return (stream_id, record.sequence, record.content_type, record.appended_at, record.size,
            payload, record.data, ref.object_id, ref.size, ref.sha256, ref.content_type,
            record.idempotency_key)


def _consumer_state(acks: Mapping[str, int], owners: Mapping[str, str | None]
                    ) -> dict[str, tuple[int, str | None]]:
    return {consumer: (acked, owners.get(consumer)) for consumer, acked in acks.items()}


# One statement writes a whole group: a data-modifying CTE per kind of row that the
# group has (empty ones are left out: each costs the server even when empty), then
# the NOTIFYs. Parameters are numbered as the parts are put together.
_PARTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("new_events", """
    INSERT INTO stream_events (originator_id, originator_version, topic, state)
    SELECT * FROM unnest({}::runnel_event[])""",
     ("events",)),
    ("new_records", """
    INSERT INTO records (stream, sequence, content_type, appended_at, size, payload, data,
                         object_id, object_size, object_sha256, object_content_type,
                         idempotency_key)
    SELECT * FROM unnest({}::runnel_record[])""",
     ("records",)),
    ("new_receipts", """
    INSERT INTO append_receipts (stream, idempotency_key, sequence)
    SELECT * FROM unnest({}::uuid[], {}::text[], {}::int8[])
    ON CONFLICT DO NOTHING""",
     ("receipt_streams", "receipt_keys", "receipt_sequences")),
    ("new_deliveries", """
    INSERT INTO input_deliveries (stream, sequence)
    SELECT * FROM unnest({}::uuid[], {}::int8[])
    ON CONFLICT DO NOTHING""",
     ("delivery_streams", "delivery_sequences")),
    ("queued_deletions", """
    INSERT INTO deletion_outbox (stream, region, object_key, not_before)
    SELECT * FROM unnest({}::uuid[], {}::text[], {}::text[], {}::timestamptz[])
    ON CONFLICT (region, object_key) DO NOTHING""",
     ("deletion_streams", "deletion_regions", "deletion_keys", "deletion_not_before")),
    ("saved_intents", """
    INSERT INTO object_intents (id, stream, idempotency_key, state, region, object_key,
                                expires_at, sequence, version, snapshot_topic, snapshot)
    SELECT * FROM unnest({}::uuid[], {}::uuid[], {}::text[], {}::text[], {}::text[],
                         {}::text[], {}::timestamptz[], {}::int8[], {}::int4[],
                         {}::text[], {}::bytea[])
    ON CONFLICT (id) DO UPDATE SET state = excluded.state, sequence = excluded.sequence,
        version = excluded.version, snapshot_topic = excluded.snapshot_topic,
        snapshot = excluded.snapshot, updated_at = now()""",
     ("intent_ids", "intent_streams", "intent_keys", "intent_states", "intent_regions",
      "intent_object_keys", "intent_expiries", "intent_sequences", "intent_versions",
      "intent_topics", "intent_snapshots")),
    ("removed", """
    DELETE FROM records AS r USING unnest({}::uuid[], {}::int8[]) AS d(stream, through)
    WHERE r.stream = d.stream AND r.sequence <= d.through""",
     ("delete_streams", "delete_through")),
    ("acks", """
    INSERT INTO consumers (stream, consumer_id, acked, owner)
    SELECT * FROM unnest({}::uuid[], {}::text[], {}::int8[], {}::text[])
    ON CONFLICT (stream, consumer_id) DO UPDATE SET acked = excluded.acked,
        owner = excluded.owner, updated_at = now()""",
     ("consumer_streams", "consumer_ids", "consumer_acks", "consumer_owners")),
    ("updated", """
    UPDATE streams AS s SET snapshot_topic = u.topic, snapshot = u.snapshot,
        version = u.version, head = u.head, earliest = u.earliest,
        total_items = u.total_items, total_bytes = u.total_bytes, closed = u.closed,
        legal_hold = u.legal_hold, erased = u.erased, updated_at = now()
    FROM unnest({}::runnel_stream_update[]) AS u
    WHERE s.id = u.id AND s.version = u.expected
    RETURNING s.id""",
     ("stream_updates",)),
    ("current", """
    SELECT count(*) AS streams FROM streams AS s
    JOIN unnest({}::runnel_stream_version[]) AS k ON s.id = k.id AND s.version = k.version
    WHERE NOT EXISTS (SELECT 1 FROM erased_runs AS e
                      WHERE e.tenant = s.tenant AND e.run_id = s.run_id)""",
     ("checked",)),
)


def write_statement(writes: GroupWrites) -> tuple[str, list[Any]]:
    """The statement and its arguments for everything a group staged.

    It fails with SQLSTATE RN001 (`runnel_write_conflict()`, migration 0003) unless
    every snapshot update found its row at the version the group decided on and
    every checked stream is still current: then nothing of the group is written.
    """
    ctes: list[str] = []
    arguments: list[Any] = []
    for name, template, fields in _PARTS:
        values = [getattr(writes, field_name) for field_name in fields]
        if not values[0]:
            continue
        first = len(arguments) + 1
        placeholders = [f"${first + offset}" for offset in range(len(values))]
        ctes.append(f"{name} AS ({template.format(*placeholders)}\n)")
        arguments.extend(values)
    conditions = []
    if writes.stream_updates:
        arguments.append(len(writes.stream_updates))
        conditions.append(f"(SELECT count(*) FROM updated) = ${len(arguments)}::int8")
    if writes.checked:
        arguments.append(len(writes.checked))
        conditions.append(f"(SELECT streams FROM current) = ${len(arguments)}::int8")
    arguments.append(writes.wakes)
    select = (f"SELECT (SELECT count(pg_notify('{WAKE_CHANNEL}', wake)) "
              f"FROM unnest(${len(arguments)}::text[]) AS wake) AS woken")
    if conditions:
        select += (f",\n       CASE WHEN {' AND '.join(conditions)} THEN true "
                   "ELSE runnel_write_conflict() END AS current")
    return ("WITH " + ",\n".join(ctes) + "\n" + select if ctes else select), arguments
