"""What a group writes, and the one statement that writes it.

`GroupWrites` gathers, stream by stream, what the accepted units of work of a
group staged (see `unit_of_work.py`); `write_statement` turns it into a single
statement of data-modifying CTEs over arrays, then the NOTIFYs, that fails
unless every stream is still at the version the group decided on and the
node's region is not fenced (`fences.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from adapters.fanout import carried_records
from adapters.postgres.codec import AggregateCodec
from adapters.postgres.fences import assert_unfenced
from adapters.postgres.group_commit.record_columns import INSERT_RECORDS, RecordColumns
from adapters.postgres.group_commit.unit_of_work import GroupStream
from adapters.postgres.notifications import WAKE_CHANNEL, encode_wake
from application.ports.waking import Wake
from domain.object_intent import ObjectIntent


@dataclass
class GroupWrites:
    """What a group writes, column by column (see `write_statement`)."""

    events: list[tuple[Any, ...]] = field(default_factory=list)
    """`runnel_event` values."""
    records: RecordColumns = field(default_factory=RecordColumns)
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
    stream_updates: list[tuple[Any, ...]] = field(default_factory=list)
    """`runnel_stream_update` values: snapshot and denormalised columns, and the version
    each row must still have."""
    wakes: list[str] = field(default_factory=list)
    checked: list[tuple[UUID, int]] = field(default_factory=list)
    """`runnel_stream_version` values: streams decided on without the row lock, and the
    versions they were decided on."""
    local_wakes: list[Wake] = field(default_factory=list)
    """For this process's own readers; not a statement argument."""

    def check(self, locked: GroupStream) -> None:
        """Make the statement fail unless this stream is still at the version decided on
        and its run is not erased (for a group decided without the row lock)."""
        self.checked.append((locked.id, locked.pristine.version))

    def add(self, locked: GroupStream, codec: AggregateCodec, origin: str) -> None:
        if not locked.changed:
            return
        stream = locked.stream
        self.events.extend((stored.originator_id, stored.originator_version, stored.topic,
                            stored.state)
                           for stored in codec.events([*locked.events, *locked.intent_events]))
        self.records.add(locked.id, locked.records)
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
                stream.total_bytes, stream.closed, stream.legal_hold, stream.erased,
                stream.unread_floor))
        wake = Wake(locked.key, stream.head, stream.closed, carried_records(tuple(locked.records)))
        self.wakes.append(encode_wake(wake, origin))
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

    def _add_consumers(self, locked: GroupStream) -> None:
        before = locked.pristine.acks
        for consumer_id, acked in locked.stream.acks.items():
            if before.get(consumer_id) != acked:
                self.consumer_streams.append(locked.id)
                self.consumer_ids.append(consumer_id)
                self.consumer_acks.append(acked)


# One statement writes a whole group: a data-modifying CTE per kind of row that the
# group has (empty ones are left out: each costs the server even when empty), then
# the NOTIFYs. Parameters are numbered as the parts are put together.
_PARTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("new_events", """
    INSERT INTO stream_events (originator_id, originator_version, topic, state)
    SELECT * FROM unnest({}::runnel_event[])""",
     ("events",)),
    ("new_records", INSERT_RECORDS, ("records",)),
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
    INSERT INTO consumers (stream, consumer_id, acked)
    SELECT * FROM unnest({}::uuid[], {}::text[], {}::int8[])
    ON CONFLICT (stream, consumer_id) DO UPDATE SET acked = excluded.acked, owner = NULL,
        updated_at = now()""",
     ("consumer_streams", "consumer_ids", "consumer_acks")),
    ("updated", """
    UPDATE streams AS s SET snapshot_topic = u.topic, snapshot = u.snapshot,
        version = u.version, head = u.head, earliest = u.earliest,
        total_items = u.total_items, total_bytes = u.total_bytes, closed = u.closed,
        legal_hold = u.legal_hold, erased = u.erased, unread_floor = u.unread_floor,
        updated_at = now()
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


def write_statement(writes: GroupWrites, region: str) -> tuple[str, list[Any]]:
    """The statement and its arguments for everything a group of a node of `region`
    staged.

    It fails with SQLSTATE RN001 (`runnel_write_conflict()`, migration 0003) unless
    every snapshot update found its row at the version the group decided on and
    every checked stream is still current, and with RN002 (`runnel_assert_unfenced()`,
    migration 0008) when it writes anything while `region` is fenced: either way
    nothing of the group is written. A group that only checks (it changed nothing)
    is not fenced: it stores nothing.
    """
    ctes: list[str] = []
    arguments: list[Any] = []
    for name, template, fields in _PARTS:
        values = [getattr(writes, field_name) for field_name in fields]
        if not values[0]:
            continue
        if name == "new_records":
            values = writes.records.arguments()
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
    if writes.wakes:
        arguments.append(region)
        select += f",\n       {assert_unfenced(f'${len(arguments)}')} AS unfenced"
    if conditions:
        select += (f",\n       CASE WHEN {' AND '.join(conditions)} THEN true "
                   "ELSE runnel_write_conflict() END AS current")
    return ("WITH " + ",\n".join(ctes) + "\n" + select if ctes else select), arguments
